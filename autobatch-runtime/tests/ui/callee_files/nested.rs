//! A file that is not a `mod.rs`: its `mod leaf;` is `nested/leaf.rs`.
pub mod leaf;

//! Helper modules of the UI cases that call items of other files: plain functions and a plain
//! struct (`plain.rs`), #[autobatch] and #[primitive] items (`attributed.rs`), and a file
//! whose own `mod` file is found beside it (`nested.rs`, `nested/leaf.rs`).
#![allow(dead_code)]

pub mod attributed;
pub mod nested;
pub mod plain;

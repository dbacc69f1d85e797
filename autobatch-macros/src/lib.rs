//! `#[autobatch]`: compiles ordinary scalar Rust functions into autobatch Programs at compile time.

//! Linking `#[autobatch]` functions into one Program with its kernel table.

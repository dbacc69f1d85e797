//! UI case, compile error: the caller is in another file than the crate root (the macro finds
//! that file's place in the crate to follow `crate::`), and calls a plain function of a third
//! file: one error at the call, saying which attribute to add.
mod callee_files;
#[path = "caller_files/walker.rs"]
mod walker;

fn main() {}

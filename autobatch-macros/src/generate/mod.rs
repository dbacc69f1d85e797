//! From the macro's AST to generated code: lowering to a recorded IR, kernel fusion, the
//! compile-time analysis of that IR, vector kernels compiled to element loops, and the emitted
//! tokens.

pub mod emit;
pub mod fuse;
pub mod infer;
pub mod ir;
pub mod lower;
pub mod vectorise;

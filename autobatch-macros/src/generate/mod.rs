//! From the macro's AST to generated code: lowering to a recorded IR, the compile-time
//! analysis of that IR, and the emitted tokens.

pub mod emit;
pub mod infer;
pub mod ir;
pub mod lower;

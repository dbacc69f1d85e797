//! From the macro's AST to generated code: type inference, the translation to a recorded IR,
//! kernel merging, the compile-time analysis of that IR, vector kernels compiled to element
//! loops, and the emitted tokens.

pub mod compiled;
pub mod context;
pub mod describe;
pub mod emit;
pub mod flatten;
pub mod infer;
pub mod ir;
pub mod merge;
pub mod modules;
pub mod names;
pub mod plain_callee;
pub mod pure;
pub mod runtime;
pub mod structs;
pub mod translate;
pub mod vectorise;

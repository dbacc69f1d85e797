//! The autobatch Program IR: entities, types, the program data model, builder, verifier,
//! text printer, and the analyses and transformations on programs.
//!
//! The IR is plain data with no runtime dependency: the `#[autobatch]` macro builds it at
//! compile time and the runtime executes it. See `ARCHITECTURE.md` at the workspace root.

#![warn(missing_docs)]

pub mod builder;
pub mod entity;
pub mod passes;
pub mod print;
pub mod program;
pub mod types;
pub mod verified;
pub mod verify;

pub use builder::{prim_op, BuildError, ProgramBuilder};
pub use entity::{Block, EntityVec, FuncId, KernelId, Var};
pub use program::{
    Allocation, BlockData, CallOp, FunctionData, KernelRef, Op, PrimOp, Program, Terminator,
    VarData, PC_NAME,
};
pub use types::{DType, Shape, TensorType, Type};
pub use verified::{Form, FormKind, High, HighProgram, Lowered, LoweredProgram, Verified};
pub use verify::{verify_high, verify_lowered, Location, VerifyError, VerifyErrors};

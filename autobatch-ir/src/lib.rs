//! The autobatch Program IR: entities, types, the program data model, builder, verifier,
//! text printer, and the analyses and transformations on programs.
//!
//! The IR is plain data with no runtime dependency: the `#[autobatch]` macro builds it at
//! compile time and the runtime executes it. [`Program`] is the editable data; the verifier
//! turns it into a [`HighProgram`] or a [`LoweredProgram`], the only programs the passes and
//! the interpreters take, and [`passes::pipeline::prepare`] turns a source program into what
//! each interpreter runs. See `ARCHITECTURE.md` at the workspace root.

#![warn(missing_docs)]

pub mod builder;
pub mod entity;
pub mod fingerprint;
pub mod passes;
pub mod print;
pub mod program;
pub mod types;
pub mod verified;
pub mod verify;

pub use builder::{prim_op, BuildError, ProgramBuilder};
pub use entity::{Block, EntityVec, FuncId, KernelId, Var};
pub use fingerprint::fingerprint;
pub use program::{
    Allocation, BlockData, CallOp, FunctionData, KernelRef, Op, PrimOp, Program, Terminator,
    VarData, PC_NAME,
};
pub use types::{DType, Shape, TensorType, Type};
pub use verified::{Form, FormKind, High, HighProgram, Lowered, LoweredProgram, Verified};
pub use verify::{verify_high, verify_lowered, Location, VerifyError, VerifyErrors};

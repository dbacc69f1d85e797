//! Analyses and transformations on programs, each a pure function of its input program, and
//! the pipeline that runs them in order.

pub mod allocation;
pub mod call_copies;
pub mod calls;
mod coalesce;
pub mod copies;
pub mod fusion;
pub mod inline;
pub mod liveness;
pub mod lowering;
pub mod pipeline;
pub mod priority;
pub mod simplify;

pub use allocation::{allocate, allocations, allocations_with, is_tail_call, AllocationOptions};
pub use call_copies::remove_call_copies;
pub use calls::{recursive_entries, recursive_functions};
pub use copies::propagate_copies;
pub use fusion::fuse_pop_push;
pub use inline::{inline_calls, InlineOptions};
pub use liveness::{liveness, stacked_liveness, BlockLiveness, Liveness, VarSet};
pub use lowering::lower;
pub use pipeline::{prepare, Allocations, Passes, Prepared, Source, VerifiedSource};
pub use priority::{prioritize_blocks, prioritize_blocks_deferring};
pub use simplify::{simplify_blocks, simplify_blocks_keeping};

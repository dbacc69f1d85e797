//! Shared code for the runnable autobatch examples: sampler diagnostics and draw output.

pub mod diagnostics;
pub mod npy;

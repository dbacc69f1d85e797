//! Shared code for the runnable autobatch examples: sampler diagnostics and draw output.

#![warn(missing_docs)]

pub mod diagnostics;
pub mod npy;
pub mod nuts;

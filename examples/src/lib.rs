//! Shared code for the runnable autobatch examples: the batched NUTS sampler, its diagnostics
//! and its output (ArviZ InferenceData as Zarr, `.npy`, a picture of the run).

#![warn(missing_docs)]

pub mod diagnostics;
pub mod inference_data;
pub mod npy;
pub mod nuts;
pub mod plot;
pub mod zarr;

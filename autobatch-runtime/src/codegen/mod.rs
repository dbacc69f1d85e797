//! What only the code `#[autobatch]` and `#[primitive]` generate uses: the linker that builds
//! one program from many functions, conversions for the typed `batch` entry points, and the
//! helpers generated kernels call. Reached only through `crate::__private`.

mod batched;
mod convert;
mod link;
mod scratch;

pub use batched::{batched_input, batched_input_vectors, batched_output, batched_output_vectors};
pub use convert::{input, input_vectors, output, output_vectors};
pub use link::{Callee, Linker};
pub use scratch::Scratch;

//! Test fixtures shared by the workspace's tests (a dev-dependency only, never published):
//! the reference's conformance programs built with the IR builder, golden-file comparison of
//! printed programs, and the case count of every property test.

#![warn(missing_docs)]

mod cases;
pub mod conformance;
pub mod golden;

pub use cases::cases;

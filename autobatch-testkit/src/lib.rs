//! Test fixtures shared by the workspace's tests (a dev-dependency only, never published):
//! the reference's conformance programs built with the IR builder, and golden-file comparison
//! of printed programs.

#![warn(missing_docs)]

pub mod conformance;
pub mod golden;

//! `KernelError`: why a kernel failed, and in which active lane.

use std::fmt;

/// Why a kernel failed; `position` is the index into the active lanes of the lane at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelError {
    /// Index into the active lanes (`None` if the failure is not about one lane).
    pub position: Option<usize>,
    /// What went wrong.
    pub message: String,
}

impl KernelError {
    /// A failure of the lane at `position` among the active lanes.
    pub fn at(position: usize, message: impl Into<String>) -> Self {
        KernelError {
            position: Some(position),
            message: message.into(),
        }
    }

    /// A failure not tied to one lane (e.g. an input of the wrong dtype).
    pub fn whole(message: impl Into<String>) -> Self {
        KernelError {
            position: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

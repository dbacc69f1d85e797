//! The verifier: checks every IR invariant and reports all violations, each naming its entity.

use crate::program::Program;
use std::fmt;
use thiserror::Error;

/// One broken invariant, naming the entity at fault.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum VerifyError {
    /// Placeholder kept until the verifier's checks land.
    #[error("no function is the entry")]
    NoEntry,
}

/// Every invariant a program breaks (never empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyErrors(pub Vec<VerifyError>);

impl fmt::Display for VerifyErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "  {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for VerifyErrors {}

/// Checks `program` against every IR invariant, collecting all errors.
pub fn verify(program: &Program) -> Result<(), VerifyErrors> {
    if program.main.index() >= program.functions.len() {
        return Err(VerifyErrors(vec![VerifyError::NoEntry]));
    }
    Ok(())
}

//! The verified program types: [`HighProgram`] and [`LoweredProgram`], made only by the
//! verifier ([`verify_high`](crate::verify_high), [`verify_lowered`](crate::verify_lowered))
//! and by the passes, which take verified programs and return verified programs.

use crate::program::Program;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;

mod sealed {
    pub trait Sealed {}
}

/// The two forms a verified program can have: [`High`] or [`Lowered`] (sealed).
pub trait Form: sealed::Sealed + Copy + fmt::Debug + Eq + 'static {
    /// Which form, for the verifier's form-specific checks.
    const KIND: FormKind;
}

/// The form of a program as a value: what the verifier checks a program against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FormKind {
    /// Functions and `call` ops; run by stackless and the reference interpreter.
    High,
    /// One flat function (`main`) with push-goto / indirect-goto; run by the full VM.
    Lowered,
}

/// Marker: a high-level program (functions and calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum High {}

/// Marker: a lowered program (one flat function, push-goto / indirect-goto).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lowered {}

impl sealed::Sealed for High {}
impl sealed::Sealed for Lowered {}

impl Form for High {
    const KIND: FormKind = FormKind::High;
}

impl Form for Lowered {
    const KIND: FormKind = FormKind::Lowered;
}

/// A program that passed the verifier for form `F`: every invariant of that form holds.
///
/// Read it through [`Deref`] (`program.vars[v]`); take the data out with
/// [`into_program`](Self::into_program) to edit it, and verify again to get a `Verified` back.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Verified<F: Form> {
    program: Program,
    form: PhantomData<F>,
}

/// A verified high-level program.
pub type HighProgram = Verified<High>;

/// A verified lowered program.
pub type LoweredProgram = Verified<Lowered>;

impl<F: Form> Verified<F> {
    /// Wraps a program the verifier accepted for `F` (only [`crate::verify`] makes one, through
    /// [`verify_high`](crate::verify_high), [`verify_lowered`](crate::verify_lowered) and the
    /// passes' trusted outputs).
    pub(crate) fn checked(program: Program) -> Self {
        Verified {
            program,
            form: PhantomData,
        }
    }

    /// The program data (for editing; verify it again to run it).
    pub fn into_program(self) -> Program {
        self.program
    }

    /// This program with every variable's allocation replaced by `allocs[var]` (allocations
    /// are not part of what the verifier checks).
    pub fn with_allocations(&self, allocs: &[crate::Allocation]) -> Self {
        Verified {
            program: self.program.with_allocations(allocs),
            form: PhantomData,
        }
    }
}

impl<F: Form> Deref for Verified<F> {
    type Target = Program;

    fn deref(&self) -> &Program {
        &self.program
    }
}

impl<F: Form> AsRef<Program> for Verified<F> {
    fn as_ref(&self) -> &Program {
        &self.program
    }
}

impl<F: Form> fmt::Debug for Verified<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.program.fmt(f)
    }
}

impl<F: Form> fmt::Display for Verified<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.program.fmt(f)
    }
}

//! Whether an expression compiles as one lane-wise kernel (and of which type) or as control
//! flow: the decision the inference pass and the translation share, so they cannot disagree.

use super::{infer, Scope, TypeError};
use crate::generate::pure::{has_branches, is_pure};
use crate::parse::ast::{Expr, Ty};
use std::cell::Cell;

/// How an expression compiles.
pub enum Strategy {
    /// As one lane-wise kernel computing a value of this type.
    Kernel(Ty),
    /// As control flow and statements.
    ControlFlow,
    /// Not at all: typing it failed with this error (an empty message: already reported).
    Failed(TypeError),
}

/// Decides how `e` compiles in `scope`. A pure expression is one lane-wise kernel, `if`s and
/// blocks in it included: the user's Rust runs per active lane and takes the branch it takes
/// in the scalar function, nothing else. An `if` or block whose value is `()` or holds a
/// `Vector` stays control flow (its branches mostly move vectors between variables, which the
/// built-in assignment does by handle while a kernel would copy every element), and so does
/// one inference cannot type: the control-flow translation reports its errors.
pub fn classify(e: &Expr, expected: Option<&Ty>, scope: &dyn Scope) -> Strategy {
    if !is_pure(e) {
        return Strategy::ControlFlow;
    }
    let probe = KernelProbe {
        scope,
        keep_branches: Cell::new(false),
    };
    match (infer(e, expected, &probe), probe.keep_branches.get()) {
        (Ok(ty), false) => Strategy::Kernel(ty),
        (Ok(_), true) => Strategy::ControlFlow,
        (Err(_), _) if has_branches(e) => Strategy::ControlFlow,
        (Err(te), _) => Strategy::Failed(te),
    }
}

/// The scope a kernel is typed in: notes any `if` or block inside it whose value a kernel
/// should not compute.
struct KernelProbe<'s> {
    scope: &'s dyn Scope,
    keep_branches: Cell<bool>,
}

impl Scope for KernelProbe<'_> {
    fn lookup(&self, name: &str) -> Option<Ty> {
        self.scope.lookup(name)
    }

    fn is_poisoned(&self, name: &str) -> bool {
        self.scope.is_poisoned(name)
    }

    fn callee_return(&self, path: &syn::Path) -> Option<Ty> {
        self.scope.callee_return(path)
    }

    fn demand(&self, name: &str, ty: &Ty) {
        self.scope.demand(name, ty);
    }

    fn unify(&self, a: &str, a_ty: &Ty, b: &str, b_ty: &Ty) {
        self.scope.unify(a, a_ty, b, b_ty);
    }

    fn typed_branch(&self, ty: &Ty) {
        if ty.is_unit() || ty.has_vector() {
            self.keep_branches.set(true);
        }
    }
}

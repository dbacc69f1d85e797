//! Kernels: which expressions become one lane-wise kernel (pure scalar `if`s included: the
//! if-conversion), which merely copy variables, and the kernel steps themselves.

use super::scope::ScopeView;
use super::{KernelSpec, Step, Translator};
use crate::generate::infer::{infer, Scope};
use crate::generate::pure::{free_vars, has_branches, is_pure};
use crate::parse::ast::{Expr, ExprKind, Ty};
use proc_macro2::{Ident, TokenStream};
use std::cell::Cell;

impl Translator<'_> {
    /// Decides how `e` compiles. A pure expression is one lane-wise kernel, `if`s and blocks in
    /// it included: the user's Rust runs per active lane and takes the branch it takes in the
    /// scalar function, nothing else. An `if` or block whose value is `()` or holds a `Vector`
    /// stays control flow (its branches mostly move vectors between variables, which the
    /// built-in assignment does by handle while a kernel would copy every element), and so does
    /// one this inference cannot type: the control-flow lowering reports its errors, or
    /// re-types the variables it uses so that a later round can convert it.
    pub(super) fn classify(&mut self, e: &Expr, expected: Option<&Ty>) -> Strategy {
        if !is_pure(e) {
            return Strategy::ControlFlow;
        }
        let probe = KernelProbe {
            view: ScopeView(self),
            keep_branches: Cell::new(false),
        };
        let typed = infer(e, expected, &probe);
        match (typed, probe.keep_branches.get()) {
            (Ok(ty), false) => Strategy::Kernel(ty),
            (Ok(_), true) => Strategy::ControlFlow,
            (Err(_), _) if has_branches(e) => Strategy::ControlFlow,
            (Err(te), _) => {
                if !te.message.is_empty() {
                    self.errors.at(te.span, te.message);
                }
                Strategy::Failed
            }
        }
    }

    /// Emits `outs = <pure e>` as a lane-wise kernel.
    pub(super) fn prim_pure(&mut self, outs: Vec<usize>, e: &Expr, ty: Ty) {
        let Some(block) = self.current else { return };
        if let Some(ins) = self.copy_sources(e, &ty) {
            self.out.steps.push(Step::Assign { block, outs, ins });
            return;
        }
        // A tuple that mostly moves variables: compute the other elements into temporaries,
        // then assemble the tuple with one assignment.
        if let (ExprKind::Tuple(items), Ty::Tuple(tys), [_]) = (&e.kind, &ty, outs.as_slice()) {
            if items.len() == tys.len()
                && items
                    .iter()
                    .zip(tys)
                    .any(|(i, t)| self.copy_sources(i, t).is_some())
            {
                let mut ins = Vec::new();
                for (item, t) in items.iter().zip(tys) {
                    match self.copy_sources(item, t) {
                        Some(vars) => ins.extend(vars),
                        None => {
                            let tmp = self.new_var("t", t.clone());
                            self.prim_pure(vec![tmp], item, t.clone());
                            ins.push(tmp);
                        }
                    }
                }
                self.out.steps.push(Step::Assign { block, outs, ins });
                return;
            }
        }
        let mut names = Vec::new();
        free_vars(e, &mut names);
        let mut inputs = Vec::new();
        for id in names {
            match self.lookup(&id.to_string()) {
                Some(v) => inputs.push((id, v)),
                None => self.unknown(&id),
            }
        }
        self.push_kernel(block, outs, inputs, e.clone(), ty, source_text(&e.tokens));
    }

    /// The variables a pure expression merely copies, leaf for leaf, when it is made only of
    /// variables, `.clone()`s of them, tuples of those and blocks holding nothing but one of
    /// those (`{ x }` is, `(q.clone(), p, 1)` is not): such an expression compiles to the
    /// built-in assignment (one row copy per leaf) instead of a kernel that rebuilds every value.
    pub(super) fn copy_sources(&self, e: &Expr, ty: &Ty) -> Option<Vec<usize>> {
        fn collect(l: &Translator, e: &Expr, out: &mut Vec<usize>) -> Option<Ty> {
            match &e.kind {
                ExprKind::Var(id) => {
                    let v = l.lookup(&id.to_string())?;
                    out.push(v);
                    Some(l.out.vars[v].ty.clone())
                }
                ExprKind::Method(recv, name, args) if name == "clone" && args.is_empty() => {
                    collect(l, recv, out)
                }
                ExprKind::Block(b) if b.stmts.is_empty() => collect(l, b.tail.as_deref()?, out),
                ExprKind::Tuple(items) => items
                    .iter()
                    .map(|item| collect(l, item, out))
                    .collect::<Option<Vec<Ty>>>()
                    .map(Ty::Tuple),
                _ => None,
            }
        }
        let mut ins = Vec::new();
        (collect(self, e, &mut ins)? == *ty).then_some(ins)
    }

    /// Emits `outs = kernel(inputs)` computing `body` (of type `out_ty`), shown as `source`.
    pub(super) fn push_kernel(
        &mut self,
        block: usize,
        outs: Vec<usize>,
        inputs: Vec<(Ident, usize)>,
        body: Expr,
        out_ty: Ty,
        source: String,
    ) {
        let ins = inputs.iter().map(|(_, v)| *v).collect();
        self.out.kernels.push(KernelSpec {
            inputs,
            body,
            out_ty,
        });
        let kernel = self.out.kernels.len() - 1;
        self.out.steps.push(Step::Prim {
            block,
            outs,
            ins,
            kernel,
            source,
        });
    }
}

/// The scope a kernel is typed in: notes any `if` or block inside it whose value a kernel
/// should not compute (see [`Translator::classify`]).
struct KernelProbe<'l, 'a> {
    view: ScopeView<'l, 'a>,
    keep_branches: Cell<bool>,
}

impl Scope for KernelProbe<'_, '_> {
    fn lookup(&self, name: &str) -> Option<Ty> {
        self.view.lookup(name)
    }

    fn is_poisoned(&self, name: &str) -> bool {
        self.view.is_poisoned(name)
    }

    fn callee_return(&self, path: &syn::Path) -> Option<Ty> {
        self.view.callee_return(path)
    }

    fn typed_branch(&self, ty: &Ty) {
        if ty.is_unit() || ty.has_vector() {
            self.keep_branches.set(true);
        }
    }
}

/// How an expression compiles.
pub(super) enum Strategy {
    /// As one lane-wise kernel computing a value of this type.
    Kernel(Ty),
    /// As control flow and statements.
    ControlFlow,
    /// Not at all: its error is reported.
    Failed,
}

/// The user's source text of an expression, as the printed program shows it.
pub(super) fn source_text(tokens: &TokenStream) -> String {
    tokens.to_string()
}

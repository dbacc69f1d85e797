//! Kernels: which expressions become one lane-wise kernel (pure scalar `if`s included: the
//! if-conversion), which merely copy variables, and the kernel steps themselves.

use super::scope::ScopeView;
use super::{KernelSpec, Step, Translator};
use crate::generate::infer::classify::{classify, Strategy};
use crate::generate::pure::free_vars;
use crate::parse::ast::{Expr, ExprKind, Ty};
use proc_macro2::{Ident, TokenStream};

impl Translator<'_> {
    /// Decides how `e` compiles ([`classify`]), reporting why it cannot if it cannot.
    pub(super) fn classify(&mut self, e: &Expr, expected: Option<&Ty>) -> Strategy {
        let strategy = classify(e, expected, &ScopeView(self));
        if let Strategy::Failed(te) = &strategy {
            if !te.message.is_empty() {
                self.errors.at(te.span, &te.message);
            }
        }
        strategy
    }

    /// Emits `outs = <pure e>` as a lane-wise kernel.
    pub(super) fn prim_pure(&mut self, outs: Vec<usize>, e: &Expr, ty: Ty) {
        self.prim_pure_shown(outs, e, ty, source_text(&e.tokens));
    }

    /// [`Translator::prim_pure`], shown as `source` in the printed program.
    pub(super) fn prim_pure_shown(&mut self, outs: Vec<usize>, e: &Expr, ty: Ty, source: String) {
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
        self.push_kernel(block, outs, inputs, e.clone(), ty, source);
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

/// The user's source text of an expression, as the printed program shows it.
pub(super) fn source_text(tokens: &TokenStream) -> String {
    crate::generate::flatten::display_source(&tokens.to_string())
}

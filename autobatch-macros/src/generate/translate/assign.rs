//! Assignments: built-in copies into variables and element variables, tuple elements each
//! into its own variable, and `x = v` / `x op= v` statements.

use super::kernel::source_text;
use super::{Dest, Step, Translator, Value};
use crate::generate::infer::classify::Strategy;
use crate::generate::pure::{free_vars, is_pure};
use crate::parse::ast::{BinOp, Expr, ExprKind, Ty};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

impl Translator<'_> {
    pub(super) fn assign(&mut self, target: usize, source: usize) {
        if target == source {
            return;
        }
        if let Some(block) = self.current {
            self.out.steps.push(Step::Assign {
                block,
                outs: vec![target],
                ins: vec![source],
            });
        }
    }

    /// Stores the value of variable `source` in `dest`: one built-in assignment, which spreads
    /// a tuple over element variables leaf by leaf.
    pub(super) fn assign_to(&mut self, dest: &Dest, source: usize) {
        match dest {
            Dest::Var(t) => self.assign(*t, source),
            Dest::Elems(vs) => {
                if let Some(block) = self.current {
                    self.out.steps.push(Step::Assign {
                        block,
                        outs: vs.clone(),
                        ins: vec![source],
                    });
                }
            }
        }
    }

    /// Compiles the elements of a tuple expression, in order, each straight into its own
    /// variable of `targets`. Elements that merely copy variables become one built-in
    /// assignment, emitted after the others unless an element that may write a variable (a
    /// call, an assignment, control flow) comes between, which first takes the copies so far.
    pub(super) fn tuple_into(&mut self, items: &[Expr], targets: &[usize], tys: &[Ty]) {
        let mut outs = Vec::new();
        let mut ins = Vec::new();
        for ((item, &target), ty) in items.iter().zip(targets).zip(tys) {
            if let Some(sources) = self.copy_sources(item, ty) {
                outs.push(target);
                ins.extend(sources);
                continue;
            }
            if !is_pure(item) {
                self.copies(&mut outs, &mut ins);
            }
            self.compile_into(item, &Dest::Var(target), ty);
        }
        self.copies(&mut outs, &mut ins);
    }

    /// Emits the pending copies `outs = ins` of [`Translator::tuple_into`] as one assignment.
    pub(super) fn copies(&mut self, outs: &mut Vec<usize>, ins: &mut Vec<usize>) {
        if outs.is_empty() {
            return;
        }
        let (outs, ins) = (std::mem::take(outs), std::mem::take(ins));
        if let Some(block) = self.current {
            self.out.steps.push(Step::Assign { block, outs, ins });
        }
    }

    pub(super) fn assign_stmt(
        &mut self,
        e: &Expr,
        target: &Ident,
        value: &Expr,
        op: Option<&(BinOp, TokenStream)>,
    ) {
        let Some(var) = self.lookup(&target.to_string()) else {
            self.unknown(target);
            return;
        };
        let ty = self.out.vars[var].ty.clone();
        match op {
            None => self.compile_into(value, &Dest::Var(var), &ty),
            Some((bop, op_tokens)) => {
                let hint = (*bop != BinOp::Shift && ty != Ty::Vector).then_some(&ty);
                let shape = self.classify(value, hint);
                if let Strategy::Failed(_) = shape {
                    return;
                }
                if let Strategy::Kernel(_) = shape {
                    let Some(block) = self.current else { return };
                    let mut names = vec![target.clone()];
                    free_vars(value, &mut names);
                    let inputs: Vec<(Ident, usize)> = names
                        .into_iter()
                        .filter_map(|id| self.lookup(&id.to_string()).map(|v| (id, v)))
                        .collect();
                    let vt = &value.tokens;
                    let body = Expr::made(
                        ExprKind::Binary(
                            *bop,
                            op_tokens.clone(),
                            Box::new(Expr::var(target)),
                            Box::new(value.clone()),
                        ),
                        quote!(#target #op_tokens (#vt)),
                        e.span,
                    );
                    let source = source_text(&e.tokens);
                    self.push_kernel(block, vec![var], inputs, body, ty, source);
                } else if let Value::Var { var: v, .. } = self.compile(value, hint) {
                    let Some(block) = self.current else { return };
                    let arg = format_ident!("__a0", span = Span::mixed_site());
                    let body = Expr::made(
                        ExprKind::Binary(
                            *bop,
                            op_tokens.clone(),
                            Box::new(Expr::var(target)),
                            Box::new(Expr::var(&arg)),
                        ),
                        quote!(#target #op_tokens #arg),
                        e.span,
                    );
                    let inputs = vec![(target.clone(), var), (arg, v)];
                    let source = source_text(&e.tokens);
                    self.push_kernel(block, vec![var], inputs, body, ty, source);
                }
            }
        }
    }
}

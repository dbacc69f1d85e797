//! `let` statements: a name bound to a kernel's or a control-flow value, tuple patterns whose
//! variables take the elements directly, and destructuring of tuple values.

use super::scope::ScopeView;
use super::{Dest, Step, Translator, Value};
use crate::generate::infer::classify::Strategy;
use crate::generate::infer::{describe, tuple_elements};
use crate::parse::ast::{Expr, ExprKind, Pat, Ty};
use proc_macro2::Span;

impl Translator<'_> {
    pub(super) fn let_(&mut self, pat: &Pat, annotated: Option<&Ty>, init: &Expr) {
        let forced = annotated
            .is_none()
            .then(|| self.lets.get(init).cloned())
            .flatten();
        let expected = forced.as_ref().or(annotated);
        let shape = match (pat, &init.kind) {
            (Pat::Ident(_), ExprKind::Var(_)) | (Pat::Tuple(_) | Pat::Wild, _) => {
                Strategy::ControlFlow
            }
            (Pat::Ident(_), _) => self.classify(init, expected),
        };
        if let Strategy::Failed(_) = shape {
            self.poison(pat);
            return;
        }
        if let (Pat::Ident(name), Strategy::Kernel(ty)) = (pat, shape) {
            if let Some(a) = annotated {
                if *a != ty {
                    self.errors.at(
                        init.span,
                        format!("expected {}, found {}", describe(a), describe(&ty)),
                    );
                }
            }
            let v = self.new_var(&name.to_string(), ty.clone());
            self.prim_pure(vec![v], init, ty);
            self.bind(name.to_string(), v);
            return;
        }
        if let (Pat::Ident(name), Some(t)) = (pat, expected) {
            if !t.is_unit()
                && matches!(
                    init.kind,
                    ExprKind::If(..) | ExprKind::Block(_) | ExprKind::Call(..)
                )
            {
                let v = self.new_var(&name.to_string(), t.clone());
                let t = t.clone();
                self.compile_into(init, &Dest::Var(v), &t);
                self.bind(name.to_string(), v);
                return;
            }
        }
        if let Pat::Tuple(ps) = pat {
            if self.let_elements(ps, expected, init) {
                return;
            }
        }
        let errors_before = self.errors.len();
        let (var, ty, fresh) = match self.compile(init, expected) {
            Value::Var { var, ty, fresh } => (var, ty, fresh),
            _ if self.errors.len() > errors_before || matches!(init.kind, ExprKind::Invalid) => {
                self.poison(pat);
                return;
            }
            Value::Unit => (usize::MAX, Ty::unit(), true),
            Value::Diverged => return,
        };
        match pat {
            Pat::Ident(_) if ty.is_unit() => {}
            Pat::Ident(name) => {
                let v = if fresh {
                    self.out.vars[var].name = self.unique(&name.to_string());
                    var
                } else {
                    let v = self.new_var(&name.to_string(), ty);
                    self.assign(v, var);
                    v
                };
                self.bind(name.to_string(), v);
            }
            Pat::Wild => {}
            Pat::Tuple(_) => {
                let mut outs = Vec::new();
                let mut binds = Vec::new();
                if !self.flatten_pattern(pat, &ty, init.span, &mut outs, &mut binds) {
                    return;
                }
                if let Some(block) = self.current {
                    self.out.steps.push(Step::Assign {
                        block,
                        outs,
                        ins: vec![var],
                    });
                }
                for (name, v) in binds {
                    self.bind(name, v);
                }
            }
        }
    }

    /// `let (a, b, ..) = init` where `init` is a tuple of the pattern's arity (its type
    /// annotated, or inferred here): the pattern's variables (fresh ones for `_` and for nested
    /// patterns, destructured after) receive the elements directly, as a call's outputs or
    /// each element's own value, with no tuple in between. False, having done nothing, if the
    /// type is not such a tuple.
    pub(super) fn let_elements(&mut self, ps: &[Pat], expected: Option<&Ty>, init: &Expr) -> bool {
        let Some(tys) = tuple_elements(ps.len(), expected, init, &ScopeView(self)) else {
            return false;
        };
        let ty = Ty::Tuple(tys.clone());
        let tys = &tys;
        let mut elems = Vec::new();
        let mut binds = Vec::new();
        let mut nested = Vec::new();
        for (p, t) in ps.iter().zip(tys) {
            let v = match p {
                Pat::Ident(name) => {
                    let v = self.new_var(&name.to_string(), t.clone());
                    binds.push((name.to_string(), v));
                    v
                }
                Pat::Wild => self.new_var("_", t.clone()),
                Pat::Tuple(_) => {
                    let v = self.new_var("t", t.clone());
                    nested.push((p, v, t));
                    v
                }
            };
            elems.push(v);
        }
        self.compile_into(init, &Dest::Elems(elems), &ty);
        for (p, v, t) in nested {
            let mut outs = Vec::new();
            if !self.flatten_pattern(p, t, init.span, &mut outs, &mut binds) {
                self.poison(p);
                continue;
            }
            if let Some(block) = self.current {
                self.out.steps.push(Step::Assign {
                    block,
                    outs,
                    ins: vec![v],
                });
            }
        }
        for (name, v) in binds {
            self.bind(name, v);
        }
        true
    }

    /// Pairs a tuple pattern with its type, creating one variable per bound leaf or sub-tuple.
    pub(super) fn flatten_pattern(
        &mut self,
        pat: &Pat,
        ty: &Ty,
        span: Span,
        outs: &mut Vec<usize>,
        binds: &mut Vec<(String, usize)>,
    ) -> bool {
        match (pat, ty) {
            (Pat::Ident(name), _) => {
                let v = self.new_var(&name.to_string(), ty.clone());
                outs.push(v);
                binds.push((name.to_string(), v));
                true
            }
            (Pat::Wild, _) => {
                let v = self.new_var("_", ty.clone());
                outs.push(v);
                true
            }
            (Pat::Tuple(ps), Ty::Tuple(ts)) if ps.len() == ts.len() => ps
                .iter()
                .zip(ts)
                .all(|(p, t)| self.flatten_pattern(p, t, span, outs, binds)),
            (Pat::Tuple(_), _) => {
                self.errors.at(
                    span,
                    format!(
                        "this pattern does not match a value of type {}",
                        describe(ty)
                    ),
                );
                false
            }
        }
    }
}

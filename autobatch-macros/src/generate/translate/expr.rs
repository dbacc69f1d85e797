//! Expressions: for their value or into a destination; operators, casts, methods, tuples and
//! fields whose operands need statements first become one kernel over the operands.

use super::kernel::source_text;
use super::{Dest, Translator, Value};
use crate::generate::infer::classify::Strategy;
use crate::generate::infer::{describe, method_argument, operator_type, operator_type_error};
use crate::parse::ast::{BinOp, Expr, ExprKind, Ty};
use proc_macro2::{Ident, Span};
use quote::{format_ident, quote};

impl Translator<'_> {
    /// Compiles `e` for its value.
    pub(super) fn compile(&mut self, e: &Expr, expected: Option<&Ty>) -> Value {
        if self.current.is_none() {
            return Value::Diverged;
        }
        if let ExprKind::Var(id) = &e.kind {
            return match self.lookup(&id.to_string()) {
                Some(v) => Value::Var {
                    var: v,
                    ty: self.out.vars[v].ty.clone(),
                    fresh: false,
                },
                None => {
                    self.unknown(id);
                    Value::Unit
                }
            };
        }
        if let ExprKind::Invalid = &e.kind {
            return Value::Unit;
        }
        match self.classify(e, expected) {
            Strategy::Kernel(ty) => {
                let t = self.new_var("t", ty.clone());
                self.prim_pure(vec![t], e, ty.clone());
                return Value::Var {
                    var: t,
                    ty,
                    fresh: true,
                };
            }
            Strategy::Failed(_) => return Value::Unit,
            Strategy::ControlFlow => {}
        }
        match &e.kind {
            ExprKind::Call(path, args) => self.call(e, path, args, expected, None),
            ExprKind::If(c, t, el) => {
                if expected.is_none_or(Ty::is_unit) && self.assigning_if(e, c, t, el.as_deref()) {
                    return Value::Unit;
                }
                self.if_(c, t, el.as_deref(), expected, None)
            }
            ExprKind::Block(b) => {
                self.scopes.push(Vec::new());
                let v = self.block_value(b, expected);
                self.scopes.pop();
                v
            }
            ExprKind::While(label, c, body) => self.while_(label.as_ref(), c, body),
            ExprKind::Loop(label, body) => self.loop_(label.as_ref(), body, expected),
            ExprKind::For(f) => self.for_(f),
            ExprKind::Break(label, v) => self.break_(label.as_ref(), v.as_deref()),
            ExprKind::Continue(label) => self.continue_(label.as_ref()),
            ExprKind::Return(v) => {
                match (v, self.return_dest()) {
                    (Some(v), Some(r)) => {
                        let ty = self.func.ret.clone();
                        self.compile_into(v, &r, &ty);
                    }
                    (Some(v), None) => {
                        self.compile(v, Some(&Ty::unit()));
                    }
                    (None, _) => {}
                }
                let rb = self.ret_block;
                self.goto(rb);
                Value::Diverged
            }
            ExprKind::Assign(target, value, op) => {
                self.assign_stmt(e, target, value, op.as_ref());
                Value::Unit
            }
            ExprKind::Binary(BinOp::And | BinOp::Or, _, l, r) => self.short_circuit(e, l, r),
            _ => self.mixed(e, expected),
        }
    }

    /// Compiles `e` so its value (of type `ty`) lands in `dest`. Into element variables, a
    /// tuple expression compiles each element into its own ([`Translator::tuple_into`]), a call
    /// takes them as its outputs, `if`s and blocks pass them on to their values, and any other
    /// value is spread over them by one assignment.
    pub(super) fn compile_into(&mut self, e: &Expr, dest: &Dest, ty: &Ty) {
        if self.current.is_none() {
            return;
        }
        // A tuple expression into element variables: each element on its own (a pure one as
        // its own kernel, which merging joins with its neighbours).
        if let (Dest::Elems(vs), ExprKind::Tuple(items), Ty::Tuple(tys)) = (dest, &e.kind, ty) {
            if items.len() == vs.len() && tys.len() == vs.len() {
                self.tuple_into(items, vs, tys);
                return;
            }
        }
        match &e.kind {
            ExprKind::Invalid => return,
            ExprKind::Var(_) => {}
            _ => match self.classify(e, Some(ty)) {
                Strategy::Kernel(t) => {
                    if t != *ty {
                        self.errors.at(
                            e.span,
                            format!("expected {}, found {}", describe(ty), describe(&t)),
                        );
                    }
                    self.prim_pure(dest.vars(), e, ty.clone());
                    return;
                }
                Strategy::Failed(_) => return,
                Strategy::ControlFlow => {}
            },
        }
        match &e.kind {
            ExprKind::Call(path, args) => {
                self.call(e, path, args, Some(ty), Some(dest));
                return;
            }
            ExprKind::If(c, t, el) => {
                self.if_(c, t, el.as_deref(), Some(ty), Some(dest));
                return;
            }
            ExprKind::Block(b) => {
                self.scopes.push(Vec::new());
                self.block_into(b, Some(dest), ty);
                self.scopes.pop();
                return;
            }
            _ => {}
        }
        if let Value::Var { var, .. } = self.compile(e, Some(ty)) {
            self.assign_to(dest, var);
        }
    }

    /// An operator, cast, method, tuple or field whose operands need statements first: each
    /// operand goes to a variable, then one kernel combines them.
    pub(super) fn mixed(&mut self, e: &Expr, expected: Option<&Ty>) -> Value {
        let mut inputs: Vec<(Ident, usize)> = Vec::new();
        let mut types: Vec<Ty> = Vec::new();
        let mut operand =
            |this: &mut Self, x: &Expr, hint: Option<&Ty>| -> Option<(Box<Expr>, Ty)> {
                match this.compile(x, hint) {
                    Value::Var { var, ty, .. } => {
                        let id = format_ident!("__a{}", inputs.len(), span = Span::mixed_site());
                        inputs.push((id.clone(), var));
                        types.push(ty.clone());
                        Some((Box::new(Expr::var(&id)), ty))
                    }
                    _ => None,
                }
            };
        // The same expression over the operands' variables (`__a0`, `__a1`, ..).
        let (kind, tokens) = match &e.kind {
            ExprKind::Binary(op, op_tokens, l, r) => {
                let hint = if *op == BinOp::Compare {
                    None
                } else {
                    expected
                };
                // As rustc types them: an unsuffixed literal operand takes the other operand's
                // type (computed first: a literal has no effects to order), the right operand of
                // a shift its own.
                let free_lit = |x: &Expr| matches!(x.kind, ExprKind::Lit { suffix: None, .. });
                let shift = matches!(op, BinOp::Shift);
                let scalar = |t: Ty| (!t.has_vector()).then_some(t);
                let (lt, rt) = if free_lit(l) && !free_lit(r) && !shift {
                    let Some((rt, rty)) = operand(self, r, hint) else {
                        return Value::Diverged;
                    };
                    let Some((lt, _)) = operand(self, l, scalar(rty).as_ref().or(hint)) else {
                        return Value::Diverged;
                    };
                    (lt, rt)
                } else {
                    let Some((lt, lty)) = operand(self, l, hint) else {
                        return Value::Diverged;
                    };
                    let rhint = if shift {
                        None
                    } else {
                        scalar(lty).or(hint.cloned())
                    };
                    let Some((rt, _)) = operand(self, r, rhint.as_ref()) else {
                        return Value::Diverged;
                    };
                    (lt, rt)
                };
                if free_lit(l) && !free_lit(r) && !shift {
                    // The operands were computed right first: keep the types in source order.
                    types.swap(0, 1);
                }
                let tokens = {
                    let (l, r) = (&lt.tokens, &rt.tokens);
                    quote!(#l #op_tokens #r)
                };
                (ExprKind::Binary(*op, op_tokens.clone(), lt, rt), tokens)
            }
            ExprKind::Unary(op_tokens, x) => {
                let Some((xt, _)) = operand(self, x, expected) else {
                    return Value::Diverged;
                };
                let tokens = {
                    let x = &xt.tokens;
                    quote!(#op_tokens #x)
                };
                (ExprKind::Unary(op_tokens.clone(), xt), tokens)
            }
            ExprKind::Ref(x) => {
                let Some((xt, _)) = operand(self, x, expected) else {
                    return Value::Diverged;
                };
                let tokens = {
                    let x = &xt.tokens;
                    quote!(&#x)
                };
                (ExprKind::Ref(xt), tokens)
            }
            ExprKind::Cast(x, ty, ty_tokens) => {
                let Some((xt, _)) = operand(self, x, None) else {
                    return Value::Diverged;
                };
                let tokens = {
                    let x = &xt.tokens;
                    quote!(#x as #ty_tokens)
                };
                (ExprKind::Cast(xt, ty.clone(), ty_tokens.clone()), tokens)
            }
            ExprKind::Field(x, i) => {
                let Some((xt, _)) = operand(self, x, None) else {
                    return Value::Diverged;
                };
                let idx = syn::Index::from(*i as usize);
                let tokens = {
                    let x = &xt.tokens;
                    quote!(#x.#idx)
                };
                (ExprKind::Field(xt, *i), tokens)
            }
            ExprKind::Method(r, name, args) => {
                let Some((rt, rty)) = operand(self, r, None) else {
                    return Value::Diverged;
                };
                let want = method_argument(&rty, &name.to_string());
                let ats = args
                    .iter()
                    .map(|a| operand(self, a, Some(&want)).map(|a| *a.0));
                let Some(ats) = ats.collect::<Option<Vec<Expr>>>() else {
                    return Value::Diverged;
                };
                let tokens = {
                    let (r, a) = (&rt.tokens, ats.iter().map(|a| &a.tokens));
                    quote!(#r.#name(#(#a),*))
                };
                (ExprKind::Method(rt, name.clone(), ats), tokens)
            }
            ExprKind::Assoc(t, f, args) => {
                let ats = args.iter().map(|a| operand(self, a, None).map(|a| *a.0));
                let Some(ats) = ats.collect::<Option<Vec<Expr>>>() else {
                    return Value::Diverged;
                };
                let tokens = {
                    let a = ats.iter().map(|a| &a.tokens);
                    quote!(#t::#f(#(#a),*))
                };
                (ExprKind::Assoc(t.clone(), f.clone(), ats), tokens)
            }
            ExprKind::Tuple(items) => {
                let hints: Vec<Option<Ty>> = match expected {
                    Some(Ty::Tuple(ts)) if ts.len() == items.len() => {
                        ts.iter().cloned().map(Some).collect()
                    }
                    _ => vec![None; items.len()],
                };
                let ats = items.iter().zip(&hints);
                let ats = ats.map(|(a, h)| operand(self, a, h.as_ref()).map(|a| *a.0));
                let Some(ats) = ats.collect::<Option<Vec<Expr>>>() else {
                    return Value::Diverged;
                };
                let tokens = {
                    let a = ats.iter().map(|a| &a.tokens);
                    quote!((#(#a,)*))
                };
                (ExprKind::Tuple(ats), tokens)
            }
            _ => {
                self.errors.at(
                    e.span,
                    "this expression is not supported in #[autobatch] code",
                );
                return Value::Unit;
            }
        };
        let body = Expr::made(kind, tokens, e.span);
        // The result type: infer the rebuilt expression over the operands' types.
        let Some(ty) = self.mixed_type(e, &types, expected) else {
            return Value::Unit;
        };
        let Some(block) = self.current else {
            return Value::Diverged;
        };
        let t = self.new_var("t", ty.clone());
        let source = source_text(&e.tokens);
        self.push_kernel(block, vec![t], inputs, body, ty.clone(), source);
        Value::Var {
            var: t,
            ty,
            fresh: true,
        }
    }

    /// The type of a mixed expression whose operands (in order) have `types`; an error if it
    /// has none.
    fn mixed_type(&mut self, e: &Expr, types: &[Ty], expected: Option<&Ty>) -> Option<Ty> {
        let ty = operator_type(e, types, expected);
        if ty.is_none() {
            self.errors.at(e.span, operator_type_error(e, types));
        }
        ty
    }
}

//! Calls of `#[autobatch]` functions and primitives: arguments, the callee table, and results
//! (a tuple result one output per element).

use super::{CalleeSpec, Dest, Step, Translator, Value};
use crate::generate::context;
use crate::generate::infer::path_text;
use crate::parse::ast::{Expr, ExprKind, Ty};

impl Translator<'_> {
    pub(super) fn call(
        &mut self,
        e: &Expr,
        path: &syn::Path,
        args: &[Expr],
        expected: Option<&Ty>,
        target: Option<&Dest>,
    ) -> Value {
        // The context passed on is no per-lane input: kernels receive it from the run.
        let (args, context_at) = context::split_args(args);
        let args = args.as_slice();
        let is_self = self.func.is_self_path(path);
        let param_types = self.func.argument_types(path, args.len());
        if args.len() != param_types.len() {
            self.errors.at(
                e.span,
                format!(
                    "`{}` takes {} arguments",
                    path_text(path),
                    param_types.len()
                ),
            );
            return Value::Unit;
        }
        let mut ins = Vec::new();
        let mut tys = Vec::new();
        let by_ref: Vec<bool> = args
            .iter()
            .map(|a| matches!(a.kind, ExprKind::Ref(_)))
            .collect();
        for (a, hint) in args.iter().zip(&param_types) {
            let a = match &a.kind {
                ExprKind::Ref(inner) => inner,
                _ => a,
            };
            match self.compile(a, hint.as_ref()) {
                Value::Var { var, ty, .. } => {
                    ins.push(var);
                    tys.push(ty);
                }
                Value::Unit => {
                    let v = self.new_var("unit", Ty::unit());
                    ins.push(v);
                    tys.push(Ty::unit());
                }
                Value::Diverged => return Value::Diverged,
            }
        }
        let ret = match self.func.callee_return(path) {
            Some(t) => t,
            None => match expected {
                Some(t) => t.clone(),
                None => {
                    let p = path_text(path);
                    self.errors.at(e.span, format!("cannot infer the return type of `{p}` here (it is not visible to this macro); annotate the binding, e.g. `let x: i64 = {p}(..);`"));
                    return Value::Unit;
                }
            },
        };
        let key = path_text(path);
        let callee = match self
            .out
            .callees
            .iter()
            .position(|c| path_text(&c.path) == key)
        {
            Some(i) => {
                let c = &self.out.callees[i];
                if c.params != tys || c.ret != ret {
                    self.errors.at(e.span, format!("`{key}` is called here with types that differ from another call in this function"));
                }
                i
            }
            None => {
                self.out.callees.push(CalleeSpec {
                    path: path.clone(),
                    is_self,
                    by_ref,
                    context: context_at,
                    params: tys,
                    ret: ret.clone(),
                    span: e.span,
                });
                self.out.callees.len() - 1
            }
        };
        let Some(block) = self.current else {
            return Value::Diverged;
        };
        // A tuple result comes out as one variable per element (the callee's return variables,
        // or the leaves of a primitive's result split the same way): element variables the
        // value is bound to take them directly; otherwise fresh ones are assembled into the
        // tuple value by one assignment.
        let elements = match &ret {
            Ty::Tuple(items) => Some(items.clone()),
            _ => None,
        };
        let call = move |this: &mut Self, outs: Vec<usize>| {
            this.out.steps.push(Step::Call {
                block,
                callee,
                ins,
                outs,
            });
        };
        let value = match (elements, target) {
            (Some(items), _) if items.is_empty() => {
                call(self, Vec::new());
                return Value::Unit;
            }
            (Some(items), Some(Dest::Elems(vs))) if vs.len() == items.len() => {
                call(self, vs.clone());
                return Value::Unit;
            }
            (Some(items), _) => {
                let outs: Vec<usize> = items.into_iter().map(|t| self.new_var("t", t)).collect();
                call(self, outs.clone());
                let value = match target {
                    Some(Dest::Var(t)) => *t,
                    _ => self.new_var("t", ret.clone()),
                };
                self.out.steps.push(Step::Assign {
                    block,
                    outs: vec![value],
                    ins: outs,
                });
                value
            }
            (None, Some(Dest::Var(t))) => {
                call(self, vec![*t]);
                return Value::Unit;
            }
            (None, _) => {
                let t = self.new_var("t", ret.clone());
                call(self, vec![t]);
                t
            }
        };
        match target {
            None => Value::Var {
                var: value,
                ty: ret,
                fresh: true,
            },
            Some(dest) => {
                if !matches!(dest, Dest::Var(t) if *t == value) {
                    self.assign_to(dest, value);
                }
                Value::Unit
            }
        }
    }
}

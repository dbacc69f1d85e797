//! Control flow: blocks and statements, `&&` / `||`, `if`, `while`, `loop`, `break`.

use super::{Dest, LoopCtx, Step, Translator, Value};
use crate::generate::infer::describe;
use crate::parse::ast::{BinOp, Block, Expr, ExprKind, Label, Stmt, Ty};
use autobatch_ir::DType;
use proc_macro2::Span;
use quote::quote;

impl Translator<'_> {
    /// Compiles a block's statements and tail into `target` (or for effect when `None`).
    pub(super) fn block_into(&mut self, b: &Block, target: Option<&Dest>, ty: &Ty) {
        self.stmts(b);
        match (&b.tail, target) {
            (Some(tail), Some(t)) => self.compile_into(tail, t, ty),
            (Some(tail), None) => {
                self.compile(tail, Some(ty));
            }
            (None, Some(_)) if self.current.is_some() && !ty.is_unit() => {
                self.errors.at(
                    Span::call_site(),
                    format!("this block must produce a value of type {}", describe(ty)),
                );
            }
            _ => {}
        }
    }

    pub(super) fn block_value(&mut self, b: &Block, expected: Option<&Ty>) -> Value {
        self.stmts(b);
        match &b.tail {
            Some(tail) => self.compile(tail, expected),
            None if self.current.is_none() => Value::Diverged,
            None => Value::Unit,
        }
    }

    pub(super) fn stmts(&mut self, b: &Block) {
        for s in &b.stmts {
            if self.current.is_none() {
                return;
            }
            match s {
                Stmt::Let { pat, ty, init } => self.let_(pat, ty.as_ref(), init),
                Stmt::Expr(e) => {
                    self.compile(e, None);
                }
            }
        }
    }

    pub(super) fn short_circuit(&mut self, e: &Expr, l: &Expr, r: &Expr) -> Value {
        let is_and = matches!(e.kind, ExprKind::Binary(BinOp::And, ..));
        let bool_ty = Ty::Scalar(DType::Bool);
        let result = self.new_var("t", bool_ty.clone());
        let Value::Var { var: lv, .. } = self.compile(l, Some(&bool_ty)) else {
            return Value::Diverged;
        };
        let Some(cur) = self.current else {
            return Value::Diverged;
        };
        let rhs_block = self.new_block(if is_and { "and" } else { "or" });
        let short_block = self.new_block("short");
        let join = self.new_block("join");
        let (t, f) = if is_and {
            (rhs_block, short_block)
        } else {
            (short_block, rhs_block)
        };
        self.out.steps.push(Step::Branch(cur, lv, t, f));
        self.current = Some(short_block);
        let tokens = if is_and { quote!(false) } else { quote!(true) };
        let source = tokens.to_string();
        let kind = ExprKind::Lit {
            float: false,
            suffix: Some(DType::Bool),
        };
        let constant = Expr::made(kind, tokens, e.span);
        self.push_kernel(
            short_block,
            vec![result],
            Vec::new(),
            constant,
            bool_ty.clone(),
            source,
        );
        self.goto(join);
        self.current = Some(rhs_block);
        self.compile_into(r, &Dest::Var(result), &bool_ty);
        self.goto(join);
        self.current = Some(join);
        Value::Var {
            var: result,
            ty: bool_ty,
            fresh: true,
        }
    }

    pub(super) fn if_(
        &mut self,
        cond: &Expr,
        then: &Block,
        els: Option<&Expr>,
        expected: Option<&Ty>,
        target: Option<&Dest>,
    ) -> Value {
        let Some((t_block, e_block)) = self.branch_on(cond, "then", "else") else {
            return Value::Diverged;
        };
        let mut join: Option<usize> = None;
        let mut result: Option<(Dest, Ty)> = target.map(|t| (t.clone(), self.dest_ty(t)));
        let value_wanted = expected.is_some_and(|t| !t.is_unit()) || target.is_some();
        let mut arm = |this: &mut Self, start: usize, body: ArmBody<'_>| {
            this.current = Some(start);
            this.scopes.push(Vec::new());
            let hint = result
                .as_ref()
                .map(|(_, t)| t.clone())
                .or(expected.cloned());
            match (&result, value_wanted) {
                (Some((r, ty)), true) => {
                    let (r, ty) = (r.clone(), ty.clone());
                    match body {
                        ArmBody::Block(b) => this.block_into(b, Some(&r), &ty),
                        ArmBody::Expr(x) => this.compile_into(x, &r, &ty),
                    }
                }
                _ => {
                    let v = match body {
                        ArmBody::Block(b) => this.block_value(b, hint.as_ref()),
                        ArmBody::Expr(x) => this.compile(x, hint.as_ref()),
                    };
                    if let Value::Var { var, ty, .. } = v {
                        let r = match &result {
                            Some((r, _)) => r.clone(),
                            None => {
                                let r = Dest::Var(this.new_var("t", ty.clone()));
                                result = Some((r.clone(), ty));
                                r
                            }
                        };
                        this.assign_to(&r, var);
                    }
                }
            }
            this.scopes.pop();
            if this.current.is_some() {
                let j = *join.get_or_insert_with(|| this.new_block("join"));
                this.goto(j);
            }
        };
        arm(self, t_block, ArmBody::Block(then));
        match els {
            Some(x) => arm(self, e_block, ArmBody::Expr(x)),
            None => {
                self.current = Some(e_block);
                let j = *join.get_or_insert_with(|| self.new_block("join"));
                self.goto(j);
            }
        }
        self.current = join;
        match (join, result) {
            (None, _) => Value::Diverged,
            (Some(_), Some((Dest::Var(var), ty))) if target.is_none() && els.is_some() => {
                Value::Var {
                    var,
                    ty,
                    fresh: true,
                }
            }
            _ => Value::Unit,
        }
    }

    /// Compiles `cond` and ends the current block with a branch to two new blocks, returned as
    /// (taken when true, taken when false); `None` if control does not get here.
    pub(super) fn branch_on(
        &mut self,
        cond: &Expr,
        then_name: &str,
        else_name: &str,
    ) -> Option<(usize, usize)> {
        let c = self.condition(cond)?;
        let cur = self.current?;
        let t = self.new_block(then_name);
        let e = self.new_block(else_name);
        self.out.steps.push(Step::Branch(cur, c, t, e));
        Some((t, e))
    }

    /// Compiles the `bool` `cond` for its variable; `None` if control does not get past it.
    fn condition(&mut self, cond: &Expr) -> Option<usize> {
        let bool_ty = Ty::Scalar(DType::Bool);
        match self.compile(cond, Some(&bool_ty)) {
            Value::Var { var, .. } => Some(var),
            _ => None,
        }
    }

    /// `while cond { body }`, rotated: the condition is tested where the loop starts and again
    /// where the body ends (and in the block every `continue` goes to), each test branching to
    /// the body or past the loop, so no header block is passed through on every iteration and
    /// the test's kernel merges with the body's last ones.
    pub(super) fn while_(&mut self, label: Option<&Label>, cond: &Expr, body: &Block) -> Value {
        let errors = self.errors.len();
        let Some((body_block, exit)) = self.branch_on(cond, "body", "after") else {
            return Value::Diverged;
        };
        // A condition that failed to compile is reported once: it is not compiled again.
        let retest = self.errors.len() == errors;
        self.loops.push(LoopCtx {
            label: label.cloned(),
            continue_to: None,
            break_to: Some(exit),
            result: None,
        });
        self.current = Some(body_block);
        self.scopes.push(Vec::new());
        self.block_value(body, Some(&Ty::unit()));
        self.scopes.pop();
        let ctx = self.loops.pop().expect("pushed above");
        let test = |this: &mut Self, block: usize| {
            this.current = Some(block);
            if !retest {
                return this.goto(exit);
            }
            if let Some(c) = this.condition(cond) {
                if let Some(end) = this.current.take() {
                    this.out.steps.push(Step::Branch(end, c, body_block, exit));
                }
            }
        };
        self.end_rotated(ctx.continue_to, test);
        self.current = Some(exit);
        Value::Unit
    }

    pub(super) fn loop_(
        &mut self,
        label: Option<&Label>,
        body: &Block,
        expected: Option<&Ty>,
    ) -> Value {
        let start = self.new_block("loop");
        self.goto(start);
        self.current = Some(start);
        let result = expected
            .filter(|t| !t.is_unit())
            .map(|t| (self.new_var("t", t.clone()), t.clone()));
        self.loops.push(LoopCtx {
            label: label.cloned(),
            continue_to: Some(start),
            break_to: None,
            result,
        });
        self.scopes.push(Vec::new());
        self.block_value(body, Some(&Ty::unit()));
        self.scopes.pop();
        self.goto(start);
        let ctx = self.loops.pop().expect("pushed above");
        self.current = ctx.break_to;
        match (ctx.break_to, ctx.result) {
            (None, _) => Value::Diverged,
            (Some(_), Some((var, ty))) => Value::Var {
                var,
                ty,
                fresh: true,
            },
            (Some(_), None) => Value::Unit,
        }
    }

    pub(super) fn break_(&mut self, label: Option<&Label>, value: Option<&Expr>) -> Value {
        let Some(at) = self.target_loop(label) else {
            return Value::Diverged;
        };
        if let Some(v) = value {
            let hint = self.loops[at].result.as_ref().map(|(_, t)| t.clone());
            match self.compile(v, hint.as_ref()) {
                Value::Var { var, ty, .. } => {
                    let r = match self.loops[at].result.clone() {
                        Some((r, _)) => r,
                        None => {
                            let r = self.new_var("t", ty.clone());
                            self.loops[at].result = Some((r, ty));
                            r
                        }
                    };
                    self.assign(r, var);
                }
                Value::Diverged => return Value::Diverged,
                Value::Unit => {}
            }
        }
        let to = match self.loops[at].break_to {
            Some(b) => b,
            None => {
                let b = self.new_block("after");
                self.loops[at].break_to = Some(b);
                b
            }
        };
        self.goto(to);
        Value::Diverged
    }
}

/// An `if`'s arm: its `then` block, or its `else` expression.
enum ArmBody<'e> {
    Block(&'e Block),
    Expr(&'e Expr),
}

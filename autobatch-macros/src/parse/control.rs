//! Blocks and control flow: `if`, `while`, `loop`, `break`, `continue`, `return`, `{ .. }`.

use super::ast::{Block, Expr, ExprKind, Stmt};
use super::expr::{boxed, expr, mk};
use super::pattern::pattern;
use super::{rejected, Errors};

/// Parses a block: its statements and its value.
pub(super) fn block(b: &syn::Block, errors: &mut Errors) -> Block {
    let mut stmts = Vec::new();
    let mut tail = None;
    let n = b.stmts.len();
    for (i, s) in b.stmts.iter().enumerate() {
        match s {
            syn::Stmt::Local(local) => {
                if let Some(init) = &local.init {
                    if let Some((_, diverge)) = &init.diverge {
                        errors.at(diverge, "`let ... else` is not supported in #[autobatch] code; use `if`");
                    }
                    let (pat, annotated) = pattern(&local.pat, errors);
                    stmts.push(Stmt::Let { pat, ty: annotated, init: expr(&init.expr, errors) });
                } else {
                    errors.at(local, "`let` without a value is not supported in #[autobatch] code; initialise the variable");
                }
            }
            syn::Stmt::Expr(e, semi) => {
                let e = expr(e, errors);
                if semi.is_none() && i + 1 == n {
                    tail = Some(Box::new(e));
                } else {
                    stmts.push(Stmt::Expr(e));
                }
            }
            syn::Stmt::Item(item) => errors.at(item, "items inside #[autobatch] functions are not supported; define them outside the function"),
            syn::Stmt::Macro(m) => errors.at(m, "macros are not supported in #[autobatch] code; write the expression out"),
        }
    }
    Block { stmts, tail }
}

/// Parses a control-flow expression.
pub(super) fn flow(e: &syn::Expr, errors: &mut Errors) -> Expr {
    match e {
        syn::Expr::If(i) => {
            let cond = boxed(&i.cond, errors);
            let then = block(&i.then_branch, errors);
            let els = i.else_branch.as_ref().map(|(_, x)| boxed(x, errors));
            mk(ExprKind::If(cond, then, els), e)
        }
        syn::Expr::While(w) => {
            if let Some(l) = &w.label {
                errors.at(l, "loop labels are not supported in #[autobatch] code");
            }
            mk(
                ExprKind::While(boxed(&w.cond, errors), block(&w.body, errors)),
                e,
            )
        }
        syn::Expr::Loop(l) => {
            if let Some(lb) = &l.label {
                errors.at(lb, "loop labels are not supported in #[autobatch] code");
            }
            mk(ExprKind::Loop(block(&l.body, errors)), e)
        }
        syn::Expr::Break(b) => {
            if let Some(l) = &b.label {
                errors.at(l, "loop labels are not supported in #[autobatch] code");
            }
            mk(
                ExprKind::Break(b.expr.as_ref().map(|x| boxed(x, errors))),
                e,
            )
        }
        syn::Expr::Continue(c) => {
            if let Some(l) = &c.label {
                errors.at(l, "loop labels are not supported in #[autobatch] code");
            }
            mk(ExprKind::Continue, e)
        }
        syn::Expr::Return(r) => mk(
            ExprKind::Return(r.expr.as_ref().map(|x| boxed(x, errors))),
            e,
        ),
        syn::Expr::Block(b) => {
            if let Some(l) = &b.label {
                errors.at(l, "block labels are not supported in #[autobatch] code");
            }
            mk(ExprKind::Block(block(&b.block, errors)), e)
        }
        _ => rejected::expr(e, errors),
    }
}

//! Blocks and control flow: `if`, `while`, `loop` (labelled or not), `break`, `continue`,
//! `return`, `{ .. }`.

use super::ast::{Block, Expr, ExprKind, Label, Stmt};
use super::expr::{boxed, expr, mk};
use super::pattern::pattern;
use super::{matching, rejected, Errors};

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
                        stmts.extend(matching::let_else(local, init, diverge, errors));
                        continue;
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
            syn::Stmt::Macro(m) => match matching::matches_macro(&m.mac, errors) {
                Some(e) if m.semi_token.is_none() && i + 1 == n => tail = Some(Box::new(e)),
                Some(e) => stmts.push(Stmt::Expr(e)),
                None => errors.at(m, "macros are not supported in #[autobatch] code; write the expression out"),
            },
        }
    }
    Block { stmts, tail }
}

/// Parses a control-flow expression.
pub(super) fn flow(e: &syn::Expr, errors: &mut Errors) -> Expr {
    match e {
        syn::Expr::If(i) if matches!(&*i.cond, syn::Expr::Let(_)) => match &*i.cond {
            syn::Expr::Let(l) => matching::if_let(i, l, errors),
            _ => unreachable!("matched above"),
        },
        syn::Expr::If(i) => {
            let cond = boxed(&i.cond, errors);
            let then = block(&i.then_branch, errors);
            let els = i.else_branch.as_ref().map(|(_, x)| boxed(x, errors));
            mk(ExprKind::If(cond, then, els), e)
        }
        syn::Expr::While(w) if matches!(&*w.cond, syn::Expr::Let(_)) => {
            errors.at(w.while_token, "`while let` is not supported in #[autobatch] code; write a `loop` with an `if let` that `break`s");
            super::expr::invalid(e)
        }
        syn::Expr::Match(m) => matching::match_expr(m, errors),
        syn::Expr::While(w) => mk(
            ExprKind::While(
                w.label.as_ref().map(label),
                boxed(&w.cond, errors),
                block(&w.body, errors),
            ),
            e,
        ),
        syn::Expr::Loop(l) => mk(
            ExprKind::Loop(l.label.as_ref().map(label), block(&l.body, errors)),
            e,
        ),
        syn::Expr::ForLoop(f) => super::loops::for_loop(f, errors),
        syn::Expr::Break(b) => mk(
            ExprKind::Break(
                b.label.as_ref().map(|l| l.ident.to_string()),
                b.expr.as_ref().map(|x| boxed(x, errors)),
            ),
            e,
        ),
        syn::Expr::Continue(c) => mk(
            ExprKind::Continue(c.label.as_ref().map(|l| l.ident.to_string())),
            e,
        ),
        syn::Expr::Return(r) => mk(
            ExprKind::Return(r.expr.as_ref().map(|x| boxed(x, errors))),
            e,
        ),
        syn::Expr::Block(b) => {
            if let Some(l) = &b.label {
                // Its `break`s name the label: they would be follow-on errors.
                errors.at(l, "block labels are not supported in #[autobatch] code; label a `loop` and `break` out of it");
                return super::expr::invalid(e);
            }
            mk(ExprKind::Block(block(&b.block, errors)), e)
        }
        _ => rejected::expr(e, errors),
    }
}

/// A loop's label, by name (`'outer` -> `outer`).
pub(super) fn label(l: &syn::Label) -> Label {
    l.name.ident.to_string()
}

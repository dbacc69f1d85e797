//! Which expressions a lane-wise kernel can compute (no calls, assignments, loops or jumps),
//! and the variables such an expression reads: questions about the AST that type inference and
//! the translation both ask.

use crate::parse::ast::{Block, Expr, ExprKind, Stmt};
use proc_macro2::Ident;

/// True for an expression a lane-wise kernel can compute: no calls, assignments, loops or
/// jumps. `if`s (with an `else`) and blocks qualify when every statement in them is a `let` of
/// such an expression and their value is one; whether their type suits a kernel is decided
/// when they are compiled ((`translate::kernel`)).
pub fn is_pure(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit { .. } | ExprKind::Var(_) | ExprKind::Const(_) | ExprKind::Uniform(_) => true,
        ExprKind::Binary(_, _, l, r) => is_pure(l) && is_pure(r),
        ExprKind::Unary(_, x)
        | ExprKind::Cast(x, _, _)
        | ExprKind::Field(x, _)
        | ExprKind::Ref(x) => is_pure(x),
        ExprKind::Method(r, _, args) => is_pure(r) && args.iter().all(is_pure),
        ExprKind::Assoc(_, _, args) | ExprKind::Tuple(args) => args.iter().all(is_pure),
        ExprKind::If(c, then, Some(els)) => is_pure(c) && is_pure_block(then) && is_pure(els),
        ExprKind::Block(b) => is_pure_block(b),
        _ => false,
    }
}

/// A block of `let`s with pure initialisers and a pure value.
fn is_pure_block(b: &Block) -> bool {
    b.tail.as_deref().is_some_and(is_pure)
        && b.stmts
            .iter()
            .all(|s| matches!(s, Stmt::Let { init, .. } if is_pure(init)))
}

/// The direct sub-expressions of `e`, with the initialisers and values of its blocks.
fn children(e: &Expr) -> Vec<&Expr> {
    fn block_exprs(b: &Block) -> impl Iterator<Item = &Expr> {
        b.stmts
            .iter()
            .map(|s| match s {
                Stmt::Let { init, .. } => init,
                Stmt::Expr(x) => x,
            })
            .chain(b.tail.as_deref())
    }
    match &e.kind {
        ExprKind::Binary(_, _, l, r) => vec![l, r],
        ExprKind::Unary(_, x)
        | ExprKind::Cast(x, _, _)
        | ExprKind::Field(x, _)
        | ExprKind::Ref(x) => vec![x],
        ExprKind::Method(r, _, args) => std::iter::once(&**r).chain(args).collect(),
        ExprKind::Assoc(_, _, args) | ExprKind::Tuple(args) => args.iter().collect(),
        ExprKind::If(c, then, els) => std::iter::once(&**c)
            .chain(block_exprs(then))
            .chain(els.as_deref())
            .collect(),
        ExprKind::Block(b) => block_exprs(b).collect(),
        _ => Vec::new(),
    }
}

/// True if `e` has an `if` or a block in it.
pub fn has_branches(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::If(..) | ExprKind::Block(_))
        || children(e).into_iter().any(has_branches)
}

/// The variables `e` reads from outside it, in order of first use: a name one of its own
/// `let`s binds is not one where that binding is in scope.
pub fn free_vars(e: &Expr, out: &mut Vec<Ident>) {
    free_vars_in(e, &mut Vec::new(), out);
}

/// [`free_vars`] with the names `bound` by enclosing `let`s of `e`'s own.
fn free_vars_in(e: &Expr, bound: &mut Vec<String>, out: &mut Vec<Ident>) {
    match &e.kind {
        ExprKind::Var(id) => {
            if !out.contains(id) && !bound.iter().any(|b| id == b) {
                out.push(id.clone());
            }
        }
        ExprKind::Block(b) => block_free_vars(b, bound, out),
        ExprKind::If(c, then, els) => {
            free_vars_in(c, bound, out);
            block_free_vars(then, bound, out);
            if let Some(x) = els {
                free_vars_in(x, bound, out);
            }
        }
        _ => children(e)
            .into_iter()
            .for_each(|x| free_vars_in(x, bound, out)),
    }
}

/// [`free_vars_in`] for a block: each `let`'s names are bound from the next statement to the
/// block's end.
fn block_free_vars(b: &Block, bound: &mut Vec<String>, out: &mut Vec<Ident>) {
    let outer = bound.len();
    for s in &b.stmts {
        match s {
            Stmt::Let { pat, init, .. } => {
                free_vars_in(init, bound, out);
                bound.extend(pat.names());
            }
            Stmt::Expr(x) => free_vars_in(x, bound, out),
        }
    }
    if let Some(tail) = &b.tail {
        free_vars_in(tail, bound, out);
    }
    bound.truncate(outer);
}

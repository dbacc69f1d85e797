//! `for` loops over integer ranges: `lo..hi`, `lo..=hi`, `(..).rev()`, `(..).step_by(k)` and
//! `(..).rev().step_by(k)`, labelled or not, with a name or `_` as the loop variable.

use super::ast::{Expr, ExprKind, ForLoop};
use super::control::{block, label};
use super::expr::{expr, invalid, mk};
use super::Errors;
use quote::ToTokens;

/// What to write instead of a `for` loop the language does not have.
const RANGES: &str = "`for` loops in #[autobatch] code run over integer ranges: `a..b`, `a..=b`, `(a..b).rev()`, `(a..b).step_by(k)` or `(a..b).rev().step_by(k)`; for anything else write a `while` loop with a counter";

/// The range of a `for` loop, taken apart.
struct Range {
    lo: Expr,
    hi: Expr,
    inclusive: bool,
    rev: bool,
    step: Option<Expr>,
}

/// Parses `for pat in range { body }`.
pub(super) fn for_loop(f: &syn::ExprForLoop, errors: &mut Errors) -> Expr {
    let e = syn::Expr::ForLoop(f.clone());
    let var = match &*f.pat {
        syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => Some(pi.ident.clone()),
        syn::Pat::Wild(_) => None,
        other => {
            errors.at(
                other,
                "the variable of a `for` loop in #[autobatch] code is a name or `_`",
            );
            return invalid(&e);
        }
    };
    let Some(range) = range(&f.expr, errors) else {
        return invalid(&e);
    };
    let body = block(&f.body, errors);
    mk(
        ExprKind::For(Box::new(ForLoop {
            label: f.label.as_ref().map(label),
            var,
            lo: range.lo,
            hi: range.hi,
            inclusive: range.inclusive,
            rev: range.rev,
            step: range.step,
            body,
            source: f.expr.to_token_stream().to_string(),
        })),
        &e,
    )
}

/// Takes `e` apart as a range the language iterates over; reports it if it is not one.
fn range(e: &syn::Expr, errors: &mut Errors) -> Option<Range> {
    match e {
        syn::Expr::Paren(p) => range(&p.expr, errors),
        syn::Expr::Group(g) => range(&g.expr, errors),
        syn::Expr::Range(r) => match (&r.start, &r.end) {
            (Some(lo), Some(hi)) => Some(Range {
                lo: expr(lo, errors),
                hi: expr(hi, errors),
                inclusive: matches!(r.limits, syn::RangeLimits::Closed(_)),
                rev: false,
                step: None,
            }),
            _ => {
                errors.at(
                    r,
                    format!("a `for` range in #[autobatch] code has both ends; {RANGES}"),
                );
                None
            }
        },
        syn::Expr::MethodCall(m) if m.method == "rev" && m.args.is_empty() => {
            let mut inner = range(&m.receiver, errors)?;
            if inner.rev || inner.step.is_some() {
                errors.at(&m.method, format!("this range is not supported; {RANGES}"));
                return None;
            }
            inner.rev = true;
            Some(inner)
        }
        syn::Expr::MethodCall(m) if m.method == "step_by" && m.args.len() == 1 => {
            let mut inner = range(&m.receiver, errors)?;
            if inner.step.is_some() {
                errors.at(&m.method, format!("this range is not supported; {RANGES}"));
                return None;
            }
            // `step_by` takes a `usize`: `k as usize` is read as `k`, and the loop converts it
            // to `usize` exactly as the cast does.
            let step = match &m.args[0] {
                syn::Expr::Cast(c) if c.ty.to_token_stream().to_string() == "usize" => &*c.expr,
                other => other,
            };
            inner.step = Some(expr(step, errors));
            Some(inner)
        }
        other => {
            errors.at(other, RANGES);
            None
        }
    }
}

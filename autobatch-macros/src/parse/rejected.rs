//! The constructs outside the language: each an error at its place saying what to write
//! instead, and a placeholder that compiles to nothing.

use super::ast::Expr;
use super::expr::invalid;
use super::{matching, Errors};

/// Reports `e`, a construct the language does not have, and returns its placeholder.
pub(super) fn expr(e: &syn::Expr, errors: &mut Errors) -> Expr {
    match e {
        syn::Expr::Closure(c) => {
            errors.at(c, "closures are not supported in #[autobatch] code; write another #[autobatch] function");
            invalid(e)
        }
        syn::Expr::Unsafe(u) => {
            errors.at(
                u.unsafe_token,
                "`unsafe` is not supported in #[autobatch] code; put the unsafe code in a #[primitive] function and call that",
            );
            invalid(e)
        }
        syn::Expr::Try(t) => {
            errors.at(
                t.question_token,
                "`?` is not supported in #[autobatch] code (a lane holds numbers, bools, vectors, keys and tuples: there is no `Result` or `Option`); test with `if` and `return` early",
            );
            invalid(e)
        }
        syn::Expr::Macro(m) => matching::matches_macro(&m.mac, errors).unwrap_or_else(|| {
            errors.at(
                m,
                "macros are not supported in #[autobatch] code; write the expression out",
            );
            invalid(e)
        }),
        syn::Expr::Index(i) => {
            errors.at(
                i,
                "indexing is not supported in #[autobatch] code; use `Vector::get`",
            );
            invalid(e)
        }
        syn::Expr::Array(a) => {
            errors.at(
                a,
                "arrays are not supported in #[autobatch] code; use tuples or `Vector`",
            );
            invalid(e)
        }
        syn::Expr::Async(a) => {
            errors.at(
                a,
                "`async` is not supported in #[autobatch] code; compute the value directly",
            );
            invalid(e)
        }
        syn::Expr::Range(r) => {
            errors.at(
                r,
                "a range is a value in #[autobatch] code only as what a `for` loop runs over (`for i in a..b`); keep its ends in two variables",
            );
            invalid(e)
        }
        other => {
            errors.at(
                other,
                "this expression is not supported in #[autobatch] code; write it with the language's values (numbers, bools, `Vector`, `Key`, tuples), operators, methods, `if`, loops, `match` and calls of #[autobatch] functions",
            );
            invalid(e)
        }
    }
}

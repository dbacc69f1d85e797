//! `let` patterns: names, `_`, tuples of them, and a type annotation.

use super::ast::{Pat, Ty};
use super::types::ty;
use super::Errors;

/// Parses a `let` pattern; the type annotated on it, if any.
pub(super) fn pattern(p: &syn::Pat, errors: &mut Errors) -> (Pat, Option<Ty>) {
    match p {
        syn::Pat::Type(pt) => {
            let (pat, _) = pattern(&pt.pat, errors);
            (pat, Some(ty(&pt.ty, errors)))
        }
        syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
            (Pat::Ident(pi.ident.clone()), None)
        }
        syn::Pat::Tuple(t) => (
            Pat::Tuple(t.elems.iter().map(|e| pattern(e, errors).0).collect()),
            None,
        ),
        syn::Pat::Wild(_) => (Pat::Wild, None),
        syn::Pat::Paren(pp) => pattern(&pp.pat, errors),
        syn::Pat::Struct(s) => {
            errors.at(
                s,
                "struct patterns are not supported in #[autobatch] code; bind the struct to a name and read its fields (`let t = ..; t.depth`)",
            );
            (Pat::Wild, None)
        }
        other => {
            errors.at(
                other,
                "only names, `_` and tuples of them can be bound in #[autobatch] code",
            );
            (Pat::Wild, None)
        }
    }
}

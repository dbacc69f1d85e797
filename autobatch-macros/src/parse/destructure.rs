//! Destructuring assignment: `(a, b) = (b, a % b)`, nested tuples and `_` included. The value
//! is computed first, into fresh names bound by a tuple `let`, then each target is assigned its
//! element, as Rust assigns them.

use super::ast::Expr;
use super::expr::{expr, invalid};
use super::Errors;
use proc_macro2::{Span, TokenStream};
use quote::quote;

/// The `let` pattern standing for an assignment's left side, collecting `target = fresh;`
/// assignments; `None` (reported) if a target is not a variable, `_` or a tuple of them.
fn targets(
    left: &syn::Expr,
    assigns: &mut Vec<TokenStream>,
    errors: &mut Errors,
) -> Option<TokenStream> {
    match left {
        syn::Expr::Infer(_) => Some(quote!(_)),
        syn::Expr::Paren(p) => targets(&p.expr, assigns, errors),
        syn::Expr::Tuple(t) => {
            let items = t
                .elems
                .iter()
                .map(|x| targets(x, assigns, errors))
                .collect::<Option<Vec<_>>>()?;
            Some(quote!((#(#items,)*)))
        }
        syn::Expr::Path(p) if p.path.get_ident().is_some() => {
            let fresh = syn::Ident::new(
                &format!("__autobatch_assign{}", assigns.len()),
                Span::call_site(),
            );
            assigns.push(quote!(#p = #fresh;));
            Some(quote!(#fresh))
        }
        other => {
            errors.at(
                other,
                "only plain variables, `_` and tuples of them can be assigned in #[autobatch] code",
            );
            None
        }
    }
}

/// Parses `(a, b, ..) = value`, `left` a tuple (or `_`).
pub(super) fn assignment(a: &syn::ExprAssign, errors: &mut Errors) -> Expr {
    let whole = syn::Expr::Assign(a.clone());
    let mut assigns = Vec::new();
    let Some(pat) = targets(&a.left, &mut assigns, errors) else {
        return invalid(&whole);
    };
    let right = &a.right;
    let tokens = quote!({ let #pat = #right; #(#assigns)* });
    match syn::parse2::<syn::Expr>(tokens) {
        Ok(x) => expr(&x, errors),
        Err(err) => {
            errors.at(a, format!("#[autobatch] internal error: {err}"));
            invalid(&whole)
        }
    }
}

//! What other items tell an `#[autobatch]` function about themselves, as it receives it: the
//! hidden `__learnt("path" = fn(..) -> ..)` arguments their descriptions add to its attribute
//! (`generate/describe.rs` makes them).

use super::ast::{Signature, Ty};
use super::{ty, Errors};
use syn::parse::ParseStream;

/// Parses the inside of one `__learnt(..)` argument: `"path" = fn(T, ..) -> R`.
pub fn learnt(input: ParseStream) -> syn::Result<(String, Signature)> {
    let content;
    syn::parenthesized!(content in input);
    let key: syn::LitStr = content.parse()?;
    content.parse::<syn::Token![=]>()?;
    let f: syn::TypeBareFn = content.parse()?;
    let mut errors = Errors::default();
    let params = f.inputs.iter().map(|a| ty(&a.ty, &mut errors)).collect();
    let ret = match &f.output {
        syn::ReturnType::Default => Ty::unit(),
        syn::ReturnType::Type(_, t) => ty(t, &mut errors),
    };
    errors.finish()?;
    Ok((key.value(), Signature { params, ret }))
}

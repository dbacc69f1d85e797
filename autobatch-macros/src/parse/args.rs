//! The attributes' arguments: `crate = path` for both macros (where generated code finds the
//! runtime, for crates that re-export or rename it, as serde's `crate = ..` allows) and
//! `batched = path` for `#[primitive]`.

use super::Errors;
use proc_macro2::TokenStream;

/// The arguments of `#[autobatch(..)]` or `#[primitive(..)]`.
#[derive(Default)]
pub struct Args {
    /// `crate = path`: the runtime crate's path (default `::autobatch_runtime`).
    pub krate: Option<syn::Path>,
    /// `batched = path`: the batched form of a primitive.
    pub batched: Option<syn::Path>,
    /// `__learnt("path" = fn(..) -> ..)`, hidden: callees' signatures, added by their
    /// descriptions (`generate/describe.rs`).
    pub learnt: Vec<(String, super::ast::Signature)>,
    /// `__learnt("path" = struct { .. })`, hidden: struct layouts, added likewise.
    pub structs: Vec<(String, Vec<(String, super::ast::Ty)>)>,
}

/// Which macro the arguments are for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Macro {
    /// `#[autobatch]`: `crate = path` only.
    Autobatch,
    /// `#[primitive]`: `crate = path` and `batched = path`.
    Primitive,
}

/// Parses the arguments of `attr`; unknown ones are errors naming the ones there are.
pub fn args(attr: TokenStream, which: Macro, errors: &mut Errors) -> Args {
    let mut args = Args::default();
    if attr.is_empty() {
        return args;
    }
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("crate") {
            args.krate = Some(meta.value()?.parse::<syn::Path>()?);
            Ok(())
        } else if which == Macro::Autobatch && meta.path.is_ident("__learnt") {
            match super::item::learnt(meta.input)? {
                super::item::Learnt::Function(k, s) => args.learnt.push((k, s)),
                super::item::Learnt::Struct(k, s) => args.structs.push((k, s)),
            }
            Ok(())
        } else if which == Macro::Primitive && meta.path.is_ident("batched") {
            args.batched = Some(meta.value()?.parse::<syn::Path>()?);
            Ok(())
        } else if which == Macro::Primitive {
            Err(meta.error(
                "expected `batched = path::to::batched_fn` or `crate = path::to::autobatch_runtime`",
            ))
        } else {
            Err(meta
                .error("#[autobatch] takes no arguments but `crate = path::to::autobatch_runtime`"))
        }
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, attr) {
        errors.at(e.span(), e);
    }
    args
}

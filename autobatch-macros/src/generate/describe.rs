//! What one item tells the `#[autobatch]` functions that call it, and how they learn it.
//!
//! Each attribute expands alone, so the macro on `f` cannot see the signature of a `square` it
//! calls. Every `#[autobatch]` and `#[primitive]` item therefore also emits a hidden
//! `macro_rules!` that describes it, imported under the item's own name into the macro
//! namespace (`pub(crate) use __autobatch_item_square as square;`), so wherever the function
//! `square` can be named (a path, a `use`, a glob import, a rename) so can its description.
//! When the macro on `f` meets a callee it does not know, it expands to
//! `path::to::square! { (runtime) [f's arguments] "path::to::square" f's tokens }`, and the
//! description re-applies `#[autobatch]` to `f` with one more `__learnt("path::to::square" =
//! fn(f64) -> f64)` argument. Name resolution of paths is order-independent, so the callee can
//! be later in the file or in another module of the crate; each re-run learns one more callee
//! until all are known. An `#[autobatch] struct` leaves the same kind of description, with its
//! layout: a function using the struct learns it the same way.

use super::runtime::Runtime;
use crate::parse::ast::{Block, Expr, ExprKind, Func, Signature, Stmt, Ty};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};

/// The hidden description of the function `name` with signature `sig`, placed beside it: a
/// `macro_rules!` that hands what it is given to the runtime's `resume!` ([`resume`]) with the
/// signature in front.
pub fn item_macro(rt: &Runtime, name: &syn::Ident, sig: &Signature) -> TokenStream {
    let hidden = format_ident!("__autobatch_item_{}", name);
    let params = sig.params.iter().map(|t| rt.rust_type(t));
    let ret = rt.rust_type(&sig.ret);
    let span = Span::call_site();
    quote_spanned! {span=>
        #[doc(hidden)]
        macro_rules! #hidden {
            (($($rt:tt)*) $($rest:tt)*) => {
                $($rt)*::resume! { (fn(#(#params),*) -> #ret) ($($rt)*) $($rest)* }
            };
        }
        #[doc(hidden)]
        #[allow(unused_imports)]
        pub(crate) use #hidden as #name;
    }
}

/// The hidden description of the `#[autobatch] struct` `name` with `fields`, placed beside
/// it: like a function's ([`item_macro`]), with the layout `struct { field: T, .. }` in front
/// (field types as written in the struct's module).
pub fn struct_macro(rt: &Runtime, name: &syn::Ident, fields: &[(syn::Ident, Ty)]) -> TokenStream {
    let hidden = format_ident!("__autobatch_item_{}", name);
    let names = fields.iter().map(|(n, _)| n);
    let types = fields.iter().map(|(_, t)| rt.rust_type(t));
    let span = Span::call_site();
    quote_spanned! {span=>
        #[doc(hidden)]
        macro_rules! #hidden {
            (($($rt:tt)*) $($rest:tt)*) => {
                $($rt)*::resume! { (struct { #(#names: #types),* }) ($($rt)*) $($rest)* }
            };
        }
        #[doc(hidden)]
        #[allow(unused_imports)]
        pub(crate) use #hidden as #name;
    }
}

/// What a description hands to `resume!`: `(fn(..) -> ..) (runtime) [arguments] "callee" item`.
struct Resume {
    signature: TokenStream,
    runtime: TokenStream,
    args: TokenStream,
    key: syn::LitStr,
    item: TokenStream,
}

impl syn::parse::Parse for Resume {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let group = |input: syn::parse::ParseStream| -> syn::Result<TokenStream> {
            let g: proc_macro2::Group = input.parse()?;
            Ok(g.stream())
        };
        Ok(Resume {
            signature: group(input)?,
            runtime: group(input)?,
            args: group(input)?,
            key: input.parse()?,
            item: input.parse()?,
        })
    }
}

/// `resume!`: re-applies `#[autobatch]` to the item with the callee's signature learnt.
///
/// The attribute is spanned at the item's name, not at this expansion: generated code then
/// has the hygiene of the user's own code (as on a first expansion), not that of the
/// description's `macro_rules!`, which would hide the generated locals from the kernels built
/// out of the user's tokens.
pub fn resume(input: TokenStream) -> syn::Result<TokenStream> {
    let r: Resume = syn::parse2(input)?;
    let item: syn::ItemFn = syn::parse2(r.item.clone())?;
    let span = item.sig.ident.span();
    let (rt, sig, key, args, item) = (
        respan(r.runtime, span),
        respan(r.signature, span),
        r.key,
        r.args,
        r.item,
    );
    let attr = respan(quote!(#rt::autobatch), span);
    let learnt = respan(quote!(__learnt), span);
    Ok(quote_spanned! {span=>
        #[#attr(#args #learnt(#key = #sig),)]
        #item
    })
}

/// `tokens` with every span set to `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            if let proc_macro2::TokenTree::Group(g) = &t {
                let mut g2 = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                g2.set_span(span);
                t = proc_macro2::TokenTree::Group(g2);
            } else {
                t.set_span(span);
            }
            t
        })
        .collect()
}

/// The first callee of `func` whose signature is not known yet, if any.
pub fn unknown_callee(func: &Func) -> Option<syn::Path> {
    let mut calls = Vec::new();
    block_calls(&func.body, &mut calls);
    calls
        .into_iter()
        .find(|p| func.callee_signature(p).is_none())
        .cloned()
}

/// `f`'s item handed to the description of `callee`, which re-applies `#[autobatch]` to it with
/// the callee's signature learnt (`attr`: the arguments `f`'s attribute had so far); or, when
/// `callee` is provably a plain function that has no description, the error saying what to add
/// (`plain_callee.rs`), rather than rustc's failed lookup.
pub fn learn(
    rt: &Runtime,
    attr: &TokenStream,
    callee: &syn::Path,
    item: &TokenStream,
) -> TokenStream {
    if let Some(e) = syn::parse2::<syn::ItemFn>(item.clone())
        .ok()
        .and_then(|f| super::plain_callee::error(&f, callee))
    {
        return e.to_compile_error();
    }
    let rtp = rt.path();
    let key = super::infer::path_text(callee);
    let comma = match attr.clone().into_iter().last() {
        None => quote!(),
        Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == ',' => quote!(),
        Some(_) => quote!(,),
    };
    let span = callee
        .segments
        .last()
        .map_or_else(Span::call_site, |s| s.ident.span());
    let path = callee.to_token_stream();
    quote_spanned! {span=>
        #path! { (#rtp) [#attr #comma] #key #item }
    }
}

/// [`learn`] for the struct `path`, with a check that it is an `#[autobatch] struct` at the
/// first place `item` names it: when it is not, its description is missing, and the check
/// says what to add (`add #[autobatch] to struct ..`); when the struct is provably such a one
/// of the caller's file (`plain_callee.rs`), the check is all there is.
pub fn learn_struct(
    rt: &Runtime,
    attr: &TokenStream,
    path: &syn::Path,
    item: &TokenStream,
) -> TokenStream {
    let rtp = rt.path();
    let name = path.segments.last().map(|s| s.ident.to_string());
    let span = name
        .and_then(|n| find_ident(item.clone(), &n))
        .unwrap_or_else(Span::call_site);
    let mut spanned = path.clone();
    if let Some(last) = spanned.segments.last_mut() {
        last.ident.set_span(span);
    }
    // A struct of the caller's file without the attribute has no description: the check alone
    // says what to add, without rustc's failed lookup beside it.
    let plain = syn::parse2::<syn::ItemFn>(item.clone())
        .is_ok_and(|f| super::plain_callee::plain_struct(&f, path));
    let learn = (!plain).then(|| learn(rt, attr, &spanned, item));
    quote_spanned! {span=>
        const _: fn() = {
            fn __autobatch_struct<T: #rtp::Batched>() {}
            __autobatch_struct::<#spanned>
        };
        #learn
    }
}

/// The span of the first identifier `name` in `tokens`.
fn find_ident(tokens: TokenStream, name: &str) -> Option<Span> {
    tokens.into_iter().find_map(|t| match t {
        proc_macro2::TokenTree::Ident(i) if i == name => Some(i.span()),
        proc_macro2::TokenTree::Group(g) => find_ident(g.stream(), name),
        _ => None,
    })
}

fn block_calls<'a>(b: &'a Block, out: &mut Vec<&'a syn::Path>) {
    for s in &b.stmts {
        match s {
            Stmt::Let { init, .. } => expr_calls(init, out),
            Stmt::Expr(e) => expr_calls(e, out),
        }
    }
    if let Some(t) = &b.tail {
        expr_calls(t, out);
    }
}

/// Every call in `e`, in source order. The match is exhaustive on purpose: a new expression
/// kind must say where its calls are.
fn expr_calls<'a>(e: &'a Expr, out: &mut Vec<&'a syn::Path>) {
    let all =
        |es: &'a [Expr], out: &mut Vec<&'a syn::Path>| es.iter().for_each(|e| expr_calls(e, out));
    match &e.kind {
        ExprKind::Call(path, args) => {
            all(args, out);
            out.push(path);
        }
        ExprKind::Lit { .. }
        | ExprKind::Var(_)
        | ExprKind::Const(_)
        | ExprKind::Uniform(_)
        | ExprKind::Continue(_)
        | ExprKind::Invalid => {}
        ExprKind::Binary(_, _, a, b) => {
            expr_calls(a, out);
            expr_calls(b, out);
        }
        ExprKind::Unary(_, a)
        | ExprKind::Cast(a, _, _)
        | ExprKind::Field(a, _)
        | ExprKind::NamedField(a, _)
        | ExprKind::Ref(a)
        | ExprKind::Assign(_, a, _) => expr_calls(a, out),
        ExprKind::Method(recv, _, args) => {
            expr_calls(recv, out);
            all(args, out);
        }
        ExprKind::Assoc(_, _, args) | ExprKind::Tuple(args) => all(args, out),
        ExprKind::Struct(lit) => {
            lit.fields.iter().for_each(|(_, e)| expr_calls(e, out));
            if let Some(b) = &lit.base {
                expr_calls(b, out);
            }
        }
        ExprKind::If(c, then, els) => {
            expr_calls(c, out);
            block_calls(then, out);
            if let Some(e) = els {
                expr_calls(e, out);
            }
        }
        ExprKind::While(_, c, body) => {
            expr_calls(c, out);
            block_calls(body, out);
        }
        ExprKind::For(f) => {
            expr_calls(&f.lo, out);
            expr_calls(&f.hi, out);
            if let Some(step) = &f.step {
                expr_calls(step, out);
            }
            block_calls(&f.body, out);
        }
        ExprKind::Loop(_, body) | ExprKind::Block(body) => block_calls(body, out),
        ExprKind::Break(_, v) | ExprKind::Return(v) => {
            if let Some(v) = v {
                expr_calls(v, out);
            }
        }
    }
}

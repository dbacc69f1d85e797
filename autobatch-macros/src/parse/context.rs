//! The shared context of a function: the one `ctx: &T` parameter every lane shares (a model,
//! settings), and its reads in the body (`ctx.field`, `ctx.a.b`, `ctx.dim()`), which become
//! [`ExprKind::Uniform`] expressions: Rust code reading the context, never a per-lane column.

use super::ast::{Expr, ExprKind};
use super::Errors;
use proc_macro2::Span;
use quote::ToTokens;
use std::cell::RefCell;
use syn::spanned::Spanned;

/// The context parameter of a function: `name: &ty`.
#[derive(Clone)]
pub struct ContextParam {
    /// The parameter's name.
    pub name: syn::Ident,
    /// `T` in `&T`.
    pub ty: syn::Type,
    /// Its position among all the parameters.
    pub position: usize,
    /// Where the parameter's type is (errors about the type point here).
    pub span: Span,
}

thread_local! {
    /// The name of the context parameter of the function whose body is being parsed.
    static NAME: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// True if `t` is a type of the language (a per-lane value), not a possible context type.
pub fn is_language_type(t: &syn::Type) -> bool {
    let mut scratch = Errors::default();
    let ty = super::ty(t, &mut scratch);
    scratch.len() == 0 && !ty.has_struct()
}

/// If parameter `pt` (at `position`) of an `#[autobatch]` function is a reference, the context
/// parameter it declares; a `&mut` one, one to a per-lane type (`&i64`) or one that is not a
/// plain name is reported.
pub fn param(pt: &syn::PatType, position: usize, errors: &mut Errors) -> Option<ContextParam> {
    let syn::Type::Reference(r) = &*pt.ty else {
        return None;
    };
    if is_language_type(&r.elem) {
        errors.at(
            &pt.ty,
            format!(
                "a per-lane `{}` is passed by value in #[autobatch] code (it is copied per lane); a `&T` parameter is the context every lane shares, of a type outside the language (a struct of settings, a model)",
                r.elem.to_token_stream()
            ),
        );
        return None;
    }
    if let Some(m) = r.mutability {
        errors.at(
            m,
            "a context parameter is shared by every lane and read-only: take it as `&T`, not `&mut T` (a value that changes per lane is a parameter by value)",
        );
    }
    match &*pt.pat {
        syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => Some(ContextParam {
            name: pi.ident.clone(),
            ty: (*r.elem).clone(),
            position,
            span: r.elem.span(),
        }),
        other => {
            errors.at(
                other,
                "the context parameter must be a plain name (`ctx: &Model`)",
            );
            None
        }
    }
}

/// The one context parameter of `found`; a second is reported.
pub fn single(found: Vec<ContextParam>, errors: &mut Errors) -> Option<ContextParam> {
    let mut found = found.into_iter();
    let first = found.next()?;
    for other in found {
        errors.at(
            other.span,
            format!(
                "a function takes at most one context parameter, and it already takes `{}: &{}`: put every shared value in one struct and read its fields",
                first.name,
                first.ty.to_token_stream()
            ),
        );
    }
    Some(first)
}

/// Reports a reference return type `t`: a function cannot return the context (or any
/// reference). The context's name, if any, goes to `poisoned`, so its uses in the body report
/// nothing more.
pub fn returned(
    t: &syn::Type,
    context: Option<ContextParam>,
    poisoned: &mut Vec<String>,
    errors: &mut Errors,
) {
    let what = match &context {
        Some(c) => format!("the context `{}`", c.name),
        None => "a reference".to_string(),
    };
    errors.at(
        t,
        format!(
            "an #[autobatch] function cannot return {what}: it returns per-lane values (bool, integers, floats, Vector, Key, tuples of them); read what the caller needs from the context and return that"
        ),
    );
    poisoned.extend(context.map(|c| c.name.to_string()));
}

/// Runs `f` (the parsing of a body) with `context` as the name its reads are rooted at.
pub fn parsing_with<R>(context: Option<&ContextParam>, f: impl FnOnce() -> R) -> R {
    let name = context.map(|c| c.name.to_string());
    let outer = NAME.with(|n| n.replace(name));
    let r = f();
    NAME.with(|n| *n.borrow_mut() = outer);
    r
}

/// True if `e` is the context itself or a chain of field reads and method calls on it.
fn rooted(e: &syn::Expr, name: &str) -> bool {
    match e {
        syn::Expr::Path(p) => p.qself.is_none() && p.path.is_ident(name),
        syn::Expr::Field(f) => rooted(&f.base, name),
        syn::Expr::MethodCall(m) => rooted(&m.receiver, name),
        syn::Expr::Paren(p) => rooted(&p.expr, name),
        _ => false,
    }
}

/// `e` as a read of the context, if it is one: the context itself (`ctx`, only to be passed
/// on to calls) or a chain of field reads and method calls on it, whose method arguments are
/// literals or reads of the context (a lane's value cannot be an argument: read the field and
/// compute with it outside).
pub fn read(e: &syn::Expr, errors: &mut Errors) -> Option<Expr> {
    let name = NAME.with(|n| n.borrow().clone())?;
    if !rooted(e, &name) {
        return None;
    }
    check_arguments(e, &name, errors);
    let whole = matches!(e, syn::Expr::Path(_));
    Some(Expr {
        kind: ExprKind::Uniform(whole),
        span: e.span(),
        tokens: e.to_token_stream(),
    })
}

/// Reports method arguments in a context read that are neither literals nor context reads.
fn check_arguments(e: &syn::Expr, name: &str, errors: &mut Errors) {
    match e {
        syn::Expr::Field(f) => check_arguments(&f.base, name, errors),
        syn::Expr::Paren(p) => check_arguments(&p.expr, name, errors),
        syn::Expr::MethodCall(m) => {
            check_arguments(&m.receiver, name, errors);
            for a in &m.args {
                let ok = matches!(a, syn::Expr::Lit(_))
                    || (rooted(a, name) && !matches!(a, syn::Expr::Path(_)));
                if !ok {
                    errors.at(
                        a,
                        format!(
                            "a method of the context `{name}` takes only literals and other reads of `{name}` here (its value is the same for every lane); read what you need from `{name}` and compute with it outside the call"
                        ),
                    );
                }
            }
        }
        _ => {}
    }
}

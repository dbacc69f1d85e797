//! syn -> the macro's AST, collecting every unsupported construct as a spanned error. One file
//! per construct family, as `generate/translate` has: types (`types`), `let` patterns
//! (`pattern`), expressions (`expr`), blocks and control flow (`control`), and the constructs
//! outside the language with what to write instead (`rejected`).

pub mod args;
pub mod ast;
pub mod context;
mod control;
mod destructure;
pub mod expr;
pub mod item;
mod loops;
mod matching;
mod pattern;
mod rejected;
mod types;

pub use types::ty;

use ast::{Expr, Func, Stmt, Ty};
use control::block;
use pattern::pattern;
use syn::spanned::Spanned;

/// Collects errors instead of stopping at the first.
#[derive(Default)]
pub struct Errors {
    errors: Vec<syn::Error>,
    /// Causes that are invalid Rust too, reported by rustc alone.
    left_to_rustc: usize,
}

impl Errors {
    /// Records an error at `span`.
    pub fn at(&mut self, span: impl Spanned, message: impl std::fmt::Display) {
        self.errors.push(syn::Error::new(span.span(), message));
    }

    /// Records a cause that is invalid Rust whatever the types (`break 'missing`): rustc
    /// reports it on the function as written, which the macro emits beside its errors, so the
    /// macro stops without a message of its own and the cause gets one error, rustc's.
    pub fn left_to_rustc(&mut self) {
        self.left_to_rustc += 1;
    }

    /// How many errors so far (those left to rustc included).
    pub fn len(&self) -> usize {
        self.errors.len() + self.left_to_rustc
    }

    /// All errors the macro reports itself, combined, if any.
    pub fn finish(self) -> Result<(), syn::Error> {
        let mut iter = self.errors.into_iter();
        match iter.next() {
            None => Ok(()),
            Some(mut first) => {
                iter.for_each(|e| first.combine(e));
                Err(first)
            }
        }
    }
}

/// Parses a function signature and body.
pub fn func(item: &syn::ItemFn, errors: &mut Errors) -> Func {
    let sig = &item.sig;
    if let Some(c) = &sig.constness {
        errors.at(c, "`const fn` cannot be #[autobatch]; remove `const`");
    }
    if let Some(a) = &sig.asyncness {
        errors.at(a, "`async fn` cannot be #[autobatch]; write a plain `fn`");
    }
    if let Some(u) = &sig.unsafety {
        errors.at(u, "`unsafe fn` cannot be #[autobatch]; write a safe `fn`");
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.at(
            &sig.generics,
            "generic functions cannot be #[autobatch]; write one function per concrete type",
        );
    }
    if let Some(v) = &sig.variadic {
        errors.at(v, "variadic functions cannot be #[autobatch]");
    }
    let mut params = Vec::new();
    let mut poisoned = Vec::new();
    let mut contexts = Vec::new();
    let mut unpack = Vec::new();
    for (position, input) in sig.inputs.iter().enumerate() {
        match input {
            syn::FnArg::Receiver(r) => {
                errors.at(r, "methods cannot be #[autobatch]; write a free function")
            }
            syn::FnArg::Typed(pt) if matches!(*pt.ty, syn::Type::Reference(_)) => {
                contexts.extend(context::param(pt, position, errors));
            }
            syn::FnArg::Typed(pt) => {
                let t = ty(&pt.ty, errors);
                match &*pt.pat {
                    syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                        params.push((pi.ident.clone(), t))
                    }
                    tuple @ syn::Pat::Tuple(_) => {
                        // `(a, b): (i64, i64)`: one parameter, taken apart at the start.
                        let name = syn::Ident::new(
                            &format!("__autobatch_param{}", params.len()),
                            tuple.span(),
                        );
                        let (pat, _) = pattern(tuple, errors);
                        unpack.push(Stmt::Let {
                            pat,
                            ty: Some(t.clone()),
                            init: Expr::var(&name),
                        });
                        params.push((name, t));
                    }
                    other => {
                        errors.at(other, "parameters are names (`x: i64`) or tuples of them (`(a, b): (i64, i64)`)");
                        match other {
                            syn::Pat::Ident(pi) => poisoned.push(pi.ident.to_string()),
                            _ => poisoned.extend(pattern(other, &mut Errors::default()).0.names()),
                        }
                    }
                }
            }
        }
    }
    let mut context = context::single(contexts, errors);
    let ret = match &sig.output {
        syn::ReturnType::Default => Ty::unit(),
        syn::ReturnType::Type(_, t) if matches!(**t, syn::Type::Reference(_)) => {
            context::returned(t, context.take(), &mut poisoned, errors);
            Ty::unit()
        }
        syn::ReturnType::Type(_, t) => ty(t, errors),
    };
    let mut body = context::parsing_with(context.as_ref(), || block(&item.block, errors));
    body.stmts.splice(0..0, unpack);
    Func {
        name: sig.ident.clone(),
        params,
        ret,
        body,
        poisoned,
        context,
        learnt: Default::default(),
        structs: Default::default(),
    }
}

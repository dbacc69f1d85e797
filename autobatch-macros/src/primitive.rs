//! `#[primitive]`: declares a function as a primitive of autobatched code, with its scalar form
//! and, optionally, a batched kernel that sees every active lane at once.

use crate::generate::context;
use crate::generate::describe;
use crate::generate::emit::lane_kernel;
use crate::generate::names::{format_ident, quote};
use crate::generate::runtime::{leaf_paths, Runtime};
use crate::parse::args::{args, Macro};
use crate::parse::ast::{Signature, Ty};
use crate::parse::context::{self as parse_context, ContextParam};
use crate::parse::{self, Errors};
use proc_macro2::{Span, TokenStream};

/// Expands `#[primitive]` on `item`.
pub fn expand(attr: TokenStream, item: syn::ItemFn) -> Result<TokenStream, syn::Error> {
    let mut errors = Errors::default();
    let args = args(attr, Macro::Primitive, &mut errors);
    let sig = &item.sig;
    if !sig.generics.params.is_empty() {
        errors.at(
            &sig.generics,
            "generic functions cannot be primitives; write one per concrete type",
        );
    }
    let mut params: Vec<(syn::Ident, Ty, bool)> = Vec::new();
    let mut contexts = Vec::new();
    for (position, input) in sig.inputs.iter().enumerate() {
        match input {
            // A reference to a type outside the language is the context every lane shares.
            syn::FnArg::Typed(pt) if is_context(&pt.ty) => {
                contexts.extend(parse_context::param(pt, position, &mut errors));
            }
            syn::FnArg::Typed(pt) => {
                let (inner, by_ref) = match &*pt.ty {
                    syn::Type::Reference(r) if r.mutability.is_none() => (&*r.elem, true),
                    other => (other, false),
                };
                let t = parse::ty(inner, &mut errors);
                match &*pt.pat {
                    syn::Pat::Ident(pi) => params.push((pi.ident.clone(), t, by_ref)),
                    other => errors.at(other, "primitive parameters must be plain names"),
                }
            }
            syn::FnArg::Receiver(r) => {
                errors.at(r, "methods cannot be primitives; write a free function")
            }
        }
    }
    let ret = match &sig.output {
        syn::ReturnType::Default => {
            errors.at(&sig.ident, "a primitive must return a value");
            Ty::unit()
        }
        syn::ReturnType::Type(_, t) => parse::ty(t, &mut errors),
    };
    let ctx = parse_context::single(contexts, &mut errors);
    if let Some(s) = params
        .iter()
        .map(|(_, t, _)| t)
        .chain([&ret])
        .find(|t| t.has_struct())
    {
        errors.at(
            &sig.ident,
            format!("a primitive takes and returns the language's values, not structs (`{}`): pass the fields it needs", crate::generate::runtime::Runtime::new(None).rust_type(s)),
        );
    }
    errors.finish()?;

    let runtime = Runtime::new(args.krate.as_ref());
    let rt = runtime.path();
    let name = &sig.ident;
    let vis = &item.vis;
    let name_str = name.to_string();
    let inputs: Vec<(syn::Ident, Ty)> = params
        .iter()
        .map(|(n, t, _)| (n.clone(), t.clone()))
        .collect();
    let call_args = params
        .iter()
        .map(|(n, _, r)| if *r { quote!(&#n) } else { quote!(#n) })
        .collect();
    let call_args = with_context_arg(call_args, ctx.as_ref(), |c| {
        let n = &c.name;
        quote!(#n)
    });
    let body = quote!(super::#name(#(#call_args),*));
    let scalar = lane_kernel(
        &runtime,
        &inputs,
        ctx.as_ref(),
        &body,
        &ret,
        Span::call_site(),
    );
    let out_types = runtime.leaf_types_expr(&ret);

    let ctx_param = context::entry_param(ctx.as_ref());
    let agreement_context = match &ctx {
        Some(c) => {
            let n = &c.name;
            quote!(#rt::Context::new(#n))
        }
        None => quote!(#rt::Context::none()),
    };
    let context_check = ctx.as_ref().map(|c| context::not_a_struct(&runtime, c));
    let register = ctx
        .as_ref()
        .map(|c| context::register(&runtime, c, &name_str, &format_ident!("__l")));
    let batched = args.batched.as_ref().map(|path| {
        let mut index = 0usize;
        let views = inputs
            .iter()
            .map(|(_, t)| batched_views(&runtime, t, &mut index))
            .collect();
        let views = with_context_arg(views, ctx.as_ref(), |c| {
            let t = &c.ty;
            quote!(__cx.get::<#t>()?)
        });
        let stores = leaf_paths(&ret, quote!(__r)).into_iter().enumerate().map(|(i, (leaf, p))| {
            let o = format_ident!("__o{i}");
            match leaf {
                Ty::Vector => quote!(#rt::batched_output_vectors(#o, #p)?;),
                other => {
                    let el = runtime.rust_type(&other);
                    quote!(#rt::batched_output::<#el, _>(#o, #p)?;)
                }
            }
        });
        let n_outs = leaf_paths(&ret, quote!()).len();
        let out_names: Vec<_> = (0..n_outs).map(|i| format_ident!("__o{i}")).collect();
        let target = match path.leading_colon.is_some() || path.segments.first().is_some_and(|s| s.ident == "crate") {
            true => quote!(#path),
            false => quote!(super::#path),
        };
        quote! {
            /// The batched kernel: every active lane's inputs at once, through
            #[doc = ::std::concat!("`", ::std::stringify!(#path), "`.")]
            pub fn batched_kernel() -> #rt::Kernel {
                #rt::Kernel::batched_with_context(|__cx: #rt::Context<'_>, __ins: &[&#rt::Column], __outs: &mut [#rt::Column]| -> ::std::result::Result<(), #rt::KernelError> {
                    let __r = #target(#(#views),*);
                    let [#(#out_names),*] = __outs else {
                        return ::std::result::Result::Err(#rt::KernelError::whole(::std::format!("expected {} output leaves", #n_outs)));
                    };
                    #(#stores)*
                    ::std::result::Result::Ok(())
                })
            }

            /// Checks that the batched kernel agrees with the scalar form on `inputs` (one
            /// column per input leaf), given the context if the primitive takes one: see
            /// [`check_agreement`](autobatch_runtime::primitive::check_agreement).
            pub fn check_agreement(
                #ctx_param
                inputs: &[#rt::Column],
                vector_len: usize,
                tolerance: #rt::Tolerance,
            ) -> ::std::result::Result<(), #rt::AgreementError> {
                #rt::check_agreement(&scalar_kernel(), &batched_kernel(), #agreement_context, inputs, &output_types(), vector_len, tolerance)
            }
        }
    });
    let kernel_choice = if args.batched.is_some() {
        quote!(batched_kernel())
    } else {
        quote!(scalar_kernel())
    };
    let doc = format!("The primitive [`{name_str}`](super::{name_str}) as a kernel of autobatched code (generated by `#[primitive]`).");
    let signature = Signature {
        params: inputs.iter().map(|(_, t)| t.clone()).collect(),
        ret: ret.clone(),
    };
    let described = describe::item_macro(&runtime, name, &signature);
    Ok(quote! {
        #item
        #described
        #context_check

        #[doc = #doc]
        #[allow(unused_imports, non_snake_case, clippy::all)]
        #vis mod #name {
            use super::*;

            /// Registers this primitive's kernel with the linker.
            #[doc(hidden)]
            pub fn __define(__l: &mut #rt::Linker) -> #rt::Callee {
                #register
                #rt::Callee::Primitive(__l.primitive(::std::concat!(::std::module_path!(), "::", #name_str), kernel))
            }

            /// The scalar form mapped over the active lanes.
            pub fn scalar_kernel() -> #rt::Kernel {
                #scalar
            }

            /// The kernel autobatched code runs: the batched one if there is one.
            pub fn kernel() -> #rt::Kernel {
                #kernel_choice
            }

            /// The leaf types of the result, in order.
            pub fn output_types() -> ::std::vec::Vec<#rt::ir::TensorType> {
                #out_types
            }

            #batched
        }
    })
}

/// The batched view(s) of an input of type `t` whose first leaf is input `*index`.
fn batched_views(runtime: &Runtime, t: &Ty, index: &mut usize) -> TokenStream {
    let rt = runtime.path();
    match t {
        Ty::Tuple(items) => {
            let parts = items.iter().map(|i| batched_views(runtime, i, index));
            quote!((#(#parts,)*))
        }
        Ty::Vector => {
            let i = *index;
            *index += 1;
            quote!(#rt::batched_input_vectors::<f64>(__ins, #i)?)
        }
        leaf => {
            let i = *index;
            *index += 1;
            let el = runtime.rust_type(leaf);
            quote!(#rt::batched_input::<#el>(__ins, #i)?)
        }
    }
}

/// True for a parameter type `&T` whose `T` is not a type of the language: the context.
fn is_context(t: &syn::Type) -> bool {
    matches!(t, syn::Type::Reference(r) if !parse_context::is_language_type(&r.elem))
}

/// `args` (one per value parameter) with the context's argument, made by `arg`, at its position.
fn with_context_arg(
    mut args: Vec<TokenStream>,
    ctx: Option<&ContextParam>,
    arg: impl Fn(&ContextParam) -> TokenStream,
) -> Vec<TokenStream> {
    if let Some(c) = ctx {
        args.insert(c.position.min(args.len()), arg(c));
    }
    args
}

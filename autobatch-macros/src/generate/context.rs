//! The shared context in generated code: calls that pass it on, the kernels that read it (they
//! receive it from the run and read it as written), its place in signatures and entry points,
//! and its registration with the linker. A context type that is not `Sync` fails where the
//! entry point hands it to the run (`Context::new`), at the parameter.

use super::names::quote;
use super::runtime::Runtime;
use crate::parse::ast::{Expr, ExprKind};
use crate::parse::context::ContextParam;
use proc_macro2::{Ident, TokenStream, TokenTree};
use quote::{quote_spanned, ToTokens};

/// The message for the context itself used as a value.
pub fn whole_message(e: &Expr) -> String {
    let name = text(e);
    format!(
        "the context `{name}` is shared by every lane: pass it on to calls (`g({name}, x)`) or read from it (`{name}.field`); it cannot be stored in a variable, returned or computed with"
    )
}

/// The message for a context read whose type nothing around it fixes.
pub fn untyped_message(e: &Expr) -> String {
    let read = text(e);
    format!(
        "the type of `{read}` is not visible to this macro: annotate the binding (`let x: f64 = {read};`) or convert it (`{read} as i64`)"
    )
}

/// True for two operands that are context reads or unsuffixed literals, one a read at least
/// (`ctx.warmup < 150`): nothing in them fixes their type, rustc does in the kernel.
pub fn compares_reads(l: &Expr, r: &Expr) -> bool {
    let read = |e: &Expr| matches!(e.kind, ExprKind::Uniform(false));
    let free = |e: &Expr| read(e) || matches!(e.kind, ExprKind::Lit { suffix: None, .. });
    (read(l) || read(r)) && free(l) && free(r)
}

/// The expression's source text, spaced as a user writes it.
fn text(e: &Expr) -> String {
    e.tokens
        .to_string()
        .replace(" . ", ".")
        .replace(" .", ".")
        .replace(" (", "(")
        .replace("( ", "(")
        .replace(" )", ")")
}

/// True for an argument that passes the context on (`g(ctx, x)`).
fn passes_context(a: &Expr) -> bool {
    matches!(a.kind, ExprKind::Uniform(true))
}

/// The arguments of a call that are per-lane values (the context passed on is not one) and the
/// position of the context among all of them, if passed.
pub fn split_args(args: &[Expr]) -> (Vec<Expr>, Option<usize>) {
    let at = args.iter().position(passes_context);
    let values = args
        .iter()
        .filter(|a| !passes_context(a))
        .cloned()
        .collect();
    (values, at)
}

/// `params` (a signature's parameter types, without the context) with `&T` inserted at the
/// context's position, for a function or callee that takes the context `ctx`.
pub fn with_context_param(
    mut params: Vec<TokenStream>,
    at: Option<usize>,
    ctx: Option<&ContextParam>,
) -> Vec<TokenStream> {
    if let (Some(at), Some(c)) = (at, ctx) {
        let t = &c.ty;
        params.insert(at.min(params.len()), quote!(&#t));
    }
    params
}

/// True if kernel code `tokens` names the context `name` (it then reads it from the run).
pub fn reads_context(tokens: &TokenStream, name: &Ident) -> bool {
    tokens.clone().into_iter().any(|t| match t {
        TokenTree::Ident(i) => i == *name,
        TokenTree::Group(g) => reads_context(&g.stream(), name),
        _ => false,
    })
}

/// The statement a kernel starts with to read the context: `let ctx: &T = <from the run>?;`.
pub fn kernel_binding(c: &ContextParam) -> TokenStream {
    let (name, ty) = (&c.name, &c.ty);
    quote!(let #name: &#ty = __ins.context::<#ty>()?;)
}

/// The statement of a `__define` that registers the context type `c` with its linker (the
/// local `linker`), under the function's or primitive's key.
pub fn register(rt: &Runtime, c: &ContextParam, name: &str, linker: &Ident) -> TokenStream {
    let rtp = rt.path();
    let ty = &c.ty;
    quote!(#linker.context(::std::concat!(::std::module_path!(), "::", #name), #rtp::ContextType::of::<#ty>());)
}

/// The parameter a batch entry point takes first for the context (`ctx: &T,`), if any.
pub fn entry_param(c: Option<&ContextParam>) -> TokenStream {
    c.map(|c| {
        let (name, ty) = (&c.name, &c.ty);
        quote!(#name: &#ty,)
    })
    .unwrap_or_default()
}

/// The argument passing the context on between batch entry points (`ctx,`), if any.
pub fn entry_arg(c: Option<&ContextParam>) -> TokenStream {
    c.map(|c| {
        let name = &c.name;
        quote!(#name,)
    })
    .unwrap_or_default()
}

/// How an entry point runs its executable `exe` on `inputs` with `config`: with the context
/// if the function takes one.
pub fn run_call(
    rt: &Runtime,
    c: Option<&ContextParam>,
    exe: TokenStream,
    inputs: TokenStream,
    config: TokenStream,
) -> TokenStream {
    let rtp = rt.path();
    match c {
        Some(c) => {
            let name = &c.name;
            quote!(#exe.run_with_context(#rtp::Context::new(#name), #inputs, #config))
        }
        None => quote!(#exe.run(#inputs, #config)),
    }
}

/// A compile-time check that the context's type `T` is not an `#[autobatch] struct`: such a
/// struct is a per-lane value, taken by value (`t: Tree`), and `&Tree` taken as the one value
/// every lane shares would be a silent change of meaning (a `&i64` is refused the same way).
/// The macro cannot see whether `T` has the attribute, so the type system says it: a method
/// call on `&Probe<T>` picks the impl for `T: Batched` when there is one (found without
/// auto-referencing) and the fallback otherwise; only the first one's result lacks the trait
/// the check requires, whose message says what to write. The error points at `T`.
pub fn not_a_struct(rt: &Runtime, c: &ContextParam) -> TokenStream {
    let rtp = rt.path();
    let (name, ty) = (&c.name, &c.ty);
    let t = ty.to_token_stream().to_string().replace(" :: ", "::");
    let message = format!(
        "`{t}` is an #[autobatch] struct, a per-lane value: take it by value (`{name}: {t}`); a `&T` parameter is the context every lane shares, of a type without #[autobatch]"
    );
    // Spanned at `T` throughout: a trait's methods are found only by code of the same
    // hygiene, and the error then points at the parameter's type.
    quote_spanned! {c.span=>
        #[allow(dead_code)]
        const _: () = {
            struct __AutobatchProbe<T: ?::core::marker::Sized>(::core::marker::PhantomData<T>);
            struct __PerLaneStruct;
            struct __SharedType;
            #[diagnostic::on_unimplemented(message = #message, label = "an #[autobatch] struct")]
            trait __SharedContextType {}
            impl __SharedContextType for __SharedType {}
            trait __ByStruct {
                fn __autobatch_kind(&self) -> __PerLaneStruct;
            }
            impl<T: #rtp::Batched> __ByStruct for __AutobatchProbe<T> {
                fn __autobatch_kind(&self) -> __PerLaneStruct {
                    __PerLaneStruct
                }
            }
            trait __ByOther {
                fn __autobatch_kind(&self) -> __SharedType;
            }
            impl<T: ?::core::marker::Sized> __ByOther for &__AutobatchProbe<T> {
                fn __autobatch_kind(&self) -> __SharedType {
                    __SharedType
                }
            }
            fn __autobatch_context_type<K: __SharedContextType>(_: K) {}
            fn __check() {
                __autobatch_context_type((&__AutobatchProbe::<#ty>(::core::marker::PhantomData)).__autobatch_kind());
            }
        };
    }
}

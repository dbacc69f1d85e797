//! Emits the generated code: the linker calls that rebuild the recorded IR, the lane-wise
//! kernels, and the typed batched entry points.

use super::compiled::compiled_blocks;
use super::context;
use super::flatten::flat_signature;
use super::infer::path_text;
use super::ir::CompileTime;
use super::names::{format_ident, quote};
use super::runtime::{leaf_paths, struct_path, Runtime};
use super::translate::{CalleeSpec, KernelSpec, Record, Step};
use super::vectorise::vector_kernel;
use crate::parse::ast::{Func, Signature, Ty};
use crate::parse::context::ContextParam;
use autobatch_ir::{Allocation, DType};
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote_spanned;

/// An expression building a value of type `t` from input leaves starting at `*next`, each
/// scalar leaf read by `scalar(leaf, index)` (vector rows always from the leaf's `InputRows`).
fn read_value(
    rt: &Runtime,
    t: &Ty,
    next: &mut usize,
    scalar: &dyn Fn(usize) -> TokenStream,
) -> TokenStream {
    let rtp = rt.path();
    match t {
        Ty::Tuple(items) => {
            let parts = items.iter().map(|i| read_value(rt, i, next, scalar));
            quote!((#(#parts,)*))
        }
        Ty::Vector => {
            let acc = format_ident!("__i{}", *next);
            *next += 1;
            quote!(#rtp::Vector::from_slice(#acc.row(__lane)))
        }
        _ => {
            *next += 1;
            scalar(*next - 1)
        }
    }
}

/// A lane-wise kernel evaluating `body` per active lane, with `inputs` bound by name (their
/// leaves are the kernel's input leaves, in order), the run's context bound to its name if
/// `context` is given, and the value's leaves stored as outputs. It is an in-place kernel
/// (`Kernel::lane_wise_in_place`): at each lane every input is read into its binding before
/// the body runs, and the outputs are stored after it, so an output that is also an input
/// (`n = n / 2`, `steps += 1`) is written in storage itself. Where every leaf is a scalar it
/// is also direct (`Kernel::lane_wise_direct`): a second body runs the same loop on the
/// storage columns the interpreter hands over, with nothing built per leaf.
pub fn lane_kernel(
    rt: &Runtime,
    inputs: &[(Ident, Ty)],
    context: Option<&ContextParam>,
    body: &TokenStream,
    out_ty: &Ty,
    span: Span,
) -> TokenStream {
    let context = context.map(context::kernel_binding);
    let rtp = rt.path();
    let mut accessors = Vec::new();
    let mut bindings = Vec::new();
    // The same bindings for the loop over scalars in place (from the lane's values `__lvN` of
    // the leaves `__fN`, see below).
    let mut fast_bindings = Vec::new();
    let mut fast_inputs = Vec::new();
    // The same leaves as a direct body takes them (see `Kernel::lane_wise_direct`).
    let mut direct_inputs = Vec::new();
    let mut next = 0;
    for (name, ty) in inputs {
        let ls = leaf_paths(ty, quote!());
        for (i, (leaf, _)) in ls.iter().enumerate() {
            let acc = format_ident!("__i{}", next + i);
            let el = rt.element_type(leaf);
            let idx = next + i;
            accessors.push(quote!(let #acc = __ins.rows::<#el>(#idx)?;));
            let fast = format_ident!("__f{}", next + i);
            fast_inputs.push(quote!(let ::std::option::Option::Some(#fast) = #acc.dense_scalars() else { break '__fast; };));
            direct_inputs.push(quote!(let #fast = __ins.input::<#el>(#idx)?;));
        }
        let rty = rt.rust_type(ty);
        let mut fast_next = next;
        let value = read_value(rt, ty, &mut next, &|i| {
            let acc = format_ident!("__i{i}");
            quote!(#acc.scalar(__lane))
        });
        bindings.push(quote!(let #name: #rty = #value;));
        let fast_value = read_value(rt, ty, &mut fast_next, &|i| {
            let value = format_ident!("__lv{i}");
            quote!(#value)
        });
        fast_bindings.push(quote!(let #name: #rty = #fast_value;));
    }
    let outs = leaf_paths(out_ty, quote!(__r));
    let out_names: Vec<_> = (0..outs.len()).map(|i| format_ident!("__o{i}")).collect();
    let n_outs = outs.len();
    let slices = outs
        .iter()
        .zip(&out_names)
        .map(|((leaf, _), o)| match leaf {
            Ty::Vector => quote!(let mut #o = #o.vectors()?;),
            _ => {
                let el = rt.element_type(leaf);
                // Written by lane: straight into the interpreter's storage where it can.
                quote!(let mut #o = #o.scalars::<#el>()?;)
            }
        });
    let stores = outs
        .iter()
        .zip(&out_names)
        .map(|((leaf, path), o)| match leaf {
            Ty::Vector => quote!(#o.store(__k, &#path)?;),
            _ => quote!(#o.set(__k, __lane, #path);),
        });
    let out_ty_tokens = rt.rust_type(out_ty);
    let r = format_ident!("__r");
    let result = quote_spanned!(span=> let #r: #out_ty_tokens = #body;);
    // Where every leaf is a scalar, and the interpreter holds the inputs in place and takes the
    // outputs by lane (as it does for scalar variables), the loop runs over plain indexed loads
    // and stores, deciding nothing per lane; anything else takes the general loop.
    let all_scalar = !outs.iter().any(|(leaf, _)| matches!(leaf, Ty::Vector))
        && !inputs
            .iter()
            .flat_map(|(_, ty)| leaf_paths(ty, quote!()))
            .any(|(leaf, _)| matches!(leaf, Ty::Vector));
    let fast = all_scalar.then(|| {
        // The leaves, and a lane's values, as the runtime's loop takes them: nested pairs
        // ending in `()`.
        let nest = |items: &[TokenStream]| {
            items
                .iter()
                .rev()
                .fold(quote!(()), |rest, item| quote!((#item, #rest)))
        };
        let n_in = fast_inputs.len();
        let reads = nest(
            &(0..n_in)
                .map(|i| {
                    let f = format_ident!("__f{i}");
                    quote!(#f)
                })
                .collect::<Vec<_>>(),
        );
        let values = nest(
            &(0..n_in)
                .map(|i| {
                    let v = format_ident!("__lv{i}");
                    quote!(#v)
                })
                .collect::<Vec<_>>(),
        );
        let writers: Vec<TokenStream> = (0..outs.len())
            .map(|i| {
                let w = format_ident!("__w{i}");
                quote!(#w)
            })
            .collect();
        let fast_outputs: Vec<_> = out_names
            .iter()
            .zip(&writers)
            .map(|(o, w)| {
                quote!(let ::std::option::Option::Some(#w) = #o.by_lane() else { break '__fast; };)
            })
            .collect();
        let direct_outputs: Vec<_> = outs
            .iter()
            .zip(&writers)
            .enumerate()
            .map(|(i, ((leaf, _), w))| {
                let el = rt.element_type(leaf);
                quote!(let #w = __ins.output::<#el>(#i)?;)
            })
            .collect();
        let paths: Vec<TokenStream> = outs.iter().map(|(_, path)| path.clone()).collect();
        let (writes, results) = (nest(&writers), nest(&paths));
        // A branch condition (the last output leaf, a `bool`: a block's condition is computed
        // last) that the interpreter lets the kernel split the lanes by: each lane goes
        // straight to its side of the branch (no condition written and read back), the other
        // outputs are written by lane as below.
        let last = outs.len().checked_sub(1);
        // The split, from the lists `taken` (the general body's leaf or the direct body's
        // call) with the other outputs' writers `others`.
        let split = |taken: TokenStream, others: &[TokenStream]| {
            last.filter(|&l| matches!(outs[l].0, Ty::Scalar(DType::Bool)))
                .map(|l| {
                    let condition = &paths[l];
                    let others = &others[..l];
                    let (writes, results) = (nest(&writers[..l]), nest(&paths[..l]));
                    quote! {
                        if let ::std::option::Option::Some(__s) = #taken.split() {
                            #(#others)*
                            #rtp::split_lanes(__s, #reads, #writes, #[inline(always)] move |#values| {
                                #(#fast_bindings)*
                                #result
                                (#results, #condition)
                            });
                            return ::std::result::Result::Ok(());
                        }
                    }
                })
        };
        let general_split = last.map(|l| &out_names[l]).and_then(|o| split(quote!(#o), &fast_outputs));
        let direct_split = split(quote!(__ins), &direct_outputs);
        let fast = quote! {
            '__fast: {
                #(#fast_inputs)*
                #general_split
                #(#fast_outputs)*
                // Moved in: the loop reads its own copies, which no store aliases.
                #rtp::each_lane(__ins, #reads, #writes, #[inline(always)] move |#values| {
                    #(#fast_bindings)*
                    #result
                    #results
                });
                return ::std::result::Result::Ok(());
            }
        };
        let direct = quote! {
            |__ins: &mut #rtp::DirectCall<'_>| -> ::std::result::Result<(), #rtp::KernelError> {
                #context
                #(#direct_inputs)*
                #direct_split
                #(#direct_outputs)*
                __ins.each_lane(#reads, #writes, #[inline(always)] move |#values| {
                    #(#fast_bindings)*
                    #result
                    #results
                });
                ::std::result::Result::Ok(())
            }
        };
        (fast, direct)
    });
    let (fast, direct) = fast.unzip();
    let general = quote! {
        |__ins: &#rtp::LaneInputs<'_>, __outs: &mut #rtp::LaneOutputs<'_>| -> ::std::result::Result<(), #rtp::KernelError> {
            #context
            #(#accessors)*
            let [#(#out_names),*] = __outs.leaves::<#n_outs>()?;
            #(#slices)*
            #fast
            for (__k, &__lane) in __ins.lanes().iter().enumerate() {
                __ins.at(__k);
                // Every input of the lane is read here, before any output is written.
                #(#bindings)*
                #result
                #(#stores)*
            }
            ::std::result::Result::Ok(())
        }
    };
    match direct {
        Some(direct) => quote!(#rtp::Kernel::lane_wise_direct(#general, #direct)),
        None => quote!(#rtp::Kernel::lane_wise_in_place(#general)),
    }
}

/// A kernel of the function, and whether it was compiled to element loops ([`vector_kernel`])
/// rather than evaluated per lane on owned vectors. A kernel reading the function's context
/// `context` is evaluated per lane, the context bound to its name.
fn kernel(
    rt: &Runtime,
    k: &KernelSpec,
    l: &Record,
    context: Option<&ContextParam>,
) -> (TokenStream, bool) {
    let inputs: Vec<(Ident, Ty)> = k
        .inputs
        .iter()
        .map(|(n, v)| (n.clone(), l.vars[*v].ty.clone()))
        .collect();
    let context = context.filter(|c| context::reads_context(&k.body.tokens, &c.name));
    let compiled = match context {
        Some(_) => None,
        None => vector_kernel(rt, &inputs, &k.body, &k.out_ty),
    };
    match compiled {
        Some(compiled) => (compiled, true),
        None => (
            lane_kernel(rt, &inputs, context, &k.body.tokens, &k.out_ty, k.body.span),
            false,
        ),
    }
}

/// The callee path as seen from inside the generated module (one level down).
fn callee_path(p: &syn::Path) -> TokenStream {
    let first = p
        .segments
        .first()
        .map(|s| s.ident.to_string())
        .unwrap_or_default();
    if p.leading_colon.is_some() || first == "crate" {
        quote!(#p)
    } else if first == "self" {
        let rest = p.segments.iter().skip(1);
        quote!(super #(::#rest)*)
    } else {
        quote!(super::#p)
    }
}

/// The stand-in for a callee named `name` that is neither `#[autobatch]` nor `#[primitive]`:
/// a module of its name whose `__define` cannot be called, rustc saying what to add.
fn missing_callee(rt: &Runtime, name: &Ident) -> TokenStream {
    let rtp = rt.path();
    let message = format!(
        "`{name}` is neither #[autobatch] nor #[primitive]: add `#[autobatch]` (or `#[primitive]`) to `fn {name}` to call it from #[autobatch] code"
    );
    quote! {
        #[doc(hidden)]
        #[allow(dead_code, non_snake_case, non_camel_case_types)]
        mod #name {
            #[diagnostic::on_unimplemented(message = #message, label = "called here")]
            pub trait Annotated {}
            pub fn __define<L: Annotated>(_: &mut L) -> #rtp::Callee {
                ::std::unreachable!()
            }
        }
    }
}

fn alloc_tokens(rt: &Runtime, a: Allocation) -> TokenStream {
    let rtp = rt.path();
    let a = format_ident!("{}", format!("{a:?}"));
    quote!(#rtp::ir::Allocation::#a)
}

/// A batched view type for an input of type `t`.
fn view_type(rt: &Runtime, t: &Ty) -> TokenStream {
    let rtp = rt.path();
    match t {
        Ty::Tuple(items) => {
            let items = items.iter().map(|i| view_type(rt, i));
            quote!((#(#items,)*))
        }
        Ty::Struct { path, .. } => {
            let p = struct_path(path);
            quote!(&'_ <#p as #rtp::Batched>::Batch)
        }
        Ty::Vector => quote!(#rtp::ndarray::ArrayView2<'_, f64>),
        leaf => {
            let el = rt.rust_type(leaf);
            quote!(#rtp::ndarray::ArrayView1<'_, #el>)
        }
    }
}

/// Statements pushing the input columns of `value` (of type `t`) onto `__inputs`: a struct
/// of arrays pushes its own leaves.
fn push_inputs(rt: &Runtime, t: &Ty, value: TokenStream, out: &mut Vec<TokenStream>) {
    let rtp = rt.path();
    match t {
        Ty::Tuple(items) => {
            for (i, item) in items.iter().enumerate() {
                let idx = syn::Index::from(i);
                push_inputs(rt, item, quote!(#value.#idx), out);
            }
        }
        Ty::Struct { path, .. } => {
            let p = struct_path(path);
            out.push(quote!(<#p as #rtp::Batched>::push_columns(#value, &mut __inputs);))
        }
        Ty::Vector => out.push(quote!(__inputs.push(#rtp::input_vectors(#value));)),
        _ => out.push(quote!(__inputs.push(#rtp::input(#value));)),
    }
}

fn read_outputs(rt: &Runtime, t: &Ty, next: &mut usize) -> TokenStream {
    let rtp = rt.path();
    match t {
        Ty::Tuple(items) => {
            let parts = items.iter().map(|i| read_outputs(rt, i, next));
            quote!((#(#parts,)*))
        }
        Ty::Struct { path, .. } => {
            let i = *next;
            *next += leaf_paths(t, quote!()).len();
            let p = struct_path(path);
            quote!(<#p as #rtp::Batched>::from_columns(&__run.outputs[#i..])?)
        }
        Ty::Vector => {
            let i = *next;
            *next += 1;
            quote!(#rtp::output_vectors::<f64>(&__run.outputs[#i])?)
        }
        leaf => {
            let i = *next;
            *next += 1;
            let el = rt.rust_type(leaf);
            quote!(#rtp::output::<#el>(&__run.outputs[#i])?)
        }
    }
}

/// Everything generated for one function (placed after the original item).
pub fn function(
    rt: &Runtime,
    item: &syn::ItemFn,
    func: &Func,
    l: &Record,
    ct: &CompileTime,
) -> TokenStream {
    let rtp = rt.path();
    let name = &func.name;
    let vis = &item.vis;
    let name_str = name.to_string();
    let var_names: Vec<_> = (0..l.vars.len()).map(|i| format_ident!("__v{i}")).collect();
    let block_names: Vec<_> = (0..l.blocks.len())
        .map(|i| format_ident!("__b{i}"))
        .collect();
    let callee_names: Vec<_> = (0..l.callees.len())
        .map(|i| format_ident!("__c{i}"))
        .collect();
    let linker = format_ident!("__l");
    let callees = l.callees.iter().zip(&callee_names).map(|(c, id)| {
        if c.is_self {
            quote!(let #id = #rtp::Callee::Function(__f);)
        } else if let Some(name) = c.path.get_ident() {
            // Resolved in `__define`'s own scope first, where the callee's generated module
            // is found; a plain function has none and reaches its `missing_callee` instead.
            quote_spanned!(c.span=> let #id = #name::__define(#linker);)
        } else {
            let p = callee_path(&c.path);
            quote_spanned!(c.span=> let #id = #p::__define(#linker);)
        }
    });
    let mut missing: Vec<&Ident> = Vec::new();
    for c in l.callees.iter().filter(|c| !c.is_self) {
        if let Some(name) = c.path.get_ident() {
            if !missing.contains(&name) {
                missing.push(name);
            }
        }
    }
    let missing = missing.into_iter().map(|name| missing_callee(rt, name));
    let vars = l
        .vars
        .iter()
        .zip(&var_names)
        .zip(&ct.allocations)
        .map(|((v, id), a)| {
            let n = &v.name;
            let t = rt.ir_type_expr(&v.ty);
            let a = alloc_tokens(rt, *a);
            quote!(let #id = __l.var(__f, #n, #t, #a);)
        });
    let blocks = l
        .blocks
        .iter()
        .zip(&block_names)
        .map(|(n, id)| quote!(let #id = __l.block(__f, #n);));
    let (kernels, compiled): (Vec<TokenStream>, Vec<bool>) = l
        .kernels
        .iter()
        .map(|k| kernel(rt, k, l, func.context.as_ref()))
        .unzip();
    let vector_kernels = compiled.iter().filter(|&&c| c).count();
    let vs = |xs: &[usize]| {
        let ids = xs.iter().map(|&i| &var_names[i]);
        quote!(&[#(#ids),*])
    };
    let steps = l.steps.iter().map(|s| match s {
        Step::Prim {
            block,
            outs,
            ins,
            kernel,
            source,
        } => {
            let (b, o, i, k) = (&block_names[*block], vs(outs), vs(ins), &kernels[*kernel]);
            quote!({ let __k = __l.kernel(#k); __l.builder().prim(#b, #o, #i, __k, #source); })
        }
        Step::Assign { block, outs, ins } => {
            let (b, o, i) = (&block_names[*block], vs(outs), vs(ins));
            quote!(__l.builder().assign(#b, #o, #i);)
        }
        Step::Call {
            block,
            callee,
            ins,
            outs,
        } => {
            let (b, c, i, o) = (
                &block_names[*block],
                &callee_names[*callee],
                vs(ins),
                vs(outs),
            );
            let name = path_text(&l.callees[*callee].path);
            quote!(__l.call(#b, #c, #i, #o, #name);)
        }
        Step::Goto(from, to) => {
            let (f, t) = (&block_names[*from], &block_names[*to]);
            quote!(__l.builder().goto(#f, #t);)
        }
        Step::Branch(from, c, t, e) => {
            let (f, c, t, e) = (
                &block_names[*from],
                &var_names[*c],
                &block_names[*t],
                &block_names[*e],
            );
            quote!(__l.builder().branch(#f, #c, #t, #e);)
        }
        Step::Ret(from) => {
            let f = &block_names[*from];
            quote!(__l.builder().ret(#f);)
        }
    });
    let params = vs(&l.params);
    let returns = vs(&l.returns);
    let inexact = (!ct.exact).then(|| quote!(__l.inexact();));
    // Signature checks: the macro's view of each callee must be the callee's real signature.
    let checks = l.callees.iter().filter(|c| !c.is_self).map(|c| {
        let p = &c.path;
        // A callee taking or returning structs is checked against its own signature (the
        // call passes the structs' fields).
        if let Some(s) = func
            .callee_signature(p)
            .filter(|s| s.params.iter().chain([&s.ret]).any(Ty::has_struct))
        {
            let ps = s.params.iter().map(|t| rt.rust_type(t)).collect();
            // The call passed each struct field by field: the context's place among the
            // struct-typed parameters.
            let position = c.context.map(|at| {
                let mut leaves = 0;
                s.params
                    .iter()
                    .take_while(|t| {
                        let t = t.resolved(&func.structs);
                        leaves += flat_signature(&Signature {
                            params: vec![t],
                            ret: Ty::unit(),
                        })
                        .params
                        .len();
                        leaves <= at
                    })
                    .count()
            });
            let ps = context::with_context_param(ps, position, func.context.as_ref());
            let r = rt.rust_type(&s.ret);
            return quote_spanned!(c.span=> const _: fn(#(#ps),*) -> #r = #p;);
        }
        // A call the callee's own signature already says is wrong is left to rustc's error on
        // the scalar function's call of it: checked here too, it would be reported twice.
        if func
            .callee_signature(p)
            .is_some_and(|s| mistyped_call(&s, c))
        {
            return TokenStream::new();
        }
        let mut ps: Vec<TokenStream> = c
            .params
            .iter()
            .zip(&c.by_ref)
            .map(|(t, r)| {
                let t = rt.rust_type(t);
                if *r {
                    quote!(&#t)
                } else {
                    t
                }
            })
            .collect();
        let r = rt.rust_type(&c.ret);
        match c.context.filter(|_| func.context.is_some()) {
            // The context passed on is checked by rustc at the scalar call (and by type at run
            // time): the check leaves its type to inference, so a wrong one is reported once.
            Some(at) => {
                ps.insert(at.min(ps.len()), quote!(_));
                quote_spanned!(c.span=> const _: () = { let _: fn(#(#ps),*) -> #r = #p; };)
            }
            None => quote_spanned!(c.span=> const _: fn(#(#ps),*) -> #r = #p;),
        }
    });
    let param_names: Vec<_> = func.params.iter().map(|(n, _)| n.clone()).collect();
    // The scalar function, named next to it by a signature check: the batched form uses it, so
    // a function called only through `f::batch` is not dead code (the check sits beside the
    // function, not in the module, so it also works for a function in a function body).
    let param_types = func.params.iter().map(|(_, t)| rt.rust_type(t)).collect();
    let ctx = func.context.as_ref();
    let param_types = context::with_context_param(param_types, ctx.map(|c| c.position), ctx);
    let ret_type = rt.rust_type(&func.ret);
    let scalar = quote!(const _: fn(#(#param_types),*) -> #ret_type = #name;);
    let register = ctx.map(|c| context::register(rt, c, &name_str, &linker));
    let (compiled_items, offer_compiled) = compiled_blocks(rt, func, l, ct).unzip();
    let (ctx_param, ctx_arg) = (context::entry_param(ctx), context::entry_arg(ctx));
    // The entry points' own names never meet the user's parameters (`config`, `inputs`, ..).
    let config = format_ident!("config");
    let run = context::run_call(
        rt,
        ctx,
        quote!(self::executable()?),
        quote!(&__inputs),
        quote!(#config),
    );
    let run_isolated = context::run_call(
        rt,
        ctx,
        quote!(self::executable()?),
        quote!(&__inputs),
        quote!(&__config),
    );
    let param_views: Vec<TokenStream> = func.params.iter().map(|(_, t)| view_type(rt, t)).collect();
    let mut inputs = Vec::new();
    for (n, t) in &func.params {
        push_inputs(rt, t, quote!(#n), &mut inputs);
    }
    let ret_array = rt.array_type(&func.ret);
    let outputs = read_outputs(rt, &func.ret, &mut 0);
    let printed = &ct.printed;
    let doc_batch = format!(
        "Runs [`{name_str}`](super::{name_str}) on a batch: one lane per row of the inputs."
    );
    let doc_mod = format!(
        "The batched form of [`{name_str}`](super::{name_str}), generated by `#[autobatch]`."
    );
    quote! {
        #scalar
        #(#checks)*

        #[doc = #doc_mod]
        #[allow(unused_imports, unused_parens, unused_braces, unused_variables, non_snake_case, clippy::all, clippy::pedantic)]
        #vis mod #name {
            use super::*;

            /// Adds this function (and, through their own generated code, its callees) to `__l`.
            #[doc(hidden)]
            pub fn __define(__l: &mut #rtp::Linker) -> #rtp::Callee {
                use super::*;
                let __f = match __l.declare(::std::concat!(::std::module_path!(), "::", #name_str), #name_str) {
                    ::std::result::Result::Ok(__f) => return #rtp::Callee::Function(__f),
                    ::std::result::Result::Err(__f) => __f,
                };
                #inexact
                #register
                #(#callees)*
                #(#vars)*
                #(#blocks)*
                __l.builder().signature(__f, #params, #returns);
                #(#steps)*
                #offer_compiled
                #rtp::Callee::Function(__f)
            }

            #compiled_items

            #(#missing)*

            /// The linked program with its kernels, built once.
            pub fn executable() -> ::std::result::Result<&'static #rtp::Executable, #rtp::RuntimeError> {
                static EXE: ::std::sync::OnceLock<::std::result::Result<#rtp::Executable, #rtp::RuntimeError>> = ::std::sync::OnceLock::new();
                EXE.get_or_init(|| {
                    let mut __l = #rtp::Linker::new();
                    match __define(&mut __l) {
                        #rtp::Callee::Function(__f) => __l.finish(__f),
                        #rtp::Callee::Primitive(_) => ::std::unreachable!("an #[autobatch] function defines a function"),
                    }
                })
                .as_ref()
                .map_err(::std::clone::Clone::clone)
            }

            /// The linked high-level program with its whole-program allocation (print it to see
            /// every variable's allocation); `executable()?.program()` is the prepared program
            /// stackless runs (small calls inlined, blocks simplified, needless copies removed).
            pub fn program() -> ::std::result::Result<&'static #rtp::ir::Program, #rtp::RuntimeError> {
                executable().map(|e| e.source())
            }

            /// This function's IR as the macro built it at compile time, with the allocation it
            /// computed then (conservative for callees it could not see).
            pub const COMPILE_TIME_PROGRAM: &str = #printed;

            /// How many of this function's kernels compile their vector arithmetic to element
            /// loops (the others evaluate per lane on owned vectors); for tests.
            #[doc(hidden)]
            pub const VECTOR_KERNELS: usize = #vector_kernels;

            #[doc = #doc_batch]
            pub fn batch(#ctx_param #(#param_names: #param_views,)* #config: &#rtp::Config) -> ::std::result::Result<#ret_array, #rtp::RuntimeError> {
                self::batch_with_stats(#ctx_arg #(#param_names,)* #config).map(|(__out, _)| __out)
            }

            /// Like [`batch`] with [`Config::lane_isolation`](#rtp::Config::lane_isolation) on: lanes
            /// that fail are listed in `failed` (their rows hold zeros), the others keep their results.
            pub fn batch_isolated(#ctx_param #(#param_names: #param_views,)* #config: &#rtp::Config) -> ::std::result::Result<#rtp::Isolated<#ret_array>, #rtp::RuntimeError> {
                let mut __inputs: ::std::vec::Vec<#rtp::Column> = ::std::vec::Vec::new();
                #(#inputs)*
                let __config = #rtp::Config { lane_isolation: true, ..::std::clone::Clone::clone(#config) };
                let __run = #run_isolated?;
                ::std::result::Result::Ok(#rtp::Isolated { outputs: #outputs, failed: __run.failed, stats: __run.stats })
            }

            /// Like [`batch`], also returning the run's statistics.
            pub fn batch_with_stats(#ctx_param #(#param_names: #param_views,)* #config: &#rtp::Config) -> ::std::result::Result<(#ret_array, #rtp::Stats), #rtp::RuntimeError> {
                let mut __inputs: ::std::vec::Vec<#rtp::Column> = ::std::vec::Vec::new();
                #(#inputs)*
                let __run = #run?.complete()?;
                ::std::result::Result::Ok((#outputs, __run.stats))
            }
        }
    }
}

/// True if a call passing arguments of `c.params` (by value where not `c.by_ref`) and taking a
/// result of `c.ret` cannot be a call of a function of signature `s`: a different number of
/// arguments, a by-value argument of another type, or another result type. rustc rejects the
/// scalar function's call then.
fn mistyped_call(s: &Signature, c: &CalleeSpec) -> bool {
    s.params.len() != c.params.len()
        || s.ret != c.ret
        || (s.params.iter().zip(&c.params).zip(&c.by_ref)).any(|((a, b), r)| !r && a != b)
}

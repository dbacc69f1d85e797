//! Compiled blocks for the full VM (the runtime's `compiled.rs` says what they are): for a
//! function the macro lowered by itself ([`CompileTime::lowered`]), one Rust function per
//! lowered block whose ops are lane-wise kernels, assignments and pops of scalar variables,
//! doing all of the block's ops for one lane, then the next; and the fingerprint of the
//! lowered program, which the runtime compares with the program it links before using them.

use super::ir::CompileTime;
use super::names::{format_ident, quote};
use super::runtime::{leaf_paths, Runtime};
use super::translate::Record;
use crate::parse::ast::{Func, Ty};
use autobatch_ir::passes::{stacked_liveness, Liveness, VarSet};
use autobatch_ir::{
    fingerprint, Allocation, Block, DType, KernelRef, LoweredProgram, Op, PrimOp, Shape,
    Terminator, Type, Var,
};
use proc_macro2::TokenStream;
use quote::quote_spanned;
use std::collections::{BTreeMap, BTreeSet};

/// The compiled blocks of function `func` (record `l`): the items (one function per compiled
/// block and the table of them) and the statement offering them to the linker (`__l`, with
/// the function `__f`); `None` where the macro did not lower the function by itself or it
/// reads a context.
pub fn compiled_blocks(
    rt: &Runtime,
    func: &Func,
    l: &Record,
    ct: &CompileTime,
) -> Option<(TokenStream, TokenStream)> {
    let (program, kernels) = ct.lowered.as_ref()?;
    if func.context.is_some() {
        return None;
    }
    let rtp = rt.path();
    // Liveness as the VM sees it: what a block's values must be stored for.
    let live = stacked_liveness(program);
    let mut items = Vec::new();
    let mut table = Vec::new();
    for i in 0..program.blocks.len() {
        let compiled = block(rt, (program, &live, Block::new(i)), (l, kernels));
        match compiled {
            Some(body) => {
                let name = format_ident!("__block{}", i);
                items.push(quote! {
                    fn #name(__run: &mut #rtp::BlockRun<'_, '_>) -> ::std::result::Result<(), #rtp::RuntimeError> {
                        #body
                    }
                });
                table.push(quote!(::std::option::Option::Some(#name as #rtp::BlockFn)));
            }
            None => table.push(quote!(::std::option::Option::None)),
        }
    }
    if items.is_empty() {
        return None;
    }
    let n = table.len();
    let print = fingerprint(program);
    items.push(quote! {
        /// The compiled form of each lowered block, where it has one.
        static __COMPILED_BLOCKS: [::std::option::Option<#rtp::BlockFn>; #n] = [#(#table),*];
    });
    let offer = quote! {
        __l.compiled(__f, #rtp::CompiledBlocks { fingerprint: #print, blocks: &__COMPILED_BLOCKS });
    };
    Some((quote!(#(#items)*), offer))
}

/// The scalar type of `v` in `program`, if it is one scalar (not a key).
fn scalar(program: &LoweredProgram, v: Var) -> Option<DType> {
    match &program.var(v).ty {
        Type::Tensor(t) if t.shape == Shape::Scalar && t.dtype != DType::Key => Some(t.dtype),
        _ => None,
    }
}

/// What one lane's code knows while it runs a block: the local holding each variable's value
/// where an op of the block computed or read it (read again from there, not from storage),
/// and the variables live after the block (the others, unless stacked, are not stored).
struct Lane<'a> {
    program: &'a LoweredProgram,
    values: BTreeMap<Var, proc_macro2::Ident>,
    live_out: &'a VarSet,
}

impl Lane<'_> {
    /// The tokens of `v`'s value in the lane, and the statement reading it from storage first
    /// where no op of the block left it in a local (reads need no check: the verifier proved
    /// every read of a high-level program preceded by a write).
    fn value(&mut self, v: Var, code: &mut Vec<TokenStream>) -> TokenStream {
        if let Some(local) = self.values.get(&v) {
            return quote!(#local);
        }
        let x = var_ident(v);
        let local = format_ident!("__r{}", v.index());
        code.push(quote!(let #local = unsafe { #x.get(__lane) };));
        self.values.insert(v, local.clone());
        quote!(#local)
    }

    /// The writes of `values` (locals holding each output leaf's value, in order) into `p`'s
    /// outputs: each stacked output not written in place pushed first; an output stored unless
    /// it has no storage or is dead after the block and not stacked; each value kept for the
    /// ops after.
    fn write(&mut self, p: &PrimOp, values: &[proc_macro2::Ident], code: &mut Vec<TokenStream>) {
        for (&v, value) in p.outs.iter().zip(values) {
            let alloc = self.program.var(v).alloc;
            let (x, index) = (var_ident(v), v.index() as u32);
            if alloc == Allocation::Full && !p.is_in_place(v) {
                code.push(quote! {
                    if !unsafe { #x.push(__lane) } {
                        #x = __frames.grow(#index, (__lanes, __k))?;
                        let __pushed = unsafe { #x.push(__lane) };
                        ::std::debug_assert!(__pushed, "grown for the push");
                    }
                });
            }
            let stored = alloc == Allocation::Full
                || (alloc != Allocation::Null && self.live_out.contains(&v));
            if stored {
                code.push(quote!(unsafe { #x.put(__lane, #value) };));
            }
            self.values.insert(v, value.clone());
        }
    }
}

/// The body of block `b`'s compiled function, if it can have one: every variable it touches a
/// scalar, every kernel one of the record's (`kernels` maps the program's kernel ids to
/// them), no input without storage.
fn block(
    rt: &Runtime,
    (program, live, b): (&LoweredProgram, &Liveness, Block),
    (l, kernels): (&Record, &[usize]),
) -> Option<TokenStream> {
    let data = program.block(b);
    let alloc = |v: Var| program.var(v).alloc;
    // Every variable it touches (its storage taken once), and how many times it is pushed.
    let mut touched: BTreeMap<Var, DType> = BTreeMap::new();
    let mut pushes: BTreeSet<Var> = BTreeSet::new();
    let mut kernel_ids = Vec::new();
    let mut code = Vec::new();
    let mut lane = Lane {
        program,
        values: BTreeMap::new(),
        live_out: &live.block(b).live_out,
    };
    let mut take = |v: Var| -> Option<()> {
        let dtype = scalar(program, v)?;
        if alloc(v) != Allocation::Null {
            touched.insert(v, dtype);
        }
        Some(())
    };
    for (i, op) in data.ops.iter().enumerate() {
        match op {
            Op::Prim(p) => {
                for &v in p.ins.iter().chain(&p.outs) {
                    take(v)?;
                }
                if p.ins.iter().any(|&v| alloc(v) == Allocation::Null) {
                    return None;
                }
                for &v in &p.outs {
                    if alloc(v) == Allocation::Full && !p.is_in_place(v) {
                        pushes.insert(v);
                    }
                }
                match p.kernel {
                    KernelRef::User(id) => {
                        kernel_ids.push(id.index());
                        let kernel = *kernels.get(id.index())?;
                        kernel_op(rt, &mut lane, p, (i, l, kernel), &mut code)?;
                    }
                    KernelRef::Assign => assign_op(&mut lane, p, i, &mut code)?,
                }
            }
            Op::Pop(vars) => {
                for &v in vars {
                    take(v)?;
                    if alloc(v) == Allocation::Full {
                        lane.values.remove(&v);
                        let (x, index) = (var_ident(v), v.index() as u32);
                        code.push(quote! {
                            if !unsafe { #x.pop(__lane) } {
                                return ::std::result::Result::Err(__frames.faults().empty(#index, __lane));
                            }
                        });
                    }
                }
            }
            Op::Call(_) => return None,
        }
    }
    if let Terminator::Branch { cond, .. } = data.term {
        take(cond)?;
        if alloc(cond) == Allocation::Null {
            return None;
        }
        let value = lane.value(cond, &mut code);
        // Once per lane of the block, as `send` asks.
        code.push(quote!(unsafe { __sides.send(__lane, #value) };));
    }
    let takes = touched.iter().map(|(v, d)| {
        let (x, index) = (var_ident(*v), v.index() as u32);
        let t = rt.element_type(&Ty::Scalar(*d));
        let m = pushes.contains(v).then(|| quote!(mut));
        quote!(let #m #x = __run.var::<#t>(#index)?;)
    });
    Some(quote! {
        #(#takes)*
        __run.count_kernels(&[#(#kernel_ids),*]);
        let __lanes = __run.lanes();
        __run.each(move |__blame, __frames, mut __sides| {
            for (__k, &__lane) in __lanes.iter().enumerate() {
                #(#code)*
            }
            ::std::result::Result::Ok(__sides)
        })
    })
}

/// The local holding variable `v`'s storage in a compiled block.
fn var_ident(v: Var) -> proc_macro2::Ident {
    format_ident!("__x{}", v.index())
}

/// One lane's part of kernel op `p` (op `op` of its block, running the record's kernel
/// `kernel`): its inputs read, its body evaluated, its outputs written.
fn kernel_op(
    rt: &Runtime,
    lane: &mut Lane<'_>,
    p: &PrimOp,
    (op, l, kernel): (usize, &Record, usize),
    code: &mut Vec<TokenStream>,
) -> Option<()> {
    let spec = l.kernels.get(kernel)?;
    let outs = leaf_paths(&spec.out_ty, quote!(__value));
    if spec.inputs.len() != p.ins.len() || outs.len() != p.outs.len() {
        return None;
    }
    let mut bindings = Vec::new();
    for ((name, var), &v) in spec.inputs.iter().zip(&p.ins) {
        let ty = &l.vars[*var].ty;
        if !matches!(ty, Ty::Scalar(d) if Some(*d) == scalar(lane.program, v)) {
            return None;
        }
        let (rty, value) = (rt.rust_type(ty), lane.value(v, code));
        bindings.push(quote!(let #name: #rty = #value;));
    }
    let out_ty = rt.rust_type(&spec.out_ty);
    let body = &spec.body.tokens;
    let value = format_ident!("__value");
    let result = quote_spanned!(spec.body.span=> let #value: #out_ty = #body;);
    let names: Vec<_> = (0..outs.len())
        .map(|k| format_ident!("__o{}_{}", op, k))
        .collect();
    let paths = outs.iter().map(|(_, path)| path);
    // The kernel runs under a guard that blames the op and lane if it unwinds, and is
    // forgotten (nothing done) as the kernel returns.
    code.push(quote! {
        let __guard = __blame.guard(#op, __lane);
        let (#(#names,)*) = {
            #(#bindings)*
            #result
            (#(#paths,)*)
        };
        ::std::mem::forget(__guard);
    });
    lane.write(p, &names, code);
    Some(())
}

/// One lane's part of assignment `p` (op `op` of its block): every input read, then each
/// output written.
fn assign_op(
    lane: &mut Lane<'_>,
    p: &PrimOp,
    op: usize,
    code: &mut Vec<TokenStream>,
) -> Option<()> {
    if p.ins.len() != p.outs.len() {
        return None;
    }
    let names: Vec<_> = (0..p.ins.len())
        .map(|k| format_ident!("__a{}_{}", op, k))
        .collect();
    for (name, &v) in names.iter().zip(&p.ins) {
        let value = lane.value(v, code);
        code.push(quote!(let #name = #value;));
    }
    lane.write(p, &names, code);
    Some(())
}

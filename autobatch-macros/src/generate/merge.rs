//! Kernel merging: consecutive lane-wise kernels of one block become one kernel, so values
//! that live only between them stay in the lane's registers instead of being stored to and
//! reloaded from batch storage. (Not the IR's pop-push fusion, which is a pass on lowered
//! programs.)
//!
//! Every merged step still runs, in order, on every active lane (a step whose value nobody
//! reads is computed and dropped, as in the scalar function); only the variables read outside
//! the group (or across executions of the block, or returned) are outputs of the merged kernel.

use super::names::{format_ident, quote};
use super::runtime::Runtime;
use super::translate::{KernelSpec, Record, Step};
use crate::parse::ast::{Block, Expr, ExprKind, Pat, Stmt, Ty};
use proc_macro2::{Ident, TokenStream};
use quote::quote_spanned;
use std::collections::{HashMap, HashSet};

/// The variables step `s` reads.
fn reads(s: &Step, returns: &[usize]) -> Vec<usize> {
    match s {
        Step::Prim { ins, .. } | Step::Assign { ins, .. } | Step::Call { ins, .. } => ins.clone(),
        Step::Branch(_, c, _, _) => vec![*c],
        Step::Ret(_) => returns.to_vec(),
        Step::Goto(..) => Vec::new(),
    }
}

/// A kernel step that merging can take: one output variable of the kernel's type, or one per
/// element of its tuple (`let (u, key) = key.uniform()`) when none holds a `Vector` (such a
/// kernel is a key method making a vector, which no vector kernel compiles: merged, it would
/// take the vector arithmetic around it out of the compiled subset).
fn mergeable(s: &Step, l: &Record) -> Option<usize> {
    let Step::Prim {
        block,
        outs,
        kernel,
        ..
    } = s
    else {
        return None;
    };
    let out_ty = &l.kernels[*kernel].out_ty;
    let fits = match outs.as_slice() {
        [one] => *out_ty == l.vars[*one].ty,
        many => {
            !out_ty.has_vector()
                && *out_ty == Ty::Tuple(many.iter().map(|&v| l.vars[v].ty.clone()).collect())
        }
    };
    fits.then_some(*block)
}

/// The merged kernel's local holding variable `v`: hygienic, so a user variable named
/// `__v3` never stands for another variable's local (or the reverse) in the merged body.
fn local(v: usize) -> Ident {
    format_ident!("__v{v}")
}

/// Merges every run of two or more consecutive mergeable kernel steps of the same block.
pub fn merge_kernels(rt: &Runtime, l: &mut Record) {
    let steps = std::mem::take(&mut l.steps);
    let read_by: Vec<Vec<usize>> = steps.iter().map(|s| reads(s, &l.returns)).collect();
    // How many steps read each variable, to tell reads outside a group from reads inside.
    let mut readers: HashMap<usize, usize> = HashMap::new();
    for vars in &read_by {
        for &v in vars {
            *readers.entry(v).or_default() += 1;
        }
    }
    let mut out = Vec::with_capacity(steps.len());
    let mut i = 0;
    while i < steps.len() {
        let Some(block) = mergeable(&steps[i], l) else {
            i += 1;
            continue;
        };
        let mut end = i + 1;
        while end < steps.len() && mergeable(&steps[end], l) == Some(block) {
            end += 1;
        }
        if end - i >= 2 {
            let step = merge_group(rt, l, &steps[i..end], &read_by[i..end], &readers, block);
            out.push((i, end, step));
        }
        i = end;
    }
    // Splice the merged steps in place of their groups.
    let mut merged = out.into_iter().peekable();
    let mut kept = Vec::new();
    for (i, s) in steps.into_iter().enumerate() {
        match merged.peek() {
            Some((start, end, _)) if i >= *start && i < *end => {
                if i + 1 == *end {
                    kept.push(merged.next().expect("peeked").2);
                }
            }
            _ => kept.push(s),
        }
    }
    l.steps = kept;
    drop_unused_kernels(l);
}

/// One kernel computing `group` in order; its outputs are the variables written in the group
/// that are read outside it, read inside it before being written (across executions of the
/// block), or returned.
fn merge_group(
    rt: &Runtime,
    l: &mut Record,
    group: &[Step],
    group_reads: &[Vec<usize>],
    readers: &HashMap<usize, usize>,
    block: usize,
) -> Step {
    let mut inside: HashMap<usize, usize> = HashMap::new();
    for vars in group_reads {
        for &v in vars {
            *inside.entry(v).or_default() += 1;
        }
    }
    let returns: HashSet<usize> = l.returns.iter().copied().collect();
    let mut written: Vec<usize> = Vec::new();
    let mut external: Vec<usize> = Vec::new();
    let mut carried: HashSet<usize> = HashSet::new();
    for (s, vars) in group.iter().zip(group_reads) {
        for &v in vars {
            if !written.contains(&v) {
                if !external.contains(&v) {
                    external.push(v);
                }
                carried.insert(v);
            }
        }
        if let Step::Prim { outs, .. } = s {
            for &v in outs {
                if !written.contains(&v) {
                    written.push(v);
                }
            }
        }
    }
    let mut needed: Vec<usize> = written
        .iter()
        .copied()
        .filter(|v| {
            returns.contains(v)
                || carried.contains(v)
                || readers.get(v).copied().unwrap_or(0) > inside.get(v).copied().unwrap_or(0)
        })
        .collect();
    if needed.is_empty() {
        // Nothing escapes: keep the last value as the (unread) output.
        needed.extend(written.last());
    }
    // The last step reading each local: there the binding may be moved instead of cloned.
    let mut last_read: HashMap<usize, usize> = HashMap::new();
    for (k, vars) in group_reads.iter().enumerate() {
        for &v in vars {
            last_read.insert(v, k);
        }
    }
    let mut body = Vec::new();
    let mut stmts = Vec::new();
    let mut sources = Vec::new();
    let mut span = None;
    for (k, s) in group.iter().enumerate() {
        let Step::Prim {
            outs,
            kernel,
            source,
            ..
        } = s
        else {
            continue;
        };
        let spec: &KernelSpec = &l.kernels[*kernel];
        let spec_span = spec.body.span;
        span.get_or_insert(spec_span);
        sources.push(source.clone());
        let (bindings, binding_stmts): (Vec<TokenStream>, Vec<Stmt>) = spec
            .inputs
            .iter()
            .map(|(name, v)| {
                let var_ty = &l.vars[*v].ty;
                let ty = rt.rust_type(var_ty);
                let src = local(*v);
                let rewritten_later = group[k + 1..]
                    .iter()
                    .any(|s| matches!(s, Step::Prim { outs, .. } if outs.contains(v)));
                let last = last_read.get(v) == Some(&k);
                let moved =
                    last && (!needed.contains(v) || rewritten_later) && !spec_reads_twice(spec, *v);
                let init = if moved {
                    Expr::var(&src)
                } else {
                    let kind = ExprKind::Method(
                        Box::new(Expr::var(&src)),
                        format_ident!("clone"),
                        Vec::new(),
                    );
                    Expr::made(kind, quote!(::core::clone::Clone::clone(&#src)), spec_span)
                };
                let init_tokens = init.tokens.clone();
                let stmt = Stmt::Let {
                    pat: Pat::Ident(name.clone()),
                    ty: Some(var_ty.clone()),
                    init,
                };
                (quote!(let #name: #ty = #init_tokens;), stmt)
            })
            .unzip();
        let value = &spec.body.tokens;
        let target = |out: usize| -> (TokenStream, Pat) {
            let used_later = needed.contains(&out)
                || group_reads[k + 1..].iter().any(|vars| vars.contains(&out));
            if used_later {
                let id = local(out);
                (quote!(#id), Pat::Ident(id))
            } else {
                (quote!(_), Pat::Wild)
            }
        };
        let ((target, pat), lang_ty) = match outs.as_slice() {
            [one] => (target(*one), l.vars[*one].ty.clone()),
            many => {
                let (targets, pats): (Vec<TokenStream>, Vec<Pat>) =
                    many.iter().map(|&v| target(v)).unzip();
                (
                    (quote!((#(#targets,)*)), Pat::Tuple(pats)),
                    spec.out_ty.clone(),
                )
            }
        };
        let ty = rt.rust_type(&lang_ty);
        let inner = quote_spanned!(spec_span=> #value);
        let init_tokens = quote!({ #(#bindings)* #inner });
        body.push(quote!(let #target: #ty = #init_tokens;));
        let init = Block {
            stmts: binding_stmts,
            tail: Some(Box::new(spec.body.clone())),
        };
        stmts.push(Stmt::Let {
            pat,
            ty: Some(lang_ty),
            init: Expr::made(ExprKind::Block(init), init_tokens, spec_span),
        });
    }
    let span = span.expect("a group has steps");
    let (value, out_ty) = match needed.as_slice() {
        [one] => (Expr::var(&local(*one)), l.vars[*one].ty.clone()),
        many => {
            let ids: Vec<Ident> = many.iter().map(|&v| local(v)).collect();
            let tuple = Expr::made(
                ExprKind::Tuple(ids.iter().map(Expr::var).collect()),
                quote!((#(#ids,)*)),
                span,
            );
            let ty = Ty::Tuple(many.iter().map(|&v| l.vars[v].ty.clone()).collect());
            (tuple, ty)
        }
    };
    let inputs: Vec<(Ident, usize)> = external.iter().map(|&v| (local(v), v)).collect();
    let value_tokens = &value.tokens;
    let tokens = quote!({ #(#body)* #value_tokens });
    let merged = Block {
        stmts,
        tail: Some(Box::new(value)),
    };
    l.kernels.push(KernelSpec {
        inputs,
        body: Expr::made(ExprKind::Block(merged), tokens, span),
        out_ty,
    });
    Step::Prim {
        block,
        outs: needed,
        ins: external,
        kernel: l.kernels.len() - 1,
        source: sources.join("; "),
    }
}

/// A kernel that binds the same variable under two names must clone it for the first.
fn spec_reads_twice(spec: &KernelSpec, v: usize) -> bool {
    spec.inputs.iter().filter(|(_, x)| *x == v).count() > 1
}

/// Renumbers the kernels so only those some step uses remain.
fn drop_unused_kernels(l: &mut Record) {
    let mut map: HashMap<usize, usize> = HashMap::new();
    let mut kernels = Vec::new();
    let old = std::mem::take(&mut l.kernels);
    let mut old: Vec<Option<KernelSpec>> = old.into_iter().map(Some).collect();
    for s in &mut l.steps {
        if let Step::Prim { kernel, .. } = s {
            let new = *map.entry(*kernel).or_insert_with(|| {
                kernels.push(old[*kernel].take().expect("each kernel moved once"));
                kernels.len() - 1
            });
            *kernel = new;
        }
    }
    l.kernels = kernels;
}

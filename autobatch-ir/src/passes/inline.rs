//! Inlining: a call to a small non-recursive function becomes a copy of the callee's body, so
//! it costs no `push_goto`, return jump, argument stack traffic or stackless host call.
//!
//! A call `outs = call(g, args)` in block `A` of function `f` is replaced when `g` is not the
//! entry function, is not recursive (on no cycle of the call graph, self-calls included) and
//! its body, after its own calls were inlined, has at most [`InlineOptions::max_ops`] ops:
//!
//! ```text
//! A:   ops before the call               A:   ops before the call
//!      outs = call(g, args)       =>          g.p@f.1, .. = prim(args) by assign
//!      ops after the call                     goto(g.entry@f.1)
//!      terminator                        g.entry@f.1: ..  (a copy of g's blocks; its
//!                                        ..                `return`s become `goto(g.exit@f.1)`)
//!                                        g.exit@f.1:
//!                                             outs = prim(g.r@f.1, ..) by assign
//!                                             ops after the call
//!                                             terminator
//! ```
//!
//! Every variable and block of the callee gets a fresh copy per call site. Names stay global
//! and unique: a copy is named `<original>@<caller>.<k>`, where `k` counts the call sites
//! inlined into the caller (in block order, then op order, from 1), and the continuation is
//! `<callee>.exit@<caller>.<k>` (a `#2`, `#3`, .. suffix if that name is taken). The copies
//! sit right after the calling block, then the continuation, in the caller's block list.
//! Primitive ops keep their kernel and source text (kernels read their inputs by position, so
//! renaming variables changes nothing for them).
//!
//! Functions are processed callees first, so nested non-recursive calls flatten completely:
//! when `g` is copied into `f`, the calls `g` itself made to small helpers are already copies.
//! A function all of whose calls were inlined (it was called in the input and no call to it is
//! left) is dropped, with the variables only it used; every other function is kept.
//!
//! Allocations: copies start with the allocation of the variable they copy, but the result
//! must be **re-allocated** ([`allocate`](crate::passes::allocate)) before it runs, since
//! allocation depends on liveness across blocks and calls, which inlining changes.

use crate::entity::{Block, FuncId, Var};
use crate::passes::calls::{call_graph, on_cycles};
use crate::program::{
    BlockData, CallOp, FunctionData, KernelRef, Op, PrimOp, Program, Terminator, VarData,
};
use crate::verified::HighProgram;
use crate::verify::trusted;
use std::collections::{HashMap, HashSet};

/// Knobs for [`inline_calls`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlineOptions {
    /// Inline a callee only if its body, after its own calls were inlined, has at most this
    /// many ops (`usize::MAX`: every non-recursive callee).
    ///
    /// The default, 16, takes small helpers (a three-op `log_add_exp`) and leaves large
    /// functions called from several places alone: every inlined copy is code the lanes of
    /// other call sites no longer share, so lanes that would have run the callee's blocks
    /// together (from different call sites, or different recursion depths) run separate
    /// copies, and a batched kernel in the callee would be split between them.
    pub max_ops: usize,
}

impl Default for InlineOptions {
    fn default() -> Self {
        InlineOptions { max_ops: 16 }
    }
}

/// Replaces every call to a small non-recursive function by a copy of its body; returns a new
/// program (the input is untouched).
///
/// See the module docs for the rules and names. A program with no call to inline is returned
/// unchanged (equal to the input). Its allocations must be recomputed with
/// [`allocate`](crate::passes::allocate) before it is lowered or run.
pub fn inline_calls(program: &HighProgram, options: &InlineOptions) -> HighProgram {
    let calls = call_graph(program);
    let recursive = on_cycles(&calls);
    let mut work = Work {
        vars: program.vars.iter().cloned().collect(),
        blocks: program.blocks.iter().cloned().collect(),
        functions: program.functions.iter().cloned().collect(),
        var_names: program.vars.iter().map(|v| v.name.clone()).collect(),
        block_names: program.blocks.iter().map(|b| b.name.clone()).collect(),
        size: vec![0; program.functions.len()],
        inlinable: (0..program.functions.len())
            .map(|f| f != program.main.index() && !recursive[f])
            .collect(),
        max_ops: options.max_ops,
        inlined: false,
    };
    for f in callees_first(&calls) {
        work.inline_into(f);
    }
    if !work.inlined {
        return program.clone();
    }
    trusted(work.finish(program, &calls))
}

/// Every function, each after the functions it calls unless they are on a cycle with it
/// (depth-first post-order over the call graph, roots in table order).
fn callees_first(calls: &[Vec<FuncId>]) -> Vec<FuncId> {
    let n = calls.len();
    let mut state = vec![0u8; n]; // 0 new, 1 on the stack, 2 done
    let mut order = Vec::with_capacity(n);
    for root in 0..n {
        if state[root] != 0 {
            continue;
        }
        // (function, index of the next callee to visit)
        let mut stack = vec![(root, 0usize)];
        state[root] = 1;
        while let Some((f, next)) = stack.last_mut() {
            let f = *f;
            if let Some(g) = calls[f].get(*next) {
                *next += 1;
                if state[g.index()] == 0 {
                    state[g.index()] = 1;
                    stack.push((g.index(), 0));
                }
            } else {
                state[f] = 2;
                order.push(FuncId::new(f));
                stack.pop();
            }
        }
    }
    order
}

/// Hands out names not used so far: `base`, else `base#2`, `base#3`, ...
fn fresh(used: &mut HashSet<String>, base: String) -> String {
    let mut name = base.clone();
    let mut k = 1;
    while used.contains(&name) {
        k += 1;
        name = format!("{base}#{k}");
    }
    used.insert(name.clone());
    name
}

fn assign(outs: Vec<Var>, ins: Vec<Var>) -> Op {
    Op::Prim(PrimOp {
        in_place: Vec::new(),
        outs,
        ins,
        kernel: KernelRef::Assign,
        source: "assign".to_string(),
    })
}

/// The program under construction.
struct Work {
    vars: Vec<VarData>,
    blocks: Vec<BlockData>,
    functions: Vec<FunctionData>,
    var_names: HashSet<String>,
    block_names: HashSet<String>,
    /// Ops of each function already processed (its calls inlined).
    size: Vec<usize>,
    /// Neither the entry function nor recursive.
    inlinable: Vec<bool>,
    max_ops: usize,
    /// Whether any call was inlined.
    inlined: bool,
}

impl Work {
    fn should_inline(&self, call: &CallOp) -> bool {
        let g = call.func.index();
        self.inlinable[g] && self.size[g] <= self.max_ops
    }

    /// Inlines every call `f` makes to a small non-recursive (already processed) function.
    fn inline_into(&mut self, f: FuncId) {
        let mut site = 0usize;
        let mut list = Vec::new();
        for b in self.functions[f.index()].blocks.clone() {
            let ops = std::mem::take(&mut self.blocks[b.index()].ops);
            let term = self.blocks[b.index()].term.clone();
            let mut current = b;
            let mut kept = Vec::with_capacity(ops.len());
            list.push(b);
            for op in ops {
                match op {
                    Op::Call(call) if self.should_inline(&call) => {
                        site += 1;
                        let tag = format!("@{}.{site}", self.functions[f.index()].name);
                        let (copies, exit, params, returns) = self.copy_callee(call.func, &tag);
                        if !params.is_empty() {
                            kept.push(assign(params, call.ins.clone()));
                        }
                        let data = &mut self.blocks[current.index()];
                        data.ops = std::mem::take(&mut kept);
                        data.term = Terminator::Goto(copies[0]);
                        list.extend(copies);
                        list.push(exit);
                        current = exit;
                        if !call.outs.is_empty() {
                            kept.push(assign(call.outs.clone(), returns));
                        }
                        self.inlined = true;
                    }
                    op => kept.push(op),
                }
            }
            let data = &mut self.blocks[current.index()];
            data.ops = kept;
            data.term = term;
        }
        self.functions[f.index()].blocks = list;
        self.size[f.index()] = self.functions[f.index()]
            .blocks
            .iter()
            .map(|b| self.blocks[b.index()].ops.len())
            .sum();
    }

    /// Copies callee `g`'s blocks with fresh variables and blocks named `<name><tag>`; returns
    /// the copies (entry first), the continuation block (empty, `return` for now) that the
    /// copies' `return`s jump to, and the copies of `g`'s parameters and return variables.
    fn copy_callee(&mut self, g: FuncId, tag: &str) -> (Vec<Block>, Block, Vec<Var>, Vec<Var>) {
        let callee = self.functions[g.index()].clone();
        let mut var_map: HashMap<Var, Var> = HashMap::new();
        let mut copy_var = |this: &mut Work, v: Var| -> Var {
            *var_map.entry(v).or_insert_with(|| {
                let data = this.vars[v.index()].clone();
                let name = fresh(&mut this.var_names, format!("{}{tag}", data.name));
                this.vars.push(VarData { name, ..data });
                Var::new(this.vars.len() - 1)
            })
        };
        let params: Vec<Var> = callee.params.iter().map(|&v| copy_var(self, v)).collect();
        let returns: Vec<Var> = callee.returns.iter().map(|&v| copy_var(self, v)).collect();
        let mut block_map: HashMap<Block, Block> = HashMap::new();
        for &b in &callee.blocks {
            let name = fresh(
                &mut self.block_names,
                format!("{}{tag}", self.blocks[b.index()].name),
            );
            self.blocks.push(BlockData {
                name,
                ops: Vec::new(),
                term: Terminator::Return,
            });
            block_map.insert(b, Block::new(self.blocks.len() - 1));
        }
        let exit_name = fresh(&mut self.block_names, format!("{}.exit{tag}", callee.name));
        self.blocks.push(BlockData {
            name: exit_name,
            ops: Vec::new(),
            term: Terminator::Return,
        });
        let exit = Block::new(self.blocks.len() - 1);
        let at = |b: Block| block_map.get(&b).copied().unwrap_or(b);
        for &b in &callee.blocks {
            let original = self.blocks[b.index()].clone();
            let ops = original
                .ops
                .iter()
                .map(|op| match op {
                    Op::Prim(p) => Op::Prim(PrimOp {
                        outs: p.outs.iter().map(|&v| copy_var(self, v)).collect(),
                        ins: p.ins.iter().map(|&v| copy_var(self, v)).collect(),
                        ..p.clone()
                    }),
                    Op::Call(c) => Op::Call(CallOp {
                        func: c.func,
                        ins: c.ins.iter().map(|&v| copy_var(self, v)).collect(),
                        outs: c.outs.iter().map(|&v| copy_var(self, v)).collect(),
                    }),
                    Op::Pop(vars) => Op::Pop(vars.iter().map(|&v| copy_var(self, v)).collect()),
                })
                .collect();
            let term = match original.term {
                Terminator::Goto(t) => Terminator::Goto(at(t)),
                Terminator::Branch { cond, then_, else_ } => Terminator::Branch {
                    cond: copy_var(self, cond),
                    then_: at(then_),
                    else_: at(else_),
                },
                Terminator::Return => Terminator::Goto(exit),
                // A verified high-level program has neither.
                t @ (Terminator::PushGoto { .. } | Terminator::IndirectGoto) => t,
            };
            let copy = &mut self.blocks[at(b).index()];
            copy.ops = ops;
            copy.term = term;
        }
        let copies = callee.blocks.iter().map(|&b| at(b)).collect();
        (copies, exit, params, returns)
    }

    /// Drops the functions whose calls were all inlined, with the variables only they used.
    fn finish(self, program: &Program, calls_before: &[Vec<FuncId>]) -> Program {
        let called_before: HashSet<FuncId> = calls_before.iter().flatten().copied().collect();
        let mut called_after: HashSet<FuncId> = HashSet::new();
        for func in &self.functions {
            for &b in &func.blocks {
                for op in &self.blocks[b.index()].ops {
                    if let Op::Call(c) = op {
                        called_after.insert(c.func);
                    }
                }
            }
        }
        let keep: Vec<bool> = (0..self.functions.len())
            .map(|f| {
                let id = FuncId::new(f);
                id == program.main || !called_before.contains(&id) || called_after.contains(&id)
            })
            .collect();
        let mut used_kept = vec![false; self.vars.len()];
        let mut used_dropped = vec![false; self.vars.len()];
        for (f, func) in self.functions.iter().enumerate() {
            let used = if keep[f] {
                &mut used_kept
            } else {
                &mut used_dropped
            };
            let mut mark = |v: &Var| used[v.index()] = true;
            func.params.iter().for_each(&mut mark);
            func.returns.iter().for_each(&mut mark);
            for &b in &func.blocks {
                let data = &self.blocks[b.index()];
                for op in &data.ops {
                    op.reads().iter().for_each(&mut mark);
                    op.writes().iter().for_each(&mut mark);
                }
                if let Terminator::Branch { cond, .. } = &data.term {
                    mark(cond);
                }
            }
        }
        // New numbers: variables, blocks (of kept functions, in table order) and functions.
        let mut var_index: Vec<Option<Var>> = vec![None; self.vars.len()];
        let mut vars = Vec::new();
        for (i, data) in self.vars.into_iter().enumerate() {
            let v = Var::new(i);
            if v == program.pc || used_kept[i] || !used_dropped[i] {
                var_index[i] = Some(Var::new(vars.len()));
                vars.push(data);
            }
        }
        let mut block_owner_kept = vec![false; self.blocks.len()];
        for (f, func) in self.functions.iter().enumerate() {
            for &b in &func.blocks {
                block_owner_kept[b.index()] = keep[f];
            }
        }
        let mut block_index: Vec<Option<Block>> = vec![None; self.blocks.len()];
        let mut next = 0;
        for (i, slot) in block_index.iter_mut().enumerate() {
            if block_owner_kept[i] {
                *slot = Some(Block::new(next));
                next += 1;
            }
        }
        let mut func_index: Vec<Option<FuncId>> = vec![None; self.functions.len()];
        let mut next = 0;
        for (f, slot) in func_index.iter_mut().enumerate() {
            if keep[f] {
                *slot = Some(FuncId::new(next));
                next += 1;
            }
        }
        // Kept code only names kept variables, blocks and functions.
        let var = |v: &Var| var_index[v.index()].unwrap_or(*v);
        let vars_of = |vs: &[Var]| vs.iter().map(var).collect::<Vec<_>>();
        let block = |b: Block| block_index[b.index()].unwrap_or(b);
        let func = |f: FuncId| func_index[f.index()].unwrap_or(f);
        let blocks: Vec<BlockData> = self
            .blocks
            .into_iter()
            .enumerate()
            .filter(|(i, _)| block_owner_kept[*i])
            .map(|(_, data)| BlockData {
                name: data.name,
                ops: data
                    .ops
                    .into_iter()
                    .map(|op| match op {
                        Op::Prim(p) => Op::Prim(PrimOp {
                            outs: vars_of(&p.outs),
                            ins: vars_of(&p.ins),
                            ..p
                        }),
                        Op::Call(c) => Op::Call(CallOp {
                            func: func(c.func),
                            ins: vars_of(&c.ins),
                            outs: vars_of(&c.outs),
                        }),
                        Op::Pop(vs) => Op::Pop(vars_of(&vs)),
                    })
                    .collect(),
                term: match data.term.map_blocks(block) {
                    Terminator::Branch { cond, then_, else_ } => Terminator::Branch {
                        cond: var(&cond),
                        then_,
                        else_,
                    },
                    t => t,
                },
            })
            .collect();
        let functions = self
            .functions
            .into_iter()
            .enumerate()
            .filter(|(f, _)| keep[*f])
            .map(|(_, data)| FunctionData {
                params: vars_of(&data.params),
                returns: vars_of(&data.returns),
                blocks: data.blocks.into_iter().map(block).collect(),
                name: data.name,
            })
            .collect();
        Program {
            vars: vars.into(),
            blocks: blocks.into(),
            functions,
            main: func(program.main),
            pc: var(&program.pc),
        }
    }
}

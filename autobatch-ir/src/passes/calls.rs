//! The call graph: which functions each function calls, which functions are recursive, and
//! where a lowered program enters a recursive function's body.

use crate::entity::{Block, FuncId};
use crate::program::{Op, Program};
use std::collections::HashMap;

/// The functions each function of high-level `program` calls, in order of first call,
/// without repeats.
pub(crate) fn call_graph(program: &Program) -> Vec<Vec<FuncId>> {
    program
        .functions
        .iter()
        .map(|func| {
            let mut callees: Vec<FuncId> = Vec::new();
            for &b in &func.blocks {
                for op in &program.block(b).ops {
                    if let Op::Call(c) = op {
                        if !callees.contains(&c.func) {
                            callees.push(c.func);
                        }
                    }
                }
            }
            callees
        })
        .collect()
}

/// Whether each function lies on a cycle of the call graph `calls` (calls itself, maybe
/// indirectly).
pub(crate) fn on_cycles(calls: &[Vec<FuncId>]) -> Vec<bool> {
    (0..calls.len())
        .map(|f| {
            let mut seen = vec![false; calls.len()];
            let mut stack: Vec<FuncId> = calls[f].clone();
            while let Some(g) = stack.pop() {
                if g.index() == f {
                    return true;
                }
                if !std::mem::replace(&mut seen[g.index()], true) {
                    stack.extend(calls[g.index()].iter().copied());
                }
            }
            false
        })
        .collect()
}

/// Per function of high-level `program`, by [`FuncId`] index: whether it is recursive (on a
/// cycle of the call graph, self-calls included). A lowered program has one function and no
/// calls, so none of its functions is.
pub fn recursive_functions(program: &Program) -> Vec<bool> {
    on_cycles(&call_graph(program))
}

/// The blocks of `lowered`, a program lowered from high-level `high` (and maybe simplified),
/// at which the body of each recursive function of `high` starts, with that function's id:
/// every call to it, tail calls included, enters there. Lowering keeps each entry block's
/// name (block names are unique), and [`simplify_blocks_keeping`] keeps these blocks when
/// given them; an entry no block of `lowered` is named after is left out.
///
/// [`simplify_blocks_keeping`]: crate::passes::simplify_blocks_keeping
pub fn recursive_entries(high: &Program, lowered: &Program) -> Vec<(Block, FuncId)> {
    let by_name: HashMap<&str, FuncId> = recursive_functions(high)
        .iter()
        .enumerate()
        .filter(|&(_, &r)| r)
        .map(|(f, _)| {
            let f = FuncId::new(f);
            (high.block(high.function(f).entry()).name.as_str(), f)
        })
        .collect();
    lowered
        .blocks
        .iter()
        .enumerate()
        .filter_map(|(b, data)| Some((Block::new(b), *by_name.get(data.name.as_str())?)))
        .collect()
}

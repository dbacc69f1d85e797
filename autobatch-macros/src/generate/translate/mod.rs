//! AST -> a recorded construction of the function's IR ([`Record`]), one file per construct
//! family: names and scopes (`scope`), kernels and if-conversion (`kernel`; of `if`
//! statements that only assign, `assigning_if`), expressions (`expr`), `let` patterns (`pattern`), assignments (`assign`), calls (`call`), control
//! flow (`control`) and `for` loops and loop labels (`loops`).
//!
//! Types come from the inference pass ([`LetTypes`]), which runs before: the translation runs
//! once.

mod assign;
mod assigning_if;
mod call;
mod control;
mod expr;
mod kernel;
mod loops;
mod pattern;
mod record;
mod scope;

pub use record::{CalleeSpec, KernelSpec, LocalVar, Record, Step};

use super::infer::function::LetTypes;
use crate::parse::ast::{Func, Label, Ty};
use crate::parse::Errors;
use std::collections::{HashMap, HashSet};

/// What compiling an expression yields.
enum Value {
    /// A value in a variable; `fresh` if no name refers to it yet.
    Var { var: usize, ty: Ty, fresh: bool },
    /// `()`.
    Unit,
    /// Control never gets here.
    Diverged,
}

/// Where a value is to be stored.
#[derive(Clone)]
enum Dest {
    /// One variable of the value's type.
    Var(usize),
    /// One variable per top-level element of a tuple value: the return variables of a function
    /// returning a tuple, the names of a `let` tuple pattern, a call's outputs.
    Elems(Vec<usize>),
}

impl Dest {
    /// The variables written, in order (their leaves are the value's leaves).
    fn vars(&self) -> Vec<usize> {
        match self {
            Dest::Var(v) => vec![*v],
            Dest::Elems(vs) => vs.clone(),
        }
    }
}

/// A loop being translated: its label, where `continue` and `break` go (made when first
/// needed, if not given), and its `break` value.
struct LoopCtx {
    label: Option<Label>,
    continue_to: Option<usize>,
    break_to: Option<usize>,
    result: Option<(usize, Ty)>,
}

/// The translation's state.
struct Translator<'a> {
    func: &'a Func,
    out: Record,
    scopes: Vec<Vec<(String, usize)>>,
    current: Option<usize>,
    loops: Vec<LoopCtx>,
    ret_block: usize,
    used_names: HashMap<String, usize>,
    /// Every variable and block name handed out (a base's `name.k` may be another's name).
    taken: HashSet<String>,
    errors: &'a mut Errors,
    /// The types inference fixed for unannotated `let`s.
    lets: &'a LetTypes,
    /// Names whose binding failed (already reported): uses stay silent.
    poisoned: Vec<String>,
}

/// Translates `func`, with the `let` types `lets` inferred for it, recording its IR; errors go
/// to `errors`.
pub fn translate(func: &Func, lets: &LetTypes, errors: &mut Errors) -> Record {
    let mut l = Translator {
        func,
        out: Record {
            vars: Vec::new(),
            blocks: Vec::new(),
            steps: Vec::new(),
            kernels: Vec::new(),
            callees: Vec::new(),
            params: Vec::new(),
            returns: Vec::new(),
        },
        scopes: vec![Vec::new()],
        current: None,
        loops: Vec::new(),
        ret_block: 0,
        used_names: HashMap::new(),
        taken: HashSet::new(),
        errors,
        lets,
        poisoned: func.poisoned.clone(),
    };
    let entry = l.new_block("entry");
    l.current = Some(entry);
    for (name, ty) in &func.params {
        let v = l.new_var(&name.to_string(), ty.clone());
        l.bind(name.to_string(), v);
        l.out.params.push(v);
    }
    // A tuple result is one return variable per element (`ret.0`, `ret.1`, ..): `return (a, b)`
    // writes each element straight into its own, and a call binds them to its outputs.
    match &func.ret {
        Ty::Tuple(items) => {
            for (i, t) in items.iter().enumerate() {
                let r = l.new_var(&format!("ret.{i}"), t.clone());
                l.out.returns.push(r);
            }
        }
        t => {
            let r = l.new_var("ret", t.clone());
            l.out.returns.push(r);
        }
    }
    l.ret_block = l.new_block("return");
    l.out.steps.push(Step::Ret(l.ret_block));
    let target = l.return_dest();
    l.block_into(&func.body, target.as_ref(), &func.ret);
    if let Some(cur) = l.current {
        l.out.steps.push(Step::Goto(cur, l.ret_block));
    }
    l.out
}

#[cfg(test)]
mod tests;

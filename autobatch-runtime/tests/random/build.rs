//! Builds a random program's description into a `Program` and its kernel table through the
//! public builder, resolving every operand against the variables in scope (a constant when
//! none has the type), so every description is a valid program that terminates.

use super::prims::{Prim, Ty};
use super::spec::{FuncSpec, Sharing, Spec, Stmt};
use autobatch_runtime::ir::{Block, FuncId, HighProgram, KernelId, ProgramBuilder, Var};
use autobatch_runtime::Kernel;
use std::collections::HashMap;

/// The most calls one lane may make (the entry's recursion counter is clamped to keep under it).
const CALL_BUDGET: u64 = 1000;
/// The deepest recursion the clamp allows.
const DEPTH_MAX: i64 = 60;

/// A built program.
pub struct Built {
    /// The program.
    pub program: HighProgram,
    /// Its kernels, by id.
    pub kernels: Vec<Kernel>,
}

/// A variable in scope: readable always, overwritable unless it is a recursion or loop counter.
#[derive(Clone, Copy, PartialEq, Eq)]
struct InScope {
    var: Var,
    ty: Ty,
    writable: bool,
}

type Scope = Vec<InScope>;

struct Builder<'s> {
    b: ProgramBuilder,
    spec: &'s Spec,
    len: usize,
    funcs: Vec<FuncId>,
    /// Per function: counter, parameters, returns.
    sigs: Vec<(Var, Vec<Var>, Vec<Var>)>,
    named: HashMap<String, Var>,
    kernels: Vec<Kernel>,
    kernel_ids: HashMap<(Prim, bool), KernelId>,
    fresh: usize,
    cap: i64,
}

/// The function being built.
struct Current {
    index: usize,
    name: String,
    /// Loops around the statement being built.
    loops: std::cell::Cell<usize>,
    /// Calls built so far.
    calls: std::cell::Cell<usize>,
}

impl Current {
    /// Whether a call may be built here (see [`Spec::linear`]); counts it if so.
    fn may_call(&self, linear: bool) -> bool {
        let ok = !linear || (self.loops.get() == 0 && self.calls.get() == 0);
        if ok {
            self.calls.set(self.calls.get() + 1);
        }
        ok
    }
}

/// Builds `spec` for runs whose vectors have length `len`.
pub fn build(spec: &Spec, len: usize) -> Built {
    let mut b = Builder {
        b: ProgramBuilder::new(),
        spec,
        len,
        funcs: Vec::new(),
        sigs: Vec::new(),
        named: HashMap::new(),
        kernels: Vec::new(),
        kernel_ids: HashMap::new(),
        fresh: 0,
        cap: recursion_cap(spec),
    };
    for i in 0..spec.funcs.len() {
        let name = func_name(i);
        let f = b.b.function(&name);
        b.funcs.push(f);
    }
    for (i, f) in spec.funcs.iter().enumerate() {
        let own = format!("{}.", func_name(i));
        let (params_of, returns_of) = match spec.sharing {
            Sharing::Nothing => (own.as_str(), own.as_str()),
            Sharing::Returns => (own.as_str(), ""),
            Sharing::Everything => ("", ""),
        };
        let counter = b.named_var(&format!("{params_of}n"), Ty::Int);
        let params: Vec<Var> = (f.params.iter().enumerate())
            .map(|(j, &t)| b.named_var(&format!("{params_of}p{j}{}", t.short()), t))
            .collect();
        let rets: Vec<Var> = (f.returns.iter().enumerate())
            .map(|(j, &t)| b.named_var(&format!("{returns_of}r{j}{}", t.short()), t))
            .collect();
        let all: Vec<Var> = std::iter::once(counter).chain(params.clone()).collect();
        b.b.signature(b.funcs[i], &all, &rets);
        b.sigs.push((counter, params, rets));
    }
    for i in 0..spec.funcs.len() {
        b.function(i);
    }
    let main = b.funcs[0];
    let program = b.b.finish(main).expect("a random program is valid");
    Built {
        program,
        kernels: b.kernels,
    }
}

fn func_name(i: usize) -> String {
    if i == 0 {
        "main".to_string()
    } else {
        format!("f{i}")
    }
}

/// Calls per level: the most calls one activation of a function makes (loops multiply).
fn calls(stmts: &[Stmt], times: u64, linear: bool) -> u64 {
    if linear {
        return 1;
    }
    stmts
        .iter()
        .map(|s| match s {
            Stmt::Call { .. } | Stmt::TailCall { .. } => times,
            Stmt::If(_, t, e) => calls(t, times, false) + calls(e, times, false),
            Stmt::Loop { max, body, .. } => calls(body, times * *max as u64, false),
            _ => 0,
        })
        .sum()
}

/// The largest recursion counter the entry may pass on so that a lane makes at most
/// [`CALL_BUDGET`] calls.
fn recursion_cap(spec: &Spec) -> i64 {
    let entry = calls(&spec.funcs[0].body, 1, spec.linear);
    let fanout = spec.funcs[1..]
        .iter()
        .map(|f| calls(&f.body, 1, spec.linear))
        .max()
        .unwrap_or(0);
    let mut cap = 0;
    // Calls with counter up to `c`: entry * (1 + fanout + ... + fanout^(c + 1)).
    let (mut level, mut total) = (entry, entry);
    while cap < DEPTH_MAX {
        level = level.saturating_mul(fanout);
        total = total.saturating_add(level);
        if total > CALL_BUDGET {
            break;
        }
        cap += 1;
    }
    cap
}

impl Builder<'_> {
    fn named_var(&mut self, name: &str, t: Ty) -> Var {
        if let Some(&v) = self.named.get(name) {
            return v;
        }
        let v = self.b.var(name, t.ir());
        self.named.insert(name.to_string(), v);
        v
    }

    fn fresh_var(&mut self, f: &Current, t: Ty) -> Var {
        self.fresh += 1;
        self.b
            .var(&format!("{}.{}{}", f.name, t.short(), self.fresh), t.ir())
    }

    fn block(&mut self, f: &Current) -> Block {
        self.fresh += 1;
        self.b
            .block(self.funcs[f.index], &format!("{}.l{}", f.name, self.fresh))
    }

    fn kernel(&mut self, prim: Prim, batched: bool) -> KernelId {
        if let Some(&id) = self.kernel_ids.get(&(prim, batched)) {
            return id;
        }
        let id = KernelId::new(self.kernels.len());
        self.kernels.push(prim.kernel(batched, self.len));
        self.kernel_ids.insert((prim, batched), id);
        id
    }

    fn prim(&mut self, at: Block, prim: Prim, batched: bool, outs: &[Var], ins: &[Var]) {
        let id = self.kernel(prim, batched);
        let source = if batched {
            format!("batched {prim:?}")
        } else {
            format!("{prim:?}")
        };
        self.b.prim(at, outs, ins, id, &source);
    }

    /// The variable operand `i` of type `t` names, or a new constant.
    fn operand(&mut self, f: &Current, at: Block, scope: &Scope, t: Ty, i: u8) -> Var {
        let of: Vec<Var> = scope.iter().filter(|s| s.ty == t).map(|s| s.var).collect();
        if !of.is_empty() {
            return of[i as usize % of.len()];
        }
        let v = self.fresh_var(f, t);
        match Prim::constant(t) {
            Some(prim) => {
                let ins = self.operands(f, at, scope, &prim.sig().0, &[i]);
                self.prim(at, prim, false, &[v], &ins);
            }
            None => {
                let ins = self.operands(f, at, scope, &[Ty::Int, Ty::Float], &[i, i]);
                self.b.assign(at, &[v], &ins);
            }
        }
        v
    }

    fn operands(
        &mut self,
        f: &Current,
        at: Block,
        scope: &Scope,
        types: &[Ty],
        idx: &[u8],
    ) -> Vec<Var> {
        (types.iter().enumerate())
            .map(|(j, &t)| {
                let i = idx.get(j).copied().unwrap_or(0);
                self.operand(f, at, scope, t, i)
            })
            .collect()
    }

    /// Targets for writing values of `types`: the writable variables the indices name (`None`:
    /// a new variable), each at most once; new variables are added to `scope`.
    fn targets(
        &mut self,
        f: &Current,
        scope: &mut Scope,
        types: &[Ty],
        idx: &[Option<u8>],
    ) -> Vec<Var> {
        let mut outs: Vec<Var> = Vec::new();
        for (j, &t) in types.iter().enumerate() {
            let of: Vec<Var> = (scope.iter())
                .filter(|s| s.ty == t && s.writable && !outs.contains(&s.var))
                .map(|s| s.var)
                .collect();
            let v = match idx.get(j).copied().flatten() {
                Some(i) if !of.is_empty() => of[i as usize % of.len()],
                _ => {
                    let v = self.fresh_var(f, t);
                    scope.push(InScope {
                        var: v,
                        ty: t,
                        writable: true,
                    });
                    v
                }
            };
            outs.push(v);
        }
        outs
    }

    fn function(&mut self, index: usize) {
        let spec: &FuncSpec = &self.spec.funcs[index];
        let f = Current {
            index,
            name: func_name(index),
            loops: Default::default(),
            calls: Default::default(),
        };
        let (counter, params, _) = self.sigs[index].clone();
        let mut scope: Scope = vec![InScope {
            var: counter,
            ty: Ty::Int,
            // The entry's counter is clamped at every call; a callee's must only decrease.
            writable: index == 0,
        }];
        scope.extend(params.iter().zip(&spec.params).map(|(&var, &ty)| InScope {
            var,
            ty,
            writable: true,
        }));
        let entry = self.block(&f);
        let body = if index == 0 {
            entry
        } else {
            let stop = self.fresh_var(&f, Ty::Bool);
            self.prim(entry, Prim::NotPositive, false, &[stop], &[counter]);
            let base = self.block(&f);
            let body = self.block(&f);
            self.b.branch(entry, stop, base, body);
            self.ret(&f, base, &scope, &spec.base);
            body
        };
        if let Some((end, scope)) = self.stmts(&f, body, scope, &spec.body) {
            self.ret(&f, end, &scope, &spec.tail);
        }
    }

    /// Writes the results from operands and returns.
    fn ret(&mut self, f: &Current, at: Block, scope: &Scope, idx: &[u8]) {
        let rets = self.sigs[f.index].2.clone();
        let types = self.spec.funcs[f.index].returns.clone();
        let srcs = self.operands(f, at, scope, &types, idx);
        self.b.assign(at, &rets, &srcs);
        self.b.ret(at);
    }

    /// The callee operand `i` names among the non-entry functions whose results have `types`
    /// (any, if `None`).
    fn callee(&self, i: u8, types: Option<&[Ty]>) -> Option<usize> {
        let fit: Vec<usize> = (1..self.spec.funcs.len())
            .filter(|&g| types.is_none_or(|t| self.spec.funcs[g].returns == t))
            .collect();
        (!fit.is_empty()).then(|| fit[i as usize % fit.len()])
    }

    /// The arguments of a call to `g`: its counter, then its parameters.
    fn call_args(
        &mut self,
        f: &Current,
        at: Block,
        scope: &Scope,
        g: usize,
        args: &[u8],
        dec: u8,
    ) -> Vec<Var> {
        let counter = self.sigs[f.index].0;
        let n = self.fresh_var(f, Ty::Int);
        let step = if f.index == 0 {
            Prim::Clamp(self.cap)
        } else {
            Prim::Dec(dec)
        };
        self.prim(at, step, false, &[n], &[counter]);
        let types = self.spec.funcs[g].params.clone();
        let mut ins = vec![n];
        ins.extend(self.operands(f, at, scope, &types, args));
        ins
    }

    /// Emits `stmts` from block `at`; the block and scope where control falls through, if it
    /// does.
    fn stmts(
        &mut self,
        f: &Current,
        mut at: Block,
        mut scope: Scope,
        stmts: &[Stmt],
    ) -> Option<(Block, Scope)> {
        for s in stmts {
            match s {
                Stmt::Let { prim, ins, batched } => {
                    let (tin, tout) = prim.sig();
                    let ins = self.operands(f, at, &scope, &tin, ins);
                    let outs = self.targets(f, &mut scope, &tout, &[]);
                    self.prim(at, *prim, *batched, &outs, &ins);
                }
                Stmt::Set {
                    prim,
                    ins,
                    outs,
                    batched,
                } => {
                    let (tin, tout) = prim.sig();
                    let ins = self.operands(f, at, &scope, &tin, ins);
                    let idx: Vec<Option<u8>> = outs.iter().map(|&i| Some(i)).collect();
                    let outs = self.targets(f, &mut scope, &tout, &idx);
                    self.prim(at, *prim, *batched, &outs, &ins);
                }
                Stmt::Pack(i, x) => {
                    let ins = self.operands(f, at, &scope, &[Ty::Int, Ty::Float], &[*i, *x]);
                    let outs = self.targets(f, &mut scope, &[Ty::Pair], &[]);
                    self.b.assign(at, &outs, &ins);
                }
                Stmt::Unpack(t, outs) => {
                    let pair = self.operand(f, at, &scope, Ty::Pair, *t);
                    let outs = self.targets(f, &mut scope, &[Ty::Int, Ty::Float], outs);
                    self.b.assign(at, &outs, &[pair]);
                }
                Stmt::Copy(pairs) => {
                    let (mut outs, mut ins) = (Vec::new(), Vec::new());
                    for &(t, s, ty) in pairs {
                        let of: Vec<Var> = (scope.iter())
                            .filter(|v| v.ty == ty && v.writable && !outs.contains(&v.var))
                            .map(|v| v.var)
                            .collect();
                        if of.is_empty() {
                            continue;
                        }
                        outs.push(of[t as usize % of.len()]);
                        ins.push(self.operand(f, at, &scope, ty, s));
                    }
                    if !outs.is_empty() {
                        self.b.assign(at, &outs, &ins);
                    }
                }
                Stmt::Call {
                    func,
                    args,
                    outs,
                    dec,
                } => {
                    let Some(g) = self.callee(*func, None) else {
                        continue;
                    };
                    if !f.may_call(self.spec.linear) {
                        continue;
                    }
                    let ins = self.call_args(f, at, &scope, g, args, *dec);
                    let types = self.spec.funcs[g].returns.clone();
                    let outs = self.targets(f, &mut scope, &types, outs);
                    self.b.call(at, self.funcs[g], &ins, &outs);
                }
                Stmt::If(c, then_, else_) => {
                    let cond = self.operand(f, at, &scope, Ty::Bool, *c);
                    let (t, e) = (self.block(f), self.block(f));
                    self.b.branch(at, cond, t, e);
                    let ends: Vec<(Block, Scope)> = [(t, then_), (e, else_)]
                        .into_iter()
                        .filter_map(|(b, body)| self.stmts(f, b, scope.clone(), body))
                        .collect();
                    if ends.is_empty() {
                        return None;
                    }
                    let join = self.block(f);
                    for (end, _) in &ends {
                        self.b.goto(*end, join);
                    }
                    // What both arms define (or the one arm that falls through) stays in scope.
                    scope = ends[0].1.clone();
                    for (_, other) in &ends[1..] {
                        scope.retain(|v| other.contains(v));
                    }
                    at = join;
                }
                Stmt::Loop { count, max, body } => {
                    let n = self.operand(f, at, &scope, Ty::Int, *count);
                    let c = self.fresh_var(f, Ty::Int);
                    self.prim(at, Prim::TripCount(*max), false, &[c], &[n]);
                    let head = self.block(f);
                    self.b.goto(at, head);
                    let go = self.fresh_var(f, Ty::Bool);
                    self.prim(head, Prim::Positive, false, &[go], &[c]);
                    let (inner, exit) = (self.block(f), self.block(f));
                    self.b.branch(head, go, inner, exit);
                    self.prim(inner, Prim::Dec(1), false, &[c], &[c]);
                    let counter = InScope {
                        var: c,
                        ty: Ty::Int,
                        writable: false,
                    };
                    let mut in_body = scope.clone();
                    in_body.push(counter);
                    f.loops.set(f.loops.get() + 1);
                    if let Some((end, _)) = self.stmts(f, inner, in_body, body) {
                        self.b.goto(end, head);
                    }
                    f.loops.set(f.loops.get() - 1);
                    scope.push(counter);
                    at = exit;
                }
                Stmt::Return(idx) => {
                    self.ret(f, at, &scope, idx);
                    return None;
                }
                Stmt::TailCall { func, args, dec } => {
                    let returns = self.spec.funcs[f.index].returns.clone();
                    match self.callee(*func, Some(&returns)) {
                        Some(g) if f.may_call(self.spec.linear) => {
                            let ins = self.call_args(f, at, &scope, g, args, *dec);
                            let rets = self.sigs[f.index].2.clone();
                            self.b.call(at, self.funcs[g], &ins, &rets);
                            self.b.ret(at);
                        }
                        _ => self.ret(f, at, &scope, args),
                    }
                    return None;
                }
            }
        }
        Some((at, scope))
    }
}

//! AST -> a recorded construction of the function's IR (variables, blocks, ops, kernels).
//!
//! The record is replayed twice: into `autobatch_ir` at compile time (for the allocation
//! analysis and the printed program) and into the generated code that rebuilds the same IR
//! when the program is linked. One record, two replays, so the two cannot diverge.

use super::infer::{describe, infer, path_text, unknown_variable, Scope};
use crate::parse::ast::{BinOp, Block, Expr, ExprKind, Func, Pat, Stmt, Ty};
use crate::parse::Errors;
use autobatch_ir::DType;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};

/// A variable of the function.
pub struct LocalVar {
    /// Name within the function (unique).
    pub name: String,
    /// Its type.
    pub ty: Ty,
}

/// A lane-wise kernel: the body evaluated per lane with its inputs bound by name.
pub struct KernelSpec {
    /// `(binding, variable)` for each input, in order.
    pub inputs: Vec<(Ident, usize)>,
    /// The Rust expression computing the output value.
    pub body: TokenStream,
    /// The type of the body's value (the outputs' leaves, in order).
    pub out_ty: Ty,
    /// Where it came from, for errors.
    pub span: Span,
}

/// A function called by this one.
pub struct CalleeSpec {
    /// The path as written at the call.
    pub path: syn::Path,
    /// True for a call to the function itself.
    pub is_self: bool,
    /// Argument types at the call.
    pub params: Vec<Ty>,
    /// Which arguments were passed by shared reference (`&x`).
    pub by_ref: Vec<bool>,
    /// The result type at the call.
    pub ret: Ty,
    /// The first call's span.
    pub span: Span,
}

/// One IR construction step (indices are local: variables, blocks, kernels, callees).
pub enum Step {
    /// `outs = kernel(ins)`.
    Prim {
        block: usize,
        outs: Vec<usize>,
        ins: Vec<usize>,
        kernel: usize,
        source: String,
    },
    /// `outs = ins` (the built-in copy).
    Assign {
        block: usize,
        outs: Vec<usize>,
        ins: Vec<usize>,
    },
    /// `outs = call(callee, ins)`.
    Call {
        block: usize,
        callee: usize,
        ins: Vec<usize>,
        outs: Vec<usize>,
    },
    /// `goto(target)`.
    Goto(usize, usize),
    /// `branch(cond, then, else)`.
    Branch(usize, usize, usize, usize),
    /// `return`.
    Ret(usize),
}

/// The recorded function.
pub struct Lowered {
    /// Variables.
    pub vars: Vec<LocalVar>,
    /// Block names, in order (block 0 is the entry).
    pub blocks: Vec<String>,
    /// Construction steps in order.
    pub steps: Vec<Step>,
    /// Kernels.
    pub kernels: Vec<KernelSpec>,
    /// Callees.
    pub callees: Vec<CalleeSpec>,
    /// Parameter variables.
    pub params: Vec<usize>,
    /// Return variables: one per top-level element of a tuple result, none for `()`, else one.
    pub returns: Vec<usize>,
}

enum Val {
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

struct LoopCtx {
    continue_to: usize,
    break_to: Option<usize>,
    result: Option<(usize, Ty)>,
}

struct Lowerer<'a> {
    func: &'a Func,
    out: Lowered,
    scopes: Vec<Vec<(String, usize)>>,
    current: Option<usize>,
    loops: Vec<LoopCtx>,
    ret_block: usize,
    used_names: HashMap<String, usize>,
    /// Every variable and block name handed out (a base's `name.k` may be another's name).
    taken: HashSet<String>,
    errors: &'a mut Errors,
    /// Types fixed for unannotated `let`s (by their order) by an earlier round.
    overrides: &'a HashMap<usize, Ty>,
    /// Variables bound by unannotated `let`s, with the let's order: their type follows their uses.
    flexible: HashMap<usize, usize>,
    /// Unannotated `let`s seen so far.
    lets: usize,
    /// Uses of flexible variables where another type is needed: (let order, type).
    demands: RefCell<Vec<(usize, Ty)>>,
    /// Names whose binding failed (already reported): uses stay silent.
    poisoned: Vec<String>,
}

struct ScopeView<'l, 'a>(&'l Lowerer<'a>);

impl Scope for ScopeView<'_, '_> {
    fn lookup(&self, name: &str) -> Option<Ty> {
        self.0.lookup(name).map(|v| self.0.out.vars[v].ty.clone())
    }

    fn is_poisoned(&self, name: &str) -> bool {
        self.0.poisoned.iter().any(|p| p == name)
    }

    fn callee_return(&self, path: &syn::Path) -> Option<Ty> {
        self.0.is_self_path(path).then(|| self.0.func.ret.clone())
    }

    fn demand(&self, name: &str, ty: &Ty) {
        self.0.demand_var(name, ty);
    }
}

/// The scope a kernel is typed in: notes any `if` or block inside it whose value a kernel
/// should not compute (see [`Lowerer::classify`]).
struct KernelProbe<'l, 'a> {
    view: ScopeView<'l, 'a>,
    keep_branches: Cell<bool>,
}

impl Scope for KernelProbe<'_, '_> {
    fn lookup(&self, name: &str) -> Option<Ty> {
        self.view.lookup(name)
    }

    fn is_poisoned(&self, name: &str) -> bool {
        self.view.is_poisoned(name)
    }

    fn callee_return(&self, path: &syn::Path) -> Option<Ty> {
        self.view.callee_return(path)
    }

    fn demand(&self, name: &str, ty: &Ty) {
        self.view.demand(name, ty);
    }

    fn typed_branch(&self, ty: &Ty) {
        if ty.is_unit() || ty.has_vector() {
            self.keep_branches.set(true);
        }
    }
}

/// How an expression compiles.
enum Shape {
    /// As one lane-wise kernel computing a value of this type.
    Kernel(Ty),
    /// As control flow and statements.
    ControlFlow,
    /// Not at all: its error is reported.
    Failed,
}

/// Lowers `func`, recording its IR; errors go to `errors`.
///
/// An unannotated `let` takes its type from how the variable is used later, as in Rust (where
/// `let mut steps = 0;` is an `i64` if it is returned as one): lowering runs again with the
/// types those uses demand, until they agree. Since the original function type-checks, a demand
/// only ever corrects a literal's default.
pub fn lower(func: &Func, errors: &mut Errors) -> Lowered {
    let mut overrides: HashMap<usize, Ty> = HashMap::new();
    for _round in 0..4 {
        let mut round_errors = Errors::default();
        let (lowered, demands) = lower_once(func, &mut round_errors, &overrides);
        let changed = demands.into_iter().fold(false, |changed, (v, t)| {
            let old = overrides.insert(v, t.clone());
            changed || old.as_ref() != Some(&t)
        });
        if !changed {
            errors.extend(round_errors);
            return lowered;
        }
    }
    let (lowered, _) = lower_once(func, errors, &overrides);
    lowered
}

fn lower_once(
    func: &Func,
    errors: &mut Errors,
    overrides: &HashMap<usize, Ty>,
) -> (Lowered, Vec<(usize, Ty)>) {
    let mut l = Lowerer {
        func,
        out: Lowered {
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
        overrides,
        flexible: HashMap::new(),
        lets: 0,
        demands: RefCell::new(Vec::new()),
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
    let demands = l.demands.into_inner();
    (l.out, demands)
}

/// True for an expression a lane-wise kernel can compute: no calls, assignments, loops or
/// jumps. `if`s (with an `else`) and blocks qualify when every statement in them is a `let` of
/// such an expression and their value is one; whether their type suits a kernel is decided
/// when they are compiled ([`Lowerer::classify`]).
fn is_pure(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit { .. } | ExprKind::Var(_) | ExprKind::Const(_) => true,
        ExprKind::Binary(_, _, l, r) => is_pure(l) && is_pure(r),
        ExprKind::Unary(_, x)
        | ExprKind::Cast(x, _, _)
        | ExprKind::Field(x, _)
        | ExprKind::Ref(x) => is_pure(x),
        ExprKind::Method(r, _, args) => is_pure(r) && args.iter().all(is_pure),
        ExprKind::Assoc(_, _, args) | ExprKind::Tuple(args) => args.iter().all(is_pure),
        ExprKind::If(c, then, Some(els)) => is_pure(c) && is_pure_block(then) && is_pure(els),
        ExprKind::Block(b) => is_pure_block(b),
        _ => false,
    }
}

/// A block of `let`s with pure initialisers and a pure value.
fn is_pure_block(b: &Block) -> bool {
    b.tail.as_deref().is_some_and(is_pure)
        && b.stmts
            .iter()
            .all(|s| matches!(s, Stmt::Let { init, .. } if is_pure(init)))
}

/// The direct sub-expressions of `e`, with the initialisers and values of its blocks.
fn children(e: &Expr) -> Vec<&Expr> {
    fn block_exprs(b: &Block) -> impl Iterator<Item = &Expr> {
        b.stmts
            .iter()
            .map(|s| match s {
                Stmt::Let { init, .. } => init,
                Stmt::Expr(x) => x,
            })
            .chain(b.tail.as_deref())
    }
    match &e.kind {
        ExprKind::Binary(_, _, l, r) => vec![l, r],
        ExprKind::Unary(_, x)
        | ExprKind::Cast(x, _, _)
        | ExprKind::Field(x, _)
        | ExprKind::Ref(x) => vec![x],
        ExprKind::Method(r, _, args) => std::iter::once(&**r).chain(args).collect(),
        ExprKind::Assoc(_, _, args) | ExprKind::Tuple(args) => args.iter().collect(),
        ExprKind::If(c, then, els) => std::iter::once(&**c)
            .chain(block_exprs(then))
            .chain(els.as_deref())
            .collect(),
        ExprKind::Block(b) => block_exprs(b).collect(),
        _ => Vec::new(),
    }
}

/// True if `e` has an `if` or a block in it.
fn has_branches(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::If(..) | ExprKind::Block(_))
        || children(e).into_iter().any(has_branches)
}

/// How many unannotated `let`s `e` has inside it.
fn unannotated_lets(e: &Expr) -> usize {
    let own = |b: &Block| {
        b.stmts
            .iter()
            .filter(|s| matches!(s, Stmt::Let { ty: None, .. }))
            .count()
    };
    let here = match &e.kind {
        ExprKind::If(_, then, _) => own(then),
        ExprKind::Block(b) => own(b),
        _ => 0,
    };
    here + children(e).into_iter().map(unannotated_lets).sum::<usize>()
}

/// The variables `e` reads from outside it, in order of first use: a name one of its own
/// `let`s binds is not one where that binding is in scope.
fn free_vars(e: &Expr, out: &mut Vec<Ident>) {
    free_vars_in(e, &mut Vec::new(), out);
}

/// [`free_vars`] with the names `bound` by enclosing `let`s of `e`'s own.
fn free_vars_in(e: &Expr, bound: &mut Vec<String>, out: &mut Vec<Ident>) {
    match &e.kind {
        ExprKind::Var(id) => {
            if !out.contains(id) && !bound.iter().any(|b| id == b) {
                out.push(id.clone());
            }
        }
        ExprKind::Block(b) => block_free_vars(b, bound, out),
        ExprKind::If(c, then, els) => {
            free_vars_in(c, bound, out);
            block_free_vars(then, bound, out);
            if let Some(x) = els {
                free_vars_in(x, bound, out);
            }
        }
        _ => children(e)
            .into_iter()
            .for_each(|x| free_vars_in(x, bound, out)),
    }
}

/// [`free_vars_in`] for a block: each `let`'s names are bound from the next statement to the
/// block's end.
fn block_free_vars(b: &Block, bound: &mut Vec<String>, out: &mut Vec<Ident>) {
    let outer = bound.len();
    for s in &b.stmts {
        match s {
            Stmt::Let { pat, init, .. } => {
                free_vars_in(init, bound, out);
                bound.extend(pat.names());
            }
            Stmt::Expr(x) => free_vars_in(x, bound, out),
        }
    }
    if let Some(tail) = &b.tail {
        free_vars_in(tail, bound, out);
    }
    bound.truncate(outer);
}

fn source_text(tokens: &TokenStream) -> String {
    tokens.to_string()
}

impl<'a> Lowerer<'a> {
    fn is_self_path(&self, p: &syn::Path) -> bool {
        p.get_ident().is_some_and(|i| *i == self.func.name)
    }

    fn demand_var(&self, name: &str, ty: &Ty) {
        if let Some(v) = self.lookup(name) {
            self.demand(v, ty);
        }
    }

    fn demand(&self, v: usize, ty: &Ty) {
        if let Some(&order) = self.flexible.get(&v) {
            if self.out.vars[v].ty != *ty {
                self.demands.borrow_mut().push((order, ty.clone()));
            }
        }
    }

    fn lookup(&self, name: &str) -> Option<usize> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.iter().rev().find(|(n, _)| n == name).map(|(_, v)| *v))
    }

    fn bind(&mut self, name: String, var: usize) {
        self.scopes.last_mut().expect("a scope").push((name, var));
    }

    /// A fresh name: `base` the first time, then `base.1`, `base.2`, .., skipping names
    /// already handed out (another base's, such as the return variable `ret.1`).
    fn unique(&mut self, base: &str) -> String {
        loop {
            let n = self.used_names.entry(base.to_string()).or_insert(0);
            *n += 1;
            let name = if *n == 1 {
                base.to_string()
            } else {
                format!("{base}.{}", *n - 1)
            };
            if self.taken.insert(name.clone()) {
                return name;
            }
        }
    }

    /// Where the function's result goes: its return variable, one per element for a tuple,
    /// none for `()`.
    fn return_dest(&self) -> Option<Dest> {
        match &self.func.ret {
            Ty::Tuple(items) if items.is_empty() => None,
            Ty::Tuple(_) => Some(Dest::Elems(self.out.returns.clone())),
            _ => self.out.returns.first().map(|&r| Dest::Var(r)),
        }
    }

    /// The type of the value `dest` holds.
    fn dest_ty(&self, dest: &Dest) -> Ty {
        match dest {
            Dest::Var(v) => self.out.vars[*v].ty.clone(),
            Dest::Elems(vs) => Ty::Tuple(vs.iter().map(|&v| self.out.vars[v].ty.clone()).collect()),
        }
    }

    fn new_var(&mut self, base: &str, ty: Ty) -> usize {
        let name = self.unique(base);
        self.out.vars.push(LocalVar { name, ty });
        self.out.vars.len() - 1
    }

    fn new_block(&mut self, base: &str) -> usize {
        let name = self.unique(&format!("@{base}"));
        self.out
            .blocks
            .push(name.trim_start_matches('@').to_string());
        self.out.blocks.len() - 1
    }

    /// Decides how `e` compiles. A pure expression is one lane-wise kernel, `if`s and blocks in
    /// it included: the user's Rust runs per active lane and takes the branch it takes in the
    /// scalar function, nothing else. An `if` or block whose value is `()` or holds a `Vector`
    /// stays control flow (its branches mostly move vectors between variables, which the
    /// built-in assignment does by handle while a kernel would copy every element), and so does
    /// one this inference cannot type: the control-flow lowering reports its errors, or
    /// re-types the variables it uses so that a later round can convert it.
    fn classify(&mut self, e: &Expr, expected: Option<&Ty>) -> Shape {
        if !is_pure(e) {
            return Shape::ControlFlow;
        }
        let probe = KernelProbe {
            view: ScopeView(self),
            keep_branches: Cell::new(false),
        };
        let typed = infer(e, expected, &probe);
        match (typed, probe.keep_branches.get()) {
            (Ok(ty), false) => {
                // The `let`s inside are not lowered, but count them as if they were, so the
                // order that keys the types fixed between rounds is the same either way.
                self.lets += unannotated_lets(e);
                Shape::Kernel(ty)
            }
            (Ok(_), true) => Shape::ControlFlow,
            (Err(_), _) if has_branches(e) => Shape::ControlFlow,
            (Err(te), _) => {
                if !te.message.is_empty() {
                    self.errors.at(te.span, te.message);
                }
                Shape::Failed
            }
        }
    }

    /// Reports an unknown variable unless its binding already failed.
    fn unknown(&mut self, id: &Ident) {
        if !self.poisoned.iter().any(|p| *id == p) {
            self.errors.at(id.span(), unknown_variable(id));
        }
    }

    /// Marks every name a pattern binds as poisoned (its initialiser failed).
    fn poison(&mut self, pat: &Pat) {
        match pat {
            Pat::Ident(id) => self.poisoned.push(id.to_string()),
            Pat::Tuple(ps) => ps.iter().for_each(|p| self.poison(p)),
            Pat::Wild => {}
        }
    }

    fn goto(&mut self, target: usize) {
        if let Some(cur) = self.current.take() {
            self.out.steps.push(Step::Goto(cur, target));
        }
    }

    /// Emits `outs = <pure e>` as a lane-wise kernel.
    fn prim_pure(&mut self, outs: Vec<usize>, e: &Expr, ty: Ty) {
        let Some(block) = self.current else { return };
        if let Some(ins) = self.copy_sources(e, &ty) {
            self.out.steps.push(Step::Assign { block, outs, ins });
            return;
        }
        // A tuple that mostly moves variables: compute the other elements into temporaries,
        // then assemble the tuple with one assignment.
        if let (ExprKind::Tuple(items), Ty::Tuple(tys), [_]) = (&e.kind, &ty, outs.as_slice()) {
            if items.len() == tys.len()
                && items
                    .iter()
                    .zip(tys)
                    .any(|(i, t)| self.copy_sources(i, t).is_some())
            {
                let mut ins = Vec::new();
                for (item, t) in items.iter().zip(tys) {
                    match self.copy_sources(item, t) {
                        Some(vars) => ins.extend(vars),
                        None => {
                            let tmp = self.new_var("t", t.clone());
                            self.prim_pure(vec![tmp], item, t.clone());
                            ins.push(tmp);
                        }
                    }
                }
                self.out.steps.push(Step::Assign { block, outs, ins });
                return;
            }
        }
        let mut names = Vec::new();
        free_vars(e, &mut names);
        let mut inputs = Vec::new();
        for id in names {
            match self.lookup(&id.to_string()) {
                Some(v) => inputs.push((id, v)),
                None => self.unknown(&id),
            }
        }
        self.push_kernel(
            block,
            outs,
            inputs,
            e.tokens.clone(),
            ty,
            e.span,
            source_text(&e.tokens),
        );
    }

    /// The variables a pure expression merely copies, leaf for leaf, when it is made only of
    /// variables, `.clone()`s of them, tuples of those and blocks holding nothing but one of
    /// those (`{ x }` is, `(q.clone(), p, 1)` is not): such an expression compiles to the
    /// built-in assignment (one row copy per leaf) instead of a kernel that rebuilds every value.
    fn copy_sources(&self, e: &Expr, ty: &Ty) -> Option<Vec<usize>> {
        fn collect(l: &Lowerer, e: &Expr, out: &mut Vec<usize>) -> Option<Ty> {
            match &e.kind {
                ExprKind::Var(id) => {
                    let v = l.lookup(&id.to_string())?;
                    out.push(v);
                    Some(l.out.vars[v].ty.clone())
                }
                ExprKind::Method(recv, name, args) if name == "clone" && args.is_empty() => {
                    collect(l, recv, out)
                }
                ExprKind::Block(b) if b.stmts.is_empty() => collect(l, b.tail.as_deref()?, out),
                ExprKind::Tuple(items) => items
                    .iter()
                    .map(|item| collect(l, item, out))
                    .collect::<Option<Vec<Ty>>>()
                    .map(Ty::Tuple),
                _ => None,
            }
        }
        let mut ins = Vec::new();
        (collect(self, e, &mut ins)? == *ty).then_some(ins)
    }

    #[allow(clippy::too_many_arguments)]
    fn push_kernel(
        &mut self,
        block: usize,
        outs: Vec<usize>,
        inputs: Vec<(Ident, usize)>,
        body: TokenStream,
        out_ty: Ty,
        span: Span,
        source: String,
    ) {
        let ins = inputs.iter().map(|(_, v)| *v).collect();
        self.out.kernels.push(KernelSpec {
            inputs,
            body,
            out_ty,
            span,
        });
        let kernel = self.out.kernels.len() - 1;
        self.out.steps.push(Step::Prim {
            block,
            outs,
            ins,
            kernel,
            source,
        });
    }

    fn assign(&mut self, target: usize, source: usize) {
        if target == source {
            return;
        }
        if let Some(block) = self.current {
            self.out.steps.push(Step::Assign {
                block,
                outs: vec![target],
                ins: vec![source],
            });
        }
    }

    /// Stores the value of variable `source` in `dest`: one built-in assignment, which spreads
    /// a tuple over element variables leaf by leaf.
    fn assign_to(&mut self, dest: &Dest, source: usize) {
        match dest {
            Dest::Var(t) => self.assign(*t, source),
            Dest::Elems(vs) => {
                if let Some(block) = self.current {
                    self.out.steps.push(Step::Assign {
                        block,
                        outs: vs.clone(),
                        ins: vec![source],
                    });
                }
            }
        }
    }

    /// Compiles the elements of a tuple expression, in order, each straight into its own
    /// variable of `targets`. Elements that merely copy variables become one built-in
    /// assignment, emitted after the others unless an element that may write a variable (a
    /// call, an assignment, control flow) comes between, which first takes the copies so far.
    fn tuple_into(&mut self, items: &[Expr], targets: &[usize], tys: &[Ty]) {
        let mut outs = Vec::new();
        let mut ins = Vec::new();
        for ((item, &target), ty) in items.iter().zip(targets).zip(tys) {
            if let ExprKind::Var(id) = &item.kind {
                self.demand_var(&id.to_string(), ty);
            }
            if let Some(sources) = self.copy_sources(item, ty) {
                outs.push(target);
                ins.extend(sources);
                continue;
            }
            if !is_pure(item) {
                self.copies(&mut outs, &mut ins);
            }
            self.compile_into(item, &Dest::Var(target), ty);
        }
        self.copies(&mut outs, &mut ins);
    }

    /// Emits the pending copies `outs = ins` of [`Lowerer::tuple_into`] as one assignment.
    fn copies(&mut self, outs: &mut Vec<usize>, ins: &mut Vec<usize>) {
        if outs.is_empty() {
            return;
        }
        let (outs, ins) = (std::mem::take(outs), std::mem::take(ins));
        if let Some(block) = self.current {
            self.out.steps.push(Step::Assign { block, outs, ins });
        }
    }

    /// Compiles `e` for its value.
    fn compile(&mut self, e: &Expr, expected: Option<&Ty>) -> Val {
        if self.current.is_none() {
            return Val::Diverged;
        }
        if let ExprKind::Var(id) = &e.kind {
            return match self.lookup(&id.to_string()) {
                Some(v) => Val::Var {
                    var: v,
                    ty: self.out.vars[v].ty.clone(),
                    fresh: false,
                },
                None => {
                    self.unknown(id);
                    Val::Unit
                }
            };
        }
        if let ExprKind::Invalid = &e.kind {
            return Val::Unit;
        }
        match self.classify(e, expected) {
            Shape::Kernel(ty) => {
                let t = self.new_var("t", ty.clone());
                self.prim_pure(vec![t], e, ty.clone());
                return Val::Var {
                    var: t,
                    ty,
                    fresh: true,
                };
            }
            Shape::Failed => return Val::Unit,
            Shape::ControlFlow => {}
        }
        match &e.kind {
            ExprKind::Call(path, args) => self.call(e, path, args, expected, None),
            ExprKind::If(c, t, el) => self.if_(c, t, el.as_deref(), expected, None),
            ExprKind::Block(b) => {
                self.scopes.push(Vec::new());
                let v = self.block_value(b, expected);
                self.scopes.pop();
                v
            }
            ExprKind::While(c, body) => self.while_(c, body),
            ExprKind::Loop(body) => self.loop_(body, expected),
            ExprKind::Break(v) => self.break_(e, v.as_deref()),
            ExprKind::Continue => {
                match self.loops.last() {
                    Some(l) => {
                        let to = l.continue_to;
                        self.goto(to);
                    }
                    None => self.errors.at(e.span, "`continue` outside a loop"),
                }
                Val::Diverged
            }
            ExprKind::Return(v) => {
                match (v, self.return_dest()) {
                    (Some(v), Some(r)) => {
                        let ty = self.func.ret.clone();
                        self.compile_into(v, &r, &ty);
                    }
                    (Some(v), None) => {
                        self.compile(v, Some(&Ty::unit()));
                    }
                    (None, _) => {}
                }
                let rb = self.ret_block;
                self.goto(rb);
                Val::Diverged
            }
            ExprKind::Assign(target, value, op) => {
                self.assign_stmt(e, target, value, op.as_ref());
                Val::Unit
            }
            ExprKind::Binary(BinOp::And | BinOp::Or, _, l, r) => self.short_circuit(e, l, r),
            _ => self.mixed(e, expected),
        }
    }

    /// Compiles `e` so its value (of type `ty`) lands in `dest`. Into element variables, a
    /// tuple expression compiles each element into its own ([`Lowerer::tuple_into`]), a call
    /// takes them as its outputs, `if`s and blocks pass them on to their values, and any other
    /// value is spread over them by one assignment.
    fn compile_into(&mut self, e: &Expr, dest: &Dest, ty: &Ty) {
        if self.current.is_none() {
            return;
        }
        // A tuple expression into element variables: each element on its own (a pure one as
        // its own kernel, which fusion joins with its neighbours).
        if let (Dest::Elems(vs), ExprKind::Tuple(items), Ty::Tuple(tys)) = (dest, &e.kind, ty) {
            if items.len() == vs.len() && tys.len() == vs.len() {
                self.tuple_into(items, vs, tys);
                return;
            }
        }
        match &e.kind {
            ExprKind::Invalid => return,
            ExprKind::Var(id) => self.demand_var(&id.to_string(), ty),
            _ => match self.classify(e, Some(ty)) {
                Shape::Kernel(t) => {
                    if t != *ty {
                        self.errors.at(
                            e.span,
                            format!("expected {}, found {}", describe(ty), describe(&t)),
                        );
                    }
                    self.prim_pure(dest.vars(), e, ty.clone());
                    return;
                }
                Shape::Failed => return,
                Shape::ControlFlow => {}
            },
        }
        match &e.kind {
            ExprKind::Call(path, args) => {
                self.call(e, path, args, Some(ty), Some(dest));
                return;
            }
            ExprKind::If(c, t, el) => {
                self.if_(c, t, el.as_deref(), Some(ty), Some(dest));
                return;
            }
            ExprKind::Block(b) => {
                self.scopes.push(Vec::new());
                self.block_into(b, Some(dest), ty);
                self.scopes.pop();
                return;
            }
            _ => {}
        }
        if let Val::Var { var, .. } = self.compile(e, Some(ty)) {
            self.assign_to(dest, var);
        }
    }

    /// Compiles a block's statements and tail into `target` (or for effect when `None`).
    fn block_into(&mut self, b: &Block, target: Option<&Dest>, ty: &Ty) {
        self.stmts(b);
        match (&b.tail, target) {
            (Some(tail), Some(t)) => self.compile_into(tail, t, ty),
            (Some(tail), None) => {
                self.compile(tail, Some(ty));
            }
            (None, Some(_)) if self.current.is_some() && !ty.is_unit() => {
                self.errors.at(
                    Span::call_site(),
                    format!("this block must produce a value of type {}", describe(ty)),
                );
            }
            _ => {}
        }
    }

    fn block_value(&mut self, b: &Block, expected: Option<&Ty>) -> Val {
        self.stmts(b);
        match &b.tail {
            Some(tail) => self.compile(tail, expected),
            None if self.current.is_none() => Val::Diverged,
            None => Val::Unit,
        }
    }

    fn stmts(&mut self, b: &Block) {
        for s in &b.stmts {
            if self.current.is_none() {
                return;
            }
            match s {
                Stmt::Let { pat, ty, init } => self.let_(pat, ty.as_ref(), init),
                Stmt::Expr(e) => {
                    self.compile(e, None);
                }
            }
        }
    }

    fn let_(&mut self, pat: &Pat, annotated: Option<&Ty>, init: &Expr) {
        let order = annotated.is_none().then(|| {
            self.lets += 1;
            self.lets - 1
        });
        let forced = order.and_then(|o| self.overrides.get(&o).cloned());
        let expected = forced.as_ref().or(annotated);
        let shape = match (pat, &init.kind) {
            (Pat::Ident(_), ExprKind::Var(_)) | (Pat::Tuple(_) | Pat::Wild, _) => {
                Shape::ControlFlow
            }
            (Pat::Ident(_), _) => self.classify(init, expected),
        };
        if let Shape::Failed = shape {
            self.poison(pat);
            return;
        }
        if let (Pat::Ident(name), Shape::Kernel(ty)) = (pat, shape) {
            if let Some(a) = annotated {
                if *a != ty {
                    self.errors.at(
                        init.span,
                        format!("expected {}, found {}", describe(a), describe(&ty)),
                    );
                }
            }
            let v = self.new_var(&name.to_string(), ty.clone());
            if let Some(o) = order {
                self.flexible.insert(v, o);
            }
            self.prim_pure(vec![v], init, ty);
            self.bind(name.to_string(), v);
            return;
        }
        if let (Pat::Ident(name), Some(t)) = (pat, expected) {
            if !t.is_unit()
                && matches!(
                    init.kind,
                    ExprKind::If(..) | ExprKind::Block(_) | ExprKind::Call(..)
                )
            {
                let v = self.new_var(&name.to_string(), t.clone());
                if let Some(o) = order {
                    self.flexible.insert(v, o);
                }
                let t = t.clone();
                self.compile_into(init, &Dest::Var(v), &t);
                self.bind(name.to_string(), v);
                return;
            }
        }
        if let Pat::Tuple(ps) = pat {
            if self.let_elements(ps, expected, init) {
                return;
            }
        }
        let errors_before = self.errors.len();
        let (var, ty, fresh) = match self.compile(init, expected) {
            Val::Var { var, ty, fresh } => (var, ty, fresh),
            _ if self.errors.len() > errors_before || matches!(init.kind, ExprKind::Invalid) => {
                self.poison(pat);
                return;
            }
            Val::Unit => (usize::MAX, Ty::unit(), true),
            Val::Diverged => return,
        };
        match pat {
            Pat::Ident(_) if ty.is_unit() => {}
            Pat::Ident(name) => {
                let v = if fresh {
                    self.out.vars[var].name = self.unique(&name.to_string());
                    var
                } else {
                    let v = self.new_var(&name.to_string(), ty);
                    self.assign(v, var);
                    v
                };
                if let Some(o) = order {
                    self.flexible.insert(v, o);
                }
                self.bind(name.to_string(), v);
            }
            Pat::Wild => {}
            Pat::Tuple(_) => {
                let mut outs = Vec::new();
                let mut binds = Vec::new();
                if !self.flatten_pattern(pat, &ty, init.span, &mut outs, &mut binds) {
                    return;
                }
                if let Some(block) = self.current {
                    self.out.steps.push(Step::Assign {
                        block,
                        outs,
                        ins: vec![var],
                    });
                }
                for (name, v) in binds {
                    self.bind(name, v);
                }
            }
        }
    }

    /// `let (a, b, ..) = init` where `init` is a tuple of the pattern's arity (its type
    /// annotated, or inferred here): the pattern's variables (fresh ones for `_` and for nested
    /// patterns, destructured after) receive the elements directly, as a call's outputs or
    /// each element's own value, with no tuple in between. False, having done nothing, if the
    /// type is not such a tuple.
    fn let_elements(&mut self, ps: &[Pat], expected: Option<&Ty>, init: &Expr) -> bool {
        let ty = match expected {
            Some(t) => t.clone(),
            None => match infer(init, None, &ScopeView(self)) {
                Ok(t) => t,
                Err(_) => return false,
            },
        };
        let Ty::Tuple(tys) = &ty else {
            return false;
        };
        if tys.len() != ps.len() {
            return false;
        }
        let mut elems = Vec::new();
        let mut binds = Vec::new();
        let mut nested = Vec::new();
        for (p, t) in ps.iter().zip(tys) {
            let v = match p {
                Pat::Ident(name) => {
                    let v = self.new_var(&name.to_string(), t.clone());
                    binds.push((name.to_string(), v));
                    v
                }
                Pat::Wild => self.new_var("_", t.clone()),
                Pat::Tuple(_) => {
                    let v = self.new_var("t", t.clone());
                    nested.push((p, v, t));
                    v
                }
            };
            elems.push(v);
        }
        self.compile_into(init, &Dest::Elems(elems), &ty);
        for (p, v, t) in nested {
            let mut outs = Vec::new();
            if !self.flatten_pattern(p, t, init.span, &mut outs, &mut binds) {
                self.poison(p);
                continue;
            }
            if let Some(block) = self.current {
                self.out.steps.push(Step::Assign {
                    block,
                    outs,
                    ins: vec![v],
                });
            }
        }
        for (name, v) in binds {
            self.bind(name, v);
        }
        true
    }

    /// Pairs a tuple pattern with its type, creating one variable per bound leaf or sub-tuple.
    fn flatten_pattern(
        &mut self,
        pat: &Pat,
        ty: &Ty,
        span: Span,
        outs: &mut Vec<usize>,
        binds: &mut Vec<(String, usize)>,
    ) -> bool {
        match (pat, ty) {
            (Pat::Ident(name), _) => {
                let v = self.new_var(&name.to_string(), ty.clone());
                outs.push(v);
                binds.push((name.to_string(), v));
                true
            }
            (Pat::Wild, _) => {
                let v = self.new_var("_", ty.clone());
                outs.push(v);
                true
            }
            (Pat::Tuple(ps), Ty::Tuple(ts)) if ps.len() == ts.len() => ps
                .iter()
                .zip(ts)
                .all(|(p, t)| self.flatten_pattern(p, t, span, outs, binds)),
            (Pat::Tuple(_), _) => {
                self.errors.at(
                    span,
                    format!(
                        "this pattern does not match a value of type {}",
                        describe(ty)
                    ),
                );
                false
            }
        }
    }

    /// A flexible variable (typed by a literal's default) assigned a value of another type
    /// takes that type, as rustc would infer: `let mut n = 0; n += m_i64;` makes `n` an `i64`.
    fn demand_from_assignment(&self, var: usize, ty: &Ty, value: &Expr, op: Option<&BinOp>) {
        if !self.flexible.contains_key(&var) || !is_pure(value) || op == Some(&BinOp::Shift) {
            return;
        }
        let scope = ScopeView(self);
        if matches!(infer(value, Some(ty), &scope), Ok(t) if t == *ty) {
            return;
        }
        if let Ok(t @ Ty::Scalar(_)) = infer(value, None, &scope) {
            if t != *ty {
                self.demand(var, &t);
            }
        }
    }

    fn assign_stmt(
        &mut self,
        e: &Expr,
        target: &Ident,
        value: &Expr,
        op: Option<&(BinOp, TokenStream)>,
    ) {
        let Some(var) = self.lookup(&target.to_string()) else {
            self.unknown(target);
            return;
        };
        let ty = self.out.vars[var].ty.clone();
        self.demand_from_assignment(var, &ty, value, op.map(|(b, _)| b));
        match op {
            None => self.compile_into(value, &Dest::Var(var), &ty),
            Some((bop, op_tokens)) => {
                let hint = (*bop != BinOp::Shift && ty != Ty::Vector).then_some(&ty);
                let shape = self.classify(value, hint);
                if let Shape::Failed = shape {
                    return;
                }
                if let Shape::Kernel(_) = shape {
                    let Some(block) = self.current else { return };
                    let mut names = vec![target.clone()];
                    free_vars(value, &mut names);
                    let inputs: Vec<(Ident, usize)> = names
                        .into_iter()
                        .filter_map(|id| self.lookup(&id.to_string()).map(|v| (id, v)))
                        .collect();
                    let vt = &value.tokens;
                    let body = quote!(#target #op_tokens (#vt));
                    self.push_kernel(
                        block,
                        vec![var],
                        inputs,
                        body,
                        ty,
                        e.span,
                        source_text(&e.tokens),
                    );
                } else if let Val::Var { var: v, .. } = self.compile(value, hint) {
                    let Some(block) = self.current else { return };
                    let arg = format_ident!("__a0");
                    let body = quote!(#target #op_tokens #arg);
                    let inputs = vec![(target.clone(), var), (arg, v)];
                    self.push_kernel(
                        block,
                        vec![var],
                        inputs,
                        body,
                        ty,
                        e.span,
                        source_text(&e.tokens),
                    );
                }
            }
        }
    }

    /// An operator, cast, method, tuple or field whose operands need statements first: each
    /// operand goes to a variable, then one kernel combines them.
    fn mixed(&mut self, e: &Expr, expected: Option<&Ty>) -> Val {
        let mut inputs: Vec<(Ident, usize)> = Vec::new();
        let mut types: Vec<Ty> = Vec::new();
        let mut operand = |this: &mut Self, x: &Expr, hint: Option<&Ty>| -> Option<TokenStream> {
            match this.compile(x, hint) {
                Val::Var { var, ty, .. } => {
                    let id = format_ident!("__a{}", inputs.len());
                    inputs.push((id.clone(), var));
                    types.push(ty);
                    Some(quote!(#id))
                }
                _ => None,
            }
        };
        let body = match &e.kind {
            ExprKind::Binary(op, op_tokens, l, r) => {
                let hint = if *op == BinOp::Compare {
                    None
                } else {
                    expected
                };
                let Some(lt) = operand(self, l, hint) else {
                    return Val::Diverged;
                };
                let rhint = if matches!(op, BinOp::Shift) {
                    None
                } else {
                    None.or(hint)
                };
                let Some(rt) = operand(self, r, rhint) else {
                    return Val::Diverged;
                };
                quote!(#lt #op_tokens #rt)
            }
            ExprKind::Unary(op_tokens, x) => {
                let Some(xt) = operand(self, x, expected) else {
                    return Val::Diverged;
                };
                quote!(#op_tokens #xt)
            }
            ExprKind::Ref(x) => {
                let Some(xt) = operand(self, x, expected) else {
                    return Val::Diverged;
                };
                quote!(&#xt)
            }
            ExprKind::Cast(x, _, ty_tokens) => {
                let Some(xt) = operand(self, x, None) else {
                    return Val::Diverged;
                };
                quote!(#xt as #ty_tokens)
            }
            ExprKind::Field(x, i) => {
                let Some(xt) = operand(self, x, None) else {
                    return Val::Diverged;
                };
                let idx = syn::Index::from(*i as usize);
                quote!(#xt.#idx)
            }
            ExprKind::Method(r, name, args) => {
                let Some(rt) = operand(self, r, None) else {
                    return Val::Diverged;
                };
                let mut ats = Vec::new();
                for a in args {
                    let Some(at) = operand(self, a, None) else {
                        return Val::Diverged;
                    };
                    ats.push(at);
                }
                quote!(#rt.#name(#(#ats),*))
            }
            ExprKind::Assoc(t, f, args) => {
                let mut ats = Vec::new();
                for a in args {
                    let Some(at) = operand(self, a, None) else {
                        return Val::Diverged;
                    };
                    ats.push(at);
                }
                quote!(#t::#f(#(#ats),*))
            }
            ExprKind::Tuple(items) => {
                let hints: Vec<Option<Ty>> = match expected {
                    Some(Ty::Tuple(ts)) if ts.len() == items.len() => {
                        ts.iter().cloned().map(Some).collect()
                    }
                    _ => vec![None; items.len()],
                };
                let mut ats = Vec::new();
                for (a, h) in items.iter().zip(hints) {
                    let Some(at) = operand(self, a, h.as_ref()) else {
                        return Val::Diverged;
                    };
                    ats.push(at);
                }
                quote!((#(#ats,)*))
            }
            _ => {
                self.errors.at(
                    e.span,
                    "this expression is not supported in #[autobatch] code",
                );
                return Val::Unit;
            }
        };
        if let (ExprKind::Binary(op, _, l, r), [lt, rt]) = (&e.kind, types.as_slice()) {
            if *op != BinOp::Shift
                && lt != rt
                && !matches!((lt, rt), (Ty::Vector, _) | (_, Ty::Vector))
            {
                for (x, other) in [(l, rt), (r, lt)] {
                    if let ExprKind::Var(id) = &x.kind {
                        self.demand_var(&id.to_string(), other);
                    }
                }
            }
        }
        // The result type: infer the rebuilt expression over the operands' types.
        let Some(ty) = self.mixed_type(e, &types, expected) else {
            return Val::Unit;
        };
        let Some(block) = self.current else {
            return Val::Diverged;
        };
        let t = self.new_var("t", ty.clone());
        self.push_kernel(
            block,
            vec![t],
            inputs,
            body,
            ty.clone(),
            e.span,
            source_text(&e.tokens),
        );
        Val::Var {
            var: t,
            ty,
            fresh: true,
        }
    }

    /// The type of a mixed expression whose operands (in order) have `types`.
    fn mixed_type(&mut self, e: &Expr, types: &[Ty], expected: Option<&Ty>) -> Option<Ty> {
        use super::infer::method_type;
        let t = match &e.kind {
            ExprKind::Binary(BinOp::Compare | BinOp::And | BinOp::Or, ..) => {
                Ty::Scalar(DType::Bool)
            }
            ExprKind::Binary(_, _, _, _) => match (&types[0], &types[1]) {
                (Ty::Scalar(_), Ty::Vector) => Ty::Vector,
                (l, _) => l.clone(),
            },
            ExprKind::Unary(..) | ExprKind::Ref(_) => types[0].clone(),
            ExprKind::Cast(_, t, _) => t.clone(),
            ExprKind::Field(_, i) => match &types[0] {
                Ty::Tuple(items) if (*i as usize) < items.len() => items[*i as usize].clone(),
                other => {
                    self.errors
                        .at(e.span, format!("no field `{i}` on {}", describe(other)));
                    return None;
                }
            },
            ExprKind::Method(_, name, _) => match method_type(&types[0], &name.to_string()) {
                Some(t) => t,
                None => {
                    self.errors.at(
                        e.span,
                        format!(
                            "method `{name}` is not supported on {} in #[autobatch] code",
                            describe(&types[0])
                        ),
                    );
                    return None;
                }
            },
            ExprKind::Tuple(_) => Ty::Tuple(types.to_vec()),
            _ => match expected {
                Some(t) => t.clone(),
                None => {
                    self.errors.at(
                        e.span,
                        "cannot infer the type of this expression; annotate the binding",
                    );
                    return None;
                }
            },
        };
        Some(t)
    }

    fn short_circuit(&mut self, e: &Expr, l: &Expr, r: &Expr) -> Val {
        let is_and = matches!(e.kind, ExprKind::Binary(BinOp::And, ..));
        let bool_ty = Ty::Scalar(DType::Bool);
        let result = self.new_var("t", bool_ty.clone());
        let Val::Var { var: lv, .. } = self.compile(l, Some(&bool_ty)) else {
            return Val::Diverged;
        };
        let Some(cur) = self.current else {
            return Val::Diverged;
        };
        let rhs_block = self.new_block(if is_and { "and" } else { "or" });
        let short_block = self.new_block("short");
        let join = self.new_block("join");
        let (t, f) = if is_and {
            (rhs_block, short_block)
        } else {
            (short_block, rhs_block)
        };
        self.out.steps.push(Step::Branch(cur, lv, t, f));
        self.current = Some(short_block);
        let constant = if is_and { quote!(false) } else { quote!(true) };
        self.push_kernel(
            short_block,
            vec![result],
            Vec::new(),
            constant.clone(),
            bool_ty.clone(),
            e.span,
            constant.to_string(),
        );
        self.goto(join);
        self.current = Some(rhs_block);
        self.compile_into(r, &Dest::Var(result), &bool_ty);
        self.goto(join);
        self.current = Some(join);
        Val::Var {
            var: result,
            ty: bool_ty,
            fresh: true,
        }
    }

    fn call(
        &mut self,
        e: &Expr,
        path: &syn::Path,
        args: &[Expr],
        expected: Option<&Ty>,
        target: Option<&Dest>,
    ) -> Val {
        let is_self = self.is_self_path(path);
        let param_types: Vec<Option<Ty>> = if is_self {
            self.func
                .params
                .iter()
                .map(|(_, t)| Some(t.clone()))
                .collect()
        } else {
            vec![None; args.len()]
        };
        if is_self && args.len() != param_types.len() {
            self.errors.at(
                e.span,
                format!("`{}` takes {} arguments", self.func.name, param_types.len()),
            );
            return Val::Unit;
        }
        let mut ins = Vec::new();
        let mut tys = Vec::new();
        let by_ref: Vec<bool> = args
            .iter()
            .map(|a| matches!(a.kind, ExprKind::Ref(_)))
            .collect();
        for (a, hint) in args.iter().zip(&param_types) {
            let a = match &a.kind {
                ExprKind::Ref(inner) => inner,
                _ => a,
            };
            if let (ExprKind::Var(id), Some(h)) = (&a.kind, hint) {
                self.demand_var(&id.to_string(), h);
            }
            match self.compile(a, hint.as_ref()) {
                Val::Var { var, ty, .. } => {
                    ins.push(var);
                    tys.push(ty);
                }
                Val::Unit => {
                    let v = self.new_var("unit", Ty::unit());
                    ins.push(v);
                    tys.push(Ty::unit());
                }
                Val::Diverged => return Val::Diverged,
            }
        }
        let ret = if is_self {
            self.func.ret.clone()
        } else {
            match expected {
                Some(t) => t.clone(),
                None => {
                    let p = path_text(path);
                    self.errors.at(e.span, format!("cannot infer the return type of `{p}` here (it is not visible to this macro); annotate the binding, e.g. `let x: i64 = {p}(..);`"));
                    return Val::Unit;
                }
            }
        };
        let key = path_text(path);
        let callee = match self
            .out
            .callees
            .iter()
            .position(|c| path_text(&c.path) == key)
        {
            Some(i) => {
                let c = &self.out.callees[i];
                if c.params != tys || c.ret != ret {
                    self.errors.at(e.span, format!("`{key}` is called here with types that differ from another call in this function"));
                }
                i
            }
            None => {
                self.out.callees.push(CalleeSpec {
                    path: path.clone(),
                    is_self,
                    by_ref,
                    params: tys,
                    ret: ret.clone(),
                    span: e.span,
                });
                self.out.callees.len() - 1
            }
        };
        let Some(block) = self.current else {
            return Val::Diverged;
        };
        // A tuple result comes out as one variable per element (the callee's return variables,
        // or the leaves of a primitive's result split the same way): element variables the
        // value is bound to take them directly; otherwise fresh ones are assembled into the
        // tuple value by one assignment.
        let elements = match &ret {
            Ty::Tuple(items) => Some(items.clone()),
            _ => None,
        };
        let call = move |this: &mut Self, outs: Vec<usize>| {
            this.out.steps.push(Step::Call {
                block,
                callee,
                ins,
                outs,
            });
        };
        let value = match (elements, target) {
            (Some(items), _) if items.is_empty() => {
                call(self, Vec::new());
                return Val::Unit;
            }
            (Some(items), Some(Dest::Elems(vs))) if vs.len() == items.len() => {
                call(self, vs.clone());
                return Val::Unit;
            }
            (Some(items), _) => {
                let outs: Vec<usize> = items.into_iter().map(|t| self.new_var("t", t)).collect();
                call(self, outs.clone());
                let value = match target {
                    Some(Dest::Var(t)) => *t,
                    _ => self.new_var("t", ret.clone()),
                };
                self.out.steps.push(Step::Assign {
                    block,
                    outs: vec![value],
                    ins: outs,
                });
                value
            }
            (None, Some(Dest::Var(t))) => {
                call(self, vec![*t]);
                return Val::Unit;
            }
            (None, _) => {
                let t = self.new_var("t", ret.clone());
                call(self, vec![t]);
                t
            }
        };
        match target {
            None => Val::Var {
                var: value,
                ty: ret,
                fresh: true,
            },
            Some(dest) => {
                if !matches!(dest, Dest::Var(t) if *t == value) {
                    self.assign_to(dest, value);
                }
                Val::Unit
            }
        }
    }

    fn if_(
        &mut self,
        cond: &Expr,
        then: &Block,
        els: Option<&Expr>,
        expected: Option<&Ty>,
        target: Option<&Dest>,
    ) -> Val {
        let Some((t_block, e_block)) = self.branch_on(cond, "then", "else") else {
            return Val::Diverged;
        };
        let mut join: Option<usize> = None;
        let mut result: Option<(Dest, Ty)> = target.map(|t| (t.clone(), self.dest_ty(t)));
        let value_wanted = expected.is_some_and(|t| !t.is_unit()) || target.is_some();
        let mut arm = |this: &mut Self, start: usize, body: ArmBody<'_>| {
            this.current = Some(start);
            this.scopes.push(Vec::new());
            let hint = result
                .as_ref()
                .map(|(_, t)| t.clone())
                .or(expected.cloned());
            match (&result, value_wanted) {
                (Some((r, ty)), true) => {
                    let (r, ty) = (r.clone(), ty.clone());
                    match body {
                        ArmBody::Block(b) => this.block_into(b, Some(&r), &ty),
                        ArmBody::Expr(x) => this.compile_into(x, &r, &ty),
                    }
                }
                _ => {
                    let v = match body {
                        ArmBody::Block(b) => this.block_value(b, hint.as_ref()),
                        ArmBody::Expr(x) => this.compile(x, hint.as_ref()),
                    };
                    if let Val::Var { var, ty, .. } = v {
                        let r = match &result {
                            Some((r, _)) => r.clone(),
                            None => {
                                let r = Dest::Var(this.new_var("t", ty.clone()));
                                result = Some((r.clone(), ty));
                                r
                            }
                        };
                        this.assign_to(&r, var);
                    }
                }
            }
            this.scopes.pop();
            if this.current.is_some() {
                let j = *join.get_or_insert_with(|| this.new_block("join"));
                this.goto(j);
            }
        };
        arm(self, t_block, ArmBody::Block(then));
        match els {
            Some(x) => arm(self, e_block, ArmBody::Expr(x)),
            None => {
                self.current = Some(e_block);
                let j = *join.get_or_insert_with(|| self.new_block("join"));
                self.goto(j);
            }
        }
        self.current = join;
        match (join, result) {
            (None, _) => Val::Diverged,
            (Some(_), Some((Dest::Var(var), ty))) if target.is_none() && els.is_some() => {
                Val::Var {
                    var,
                    ty,
                    fresh: true,
                }
            }
            _ => Val::Unit,
        }
    }

    /// Compiles `cond` and ends the current block with a branch to two new blocks, returned as
    /// (taken when true, taken when false); `None` if control does not get here.
    fn branch_on(
        &mut self,
        cond: &Expr,
        then_name: &str,
        else_name: &str,
    ) -> Option<(usize, usize)> {
        let bool_ty = Ty::Scalar(DType::Bool);
        let Val::Var { var: c, .. } = self.compile(cond, Some(&bool_ty)) else {
            return None;
        };
        let cur = self.current?;
        let t = self.new_block(then_name);
        let e = self.new_block(else_name);
        self.out.steps.push(Step::Branch(cur, c, t, e));
        Some((t, e))
    }

    fn while_(&mut self, cond: &Expr, body: &Block) -> Val {
        let header = self.new_block("while");
        self.goto(header);
        self.current = Some(header);
        let Some((body_block, exit)) = self.branch_on(cond, "body", "after") else {
            return Val::Diverged;
        };
        self.loops.push(LoopCtx {
            continue_to: header,
            break_to: Some(exit),
            result: None,
        });
        self.current = Some(body_block);
        self.scopes.push(Vec::new());
        self.block_value(body, Some(&Ty::unit()));
        self.scopes.pop();
        self.goto(header);
        self.loops.pop();
        self.current = Some(exit);
        Val::Unit
    }

    fn loop_(&mut self, body: &Block, expected: Option<&Ty>) -> Val {
        let start = self.new_block("loop");
        self.goto(start);
        self.current = Some(start);
        let result = expected
            .filter(|t| !t.is_unit())
            .map(|t| (self.new_var("t", t.clone()), t.clone()));
        self.loops.push(LoopCtx {
            continue_to: start,
            break_to: None,
            result,
        });
        self.scopes.push(Vec::new());
        self.block_value(body, Some(&Ty::unit()));
        self.scopes.pop();
        self.goto(start);
        let ctx = self.loops.pop().expect("pushed above");
        self.current = ctx.break_to;
        match (ctx.break_to, ctx.result) {
            (None, _) => Val::Diverged,
            (Some(_), Some((var, ty))) => Val::Var {
                var,
                ty,
                fresh: true,
            },
            (Some(_), None) => Val::Unit,
        }
    }

    fn break_(&mut self, e: &Expr, value: Option<&Expr>) -> Val {
        if self.loops.is_empty() {
            self.errors.at(e.span, "`break` outside a loop");
            return Val::Diverged;
        }
        if let Some(v) = value {
            let hint = self
                .loops
                .last()
                .and_then(|l| l.result.as_ref().map(|(_, t)| t.clone()));
            match self.compile(v, hint.as_ref()) {
                Val::Var { var, ty, .. } => {
                    let r = match self.loops.last().and_then(|l| l.result.clone()) {
                        Some((r, _)) => r,
                        None => {
                            let r = self.new_var("t", ty.clone());
                            if let Some(l) = self.loops.last_mut() {
                                l.result = Some((r, ty));
                            }
                            r
                        }
                    };
                    self.assign(r, var);
                }
                Val::Diverged => return Val::Diverged,
                Val::Unit => {}
            }
        }
        let to = match self.loops.last().and_then(|l| l.break_to) {
            Some(b) => b,
            None => {
                let b = self.new_block("after");
                if let Some(l) = self.loops.last_mut() {
                    l.break_to = Some(b);
                }
                b
            }
        };
        self.goto(to);
        Val::Diverged
    }
}

enum ArmBody<'e> {
    Block(&'e Block),
    Expr(&'e Expr),
}

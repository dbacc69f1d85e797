//! The inference pass over a whole function, run once before translation: fixes the type of
//! every unannotated `let` whose literal default its later uses correct.
//!
//! Rust types `let mut steps = 0;` as an `i64` when it is later returned as one; the literal's
//! default (`i32`) is only a fallback. This pass walks the function as the translation will
//! (same scopes, same expected types, same code reached), notes every use of a variable bound by
//! an unannotated `let` where a value of another type is needed (a *demand*), and walks again
//! with the demanded types until they agree. Since the original function type-checks, a demand
//! only ever corrects a literal's default. The translation then reads the types from
//! [`LetTypes`] and runs once.

use super::classify::{classify, Strategy};
use super::{infer, operator_type, same_type, tuple_elements, Scope};
use crate::generate::context;
use crate::generate::pure::is_pure;
use crate::parse::ast::{BinOp, Block, Expr, ExprKind, ForLoop, Func, Label, Pat, Stmt, Ty};
use autobatch_ir::DType;
use std::cell::RefCell;
use std::collections::HashMap;

/// How many walks correct the `let`s' types at most (each walk settles at least one more).
const ROUNDS: usize = 4;

/// The types inference fixed for unannotated `let`s, keyed by the `let` statement (by its
/// initialiser's place in the AST, which stays put while the function is compiled).
#[derive(Debug, Default)]
pub struct LetTypes(HashMap<*const Expr, Ty>);

impl LetTypes {
    /// The type fixed for the unannotated `let` whose initialiser is `init`, if its uses
    /// corrected the default.
    pub fn get(&self, init: &Expr) -> Option<&Ty> {
        self.0.get(&std::ptr::from_ref(init))
    }
}

/// Infers the types of `func`'s unannotated `let`s from their uses.
pub fn let_types(func: &Func) -> LetTypes {
    let mut fixed = LetTypes::default();
    for _round in 0..ROUNDS {
        let (demands, links, tuples) = Walk::new(func, &fixed).run();
        let mut next = fixed.0.clone();
        for (key, t) in demands {
            settle(&mut next, key, t);
        }
        unify_linked(&mut next, &links);
        // A tuple `let` is typed as a whole: its elements' types, re-typed or as bound.
        for (init, literals, bound) in tuples {
            if literals.iter().flatten().any(|k| next.contains_key(k)) {
                let elements = literals.iter().zip(bound);
                let elements =
                    elements.map(|(k, t)| k.and_then(|k| next.get(&k).cloned()).unwrap_or(t));
                next.insert(init, Ty::Tuple(elements.collect()));
            }
        }
        if next == fixed.0 {
            break;
        }
        fixed.0 = next;
    }
    fixed
}

/// True for a literal's default type (`i32`, `f64`): a demand for it may only repeat a
/// default another demand corrects.
fn is_default(t: &Ty) -> bool {
    matches!(t, Ty::Scalar(DType::I32 | DType::F64))
}

/// Fixes `key`'s type to `t` unless it already has a type that is not a literal's default
/// (the original function type-checks, so the constraints on one `let` agree but for
/// defaults that another walk's demand corrects).
fn settle(types: &mut HashMap<*const Expr, Ty>, key: *const Expr, t: Ty) {
    match types.get(&key) {
        Some(old) if !is_default(old) && is_default(&t) => {}
        _ => {
            types.insert(key, t);
        }
    }
}

/// Gives every `let` linked to another (directly or through others) the one type of their
/// class, as rustc infers one type for variables used together (`total += i`).
fn unify_linked(types: &mut HashMap<*const Expr, Ty>, links: &[(*const Expr, *const Expr)]) {
    let mut classes: Vec<Vec<*const Expr>> = Vec::new();
    for &(a, b) in links {
        let find = |classes: &[Vec<*const Expr>], k| classes.iter().position(|c| c.contains(&k));
        match (find(&classes, a), find(&classes, b)) {
            (Some(i), Some(j)) if i != j => {
                let merged = classes.swap_remove(i.max(j));
                classes[i.min(j)].extend(merged);
            }
            (Some(_), Some(_)) => {}
            (Some(i), None) => classes[i].push(b),
            (None, Some(j)) => classes[j].push(a),
            (None, None) => classes.push(vec![a, b]),
        }
    }
    for class in classes {
        let known = class.iter().filter_map(|k| types.get(k));
        let Some(t) = known
            .clone()
            .find(|t| !is_default(t))
            .or_else(|| known.clone().next())
        else {
            continue;
        };
        let t = t.clone();
        for k in class {
            types.insert(k, t.clone());
        }
    }
}

/// True for an expression of calls, operators, casts, methods and tuples over them (no control
/// flow): its type is that of its parts, a call's the callee's result.
fn has_call_type(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Call(..) => true,
        ExprKind::Binary(_, _, l, r) => {
            (has_call_type(l) || is_pure(l)) && (has_call_type(r) || is_pure(r))
        }
        ExprKind::Unary(_, x) | ExprKind::Cast(x, _, _) | ExprKind::Field(x, _) => has_call_type(x),
        _ => false,
    }
}

/// A name in scope: its type, and the `let` that may still re-type it.
struct Binding {
    name: String,
    ty: Ty,
    flexible: Option<*const Expr>,
}

/// What compiling an expression yields, as far as types go.
enum Typing {
    /// A value of this type.
    Typed(Ty),
    /// `()`, or nothing (an error the translation reports).
    Unit,
    /// Control does not get past it.
    Diverged,
}

/// Where a value is stored: one variable, or one per element of a tuple.
#[derive(Clone, Copy, PartialEq)]
enum Place {
    Var,
    Elems,
}

/// A loop being walked: its label, whether a `break` leaves it, and its `break` value's type.
struct LoopTypes {
    label: Option<Label>,
    broken: bool,
    result: Option<Ty>,
}

/// One walk over the function with the `let` types fixed so far.
struct Walk<'a> {
    func: &'a Func,
    fixed: &'a LetTypes,
    scopes: Vec<Vec<Binding>>,
    loops: Vec<LoopTypes>,
    /// False after a jump, until code is reachable again.
    live: bool,
    demands: RefCell<Vec<(*const Expr, Ty)>>,
    /// Pairs of unannotated `let`s that have one type.
    links: RefCell<Vec<(*const Expr, *const Expr)>>,
    /// Unannotated tuple `let`s over tuple expressions.
    tuples: RefCell<Vec<TupleLet>>,
}

/// A tuple `let` whose elements' literals may be re-typed: the initialiser, each element's
/// literal (if it is a bare one), and the elements' types as bound.
type TupleLet = (*const Expr, Vec<Option<*const Expr>>, Vec<Ty>);

/// What one walk found: demands, links, and tuple `let`s.
type Found = (
    Vec<(*const Expr, Ty)>,
    Vec<(*const Expr, *const Expr)>,
    Vec<TupleLet>,
);

/// The walk's names in scope, as type inference sees them.
struct View<'w, 'a> {
    walk: &'w Walk<'a>,
}

impl Scope for View<'_, '_> {
    fn lookup(&self, name: &str) -> Option<Ty> {
        self.walk.lookup(name).map(|b| b.ty.clone())
    }

    fn is_poisoned(&self, _name: &str) -> bool {
        false
    }

    fn callee_return(&self, path: &syn::Path) -> Option<Ty> {
        self.walk.func.callee_return(path)
    }

    fn demand(&self, name: &str, ty: &Ty) {
        self.walk.demand(name, ty);
    }

    fn unify(&self, a: &str, a_ty: &Ty, b: &str, b_ty: &Ty) {
        self.walk.unify(a, a_ty, b, b_ty);
    }
}

impl<'a> Walk<'a> {
    fn new(func: &'a Func, fixed: &'a LetTypes) -> Self {
        Walk {
            func,
            fixed,
            scopes: vec![Vec::new()],
            loops: Vec::new(),
            live: true,
            demands: RefCell::new(Vec::new()),
            links: RefCell::new(Vec::new()),
            tuples: RefCell::new(Vec::new()),
        }
    }

    /// Walks the body; returns what it found.
    fn run(mut self) -> Found {
        for (name, ty) in &self.func.params {
            self.bind(name.to_string(), ty.clone(), None);
        }
        let ret = self.func.ret.clone();
        let dest = match &ret {
            Ty::Tuple(items) if items.is_empty() => None,
            Ty::Tuple(_) => Some(Place::Elems),
            _ => Some(Place::Var),
        };
        self.block_into(&self.func.body, dest, &ret);
        (
            self.demands.into_inner(),
            self.links.into_inner(),
            self.tuples.into_inner(),
        )
    }

    fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.iter().rev().find(|b| b.name == name))
    }

    fn bind(&mut self, name: String, ty: Ty, flexible: Option<*const Expr>) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.push(Binding { name, ty, flexible });
        }
    }

    /// Notes that `name` is used where a `ty` is needed.
    fn demand(&self, name: &str, ty: &Ty) {
        if let Some(Binding {
            ty: have,
            flexible: Some(key),
            ..
        }) = self.lookup(name)
        {
            if have != ty {
                self.demands.borrow_mut().push((*key, ty.clone()));
            }
        }
    }

    /// Notes that `a` and `b` have one type: linked if both are unannotated `let`s.
    fn unify(&self, a: &str, a_ty: &Ty, b: &str, b_ty: &Ty) {
        let key = |n: &str| self.lookup(n).and_then(|b| b.flexible);
        match (key(a), key(b)) {
            (Some(x), Some(y)) => self.links.borrow_mut().push((x, y)),
            _ if a_ty != b_ty => {
                self.demand(a, b_ty);
                self.demand(b, a_ty);
            }
            _ => {}
        }
    }

    fn view(&self) -> View<'_, 'a> {
        View { walk: self }
    }

    fn scoped<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.scopes.push(Vec::new());
        let t = f(self);
        self.scopes.pop();
        t
    }

    fn compile(&mut self, e: &Expr, expected: Option<&Ty>) -> Typing {
        if !self.live {
            return Typing::Diverged;
        }
        match &e.kind {
            ExprKind::Var(id) => {
                return match self.lookup(&id.to_string()) {
                    Some(b) => Typing::Typed(b.ty.clone()),
                    None => Typing::Unit,
                }
            }
            ExprKind::Invalid => return Typing::Unit,
            _ => {}
        }
        match classify(e, expected, &self.view()) {
            Strategy::Kernel(ty) => return Typing::Typed(ty),
            Strategy::Failed(_) => return Typing::Unit,
            Strategy::ControlFlow => {}
        }
        match &e.kind {
            ExprKind::Call(path, args) => self.call(path, args, expected, None),
            ExprKind::If(c, t, el) => self.if_(c, t, el.as_deref(), expected, None),
            ExprKind::Block(b) => self.scoped(|w| w.block_value(b, expected)),
            ExprKind::While(label, c, body) => self.while_(label.as_ref(), c, body),
            ExprKind::Loop(label, body) => self.loop_(label.as_ref(), body, expected),
            ExprKind::For(f) => self.for_(f),
            ExprKind::Break(label, v) => self.break_(label.as_ref(), v.as_deref()),
            ExprKind::Continue(label) => {
                if self.target_loop(label.as_ref()).is_some() {
                    self.live = false;
                }
                Typing::Diverged
            }
            ExprKind::Return(v) => {
                let ret = self.func.ret.clone();
                match (v, &ret) {
                    (Some(v), Ty::Tuple(items)) if items.is_empty() => {
                        self.compile(v, Some(&ret));
                    }
                    (Some(v), Ty::Tuple(_)) => self.compile_into(v, Place::Elems, &ret),
                    (Some(v), _) => self.compile_into(v, Place::Var, &ret),
                    (None, _) => {}
                }
                self.live = false;
                Typing::Diverged
            }
            ExprKind::Assign(target, value, op) => {
                self.assign(target, value, op.as_ref().map(|(b, _)| *b));
                Typing::Unit
            }
            ExprKind::Binary(BinOp::And | BinOp::Or, _, l, r) => {
                let bool_ty = Ty::Scalar(DType::Bool);
                let Typing::Typed(_) = self.compile(l, Some(&bool_ty)) else {
                    return Typing::Diverged;
                };
                if !self.live {
                    return Typing::Diverged;
                }
                self.compile_into(r, Place::Var, &bool_ty);
                self.live = true;
                Typing::Typed(bool_ty)
            }
            _ => self.mixed(e, expected),
        }
    }

    fn compile_into(&mut self, e: &Expr, dest: Place, ty: &Ty) {
        if !self.live {
            return;
        }
        if let (Place::Elems, ExprKind::Tuple(items), Ty::Tuple(tys)) = (dest, &e.kind, ty) {
            if items.len() == tys.len() {
                for (item, t) in items.iter().zip(tys) {
                    self.compile_into(item, Place::Var, t);
                }
                return;
            }
        }
        match &e.kind {
            ExprKind::Invalid => return,
            ExprKind::Var(id) => self.demand(&id.to_string(), ty),
            _ => match classify(e, Some(ty), &self.view()) {
                Strategy::Kernel(_) | Strategy::Failed(_) => return,
                Strategy::ControlFlow => {}
            },
        }
        match &e.kind {
            ExprKind::Call(path, args) => {
                self.call(path, args, Some(ty), Some(dest));
            }
            ExprKind::If(c, t, el) => {
                self.if_(c, t, el.as_deref(), Some(ty), Some(dest));
            }
            ExprKind::Block(b) => self.scoped(|w| w.block_into(b, Some(dest), ty)),
            _ => {
                self.compile(e, Some(ty));
            }
        }
    }

    fn block_into(&mut self, b: &Block, dest: Option<Place>, ty: &Ty) {
        self.stmts(b);
        match (&b.tail, dest) {
            (Some(tail), Some(d)) => self.compile_into(tail, d, ty),
            (Some(tail), None) => {
                self.compile(tail, Some(ty));
            }
            (None, _) => {}
        }
    }

    fn block_value(&mut self, b: &Block, expected: Option<&Ty>) -> Typing {
        self.stmts(b);
        match &b.tail {
            Some(tail) => self.compile(tail, expected),
            None if !self.live => Typing::Diverged,
            None => Typing::Unit,
        }
    }

    fn stmts(&mut self, b: &Block) {
        for s in &b.stmts {
            if !self.live {
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
        let key = annotated.is_none().then(|| std::ptr::from_ref(init));
        let forced = key.and_then(|_| self.fixed.get(init).cloned());
        let expected = forced.as_ref().or(annotated).cloned();
        let strategy = match (pat, &init.kind) {
            (Pat::Ident(_), ExprKind::Var(_)) | (Pat::Tuple(_) | Pat::Wild, _) => {
                Strategy::ControlFlow
            }
            (Pat::Ident(_), _) => classify(init, expected.as_ref(), &self.view()),
        };
        match (pat, strategy) {
            (_, Strategy::Failed(_)) => return,
            (Pat::Ident(name), Strategy::Kernel(ty)) => {
                self.bind(name.to_string(), ty, key);
                return;
            }
            _ => {}
        }
        if let (Pat::Ident(name), Some(t)) = (pat, &expected) {
            if !t.is_unit()
                && matches!(
                    init.kind,
                    ExprKind::If(..) | ExprKind::Block(_) | ExprKind::Call(..)
                )
            {
                self.compile_into(init, Place::Var, t);
                self.bind(name.to_string(), t.clone(), key);
                return;
            }
        }
        if let Pat::Tuple(ps) = pat {
            if self.let_elements(ps, expected.as_ref(), init) {
                return;
            }
        }
        let ty = match self.compile(init, expected.as_ref()) {
            Typing::Typed(ty) => ty,
            Typing::Unit | Typing::Diverged => return,
        };
        match pat {
            Pat::Ident(_) if ty.is_unit() => {}
            Pat::Ident(name) => {
                self.bind(name.to_string(), ty.clone(), key);
                if let ExprKind::Var(source) = &init.kind {
                    // `let b = a;`: one type for both.
                    self.unify(&name.to_string(), &ty, &source.to_string(), &ty);
                }
            }
            Pat::Wild => {}
            Pat::Tuple(_) => {
                let mut binds = Vec::new();
                if flatten(pat, &ty, &mut binds) {
                    binds.into_iter().for_each(|(n, t)| self.bind(n, t, None));
                }
            }
        }
    }

    /// As the translation's `let_elements`: a tuple pattern over a tuple of its arity.
    fn let_elements(&mut self, ps: &[Pat], expected: Option<&Ty>, init: &Expr) -> bool {
        let Some(tys) = tuple_elements(ps.len(), expected, init, &self.view()) else {
            return false;
        };
        let ty = Ty::Tuple(tys.clone());
        self.compile_into(init, Place::Elems, &ty);
        // `let (a, b) = (0, 1);` (unannotated): each name bound to a bare literal is re-typed
        // from its uses like a `let` of its own, keyed by its literal.
        let literals: Vec<Option<*const Expr>> = match &init.kind {
            ExprKind::Tuple(items) if expected == self.fixed.get(init) => items
                .iter()
                .map(|x| {
                    matches!(x.kind, ExprKind::Lit { suffix: None, .. })
                        .then(|| std::ptr::from_ref(x))
                })
                .collect(),
            _ => vec![None; ps.len()],
        };
        if literals.iter().any(Option::is_some) {
            self.tuples.borrow_mut().push((
                std::ptr::from_ref(init),
                literals.clone(),
                tys.clone(),
            ));
        }
        for ((p, t), key) in ps.iter().zip(&tys).zip(literals) {
            let mut binds = Vec::new();
            flatten(p, t, &mut binds);
            let key = key.filter(|_| matches!(p, Pat::Ident(_)));
            binds.into_iter().for_each(|(n, t)| self.bind(n, t, key));
        }
        true
    }

    fn assign(&mut self, target: &syn::Ident, value: &Expr, op: Option<BinOp>) {
        let Some(b) = self.lookup(&target.to_string()) else {
            return;
        };
        let (ty, flexible) = (b.ty.clone(), b.flexible.is_some());
        if let (ExprKind::Var(v), true) = (&value.kind, op != Some(BinOp::Shift)) {
            // `n = m`, `n += m`: one type for both.
            if let Some(vt) = self.lookup(&v.to_string()).map(|b| b.ty.clone()) {
                self.unify(&target.to_string(), &ty, &v.to_string(), &vt);
            }
            if op.is_none() {
                return;
            }
        }
        // A variable typed by a literal's default that is assigned a value of another type
        // takes that type: `let mut n = 0; n += m_i64;` makes `n` an `i64`, and so does a
        // call's result (`n += f(x)`, typed by `f`'s signature) or an expression over one.
        if flexible && (is_pure(value) || has_call_type(value)) && op != Some(BinOp::Shift) {
            let fits = matches!(infer(value, Some(&ty), &self.view()), Ok(t) if t == ty);
            if !fits {
                if let Ok(t @ Ty::Scalar(_)) = infer(value, None, &self.view()) {
                    if t != ty {
                        self.demand(&target.to_string(), &t);
                    }
                }
            }
        }
        match op {
            None => self.compile_into(value, Place::Var, &ty),
            Some(bop) => {
                let hint = (bop != BinOp::Shift && ty != Ty::Vector).then_some(&ty);
                if let Strategy::ControlFlow = classify(value, hint, &self.view()) {
                    self.compile(value, hint);
                }
            }
        }
    }

    /// As the translation's `mixed`: operands first, then one kernel combining them.
    fn mixed(&mut self, e: &Expr, expected: Option<&Ty>) -> Typing {
        let mut types = Vec::new();
        let mut operands: Vec<(&Expr, Option<Ty>)> = Vec::new();
        match &e.kind {
            ExprKind::Binary(op, _, l, r) => {
                let hint = (*op != BinOp::Compare).then_some(expected).flatten();
                let rhint = (*op != BinOp::Shift).then_some(hint).flatten();
                operands.push((l, hint.cloned()));
                operands.push((r, rhint.cloned()));
            }
            ExprKind::Unary(_, x) | ExprKind::Ref(x) => operands.push((x, expected.cloned())),
            ExprKind::Cast(x, _, _) | ExprKind::Field(x, _) => operands.push((x, None)),
            ExprKind::Method(r, _, args) => {
                operands.push((r, None));
                operands.extend(args.iter().map(|a| (a, None)));
            }
            ExprKind::Assoc(_, _, args) => operands.extend(args.iter().map(|a| (a, None))),
            ExprKind::Tuple(items) => {
                let hints: Vec<Option<Ty>> = match expected {
                    Some(Ty::Tuple(ts)) if ts.len() == items.len() => {
                        ts.iter().cloned().map(Some).collect()
                    }
                    _ => vec![None; items.len()],
                };
                operands.extend(items.iter().zip(hints));
            }
            _ => return Typing::Unit,
        }
        for (x, hint) in operands {
            match self.compile(x, hint.as_ref()) {
                Typing::Typed(t) => types.push(t),
                _ => return Typing::Diverged,
            }
        }
        if let (ExprKind::Binary(op, _, l, r), [lt, rt]) = (&e.kind, types.as_slice()) {
            if *op != BinOp::Shift {
                same_type(l, lt, r, rt, &self.view());
            }
        }
        let Some(ty) = operator_type(e, &types, expected) else {
            return Typing::Unit;
        };
        if !self.live {
            return Typing::Diverged;
        }
        Typing::Typed(ty)
    }

    fn call(
        &mut self,
        path: &syn::Path,
        args: &[Expr],
        expected: Option<&Ty>,
        dest: Option<Place>,
    ) -> Typing {
        let (args, _) = context::split_args(args);
        let args = args.as_slice();
        let is_self = self.func.is_self_path(path);
        let hints = self.func.argument_types(path, args.len());
        if is_self && args.len() != hints.len() {
            return Typing::Unit;
        }
        for (a, hint) in args.iter().zip(&hints) {
            let a = match &a.kind {
                ExprKind::Ref(inner) => inner,
                _ => a,
            };
            if let (ExprKind::Var(id), Some(h)) = (&a.kind, hint) {
                self.demand(&id.to_string(), h);
            }
            if let Typing::Diverged = self.compile(a, hint.as_ref()) {
                return Typing::Diverged;
            }
        }
        let ret = if is_self {
            self.func.ret.clone()
        } else {
            match expected {
                Some(t) => t.clone(),
                None => return Typing::Unit,
            }
        };
        if !self.live {
            return Typing::Diverged;
        }
        match dest {
            Some(_) => Typing::Unit,
            None if ret.is_unit() => Typing::Unit,
            None => Typing::Typed(ret),
        }
    }

    fn if_(
        &mut self,
        cond: &Expr,
        then: &Block,
        els: Option<&Expr>,
        expected: Option<&Ty>,
        dest: Option<Place>,
    ) -> Typing {
        if !self.branch_on(cond) {
            return Typing::Diverged;
        }
        let mut result: Option<(Place, Ty)> = dest.zip(expected.cloned());
        let value_wanted = expected.is_some_and(|t| !t.is_unit()) || dest.is_some();
        let mut joined = false;
        let arms = std::iter::once(Arm::Block(then)).chain(els.map(Arm::Expr));
        for arm in arms {
            self.live = true;
            self.scoped(|w| {
                let hint = result
                    .as_ref()
                    .map(|(_, t)| t.clone())
                    .or(expected.cloned());
                match (&result, value_wanted) {
                    (Some((d, ty)), true) => {
                        let (d, ty) = (*d, ty.clone());
                        match arm {
                            Arm::Block(b) => w.block_into(b, Some(d), &ty),
                            Arm::Expr(x) => w.compile_into(x, d, &ty),
                        }
                    }
                    _ => {
                        let v = match arm {
                            Arm::Block(b) => w.block_value(b, hint.as_ref()),
                            Arm::Expr(x) => w.compile(x, hint.as_ref()),
                        };
                        if let (Typing::Typed(ty), None) = (v, &result) {
                            result = Some((Place::Var, ty));
                        }
                    }
                }
            });
            joined |= self.live;
        }
        joined |= els.is_none();
        self.live = joined;
        match result {
            _ if !joined => Typing::Diverged,
            Some((Place::Var, ty)) if dest.is_none() && els.is_some() => Typing::Typed(ty),
            _ => Typing::Unit,
        }
    }

    /// Types a branch condition; false if control does not get to the branch.
    fn branch_on(&mut self, cond: &Expr) -> bool {
        let bool_ty = Ty::Scalar(DType::Bool);
        matches!(self.compile(cond, Some(&bool_ty)), Typing::Typed(_)) && self.live
    }

    fn while_(&mut self, label: Option<&Label>, cond: &Expr, body: &Block) -> Typing {
        if !self.branch_on(cond) {
            return Typing::Diverged;
        }
        self.loops.push(LoopTypes {
            label: label.cloned(),
            broken: true,
            result: None,
        });
        self.scoped(|w| w.block_value(body, Some(&Ty::unit())));
        self.loops.pop();
        self.live = true;
        Typing::Unit
    }

    fn loop_(&mut self, label: Option<&Label>, body: &Block, expected: Option<&Ty>) -> Typing {
        self.live = true;
        self.loops.push(LoopTypes {
            label: label.cloned(),
            broken: false,
            result: expected.filter(|t| !t.is_unit()).cloned(),
        });
        self.scoped(|w| w.block_value(body, Some(&Ty::unit())));
        let ctx = self.loops.pop().unwrap_or(LoopTypes {
            label: None,
            broken: false,
            result: None,
        });
        self.live = ctx.broken;
        match (ctx.broken, ctx.result) {
            (false, _) => Typing::Diverged,
            (true, Some(ty)) => Typing::Typed(ty),
            (true, None) => Typing::Unit,
        }
    }

    /// The index of the loop a `break` or `continue` with `label` leaves, as the translation
    /// finds it.
    fn target_loop(&self, label: Option<&Label>) -> Option<usize> {
        match label {
            None => self.loops.len().checked_sub(1),
            Some(l) => self.loops.iter().rposition(|c| c.label.as_ref() == Some(l)),
        }
    }

    fn break_(&mut self, label: Option<&Label>, value: Option<&Expr>) -> Typing {
        let Some(at) = self.target_loop(label) else {
            return Typing::Diverged;
        };
        if let Some(v) = value {
            let hint = self.loops[at].result.clone();
            match self.compile(v, hint.as_ref()) {
                Typing::Typed(ty) => {
                    self.loops[at].result.get_or_insert(ty);
                }
                Typing::Diverged => return Typing::Diverged,
                Typing::Unit => {}
            }
        }
        self.loops[at].broken = true;
        self.live = false;
        Typing::Diverged
    }

    /// As the translation's `for_`: the bounds at the range's type, the step at its own, then
    /// the body with the loop variable bound (re-typed, with the range, by its uses).
    fn for_(&mut self, f: &ForLoop) -> Typing {
        let Some(ty) = range_type(f, self.fixed, &self.view()) else {
            return Typing::Unit;
        };
        self.compile_into(&f.lo, Place::Var, &ty);
        self.compile_into(&f.hi, Place::Var, &ty);
        if let Some(s) = &f.step {
            self.compile(s, None);
        }
        if !self.live {
            return Typing::Diverged;
        }
        self.loops.push(LoopTypes {
            label: f.label.clone(),
            broken: true,
            result: None,
        });
        self.scoped(|w| {
            if let Some(var) = &f.var {
                w.bind(var.to_string(), ty.clone(), Some(std::ptr::from_ref(&f.lo)));
            }
            w.block_value(&f.body, Some(&Ty::unit()));
        });
        self.loops.pop();
        self.live = true;
        Typing::Unit
    }
}

/// The integer type a `for` loop's range has: the one its variable's uses fixed (keyed by the
/// range's start in [`LetTypes`]), else that of the bound that is not an unsuffixed literal
/// (`0..n` counts in `n`'s type), else the start's, or `i64` next to a constant the macro cannot
/// see; `None` if typing the bounds fails.
pub fn range_type(f: &ForLoop, fixed: &LetTypes, scope: &dyn Scope) -> Option<Ty> {
    if let Some(t) = fixed.get(&f.lo) {
        return Some(t.clone());
    }
    let free = |e: &Expr| {
        matches!(
            e.kind,
            ExprKind::Lit { suffix: None, .. } | ExprKind::Const(None)
        )
    };
    let unseen = |e: &Expr| matches!(e.kind, ExprKind::Const(None));
    if free(&f.lo) && !free(&f.hi) {
        infer(&f.hi, None, scope).ok()
    } else if free(&f.lo) && (unseen(&f.lo) || unseen(&f.hi)) {
        // Nothing here gives the type of a constant the macro cannot see: `0..N` counts in
        // `i64` (rustc says so at `N` if it has another type).
        Some(Ty::Scalar(DType::I64))
    } else {
        infer(&f.lo, None, scope).ok()
    }
}

/// An `if`'s arm: its `then` block, or its `else` expression.
#[derive(Clone, Copy)]
enum Arm<'e> {
    Block(&'e Block),
    Expr(&'e Expr),
}

/// The names a pattern binds over a value of type `ty`, with their types; false if the pattern
/// does not fit (the translation reports it, and binds nothing).
fn flatten(pat: &Pat, ty: &Ty, binds: &mut Vec<(String, Ty)>) -> bool {
    match (pat, ty) {
        (Pat::Ident(name), _) => {
            binds.push((name.to_string(), ty.clone()));
            true
        }
        (Pat::Wild, _) => true,
        (Pat::Tuple(ps), Ty::Tuple(ts)) if ps.len() == ts.len() => {
            ps.iter().zip(ts).all(|(p, t)| flatten(p, t, binds))
        }
        (Pat::Tuple(_), _) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::let_types;
    use crate::parse::ast::{Stmt, Ty};
    use crate::parse::{self, Errors};
    use autobatch_ir::DType;

    /// The types fixed for the `let`s of `item`'s body (top level), in order: `None` where the
    /// initialiser's own type stands.
    fn fixed(item: syn::ItemFn) -> Vec<Option<Ty>> {
        let mut errors = Errors::default();
        let func = parse::func(&item, &mut errors);
        assert!(errors.finish().is_ok());
        let lets = let_types(&func);
        func.body
            .stmts
            .iter()
            .filter_map(|s| match s {
                Stmt::Let { init, .. } => Some(lets.get(init).cloned()),
                Stmt::Expr(_) => None,
            })
            .collect()
    }

    const I64: Ty = Ty::Scalar(DType::I64);
    const F32: Ty = Ty::Scalar(DType::F32);

    #[test]
    fn a_literal_let_returned_as_i64_is_an_i64() {
        let t = fixed(syn::parse_quote! {
            fn f(n: i64) -> i64 {
                let mut steps = 0;
                let mut k = n;
                while k > 1 { k = k / 2; steps += 1; }
                steps
            }
        });
        assert_eq!(t, [Some(I64), None]);
    }

    #[test]
    fn a_let_assigned_a_wider_value_inside_an_if_takes_its_type() {
        let t = fixed(syn::parse_quote! {
            fn f(c: bool, n: i64) -> bool {
                let mut state = 0;
                if c { state = n; }
                state > 3
            }
        });
        assert_eq!(t, [Some(I64)]);
    }

    #[test]
    fn a_let_passed_to_the_function_itself_takes_the_parameter_type() {
        let t = fixed(syn::parse_quote! {
            fn f(x: f32, d: i64) -> f32 {
                let y = 1.5;
                if d == 0 { x } else { f(y, d - 1) }
            }
        });
        assert_eq!(t, [Some(F32)]);
    }

    #[test]
    fn lets_whose_default_fits_are_left_alone() {
        let t = fixed(syn::parse_quote! {
            fn f(n: i32) -> i32 {
                let a = 1;
                let b: i64 = 2;
                a + n + b as i32
            }
        });
        assert_eq!(t, [None, None]);
    }

    #[test]
    fn lets_used_together_take_one_type_from_a_later_use() {
        let t = fixed(syn::parse_quote! {
            fn f(n: u8) -> i64 {
                let mut total = 0;
                let mut i = 0;
                while i < 3 { total += i; i += 1; }
                let copy = total;
                copy * n as i64
            }
        });
        assert_eq!(t, [Some(I64), Some(I64), Some(I64)]);
    }

    #[test]
    fn an_exponent_is_a_u32_and_a_literal_next_to_a_u8_a_u8() {
        let t = fixed(syn::parse_quote! {
            fn f(x: u64, b: u8) -> (u64, bool) {
                let k = 2;
                let limit = 100;
                (x.pow(k), b < limit)
            }
        });
        assert_eq!(
            t,
            [Some(Ty::Scalar(DType::U32)), Some(Ty::Scalar(DType::U8))]
        );
    }

    #[test]
    fn a_tuple_let_of_literals_is_typed_per_element_from_their_uses() {
        let t = fixed(syn::parse_quote! {
            fn f(n: u8) -> u64 {
                let (mut a, mut b) = (0, 1);
                let mut i = 0;
                while i < n { let next = a + b; a = b; b = next; i += 1; }
                a
            }
        });
        let u64_ty = Ty::Scalar(DType::U64);
        assert_eq!(
            t,
            [
                Some(Ty::Tuple(vec![u64_ty.clone(), u64_ty])),
                Some(Ty::Scalar(DType::U8))
            ]
        );
    }

    #[test]
    fn a_for_loop_counts_in_the_type_its_variable_is_used_at() {
        use crate::parse::ast::ExprKind;
        let item: syn::ItemFn = syn::parse_quote! {
            fn f(x: i64) -> i64 {
                let mut acc: i64 = 0;
                for k in 0..5 { acc = acc * x + k; }
                for j in 0..3 { acc += 1; }
                acc
            }
        };
        let mut errors = Errors::default();
        let func = parse::func(&item, &mut errors);
        assert!(errors.finish().is_ok());
        let lets = let_types(&func);
        let ranges: Vec<Option<Ty>> = func
            .body
            .stmts
            .iter()
            .filter_map(|s| match s {
                Stmt::Expr(e) => match &e.kind {
                    ExprKind::For(f) => Some(lets.get(&f.lo).cloned()),
                    _ => None,
                },
                Stmt::Let { .. } => None,
            })
            .collect();
        assert_eq!(ranges, [Some(I64), None]);
    }

    #[test]
    fn tuple_lets_bind_the_call_results_types() {
        let t = fixed(syn::parse_quote! {
            fn f(n: i64) -> (i64, f64) {
                if n == 0 { return (0, 1.0); }
                let (a, b) = f(n - 1);
                let mut c = 0;
                c += a;
                (c, b)
            }
        });
        assert_eq!(t, [None, Some(I64)]);
    }
}

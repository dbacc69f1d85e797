//! Type inference for expressions of the language: bidirectional and local, enough to give
//! every IR variable and kernel binding its Rust type. Kernels spell out these types, so a wrong
//! inference becomes a rustc type error, never a silent mistake.
//!
//! Pure `if`s and blocks (only `let`s and a value) are typed here too, with the names their
//! `let`s bind in scope inside them: they compile into kernels whole. The pass over a whole
//! function that fixes its `let`s' types before translation is [`function`].

pub mod classify;
pub mod function;

use super::context;
use crate::parse::ast::{BinOp, Block, Expr, ExprKind, Pat, Stmt, Ty};
use autobatch_ir::DType;
use std::cell::RefCell;
use std::collections::HashMap;

/// The type of a local variable in scope, if any.
pub trait Scope {
    /// The type of variable `name`.
    fn lookup(&self, name: &str) -> Option<Ty>;
    /// True if `name` failed to bind (already reported).
    fn is_poisoned(&self, name: &str) -> bool;
    /// The return type of the `#[autobatch]` function `path`, if this macro knows it.
    fn callee_return(&self, path: &syn::Path) -> Option<Ty>;
    /// Records that variable `name` is used where a value of type `ty` is needed (lets whose
    /// type came from a literal's default are re-typed from these demands); by default, nothing.
    fn demand(&self, _name: &str, _ty: &Ty) {}
    /// Records that variables `a` (of type `a_ty`) and `b` (of type `b_ty`) have one type (the
    /// operands of `+`, a variable assigned to another): by default each is demanded at the
    /// other's type; the inference pass types two unannotated `let`s together, as rustc does.
    fn unify(&self, a: &str, a_ty: &Ty, b: &str, b_ty: &Ty) {
        if a_ty != b_ty {
            self.demand(a, b_ty);
            self.demand(b, a_ty);
        }
    }
    /// Called with the type of every `if` and block expression typed as a value (kernel
    /// classification keeps `()`- and vector-valued ones as control flow).
    fn typed_branch(&self, _ty: &Ty) {}
}

/// An inference failure with the expression at fault (an empty message: already reported).
pub struct TypeError {
    /// Where.
    pub span: proc_macro2::Span,
    /// What to do about it.
    pub message: String,
}

fn err<T>(e: &Expr, message: impl Into<String>) -> Result<T, TypeError> {
    Err(TypeError {
        span: e.span,
        message: message.into(),
    })
}

/// Float methods whose result has the receiver's type.
const FLOAT_SAME_TYPE: &[&str] = &[
    "abs",
    "sqrt",
    "cbrt",
    "exp",
    "exp2",
    "exp_m1",
    "ln",
    "ln_1p",
    "log10",
    "log2",
    "log",
    "powi",
    "powf",
    "min",
    "max",
    "clamp",
    "floor",
    "ceil",
    "round",
    "trunc",
    "fract",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "signum",
    "recip",
    "hypot",
    "mul_add",
    "to_degrees",
    "to_radians",
    "copysign",
    "rem_euclid",
    "div_euclid",
];

/// Float methods whose result is `bool`.
const FLOAT_BOOL: &[&str] = &[
    "is_nan",
    "is_finite",
    "is_infinite",
    "is_normal",
    "is_sign_positive",
    "is_sign_negative",
];

/// Integer methods whose result, and every argument, has the receiver's type.
const INT_SAME_TYPE: &[&str] = &[
    "abs",
    "signum",
    "min",
    "max",
    "clamp",
    "isqrt",
    "swap_bytes",
    "reverse_bits",
    "rem_euclid",
    "div_euclid",
    "wrapping_add",
    "wrapping_sub",
    "wrapping_mul",
    "wrapping_div",
    "wrapping_rem",
    "wrapping_neg",
    "wrapping_abs",
    "wrapping_rem_euclid",
    "wrapping_div_euclid",
    "saturating_add",
    "saturating_sub",
    "saturating_mul",
    "saturating_div",
];

/// Integer methods whose result has the receiver's type and whose one argument is a `u32`
/// (an exponent, a bit count).
const INT_U32_ARGUMENT: &[&str] = &[
    "pow",
    "saturating_pow",
    "wrapping_pow",
    "rotate_left",
    "rotate_right",
    "wrapping_shl",
    "wrapping_shr",
];

/// Integer methods whose result is a `u32` (a count of bits, a logarithm).
const INT_U32_RESULT: &[&str] = &[
    "count_ones",
    "count_zeros",
    "leading_zeros",
    "trailing_zeros",
    "leading_ones",
    "trailing_ones",
    "ilog2",
    "ilog10",
];

/// Integer methods whose result is `(value, overflowed)`; their arguments as in
/// [`INT_SAME_TYPE`] (`overflowing_add`) or [`INT_U32_ARGUMENT`] (`overflowing_pow`).
const INT_OVERFLOWING: &[&str] = &[
    "overflowing_add",
    "overflowing_sub",
    "overflowing_mul",
    "overflowing_neg",
    "overflowing_pow",
    "overflowing_shl",
    "overflowing_shr",
];

/// The type of the arguments of method `name` on a receiver of type `recv` (what an
/// unsuffixed literal there becomes): the receiver's own type unless the method takes
/// something else.
pub fn method_argument(recv: &Ty, name: &str) -> Ty {
    let u32_ty = Ty::Scalar(DType::U32);
    match name {
        "powi" => Ty::Scalar(DType::I32),
        "get" if *recv == Ty::Vector => Ty::Scalar(DType::Usize),
        _ if recv.is_int() && INT_U32_ARGUMENT.contains(&name) => u32_ty,
        "overflowing_pow" | "overflowing_shl" | "overflowing_shr" if recv.is_int() => u32_ty,
        _ => recv.clone(),
    }
}

/// True if method `name`'s result has its receiver's type (so the receiver takes the type its
/// context expects, as rustc infers an unsuffixed literal receiver).
fn keeps_receiver_type(name: &str) -> bool {
    FLOAT_SAME_TYPE.contains(&name)
        || INT_SAME_TYPE.contains(&name)
        || INT_U32_ARGUMENT.contains(&name)
}

/// Why method `name` is not supported, when it is a known method the language leaves out.
fn refused_method(name: &str) -> Option<String> {
    if let Some(op) = name.strip_prefix("checked_") {
        return Some(format!(
            "`{name}` returns an `Option`, which #[autobatch] code cannot hold; use `wrapping_{op}`, `saturating_{op}` or `overflowing_{op}` (a `(value, overflowed)` tuple), or test the operands first"
        ));
    }
    matches!(name, "try_into" | "try_from").then(|| {
        format!("`{name}` returns a `Result`, which #[autobatch] code cannot hold; convert with `as` (after checking the range) or `into()` where the conversion cannot fail")
    })
}

/// The message for method `name`, which a receiver of type `recv` does not have here.
fn unsupported_method(recv: &Ty, name: &str) -> String {
    refused_method(name).unwrap_or_else(|| {
        format!(
            "method `{name}` is not supported on {} in #[autobatch] code",
            describe(recv)
        )
    })
}

/// The type of `e`, given the type the context expects (used for unsuffixed literals).
pub fn infer(e: &Expr, expected: Option<&Ty>, scope: &dyn Scope) -> Result<Ty, TypeError> {
    match &e.kind {
        ExprKind::Lit { float, suffix, .. } => Ok(match (suffix, expected) {
            (Some(d), _) => Ty::Scalar(*d),
            (None, Some(t)) if (*float && t.is_float()) || (!*float && (t.is_int() || t.is_float())) => {
                if !*float && t.is_float() {
                    return err(e, "an integer literal where a float is expected: write it as a float (`1.0`)");
                }
                t.clone()
            }
            (None, _) => Ty::Scalar(if *float { DType::F64 } else { DType::I32 }),
        }),
        ExprKind::Var(id) => match scope.lookup(&id.to_string()) {
            Some(t) => Ok(t),
            None if scope.is_poisoned(&id.to_string()) => err(e, ""),
            None => err(e, unknown_variable(id)),
        },
        ExprKind::Invalid => err(e, ""),
        ExprKind::Const(Some(t)) => Ok(t.clone()),
        ExprKind::Const(None) => match expected {
            Some(t) => Ok(t.clone()),
            None => err(e, format!("the type of the constant `{}` is not known here; annotate it (`let x: i64 = {}`)", e.tokens, e.tokens)),
        },
        // A context read has the type its place needs (rustc checks it in the kernel).
        ExprKind::Uniform(true) => err(e, context::whole_message(e)),
        ExprKind::Uniform(false) => expected.cloned().map_or_else(|| err(e, context::untyped_message(e)), Ok),
        // A context read compared with a literal or another read: rustc types both in the
        // kernel, the result is a `bool` whatever their type.
        ExprKind::Binary(BinOp::Compare, _, l, r) if context::compares_reads(l, r) => Ok(Ty::Scalar(DType::Bool)),
        ExprKind::Binary(op, _, l, r) => {
            let operand_expected = match op {
                BinOp::Arith | BinOp::Shift => expected,
                BinOp::Compare => None,
                BinOp::And | BinOp::Or => Some(&Ty::Scalar(DType::Bool)),
            };
            let (lt, rt) = infer_pair(l, r, operand_expected, *op == BinOp::Shift, scope)?;
            if let Some(want @ Ty::Scalar(_)) = operand_expected.filter(|_| *op != BinOp::And && *op != BinOp::Or) {
                // `total * 1_000` where an `i64` is needed makes an unannotated `total` one.
                if lt != *want {
                    demand_var(l, want, scope);
                }
                if rt != *want && *op == BinOp::Arith {
                    demand_var(r, want, scope);
                }
            }
            match op {
                BinOp::Compare | BinOp::And | BinOp::Or => Ok(Ty::Scalar(DType::Bool)),
                BinOp::Shift => Ok(lt),
                BinOp::Arith => Ok(match (&lt, &rt) {
                    (Ty::Scalar(_), Ty::Vector) => Ty::Vector,
                    _ => lt,
                }),
            }
        }
        ExprKind::Unary(_, inner) | ExprKind::Ref(inner) => {
            let t = infer(inner, expected, scope)?;
            if let Some(want @ Ty::Scalar(_)) = expected.filter(|w| **w != t) {
                demand_var(inner, want, scope);
            }
            Ok(t)
        }
        ExprKind::Cast(inner, t, _) => {
            // A context read or a constant the macro cannot see is cast as rustc types it.
            if !matches!(inner.kind, ExprKind::Uniform(false) | ExprKind::Const(None)) {
                infer(inner, None, scope)?;
            }
            Ok(t.clone())
        }
        ExprKind::Method(recv, name, args) => {
            let n = name.to_string();
            if let Some(message) = refused_method(&n) {
                return err(e, message);
            }
            let hint = expected.filter(|_| keeps_receiver_type(&n));
            let rt = infer(recv, hint, scope)?;
            if n == "into" {
                // `x.into()` is the `From` conversion to the type its place needs.
                return expected.cloned().map_or_else(|| err(e, "cannot infer the type `into()` converts to here; annotate the binding (`let y: u64 = x.into();`) or write `u64::from(x)`"), Ok);
            }
            infer_arguments(recv, &rt, &n, args, scope)?;
            method_type(&rt, &n).map_or_else(|| err(e, unsupported_method(&rt, &n)), Ok)
        }
        ExprKind::Assoc(ty_name, f, args) => {
            let (tn, fname) = (ty_name.to_string(), f.to_string());
            if let Some(message) = refused_method(&fname) {
                return err(e, message);
            }
            match (suffix_type(&tn), fname.as_str()) {
                // `u64::from(x)` (rustc checks the conversion exists), `f64::from_bits(u64)`.
                (Some(t), "from_bits") => infer_all(args, method_type(&t, "to_bits").as_ref(), scope)?,
                // `f64::max(a, b)`, `u32::pow(x, 2)`: the method with its receiver first.
                (Some(t), name) if name != "from" => {
                    if let Some((first, rest)) = args.split_first() {
                        infer(first, Some(&t), scope)?;
                        infer_arguments(first, &t, name, rest, scope)?;
                    }
                }
                _ => infer_all(args, None, scope)?,
            }
            assoc_type(&tn, &fname).map_or_else(|| err(e, format!("`{tn}::{fname}` is not supported in #[autobatch] code")), Ok)
        }
        ExprKind::Tuple(items) => {
            let hints: Vec<Option<&Ty>> = match expected {
                Some(Ty::Tuple(ts)) if ts.len() == items.len() => ts.iter().map(Some).collect(),
                _ => vec![None; items.len()],
            };
            Ok(Ty::Tuple(items.iter().zip(hints).map(|(i, h)| infer(i, h, scope)).collect::<Result<_, _>>()?))
        }
        ExprKind::Field(base, i) => match infer(base, None, scope)? {
            Ty::Tuple(items) if (*i as usize) < items.len() => Ok(items[*i as usize].clone()),
            other => err(e, format!("no field `{i}` on {}", describe(&other))),
        },
        ExprKind::Call(path, _) => match scope.callee_return(path).or_else(|| expected.cloned()) {
            Some(t) => Ok(t),
            None => err(
                e,
                format!(
                    "cannot infer the return type of `{}` here (it is not visible to this macro); annotate the binding, e.g. `let x: i64 = {}(..);`",
                    path_text(path),
                    path_text(path)
                ),
            ),
        },
        ExprKind::If(cond, then, Some(els)) => {
            let bool_ty = Ty::Scalar(DType::Bool);
            let cond_ty = infer(cond, Some(&bool_ty), scope)?;
            if cond_ty != bool_ty {
                return err(cond, format!("expected bool, found {}", describe(&cond_ty)));
            }
            let then_ty = match infer_block(then, expected, scope) {
                Ok(t) => t,
                // A branch that takes its type from the other (a constant the macro cannot
                // see: `if c { N } else { n }`) is typed after it.
                Err(_) if expected.is_none() => {
                    let else_ty = infer(els, None, scope)?;
                    infer_block(then, Some(&else_ty), scope)?
                }
                Err(te) => return Err(te),
            };
            let else_ty = infer(els, expected.or(Some(&then_ty)), scope)?;
            let ty = if then_ty == else_ty {
                then_ty
            } else {
                // The branches disagree: the first one's type may be a literal's default,
                // which the second one's corrects (`if c { 1 } else { n }` with `n: i64`).
                let retyped = infer_block(then, Some(&else_ty), scope)?;
                if retyped != else_ty {
                    return err(
                        e,
                        format!(
                            "`if` and `else` have different types: {} and {}",
                            describe(&retyped),
                            describe(&else_ty)
                        ),
                    );
                }
                retyped
            };
            scope.typed_branch(&ty);
            Ok(ty)
        }
        ExprKind::Block(b) => {
            let ty = infer_block(b, expected, scope)?;
            scope.typed_branch(&ty);
            Ok(ty)
        }
        _ => err(e, "internal: control flow has no pure type"),
    }
}

/// How many times a block's unannotated `let`s are re-typed from their uses, at most.
const LOCAL_ROUNDS: usize = 4;

/// The type of a block of `let`s and a value (a branch of a pure `if`), its names in scope.
///
/// An unannotated `let` takes its type from its uses, as the inference pass does for the
/// function's own `let`s ([`function`]): `let k = 0; k + n` with `n: i64` makes `k` an `i64`, as rustc infers it.
fn infer_block(b: &Block, expected: Option<&Ty>, scope: &dyn Scope) -> Result<Ty, TypeError> {
    let mut retyped: HashMap<usize, Ty> = HashMap::new();
    let mut round = 1;
    loop {
        let mut locals = Locals {
            outer: scope,
            names: Vec::new(),
            demands: RefCell::new(Vec::new()),
        };
        for (i, s) in b.stmts.iter().enumerate() {
            let (pat, ty, init) = match s {
                Stmt::Let { pat, ty, init } => (pat, ty, init),
                Stmt::Expr(x) => return err(x, "internal: only `let` statements have a pure type"),
            };
            let flexible = (ty.is_none() && matches!(pat, Pat::Ident(_))).then_some(i);
            let want = ty.as_ref().or_else(|| retyped.get(&i));
            let t = infer(init, want, &locals)?;
            if let Some(a) = ty {
                if *a != t {
                    return err(
                        init,
                        format!("expected {}, found {}", describe(a), describe(&t)),
                    );
                }
            }
            locals.bind(pat, &t, flexible, init)?;
        }
        let ty = match &b.tail {
            Some(tail) => {
                let t = infer(tail, expected, &locals)?;
                if let (ExprKind::Var(id), Some(want)) = (&tail.kind, expected) {
                    // A variable typed by a literal's default takes the type the block's value
                    // needs: this block's `let`s in the next round here, the function's in the
                    // inference pass's next walk.
                    if t != *want && !t.has_vector() && !want.has_vector() {
                        locals.demand(&id.to_string(), want);
                    }
                }
                t
            }
            None => Ty::unit(),
        };
        let changed = locals
            .demands
            .into_inner()
            .into_iter()
            .fold(false, |changed, (i, t)| {
                let old = retyped.insert(i, t.clone());
                changed || old.as_ref() != Some(&t)
            });
        if !changed || round == LOCAL_ROUNDS {
            return Ok(ty);
        }
        round += 1;
    }
}

/// The names a block's `let`s bind, over the enclosing scope.
struct Locals<'s> {
    outer: &'s dyn Scope,
    /// In binding order: name, type, and the index of an unannotated `let name` (re-typable).
    names: Vec<(String, Ty, Option<usize>)>,
    /// Types demanded for the re-typable `let`s: (index, type).
    demands: RefCell<Vec<(usize, Ty)>>,
}

impl Locals<'_> {
    /// The innermost local binding of `name`.
    fn local(&self, name: &str) -> Option<&(String, Ty, Option<usize>)> {
        self.names.iter().rev().find(|(n, _, _)| n == name)
    }

    /// Binds the names of `pat` to the parts of a value of type `ty`.
    fn bind(
        &mut self,
        pat: &Pat,
        ty: &Ty,
        flexible: Option<usize>,
        init: &Expr,
    ) -> Result<(), TypeError> {
        match (pat, ty) {
            (Pat::Ident(id), _) => {
                self.names.push((id.to_string(), ty.clone(), flexible));
                Ok(())
            }
            (Pat::Wild, _) => Ok(()),
            (Pat::Tuple(ps), Ty::Tuple(ts)) if ps.len() == ts.len() => ps
                .iter()
                .zip(ts)
                .try_for_each(|(p, t)| self.bind(p, t, None, init)),
            (Pat::Tuple(_), _) => err(
                init,
                format!(
                    "this pattern does not match a value of type {}",
                    describe(ty)
                ),
            ),
        }
    }
}

impl Scope for Locals<'_> {
    fn lookup(&self, name: &str) -> Option<Ty> {
        match self.local(name) {
            Some((_, t, _)) => Some(t.clone()),
            None => self.outer.lookup(name),
        }
    }

    fn is_poisoned(&self, name: &str) -> bool {
        self.local(name).is_none() && self.outer.is_poisoned(name)
    }

    fn callee_return(&self, path: &syn::Path) -> Option<Ty> {
        self.outer.callee_return(path)
    }

    fn demand(&self, name: &str, ty: &Ty) {
        match self.local(name) {
            Some((_, t, Some(i))) if t != ty => self.demands.borrow_mut().push((*i, ty.clone())),
            Some(_) => {}
            None => self.outer.demand(name, ty),
        }
    }

    fn unify(&self, a: &str, a_ty: &Ty, b: &str, b_ty: &Ty) {
        if self.local(a).is_none() && self.local(b).is_none() {
            self.outer.unify(a, a_ty, b, b_ty);
        } else if a_ty != b_ty {
            self.demand(a, b_ty);
            self.demand(b, a_ty);
        }
    }

    fn typed_branch(&self, ty: &Ty) {
        self.outer.typed_branch(ty);
    }
}

/// The message for a name that is not a variable of the function (or an already reported one).
pub fn unknown_variable(id: &syn::Ident) -> String {
    format!(
        "cannot find variable `{id}` in this #[autobatch] function; name a constant in SCREAMING_CASE (`N`, `Type::N`), and pass any other value from outside as a parameter"
    )
}

/// Infers two operands that must share a type; an unsuffixed literal takes the other's type.
fn infer_pair(
    l: &Expr,
    r: &Expr,
    expected: Option<&Ty>,
    shift: bool,
    scope: &dyn Scope,
) -> Result<(Ty, Ty), TypeError> {
    // An unsuffixed literal, a context read or an unseen constant takes the other operand's type.
    let is_free_lit = |e: &Expr| {
        matches!(
            e.kind,
            ExprKind::Lit { suffix: None, .. } | ExprKind::Uniform(false) | ExprKind::Const(None)
        )
    };
    let (lt, rt) = infer_pair_inner(l, r, expected, shift, scope, is_free_lit)?;
    if !shift {
        same_type(l, &lt, r, &rt, scope);
    }
    Ok((lt, rt))
}

/// Notes that `a` (of type `at`) and `b` (of type `bt`) must have one type: two variables are
/// unified, a variable and another expression of another type demand the other's type.
pub fn same_type(a: &Expr, at: &Ty, b: &Expr, bt: &Ty, scope: &dyn Scope) {
    if at.has_vector() || bt.has_vector() {
        return;
    }
    match (&a.kind, &b.kind) {
        (ExprKind::Var(x), ExprKind::Var(y)) => {
            scope.unify(&x.to_string(), at, &y.to_string(), bt);
        }
        _ if at != bt => {
            demand_var(a, bt, scope);
            demand_var(b, at, scope);
        }
        _ => {}
    }
}

fn infer_pair_inner(
    l: &Expr,
    r: &Expr,
    expected: Option<&Ty>,
    shift: bool,
    scope: &dyn Scope,
    is_free_lit: impl Fn(&Expr) -> bool,
) -> Result<(Ty, Ty), TypeError> {
    if shift {
        let lt = infer(l, expected, scope)?;
        let rt = infer(r, None, scope)?;
        return Ok((lt, rt));
    }
    if is_free_lit(l) && !is_free_lit(r) {
        let rt = infer(r, expected, scope)?;
        let hint = if rt == Ty::Vector {
            Ty::Scalar(DType::F64)
        } else {
            rt.clone()
        };
        let lt = infer(l, Some(&hint), scope)?;
        Ok((lt, rt))
    } else {
        let lt = infer(l, expected, scope)?;
        let hint = if lt == Ty::Vector {
            None
        } else {
            Some(lt.clone())
        };
        let rt = infer(r, hint.as_ref().or(expected), scope)?;
        Ok((lt, rt))
    }
}

/// The element types of the value of `let (p0, p1, ..) = init` with `arity` elements: its
/// annotated type (`expected`) or the one inferred for `init`; `None` unless that is a tuple of
/// `arity` elements.
pub fn tuple_elements(
    arity: usize,
    expected: Option<&Ty>,
    init: &Expr,
    scope: &dyn Scope,
) -> Option<Vec<Ty>> {
    let ty = match expected {
        Some(t) => t.clone(),
        None => infer(init, None, scope).ok()?,
    };
    match ty {
        Ty::Tuple(tys) if tys.len() == arity => Some(tys),
        _ => None,
    }
}

/// The result type of method `name` on a receiver of type `recv`.
pub fn method_type(recv: &Ty, name: &str) -> Option<Ty> {
    let bool_ty = Ty::Scalar(DType::Bool);
    match recv {
        Ty::Vector => match name {
            "dot" | "sum" | "norm_squared" | "get" => Some(Ty::Scalar(DType::F64)),
            "len" => Some(Ty::Scalar(DType::Usize)),
            "map" | "zip_map" | "clone" => Some(Ty::Vector),
            _ => None,
        },
        Ty::Scalar(DType::Key) => match name {
            "uniform" | "normal" => Some(Ty::Tuple(vec![
                Ty::Scalar(DType::F64),
                Ty::Scalar(DType::Key),
            ])),
            "normals_like" => Some(Ty::Tuple(vec![Ty::Vector, Ty::Scalar(DType::Key)])),
            "bernoulli" => Some(Ty::Tuple(vec![bool_ty, Ty::Scalar(DType::Key)])),
            "split" => Some(Ty::Tuple(vec![
                Ty::Scalar(DType::Key),
                Ty::Scalar(DType::Key),
            ])),
            "fold_in" => Some(Ty::Scalar(DType::Key)),
            _ => None,
        },
        Ty::Scalar(d) if d.is_float() => match name {
            "to_bits" => Some(Ty::Scalar(if *d == DType::F32 {
                DType::U32
            } else {
                DType::U64
            })),
            _ if FLOAT_BOOL.contains(&name) => Some(bool_ty),
            _ if FLOAT_SAME_TYPE.contains(&name) => Some(recv.clone()),
            _ => None,
        },
        Ty::Scalar(d) if d.is_int() => match name {
            "unsigned_abs" if d.is_signed_int() => d.unsigned().map(Ty::Scalar),
            "abs_diff" => d.unsigned().map(Ty::Scalar),
            "abs" | "signum" | "wrapping_abs" if !d.is_signed_int() => None,
            "is_positive" | "is_negative" if d.is_signed_int() => Some(bool_ty),
            "is_power_of_two" | "is_multiple_of" if !d.is_signed_int() => Some(bool_ty),
            _ if INT_SAME_TYPE.contains(&name) || INT_U32_ARGUMENT.contains(&name) => {
                Some(recv.clone())
            }
            _ if INT_U32_RESULT.contains(&name) => Some(Ty::Scalar(DType::U32)),
            _ if INT_OVERFLOWING.contains(&name) => Some(Ty::Tuple(vec![recv.clone(), bool_ty])),
            _ => None,
        },
        _ => None,
    }
}

/// Infers the arguments of method `name` on `recv` (of type `rt`), each at the type the
/// method takes. A variable argument of another type is demanded at that type (`x.pow(k)`
/// makes an unannotated `k` a `u32`); an argument of the receiver's type and a receiver that
/// disagree demand each other's type, as the operands of `+` do (`acc.wrapping_add(b)` with
/// `b: u8` makes an unannotated `acc` a `u8`).
fn infer_arguments(
    recv: &Expr,
    rt: &Ty,
    name: &str,
    args: &[Expr],
    scope: &dyn Scope,
) -> Result<(), TypeError> {
    let want = method_argument(rt, name);
    for a in args {
        let at = infer(a, Some(&want), scope)?;
        if want == *rt {
            same_type(recv, rt, a, &at, scope);
        } else if at != want && !at.has_vector() {
            demand_var(a, &want, scope);
        }
    }
    Ok(())
}

/// Infers each of `exprs` with the same expected type.
fn infer_all(exprs: &[Expr], expected: Option<&Ty>, scope: &dyn Scope) -> Result<(), TypeError> {
    exprs
        .iter()
        .try_for_each(|x| infer(x, expected, scope).map(drop))
}

/// If `e` is a variable, a reference to one or a field of one (`t.0`), records that it is
/// needed at type `ty` (a tuple variable at its type with that element replaced).
fn demand_var(e: &Expr, ty: &Ty, scope: &dyn Scope) {
    match &e.kind {
        ExprKind::Var(id) => scope.demand(&id.to_string(), ty),
        ExprKind::Ref(inner) => demand_var(inner, ty, scope),
        ExprKind::Field(base, i) => {
            if let Some(Ty::Tuple(mut items)) = place_type(base, scope) {
                if let Some(item) = items.get_mut(*i as usize) {
                    *item = ty.clone();
                    demand_var(base, &Ty::Tuple(items), scope);
                }
            }
        }
        _ => {}
    }
}

/// The type of a variable or a field of one, as bound.
fn place_type(e: &Expr, scope: &dyn Scope) -> Option<Ty> {
    match &e.kind {
        ExprKind::Var(id) => scope.lookup(&id.to_string()),
        ExprKind::Field(base, i) => match place_type(base, scope)? {
            Ty::Tuple(items) => items.get(*i as usize).cloned(),
            _ => None,
        },
        _ => None,
    }
}

/// The result type of the associated function `ty_name::name` (`Vector::filled_like`,
/// `u64::from`, `f64::from_bits`, `f64::max`, ..).
fn assoc_type(ty_name: &str, name: &str) -> Option<Ty> {
    match (ty_name, name, suffix_type(ty_name)) {
        ("Vector", "filled_like", _) => Some(Ty::Vector),
        ("Key", "new", _) => Some(Ty::Scalar(DType::Key)),
        (_, "from", Some(t)) => Some(t),
        (_, "from_bits", Some(t)) if t.is_float() => Some(t),
        (_, _, Some(t)) => method_type(&t, name),
        _ => None,
    }
}

/// The number type a type name stands for (`u8` -> `u8`), if it is one.
fn suffix_type(name: &str) -> Option<Ty> {
    DType::from_name(name)
        .filter(|d| *d != DType::Bool)
        .map(Ty::Scalar)
}

/// The type of an operator, cast, method, tuple or field expression whose operands (in order)
/// have `types`, with the type `expected` of it where nothing else tells; `None` if it has none
/// ([`operator_type_error`] says why).
pub fn operator_type(e: &Expr, types: &[Ty], expected: Option<&Ty>) -> Option<Ty> {
    Some(match &e.kind {
        ExprKind::Binary(BinOp::Compare | BinOp::And | BinOp::Or, ..) => Ty::Scalar(DType::Bool),
        ExprKind::Binary(..) => match (types.first()?, types.get(1)?) {
            (Ty::Scalar(_), Ty::Vector) => Ty::Vector,
            (l, _) => l.clone(),
        },
        ExprKind::Unary(..) | ExprKind::Ref(_) => types.first()?.clone(),
        ExprKind::Cast(_, t, _) => t.clone(),
        ExprKind::Field(_, i) => match types.first()? {
            Ty::Tuple(items) => items.get(*i as usize)?.clone(),
            _ => return None,
        },
        ExprKind::Method(_, name, _) if name == "into" => expected?.clone(),
        ExprKind::Method(_, name, _) => method_type(types.first()?, &name.to_string())?,
        ExprKind::Assoc(t, name, _) => assoc_type(&t.to_string(), &name.to_string())?,
        ExprKind::Tuple(_) => Ty::Tuple(types.to_vec()),
        _ => expected?.clone(),
    })
}

/// Why [`operator_type`] found no type for `e`.
pub fn operator_type_error(e: &Expr, types: &[Ty]) -> String {
    let first = types.first().map_or_else(|| "()".into(), describe);
    match &e.kind {
        ExprKind::Field(_, i) => format!("no field `{i}` on {first}"),
        ExprKind::Method(_, name, _) => match types.first() {
            Some(t) => unsupported_method(t, &name.to_string()),
            None => format!("method `{name}` is not supported on {first} in #[autobatch] code"),
        },
        _ => "cannot infer the type of this expression; annotate the binding".into(),
    }
}

/// A type as users spell it.
pub fn describe(t: &Ty) -> String {
    match t {
        Ty::Scalar(DType::Key) => "Key".into(),
        Ty::Scalar(d) => d.name().into(),
        Ty::Vector => "Vector".into(),
        Ty::Tuple(items) => format!(
            "({})",
            items.iter().map(describe).collect::<Vec<_>>().join(", ")
        ),
        Ty::Struct { path, .. } => path.clone(),
    }
}

/// A path as written.
pub use crate::parse::ast::path_key as path_text;

#[cfg(test)]
mod tests {
    use super::{infer, Scope};
    use crate::parse::ast::{Expr, Ty};
    use crate::parse::{self, Errors};
    use autobatch_ir::DType;

    /// Variables of fixed types, and one function `f` returning `(i64, bool)`.
    struct Vars(Vec<(&'static str, Ty)>);

    impl Scope for Vars {
        fn lookup(&self, name: &str) -> Option<Ty> {
            self.0
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, t)| t.clone())
        }

        fn is_poisoned(&self, _name: &str) -> bool {
            false
        }

        fn callee_return(&self, path: &syn::Path) -> Option<Ty> {
            path.is_ident("f").then(|| Ty::Tuple(vec![I64, BOOL]))
        }
    }

    const I32: Ty = Ty::Scalar(DType::I32);
    const I64: Ty = Ty::Scalar(DType::I64);
    const F32: Ty = Ty::Scalar(DType::F32);
    const F64: Ty = Ty::Scalar(DType::F64);
    const BOOL: Ty = Ty::Scalar(DType::Bool);

    fn expr(e: syn::Expr) -> Expr {
        let mut errors = Errors::default();
        let e = parse::expr::expr(&e, &mut errors);
        assert!(errors.finish().is_ok());
        e
    }

    fn type_of(e: syn::Expr, expected: Option<&Ty>) -> Result<Ty, String> {
        let scope = Vars(vec![("n", I64), ("x", F32), ("v", Ty::Vector)]);
        infer(&expr(e), expected, &scope).map_err(|e| e.message)
    }

    #[test]
    fn literals_take_their_suffix_the_expected_type_or_the_default() {
        assert_eq!(type_of(syn::parse_quote!(1), None), Ok(I32));
        assert_eq!(type_of(syn::parse_quote!(1), Some(&I64)), Ok(I64));
        assert_eq!(type_of(syn::parse_quote!(1u8 as i64), None), Ok(I64));
        assert_eq!(type_of(syn::parse_quote!(2.5), None), Ok(F64));
        assert_eq!(type_of(syn::parse_quote!(2.5), Some(&F32)), Ok(F32));
        assert_eq!(type_of(syn::parse_quote!(2.5f32), None), Ok(F32));
        assert!(type_of(syn::parse_quote!(1), Some(&F64))
            .unwrap_err()
            .contains("write it as a float"));
    }

    #[test]
    fn a_literal_takes_the_other_operands_type() {
        assert_eq!(type_of(syn::parse_quote!(1 + n), None), Ok(I64));
        assert_eq!(type_of(syn::parse_quote!(x * 2.0), None), Ok(F32));
        assert_eq!(type_of(syn::parse_quote!(2.0 * v), None), Ok(Ty::Vector));
        assert_eq!(type_of(syn::parse_quote!(n < 3), None), Ok(BOOL));
    }

    #[test]
    fn lets_in_a_pure_block_are_typed_from_their_uses() {
        let t = type_of(
            syn::parse_quote!({
                let k = 0;
                k + n
            }),
            None,
        );
        assert_eq!(t, Ok(I64));
    }

    #[test]
    fn tuples_fields_and_calls() {
        assert_eq!(
            type_of(syn::parse_quote!((n, x, true)), None),
            Ok(Ty::Tuple(vec![I64, F32, BOOL]))
        );
        assert_eq!(type_of(syn::parse_quote!(f(n).1), None), Ok(BOOL));
        assert_eq!(
            type_of(syn::parse_quote!(g(n)), Some(&F64)),
            Ok(F64),
            "a callee this macro cannot see has the type its context expects"
        );
        assert!(type_of(syn::parse_quote!(g(n)), None)
            .unwrap_err()
            .contains("annotate the binding"));
    }

    #[test]
    fn integer_methods_have_std_types() {
        let scope = Vars(vec![
            ("a", Ty::Scalar(DType::I16)),
            ("u", Ty::Scalar(DType::U64)),
            ("f", F32),
        ]);
        let ty = |e: syn::Expr| infer(&expr(e), None, &scope).map_err(|e| e.message);
        let u16_ty = Ty::Scalar(DType::U16);
        let u32_ty = Ty::Scalar(DType::U32);
        assert_eq!(ty(syn::parse_quote!(a.abs_diff(3))), Ok(u16_ty.clone()));
        assert_eq!(ty(syn::parse_quote!(a.unsigned_abs())), Ok(u16_ty));
        assert_eq!(ty(syn::parse_quote!(u.count_ones())), Ok(u32_ty.clone()));
        assert_eq!(
            ty(syn::parse_quote!(u.wrapping_pow(3))),
            Ok(Ty::Scalar(DType::U64))
        );
        assert_eq!(ty(syn::parse_quote!(f.to_bits())), Ok(u32_ty));
        assert_eq!(ty(syn::parse_quote!(f64::from_bits(u))), Ok(F64));
        assert_eq!(ty(syn::parse_quote!(i64::from(a))), Ok(I64));
        assert_eq!(
            ty(syn::parse_quote!(u.overflowing_sub(1))),
            Ok(Ty::Tuple(vec![Ty::Scalar(DType::U64), BOOL]))
        );
        assert_eq!(ty(syn::parse_quote!(a.is_negative())), Ok(BOOL));
        assert!(
            ty(syn::parse_quote!(u.abs())).is_err(),
            "unsigned types have no abs"
        );
        assert!(ty(syn::parse_quote!(u.checked_add(1)))
            .unwrap_err()
            .contains("use `wrapping_add`, `saturating_add` or `overflowing_add`"));
        assert!(ty(syn::parse_quote!(a.into()))
            .unwrap_err()
            .contains("annotate the binding"));
        let into = infer(&expr(syn::parse_quote!(a.into())), Some(&I64), &scope);
        assert_eq!(into.map_err(|e| e.message), Ok(I64));
    }

    #[test]
    fn methods_and_unknown_names() {
        assert_eq!(type_of(syn::parse_quote!(x.sqrt().max(1.0)), None), Ok(F32));
        assert_eq!(type_of(syn::parse_quote!(v.dot(&v)), None), Ok(F64));
        assert!(type_of(syn::parse_quote!(n.frobnicate()), None)
            .unwrap_err()
            .contains("`frobnicate` is not supported on i64"));
        assert!(type_of(syn::parse_quote!(m + 1), None)
            .unwrap_err()
            .contains("cannot find variable `m`"));
    }
}

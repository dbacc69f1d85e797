//! Type inference for expressions of the language: bidirectional and local, enough to give
//! every IR variable and kernel binding its Rust type. Kernels spell out these types, so a wrong
//! inference becomes a rustc type error, never a silent mistake.
//!
//! Pure `if`s and blocks (only `let`s and a value) are typed here too, with the names their
//! `let`s bind in scope inside them: they compile into kernels whole. The pass over a whole
//! function that fixes its `let`s' types before translation is [`function`].

pub mod classify;
pub mod function;

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

/// Methods whose result has the receiver's type.
const SAME_TYPE_METHODS: &[&str] = &[
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
    "pow",
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
    "wrapping_add",
    "wrapping_sub",
    "wrapping_mul",
    "wrapping_neg",
    "wrapping_div",
    "wrapping_rem",
    "wrapping_abs",
    "saturating_add",
    "saturating_sub",
    "saturating_mul",
    "rem_euclid",
    "div_euclid",
    "abs_diff",
    "map",
    "zip_map",
];

/// Methods whose result is `bool`.
const BOOL_METHODS: &[&str] = &[
    "is_nan",
    "is_finite",
    "is_infinite",
    "is_normal",
    "is_sign_positive",
    "is_sign_negative",
    "is_positive",
    "is_negative",
];

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
        ExprKind::Binary(op, _, l, r) => {
            let operand_expected = match op {
                BinOp::Arith | BinOp::Shift => expected,
                BinOp::Compare => None,
                BinOp::And | BinOp::Or => Some(&Ty::Scalar(DType::Bool)),
            };
            let (lt, rt) = infer_pair(l, r, operand_expected, *op == BinOp::Shift, scope)?;
            match op {
                BinOp::Compare | BinOp::And | BinOp::Or => Ok(Ty::Scalar(DType::Bool)),
                BinOp::Shift => Ok(lt),
                BinOp::Arith => Ok(match (&lt, &rt) {
                    (Ty::Scalar(_), Ty::Vector) => Ty::Vector,
                    _ => lt,
                }),
            }
        }
        ExprKind::Unary(_, inner) | ExprKind::Ref(inner) => infer(inner, expected, scope),
        ExprKind::Cast(inner, t, _) => {
            // A constant the macro cannot see is cast as rustc types it.
            if !matches!(inner.kind, ExprKind::Const(None)) {
                infer(inner, None, scope)?;
            }
            Ok(t.clone())
        }
        ExprKind::Method(recv, name, args) => {
            let rt = infer(recv, expected, scope)?;
            let n = name.to_string();
            for a in args {
                let hint = if matches!(n.as_str(), "powi") { Some(Ty::Scalar(DType::I32)) } else { Some(rt.clone()) };
                infer(a, hint.as_ref(), scope)?;
            }
            method_type(&rt, &n).map_or_else(|| err(e, format!("method `{n}` is not supported on {} in #[autobatch] code", describe(&rt))), Ok)
        }
        ExprKind::Assoc(ty_name, f, args) => {
            let tn = ty_name.to_string();
            let fname = f.to_string();
            let arg_hint = match tn.as_str() {
                "f64" => Some(Ty::Scalar(DType::F64)),
                "f32" => Some(Ty::Scalar(DType::F32)),
                "i64" => Some(Ty::Scalar(DType::I64)),
                "i32" => Some(Ty::Scalar(DType::I32)),
                _ => None,
            };
            for a in args {
                infer(a, arg_hint.as_ref(), scope)?;
            }
            match (tn.as_str(), fname.as_str()) {
                ("Vector", "filled_like") => Ok(Ty::Vector),
                ("Key", "new") => Ok(Ty::Scalar(DType::Key)),
                (_, _) if arg_hint.is_some() => {
                    let t = arg_hint.unwrap_or_else(Ty::unit);
                    method_type(&t, &fname).map_or_else(|| err(e, format!("`{tn}::{fname}` is not supported in #[autobatch] code")), Ok)
                }
                _ => err(e, format!("`{tn}::{fname}` is not supported in #[autobatch] code")),
            }
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
    let is_free_lit = |e: &Expr| {
        matches!(
            e.kind,
            ExprKind::Lit { suffix: None, .. } | ExprKind::Const(None)
        )
    };
    let (lt, rt) = infer_pair_inner(l, r, expected, shift, scope, is_free_lit)?;
    if !shift && lt != rt && lt != Ty::Vector && rt != Ty::Vector {
        if let ExprKind::Var(id) = &l.kind {
            scope.demand(&id.to_string(), &rt);
        }
        if let ExprKind::Var(id) = &r.kind {
            scope.demand(&id.to_string(), &lt);
        }
    }
    Ok((lt, rt))
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
    match recv {
        Ty::Vector => match name {
            "dot" | "sum" | "norm_squared" | "get" => Some(Ty::Scalar(DType::F64)),
            "map" | "zip_map" | "clone" => Some(Ty::Vector),
            _ => None,
        },
        Ty::Scalar(DType::Key) => match name {
            "uniform" | "normal" => Some(Ty::Tuple(vec![
                Ty::Scalar(DType::F64),
                Ty::Scalar(DType::Key),
            ])),
            "normals_like" => Some(Ty::Tuple(vec![Ty::Vector, Ty::Scalar(DType::Key)])),
            "bernoulli" => Some(Ty::Tuple(vec![
                Ty::Scalar(DType::Bool),
                Ty::Scalar(DType::Key),
            ])),
            "split" => Some(Ty::Tuple(vec![
                Ty::Scalar(DType::Key),
                Ty::Scalar(DType::Key),
            ])),
            "fold_in" => Some(Ty::Scalar(DType::Key)),
            _ => None,
        },
        Ty::Scalar(_) if BOOL_METHODS.contains(&name) => Some(Ty::Scalar(DType::Bool)),
        Ty::Scalar(_)
            if SAME_TYPE_METHODS.contains(&name) && name != "map" && name != "zip_map" =>
        {
            Some(recv.clone())
        }
        _ => None,
    }
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
        ExprKind::Method(_, name, _) => method_type(types.first()?, &name.to_string())?,
        ExprKind::Tuple(_) => Ty::Tuple(types.to_vec()),
        _ => expected?.clone(),
    })
}

/// Why [`operator_type`] found no type for `e`.
pub fn operator_type_error(e: &Expr, types: &[Ty]) -> String {
    let first = types.first().map_or_else(|| "()".into(), describe);
    match &e.kind {
        ExprKind::Field(_, i) => format!("no field `{i}` on {first}"),
        ExprKind::Method(_, name, _) => {
            format!("method `{name}` is not supported on {first} in #[autobatch] code")
        }
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
    }
}

/// A path as written.
pub fn path_text(p: &syn::Path) -> String {
    quote::quote!(#p).to_string().replace(' ', "")
}

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

//! The macro's own small AST: exactly the Rust subset `#[autobatch]` compiles.

use autobatch_ir::DType;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use std::collections::BTreeMap;
use syn::Ident;

/// A path as text without spaces (`crate::a::f`): how a callee is keyed.
pub fn path_key(p: &syn::Path) -> String {
    quote!(#p).to_string().replace(' ', "")
}

/// The variable holding field `field` of the flattened value `base` (`t.depth` is
/// `t__depth`, `t.inner.q` is `t__inner__q`): struct values live in one variable per field.
pub fn field_var(base: &str, field: &str) -> String {
    format!("{base}__{field}")
}

/// A value type of the language.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ty {
    /// A scalar leaf (`bool`, an integer or float type, `Key`).
    Scalar(DType),
    /// A per-lane `Vector` of `f64`.
    Vector,
    /// A tuple (the unit type is the empty tuple).
    Tuple(Vec<Ty>),
    /// An `#[autobatch] struct`, by its path as written (`Tree`, `crate::m::Tree`), with its
    /// fields once its layout is learnt (empty before: a struct has at least one field).
    /// Only signatures hold it: bodies are flattened to its fields before inference
    /// (`generate/flatten.rs`).
    Struct {
        /// The path as written, without spaces.
        path: String,
        /// Field names and types, in declaration order; empty while not learnt.
        fields: Vec<(String, Ty)>,
    },
}

impl Ty {
    /// The unit type `()`.
    pub fn unit() -> Ty {
        Ty::Tuple(Vec::new())
    }

    /// True for `()`.
    pub fn is_unit(&self) -> bool {
        matches!(self, Ty::Tuple(items) if items.is_empty())
    }

    /// True for the integer scalars.
    pub fn is_int(&self) -> bool {
        matches!(self, Ty::Scalar(d) if d.is_int())
    }

    /// True for the float scalars.
    pub fn is_float(&self) -> bool {
        matches!(self, Ty::Scalar(d) if d.is_float())
    }

    /// True if a `Vector` is this type or part of it.
    pub fn has_vector(&self) -> bool {
        match self {
            Ty::Vector => true,
            Ty::Scalar(_) => false,
            Ty::Tuple(items) => items.iter().any(Ty::has_vector),
            Ty::Struct { fields, .. } => fields.iter().any(|(_, t)| t.has_vector()),
        }
    }

    /// True if a struct is this type or part of it.
    pub fn has_struct(&self) -> bool {
        match self {
            Ty::Struct { .. } => true,
            Ty::Tuple(items) => items.iter().any(Ty::has_struct),
            Ty::Scalar(_) | Ty::Vector => false,
        }
    }

    /// Every struct path in this type whose layout is not learnt yet.
    pub fn unknown_structs(&self, out: &mut Vec<String>) {
        match self {
            Ty::Struct { path, fields } if fields.is_empty() => out.push(path.clone()),
            Ty::Struct { fields, .. } => fields.iter().for_each(|(_, t)| t.unknown_structs(out)),
            Ty::Tuple(items) => items.iter().for_each(|t| t.unknown_structs(out)),
            Ty::Scalar(_) | Ty::Vector => {}
        }
    }

    /// This type with every struct's layout filled in from `layouts` (by path), recursively;
    /// structs not in `layouts` stay as they are.
    pub fn resolved(&self, layouts: &BTreeMap<String, Vec<(String, Ty)>>) -> Ty {
        match self {
            Ty::Struct { path, fields } => {
                let fields = match (fields.is_empty(), layouts.get(path)) {
                    (true, Some(l)) => l,
                    _ => fields,
                };
                Ty::Struct {
                    path: path.clone(),
                    fields: fields
                        .iter()
                        .map(|(n, t)| (n.clone(), t.resolved(layouts)))
                        .collect(),
                }
            }
            Ty::Tuple(items) => Ty::Tuple(items.iter().map(|t| t.resolved(layouts)).collect()),
            other => other.clone(),
        }
    }
}

/// The types a function is called with and returns, as its own signature states them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// Parameter types (a primitive's `&T` parameter is `T`).
    pub params: Vec<Ty>,
    /// The result type.
    pub ret: Ty,
}

/// An `#[autobatch] struct`: named fields of the language's types.
pub struct StructDef {
    /// Its name.
    pub name: Ident,
    /// Its fields with their types, in declaration order.
    pub fields: Vec<(Ident, Ty)>,
}

/// A function to compile.
pub struct Func {
    /// Its name.
    pub name: Ident,
    /// Parameters with their types.
    pub params: Vec<(Ident, Ty)>,
    /// The return type (`()` if none).
    pub ret: Ty,
    /// The body.
    pub body: Block,
    /// Names of parameters that could not be parsed (already reported).
    pub poisoned: Vec<String>,
    /// The context parameter (`ctx: &T`, shared by every lane), if any; not in `params`.
    pub context: Option<super::context::ContextParam>,
    /// Callees' signatures learnt from their descriptions (`generate/describe.rs`), by the
    /// callee's path as written here.
    pub learnt: BTreeMap<String, Signature>,
    /// Struct layouts learnt from their descriptions, by the struct's path as written here.
    pub structs: BTreeMap<String, Vec<(String, Ty)>>,
}

impl Func {
    /// True if `path` names this function itself (a recursive call).
    pub fn is_self_path(&self, path: &syn::Path) -> bool {
        path.get_ident().is_some_and(|i| *i == self.name)
    }

    /// The signature of the callee `path`: this function's own for a recursive call, a learnt
    /// one for another callee, `None` while it is not learnt yet.
    pub fn callee_signature(&self, path: &syn::Path) -> Option<Signature> {
        if self.is_self_path(path) {
            return Some(self.signature());
        }
        self.learnt.get(&path_key(path)).cloned()
    }

    /// This function's own signature.
    pub fn signature(&self) -> Signature {
        Signature {
            params: self.params.iter().map(|(_, t)| t.clone()).collect(),
            ret: self.ret.clone(),
        }
    }

    /// The result type of a call of `path`, if its signature is known.
    pub fn callee_return(&self, path: &syn::Path) -> Option<Ty> {
        self.callee_signature(path).map(|s| s.ret)
    }

    /// The types a call of `path` with `n` arguments passes them at, as far as this macro knows:
    /// the callee's parameter types when its signature is known, none otherwise.
    pub fn argument_types(&self, path: &syn::Path, n: usize) -> Vec<Option<Ty>> {
        match self.callee_signature(path) {
            Some(s) => s.params.into_iter().map(Some).collect(),
            None => vec![None; n],
        }
    }
}

/// `{ stmts; tail }`.
#[derive(Clone)]
pub struct Block {
    /// Statements.
    pub stmts: Vec<Stmt>,
    /// The value of the block, if it ends in an expression without `;`.
    pub tail: Option<Box<Expr>>,
}

/// A statement.
#[derive(Clone)]
pub enum Stmt {
    /// `let pat: ty = init;`
    Let {
        /// The binding pattern.
        pat: Pat,
        /// The annotated type.
        ty: Option<Ty>,
        /// The initialiser.
        init: Expr,
    },
    /// An expression statement.
    Expr(Expr),
}

/// A binding pattern.
#[derive(Clone)]
pub enum Pat {
    /// `x` or `mut x`.
    Ident(Ident),
    /// `(a, b, ..)`.
    Tuple(Vec<Pat>),
    /// `_`.
    Wild,
}

impl Pat {
    /// The names this pattern binds.
    pub fn names(&self) -> Vec<String> {
        match self {
            Pat::Ident(id) => vec![id.to_string()],
            Pat::Tuple(ps) => ps.iter().flat_map(Pat::names).collect(),
            Pat::Wild => Vec::new(),
        }
    }
}

/// A binary operator (compound assignment uses the same operators).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// Arithmetic and bit operators: the result has the operands' type.
    Arith,
    /// Shifts: the result has the left operand's type.
    Shift,
    /// Comparisons: the result is `bool`.
    Compare,
    /// `&&`.
    And,
    /// `||`.
    Or,
}

/// An expression, with the span and the original tokens kernels are made from.
#[derive(Clone)]
pub struct Expr {
    /// What kind of expression.
    pub kind: ExprKind,
    /// Where it is.
    pub span: Span,
    /// The user's tokens for it.
    pub tokens: TokenStream,
}

impl Expr {
    /// An expression the macro makes (not the user's): `kind`, spelled `tokens`, at `span`.
    pub fn made(kind: ExprKind, tokens: TokenStream, span: Span) -> Expr {
        Expr { kind, span, tokens }
    }

    /// The variable `id`.
    pub fn var(id: &Ident) -> Expr {
        Expr::made(ExprKind::Var(id.clone()), quote!(#id), id.span())
    }
}

/// A loop label (`'outer`), by name.
pub type Label = String;

/// `'label: for pat in range { body }`: the loop variable takes each value of an integer range
/// in turn (`lo..hi`, `lo..=hi`, `(..).rev()`, `(..).step_by(k)`, `(..).rev().step_by(k)`),
/// with the bounds and the step evaluated once, before the first iteration, as Rust does.
#[derive(Clone)]
pub struct ForLoop {
    /// The loop's label.
    pub label: Option<Label>,
    /// The loop variable (`None` for `_`).
    pub var: Option<Ident>,
    /// The range's start.
    pub lo: Expr,
    /// The range's end.
    pub hi: Expr,
    /// `..=` rather than `..`.
    pub inclusive: bool,
    /// Counting down from the end (`.rev()`).
    pub rev: bool,
    /// The step (`.step_by(k)`, a `usize` in Rust), if any.
    pub step: Option<Expr>,
    /// The body.
    pub body: Block,
    /// The range as written, for the printed program.
    pub source: String,
}

/// `Path { field: value, .., ..base }`.
#[derive(Clone)]
pub struct StructLit {
    /// The struct's path as written, without spaces.
    pub path: String,
    /// The fields given, in source order (shorthand `q` is `q: q`).
    pub fields: Vec<(Ident, Expr)>,
    /// `..base`, if given.
    pub base: Option<Box<Expr>>,
}

/// Expression kinds.
#[derive(Clone)]
pub enum ExprKind {
    /// A literal; `float` tells a float literal from an integer one; `suffix` its type suffix.
    Lit {
        /// Is it a float literal.
        float: bool,
        /// A type suffix (`1i64`, `2.0f32`); `bool` for `true` / `false`.
        suffix: Option<DType>,
    },
    /// A variable.
    Var(Ident),
    /// A constant path: of a known type (`i64::MAX`, `std::f64::consts::PI`), or `None` for a
    /// user's constant (`N`, `Self::N`, `Config::N`) the macro cannot see, whose type its use
    /// gives and rustc checks in the kernel.
    Const(Option<Ty>),
    /// `a op b`, with the operator's tokens.
    Binary(BinOp, TokenStream, Box<Expr>, Box<Expr>),
    /// `-a` or `!a`, with the operator's tokens.
    Unary(TokenStream, Box<Expr>),
    /// `a as T`, with the type's tokens.
    Cast(Box<Expr>, Ty, TokenStream),
    /// `recv.method(args)`.
    Method(Box<Expr>, Ident, Vec<Expr>),
    /// `Type::function(args)` for a known associated function (`Vector::filled`, `f64::max`).
    Assoc(Ident, Ident, Vec<Expr>),
    /// A call to an `#[autobatch]` function.
    Call(syn::Path, Vec<Expr>),
    /// `(a, b)`.
    Tuple(Vec<Expr>),
    /// `t.0`.
    Field(Box<Expr>, u32),
    /// `t.depth`: a struct's field (flattened away before inference, `generate/flatten.rs`).
    NamedField(Box<Expr>, Ident),
    /// `Tree { depth: e, q, ..base }`: a struct literal, fields in source order (flattened
    /// away before inference).
    Struct(StructLit),
    /// `&x`: a shared reference, for calling primitives and methods that borrow.
    Ref(Box<Expr>),
    /// `if c { .. } else ..`.
    If(Box<Expr>, Block, Option<Box<Expr>>),
    /// `'label: while c { .. }`.
    While(Option<Label>, Box<Expr>, Block),
    /// `'label: loop { .. }`.
    Loop(Option<Label>, Block),
    /// `'label: for pat in range { .. }` over an integer range.
    For(Box<ForLoop>),
    /// `break 'label value`, label and value optional.
    Break(Option<Label>, Option<Box<Expr>>),
    /// `continue 'label`, label optional.
    Continue(Option<Label>),
    /// `return` / `return value`.
    Return(Option<Box<Expr>>),
    /// `{ .. }`.
    Block(Block),
    /// An unsupported construct, already reported: compiles to nothing, reports nothing more.
    Invalid,
    /// A read of the context every lane shares (`ctx.field`, `ctx.dim()`), Rust code the
    /// kernel runs as written; `true` for the context itself (`ctx`), which is only passed on
    /// to calls.
    Uniform(bool),
    /// `x = value`, or `x op= value` with the operator (without `=`) and its tokens.
    Assign(Ident, Box<Expr>, Option<(BinOp, TokenStream)>),
}

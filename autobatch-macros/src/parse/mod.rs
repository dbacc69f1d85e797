//! syn -> the macro's AST, collecting every unsupported construct as a spanned error.

pub mod args;
pub mod ast;

use ast::{BinOp, Block, Expr, ExprKind, Func, Pat, Stmt, Ty};
use autobatch_ir::DType;
use quote::ToTokens;
use syn::spanned::Spanned;

/// Collects errors instead of stopping at the first.
#[derive(Default)]
pub struct Errors(Vec<syn::Error>);

impl Errors {
    /// Records an error at `span`.
    pub fn at(&mut self, span: impl Spanned, message: impl std::fmt::Display) {
        self.0.push(syn::Error::new(span.span(), message));
    }

    /// How many errors so far.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// All errors combined, if any.
    pub fn finish(self) -> Result<(), syn::Error> {
        let mut iter = self.0.into_iter();
        match iter.next() {
            None => Ok(()),
            Some(mut first) => {
                iter.for_each(|e| first.combine(e));
                Err(first)
            }
        }
    }
}

/// Parses a Rust type of the language.
pub fn ty(t: &syn::Type, errors: &mut Errors) -> Ty {
    match t {
        syn::Type::Path(p) if p.qself.is_none() => {
            let last = p
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            match last.as_str() {
                "bool" => Ty::Scalar(DType::Bool),
                "i32" => Ty::Scalar(DType::I32),
                "i64" => Ty::Scalar(DType::I64),
                "f32" => Ty::Scalar(DType::F32),
                "f64" => Ty::Scalar(DType::F64),
                "Key" => Ty::Scalar(DType::Key),
                "Vector" => Ty::Vector,
                _ => {
                    errors.at(t, format!("type `{}` is not supported in #[autobatch] code; use bool, i32, i64, f32, f64, Vector, Key or tuples of them", t.to_token_stream()));
                    Ty::unit()
                }
            }
        }
        syn::Type::Tuple(tuple) => Ty::Tuple(tuple.elems.iter().map(|e| ty(e, errors)).collect()),
        syn::Type::Paren(p) => ty(&p.elem, errors),
        syn::Type::Reference(_) => {
            errors.at(t, "references are not supported in #[autobatch] code; pass values (they are copied per lane)");
            Ty::unit()
        }
        _ => {
            errors.at(t, format!("type `{}` is not supported in #[autobatch] code; use bool, i32, i64, f32, f64, Vector, Key or tuples of them", t.to_token_stream()));
            Ty::unit()
        }
    }
}

/// Parses a function signature and body.
pub fn func(item: &syn::ItemFn, errors: &mut Errors) -> Func {
    let sig = &item.sig;
    if let Some(c) = &sig.constness {
        errors.at(c, "`const fn` cannot be #[autobatch]; remove `const`");
    }
    if let Some(a) = &sig.asyncness {
        errors.at(a, "`async fn` cannot be #[autobatch]; write a plain `fn`");
    }
    if let Some(u) = &sig.unsafety {
        errors.at(u, "`unsafe fn` cannot be #[autobatch]; write a safe `fn`");
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.at(
            &sig.generics,
            "generic functions cannot be #[autobatch]; write one function per concrete type",
        );
    }
    if let Some(v) = &sig.variadic {
        errors.at(v, "variadic functions cannot be #[autobatch]");
    }
    let mut params = Vec::new();
    let mut poisoned = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(r) => {
                errors.at(r, "methods cannot be #[autobatch]; write a free function")
            }
            syn::FnArg::Typed(pt) => {
                let t = ty(&pt.ty, errors);
                match &*pt.pat {
                    syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                        params.push((pi.ident.clone(), t))
                    }
                    other => {
                        errors.at(other, "parameters must be plain names (`x: i64`); destructure in the body with `let`");
                        poisoned.extend(pattern(other, &mut Errors::default()).0.names());
                    }
                }
            }
        }
    }
    let ret = match &sig.output {
        syn::ReturnType::Default => Ty::unit(),
        syn::ReturnType::Type(_, t) => ty(t, errors),
    };
    let body = block(&item.block, errors);
    Func {
        name: sig.ident.clone(),
        params,
        ret,
        body,
        poisoned,
    }
}

fn block(b: &syn::Block, errors: &mut Errors) -> Block {
    let mut stmts = Vec::new();
    let mut tail = None;
    let n = b.stmts.len();
    for (i, s) in b.stmts.iter().enumerate() {
        match s {
            syn::Stmt::Local(local) => {
                if let Some(init) = &local.init {
                    if let Some((_, diverge)) = &init.diverge {
                        errors.at(diverge, "`let ... else` is not supported in #[autobatch] code; use `if`");
                    }
                    let (pat, annotated) = pattern(&local.pat, errors);
                    stmts.push(Stmt::Let { pat, ty: annotated, init: expr(&init.expr, errors) });
                } else {
                    errors.at(local, "`let` without a value is not supported in #[autobatch] code; initialise the variable");
                }
            }
            syn::Stmt::Expr(e, semi) => {
                let e = expr(e, errors);
                if semi.is_none() && i + 1 == n {
                    tail = Some(Box::new(e));
                } else {
                    stmts.push(Stmt::Expr(e));
                }
            }
            syn::Stmt::Item(item) => errors.at(item, "items inside #[autobatch] functions are not supported; define them outside the function"),
            syn::Stmt::Macro(m) => errors.at(m, "macros are not supported in #[autobatch] code; write the expression out"),
        }
    }
    Block { stmts, tail }
}

fn pattern(p: &syn::Pat, errors: &mut Errors) -> (Pat, Option<Ty>) {
    match p {
        syn::Pat::Type(pt) => {
            let (pat, _) = pattern(&pt.pat, errors);
            (pat, Some(ty(&pt.ty, errors)))
        }
        syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
            (Pat::Ident(pi.ident.clone()), None)
        }
        syn::Pat::Tuple(t) => (
            Pat::Tuple(t.elems.iter().map(|e| pattern(e, errors).0).collect()),
            None,
        ),
        syn::Pat::Wild(_) => (Pat::Wild, None),
        syn::Pat::Paren(pp) => pattern(&pp.pat, errors),
        other => {
            errors.at(
                other,
                "only names, `_` and tuples of them can be bound in #[autobatch] code",
            );
            (Pat::Wild, None)
        }
    }
}

fn bin_op(op: &syn::BinOp) -> Option<(BinOp, bool)> {
    use syn::BinOp as B;
    Some(match op {
        B::Add(_)
        | B::Sub(_)
        | B::Mul(_)
        | B::Div(_)
        | B::Rem(_)
        | B::BitXor(_)
        | B::BitAnd(_)
        | B::BitOr(_) => (BinOp::Arith, false),
        B::Shl(_) | B::Shr(_) => (BinOp::Shift, false),
        B::Eq(_) | B::Lt(_) | B::Le(_) | B::Ne(_) | B::Ge(_) | B::Gt(_) => (BinOp::Compare, false),
        B::And(_) => (BinOp::And, false),
        B::Or(_) => (BinOp::Or, false),
        B::AddAssign(_)
        | B::SubAssign(_)
        | B::MulAssign(_)
        | B::DivAssign(_)
        | B::RemAssign(_)
        | B::BitXorAssign(_)
        | B::BitAndAssign(_)
        | B::BitOrAssign(_) => (BinOp::Arith, true),
        B::ShlAssign(_) | B::ShrAssign(_) => (BinOp::Shift, true),
        _ => return None,
    })
}

/// The operator of a compound assignment without its `=` (`+=` -> `+`).
fn strip_assign(op: &syn::BinOp) -> proc_macro2::TokenStream {
    use syn::BinOp as B;
    match op {
        B::AddAssign(_) => quote::quote!(+),
        B::SubAssign(_) => quote::quote!(-),
        B::MulAssign(_) => quote::quote!(*),
        B::DivAssign(_) => quote::quote!(/),
        B::RemAssign(_) => quote::quote!(%),
        B::BitXorAssign(_) => quote::quote!(^),
        B::BitAndAssign(_) => quote::quote!(&),
        B::BitOrAssign(_) => quote::quote!(|),
        B::ShlAssign(_) => quote::quote!(<<),
        B::ShrAssign(_) => quote::quote!(>>),
        other => other.to_token_stream(),
    }
}

/// The type of a numeric constant path (`i64::MAX`, `f64::INFINITY`, `std::f64::consts::PI`).
fn const_type(path: &syn::Path) -> Option<Ty> {
    if path.segments.len() < 2 {
        return None;
    }
    path.segments
        .iter()
        .rev()
        .skip(1)
        .find_map(|s| suffix(&s.ident.to_string()))
        .map(Ty::Scalar)
}

fn suffix(s: &str) -> Option<DType> {
    match s {
        "i32" => Some(DType::I32),
        "i64" => Some(DType::I64),
        "f32" => Some(DType::F32),
        "f64" => Some(DType::F64),
        _ => None,
    }
}

fn mk(kind: ExprKind, e: &syn::Expr) -> Expr {
    Expr {
        kind,
        span: e.span(),
        tokens: e.to_token_stream(),
    }
}

fn lit(kind: ExprKind, e: &syn::Expr) -> Expr {
    mk(kind, e)
}

fn boxed(e: &syn::Expr, errors: &mut Errors) -> Box<Expr> {
    Box::new(expr(e, errors))
}

fn assign_target(e: &syn::Expr, errors: &mut Errors) -> Option<syn::Ident> {
    match e {
        syn::Expr::Path(p) if p.path.get_ident().is_some() => p.path.get_ident().cloned(),
        other => {
            errors.at(
                other,
                "only plain variables can be assigned in #[autobatch] code",
            );
            None
        }
    }
}

/// Parses an expression.
pub fn expr(e: &syn::Expr, errors: &mut Errors) -> Expr {
    let placeholder = |e: &syn::Expr| mk(ExprKind::Invalid, e);
    match e {
        syn::Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => lit(
                ExprKind::Lit {
                    float: false,
                    suffix: suffix(i.suffix()),
                },
                e,
            ),
            syn::Lit::Float(f) => lit(
                ExprKind::Lit {
                    float: true,
                    suffix: suffix(f.suffix()),
                },
                e,
            ),
            syn::Lit::Bool(_) => lit(
                ExprKind::Lit {
                    float: false,
                    suffix: Some(DType::Bool),
                },
                e,
            ),
            other => {
                errors.at(
                    other,
                    "only integer, float and bool literals are supported in #[autobatch] code",
                );
                placeholder(e)
            }
        },
        syn::Expr::Path(p) => match p.path.get_ident() {
            Some(id) if p.qself.is_none() => mk(ExprKind::Var(id.clone()), e),
            _ if const_type(&p.path).is_some() => mk(
                ExprKind::Const(const_type(&p.path).unwrap_or_else(Ty::unit)),
                e,
            ),
            _ => {
                errors.at(p, "only local variables can be named here; constants and statics are not supported in #[autobatch] code (pass them as parameters)");
                placeholder(e)
            }
        },
        syn::Expr::Paren(p) => {
            let mut inner = expr(&p.expr, errors);
            inner.tokens = e.to_token_stream();
            inner
        }
        syn::Expr::Group(g) => expr(&g.expr, errors),
        syn::Expr::Binary(b) => match bin_op(&b.op) {
            Some((op, false)) => mk(
                ExprKind::Binary(
                    op,
                    b.op.to_token_stream(),
                    boxed(&b.left, errors),
                    boxed(&b.right, errors),
                ),
                e,
            ),
            Some((op, true)) => match assign_target(&b.left, errors) {
                Some(target) => mk(
                    ExprKind::Assign(
                        target,
                        boxed(&b.right, errors),
                        Some((op, strip_assign(&b.op))),
                    ),
                    e,
                ),
                None => placeholder(e),
            },
            None => {
                errors.at(b.op, "this operator is not supported in #[autobatch] code");
                placeholder(e)
            }
        },
        syn::Expr::Assign(a) => match assign_target(&a.left, errors) {
            Some(target) => mk(ExprKind::Assign(target, boxed(&a.right, errors), None), e),
            None => placeholder(e),
        },
        syn::Expr::Unary(u) => match u.op {
            syn::UnOp::Neg(_) | syn::UnOp::Not(_) => mk(
                ExprKind::Unary(u.op.to_token_stream(), boxed(&u.expr, errors)),
                e,
            ),
            _ => {
                errors.at(u, "dereferencing is not supported in #[autobatch] code; values are copied per lane");
                placeholder(e)
            }
        },
        syn::Expr::Cast(c) => mk(
            ExprKind::Cast(
                boxed(&c.expr, errors),
                ty(&c.ty, errors),
                c.ty.to_token_stream(),
            ),
            e,
        ),
        syn::Expr::MethodCall(m) => {
            if let Some(t) = &m.turbofish {
                errors.at(t, "turbofish is not supported in #[autobatch] code");
            }
            let args = m.args.iter().map(|a| expr(a, errors)).collect();
            mk(
                ExprKind::Method(boxed(&m.receiver, errors), m.method.clone(), args),
                e,
            )
        }
        syn::Expr::Call(c) => {
            let args: Vec<Expr> = c.args.iter().map(|a| expr(a, errors)).collect();
            match &*c.func {
                syn::Expr::Path(p) if p.qself.is_none() => {
                    let segs = &p.path.segments;
                    let ty_name = if segs.len() == 2 {
                        Some(segs[0].ident.to_string())
                    } else {
                        None
                    };
                    match ty_name.as_deref() {
                        Some("Vector" | "Key" | "f64" | "f32" | "i64" | "i32") => mk(
                            ExprKind::Assoc(segs[0].ident.clone(), segs[1].ident.clone(), args),
                            e,
                        ),
                        _ => mk(ExprKind::Call(p.path.clone(), args), e),
                    }
                }
                other => {
                    errors.at(other, "only calls of named #[autobatch] functions are supported; closures and function values are not");
                    placeholder(e)
                }
            }
        }
        syn::Expr::Tuple(t) => mk(
            ExprKind::Tuple(t.elems.iter().map(|x| expr(x, errors)).collect()),
            e,
        ),
        syn::Expr::Field(f) => match &f.member {
            syn::Member::Unnamed(i) => mk(ExprKind::Field(boxed(&f.base, errors), i.index), e),
            syn::Member::Named(n) => {
                errors.at(
                    n,
                    "struct fields are not supported in #[autobatch] code; use tuples",
                );
                placeholder(e)
            }
        },
        syn::Expr::If(i) => {
            let cond = boxed(&i.cond, errors);
            let then = block(&i.then_branch, errors);
            let els = i.else_branch.as_ref().map(|(_, x)| boxed(x, errors));
            mk(ExprKind::If(cond, then, els), e)
        }
        syn::Expr::While(w) => {
            if let Some(l) = &w.label {
                errors.at(l, "loop labels are not supported in #[autobatch] code");
            }
            mk(
                ExprKind::While(boxed(&w.cond, errors), block(&w.body, errors)),
                e,
            )
        }
        syn::Expr::Loop(l) => {
            if let Some(lb) = &l.label {
                errors.at(lb, "loop labels are not supported in #[autobatch] code");
            }
            mk(ExprKind::Loop(block(&l.body, errors)), e)
        }
        syn::Expr::Break(b) => {
            if let Some(l) = &b.label {
                errors.at(l, "loop labels are not supported in #[autobatch] code");
            }
            mk(
                ExprKind::Break(b.expr.as_ref().map(|x| boxed(x, errors))),
                e,
            )
        }
        syn::Expr::Continue(c) => {
            if let Some(l) = &c.label {
                errors.at(l, "loop labels are not supported in #[autobatch] code");
            }
            mk(ExprKind::Continue, e)
        }
        syn::Expr::Return(r) => mk(
            ExprKind::Return(r.expr.as_ref().map(|x| boxed(x, errors))),
            e,
        ),
        syn::Expr::Block(b) => {
            if let Some(l) = &b.label {
                errors.at(l, "block labels are not supported in #[autobatch] code");
            }
            mk(ExprKind::Block(block(&b.block, errors)), e)
        }
        syn::Expr::ForLoop(f) => {
            errors.at(f.for_token, "`for` loops are not supported in #[autobatch] code; write a `while` loop with a counter");
            placeholder(e)
        }
        syn::Expr::Match(m) => {
            errors.at(
                m.match_token,
                "`match` is not supported in #[autobatch] code; use `if` / `else if`",
            );
            placeholder(e)
        }
        syn::Expr::Closure(c) => {
            errors.at(c, "closures are not supported in #[autobatch] code; write another #[autobatch] function");
            placeholder(e)
        }
        syn::Expr::Unsafe(u) => {
            errors.at(
                u.unsafe_token,
                "`unsafe` is not supported in #[autobatch] code",
            );
            placeholder(e)
        }
        syn::Expr::Reference(r) => {
            match r.mutability {
                None => mk(ExprKind::Ref(boxed(&r.expr, errors)), e),
                Some(m) => {
                    errors.at(m, "`&mut` is not supported in #[autobatch] code; assign the new value instead");
                    placeholder(e)
                }
            }
        }
        syn::Expr::Try(t) => {
            errors.at(
                t.question_token,
                "`?` is not supported in #[autobatch] code",
            );
            placeholder(e)
        }
        syn::Expr::Macro(m) => {
            errors.at(
                m,
                "macros are not supported in #[autobatch] code; write the expression out",
            );
            placeholder(e)
        }
        syn::Expr::Index(i) => {
            errors.at(
                i,
                "indexing is not supported in #[autobatch] code; use `Vector::get`",
            );
            placeholder(e)
        }
        syn::Expr::Array(a) => {
            errors.at(
                a,
                "arrays are not supported in #[autobatch] code; use tuples or `Vector`",
            );
            placeholder(e)
        }
        syn::Expr::Struct(s) => {
            errors.at(
                s,
                "structs are not supported in #[autobatch] code; use tuples",
            );
            placeholder(e)
        }
        syn::Expr::Async(a) => {
            errors.at(a, "`async` is not supported in #[autobatch] code");
            placeholder(e)
        }
        other => {
            errors.at(
                other,
                "this expression is not supported in #[autobatch] code",
            );
            placeholder(e)
        }
    }
}

//! Expressions: literals, names and constants, operators, assignments, casts, methods, calls,
//! tuples, fields and references. Control flow is parsed in `control`, the constructs outside
//! the language in `rejected`.

use super::ast::{BinOp, Expr, ExprKind, Ty};
use super::types::{constant, literal_suffix, suffix, ty};
use super::{context, control, destructure, rejected, Errors};
use autobatch_ir::DType;
use quote::ToTokens;
use syn::spanned::Spanned;

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

/// The type of a numeric constant path (`i64::MAX`, `u8::BITS`, `std::f64::consts::PI`).
fn const_type(path: &syn::Path) -> Option<Ty> {
    let name = path.segments.last()?.ident.to_string();
    if path.segments.len() < 2 {
        return None;
    }
    path.segments
        .iter()
        .rev()
        .skip(1)
        .find_map(|s| suffix(&s.ident.to_string()))
        .map(|d| constant(d, &name))
}

/// True for a name in SCREAMING_CASE (`N`, `MAX_DEPTH`): a constant, compiled into the kernel
/// that reads it as Rust code, so rustc resolves and types it.
pub(super) fn is_constant_name(id: &syn::Ident) -> bool {
    let s = id.to_string();
    s.chars().any(|c| c.is_ascii_uppercase())
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// An expression of `kind` for the user's `e`.
pub(super) fn mk(kind: ExprKind, e: &syn::Expr) -> Expr {
    Expr {
        kind,
        span: e.span(),
        tokens: e.to_token_stream(),
    }
}

/// Parses `e`, boxed.
pub(super) fn boxed(e: &syn::Expr, errors: &mut Errors) -> Box<Expr> {
    Box::new(expr(e, errors))
}

/// The variable an assignment writes: a plain variable, or a struct's field (`t.depth`,
/// `t.inner.q`), which is a variable of its own once structs are flattened.
fn assign_target(e: &syn::Expr, errors: &mut Errors) -> Option<syn::Ident> {
    fn field_path(e: &syn::Expr) -> Option<syn::Ident> {
        match e {
            syn::Expr::Path(p) => p.path.get_ident().cloned(),
            syn::Expr::Field(f) => {
                let base = field_path(&f.base)?;
                let member = match &f.member {
                    syn::Member::Named(n) => n.to_string(),
                    syn::Member::Unnamed(i) => i.index.to_string(),
                };
                Some(syn::Ident::new(
                    &super::ast::field_var(&base.to_string(), &member),
                    base.span(),
                ))
            }
            _ => None,
        }
    }
    let named = |e: &syn::Expr| match e {
        syn::Expr::Field(f) => matches!(f.member, syn::Member::Named(_)),
        _ => true,
    };
    match field_path(e) {
        Some(id) if named(e) => Some(id),
        _ => {
            errors.at(
                e,
                "only variables and struct fields (`t.depth`) can be assigned in #[autobatch] code",
            );
            None
        }
    }
}

/// The placeholder of a construct whose error is reported: it compiles to nothing.
pub(super) fn invalid(e: &syn::Expr) -> Expr {
    mk(ExprKind::Invalid, e)
}

/// Parses an expression.
pub fn expr(e: &syn::Expr, errors: &mut Errors) -> Expr {
    if let Some(read) = context::read(e, errors) {
        return read;
    }
    match e {
        syn::Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => mk(
                ExprKind::Lit {
                    float: false,
                    suffix: literal_suffix(i.suffix(), i, errors),
                },
                e,
            ),
            syn::Lit::Float(f) => mk(
                ExprKind::Lit {
                    float: true,
                    suffix: literal_suffix(f.suffix(), f, errors),
                },
                e,
            ),
            syn::Lit::Bool(_) => mk(
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
                invalid(e)
            }
        },
        syn::Expr::Path(p) if p.qself.is_none() => match p.path.get_ident() {
            Some(id) if !is_constant_name(id) => mk(ExprKind::Var(id.clone()), e),
            _ if const_type(&p.path).is_some() => mk(ExprKind::Const(const_type(&p.path)), e),
            _ if p
                .path
                .segments
                .last()
                .is_some_and(|s| is_constant_name(&s.ident)) =>
            {
                mk(ExprKind::Const(None), e)
            }
            _ => {
                errors.at(p, "only local variables and constants (`N`, `Type::N`, `i64::MAX`) can be named here in #[autobatch] code");
                invalid(e)
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
                None => invalid(e),
            },
            None => {
                errors.at(b.op, "this operator is not supported in #[autobatch] code");
                invalid(e)
            }
        },
        syn::Expr::Assign(a) if matches!(&*a.left, syn::Expr::Tuple(_) | syn::Expr::Infer(_)) => {
            destructure::assignment(a, errors)
        }
        syn::Expr::Assign(a) => match assign_target(&a.left, errors) {
            Some(target) => mk(ExprKind::Assign(target, boxed(&a.right, errors), None), e),
            None => invalid(e),
        },
        syn::Expr::Unary(u) => match u.op {
            syn::UnOp::Neg(_) | syn::UnOp::Not(_) => mk(
                ExprKind::Unary(u.op.to_token_stream(), boxed(&u.expr, errors)),
                e,
            ),
            _ => {
                errors.at(u, "dereferencing is not supported in #[autobatch] code; values are copied per lane");
                invalid(e)
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
                    if let Some(g) = segs.iter().find(|s| !s.arguments.is_none()) {
                        errors.at(&g.arguments, "generic arguments are not supported in #[autobatch] calls; call an #[autobatch] function or #[primitive] by its plain name (each takes concrete types)");
                        return invalid(e);
                    }
                    let ty_name = if segs.len() == 2 {
                        Some(segs[0].ident.to_string())
                    } else {
                        None
                    };
                    match ty_name.as_deref() {
                        Some(t) if t == "Vector" || t == "Key" || suffix(t).is_some() => mk(
                            ExprKind::Assoc(segs[0].ident.clone(), segs[1].ident.clone(), args),
                            e,
                        ),
                        _ => mk(ExprKind::Call(p.path.clone(), args), e),
                    }
                }
                other => {
                    errors.at(other, "only calls of named #[autobatch] functions are supported; closures and function values are not");
                    invalid(e)
                }
            }
        }
        syn::Expr::Tuple(t) => mk(
            ExprKind::Tuple(t.elems.iter().map(|x| expr(x, errors)).collect()),
            e,
        ),
        syn::Expr::Field(f) => match &f.member {
            syn::Member::Unnamed(i) => mk(ExprKind::Field(boxed(&f.base, errors), i.index), e),
            syn::Member::Named(n) => mk(ExprKind::NamedField(boxed(&f.base, errors), n.clone()), e),
        },
        syn::Expr::Struct(s) => struct_literal(s, e, errors),
        syn::Expr::Reference(r) => {
            match r.mutability {
                None => mk(ExprKind::Ref(boxed(&r.expr, errors)), e),
                Some(m) => {
                    errors.at(m, "`&mut` is not supported in #[autobatch] code; assign the new value instead");
                    invalid(e)
                }
            }
        }
        syn::Expr::If(_)
        | syn::Expr::While(_)
        | syn::Expr::Loop(_)
        | syn::Expr::ForLoop(_)
        | syn::Expr::Match(_)
        | syn::Expr::Break(_)
        | syn::Expr::Continue(_)
        | syn::Expr::Return(_)
        | syn::Expr::Block(_) => control::flow(e, errors),
        _ => rejected::expr(e, errors),
    }
}

/// `Path { field: value, shorthand, ..base }`.
fn struct_literal(s: &syn::ExprStruct, e: &syn::Expr, errors: &mut Errors) -> Expr {
    if s.qself.is_some() || s.path.segments.iter().any(|seg| !seg.arguments.is_empty()) {
        errors.at(
            &s.path,
            "a struct literal names its #[autobatch] struct by a plain path (`Tree { .. }`)",
        );
        return invalid(e);
    }
    let mut fields = Vec::new();
    for f in &s.fields {
        match &f.member {
            syn::Member::Named(n) => fields.push((n.clone(), expr(&f.expr, errors))),
            syn::Member::Unnamed(i) => {
                errors.at(
                    i,
                    "#[autobatch] structs have named fields: write `name: value`",
                );
                return invalid(e);
            }
        }
    }
    let base = s.rest.as_ref().map(|b| boxed(b, errors));
    mk(
        ExprKind::Struct(super::ast::StructLit {
            path: super::ast::path_key(&s.path),
            fields,
            base,
        }),
        e,
    )
}

//! If-conversion of `if` statements that only assign:
//! `if n % 2 == 0 { n /= 2 } else { n = 3 * n + 1 }` becomes one lane-wise kernel computing
//! the new values, `n = if n % 2 == 0 { let n: i64 = n / (2); n } else { let n: i64 = 3 * n +
//! 1; n }`, instead of a branch, a block per arm and a join. Each lane evaluates the condition
//! and the arm it takes, exactly as the scalar function, and the kernel merges with its
//! neighbours.
//!
//! Arms qualify when they hold only `let`s of pure values (annotated, if at all, with a scalar
//! type), assignments (`x = v`, `x op= v`) of pure values to scalar variables declared outside
//! the `if`, and `if`s of the same kind; anything else (a call, a loop, a jump, a vector or key
//! assigned) keeps the control-flow translation.

use super::kernel::source_text;
use super::scope::ScopeView;
use super::Translator;
use crate::generate::infer::classify::{classify, Strategy};
use crate::generate::pure::is_pure;
use crate::parse::ast::{Block, Expr, ExprKind, Pat, Stmt, Ty};
use autobatch_ir::DType;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

impl Translator<'_> {
    /// Compiles the `if` statement `e` (`if cond then else els`) as one kernel assigning the
    /// variables its arms assign, if its arms qualify (see the module's doc); false, with
    /// nothing emitted, if not.
    pub(super) fn assigning_if(
        &mut self,
        e: &Expr,
        cond: &Expr,
        then: &Block,
        els: Option<&Expr>,
    ) -> bool {
        let Some(names) = assigned(cond, then, els).filter(|n| !n.is_empty()) else {
            return false;
        };
        let mut outs = Vec::new();
        let mut typed = Vec::new();
        for name in names {
            let Some(v) = self.lookup(&name.to_string()) else {
                return false;
            };
            let ty = self.out.vars[v].ty.clone();
            if scalar_tokens(&ty).is_none() {
                return false;
            }
            outs.push(v);
            typed.push((name, ty));
        }
        let Some(converted) = convert_if(cond, then, els, &typed, e.span) else {
            return false;
        };
        let ty = match typed.as_slice() {
            [(_, t)] => t.clone(),
            _ => Ty::Tuple(typed.iter().map(|(_, t)| t.clone()).collect()),
        };
        match classify(&converted, Some(&ty), &ScopeView(self)) {
            Strategy::Kernel(t) if t == ty => {}
            _ => return false,
        }
        self.prim_pure_shown(outs, &converted, ty, source_text(&e.tokens));
        true
    }
}

/// What scanning an `if`'s arms found.
#[derive(Default)]
struct Scan {
    /// The names the enclosing arms' `let`s bind where the scan is.
    bound: Vec<String>,
    /// Every name an arm's `let` binds.
    lets: Vec<String>,
    /// The variables assigned (declared outside the arms), each once, in order of first
    /// assignment.
    names: Vec<Ident>,
}

/// The variables `if cond then else els` assigns, if its arms qualify and none of them binds
/// one of those names with a `let` (an arm's value names them all).
fn assigned(cond: &Expr, then: &Block, els: Option<&Expr>) -> Option<Vec<Ident>> {
    let mut scan = Scan::default();
    let ok = scan.if_(cond, then, els);
    let shadowed = scan.names.iter().any(|n| scan.lets.iter().any(|l| n == l));
    (ok && !shadowed).then_some(scan.names)
}

impl Scan {
    /// True if the arms of `if cond then else els` qualify.
    fn if_(&mut self, cond: &Expr, then: &Block, els: Option<&Expr>) -> bool {
        is_pure(cond)
            && self.block(then)
            && match els.map(|x| &x.kind) {
                None => true,
                Some(ExprKind::If(c, t, e)) => self.if_(c, t, e.as_deref()),
                Some(ExprKind::Block(b)) => self.block(b),
                Some(_) => false,
            }
    }

    /// [`Scan::if_`] for one arm's block.
    fn block(&mut self, b: &Block) -> bool {
        let outer = self.bound.len();
        let mut ok = true;
        for s in &b.stmts {
            ok = ok
                && match s {
                    Stmt::Let { pat, ty, init } => {
                        let names = pat.names();
                        self.bound.extend(names.iter().cloned());
                        self.lets.extend(names);
                        is_pure(init) && ty.as_ref().is_none_or(|t| scalar_tokens(t).is_some())
                    }
                    Stmt::Expr(x) => self.stmt(x),
                };
        }
        ok = ok && b.tail.as_deref().is_none_or(|x| self.stmt(x));
        self.bound.truncate(outer);
        ok
    }

    /// An assignment of a pure value to a variable from outside the arms, or a qualifying
    /// `if`.
    fn stmt(&mut self, x: &Expr) -> bool {
        match &x.kind {
            ExprKind::Assign(id, value, _) => {
                if !is_pure(value) || self.bound.iter().any(|b| id == b) {
                    return false;
                }
                if !self.names.contains(id) {
                    self.names.push(id.clone());
                }
                true
            }
            ExprKind::If(c, t, e) => self.if_(c, t, e.as_deref()),
            _ => false,
        }
    }
}

/// `if cond then else els` as an expression whose every arm ends in the values of `outs` (the
/// one variable, or a tuple of them): each assignment becomes a `let` of the variable's new
/// value, so later statements of the arm read it, as they would after the assignment.
fn convert_if(
    cond: &Expr,
    then: &Block,
    els: Option<&Expr>,
    outs: &[(Ident, Ty)],
    span: Span,
) -> Option<Expr> {
    let then = convert_block(then, outs)?;
    let els = match els.map(|x| &x.kind) {
        None => block_expr(Block {
            stmts: Vec::new(),
            tail: Some(Box::new(values(outs))),
        }),
        Some(ExprKind::If(c, t, e)) => convert_if(c, t, e.as_deref(), outs, span)?,
        Some(ExprKind::Block(b)) => block_expr(convert_block(b, outs)?),
        Some(_) => return None,
    };
    let (c, t, e) = (&cond.tokens, block_tokens(&then)?, &els.tokens);
    let tokens = quote!(if #c #t else #e);
    let kind = ExprKind::If(Box::new(cond.clone()), then, Some(Box::new(els)));
    Some(Expr::made(kind, tokens, span))
}

/// An arm's block with its assignments as `let`s and the values of `outs` as its value.
fn convert_block(b: &Block, outs: &[(Ident, Ty)]) -> Option<Block> {
    let convert = |x: &Expr| -> Option<Stmt> {
        Some(match &x.kind {
            ExprKind::Assign(id, value, op) => {
                let ty = outs.iter().find(|(n, _)| n == id).map(|(_, t)| t.clone())?;
                let init = match op {
                    None => (**value).clone(),
                    Some((bin, op_tokens)) => {
                        let v = &value.tokens;
                        let tokens = quote!(#id #op_tokens (#v));
                        let kind = ExprKind::Binary(
                            *bin,
                            op_tokens.clone(),
                            Box::new(Expr::var(id)),
                            value.clone(),
                        );
                        Expr::made(kind, tokens, x.span)
                    }
                };
                Stmt::Let {
                    pat: Pat::Ident(id.clone()),
                    ty: Some(ty),
                    init,
                }
            }
            ExprKind::If(c, t, e) => {
                // The names the inner `if` assigns, in its own order, each to its new value.
                let inner: Vec<(Ident, Ty)> = assigned(c, t, e.as_deref())?
                    .into_iter()
                    .map(|n| outs.iter().find(|(o, _)| *o == n).cloned())
                    .collect::<Option<_>>()?;
                let init = convert_if(c, t, e.as_deref(), &inner, x.span)?;
                let (pat, ty) = match inner.as_slice() {
                    [(n, t)] => (Pat::Ident(n.clone()), t.clone()),
                    _ => (
                        Pat::Tuple(inner.iter().map(|(n, _)| Pat::Ident(n.clone())).collect()),
                        Ty::Tuple(inner.iter().map(|(_, t)| t.clone()).collect()),
                    ),
                };
                Stmt::Let {
                    pat,
                    ty: Some(ty),
                    init,
                }
            }
            _ => return None,
        })
    };
    let mut stmts = Vec::new();
    for s in &b.stmts {
        stmts.push(match s {
            Stmt::Let { .. } => s.clone(),
            Stmt::Expr(x) => convert(x)?,
        });
    }
    if let Some(x) = &b.tail {
        stmts.push(convert(x)?);
    }
    Some(Block {
        stmts,
        tail: Some(Box::new(values(outs))),
    })
}

/// The value of `outs`: the one variable, or the tuple of them.
fn values(outs: &[(Ident, Ty)]) -> Expr {
    match outs {
        [(n, _)] => Expr::var(n),
        _ => {
            let names = outs.iter().map(|(n, _)| n);
            let items = outs.iter().map(|(n, _)| Expr::var(n)).collect();
            Expr::made(
                ExprKind::Tuple(items),
                quote!((#(#names),*)),
                Span::call_site(),
            )
        }
    }
}

/// A block as an expression.
fn block_expr(b: Block) -> Expr {
    let tokens = block_tokens(&b).unwrap_or_default();
    Expr::made(ExprKind::Block(b), tokens, Span::call_site())
}

/// The tokens of a block made of `let`s (of scalar types, if annotated) and a value.
fn block_tokens(b: &Block) -> Option<TokenStream> {
    let mut stmts = Vec::new();
    for s in &b.stmts {
        let Stmt::Let { pat, ty, init } = s else {
            return None;
        };
        let pat = pat_tokens(pat);
        let init = &init.tokens;
        stmts.push(match ty {
            Some(t) => {
                let t = scalar_tokens(t)?;
                quote!(let #pat: #t = #init;)
            }
            None => quote!(let #pat = #init;),
        });
    }
    let tail = b.tail.as_ref().map(|t| &t.tokens);
    Some(quote!({ #(#stmts)* #tail }))
}

/// The tokens of a pattern.
fn pat_tokens(p: &Pat) -> TokenStream {
    match p {
        Pat::Ident(id) => quote!(#id),
        Pat::Tuple(ps) => {
            let ps = ps.iter().map(pat_tokens);
            quote!((#(#ps),*))
        }
        Pat::Wild => quote!(_),
    }
}

/// Rust's spelling of a number or `bool` type, or a tuple of them; `None` for other types
/// (vectors and keys are moved by handle, which a kernel would copy).
fn scalar_tokens(t: &Ty) -> Option<TokenStream> {
    match t {
        Ty::Scalar(DType::Key) => None,
        Ty::Scalar(d) => {
            let name = format_ident!("{}", d.name());
            Some(quote!(#name))
        }
        Ty::Tuple(items) => {
            let items = items
                .iter()
                .map(scalar_tokens)
                .collect::<Option<Vec<_>>>()?;
            Some(quote!((#(#items,)*)))
        }
        _ => None,
    }
}

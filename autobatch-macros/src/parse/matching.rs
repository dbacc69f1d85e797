//! `match`, `if let`, `let ... else` and `matches!` on integers, bools and tuples of them.
//!
//! Each becomes the Rust the language already has, before it is parsed: the scrutinee is
//! evaluated once into a variable (a plain variable, or each element of a tuple expression,
//! is read where it is), every arm's pattern becomes a condition over it, the arms an
//! `if` / `else if` chain in order (a guard joins its arm's condition, with the arm's bindings
//! in scope), and each binding a `let` at the start of its arm. The last arm without a guard
//! is the chain's final `else`: rustc checks the original function's `match` is exhaustive, so
//! whatever reaches it matches it. A pure `match` thus compiles into one kernel like any pure
//! `if`; any other branches.

use super::ast::{Expr, Stmt};
use super::control::block;
use super::expr::{expr, invalid, is_constant_name};
use super::Errors;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

/// The patterns the language matches, for messages.
const PATTERNS: &str = "patterns in #[autobatch] code are integer and bool literals, ranges of them (`1..=5`, `..=0`), constants, `_`, names (`n`, `n @ 1..=9`), `|` and tuples of these";

/// What to write instead of a float pattern.
const FLOATS: &str = "float patterns are not supported in #[autobatch] code; compare with `if` (`x >= 0.0 && x < 1.0`)";

/// Where the value being matched is: one expression, or the elements of a tuple expression.
#[derive(Clone)]
enum Place {
    Whole(TokenStream),
    Parts(Vec<Place>),
}

impl Place {
    /// The place's value as one expression.
    fn value(&self) -> TokenStream {
        match self {
            Place::Whole(t) => t.clone(),
            Place::Parts(ps) => {
                let items = ps.iter().map(Place::value);
                quote!((#(#items,)*))
            }
        }
    }
}

/// What a pattern asks of its place: conditions (all must hold) and bindings (name, value).
#[derive(Default)]
struct Test {
    conds: Vec<TokenStream>,
    binds: Vec<TokenStream>,
}

impl Test {
    /// The conditions as one `bool` expression (`true` if none).
    fn cond(&self) -> Option<TokenStream> {
        let conds = &self.conds;
        (!conds.is_empty()).then(|| quote!(#(#conds)&&*))
    }
}

/// The name of a match's `k`th scrutinee value (a nested match's shadows it only inside the
/// arm or guard that holds it, where the outer one is no longer read).
fn scrutinee_name(k: usize) -> syn::Ident {
    syn::Ident::new(&format!("__autobatch_match{k}"), Span::call_site())
}

/// Evaluates `e` once: `let`s binding its value, and the place it is then read at. A plain
/// variable is read where it is; a tuple expression element by element.
fn scrutinee(e: &syn::Expr, lets: &mut Vec<TokenStream>, counter: &mut usize) -> Place {
    match e {
        syn::Expr::Paren(p) => scrutinee(&p.expr, lets, counter),
        syn::Expr::Tuple(t) => Place::Parts(
            t.elems
                .iter()
                .map(|x| scrutinee(x, lets, counter))
                .collect(),
        ),
        syn::Expr::Path(p) if p.path.get_ident().is_some_and(|i| !is_constant_name(i)) => {
            Place::Whole(e.to_token_stream())
        }
        other => {
            let name = scrutinee_name(*counter);
            *counter += 1;
            lets.push(quote_spanned!(other.span()=> let #name = #other;));
            Place::Whole(quote!(#name))
        }
    }
}

/// A literal or constant a pattern compares with; reported (and `None`) if it is not one the
/// language matches.
fn endpoint(e: &syn::Expr, errors: &mut Errors) -> Option<TokenStream> {
    match e {
        syn::Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(_) | syn::Lit::Bool(_) => Some(e.to_token_stream()),
            syn::Lit::Float(_) => {
                errors.at(e, FLOATS);
                None
            }
            _ => {
                errors.at(e, PATTERNS);
                None
            }
        },
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => {
            endpoint(&u.expr, errors).map(|_| e.to_token_stream())
        }
        syn::Expr::Path(p)
            if p.qself.is_none()
                && p.path
                    .segments
                    .last()
                    .is_some_and(|s| is_constant_name(&s.ident)) =>
        {
            Some(e.to_token_stream())
        }
        syn::Expr::Paren(p) => endpoint(&p.expr, errors),
        _ => {
            errors.at(e, PATTERNS);
            None
        }
    }
}

/// Adds to `test` what `pat` asks of the value at `place`; false (reported) if the language
/// does not match it.
fn pattern(pat: &syn::Pat, place: &Place, test: &mut Test, errors: &mut Errors) -> bool {
    let value = place.value();
    match pat {
        syn::Pat::Wild(_) => true,
        syn::Pat::Paren(p) => pattern(&p.pat, place, test, errors),
        syn::Pat::Ident(pi) if pi.by_ref.is_none() => {
            if pi.subpat.is_none() && pi.mutability.is_none() && is_constant_name(&pi.ident) {
                let c = &pi.ident;
                test.conds.push(quote!((#value == #c)));
                return true;
            }
            let (m, name) = (&pi.mutability, &pi.ident);
            test.binds.push(quote!(let #m #name = #value;));
            match &pi.subpat {
                Some((_, sub)) => pattern(sub, place, test, errors),
                None => true,
            }
        }
        syn::Pat::Lit(l) => match endpoint(&syn::Expr::Lit(l.clone()), errors) {
            Some(lit) => {
                test.conds.push(quote!((#value == #lit)));
                true
            }
            None => false,
        },
        syn::Pat::Path(p) => match endpoint(&syn::Expr::Path(p.clone()), errors) {
            Some(c) => {
                test.conds.push(quote!((#value == #c)));
                true
            }
            None => false,
        },
        syn::Pat::Range(r) => {
            let is_float = |x: &Option<Box<syn::Expr>>| {
                matches!(
                    x.as_deref(),
                    Some(syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Float(_),
                        ..
                    }))
                )
            };
            if is_float(&r.start) || is_float(&r.end) {
                errors.at(r, FLOATS);
                return false;
            }
            let lo = r.start.as_ref().map(|x| endpoint(x, errors));
            let hi = r.end.as_ref().map(|x| endpoint(x, errors));
            if matches!(lo, Some(None)) || matches!(hi, Some(None)) {
                return false;
            }
            if let Some(Some(lo)) = lo {
                test.conds.push(quote!((#value >= #lo)));
            }
            if let Some(Some(hi)) = hi {
                test.conds.push(match r.limits {
                    syn::RangeLimits::Closed(_) => quote!((#value <= #hi)),
                    syn::RangeLimits::HalfOpen(_) => quote!((#value < #hi)),
                });
            }
            true
        }
        syn::Pat::Or(o) => {
            let mut alternatives = Vec::new();
            for case in &o.cases {
                let mut t = Test::default();
                if !pattern(case, place, &mut t, errors) {
                    return false;
                }
                if !t.binds.is_empty() {
                    errors.at(case, "`|` patterns that bind names are not supported in #[autobatch] code; bind the value outside the `|` (`n @ (1 | 2)`)");
                    return false;
                }
                alternatives.push(t.cond().unwrap_or_else(|| quote!(true)));
            }
            test.conds.push(quote!((#(#alternatives)||*)));
            true
        }
        syn::Pat::Tuple(t) => {
            let n = t.elems.len();
            let rest = t.elems.iter().position(|p| matches!(p, syn::Pat::Rest(_)));
            let parts: Vec<Place> = match place {
                Place::Parts(ps) => {
                    let fits = match rest {
                        Some(_) => n - 1 <= ps.len(),
                        None => n == ps.len(),
                    };
                    if !fits {
                        errors.at(t, "this tuple pattern does not match the tuple's length");
                        return false;
                    }
                    ps.clone()
                }
                Place::Whole(v) => {
                    if rest.is_some_and(|r| r + 1 != n) {
                        errors.at(t, "`..` in a tuple pattern in #[autobatch] code goes last; name the elements before it");
                        return false;
                    }
                    (0..n)
                        .map(|i| {
                            let idx = syn::Index::from(i);
                            Place::Whole(quote!(#v.#idx))
                        })
                        .collect()
                }
            };
            let before = rest.unwrap_or(n);
            let after = n - before - usize::from(rest.is_some());
            let targets = (0..before).chain(parts.len() - after..parts.len());
            let pats = t.elems.iter().filter(|p| !matches!(p, syn::Pat::Rest(_)));
            pats.zip(targets)
                .all(|(p, i)| pattern(p, &parts[i], test, errors))
        }
        other => {
            errors.at(other, PATTERNS);
            false
        }
    }
}

/// One arm: pattern, guard, body (as tokens).
struct Arm<'a> {
    pat: &'a syn::Pat,
    guard: Option<&'a syn::Expr>,
    body: TokenStream,
}

/// The `if` chain of `arms` over the scrutinee `e`, as Rust source; `None` if a pattern is not
/// one the language matches (reported).
fn chain(e: &syn::Expr, arms: &[Arm<'_>], errors: &mut Errors) -> Option<TokenStream> {
    let mut lets = Vec::new();
    let mut counter = 0;
    let place = scrutinee(e, &mut lets, &mut counter);
    // Arms after the last one without a guard are never reached.
    let last = arms
        .iter()
        .rposition(|a| a.guard.is_none())
        .unwrap_or(arms.len().saturating_sub(1));
    let mut branches = Vec::new();
    let mut ok = true;
    for (k, arm) in arms.iter().enumerate().take(last + 1) {
        let mut test = Test::default();
        ok &= pattern(arm.pat, &place, &mut test, errors);
        let binds = &test.binds;
        let body = &arm.body;
        let then = quote!({ #(#binds)* #body });
        let cond = match (test.cond(), arm.guard) {
            (c, Some(g)) => {
                let g = quote!({ #(#binds)* #g });
                Some(match c {
                    Some(c) => quote!(#c && #g),
                    None => g,
                })
            }
            (c, None) => c,
        };
        branches.push(match cond {
            Some(c) if k < last => quote!(if #c #then),
            _ => then,
        });
    }
    ok.then(|| quote!({ #(#lets)* #(#branches)else* }))
}

/// Parses the Rust source `tokens` that an expression at `e` became.
fn reparse(tokens: TokenStream, e: &impl Spanned, errors: &mut Errors) -> Option<syn::Expr> {
    match syn::parse2::<syn::Expr>(tokens) {
        Ok(x) => Some(x),
        Err(err) => {
            errors.at(e.span(), format!("#[autobatch] internal error: {err}"));
            None
        }
    }
}

/// Parses `match scrutinee { arms }`.
pub(super) fn match_expr(m: &syn::ExprMatch, errors: &mut Errors) -> Expr {
    let whole = syn::Expr::Match(m.clone());
    let arms: Vec<Arm<'_>> = m
        .arms
        .iter()
        .map(|a| Arm {
            pat: &a.pat,
            guard: a.guard.as_ref().map(|(_, g)| &**g),
            body: a.body.to_token_stream(),
        })
        .collect();
    if arms.is_empty() {
        errors.at(
            m,
            "a `match` without arms is not supported in #[autobatch] code",
        );
        return invalid(&whole);
    }
    match chain(&m.expr, &arms, errors).and_then(|t| reparse(t, m, errors)) {
        Some(x) => expr(&x, errors),
        None => invalid(&whole),
    }
}

/// Parses `if let pat = e { then } else ..`.
pub(super) fn if_let(i: &syn::ExprIf, l: &syn::ExprLet, errors: &mut Errors) -> Expr {
    let whole = syn::Expr::If(i.clone());
    let wild = syn::Pat::Wild(syn::PatWild {
        attrs: Vec::new(),
        underscore_token: Default::default(),
    });
    let then = &i.then_branch;
    let mut arms = vec![Arm {
        pat: &l.pat,
        guard: None,
        body: quote!(#then),
    }];
    let els = i
        .else_branch
        .as_ref()
        .map_or_else(|| quote!({}), |(_, x)| x.to_token_stream());
    arms.push(Arm {
        pat: &wild,
        guard: None,
        body: els,
    });
    match chain(&l.expr, &arms, errors).and_then(|t| reparse(t, i, errors)) {
        Some(x) => expr(&x, errors),
        None => invalid(&whole),
    }
}

/// Parses `matches!(e, pat)` or `matches!(e, pat if guard)`; `None` for any other macro.
pub(super) fn matches_macro(m: &syn::Macro, errors: &mut Errors) -> Option<Expr> {
    if !m.path.is_ident("matches") {
        return None;
    }
    let whole = syn::Expr::Macro(syn::ExprMacro {
        attrs: Vec::new(),
        mac: m.clone(),
    });
    let parsed = m.parse_body_with(|input: syn::parse::ParseStream<'_>| {
        let e: syn::Expr = input.parse()?;
        input.parse::<syn::Token![,]>()?;
        let pat = syn::Pat::parse_multi_with_leading_vert(input)?;
        let guard = if input.peek(syn::Token![if]) {
            input.parse::<syn::Token![if]>()?;
            Some(input.parse::<syn::Expr>()?)
        } else {
            None
        };
        let _ = input.parse::<Option<syn::Token![,]>>()?;
        Ok((e, pat, guard))
    });
    let (e, pat, guard) = match parsed {
        Ok(p) => p,
        Err(err) => {
            errors.at(m, format!("`matches!` takes a value and a pattern: {err}"));
            return Some(invalid(&whole));
        }
    };
    let wild = syn::Pat::Wild(syn::PatWild {
        attrs: Vec::new(),
        underscore_token: Default::default(),
    });
    let arms = [
        Arm {
            pat: &pat,
            guard: guard.as_ref(),
            body: quote!(true),
        },
        Arm {
            pat: &wild,
            guard: None,
            body: quote!(false),
        },
    ];
    Some(
        match chain(&e, &arms, errors).and_then(|t| reparse(t, m, errors)) {
            Some(x) => expr(&x, errors),
            None => invalid(&whole),
        },
    )
}

/// Parses `let pat = e else { diverge };` into statements: the value once, the `else` block
/// where the pattern does not match, then the pattern's bindings.
pub(super) fn let_else(
    local: &syn::Local,
    init: &syn::LocalInit,
    diverge: &syn::Expr,
    errors: &mut Errors,
) -> Vec<Stmt> {
    let mut lets = Vec::new();
    let mut counter = 0;
    let place = scrutinee(&init.expr, &mut lets, &mut counter);
    let mut test = Test::default();
    if !pattern(&local.pat, &place, &mut test, errors) {
        return Vec::new();
    }
    let check = test.cond().map(|c| quote!(if !(#c) #diverge;));
    let binds = &test.binds;
    let tokens = quote!({ #(#lets)* #check #(#binds)* });
    let Ok(b) = syn::parse2::<syn::Block>(tokens) else {
        errors.at(local, "#[autobatch] internal error: `let ... else`");
        return Vec::new();
    };
    block(&b, errors).stmts
}

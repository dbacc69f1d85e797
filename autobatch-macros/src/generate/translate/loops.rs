//! `for` loops over integer ranges, and the loop `break` and `continue` (labelled or not) go
//! to.
//!
//! A `for` loop is a counter and a flag: a kernel before the loop evaluates the bounds and the
//! step once and computes the first value and whether there is one, and the block branches on
//! the flag to the body or past the loop; the body's end (and every `continue`) runs a kernel
//! computing the next value and whether it is still in the range, and branches on it the same
//! way (the loop is rotated: no header block the lanes pass through on every iteration). The next value is computed in `i128` from the step as
//! the `usize` Rust's `step_by` takes, so no range overflows, `lo..=T::MAX` included, and
//! `step_by(0)` fails in the lanes that reach it as it panics in Rust.

use super::scope::ScopeView;
use super::{LoopCtx, Step, Translator, Value};
use crate::generate::infer::describe;
use crate::generate::infer::function::range_type;
use crate::parse::ast::{Expr, ExprKind, ForLoop, Label, Ty};
use autobatch_ir::DType;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

impl Translator<'_> {
    /// The index of the loop a `break` or `continue` with `label` leaves; left to rustc if
    /// there is none.
    pub(super) fn target_loop(&mut self, label: Option<&Label>) -> Option<usize> {
        let found = match label {
            None => self.loops.len().checked_sub(1),
            Some(l) => self.loops.iter().rposition(|c| c.label.as_ref() == Some(l)),
        };
        if found.is_none() {
            // `break` outside a loop, or naming no enclosing label, is invalid Rust whatever
            // the types: rustc's own error on the function as written is the one error.
            self.errors.left_to_rustc();
        }
        found
    }

    pub(super) fn continue_(&mut self, label: Option<&Label>) -> Value {
        if let Some(at) = self.target_loop(label) {
            let to = match self.loops[at].continue_to {
                Some(b) => b,
                None => {
                    let b = self.new_block("next");
                    self.loops[at].continue_to = Some(b);
                    b
                }
            };
            self.goto(to);
        }
        Value::Diverged
    }

    /// Ends a rotated loop's body: `test(block)` emits the loop's test at the end of `block`
    /// (branching to the body or past the loop), where the body ends and in the block the
    /// loop's `continue`s go to, if any (then the body's end goes there too).
    pub(super) fn end_rotated(
        &mut self,
        continue_to: Option<usize>,
        test: impl Fn(&mut Self, usize),
    ) {
        match (self.current, continue_to) {
            (Some(_), Some(latch)) => self.goto(latch),
            (Some(end), None) => test(self, end),
            (None, _) => {}
        }
        if let Some(latch) = continue_to {
            test(self, latch);
        }
    }

    /// A variable holding the value of `e` (of type `ty`, or its own if `None`) that nothing
    /// else writes: the bounds and the step are evaluated once.
    fn evaluate_once(&mut self, e: &Expr, ty: Option<&Ty>, base: &str) -> Option<(usize, Ty)> {
        match self.compile(e, ty) {
            Value::Var { var, ty, fresh } => Some(if fresh {
                self.out.vars[var].name = self.unique(base);
                (var, ty)
            } else {
                let v = self.new_var(base, ty.clone());
                self.assign(v, var);
                (v, ty)
            }),
            _ => None,
        }
    }

    pub(super) fn for_(&mut self, f: &ForLoop) -> Value {
        let ty = match range_type(f, self.lets, &ScopeView(self)) {
            Some(t) if t.is_int() => t,
            Some(t) => {
                self.errors.at(
                    f.lo.span,
                    format!(
                        "`for` loops in #[autobatch] code run over integer ranges, not {}",
                        describe(&t)
                    ),
                );
                return Value::Unit;
            }
            None => {
                // Typing the bounds failed: compiling them reports why.
                self.compile(&f.lo, None);
                self.compile(&f.hi, None);
                return Value::Unit;
            }
        };
        let Some((lo, _)) = self.evaluate_once(&f.lo, Some(&ty), "range.start") else {
            return Value::Diverged;
        };
        let Some((hi, _)) = self.evaluate_once(&f.hi, Some(&ty), "range.end") else {
            return Value::Diverged;
        };
        let step = match &f.step {
            Some(s) => match self.evaluate_once(s, None, "range.step") {
                Some((v, t)) if t.is_int() => Some(v),
                Some((_, t)) => {
                    self.errors.at(
                        s.span,
                        format!("`step_by` takes an integer, not {}", describe(&t)),
                    );
                    return Value::Unit;
                }
                None => return Value::Diverged,
            },
            None => None,
        };
        let Some(before) = self.current else {
            return Value::Diverged;
        };
        let name = f.var.as_ref().map_or("_".to_string(), Ident::to_string);
        let counter = self.new_var(&format!("{name}.next"), ty.clone());
        let more = self.new_var("range.more", Ty::Scalar(DType::Bool));
        let pair = Ty::Tuple(vec![ty.clone(), Ty::Scalar(DType::Bool)]);
        let (init, next) = range_kernels(f);
        let (lo_id, hi_id, step_id, i_id) = names();
        let mut ins = vec![(lo_id.clone(), lo), (hi_id.clone(), hi)];
        ins.extend(step.map(|s| (step_id.clone(), s)));
        let span = f.lo.span;
        self.push_kernel(
            before,
            vec![counter, more],
            ins,
            Expr::made(ExprKind::Invalid, init, span),
            pair.clone(),
            format!("first of {}", f.source),
        );
        let body_block = self.new_block("body");
        let after = self.new_block("after");
        self.out
            .steps
            .push(Step::Branch(before, more, body_block, after));
        self.current = Some(body_block);
        self.loops.push(LoopCtx {
            label: f.label.clone(),
            continue_to: None,
            break_to: Some(after),
            result: None,
        });
        self.scopes.push(Vec::new());
        if let Some(var) = &f.var {
            let v = self.new_var(&var.to_string(), ty.clone());
            self.assign(v, counter);
            self.bind(var.to_string(), v);
        }
        self.block_value(&f.body, Some(&Ty::unit()));
        self.scopes.pop();
        let ctx = self.loops.pop().expect("pushed above");
        // The loop is rotated: where the body ends (and in the block every `continue` goes
        // to), the next value is computed and tested, and the body entered again from there.
        let bound = if f.rev { lo_id } else { hi_id };
        let mut ins = vec![(i_id, counter), (bound, if f.rev { lo } else { hi })];
        ins.extend(step.map(|s| (step_id, s)));
        let next_and_test = |this: &mut Self, block: usize| {
            this.push_kernel(
                block,
                vec![counter, more],
                ins.clone(),
                Expr::made(ExprKind::Invalid, next.clone(), span),
                pair.clone(),
                format!("next of {}", f.source),
            );
            this.out
                .steps
                .push(Step::Branch(block, more, body_block, after));
        };
        self.end_rotated(ctx.continue_to, next_and_test);
        self.current = Some(after);
        Value::Unit
    }
}

/// The names the range kernels bind their inputs to: start, end, step, current value.
fn names() -> (Ident, Ident, Ident, Ident) {
    let at = |n: &str| Ident::new(n, Span::mixed_site());
    (
        at("__autobatch_lo"),
        at("__autobatch_hi"),
        at("__autobatch_step"),
        at("__autobatch_i"),
    )
}

/// The Rust code of a range's two kernels: the first value and whether there is one (the
/// step checked first, as `step_by` checks it), then from the current value the next and
/// whether it is in the range. Both are `(value, more)`; where there is no value the current
/// one stands in, never read.
fn range_kernels(f: &ForLoop) -> (TokenStream, TokenStream) {
    let (lo, hi, step, i) = names();
    let in_range = if f.inclusive {
        quote!(#lo <= #hi)
    } else {
        quote!(#lo < #hi)
    };
    let first = match (f.rev, f.inclusive) {
        (false, _) => quote!((#lo, #in_range)),
        (true, true) => quote!((#hi, #in_range)),
        (true, false) => quote!((if #in_range { #hi - 1 } else { #hi }, #in_range)),
    };
    let init = match &f.step {
        Some(_) => quote!({
            if (#step as usize) == 0 {
                ::core::panic!("assertion failed: step != 0");
            }
            #first
        }),
        None => first,
    };
    let next = match (&f.step, f.rev, f.inclusive) {
        (None, false, false) => quote!((#i + 1, #i + 1 < #hi)),
        (None, false, true) => quote!((if #i < #hi { #i + 1 } else { #i }, #i < #hi)),
        (None, true, _) => quote!((if #i > #lo { #i - 1 } else { #i }, #i > #lo)),
        (Some(_), rev, inclusive) => {
            let n = format_ident!("__autobatch_n", span = Span::mixed_site());
            let s = quote!(((#step as usize) as i128));
            let (value, more) = match (rev, inclusive) {
                (false, false) => (quote!((#i as i128) + #s), quote!(#n < (#hi as i128))),
                (false, true) => (quote!((#i as i128) + #s), quote!(#n <= (#hi as i128))),
                (true, _) => (quote!((#i as i128) - #s), quote!(#n >= (#lo as i128))),
            };
            quote!({
                let #n: i128 = #value;
                let __autobatch_more = #more;
                (if __autobatch_more { #n as _ } else { #i }, __autobatch_more)
            })
        }
    };
    (init, next)
}

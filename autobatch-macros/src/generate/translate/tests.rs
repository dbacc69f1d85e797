//! Unit tests of the translation, one per construct family: small functions parsed with
//! `syn::parse_quote!`, their recorded steps shown one per line.

use super::{translate, Record, Step};
use crate::generate::infer::function::let_types;
use crate::generate::infer::path_text;
use crate::parse::{self, Errors};
use autobatch_ir::DType;

/// Translates `item`, which must compile without errors.
fn record(item: syn::ItemFn) -> Record {
    let mut errors = Errors::default();
    let func = parse::func(&item, &mut errors);
    let lets = let_types(&func);
    let record = translate(&func, &lets, &mut errors);
    if let Err(e) = errors.finish() {
        panic!("unexpected errors: {e}");
    }
    record
}

/// The steps of `r`, one line each: `block: outs = kernel(ins)`, `outs = ins` (assignment),
/// `outs = call f(ins)`, `goto`, `branch`, `return`.
fn steps(r: &Record) -> Vec<String> {
    let vars = |vs: &[usize]| {
        vs.iter()
            .map(|&v| r.vars[v].name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    r.steps
        .iter()
        .map(|s| match s {
            Step::Prim {
                block, outs, ins, ..
            } => format!(
                "{}: {} = kernel({})",
                r.blocks[*block],
                vars(outs),
                vars(ins)
            ),
            Step::Assign { block, outs, ins } => {
                format!("{}: {} = {}", r.blocks[*block], vars(outs), vars(ins))
            }
            Step::Call {
                block,
                callee,
                ins,
                outs,
            } => format!(
                "{}: {} = call {}({})",
                r.blocks[*block],
                vars(outs),
                path_text(&r.callees[*callee].path),
                vars(ins)
            ),
            Step::Goto(from, to) => format!("{}: goto {}", r.blocks[*from], r.blocks[*to]),
            Step::Branch(from, c, t, e) => format!(
                "{}: branch {} ? {} : {}",
                r.blocks[*from], r.vars[*c].name, r.blocks[*t], r.blocks[*e]
            ),
            Step::Ret(b) => format!("{}: return", r.blocks[*b]),
        })
        .collect()
}

#[test]
fn straight_line_code_is_one_kernel_into_the_return_variable() {
    let r = record(syn::parse_quote! {
        fn f(a: f64, b: f64) -> f64 { a * b + 1.0 }
    });
    assert_eq!(
        steps(&r),
        [
            "return: return",
            "entry: ret = kernel(a, b)",
            "entry: goto return"
        ]
    );
    assert_eq!(r.kernels.len(), 1);
    assert_eq!(r.kernels[0].body.tokens.to_string(), "a * b + 1.0");
}

#[test]
fn a_pure_scalar_if_is_part_of_the_kernel() {
    let r = record(syn::parse_quote! {
        fn f(x: i64) -> i64 { if x < 0 { -x } else { x } }
    });
    assert_eq!(
        steps(&r),
        [
            "return: return",
            "entry: ret = kernel(x)",
            "entry: goto return"
        ]
    );
}

#[test]
fn an_if_with_a_call_branches_and_joins() {
    let r = record(syn::parse_quote! {
        fn f(n: i64) -> i64 { if n <= 1 { n } else { f(n - 1) } }
    });
    assert_eq!(
        steps(&r),
        [
            "return: return",
            "entry: t = kernel(n)",
            "entry: branch t ? then : else",
            "then: ret = n",
            "then: goto join",
            "else: t.1 = kernel(n)",
            "else: ret = call f(t.1)",
            "else: goto join",
            "join: goto return",
        ]
    );
    assert!(r.callees[0].is_self);
}

#[test]
fn a_while_loop_tests_where_it_starts_and_where_its_body_ends() {
    let r = record(syn::parse_quote! {
        fn f(n: i64) -> i64 {
            let mut i = 0;
            while i < n { i += 1; }
            i
        }
    });
    assert_eq!(
        steps(&r),
        [
            "return: return",
            "entry: i = kernel()",
            "entry: t = kernel(i, n)",
            "entry: branch t ? body : after",
            "body: i = kernel(i)",
            "body: t.1 = kernel(i, n)",
            "body: branch t.1 ? body : after",
            "after: ret = i",
            "after: goto return",
        ]
    );
    // `i` is compared with an `i64`: inference made the literal's `let` an `i64`.
    let i = r.vars.iter().find(|v| v.name == "i").map(|v| &v.ty);
    assert_eq!(i, Some(&crate::parse::ast::Ty::Scalar(DType::I64)));
}

#[test]
fn a_continue_goes_to_a_block_testing_the_condition_again() {
    let r = record(syn::parse_quote! {
        fn f(n: i64) -> i64 {
            let mut i = 0;
            let mut odd = 0;
            while i < n {
                i += 1;
                if i % 2 == 0 { continue; }
                odd += 1;
            }
            odd
        }
    });
    assert_eq!(
        steps(&r),
        [
            "return: return",
            "entry: i = kernel()",
            "entry: odd = kernel()",
            "entry: t = kernel(i, n)",
            "entry: branch t ? body : after",
            "body: i = kernel(i)",
            "body: t.1 = kernel(i)",
            "body: branch t.1 ? then : else",
            "then: goto next",
            "else: goto join",
            "join: odd = kernel(odd)",
            "join: goto next",
            "next: t.2 = kernel(i, n)",
            "next: branch t.2 ? body : after",
            "after: ret = odd",
            "after: goto return",
        ]
    );
}

#[test]
fn a_loop_with_a_break_value_writes_one_result_variable() {
    let r = record(syn::parse_quote! {
        fn f(n: i64) -> i64 {
            let mut k = n;
            loop {
                if k > 10 { break k; }
                k = k * 2;
            }
        }
    });
    assert_eq!(
        steps(&r),
        [
            "return: return",
            "entry: k = n",
            "entry: goto loop",
            "loop: t.1 = kernel(k)",
            "loop: branch t.1 ? then : else",
            "then: t = k",
            "then: goto after",
            "else: goto join",
            "join: k = kernel(k)",
            "join: goto loop",
            "after: ret = t",
            "after: goto return",
        ]
    );
}

#[test]
fn a_tuple_pattern_takes_the_elements_directly() {
    let r = record(syn::parse_quote! {
        fn f(a: i64, b: i64) -> i64 {
            let (q, r) = (a / b, a % b);
            q + r
        }
    });
    assert_eq!(
        steps(&r),
        [
            "return: return",
            "entry: q = kernel(a, b)",
            "entry: r = kernel(a, b)",
            "entry: ret = kernel(q, r)",
            "entry: goto return",
        ]
    );
}

#[test]
fn a_tuple_of_variables_is_one_assignment() {
    let r = record(syn::parse_quote! {
        fn f(a: i64, b: i64) -> (i64, i64) { (b, a) }
    });
    assert_eq!(
        steps(&r),
        [
            "return: return",
            "entry: ret.0, ret.1 = b, a",
            "entry: goto return"
        ]
    );
}

#[test]
fn a_compound_assignment_is_a_kernel_on_its_target() {
    let r = record(syn::parse_quote! {
        fn f(x: f64) -> f64 { let mut y = x; y *= 2.0; y }
    });
    assert_eq!(
        steps(&r),
        [
            "return: return",
            "entry: y = x",
            "entry: y = kernel(y)",
            "entry: ret = y",
            "entry: goto return",
        ]
    );
}

#[test]
fn a_call_with_a_tuple_result_writes_the_patterns_variables() {
    let r = record(syn::parse_quote! {
        fn f(n: i64) -> (i64, i64) {
            if n == 0 { return (0, 1); }
            let (a, b) = f(n - 1);
            (b, a + b)
        }
    });
    let s = steps(&r);
    assert!(
        s.contains(&"join: a, b = call f(t.1)".to_string()),
        "{s:#?}"
    );
    assert_eq!(r.callees.len(), 1);
}

#[test]
fn short_circuit_operators_branch() {
    let r = record(syn::parse_quote! {
        fn f(a: bool, n: i64) -> bool { a && g(n) }
    });
    let s = steps(&r);
    assert!(
        s.contains(&"entry: branch a ? and : short".to_string()),
        "{s:#?}"
    );
    assert!(s.contains(&"short: t = kernel()".to_string()), "{s:#?}");
}

//! The preparation pipeline: it verifies its source once, whatever passes run, and hands each
//! interpreter a verified program of its form.

use autobatch_ir::passes::{prepare, Allocations, InlineOptions, Passes, Source, VerifiedSource};
use autobatch_ir::verify::verifications;
use autobatch_ir::{Allocation, DType, PrimOp, Program};
use autobatch_testkit::conformance::{self, numbering};

/// Every combination of the optional passes.
fn all_passes() -> Vec<Passes> {
    let mut out = Vec::new();
    for inline in [
        None,
        Some(InlineOptions {
            max_ops: usize::MAX,
        }),
    ] {
        for simplify in [false, true] {
            for copies in [false, true] {
                out.push(Passes {
                    inline: inline.clone(),
                    simplify,
                    copies,
                    call_copies: copies,
                });
            }
        }
    }
    out
}

fn never(_: &PrimOp) -> bool {
    false
}

/// Runs `prepare` and returns how many verifications it made.
fn verifications_of(source: Source, passes: &Passes, allocations: Allocations) -> usize {
    let before = verifications();
    prepare(source, passes, allocations, never).expect("a valid program prepares");
    verifications() - before
}

#[test]
fn a_preparation_verifies_its_source_once() {
    let highs: Vec<Program> = conformance::control_flow_programs()
        .into_iter()
        .map(|p| p.into_program())
        .chain([conformance::helper_in_recursion(&mut numbering()).into_program()])
        .collect();
    let lows = [
        conformance::fibonacci_program(&mut numbering()).into_program(),
        conformance::pea_nuts_program(&mut numbering()).into_program(),
    ];
    for passes in all_passes() {
        for allocations in [Allocations::Compute, Allocations::Trust] {
            for p in &highs {
                let n = verifications_of(Source::High(p.clone()), &passes, allocations);
                assert_eq!(n, 1, "{passes:?}, {allocations:?}\n{p}");
            }
            for p in &lows {
                let n = verifications_of(Source::Lowered(p.clone()), &passes, allocations);
                assert_eq!(n, 1, "{passes:?}, {allocations:?}\n{p}");
            }
        }
    }
}

#[test]
fn an_invalid_source_is_reported_by_its_one_verification() {
    let mut p = conformance::gcd(&mut numbering()).into_program();
    p.main = autobatch_ir::FuncId::new(9);
    let before = verifications();
    let errors = prepare(
        Source::High(p),
        &Passes::default(),
        Allocations::Compute,
        never,
    )
    .unwrap_err();
    assert_eq!(verifications() - before, 1);
    assert!(errors
        .to_string()
        .contains("the entry function fn9 does not exist"));
}

#[test]
fn each_interpreter_gets_its_form() {
    let high = conformance::fibonacci_function_calls(&mut numbering(), DType::I64);
    let prepared = prepare(
        Source::from(high.clone()),
        &Passes::default(),
        Allocations::Compute,
        never,
    )
    .unwrap();
    assert!(matches!(prepared.source, VerifiedSource::High(_)));
    assert!(prepared.high.is_some());
    assert_eq!(prepared.lowered.functions.len(), 1);
    // Computed allocations: the source is allocated, the given program was all FULL.
    assert!(high.vars.iter().all(|v| v.alloc == Allocation::Full));
    assert!(prepared
        .source
        .program()
        .vars
        .iter()
        .any(|v| v.alloc != Allocation::Full));

    let low = conformance::fibonacci_program(&mut numbering());
    let prepared = prepare(
        Source::from(low),
        &Passes::none(),
        Allocations::Trust,
        never,
    )
    .unwrap();
    assert!(matches!(prepared.source, VerifiedSource::Lowered(_)));
    assert!(prepared.high.is_none());
}

/// Trusted allocations are kept when no pass changes the program.
#[test]
fn trusted_allocations_are_kept_when_nothing_changes() {
    let high = conformance::fibonacci_function_calls(&mut numbering(), DType::I64);
    let prepared = prepare(
        Source::from(high.clone()),
        &Passes::none(),
        Allocations::Trust,
        never,
    )
    .unwrap();
    assert_eq!(prepared.high.unwrap().allocations(), high.allocations());
}

//! The control constructs of everyday Rust, in programs written as users write them: `for`
//! over integer ranges, loop labels, `match`, `if let`, `let else`, `matches!`, destructuring
//! assignment, tuple parameters and constants. Each runs differentially: the scalar function,
//! stackless and the full VM agree lane by lane on proptest batches of 1 to 1,000 lanes.

use super::{check1, check2, modes};
use autobatch_runtime::autobatch;
use autobatch_runtime::ndarray::Array1;
use proptest::prelude::*;

/// The `for` sum.
#[autobatch]
fn sum_below(n: i64) -> i64 {
    let mut s = 0;
    for i in 0..n {
        s += i;
    }
    s
}

/// Horner's rule over `0..5`: the loop variable's type comes from its use (`i64`).
#[autobatch]
fn horner(x: i64) -> i64 {
    let mut acc: i64 = 0;
    for k in 0..5 {
        acc = acc * x + k;
    }
    acc
}

/// Every range form, with `continue` and `break`.
#[autobatch]
fn ranges(n: i64, k: i64) -> i64 {
    let mut s = 0;
    for i in 0..=n {
        if i % 3 == 0 {
            continue;
        }
        s = s * 7 % 1_000_003 + i;
    }
    for i in (0..n).rev() {
        if i < n / 2 {
            break;
        }
        s = s * 5 % 1_000_003 + i;
    }
    for i in (-n..=n).step_by(k as usize) {
        s = s * 3 % 1_000_003 + i;
    }
    for i in (0..=n).rev().step_by(k as usize) {
        s = s * 11 % 1_000_003 + i;
    }
    for _ in (1..n).rev() {
        s += 1;
    }
    s
}

/// Ranges that end at the type's limits must not overflow.
#[autobatch]
fn at_the_limits(d: i32) -> i64 {
    let mut c: i64 = 0;
    for i in (i32::MAX - d)..=i32::MAX {
        c = (c * 2 + i as i64 % 7) % 1_000_003;
    }
    for i in (i32::MIN..=(i32::MIN + d)).rev() {
        c = (c * 2 + i as i64 % 5) % 1_000_003;
    }
    for i in ((i32::MAX - 2 * d)..i32::MAX).step_by(3) {
        c = (c * 2 + i as i64 % 3) % 1_000_003;
    }
    for i in (i32::MIN..(i32::MIN + 2 * d)).rev().step_by(2) {
        c = (c * 2 + i as i64 % 3) % 1_000_003;
    }
    for _ in (i32::MIN..=i32::MAX).step_by(2_000_000_000) {
        c += 1;
    }
    c
}

/// The smallest divisor above 1, with an early `return` from a `for`; a body that always
/// returns.
#[autobatch]
fn smallest_divisor(n: i64) -> i64 {
    for d in 2..n {
        if n % d == 0 {
            return d;
        }
    }
    for i in n..n + 1 {
        return i;
    }
    -1
}

/// A labelled-loop search: the first pair `a <= b` below `limit` with `a * b == target`.
#[autobatch]
fn find_factors(target: i64, limit: i64) -> i64 {
    let mut found = -1;
    'outer: for a in 2..limit {
        for b in a..limit {
            if a * b == target {
                found = a * 1000 + b;
                break 'outer;
            }
            if a * b > target {
                continue 'outer;
            }
        }
    }
    found
}

/// `break 'label value` out of a nested `loop`, and labelled `while` loops.
#[autobatch]
fn next_multiple(n: i64, m: i64) -> i64 {
    let mut rounds = 0;
    'count: while rounds < 3 {
        rounds += 1;
        let mut j: i64 = 0;
        while j < 10 {
            j += 1;
            if j == rounds {
                continue 'count;
            }
        }
    }
    let found = 'search: loop {
        let mut k = n;
        loop {
            if k % m == 0 {
                break 'search k + rounds;
            }
            k += 1;
        }
    };
    found
}

/// `step_by(0)` panics in Rust; batched it is an error.
#[autobatch]
fn stepped_sum(n: i64, k: i64) -> i64 {
    let mut s = 0;
    for i in (0..n).step_by(k as usize) {
        s += i;
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn for_loops(ns in prop::collection::vec(-5i64..300, 1..1000)) {
        check1(&ns, sum_below, sum_below::batch)?;
        check1(&ns, horner, horner::batch)?;
        check1(&ns, smallest_divisor, smallest_divisor::batch)?;
    }

    #[test]
    fn every_range_form(pairs in prop::collection::vec((-3i64..60, 1i64..7), 1..1000)) {
        let (n, k): (Vec<i64>, Vec<i64>) = pairs.into_iter().unzip();
        check2(&n, &k, ranges, ranges::batch)?;
        check2(&n, &k, stepped_sum, stepped_sum::batch)?;
    }

    #[test]
    fn ranges_at_the_type_limits(ds in prop::collection::vec(0i32..40, 1..300)) {
        check1(&ds, at_the_limits, at_the_limits::batch)?;
    }

    #[test]
    fn labelled_loops(pairs in prop::collection::vec((1i64..2_000, 2i64..60), 1..1000)) {
        let (t, l): (Vec<i64>, Vec<i64>) = pairs.into_iter().unzip();
        check2(&t, &l, find_factors, find_factors::batch)?;
        check2(&t, &l, next_multiple, next_multiple::batch)?;
    }
}

#[test]
fn step_by_zero_is_an_error_not_a_hang() {
    let n = Array1::from_vec(vec![10i64, 10, 10]);
    let k = Array1::from_vec(vec![1i64, 0, 3]);
    assert!(std::panic::catch_unwind(|| stepped_sum(10, 0)).is_err());
    for config in modes() {
        let err = stepped_sum::batch(n.view(), k.view(), &config).unwrap_err();
        assert!(err.to_string().contains("step != 0"), "{err}");
        let isolated = stepped_sum::batch_isolated(n.view(), k.view(), &config).unwrap();
        assert_eq!(isolated.failed.iter().map(|f| f.lane).collect::<Vec<_>>(), [1]);
        assert_eq!(isolated.outputs[0], 45);
        assert_eq!(isolated.outputs[2], 18);
    }
}

//! Loops as users write them: `for` over every range form (at the type's limits too), `while`
//! and `loop` with `break` / `continue`, labels with `break 'label value`, early returns from
//! loops, Collatz and a running sum; and locals named as the generated code's own names.

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
/// returns (its next-value block is never reached).
#[allow(clippy::never_loop)]
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
    let mut rounds: i64 = 0;
    'count: while rounds < 3 {
        rounds += 1;
        let mut j = 0;
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
                break 'search k + 2 * rounds;
            }
            if k > n + m {
                break;
            }
            k += 1;
        }
    };
    found - rounds
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

/// Collatz with `while`, over `u64` (`n % 2 == 0`, as most users write it).
#[allow(clippy::manual_is_multiple_of)]
#[autobatch]
fn collatz_steps(n: u64) -> u32 {
    let mut n = n;
    let mut steps = 0;
    while n != 1 {
        if n % 2 == 0 {
            n /= 2;
        } else {
            n = 3 * n + 1;
        }
        steps += 1;
    }
    steps
}

/// The first `k` in `1..limit` whose square exceeds `target`, with early returns inside loops.
#[autobatch]
fn first_square_above(target: i64, limit: i64) -> i64 {
    let mut k = 1;
    while k < limit {
        if k * k > target {
            return k;
        }
        k += 1;
        if k > 1000 {
            return -1;
        }
    }
    limit
}

/// The reference's `iota_sum`, with a loop instead of tail recursion.
#[autobatch]
pub(crate) fn iota_sum(n: i64, acc: i64) -> i64 {
    let mut n = n;
    let mut acc = acc;
    while n > 0 {
        acc += n;
        n -= 1;
    }
    acc
}

/// Parameters and locals named as the generated code's own names.
#[autobatch]
fn hygiene(config: i64, lanes: i64, exe: i64) -> i64 {
    let inputs = config + lanes;
    let outputs = inputs * exe;
    let mut ctx = 0;
    for program in 0..outputs % 5 {
        let executable = program + 1;
        ctx += executable;
    }
    let batch_with_stats = ctx - inputs;
    // Named as the operand the macro binds a call's result to.
    let mut __a0 = 1;
    __a0 += sum_below(inputs % 7);
    batch_with_stats + outputs + __a0
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(24)))]

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

    #[test]
    fn collatz_with_while(ns in prop::collection::vec(1u64..5_000, 1..1000)) {
        check1(&ns, collatz_steps, collatz_steps::batch)?;
    }

    #[test]
    fn early_returns_inside_loops(pairs in prop::collection::vec((0i64..3_000_000, 1i64..2_000), 1..500)) {
        let (t, l): (Vec<i64>, Vec<i64>) = pairs.into_iter().unzip();
        check2(&t, &l, first_square_above, first_square_above::batch)?;
    }
}

#[test]
fn generated_names_never_meet_the_users() {
    let a = Array1::from_vec(vec![1i64, -4, 7]);
    let b = Array1::from_vec(vec![3i64, 5, -2]);
    let c = Array1::from_vec(vec![2i64, 9, 4]);
    for config in modes() {
        let got = hygiene::batch(a.view(), b.view(), c.view(), &config).unwrap();
        let expected: Vec<i64> = (0..3).map(|i| hygiene(a[i], b[i], c[i])).collect();
        assert_eq!(got.to_vec(), expected);
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
        assert_eq!(
            isolated.failed.iter().map(|f| f.lane).collect::<Vec<_>>(),
            [1]
        );
        assert_eq!(isolated.outputs[0], 45);
        assert_eq!(isolated.outputs[2], 18);
    }
}

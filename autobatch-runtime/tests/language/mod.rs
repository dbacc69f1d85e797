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

/// Collatz with `match`.
#[autobatch]
fn collatz_match(n: i64) -> i64 {
    let mut n = n;
    let mut steps = 0;
    while n != 1 {
        n = match n % 2 {
            0 => n / 2,
            _ => 3 * n + 1,
        };
        steps += 1;
    }
    steps
}

/// A `match` state machine: statement arms with blocks, assignments and `break`.
#[autobatch]
fn state_machine(input: i64) -> i64 {
    let mut state = 0;
    let mut x = input;
    let mut out = 0;
    loop {
        match state {
            0 => {
                if x % 3 == 0 {
                    state = 1;
                } else {
                    state = 2;
                }
            }
            1 => {
                out += x;
                x /= 3;
                state = if x == 0 { 3 } else { 0 };
            }
            2 => {
                out -= 1;
                x -= 1;
                state = 0;
            }
            _ => break,
        }
    }
    out
}

/// Literal, range, `|`, binding, `@`, guard and wildcard patterns over a tuple of integers.
#[autobatch]
fn classify(a: i64, b: i64) -> i64 {
    match (a, b) {
        (0, 0) => 0,
        (0, _) | (_, 0) => 1,
        (x @ 1..=9, y) if y > x => 10 + x,
        (..=-1, ..=-1) => 2,
        (x, y) if x == y => 3,
        (i64::MIN..=-100, _) => 4,
        (_, n) => match n % 4 {
            0 | 1 => 5,
            2 => 6,
            _ => 7,
        },
    }
}

/// `match` on a tuple variable of a bool and an integer, as an expression with an early
/// `return` in an arm and a call in another.
#[autobatch]
fn signs(x: i64, flag: bool) -> i64 {
    let t = (x > 0, flag, x % 3);
    let r = match t {
        (true, true, _) => {
            if x > 100 {
                return -1;
            }
            x * 2
        }
        (true, false, 0) => collatz_match(x % 50 + 1),
        (true, false, k) => k,
        (false, f, ..) => {
            if f {
                1
            } else {
                0
            }
        }
    };
    r + 1
}

/// McCarthy 91, with a half-open range pattern.
#[autobatch]
fn mccarthy91(n: i64) -> i64 {
    match n {
        101.. => n - 10,
        _ => mccarthy91(mccarthy91(n + 11)),
    }
}

/// `let else`, `if let` with a binding range and `matches!` (with a guard).
#[autobatch]
fn digit_score(n: i64) -> i64 {
    let m @ 0..=99_999 = n else {
        return -1;
    };
    let mut m = m;
    let mut s = 0;
    while m > 0 {
        if let d @ 5..=9 = m % 10 {
            s += d * 2;
        } else {
            s += m % 10;
        }
        m /= 10;
    }
    if matches!(s, 0 | 7..=9) {
        s * 100
    } else if matches!(s, x if x % 2 == 0) {
        -s
    } else {
        s
    }
}

/// gcd with destructuring assignment (nested, with `_`).
#[autobatch]
fn gcd_assign(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a, b);
    let mut steps = 0;
    while b != 0 {
        (a, b) = (b, a % b);
        ((steps, _), _) = ((steps + 1, a), b);
    }
    a.abs() * 100 + steps
}

/// tak, with a tuple pattern parameter.
#[autobatch]
fn tak((x, y): (i64, i64), z: i64) -> i64 {
    if y < x {
        tak((tak((x - 1, y), z), tak((y - 1, z), x)), tak((z - 1, x), y))
    } else {
        z
    }
}

/// A module constant, an associated constant and a primitive type's constant.
const LIMIT: i64 = 1_000;

struct Tuning;

impl Tuning {
    const SCALE: f64 = 0.5;
}

#[autobatch]
fn clamp_scaled(x: i64) -> f64 {
    let capped = if x > LIMIT { LIMIT } else { x };
    let mut total = 0.0;
    for _ in 0..capped % 7 {
        total += Tuning::SCALE * capped as f64;
    }
    if capped == i64::MAX {
        return 0.0;
    }
    total + LIMIT as f64
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
    fn matches_on_integers(ns in prop::collection::vec(-200i64..10_000, 1..1000)) {
        let collatz: Vec<i64> = ns.iter().map(|n| n.rem_euclid(5_000) + 1).collect();
        check1(&collatz, collatz_match, collatz_match::batch)?;
        let naturals: Vec<i64> = ns.iter().map(|n| n.abs()).collect();
        check1(&naturals, state_machine, state_machine::batch)?;
        check1(&ns, mccarthy91, mccarthy91::batch)?;
        check1(&ns, digit_score, digit_score::batch)?;
        check1(&ns, clamp_scaled, clamp_scaled::batch)?;
    }

    #[test]
    fn matches_on_tuples(pairs in prop::collection::vec((-200i64..200, -20i64..20), 1..1000)) {
        let (a, b): (Vec<i64>, Vec<i64>) = pairs.into_iter().unzip();
        check2(&a, &b, classify, classify::batch)?;
        check2(&a, &b, gcd_assign, gcd_assign::batch)?;
        let flags: Vec<bool> = b.iter().map(|x| x % 2 == 0).collect();
        check2(&a, &flags, signs, signs::batch)?;
    }

    #[test]
    fn tuple_parameters(xyz in prop::collection::vec((0i64..12, 0i64..12, 0i64..12), 1..200)) {
        let x = Array1::from_vec(xyz.iter().map(|t| t.0).collect());
        let y = Array1::from_vec(xyz.iter().map(|t| t.1).collect());
        let z = Array1::from_vec(xyz.iter().map(|t| t.2).collect());
        let expected: Vec<i64> = xyz.iter().map(|&(a, b, c)| tak((a, b), c)).collect();
        for config in modes() {
            let got = tak::batch((x.view(), y.view()), z.view(), &config).unwrap();
            prop_assert_eq!(got.to_vec(), expected.clone());
        }
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
        assert_eq!(
            isolated.failed.iter().map(|f| f.lane).collect::<Vec<_>>(),
            [1]
        );
        assert_eq!(isolated.outputs[0], 45);
        assert_eq!(isolated.outputs[2], 18);
    }
}

//! `match` as users write it: Collatz and McCarthy 91 with `match`, a `match` state machine,
//! tuple patterns with ranges, `|`, bindings and guards, `if let`, `let else`, `matches!`,
//! destructuring assignment and constants.

use super::{check1, check2};
use autobatch_runtime::autobatch;
use proptest::prelude::*;

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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(24)))]

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
}

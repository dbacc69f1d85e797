//! If-conversion of `if` statements that only assign scalar variables: the `if` is one
//! lane-wise kernel computing the variables' new values (merged with its neighbours), not a
//! branch and blocks. The printed programs show which `if`s still branch; the scalar function,
//! stackless and the full VM agree lane by lane on proptest batches, floats bit for bit, and an
//! overflow in an arm fails its lane alone, as in the scalar function.

use autobatch_runtime::ndarray::{Array1, Array2};
use autobatch_runtime::{autobatch, Config, Mode, RuntimeError, Vector};
use proptest::prelude::*;

/// Collatz steps: the loop body's `if` assigns `n` in both arms.
#[autobatch]
fn collatz_steps(n: i64) -> i64 {
    let mut n = n;
    let mut steps = 0;
    while n > 1 {
        if n % 2 == 0 {
            n /= 2;
        } else {
            n = 3 * n + 1;
        }
        steps += 1;
    }
    steps
}

/// An `else if` chain whose arms assign different variables (each arm keeps the others'
/// values), read what they assigned before (`y` after `x`), hold `let`s, a nested `if` and an
/// `if` without `else`; the last arm is a tail without `;`.
#[autobatch]
fn clamp_and_count(x: f64, lo: f64, hi: f64) -> (f64, i64, bool) {
    let mut x = x;
    let mut count = 0;
    let mut clipped = false;
    if x.is_nan() {
        x = 0.0;
        clipped = true;
    } else if x < lo {
        let gap = lo - x;
        x = lo;
        count += 1;
        if gap > 10.0 {
            count *= 3;
            clipped = true;
        }
    } else if x > hi {
        x = hi;
        x -= 0.5 * (x - lo).abs().min(1.0);
        count -= -2
    }
    if count > 2 {
        x *= 2.0;
    }
    (x, count, clipped)
}

/// An arm's `let` binds a name another arm assigns: the arms' value could not name both, so
/// the `if` branches.
#[autobatch]
#[allow(unused_assignments)]
fn let_shadows_an_assigned_name(a: i64, flag: bool) -> (i64, i64) {
    let mut n = a;
    let mut m = 0;
    if flag {
        let n = a * 2;
        m = n + 1;
    } else {
        n = a - 1;
    }
    (n, m)
}

/// A `u8` sum in an arm: overflows for large inputs (a panic in a debug build, wraps in
/// release), failing that lane only.
#[autobatch]
fn add_if_flagged(x: u8, y: u8, flag: bool) -> u8 {
    let mut total = x;
    if flag {
        total += y;
    }
    total
}

/// Arms assigning a vector, or calling a function, or looping: these `if`s branch.
#[autobatch]
fn vector_call_or_loop(v: Vector, x: f64, pick: i64) -> (f64, f64) {
    let mut w = v.clone();
    if pick == 0 {
        w = &v * 2.0;
    }
    let mut y = x;
    if pick == 1 {
        y = clamp_and_count(x, -1.0, 1.0).0;
    }
    if pick == 2 {
        let mut i = 0;
        while i < 3 {
            y += 1.0;
            i += 1;
        }
    }
    (w.sum(), y)
}

/// Branch terminators in a printed program.
fn branches(text: &str) -> usize {
    text.lines()
        .filter(|l| l.trim_start().starts_with("branch("))
        .count()
}

/// Kernel ops (not the built-in assignment) in a printed program.
fn kernels(text: &str) -> usize {
    text.lines()
        .filter(|l| l.contains(" = prim(") && !l.ends_with("by assign"))
        .count()
}

#[test]
fn ifs_that_only_assign_scalars_do_not_branch() {
    // The loop's condition is the one thing branched on (where the loop starts and where its
    // body ends: the loop is rotated); its body is one kernel (the `if` merged with
    // `steps += 1` and the condition), shown as the user wrote it.
    let text = collatz_steps::COMPILE_TIME_PROGRAM;
    assert_eq!(branches(text), 2, "{text}");
    assert_eq!(kernels(text), 2, "{text}");
    assert!(text.contains("if n % 2 == 0"), "{text}");
    let text = clamp_and_count::COMPILE_TIME_PROGRAM;
    assert_eq!(branches(text), 0, "{text}");
    assert_eq!(kernels(text), 1, "{text}");
    let text = add_if_flagged::COMPILE_TIME_PROGRAM;
    assert_eq!(branches(text), 0, "{text}");
}

#[test]
fn ifs_that_shadow_move_vectors_call_or_loop_branch() {
    let text = let_shadows_an_assigned_name::COMPILE_TIME_PROGRAM;
    assert_eq!(branches(text), 1, "{text}");
    let text = vector_call_or_loop::COMPILE_TIME_PROGRAM;
    // Three `if`s and the loop's condition (tested where the loop starts and where its body
    // ends).
    assert_eq!(branches(text), 5, "{text}");
}

fn modes() -> [Config; 2] {
    [
        Config::with_mode(Mode::FullVm),
        Config::with_mode(Mode::Stackless),
    ]
}

/// Floats are equal bit for bit, or both NaN.
fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Floats with NaN, infinities and signed zeros among them.
fn floats() -> impl Strategy<Value = f64> {
    prop_oneof![
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(-0.0),
        6 => -30.0f64..30.0,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn converted_ifs_agree_with_the_scalar_function(
        lanes in prop::collection::vec((1i64..100_000, floats(), -5.0f64..0.0, 0.0f64..5.0, any::<bool>()), 1..1000)
    ) {
        let n = Array1::from_iter(lanes.iter().map(|l| l.0));
        let x = Array1::from_iter(lanes.iter().map(|l| l.1));
        let lo = Array1::from_iter(lanes.iter().map(|l| l.2));
        let hi = Array1::from_iter(lanes.iter().map(|l| l.3));
        let flag = Array1::from_iter(lanes.iter().map(|l| l.4));
        for config in modes() {
            let steps = collatz_steps::batch(n.view(), &config).unwrap();
            let (cx, count, clipped) = clamp_and_count::batch(x.view(), lo.view(), hi.view(), &config).unwrap();
            let (sn, sm) = let_shadows_an_assigned_name::batch(n.view(), flag.view(), &config).unwrap();
            for (i, l) in lanes.iter().enumerate() {
                prop_assert_eq!(steps[i], collatz_steps(l.0), "{:?} lane {}", config.mode, i);
                let (ex, ec, ecl) = clamp_and_count(l.1, l.2, l.3);
                prop_assert!(same(cx[i], ex) && count[i] == ec && clipped[i] == ecl,
                    "{:?} lane {i}: {:?} vs {:?}", config.mode, (cx[i], count[i], clipped[i]), (ex, ec, ecl));
                prop_assert_eq!((sn[i], sm[i]), let_shadows_an_assigned_name(l.0, l.4));
            }
        }
    }

    #[test]
    fn an_overflow_in_an_arm_fails_its_lane_alone(
        lanes in prop::collection::vec((any::<u8>(), any::<u8>(), any::<bool>()), 1..500)
    ) {
        let x = Array1::from_iter(lanes.iter().map(|l| l.0));
        let y = Array1::from_iter(lanes.iter().map(|l| l.1));
        let flag = Array1::from_iter(lanes.iter().map(|l| l.2));
        // Rust's rule for `+=` on `u8`: a panic where debug assertions are on, else wrapping.
        let overflows = |l: &(u8, u8, bool)| l.2 && l.0.checked_add(l.1).is_none();
        let bad: Vec<usize> = if cfg!(debug_assertions) {
            (0..lanes.len()).filter(|&i| overflows(&lanes[i])).collect()
        } else {
            Vec::new()
        };
        for config in modes() {
            let run = add_if_flagged::batch_isolated(x.view(), y.view(), flag.view(), &config).unwrap();
            let failed: Vec<usize> = run.failed.iter().map(|f| f.lane).collect();
            prop_assert_eq!(&failed, &bad, "{:?}", config.mode);
            for f in &run.failed {
                let at_fault = matches!(f.error, RuntimeError::Kernel { lane, .. } if lane == f.lane);
                prop_assert!(at_fault, "{:?}", f);
            }
            for (i, l) in lanes.iter().enumerate() {
                if !bad.contains(&i) {
                    prop_assert_eq!(run.outputs[i], add_if_flagged(l.0, l.1, l.2), "lane {}", i);
                }
            }
        }
    }

    #[test]
    fn ifs_that_still_branch_agree(
        lanes in prop::collection::vec((floats(), 0i64..4), 1..300)
    ) {
        let x = Array1::from_iter(lanes.iter().map(|l| l.0));
        let pick = Array1::from_iter(lanes.iter().map(|l| l.1));
        let v = Array2::from_shape_fn((lanes.len(), 3), |(i, j)| i as f64 - j as f64);
        for config in modes() {
            let (s, y) = vector_call_or_loop::batch(v.view(), x.view(), pick.view(), &config).unwrap();
            for (i, l) in lanes.iter().enumerate() {
                let (es, ey) = vector_call_or_loop(Vector::from(v.row(i).to_vec()), l.0, l.1);
                prop_assert!(same(s[i], es) && same(y[i], ey), "{:?} lane {i}", config.mode);
            }
        }
    }
}

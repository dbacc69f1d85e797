//! If-conversion in #[autobatch]: a pure scalar `if` (no calls, assignments, loops or jumps in
//! it, an `else`, no `Vector` in its value) is part of a lane-wise kernel instead of a branch
//! and blocks. The printed programs show which `if`s branch; the scalar function, stackless and
//! the full VM agree lane by lane on proptest batches, floats bit for bit. The types the macro
//! infers for such `if`s are spelled out in the kernels, so a wrong one fails to compile here.
//!
//! An `if` statement that only assigns scalar variables is one kernel too (its assignments
//! `let`s of the new values); one that binds a name another arm assigns, moves a vector,
//! calls or loops branches; an overflow in a converted arm fails its lane alone.

use autobatch_runtime::ndarray::{Array1, Array2};
use autobatch_runtime::{autobatch, Config, Mode, RuntimeError, Vector};
use autobatch_testkit::golden::assert_golden;
use proptest::prelude::*;

/// The leaf of the NUTS tree: the log weight and acceptance of a state of energy `h`.
#[autobatch]
fn leaf_weights(h: f64, h0: f64) -> (f64, f64, bool) {
    let log_weight = if h.is_nan() {
        f64::NEG_INFINITY
    } else {
        h0 - h
    };
    let divergent = -log_weight > 1000.0;
    let accept = if log_weight > 0.0 {
        1.0
    } else {
        log_weight.exp()
    };
    (log_weight, accept, divergent)
}

/// `ln(exp(a) + exp(b))` without overflow.
#[autobatch]
fn log_add_exp(a: f64, b: f64) -> f64 {
    let hi = a.max(b);
    if hi == f64::NEG_INFINITY {
        hi
    } else {
        hi + ((a - hi).exp() + (b - hi).exp()).ln()
    }
}

/// An `else if` chain with `let`s in its branches, on NaN and infinite inputs.
#[autobatch]
fn chain_with_lets(x: f64) -> f64 {
    if x.is_nan() {
        -1.0
    } else if x == f64::INFINITY {
        1e300
    } else if x < 0.0 {
        let y = -x;
        y.sqrt()
    } else if x > 1e10 {
        let (lo, hi) = (x * 1e-10, 1.0);
        lo.min(hi)
    } else {
        x.ln_1p()
    }
}

/// `let`s in branches that shadow the parameters (and each other), with the parameters read
/// again after the `if`; `scale` is read from outside only by the `let` that shadows it.
#[autobatch]
fn shadowing(x: f64, y: f64, scale: f64) -> f64 {
    let z = if x > y {
        let scale = scale * 3.0;
        let x = x - y;
        let y = x * scale;
        x + y
    } else {
        let (x, y) = (y, x);
        let x = {
            let y = x * 0.5;
            y - 1.0
        };
        x - y
    };
    z + x * y
}

/// Tuple-valued `if`s, destructured and returned.
#[autobatch]
fn ordered(a: i64, b: i64) -> (i64, i64, bool) {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    let swapped = lo != a;
    if swapped {
        (hi, lo, true)
    } else {
        (lo, hi, false)
    }
}

/// Literals in branches take the type their context gives them: the other branch's, a later
/// use's, the return type's. A wrong inference here is a type error in a kernel.
#[autobatch]
#[allow(clippy::let_and_return)] // a branch's own `let` as its value is a case to type
fn literal_types(n: i64, x: f32, flag: bool) -> (i64, f32, i64) {
    let a = if n > 10 {
        1
    } else if n < -10 {
        2
    } else {
        3
    };
    let m = a * n;
    let y = if x > 0.0 { 1.5 } else { x };
    let k = if flag {
        let step = 2;
        n * step
    } else {
        let step = 3;
        step + m
    };
    let j = if flag {
        let zero = 0;
        zero
    } else {
        n
    };
    let (s, t) = if flag { (0.5, 1) } else { (x, n) };
    let w = 2.0 * if y > s { y } else { -s };
    let v = (if flag { w } else { 1.0 }).abs() + (if flag { k } else { 7 }) as f32;
    let total = if flag { m + j } else { m - t };
    (total, v, k + j)
}

/// A counter typed by the `if` it goes through: the first lowering round cannot type the `if`
/// (`count` looks like an `i32`), the next one converts it.
#[autobatch]
#[allow(clippy::let_and_return)] // a branch's own `let` as its value is a case to type
fn counter_through_if(n: i64, done: bool) -> (i64, i64) {
    let mut count = 0;
    let mut i = 0;
    while i < n {
        count += 2;
        i += 1;
    }
    let total = if done {
        let seven = 7i64;
        seven
    } else {
        count
    };
    let extra = 3;
    let annotated: i64 = if done { 0 } else { count };
    (total + extra, annotated)
}

/// Pure `if`s inside a loop, one of them the value of a compound assignment.
#[autobatch]
fn damped_walk(x0: f64, steps: i64) -> (f64, i64) {
    let mut x = x0;
    let mut i = 0;
    let mut downs: i64 = 0;
    while i < steps {
        let step = if x.is_nan() {
            0.0
        } else if x > 1.0 {
            -0.5 * x
        } else if x < -1.0 {
            0.25
        } else {
            let s = x * x;
            s - 0.3
        };
        x += step;
        downs += if step < 0.0 { 1 } else { 0 };
        i += 1;
    }
    (x, downs)
}

/// Pure `if`s inside a recursive function, next to an `if` that calls.
#[autobatch]
fn soft_fold(x: f64, depth: i64) -> f64 {
    if depth <= 0 {
        if x.is_finite() {
            x
        } else {
            0.0
        }
    } else {
        let left = soft_fold(x * 0.5, depth - 1);
        let gap = if left > x { left - x } else { x - left };
        log_add_exp(gap, soft_fold(left - 1.0, depth - 1))
    }
}

/// A pure scalar `if` reading vectors in its branches, fused with the kernels around it: `a`
/// is read in a branch and again after the `if`, so the fused kernel clones it there (a move
/// would not compile).
#[autobatch]
fn fused_vector_reads(v: Vector, w: Vector, flag: bool) -> (f64, Vector) {
    let a = &v * 2.0;
    let s = if flag {
        a.dot(&w)
    } else {
        let d = &a - &w;
        d.norm_squared()
    };
    let b = &a + &w;
    (s, b)
}

/// An `if` whose branch calls a function: control flow.
#[autobatch]
fn calls_in_a_branch(x: f64) -> f64 {
    if x > 0.0 {
        log_add_exp(x, 1.0)
    } else {
        x
    }
}

/// An `if` that only assigns a scalar (one kernel: `macro_assigning_ifs.rs`), and an `if`
/// without `else` that only binds a name: control flow.
#[autobatch]
fn assigns_in_a_branch(x: f64) -> f64 {
    let mut y = x;
    if x > 0.0 {
        y = x * 2.0;
    } else {
        y += 1.0;
    }
    if y > 10.0 {
        let _ignored = y;
    }
    y
}

/// A vector-valued `if`: control flow, whose branches move the vectors by handle.
#[autobatch]
fn picks_a_vector(a: Vector, b: Vector, first: bool) -> f64 {
    let v = if first { a } else { b };
    v.sum()
}

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

fn golden(name: &str, text: &str) {
    assert_golden(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden"),
        name,
        text,
    );
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
fn pure_scalar_ifs_do_not_branch() {
    golden(
        "macro_ifconv_leaf_compile_time",
        leaf_weights::COMPILE_TIME_PROGRAM,
    );
    golden(
        "macro_ifconv_log_add_exp_compile_time",
        log_add_exp::COMPILE_TIME_PROGRAM,
    );
    // Straight-line code: the kernels of the entry block fuse into one, tuples bound by
    // patterns or returned included (their element variables are outputs of the kernel).
    for (name, text, fused) in [
        ("leaf_weights", leaf_weights::COMPILE_TIME_PROGRAM, 1),
        ("log_add_exp", log_add_exp::COMPILE_TIME_PROGRAM, 1),
        ("chain_with_lets", chain_with_lets::COMPILE_TIME_PROGRAM, 1),
        ("shadowing", shadowing::COMPILE_TIME_PROGRAM, 1),
        ("literal_types", literal_types::COMPILE_TIME_PROGRAM, 1),
        ("ordered", ordered::COMPILE_TIME_PROGRAM, 1),
    ] {
        assert_eq!(branches(text), 0, "{name}:\n{text}");
        assert_eq!(kernels(text), fused, "{name}\n{text}");
    }
    // One kernel computes `a`, the `if` and `b`; `a` stays in it.
    let program = fused_vector_reads::program().unwrap().to_string();
    assert_eq!(branches(&program), 0, "{program}");
    assert_eq!(kernels(&program), 1, "{program}");
    assert!(
        program.contains("fused_vector_reads.a :: null"),
        "{program}"
    );
    // The loop branches on its condition only (tested where the loop starts and where its
    // body ends); the recursion on its `depth` test only.
    let text = damped_walk::COMPILE_TIME_PROGRAM;
    assert_eq!(branches(text), 2, "{text}");
    let text = counter_through_if::COMPILE_TIME_PROGRAM;
    assert_eq!(branches(text), 2, "{text}");
    let text = soft_fold::COMPILE_TIME_PROGRAM;
    assert_eq!(branches(text), 1, "{text}");
}

#[test]
fn ifs_with_calls_assignments_or_vectors_branch() {
    let text = calls_in_a_branch::COMPILE_TIME_PROGRAM;
    assert_eq!(branches(text), 1, "{text}");
    // A branch that is just a variable stays the built-in assignment.
    assert!(text.contains("ret = prim(x) by assign"), "{text}");
    let text = assigns_in_a_branch::COMPILE_TIME_PROGRAM;
    assert_eq!(branches(text), 1, "{text}");
    let program = picks_a_vector::program().unwrap().to_string();
    assert_eq!(branches(&program), 1, "{program}");
    assert!(
        program.contains("picks_a_vector.v = prim(picks_a_vector.a) by assign"),
        "{program}"
    );
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

/// Floats are equal bit for bit, or both NaN (Rust leaves the sign and payload of a NaN
/// result unspecified).
fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Floats with NaN, infinities and signed zeros among them.
fn floats() -> impl Strategy<Value = f64> {
    prop_oneof![
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(0.0),
        1 => Just(-0.0),
        6 => -20.0f64..20.0,
        2 => any::<f64>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(24)))]

    #[test]
    fn nuts_leaf_and_log_add_exp(pairs in prop::collection::vec((floats(), floats()), 1..500)) {
        let (a, b): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
        let (va, vb) = (Array1::from_vec(a.clone()), Array1::from_vec(b.clone()));
        for config in modes() {
            let (w, acc, div) = leaf_weights::batch(va.view(), vb.view(), &config).unwrap();
            let lse = log_add_exp::batch(va.view(), vb.view(), &config).unwrap();
            for i in 0..a.len() {
                let (sw, sacc, sdiv) = leaf_weights(a[i], b[i]);
                prop_assert!(same(w[i], sw) && same(acc[i], sacc) && div[i] == sdiv,
                    "{:?} lane {i}: {:?} vs {:?}", config.mode, (w[i], acc[i], div[i]), (sw, sacc, sdiv));
                prop_assert!(same(lse[i], log_add_exp(a[i], b[i])), "{:?} lane {i}", config.mode);
            }
        }
    }

    #[test]
    fn else_if_chains_and_shadowing(lanes in prop::collection::vec((floats(), floats(), floats()), 1..500)) {
        let x = Array1::from_iter(lanes.iter().map(|l| l.0));
        let y = Array1::from_iter(lanes.iter().map(|l| l.1));
        let scale = Array1::from_iter(lanes.iter().map(|l| l.2));
        for config in modes() {
            let chained = chain_with_lets::batch(x.view(), &config).unwrap();
            let shadowed = shadowing::batch(x.view(), y.view(), scale.view(), &config).unwrap();
            for (i, l) in lanes.iter().enumerate() {
                prop_assert!(same(chained[i], chain_with_lets(l.0)), "{:?} lane {i}", config.mode);
                prop_assert!(same(shadowed[i], shadowing(l.0, l.1, l.2)), "{:?} lane {i}", config.mode);
            }
        }
    }

    #[test]
    fn tuple_valued_and_literal_typed_ifs(
        lanes in prop::collection::vec((-50i64..50, -50i64..50, -5.0f32..5.0, any::<bool>()), 1..500)
    ) {
        let a = Array1::from_iter(lanes.iter().map(|l| l.0));
        let b = Array1::from_iter(lanes.iter().map(|l| l.1));
        let x = Array1::from_iter(lanes.iter().map(|l| l.2));
        let flag = Array1::from_iter(lanes.iter().map(|l| l.3));
        for config in modes() {
            let (lo, hi, swapped) = ordered::batch(a.view(), b.view(), &config).unwrap();
            let (total, v, k) = literal_types::batch(a.view(), x.view(), flag.view(), &config).unwrap();
            for (i, l) in lanes.iter().enumerate() {
                prop_assert_eq!((lo[i], hi[i], swapped[i]), ordered(l.0, l.1));
                let (st, sv, sk) = literal_types(l.0, l.2, l.3);
                prop_assert_eq!((total[i], v[i].to_bits(), k[i]), (st, sv.to_bits(), sk));
            }
        }
    }

    #[test]
    fn pure_ifs_in_loops_and_recursion(
        lanes in prop::collection::vec((floats(), 0i64..40, 0i64..6), 1..300)
    ) {
        let x = Array1::from_iter(lanes.iter().map(|l| l.0));
        let steps = Array1::from_iter(lanes.iter().map(|l| l.1));
        let depth = Array1::from_iter(lanes.iter().map(|l| l.2));
        for config in modes() {
            let (walked, downs) = damped_walk::batch(x.view(), steps.view(), &config).unwrap();
            let folded = soft_fold::batch(x.view(), depth.view(), &config).unwrap();
            for (i, l) in lanes.iter().enumerate() {
                let (sw, sd) = damped_walk(l.0, l.1);
                prop_assert!(same(walked[i], sw) && downs[i] == sd, "{:?} lane {i}", config.mode);
                prop_assert!(same(folded[i], soft_fold(l.0, l.2)), "{:?} lane {i}", config.mode);
            }
        }
    }

    #[test]
    fn counters_and_vectors_through_pure_ifs(
        lanes in prop::collection::vec((0i64..30, any::<bool>(), floats(), floats()), 1..300)
    ) {
        let n = Array1::from_iter(lanes.iter().map(|l| l.0));
        let flag = Array1::from_iter(lanes.iter().map(|l| l.1));
        let v = Array2::from_shape_fn((lanes.len(), 4), |(i, j)| lanes[i].2 + j as f64);
        let w = Array2::from_shape_fn((lanes.len(), 4), |(i, j)| lanes[i].3 * j as f64);
        for config in modes() {
            let (total, annotated) = counter_through_if::batch(n.view(), flag.view(), &config).unwrap();
            let (s, b) = fused_vector_reads::batch(v.view(), w.view(), flag.view(), &config).unwrap();
            for (i, l) in lanes.iter().enumerate() {
                prop_assert_eq!((total[i], annotated[i]), counter_through_if(l.0, l.1));
                let (ss, sb) = fused_vector_reads(
                    Vector::from(v.row(i).to_vec()),
                    Vector::from(w.row(i).to_vec()),
                    l.1,
                );
                prop_assert!(same(s[i], ss), "{:?} lane {i}", config.mode);
                prop_assert!(b.row(i).iter().zip(sb.as_slice()).all(|(x, y)| same(*x, *y)));
            }
        }
    }

    #[test]
    fn control_flow_ifs_still_agree(
        lanes in prop::collection::vec((floats(), any::<bool>()), 1..300)
    ) {
        let x = Array1::from_iter(lanes.iter().map(|l| l.0));
        let first = Array1::from_iter(lanes.iter().map(|l| l.1));
        let a = Array2::from_shape_fn((lanes.len(), 3), |(i, j)| lanes[i].0 * j as f64);
        let b = Array2::from_shape_fn((lanes.len(), 3), |(i, j)| i as f64 - j as f64);
        for config in modes() {
            let called = calls_in_a_branch::batch(x.view(), &config).unwrap();
            let assigned = assigns_in_a_branch::batch(x.view(), &config).unwrap();
            let picked = picks_a_vector::batch(a.view(), b.view(), first.view(), &config).unwrap();
            for (i, l) in lanes.iter().enumerate() {
                prop_assert!(same(called[i], calls_in_a_branch(l.0)));
                prop_assert!(same(assigned[i], assigns_in_a_branch(l.0)));
                let scalar = picks_a_vector(
                    Vector::from(a.row(i).to_vec()),
                    Vector::from(b.row(i).to_vec()),
                    l.1,
                );
                prop_assert!(same(picked[i], scalar));
            }
        }
    }

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

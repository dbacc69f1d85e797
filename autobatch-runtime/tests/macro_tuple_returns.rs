//! Tuple results of #[autobatch] functions and primitives: one return variable per element,
//! call results bound straight to the pattern that takes them apart (printed programs), and
//! the scalar function, stackless and the full VM agreeing bit for bit (two NaNs equal) on
//! nested tuples, vectors and keys in tuples, recursion, mutual recursion, early returns,
//! tuples bound to one name, `_` in patterns and primitives returning tuples.

use autobatch_runtime::ndarray::{Array1, Array2, ArrayView2, Axis};
use autobatch_runtime::{autobatch, primitive, Config, Key, Mode, Vector};
use autobatch_testkit::golden::assert_golden;
use proptest::prelude::*;

fn golden(name: &str, text: &str) {
    assert_golden(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden"),
        name,
        text,
    );
}

/// The lines of function `name`'s definition in a printed program.
fn function_text(program: &str, name: &str) -> String {
    program
        .split("\ndef ")
        .find(|def| def.starts_with(&format!("{name}(")))
        .unwrap_or_else(|| panic!("no function {name} in\n{program}"))
        .to_string()
}

/// Built-in assignments in a printed text.
fn assignments(text: &str) -> usize {
    text.lines().filter(|l| l.ends_with("by assign")).count()
}

// ---------------------------------------------------------------------------------------------
// Printed programs.

/// A pair out of one scalar.
#[autobatch]
fn pair(x: i64) -> (i64, f64) {
    (x + 1, x as f64 * 0.5)
}

/// Destructures a call's result with a pattern.
#[autobatch]
fn uses_pair(x: i64) -> f64 {
    let (a, b): (i64, f64) = pair(x);
    a as f64 + b
}

/// Binds a call's result to one name and indexes it.
#[autobatch]
fn indexes_pair(x: i64) -> f64 {
    let t: (i64, f64) = pair(x);
    t.1 - t.0 as f64
}

/// A primitive returning a tuple (a mapped one: no batched form).
#[primitive]
fn spread(x: f64) -> (f64, Vector) {
    (x * x, Vector::from(vec![x, -x, 2.0 * x]))
}

/// Destructures a primitive's result with a pattern.
#[autobatch]
fn uses_spread(x: f64) -> f64 {
    let (s, v): (f64, Vector) = spread(x);
    s + v.sum()
}

#[test]
fn a_tuple_result_is_one_return_variable_per_element() {
    let text = pair::program().unwrap().to_string();
    assert!(text.contains("returns pair.ret.0, pair.ret.1\n"), "{text}");
    assert!(text.contains("pair.ret.0 :: register, i64"), "{text}");
    assert!(text.contains("pair.ret.1 :: register, f64"), "{text}");
    // The tuple expression computes each element straight into its return variable.
    assert_eq!(assignments(&function_text(&text, "pair")), 0, "{text}");
    assert!(
        pair::COMPILE_TIME_PROGRAM.contains("returns ret.0, ret.1\n"),
        "{}",
        pair::COMPILE_TIME_PROGRAM
    );
}

#[test]
fn a_destructured_call_binds_its_outputs_directly() {
    golden(
        "macro_uses_pair_linked",
        &uses_pair::program().unwrap().to_string(),
    );
    golden(
        "macro_uses_pair_compile_time",
        uses_pair::COMPILE_TIME_PROGRAM,
    );
    let text = uses_pair::program().unwrap().to_string();
    let body = function_text(&text, "uses_pair");
    assert!(
        body.contains("uses_pair.a, uses_pair.b = call(pair, uses_pair.x)"),
        "{text}"
    );
    assert_eq!(assignments(&body), 0, "{text}");
    // At compile time `pair` is a stand-in with the same convention.
    let ct = uses_pair::COMPILE_TIME_PROGRAM;
    assert!(
        ct.contains("returns pair (not visible here).r0.0, pair (not visible here).r0.1"),
        "{ct}"
    );
    assert!(
        ct.contains("a, b = call(pair (not visible here), x)"),
        "{ct}"
    );
    assert_eq!(assignments(ct), 0, "{ct}");
}

#[test]
fn a_destructured_primitive_result_binds_its_outputs_directly() {
    let text = uses_spread::program().unwrap().to_string();
    let body = function_text(&text, "uses_spread");
    assert!(
        body.contains("uses_spread.s, uses_spread.v = prim(uses_spread.x) by spread"),
        "{text}"
    );
    assert_eq!(assignments(&body), 0, "{text}");
}

#[test]
fn a_call_bound_to_one_name_is_assembled_once() {
    let text = indexes_pair::program().unwrap().to_string();
    let body = function_text(&text, "indexes_pair");
    // The outputs are fresh element variables, assembled into `t` by one assignment.
    let call = body
        .lines()
        .find(|l| l.contains("= call(pair, indexes_pair.x)"))
        .unwrap_or_else(|| panic!("{text}"));
    let outs = call.trim().split(" = ").next().unwrap().to_string();
    assert_eq!(outs.split(", ").count(), 2, "{call}");
    assert!(
        body.contains(&format!("indexes_pair.t = prim({outs}) by assign")),
        "{text}"
    );
    assert_eq!(assignments(&body), 1, "{text}");
}

#[test]
fn printed_examples_run() {
    let xs = Array1::from_vec(vec![-3i64, 0, 5, 1 << 40]);
    let fs = Array1::from_vec(vec![-1.5, 0.0, 2.0, f64::NAN]);
    for config in modes() {
        let (a, b) = pair::batch(xs.view(), &config).unwrap();
        let u = uses_pair::batch(xs.view(), &config).unwrap();
        let t = indexes_pair::batch(xs.view(), &config).unwrap();
        for i in 0..xs.len() {
            assert_eq!((a[i], b[i].to_bits()), {
                let (x, y) = pair(xs[i]);
                (x, y.to_bits())
            });
            assert_eq!(u[i].to_bits(), uses_pair(xs[i]).to_bits());
            assert_eq!(t[i].to_bits(), indexes_pair(xs[i]).to_bits());
        }
        let config = Config {
            vector_len: Some(3),
            ..config
        };
        let s = uses_spread::batch(fs.view(), &config).unwrap();
        for i in 0..fs.len() {
            assert!(same(s[i], uses_spread(fs[i])), "{:?} lane {i}", config.mode);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Differential programs.

/// Recursion with a nested tuple result, destructured by a nested pattern on the way back.
#[autobatch]
fn extremes(n: i64, x: f64) -> (f64, (f64, f64), i64) {
    if n <= 0 {
        return (x, (x, x), 1);
    }
    let y = (x * 1.7 + 0.3).sin() * 10.0;
    let (s, (lo, hi), c) = extremes(n - 1, y);
    (s + x, (lo.min(x), hi.max(x)), c + 1)
}

/// The recursion's result bound to one name and indexed, nested fields included.
#[autobatch]
fn spread_of(n: i64, x: f64) -> f64 {
    let t: (f64, (f64, f64), i64) = extremes(n, x);
    let range = (t.1).1 - (t.1).0;
    range + t.0 / t.2 as f64
}

/// Self-recursion bound to one name: Fibonacci pairs.
#[autobatch]
fn fib_pair(n: i64) -> (i64, i64) {
    if n <= 0 {
        return (0, 1);
    }
    let t = fib_pair(n - 1);
    (t.1, t.0 + t.1)
}

/// `_` in patterns: the first of a Fibonacci pair, through a discarded element.
#[autobatch]
fn fib_first(n: i64) -> i64 {
    let (a, _): (i64, i64) = fib_pair(n);
    let (_, (b, _), _): (f64, (f64, f64), i64) = extremes(n % 4, a as f64);
    a + b as i64
}

/// Mutual recursion carrying a vector and a key in the tuple.
#[autobatch]
fn ping(q: Vector, key: Key, n: i64) -> (Vector, Key, i64) {
    if n <= 0 {
        return (q, key, 0);
    }
    let (u, key) = key.uniform();
    let q = (1.0 + u) * &q;
    let (q, key, hops): (Vector, Key, i64) = pong(q, key, n - 1);
    (q, key, hops + 1)
}

/// The other half: binds the result to one name and returns it, or a part of it.
#[autobatch]
fn pong(q: Vector, key: Key, n: i64) -> (Vector, Key, i64) {
    if n <= 0 {
        return (q, key, 0);
    }
    let (z, key) = key.normals_like(&q);
    let moved = &q + &(0.25 * &z);
    let state: (Vector, Key, i64) = ping(moved, key, n - 1);
    if state.2 % 3 == 0 {
        return state;
    }
    (state.0.map(f64::tanh), state.1, state.2 + 1)
}

/// Early returns of tuple variables from inside a loop; a tuple variable carried and replaced.
#[autobatch]
fn first_big(q: Vector, key: Key, limit: i64) -> (Vector, Key, i64) {
    let mut key = key;
    let mut best: (Vector, Key, i64) = (q.clone(), key, -1);
    let mut i: i64 = 0;
    while i < limit {
        let (z, k) = key.normals_like(&q);
        key = k;
        let candidate = (&q + &z, key, i);
        if z.sum() > 2.0 {
            return candidate;
        }
        if z.get(0) < -2.5 {
            return best;
        }
        best = candidate;
        i += 1;
    }
    best
}

/// The log density and gradient of an isotropic Gaussian, batched: one row per active lane.
#[primitive(batched = gaussian_all)]
fn gaussian(q: &Vector) -> (f64, Vector) {
    (-0.5 * q.dot(q), q.map(|x| -x))
}

fn gaussian_all(q: ArrayView2<f64>) -> (Array1<f64>, Array2<f64>) {
    let lp = q.map_axis(Axis(1), |row| {
        -0.5 * Vector::from(row.to_vec()).dot(&Vector::from(row.to_vec()))
    });
    (lp, q.mapv(|x| -x))
}

/// A mapped primitive with a nested tuple result. (`x < 0.0`, not `x.is_sign_negative()`: a
/// NaN's sign bit is not part of the contract, compiled vector arithmetic may set it otherwise.)
#[primitive]
fn parts(x: f64) -> (i64, (f64, bool)) {
    (x.trunc() as i64, (x.fract(), x < 0.0))
}

/// Primitives returning tuples, destructured (`_` and nested patterns) and bound to one name.
#[autobatch]
fn gradient_steps(q: Vector, eps: f64, steps: i64) -> (Vector, f64, (i64, bool)) {
    let mut q = q;
    let mut lp = 0.0;
    let mut i = 0;
    while i < steps {
        let (l, g): (f64, Vector) = gaussian(&q);
        q = &q + &(eps * &g);
        lp = l;
        i += 1;
    }
    let (_, g): (f64, Vector) = gaussian(&q);
    let (whole, (_, negative)): (i64, (f64, bool)) = parts(lp);
    let all: (i64, (f64, bool)) = parts(g.sum());
    (q, lp + (all.1).0, (whole + all.0, negative || (all.1).1))
}

// ---------------------------------------------------------------------------------------------
// Checks.

fn modes() -> [Config; 2] {
    [
        Config::with_mode(Mode::FullVm),
        Config::with_mode(Mode::Stackless),
    ]
}

/// Equal bits, or both NaN.
fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn same_row(a: autobatch_runtime::ndarray::ArrayView1<f64>, b: &Vector) -> bool {
    a.len() == b.len() && a.iter().zip(b.as_slice()).all(|(x, y)| same(*x, *y))
}

fn keys(seeds: &[u64]) -> Array1<Key> {
    Array1::from_iter(seeds.iter().map(|&s| Key::new(s)))
}

/// `[lanes, 3]` rows from per-lane values.
fn rows(values: &[f64]) -> Array2<f64> {
    Array2::from_shape_fn((values.len(), 3), |(i, j)| {
        values[i] * (j as f64 - 1.0) + 0.5
    })
}

fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        8 => -20.0f64..20.0,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(-0.0),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(16)))]

    #[test]
    fn nested_tuples_through_recursion(lanes in prop::collection::vec((0i64..12, float()), 1..120)) {
        let n = Array1::from_iter(lanes.iter().map(|l| l.0));
        let x = Array1::from_iter(lanes.iter().map(|l| l.1));
        for config in modes() {
            let (s, (lo, hi), c) = extremes::batch(n.view(), x.view(), &config).unwrap();
            let spread = spread_of::batch(n.view(), x.view(), &config).unwrap();
            for i in 0..lanes.len() {
                let (es, (elo, ehi), ec) = extremes(n[i], x[i]);
                prop_assert!(same(s[i], es) && same(lo[i], elo) && same(hi[i], ehi), "{:?} lane {}", config.mode, i);
                prop_assert_eq!(c[i], ec);
                prop_assert!(same(spread[i], spread_of(n[i], x[i])), "{:?} lane {}", config.mode, i);
            }
        }
    }

    #[test]
    fn tuples_bound_to_one_name_and_wildcards(ns in prop::collection::vec(0i64..40, 1..200)) {
        let n = Array1::from_vec(ns.clone());
        for config in modes() {
            let (a, b) = fib_pair::batch(n.view(), &config).unwrap();
            let f = fib_first::batch(n.view(), &config).unwrap();
            for i in 0..ns.len() {
                prop_assert_eq!((a[i], b[i]), fib_pair(ns[i]));
                prop_assert_eq!(f[i], fib_first(ns[i]));
            }
        }
    }

    #[test]
    fn vectors_and_keys_through_mutual_recursion(lanes in prop::collection::vec((0u64..1000, 0i64..14, float()), 1..100)) {
        let seeds: Vec<u64> = lanes.iter().map(|l| l.0).collect();
        let key = keys(&seeds);
        let n = Array1::from_iter(lanes.iter().map(|l| l.1));
        let q = rows(&lanes.iter().map(|l| l.2).collect::<Vec<_>>());
        for config in modes() {
            let (q1, k1, h1) = ping::batch(q.view(), key.view(), n.view(), &config).unwrap();
            let (q2, k2, h2) = first_big::batch(q.view(), key.view(), n.view(), &config).unwrap();
            for i in 0..lanes.len() {
                let row = Vector::from(q.row(i).to_vec());
                let (sq, sk, sh) = ping(row.clone(), key[i], n[i]);
                prop_assert!(same_row(q1.row(i), &sq), "{:?} lane {}", config.mode, i);
                prop_assert_eq!((k1[i], h1[i]), (sk, sh));
                let (sq, sk, sh) = first_big(row, key[i], n[i]);
                prop_assert!(same_row(q2.row(i), &sq), "{:?} lane {}", config.mode, i);
                prop_assert_eq!((k2[i], h2[i]), (sk, sh));
            }
        }
    }

    #[test]
    fn primitives_returning_tuples(lanes in prop::collection::vec((float(), -0.5f64..0.5, 0i64..6), 1..100)) {
        let q = rows(&lanes.iter().map(|l| l.0).collect::<Vec<_>>());
        let eps = Array1::from_iter(lanes.iter().map(|l| l.1));
        let steps = Array1::from_iter(lanes.iter().map(|l| l.2));
        for config in modes() {
            let (q1, lp, (w, neg)) = gradient_steps::batch(q.view(), eps.view(), steps.view(), &config).unwrap();
            for i in 0..lanes.len() {
                let (sq, slp, (sw, sneg)) = gradient_steps(Vector::from(q.row(i).to_vec()), eps[i], steps[i]);
                prop_assert!(same_row(q1.row(i), &sq), "{:?} lane {}", config.mode, i);
                prop_assert!(same(lp[i], slp), "{:?} lane {}", config.mode, i);
                prop_assert_eq!((w[i], neg[i]), (sw, sneg));
            }
        }
    }
}

/// A lane's tuple results do not depend on the batch around it.
#[test]
fn batch_invariance() {
    use autobatch_runtime::ndarray::s;
    let lanes = 300;
    let seeds: Vec<u64> = (0..lanes as u64).collect();
    let key = keys(&seeds);
    let n = Array1::from_iter((0..lanes).map(|i| (i % 13) as i64));
    let q = rows(
        &(0..lanes)
            .map(|i| i as f64 * 0.1 - 15.0)
            .collect::<Vec<_>>(),
    );
    for config in modes() {
        let (all_q, all_k, all_h) = ping::batch(q.view(), key.view(), n.view(), &config).unwrap();
        for lane in [0usize, 7, 299] {
            let (q1, k1, h1) = ping::batch(
                q.slice(s![lane..lane + 1, ..]),
                key.slice(s![lane..lane + 1]),
                n.slice(s![lane..lane + 1]),
                &config,
            )
            .unwrap();
            let bits = |r: autobatch_runtime::ndarray::ArrayView1<f64>| {
                r.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
            };
            assert_eq!(bits(q1.row(0)), bits(all_q.row(lane)));
            assert_eq!((k1[0], h1[0]), (all_k[lane], all_h[lane]));
        }
    }
}

/// Tuple elements are evaluated left to right: the copies of `y` before the element that
/// changes it see the old value, those after it the new one.
#[autobatch]
fn in_order(x: i64) -> (i64, i64, (i64, i64)) {
    let mut y = x;
    (
        y,
        {
            y += 1;
            y * 2
        },
        (y, x),
    )
}

#[test]
fn tuple_elements_are_evaluated_in_order() {
    let xs = Array1::from_vec(vec![-2i64, 0, 7]);
    for config in modes() {
        let (a, b, (c, d)) = in_order::batch(xs.view(), &config).unwrap();
        for i in 0..xs.len() {
            assert_eq!((a[i], b[i], (c[i], d[i])), in_order(xs[i]));
        }
    }
    assert_eq!(in_order(3), (3, 8, (4, 3)));
}

/// A user variable named `ret`, shadowed, next to the return variables `ret.0`, `ret.1`: every
/// variable keeps a name of its own.
#[autobatch]
#[allow(clippy::let_and_return)]
fn named_ret(x: i64) -> (i64, i64) {
    let ret = x + 1;
    let ret = ret * 2;
    let (a, b) = (ret, x);
    (b, a)
}

#[test]
fn return_variables_do_not_take_user_names() {
    let text = named_ret::program().unwrap().to_string();
    let names: Vec<&str> = text
        .lines()
        .take_while(|l| !l.is_empty())
        .map(|l| l.split(" :: ").next().unwrap())
        .collect();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(names.len(), unique.len(), "{text}");
    for config in modes() {
        let xs = Array1::from_vec(vec![1i64, -4, 9]);
        let (b, a) = named_ret::batch(xs.view(), &config).unwrap();
        for i in 0..3 {
            assert_eq!((b[i], a[i]), named_ret(xs[i]));
        }
    }
}

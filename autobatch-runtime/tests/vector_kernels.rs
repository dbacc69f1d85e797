//! Vector kernels compiled to element loops (`generate/vectorise.rs` in the macro crate): every
//! form of the compiled subset, run batched in both modes, equals the plain scalar function bit
//! for bit (NaN payloads aside, which Rust leaves unspecified), on lanes full of awkward floats (NaN, infinities, signed zeros, subnormals, huge and
//! tiny values), vector lengths from 0 to 13 (every remainder of the four-way dot), and batches
//! of 1 to 40 lanes. Each function's kernels are checked to be the compiled kind, so a change
//! that silently falls back to the generic kernel fails here too.

use autobatch_runtime::ndarray::{Array1, Array2};
use autobatch_runtime::{autobatch, Config, Mode, Vector};
use proptest::prelude::*;

/// Every element-wise operator, both operand orders, scalar operands that are literals, names
/// and expressions, unary minus, `clone`, `map`, `zip_map` and `filled_like`.
#[autobatch]
fn elementwise(a: Vector, b: Vector, s: f64) -> (Vector, Vector, Vector, Vector) {
    let sum = &a + &b;
    let diff = &a - &(2.0 * &b);
    let prod = &(&a * &b) / s;
    let quot = &(s - &a) / &(&b + 0.5);
    let neg = -&(&sum * (s * s - 1.0));
    let roots = a.map(f64::abs).map(f64::sqrt);
    let big = b.zip_map(&a, f64::max);
    let ones = Vector::filled_like(s + 1.0, &a);
    let mixed = &(&(&sum + &diff) * &(&prod - &quot)) + &(&(&neg / &ones) - &(&roots * &big));
    (mixed, neg.clone(), roots, &ones - &a)
}

/// Reductions: `dot`, `sum`, `norm_squared` and `get`, reductions of expressions (of a
/// constant, of a `map`), a reduction whose operand needs another reduction's result, and
/// reductions behind `&&`, `||` and `if` (vectors of at least four elements, for `get`).
#[autobatch]
fn reductions(a: Vector, b: Vector, i: i64) -> (f64, f64, f64, f64, bool, f64) {
    let d = a.dot(&b);
    let s = (&a - &b).sum() - Vector::filled_like(0.5, &a).sum();
    let n = (&a * 3.0).norm_squared();
    let scaled = (&b * a.dot(&a)).sum() + a.map(f64::abs).dot(&b);
    let pick = if i > 0 { a.get(2) + b.get(3) } else { b.get(0) };
    let ok = a.dot(&b) > 0.0 && (&a + &b).dot(&a) > 0.0 || b.sum() < -1.0 && n.is_finite();
    let branchy = if d > 0.0 {
        let t = &a * d;
        t.dot(&b) + 1.0
    } else if s > 0.0 {
        (&b - &a).norm_squared()
    } else {
        -(a.sum() * b.sum())
    };
    (d + pick, s, n, scaled, ok, branchy)
}

/// Blocks, shadowing and long element-wise chains (stored once, not recomputed), with scalar
/// code around them.
#[autobatch]
fn blocks(a: Vector, b: Vector, x: f64) -> (Vector, f64) {
    let a = {
        let a = &a * x;
        let x = x + 1.0;
        &a + x
    };
    let long = &(&(&(&(&a * &b) + &a) * &b) - &(&a * 0.25)) + &(&(&b / 3.0) * &(&a + &b));
    let longer = &(&long * &long) - &(&(&long + 1.0) * &(&a - &b));
    let total = {
        let t = longer.dot(&long);
        let u = long.sum();
        if t > u {
            t - u
        } else {
            u
        }
    };
    (&longer + &long, total)
}

/// Vector outputs in the shapes the NUTS kernels have (outputs over the rows the dots walk,
/// scalar code after the dots), which the kernel writes in its last reduction loop, beside
/// outputs that need a loop of their own (one reads that loop's result, one calls a function)
/// and a constant one.
#[autobatch]
#[allow(clippy::type_complexity)]
fn outputs_in_loops(
    a: Vector,
    b: Vector,
    s: f64,
) -> (Vector, Vector, Vector, Vector, Vector, bool, f64) {
    let rho = &a + &b;
    let half = &a + &((0.5 * s) * &b);
    let turn = a.dot(&rho) > 0.0 && b.dot(&rho) > 0.0 || half.dot(&half) > s;
    let e = 0.5 * half.dot(&(&b * &half));
    let scaled = &b * e;
    let mapped = a.map(f64::abs);
    let e = if e.is_nan() { 0.0 } else { e };
    let constant = Vector::filled_like(s, &a);
    (rho, half, scaled, mapped, constant, turn, e)
}

const AWKWARD: [f64; 12] = [
    0.0,
    -0.0,
    1.0,
    -2.5,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::MIN_POSITIVE / 3.0,
    1e308,
    -1e-308,
    0.1,
    7.0e15,
];

fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => -10.0f64..10.0,
        1 => proptest::sample::select(AWKWARD.to_vec()),
    ]
}

fn vectors(lanes: usize, len: usize) -> impl Strategy<Value = Array2<f64>> {
    proptest::collection::vec(value(), lanes * len)
        .prop_map(move |v| Array2::from_shape_vec((lanes, len), v).expect("shape"))
}

/// Equal bit for bit, except that any NaN equals any NaN: Rust leaves the sign and payload of
/// a NaN an operation produces unspecified (RFC 3514), so they may differ between two
/// compilations of the same expression.
fn same_bits(x: f64, y: f64) -> bool {
    x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
}

fn same_row(x: &[f64], y: &[f64]) -> bool {
    x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_bits(*a, *b))
}

fn modes() -> [Config; 2] {
    [
        Config::with_mode(Mode::FullVm),
        Config::with_mode(Mode::Stackless),
    ]
}

// The functions above are compiled to element loops, not evaluated on owned vectors (checked
// when this file compiles).
const _: () = assert!(elementwise::VECTOR_KERNELS >= 1);
const _: () = assert!(reductions::VECTOR_KERNELS >= 1);
const _: () = assert!(blocks::VECTOR_KERNELS >= 1);
const _: () = assert!(outputs_in_loops::VECTOR_KERNELS >= 1);

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(48)))]

    #[test]
    fn elementwise_matches_the_scalar_function(
        (a, b, s) in (1usize..40, 0usize..14).prop_flat_map(|(lanes, len)| (
            vectors(lanes, len),
            vectors(lanes, len),
            proptest::collection::vec(value(), lanes).prop_map(Array1::from),
        ))
    ) {
        for config in modes() {
            let (w, x, y, z) = elementwise::batch(a.view(), b.view(), s.view(), &config).unwrap();
            for lane in 0..a.nrows() {
                let (sw, sx, sy, sz) = elementwise(
                    Vector::from(a.row(lane).to_vec()),
                    Vector::from(b.row(lane).to_vec()),
                    s[lane],
                );
                for (batched, scalar) in [(&w, &sw), (&x, &sx), (&y, &sy), (&z, &sz)] {
                    prop_assert!(
                        same_row(batched.row(lane).as_slice().unwrap(), scalar.as_slice()),
                        "lane {lane} in {:?}: {:?} vs {:?}", config.mode, batched.row(lane), scalar
                    );
                }
            }
        }
    }

    #[test]
    fn reductions_match_the_scalar_function(
        (a, b, i) in (1usize..40, 4usize..14).prop_flat_map(|(lanes, len)| (
            vectors(lanes, len),
            vectors(lanes, len),
            proptest::collection::vec(-100i64..100, lanes).prop_map(Array1::from),
        ))
    ) {
        for config in modes() {
            let out = reductions::batch(a.view(), b.view(), i.view(), &config).unwrap();
            for lane in 0..a.nrows() {
                let s = reductions(
                    Vector::from(a.row(lane).to_vec()),
                    Vector::from(b.row(lane).to_vec()),
                    i[lane],
                );
                let batched = (out.0[lane], out.1[lane], out.2[lane], out.3[lane], out.4[lane], out.5[lane]);
                prop_assert!(
                    same_bits(batched.0, s.0) && same_bits(batched.1, s.1)
                        && same_bits(batched.2, s.2) && same_bits(batched.3, s.3)
                        && batched.4 == s.4 && same_bits(batched.5, s.5),
                    "lane {lane} in {:?}: {batched:?} vs {s:?}", config.mode
                );
            }
        }
    }

    #[test]
    fn blocks_match_the_scalar_function(
        (a, b, x) in (1usize..40, 0usize..14).prop_flat_map(|(lanes, len)| (
            vectors(lanes, len),
            vectors(lanes, len),
            proptest::collection::vec(value(), lanes).prop_map(Array1::from),
        ))
    ) {
        for config in modes() {
            let (v, t) = blocks::batch(a.view(), b.view(), x.view(), &config).unwrap();
            for lane in 0..a.nrows() {
                let (sv, st) = blocks(
                    Vector::from(a.row(lane).to_vec()),
                    Vector::from(b.row(lane).to_vec()),
                    x[lane],
                );
                prop_assert!(
                    same_row(v.row(lane).as_slice().unwrap(), sv.as_slice()) && same_bits(t[lane], st),
                    "lane {lane} in {:?}", config.mode
                );
            }
        }
    }

    #[test]
    fn outputs_in_loops_match_the_scalar_function(
        (a, b, s) in (1usize..40, 0usize..14).prop_flat_map(|(lanes, len)| (
            vectors(lanes, len),
            vectors(lanes, len),
            proptest::collection::vec(value(), lanes).prop_map(Array1::from),
        ))
    ) {
        for config in modes() {
            let out = outputs_in_loops::batch(a.view(), b.view(), s.view(), &config).unwrap();
            for lane in 0..a.nrows() {
                let (rho, half, scaled, mapped, constant, turn, e) = outputs_in_loops(
                    Vector::from(a.row(lane).to_vec()),
                    Vector::from(b.row(lane).to_vec()),
                    s[lane],
                );
                let rows = [(&out.0, &rho), (&out.1, &half), (&out.2, &scaled), (&out.3, &mapped), (&out.4, &constant)];
                for (i, (batched, scalar)) in rows.into_iter().enumerate() {
                    prop_assert!(
                        same_row(batched.row(lane).as_slice().unwrap(), scalar.as_slice()),
                        "output {i}, lane {lane} in {:?}: {:?} vs {:?}", config.mode, batched.row(lane), scalar
                    );
                }
                prop_assert!(
                    out.5[lane] == turn && same_bits(out.6[lane], e),
                    "lane {lane} in {:?}: {:?} vs {:?}", config.mode, (out.5[lane], out.6[lane]), (turn, e)
                );
            }
        }
    }
}

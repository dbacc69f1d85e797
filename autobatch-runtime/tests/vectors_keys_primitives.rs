//! Vectors, batched primitives and per-lane randomness in #[autobatch] code: the scalar
//! function, stackless and the full VM agree bit for bit, lane by lane, at several batch sizes;
//! a lane's results do not depend on the batch around it.

use autobatch_runtime::ndarray::{linalg::general_mat_mul, Array1, Array2, ArrayView2, Axis};
use autobatch_runtime::primitive::Tolerance;
use autobatch_runtime::{autobatch, primitive, Column, Config, Key, Mode, RuntimeError, Vector};
use std::sync::OnceLock;

const DIM: usize = 8;

/// The precision matrix of a correlated Gaussian: `P_ij = 0.5^|i-j|` (symmetric, positive).
fn precision() -> &'static Array2<f64> {
    static P: OnceLock<Array2<f64>> = OnceLock::new();
    P.get_or_init(|| {
        Array2::from_shape_fn((DIM, DIM), |(i, j)| {
            0.5f64.powi((i as i32 - j as i32).abs())
        })
    })
}

/// Log density and gradient of the Gaussian: the scalar form multiplies one row by `P` with the
/// same GEMM the batched form uses for all rows, so the two agree bit for bit.
#[primitive(batched = logp_grad_all)]
fn logp_grad(q: &Vector) -> (f64, Vector) {
    let row = Array2::from_shape_vec((1, q.len()), q.as_slice().to_vec()).expect("one row");
    let (lp, g) = logp_grad_all(row.view());
    (lp[0], Vector::from(g.row(0).to_vec()))
}

fn logp_grad_all(q: ArrayView2<f64>) -> (Array1<f64>, Array2<f64>) {
    let mut pq = Array2::zeros(q.dim());
    general_mat_mul(1.0, &q, precision(), 0.0, &mut pq);
    let lp = (&q * &pq).sum_axis(Axis(1)) * -0.5;
    (lp, -pq)
}

/// A primitive without a batched form, mapped over the lanes; it fails for negative input.
#[primitive]
fn checked_sqrt(x: f64) -> f64 {
    assert!(x >= 0.0, "negative input {x}");
    x.sqrt()
}

/// Leapfrog-style integration: a loop-carried vector and a batched gradient primitive.
#[autobatch]
fn leapfrog(q: Vector, p: Vector, eps: f64, steps: i64) -> (Vector, Vector, f64) {
    let mut q = q;
    let mut p = p;
    let mut lp = 0.0;
    let mut i = 0;
    while i < steps {
        let (l, g): (f64, Vector) = logp_grad(&q);
        p = &p + &(0.5 * eps * &g);
        q = &q + &(eps * &p);
        let (l2, g2): (f64, Vector) = logp_grad(&q);
        p = &p + &(0.5 * eps * &g2);
        lp = l + l2;
        i += 1;
    }
    (q, p, lp)
}

/// A random walk that recurses to a random depth, carrying a vector and a key through the
/// recursion and using its vector again after the recursive call (a FULL vector variable).
#[autobatch]
fn walk(q: Vector, key: Key, depth: i64) -> (Vector, Key, i64) {
    let (u, key) = key.uniform();
    if u < 0.3 || depth >= 20 {
        (q, key, depth)
    } else {
        let (step, key) = key.normals_like(&q);
        let moved = &q + &(0.1 * &step);
        let (back, key, d) = walk(moved, key, depth + 1);
        let (coin, key) = key.bernoulli(0.5);
        let scale = if coin { 0.01 } else { -0.01 };
        (&back - &(scale * &q), key, d)
    }
}

/// Uses `dot`, `sum`, `norm_squared`, `map`, `get`, construction from a scalar and the
/// mapped primitive.
#[autobatch]
fn summary(q: Vector) -> (f64, Vector) {
    let ones = Vector::filled_like(1.0, &q);
    let s = q.dot(&ones) + q.sum() - q.norm_squared().sqrt() + q.get(0);
    let r: f64 = checked_sqrt(s.abs());
    (r, q.map(f64::exp))
}

fn keys(n: usize, seed: u64) -> Array1<Key> {
    Array1::from_iter((0..n as u64).map(|i| Key::new(seed).fold_in(i)))
}

fn states(n: usize, seed: u64) -> Array2<f64> {
    let mut key = Key::new(seed);
    Array2::from_shape_fn((n, DIM), |_| {
        let (z, k) = key.normal();
        key = k;
        z
    })
}

fn bits(a: &Array2<f64>) -> Vec<u64> {
    a.iter().map(|x| x.to_bits()).collect()
}

fn modes() -> [Config; 2] {
    [
        Config::with_mode(Mode::FullVm),
        Config::with_mode(Mode::Stackless),
    ]
}

#[test]
fn leapfrog_agrees_with_the_scalar_function_bit_for_bit() {
    for n in [1usize, 7, 64] {
        let q = states(n, 1);
        let p = states(n, 2);
        let eps = Array1::from_iter((0..n).map(|i| 0.05 + 0.01 * (i % 5) as f64));
        let steps = Array1::from_iter((0..n).map(|i| (i % 7) as i64));
        for config in modes() {
            let (q1, p1, lp) =
                leapfrog::batch(q.view(), p.view(), eps.view(), steps.view(), &config).unwrap();
            for i in 0..n {
                let (qs, ps, lps) = leapfrog(
                    Vector::from(q.row(i).to_vec()),
                    Vector::from(p.row(i).to_vec()),
                    eps[i],
                    steps[i],
                );
                assert_eq!(
                    q1.row(i).iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    qs.as_slice()
                        .iter()
                        .map(|x| x.to_bits())
                        .collect::<Vec<_>>()
                );
                assert_eq!(p1.row(i).to_vec(), ps.as_slice());
                assert_eq!(lp[i].to_bits(), lps.to_bits());
            }
        }
    }
}

#[test]
fn recursive_random_walk_agrees_across_modes_and_batch_sizes() {
    for n in [1usize, 10, 200] {
        let q = states(n, 3);
        let k = keys(n, 4);
        let depth = Array1::<i64>::zeros(n);
        let mut outputs = Vec::new();
        for config in modes() {
            let (q1, k1, d1) = walk::batch(q.view(), k.view(), depth.view(), &config).unwrap();
            for i in 0..n {
                let (qs, ks, ds) = walk(Vector::from(q.row(i).to_vec()), k[i], 0);
                assert_eq!(q1.row(i).to_vec(), qs.as_slice());
                assert_eq!((k1[i], d1[i]), (ks, ds));
            }
            outputs.push(bits(&q1));
        }
        assert_eq!(outputs[0], outputs[1]);
        if n == 200 {
            let depths = walk::batch(q.view(), k.view(), depth.view(), &Config::default())
                .unwrap()
                .2;
            let distinct: std::collections::BTreeSet<i64> = depths.iter().copied().collect();
            assert!(
                distinct.len() >= 5,
                "the walk should recurse to many depths: {distinct:?}"
            );
        }
    }
}

/// The same lane alone and inside a batch of 1,000 others gives identical bits.
#[test]
fn batch_invariance() {
    let n = 1000;
    let q = states(n, 5);
    let k = keys(n, 6);
    let depth = Array1::<i64>::zeros(n);
    for config in modes() {
        let (all, _, all_d) = walk::batch(q.view(), k.view(), depth.view(), &config).unwrap();
        for lane in [0usize, 17, 999] {
            let (alone, _, d) = walk::batch(
                q.slice(autobatch_runtime::ndarray::s![lane..lane + 1, ..]),
                k.slice(autobatch_runtime::ndarray::s![lane..lane + 1]),
                depth.slice(autobatch_runtime::ndarray::s![lane..lane + 1]),
                &config,
            )
            .unwrap();
            assert_eq!(
                bits(&alone),
                all.row(lane)
                    .iter()
                    .map(|x| x.to_bits())
                    .collect::<Vec<_>>()
            );
            assert_eq!(d[0], all_d[lane]);
        }
    }
}

#[test]
fn vector_methods_and_mapped_primitives() {
    let q = states(16, 7);
    for config in modes() {
        let (r, e) = summary::batch(q.view(), &config).unwrap();
        for i in 0..16 {
            let (rs, es) = summary(Vector::from(q.row(i).to_vec()));
            assert_eq!(r[i].to_bits(), rs.to_bits());
            assert_eq!(e.row(i).to_vec(), es.as_slice());
        }
    }
}

/// Every batched primitive in this file agrees with its scalar form on random inputs.
#[test]
fn batched_primitives_agree_with_their_scalar_forms() {
    for seed in 0..5 {
        let q = states(33, 100 + seed);
        logp_grad::check_agreement(&[Column::from_view2(q.view())], DIM, Tolerance::Exact).unwrap();
    }
}

#[test]
fn a_primitive_panicking_in_one_lane_names_the_lane() {
    // summary's sqrt sees |s|, so give checked_sqrt a negative input directly through a lane.
    #[autobatch]
    fn root(x: f64) -> f64 {
        let r: f64 = checked_sqrt(x);
        r
    }
    let xs = Array1::from_vec(vec![4.0, 9.0, -1.0, 16.0]);
    for config in modes() {
        match root::batch(xs.view(), &config).unwrap_err() {
            RuntimeError::Kernel { lane, message, .. } => {
                assert_eq!(lane, 2);
                assert!(message.contains("negative input"), "{message}");
            }
            other => panic!("{other}"),
        }
    }
    assert_eq!(root(4.0), 2.0);
}

#[test]
fn vectors_of_the_wrong_length_are_errors() {
    // Two vector inputs of different lengths at the entry point.
    let q = states(2, 8);
    let p = Array2::<f64>::zeros((2, DIM + 1));
    let eps = Array1::from_vec(vec![0.1, 0.1]);
    let steps = Array1::from_vec(vec![1i64, 1]);
    let err = leapfrog::batch(
        q.view(),
        p.view(),
        eps.view(),
        steps.view(),
        &Config::default(),
    )
    .unwrap_err();
    assert!(matches!(err, RuntimeError::VectorLength { .. }), "{err}");
    // A batch's vectors all have the length of its vector inputs; other lengths are errors.
    let config = Config {
        vector_len: Some(DIM + 2),
        ..Config::default()
    };
    let err = summary::batch(q.view(), &config).unwrap_err();
    assert!(matches!(err, RuntimeError::VectorLength { .. }), "{err}");
}

/// A primitive returning a vector of another length than the run's is a typed error.
#[primitive]
fn drop_first(q: &Vector) -> Vector {
    Vector::from_slice(&q.as_slice()[1..])
}

#[autobatch]
fn shorten(q: Vector) -> Vector {
    let r: Vector = drop_first(&q);
    r
}

#[test]
fn a_primitive_vector_of_the_wrong_length_is_an_error() {
    let q = states(3, 9);
    for config in modes() {
        match shorten::batch(q.view(), &config).unwrap_err() {
            RuntimeError::Kernel { lane, message, .. } => {
                assert_eq!(lane, 0);
                assert!(message.contains("length"), "{message}");
            }
            other => panic!("{other}"),
        }
    }
    assert_eq!(shorten(Vector::zeros(3)).len(), 2);
}

#[test]
fn vector_rows_are_reused_not_leaked() {
    // Every iteration makes new vectors and drops old ones; the rows held at once must not
    // grow with the number of iterations, in either mode.
    let n = 64;
    let (q, p) = (states(n, 5), states(n, 6));
    let eps = Array1::from_elem(n, 0.01);
    for config in modes() {
        let rows = |steps: i64| {
            let steps = Array1::from_elem(n, steps);
            let (_, stats) =
                leapfrog::batch_with_stats(q.view(), p.view(), eps.view(), steps.view(), &config)
                    .unwrap();
            stats.vector_rows
        };
        let (few, many) = (rows(2), rows(500));
        assert!(few > 2 * n, "{:?}: {few} rows for {n} lanes", config.mode);
        assert_eq!(few, many, "{:?}: rows grew with iterations", config.mode);
    }
}

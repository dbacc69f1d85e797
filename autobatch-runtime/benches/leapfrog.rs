//! Benchmark (not a test): a leapfrog-style loop (`p += eps * grad(q); q += eps * p`) in
//! dimension 100 with the gradient of a dense 100x100 Gaussian, over 1,000 lanes: autobatched
//! with a batched GEMM gradient (full VM and stackless) vs. the scalar function looped over
//! lanes vs. a hand-written ndarray loop with one GEMM per step (the lower bound).
//! Run: `cargo bench -p autobatch-runtime --bench leapfrog`.

use autobatch_runtime::ndarray::{linalg::general_mat_mul, Array1, Array2, ArrayView2};
use autobatch_runtime::{autobatch, primitive, Config, Key, Mode, Vector};
use std::hint::black_box;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const DIM: usize = 100;
const LANES: usize = 1_000;
const STEPS: i64 = 20;

/// Precision matrix of the Gaussian with covariance `0.9^|i-j|` (a tridiagonal inverse, stored
/// dense so the gradient is a dense GEMM as in the issue).
fn precision() -> &'static Array2<f64> {
    static P: OnceLock<Array2<f64>> = OnceLock::new();
    P.get_or_init(|| {
        let rho: f64 = 0.9;
        let s = 1.0 / (1.0 - rho * rho);
        Array2::from_shape_fn((DIM, DIM), |(i, j)| match (i as i64 - j as i64).abs() {
            0 if i == 0 || i == DIM - 1 => s,
            0 => (1.0 + rho * rho) * s,
            1 => -rho * s,
            _ => 0.0,
        })
    })
}

/// The gradient of the log density, `-P q`; the scalar form runs the same GEMM on one row.
#[primitive(batched = grad_all)]
fn grad(q: &Vector) -> Vector {
    let row = Array2::from_shape_vec((1, q.len()), q.as_slice().to_vec()).expect("one row");
    Vector::from(grad_all(row.view()).row(0).to_vec())
}

fn grad_all(q: ArrayView2<f64>) -> Array2<f64> {
    let mut g = Array2::zeros(q.dim());
    general_mat_mul(-1.0, &q, precision(), 0.0, &mut g);
    g
}

#[autobatch]
fn leapfrog(q: Vector, p: Vector, eps: f64, steps: i64) -> Vector {
    let mut q = q;
    let mut p = p;
    let mut i = 0;
    while i < steps {
        let g: Vector = grad(&q);
        p = &p + &(eps * &g);
        q = &q + &(eps * &p);
        i += 1;
    }
    q
}

/// The lower bound: the same arithmetic as whole-batch ndarray operations, one GEMM per step.
fn hand_vectorised(q: &Array2<f64>, p: &Array2<f64>, eps: f64, steps: i64) -> Array2<f64> {
    let (mut q, mut p) = (q.clone(), p.clone());
    let mut g = Array2::zeros(q.dim());
    for _ in 0..steps {
        general_mat_mul(-1.0, &q, precision(), 0.0, &mut g);
        p.scaled_add(eps, &g);
        q.scaled_add(eps, &p);
    }
    q
}

fn median(reps: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[reps / 2]
}

fn main() {
    let mut key = Key::new(1);
    let mut draw = || {
        let (z, k) = key.normal();
        key = k;
        z
    };
    let q = Array2::from_shape_fn((LANES, DIM), |_| draw());
    let p = Array2::from_shape_fn((LANES, DIM), |_| draw());
    let eps = Array1::from_elem(LANES, 0.05);
    let steps = Array1::from_elem(LANES, STEPS);
    // The batched gradient must agree with its scalar form before it is worth timing.
    grad::check_agreement(
        &[autobatch_runtime::Column::from_view2(q.view())],
        DIM,
        autobatch_runtime::primitive::Tolerance::Exact,
    )
    .expect("batched and scalar gradients agree bit for bit");
    let reps = 5;
    let mut results = Vec::new();
    for mode in [Mode::FullVm, Mode::Stackless] {
        let config = Config::with_mode(mode);
        leapfrog::batch(q.view(), p.view(), eps.view(), steps.view(), &config).expect("runs");
        let t = median(reps, || {
            black_box(
                leapfrog::batch(q.view(), p.view(), eps.view(), steps.view(), &config)
                    .expect("runs"),
            );
        });
        results.push((format!("autobatched, {mode:?}"), t));
    }
    let scalar = median(reps, || {
        for i in 0..LANES {
            black_box(leapfrog(
                Vector::from(q.row(i).to_vec()),
                Vector::from(p.row(i).to_vec()),
                0.05,
                STEPS,
            ));
        }
    });
    results.push(("scalar function looped over lanes".to_string(), scalar));
    let bound = median(reps, || {
        black_box(hand_vectorised(&q, &p, 0.05, STEPS));
    });
    results.push(("hand-written ndarray, one GEMM per step".to_string(), bound));
    // The batched result equals the scalar function, lane by lane.
    let batched = leapfrog::batch(
        q.view(),
        p.view(),
        eps.view(),
        steps.view(),
        &Config::default(),
    )
    .expect("runs");
    let lane7 = leapfrog(
        Vector::from(q.row(7).to_vec()),
        Vector::from(p.row(7).to_vec()),
        0.05,
        STEPS,
    );
    assert_eq!(batched.row(7).to_vec(), lane7.as_slice());
    println!("leapfrog, dim {DIM}, {LANES} lanes, {STEPS} steps (median of {reps}); gradients/s and time relative to the GEMM bound:");
    let grads = (LANES as f64) * STEPS as f64;
    for (name, t) in &results {
        println!(
            "{name:>42}: {:>9.2} ms  {:>6.2} M grad/s  {:>6.2}x bound",
            t.as_secs_f64() * 1e3,
            grads / t.as_secs_f64() / 1e6,
            t.as_secs_f64() / bound.as_secs_f64()
        );
    }
}

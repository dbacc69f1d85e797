//! The NUTS sampler, proven: batch invariance (a chain alone, in a batch, in either mode and as
//! the scalar function gives the same bits), the reference's one-step conservation test on
//! 10,000 chains, long-run accuracy on the 100-d Gaussian, and typed errors for bad input.

use autobatch_examples::diagnostics;
use autobatch_examples::nuts::sampler::{chain, transition, StateBatch};
use autobatch_examples::nuts::{
    chain_key, initial_point, sample, sample_chains, CorrelatedGaussian, LogisticRegression,
    SampleError, Settings, Shared, Sink, Target,
};
use autobatch_runtime::ndarray::{s, Array1, Array2, ArrayView2, Axis, Zip};
use autobatch_runtime::{Config, Key, Mode, Vector};
use std::sync::{Arc, Mutex};

/// A Gaussian with mean `mean` and covariance `L L'` for a lower-triangular `L`, so exact
/// draws are `mean + L z`.
struct Gaussian {
    mean: Array1<f64>,
    chol: Array2<f64>,
    precision: Array2<f64>,
}

impl Gaussian {
    fn new(mean: &[f64], chol: Array2<f64>) -> Self {
        let n = mean.len();
        // L^-1 by forward substitution, then P = L^-T L^-1.
        let mut inv = Array2::<f64>::zeros((n, n));
        for col in 0..n {
            for row in 0..n {
                let rhs = if row == col { 1.0 } else { 0.0 };
                let acc: f64 = (0..row).map(|k| chol[[row, k]] * inv[[k, col]]).sum();
                inv[[row, col]] = (rhs - acc) / chol[[row, row]];
            }
        }
        Gaussian {
            mean: Array1::from(mean.to_vec()),
            chol,
            precision: inv.t().dot(&inv),
        }
    }

    fn exact_draws(&self, n: usize, seed: u64) -> Array2<f64> {
        let dim = self.mean.len();
        let mut key = Key::new(seed);
        let z = Array2::from_shape_fn((n, dim), |_| {
            let (x, k) = key.normal();
            key = k;
            x
        });
        z.dot(&self.chol.t()) + &self.mean
    }

    fn sd(&self, i: usize) -> f64 {
        self.chol.row(i).dot(&self.chol.row(i)).sqrt()
    }
}

impl Target for Gaussian {
    fn dim(&self) -> usize {
        self.mean.len()
    }
    fn name(&self) -> String {
        format!("{}-d test Gaussian", self.dim())
    }
    fn logp_grad(&self, q: ArrayView2<f64>) -> (Array1<f64>, Array2<f64>) {
        let centred = &q - &self.mean;
        let grad = -centred.dot(&self.precision);
        let logp = (&centred * &grad).sum_axis(Axis(1)) * 0.5;
        (logp, grad)
    }
}

fn bits(a: impl IntoIterator<Item = f64>) -> Vec<u64> {
    a.into_iter().map(f64::to_bits).collect()
}

fn small_run(mode: Mode) -> Settings {
    Settings {
        chains: 6,
        draws: 20,
        warmup: 30,
        mode,
        ..Settings::default()
    }
}

/// Chain k alone and inside a batch of 1,000 gives the same draws and statistics, bit for bit,
/// in both modes; the two modes agree with each other.
#[test]
fn a_chain_alone_and_in_a_batch_of_1000_gives_the_same_bits() {
    let target = || Arc::new(CorrelatedGaussian::new(10, 0.9)) as Arc<dyn Target>;
    let settings = Settings {
        chains: 1000,
        draws: 4,
        warmup: 10,
        ..Settings::default()
    };
    let mut by_mode = Vec::new();
    for mode in [Mode::FullVm, Mode::Stackless] {
        let settings = Settings {
            mode,
            ..settings.clone()
        };
        let ids: Vec<u64> = (0..1000).collect();
        let all = sample_chains(target(), &settings, &ids, |_| {}).unwrap();
        assert_eq!(all.draws.recorded, 4000);
        for k in [0u64, 17, 999] {
            let alone = sample_chains(target(), &settings, &[k], |_| {}).unwrap();
            let row = k as usize;
            assert_eq!(
                bits(alone.draws.q.iter().copied()),
                bits(all.draws.q.slice(s![row, .., ..]).iter().copied()),
                "chain {k}, {mode:?}"
            );
            assert_eq!(alone.draws.n_leapfrog.row(0), all.draws.n_leapfrog.row(row));
            assert_eq!(alone.step_size[0].to_bits(), all.step_size[row].to_bits());
        }
        by_mode.push(all);
    }
    assert_eq!(
        bits(by_mode[0].draws.q.iter().copied()),
        bits(by_mode[1].draws.q.iter().copied())
    );
    assert_eq!(by_mode[0].draws.accept, by_mode[1].draws.accept);
    let depths: std::collections::BTreeSet<i64> = by_mode[0].draws.depth.iter().copied().collect();
    assert!(depths.len() >= 3, "trees of several depths: {depths:?}");
}

/// The scalar function, called as plain Rust per chain, gives the batched draws bit for bit
/// (with warmup adaptation of step size and metric), on both shipped targets.
#[test]
fn the_scalar_sampler_gives_the_batched_draws() {
    let targets: Vec<Arc<dyn Target>> = vec![
        Arc::new(CorrelatedGaussian::new(5, 0.9)),
        Arc::new(LogisticRegression::synthetic(50, 4, 3)),
    ];
    for target in targets {
        let settings = Settings {
            warmup: 40,
            ..small_run(Mode::FullVm)
        };
        let ids: Vec<u64> = (0..settings.chains as u64).collect();
        let batched = sample_chains(target.clone(), &settings, &ids, |_| {}).unwrap();
        for k in 0..settings.chains {
            let q0 = initial_point(settings.seed, k as u64, target.dim(), settings.init_radius);
            let ((_, eps, minv), draws) = {
                let shape = (settings.chains, settings.draws, target.dim());
                let shared = Shared::new(target.clone(), settings.chain_settings())
                    .recording(Sink::new(shape, 0));
                let out = chain(
                    &shared,
                    Vector::from(q0),
                    k as i64,
                    chain_key(settings.seed, k as u64),
                );
                (out, shared.into_recorded().unwrap())
            };
            assert_eq!(eps.to_bits(), batched.step_size[k].to_bits());
            assert_eq!(
                bits(minv.as_slice().iter().copied()),
                bits(batched.inverse_metric.row(k).iter().copied())
            );
            assert_eq!(
                bits(draws.draws.q.slice(s![k, .., ..]).iter().copied()),
                bits(batched.draws.q.slice(s![k, .., ..]).iter().copied()),
                "{} chain {k}",
                target.name()
            );
            assert_eq!(draws.draws.depth.row(k), batched.draws.depth.row(k));
        }
    }
}

/// Struct and tuple results travel field by field: the tree builder returns its tree and key
/// (15 fields in all) in 15 variables, each recursive call binds them straight to the
/// pattern that takes them apart, and no variable of the linked sampler holds a tuple (so no
/// tuple is copied whole and then again leaf by leaf).
#[test]
fn tuple_results_are_bound_element_by_element() {
    let program = chain::program().unwrap();
    let tuples: Vec<String> = program
        .vars
        .iter()
        .filter(|v| v.ty.to_string().starts_with('('))
        .map(|v| format!("{} :: {}", v.name, v.ty))
        .collect();
    assert!(tuples.is_empty(), "tuple variables: {tuples:?}\n{program}");
    let tree = program.function(program.function_named("build_tree").unwrap());
    assert_eq!(tree.returns.len(), 15);
    let text = program.to_string();
    let calls: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("= call(build_tree, "))
        .collect();
    assert_eq!(
        calls.len(),
        3,
        "two in build_tree, one in transition:\n{text}"
    );
    for call in calls {
        let outs = call.trim().split(" = ").next().unwrap();
        assert_eq!(outs.split(", ").count(), 15, "{call}");
        assert!(
            !outs.contains(".t."),
            "call results bound to the pattern: {call}"
        );
    }
}

/// Largest distance between the empirical CDF of `xs` and the normal CDF.
fn ks_normal(xs: &mut [f64], mean: f64, sd: f64) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len() as f64;
    xs.iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = 0.5 * erfc(-(x - mean) / (sd * std::f64::consts::SQRT_2));
            (f - i as f64 / n).abs().max(((i + 1) as f64 / n - f).abs())
        })
        .fold(0.0, f64::max)
}

/// The complementary error function (Numerical Recipes' erfcc, relative error below 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.26551223
            + t * (1.00002368
                + t * (0.37409196
                    + t * (0.09678418
                        + t * (-0.18628806
                            + t * (0.27886807
                                + t * (-1.13520398
                                    + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// The reference's own test: start 10,000 chains at exact draws from the target, take one NUTS
/// transition, and the marginals are still the target's. Kolmogorov-Smirnov at level 0.001 per
/// marginal (critical distance 1.949 / sqrt(n)); four marginals, so a correct sampler fails
/// this with probability below 0.4% per seed (and these seeds are fixed).
#[test]
fn one_transition_from_exact_draws_keeps_the_target() {
    let n = 10_000;
    let cases = [
        (
            Gaussian::new(&[1.0], Array2::from_elem((1, 1), 2.0)),
            0.9,
            11,
        ),
        (
            Gaussian::new(
                &[0.5, -1.0, 2.0],
                autobatch_runtime::ndarray::array![
                    [1.0, 0.0, 0.0],
                    [0.8, 0.6, 0.0],
                    [-0.5, 0.3, 0.4]
                ],
            ),
            0.25,
            12,
        ),
    ];
    for (target, eps, seed) in cases {
        let target = Arc::new(target);
        let shared = Shared::new(target.clone(), Settings::default().chain_settings());
        let q = target.exact_draws(n, seed);
        let (logp, grad) = target.logp_grad(q.view());
        let keys = Array1::from_iter((0..n as u64).map(|c| chain_key(seed + 100, c)));
        let minv = Array2::from_elem(q.dim(), 1.0);
        let from = StateBatch {
            q: q.clone(),
            logp,
            g: grad,
        };
        let (done, _) = transition::batch(
            &shared,
            &from,
            Array1::from_elem(n, eps).view(),
            minv.view(),
            keys.view(),
            &Config::default(),
        )
        .unwrap();
        let (q1, n_leapfrog, divergent) = (done.state.q, done.n_leapfrog, done.divergent);
        assert!(!divergent.iter().any(|d| *d));
        let counts: std::collections::BTreeSet<i64> = n_leapfrog.iter().copied().collect();
        assert!(counts.len() >= 3, "leapfrog counts seen: {counts:?}");
        let moved = Zip::from(q.rows())
            .and(q1.rows())
            .fold(0, |m, a, b| m + usize::from(a != b));
        assert!(moved > n / 2, "most chains move: {moved}");
        let critical = 1.949 / (n as f64).sqrt();
        for i in 0..target.dim() {
            let d = ks_normal(&mut q1.column(i).to_vec(), target.mean[i], target.sd(i));
            assert!(
                d < critical,
                "marginal {i} of the {}-d target: KS distance {d} >= {critical}",
                target.dim()
            );
        }
    }
}

/// The KS check above can fail: draws whose spread is 15% too wide (what a wrong momentum
/// scale would give) are caught at the same sample size.
#[test]
fn the_conservation_check_detects_a_wrong_marginal() {
    let target = Gaussian::new(&[1.0], Array2::from_elem((1, 1), 2.0));
    let mut wrong = target.exact_draws(10_000, 11).column(0).to_vec();
    wrong.iter_mut().for_each(|x| *x = 1.0 + (*x - 1.0) * 1.15);
    assert!(ks_normal(&mut wrong, 1.0, 2.0) > 1.949 / 100.0);
}

/// Long run on the target (1): every coordinate's mean (0) and second moment (1) lie
/// within their Monte Carlo standard errors (two-sided z-test, Bonferroni over 200 tests at
/// family level 1%: |z| < 3.89), and every split R-hat is below 1.01.
#[test]
fn long_run_on_the_100d_gaussian_is_accurate() {
    let settings = Settings {
        chains: 8,
        draws: 1000,
        warmup: 400,
        seed: 7,
        ..Settings::default()
    };
    let run = sample(CorrelatedGaussian::new(100, 0.9), &settings, |_| {}).unwrap();
    assert_eq!(run.divergences(), 0);
    let squares = run.draws.q.mapv(|x| x * x);
    let mut worst_z: f64 = 0.0;
    for i in 0..100 {
        let x = run.draws.q.slice(s![.., .., i]);
        let x2 = squares.slice(s![.., .., i]);
        let z_mean = diagnostics::mean(x) / diagnostics::mcse_mean(x);
        let z_var = (diagnostics::mean(x2) - 1.0) / diagnostics::mcse_mean(x2);
        worst_z = worst_z.max(z_mean.abs()).max(z_var.abs());
        let r_hat = diagnostics::split_rhat(x);
        assert!(r_hat < 1.01, "coordinate {i}: split R-hat {r_hat}");
    }
    assert!(worst_z < 3.89, "largest |z| over 200 tests: {worst_z}");
    let accept = run.draws.accept.mean().unwrap();
    assert!(
        (0.7..0.95).contains(&accept),
        "adapted acceptance {accept} near the 0.8 target"
    );
}

/// A log density that is NaN in part of the space makes those trajectories divergent; the
/// run finishes and reports them.
#[test]
fn a_nan_density_is_a_divergence_not_a_crash() {
    struct Cliff;
    impl Target for Cliff {
        fn dim(&self) -> usize {
            2
        }
        fn name(&self) -> String {
            "normal with a NaN cliff at q0 > 1".into()
        }
        fn logp_grad(&self, q: ArrayView2<f64>) -> (Array1<f64>, Array2<f64>) {
            let logp = q.map_axis(Axis(1), |r| {
                if r[0] > 1.0 {
                    f64::NAN
                } else {
                    -0.5 * r.dot(&r)
                }
            });
            (logp, q.mapv(|x| -x))
        }
    }
    let settings = Settings {
        chains: 20,
        draws: 50,
        warmup: 0,
        adapt_step_size: false,
        init_radius: 0.5,
        ..Settings::default()
    };
    let run = sample(Cliff, &settings, |_| {}).unwrap();
    assert!(run.divergences() > 0);
    assert!(run.draws.q.slice(s![.., .., 0]).iter().all(|&x| x <= 1.0));
}

#[test]
fn bad_settings_and_bad_starts_are_typed_errors() {
    let gaussian = || CorrelatedGaussian::new(3, 0.5);
    for (settings, name) in [
        (
            Settings {
                chains: 0,
                ..Settings::default()
            },
            "chains",
        ),
        (
            Settings {
                target_accept: 1.5,
                ..Settings::default()
            },
            "target_accept",
        ),
        (
            Settings {
                step_size: f64::NAN,
                ..Settings::default()
            },
            "step_size",
        ),
        (
            Settings {
                max_depth: 0,
                ..Settings::default()
            },
            "max_depth",
        ),
        (
            Settings {
                threads: 0,
                ..Settings::default()
            },
            "threads",
        ),
        (
            Settings {
                shard_size: Some(0),
                ..Settings::default()
            },
            "shard_size",
        ),
    ] {
        match sample(gaussian(), &settings, |_| {}) {
            Err(SampleError::Setting { name: got, .. }) => assert_eq!(got, name),
            other => panic!("{name}: {other:?}"),
        }
    }
    struct Nowhere;
    impl Target for Nowhere {
        fn dim(&self) -> usize {
            2
        }
        fn name(&self) -> String {
            "nowhere finite".into()
        }
        fn logp_grad(&self, q: ArrayView2<f64>) -> (Array1<f64>, Array2<f64>) {
            (
                Array1::from_elem(q.nrows(), f64::NEG_INFINITY),
                q.to_owned(),
            )
        }
    }
    let err = sample(Nowhere, &small_run(Mode::FullVm), |_| {}).unwrap_err();
    assert!(matches!(err, SampleError::NonFiniteStart { chain: 0, .. }));
    assert!(
        err.to_string().contains("initial point of chain 0"),
        "{err}"
    );
}

/// Progress reports count every transition, warmup included, and end at the total.
#[test]
fn progress_reaches_the_total() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let settings = small_run(Mode::Stackless);
    sample(CorrelatedGaussian::new(4, 0.5), &settings, move |p| {
        sink.lock().unwrap().push(p)
    })
    .unwrap();
    let seen = seen.lock().unwrap();
    let last = seen.last().unwrap();
    assert_eq!(last.done, last.total);
    assert_eq!(last.total, (6 * (20 + 30)) as u64);
    assert!(seen.windows(2).all(|w| w[0].done < w[1].done));
}

/// Keeping warmup stores every warmup transition and changes no draw; each draw's energy is
/// at least its negative log density (the kinetic energy is not negative), and the log
/// density recorded is the target's at the draw.
#[test]
fn warmup_and_energy_are_recorded_without_changing_the_draws() {
    let target = CorrelatedGaussian::new(4, 0.5);
    let plain = sample(target.clone(), &small_run(Mode::FullVm), |_| {}).unwrap();
    assert!(plain.warmup.is_empty());
    let settings = Settings {
        save_warmup: true,
        ..small_run(Mode::FullVm)
    };
    let kept = sample(target.clone(), &settings, |_| {}).unwrap();
    assert_eq!(kept.warmup.q.dim(), (6, 30, 4));
    assert_eq!(kept.warmup.recorded, 6 * 30);
    assert_eq!(
        bits(plain.draws.q.iter().copied()),
        bits(kept.draws.q.iter().copied())
    );
    assert_eq!(plain.draws.energy, kept.draws.energy);
    assert!(kept.warmup.n_leapfrog.iter().all(|&n| n >= 1));
    let (lp, _) = target.logp_grad(kept.draws.q.slice(s![.., 5, ..]));
    for c in 0..6 {
        assert_eq!(lp[c].to_bits(), kept.draws.lp[[c, 5]].to_bits());
    }
    for (e, lp) in kept.draws.energy.iter().zip(&kept.draws.lp) {
        assert!(*e >= -lp, "energy {e} below -lp {}", -lp);
    }
}

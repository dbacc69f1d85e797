//! Diagnostics against ArviZ reference values and against known statistical behaviour.
//!
//! The reference inputs come from a deterministic generator that uses only exactly rounded
//! IEEE operations (a 64-bit LCG, Irwin-Hall sums, an AR(1) recursion), so the Python
//! script below builds bit-identical arrays. The expected values were computed once with
//! ArviZ 0.22.0 (NumPy 2.4.6, SciPy 1.17.1) and are hard-coded: Python is not needed to run
//! these tests.
//!
//! ```python
//! import numpy as np, arviz as az
//! M = (1 << 64) - 1
//! class Lcg:
//!     def __init__(self, seed): self.s = seed & M
//!     def next_u64(self):
//!         self.s = (self.s * 6364136223846793005 + 1442695040888963407) & M
//!         return self.s
//!     def uniform(self): return (self.next_u64() >> 11) / 9007199254740992.0
//!     def approx_normal(self):
//!         s = 0.0
//!         for _ in range(12): s += self.uniform()
//!         return s - 6.0
//! def ar1(seed, chains, draws, rho, offsets):
//!     g = Lcg(seed); out = np.zeros((chains, draws))
//!     for c in range(chains):
//!         x = g.approx_normal()
//!         for d in range(draws):
//!             x = rho * x + g.approx_normal()
//!             out[c, d] = x + offsets[c]
//!     return out
//! # per case: np.mean(a), np.std(a, ddof=1), az.rhat(a, method="rank"),
//! # az.rhat(a, method="split"), az.ess(a, method="bulk"), az.ess(a, method="mean"),
//! # az.mcse(a, method="mean"), az.ess(a, method="tail"), az.mcse(a, method="sd"),
//! # np.quantile(a, [0.05, 0.5, 0.95])
//! ```

use autobatch_examples::diagnostics::{
    bulk_ess, ess, mcse_mean, mcse_sd, mean, quantile, rank_normalized_split_rhat, sd, split_rhat,
    summarize, summarize_all, tail_ess, Summary, SUMMARY_QUANTILES,
};
use ndarray::{Array2, Array3, Axis};

/// The generator shared with the Python script.
struct Lcg(u64);

impl Lcg {
    fn next_u64(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0
    }

    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / 9007199254740992.0
    }

    /// Irwin-Hall(12) - 6: mean 0, variance 1, exactly reproducible in Python.
    fn approx_normal(&mut self) -> f64 {
        let mut s = 0.0;
        for _ in 0..12 {
            s += self.uniform();
        }
        s - 6.0
    }

    /// A true standard normal (Box-Muller), for the statistical tests only.
    fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

fn ar1(seed: u64, chains: usize, draws: usize, rho: f64, offsets: &[f64]) -> Array2<f64> {
    let mut g = Lcg(seed);
    let mut out = Array2::zeros((chains, draws));
    for c in 0..chains {
        let mut x = g.approx_normal();
        for d in 0..draws {
            x = rho * x + g.approx_normal();
            out[[c, d]] = x + offsets[c];
        }
    }
    out
}

/// ArviZ's outputs for one input.
struct Reference {
    mean: f64,
    sd: f64,
    rhat_rank: f64,
    rhat_split: f64,
    ess_bulk: f64,
    ess_mean: f64,
    mcse_mean: f64,
    ess_tail: f64,
    mcse_sd: f64,
    quantiles: [f64; 3],
}

const RELATIVE_TOLERANCE: f64 = 1e-6;

fn assert_close(what: &str, got: f64, want: f64) {
    if want.is_nan() {
        assert!(got.is_nan(), "{what}: got {got}, ArviZ gives NaN");
    } else {
        let scale = want.abs().max(1e-300);
        assert!(
            (got - want).abs() <= RELATIVE_TOLERANCE * scale,
            "{what}: got {got}, ArviZ gives {want}"
        );
    }
}

fn check(name: &str, draws: &Array2<f64>, r: Reference) {
    let v = draws.view();
    assert_close(&format!("{name} mean"), mean(v), r.mean);
    assert_close(&format!("{name} sd"), sd(v), r.sd);
    assert_close(
        &format!("{name} rhat rank"),
        rank_normalized_split_rhat(v),
        r.rhat_rank,
    );
    assert_close(&format!("{name} rhat split"), split_rhat(v), r.rhat_split);
    assert_close(&format!("{name} ess bulk"), bulk_ess(v), r.ess_bulk);
    assert_close(&format!("{name} ess mean"), ess(v), r.ess_mean);
    assert_close(&format!("{name} mcse mean"), mcse_mean(v), r.mcse_mean);
    let s = summarize(v);
    assert_close(&format!("{name} summary mean"), s.mean, r.mean);
    assert_close(&format!("{name} summary sd"), s.sd, r.sd);
    assert_close(&format!("{name} summary r_hat"), s.r_hat, r.rhat_rank);
    assert_close(
        &format!("{name} summary split_r_hat"),
        s.split_r_hat,
        r.rhat_split,
    );
    assert_close(&format!("{name} summary ess_bulk"), s.ess_bulk, r.ess_bulk);
    assert_close(&format!("{name} summary ess_mean"), s.ess_mean, r.ess_mean);
    assert_close(
        &format!("{name} summary mcse_mean"),
        s.mcse_mean,
        r.mcse_mean,
    );
    assert_close(&format!("{name} ess tail"), tail_ess(v), r.ess_tail);
    assert_close(&format!("{name} mcse sd"), mcse_sd(v), r.mcse_sd);
    assert_close(&format!("{name} summary ess_tail"), s.ess_tail, r.ess_tail);
    assert_close(&format!("{name} summary mcse_sd"), s.mcse_sd, r.mcse_sd);
    for ((p, want), got) in SUMMARY_QUANTILES.iter().zip(r.quantiles).zip(s.quantiles) {
        assert_close(&format!("{name} quantile {p}"), quantile(v, *p), want);
        assert_close(&format!("{name} summary quantile {p}"), got, want);
    }
}

#[test]
fn generator_matches_the_python_script() {
    let a = ar1(1, 4, 50, 0.5, &[0.0; 4]);
    // Printed by the script with full precision.
    assert_eq!(a[[3, 49]], -0.18877340695339206);
}

#[test]
fn arviz_four_mixed_chains() {
    let a = ar1(1, 4, 50, 0.5, &[0.0; 4]);
    check(
        "a",
        &a,
        Reference {
            mean: 0.08767851382506162,
            sd: 1.0647527207494907,
            rhat_rank: 1.050386081807109,
            rhat_split: 1.0476468229747806,
            ess_bulk: 96.33189541464154,
            ess_mean: 96.99931109198792,
            mcse_mean: 0.10810964308869096,
            ess_tail: 214.23458431332443,
            mcse_sd: 0.041583415752873824,
            quantiles: [
                -1.4120321365953954,
                0.014234603140921231,
                1.8737509789818418,
            ],
        },
    );
}

#[test]
fn arviz_shifted_chains_odd_draws() {
    let b = ar1(2, 4, 51, 0.8, &[0.0, 0.5, 1.0, 1.5]);
    check(
        "b",
        &b,
        Reference {
            mean: 0.8975702288746612,
            sd: 1.5198639912346994,
            rhat_rank: 1.12802722642247,
            rhat_split: 1.127184763123594,
            ess_bulk: 26.355684844954514,
            ess_mean: 26.54008509486757,
            mcse_mean: 0.2950214344322891,
            ess_tail: 82.5575424731543,
            mcse_sd: 0.11005601211982194,
            quantiles: [-1.4210872885649035, 0.907432182347345, 3.360814305944702],
        },
    );
}

#[test]
fn arviz_two_short_chains() {
    let c = ar1(3, 2, 7, 0.3, &[0.0; 2]);
    check(
        "c",
        &c,
        Reference {
            mean: 0.2149931613188541,
            sd: 0.9755161836872207,
            rhat_rank: 1.0225204383061102,
            rhat_split: 0.9649917281444338,
            ess_bulk: 12.9501749525715,
            ess_mean: 12.9501749525715,
            mcse_mean: 0.27107949060069886,
            ess_tail: 12.0,
            mcse_sd: 0.2173474584888648,
            quantiles: [-0.9697362755832661, 0.08648435299684465, 1.7398411173383317],
        },
    );
}

#[test]
fn arviz_many_ties() {
    let d = ar1(4, 3, 40, 0.6, &[0.0; 3]).mapv(|x| (x * 2.0).floor() / 2.0);
    check(
        "d",
        &d,
        Reference {
            mean: -0.18333333333333332,
            sd: 1.662656239367634,
            rhat_rank: 1.0290089237767328,
            rhat_split: 1.0390606617630798,
            ess_bulk: 35.13029005489669,
            ess_mean: 34.10869268033659,
            mcse_mean: 0.2846885034310518,
            ess_tail: 57.13776873171351,
            mcse_sd: 0.1856998841130614,
            quantiles: [-3.025, 0.0, 3.0],
        },
    );
}

#[test]
fn arviz_one_chain() {
    let e = ar1(5, 1, 60, 0.9, &[0.0]);
    check(
        "e",
        &e,
        Reference {
            mean: -0.06413873739750567,
            sd: 1.9067884662390768,
            rhat_rank: f64::NAN,
            rhat_split: f64::NAN,
            ess_bulk: 1.7486287764601622,
            ess_mean: 1.680587862816285,
            mcse_mean: 1.4708619217737269,
            ess_tail: 21.6310293386375,
            mcse_sd: 0.26478871670055715,
            quantiles: [-3.0052003061908876, 0.27187479070177517, 3.052619442264134],
        },
    );
}

#[test]
fn arviz_one_constant_chain() {
    let mut f = ar1(6, 3, 30, 0.2, &[0.0; 3]);
    f.row_mut(1).fill(0.25);
    check(
        "f",
        &f,
        Reference {
            mean: 0.1010919712522464,
            sd: 0.8693563311066914,
            rhat_rank: 1.7078036299416444,
            rhat_split: 0.9778310387245034,
            ess_bulk: 52.93962274979224,
            ess_mean: 48.338155137111634,
            mcse_mean: 0.12504110001824784,
            ess_tail: 76.90983699988598,
            mcse_sd: 0.14308785303700353,
            quantiles: [-1.632668594339298, 0.25, 1.2673413953507398],
        },
    );
}

#[test]
fn arviz_long_autocorrelated_chains() {
    let g = ar1(7, 8, 1001, 0.95, &[0.0; 8]);
    check(
        "g",
        &g,
        Reference {
            mean: 0.23818495413742355,
            sd: 3.2601802690914097,
            rhat_rank: 1.024367295212673,
            rhat_split: 1.024572911436259,
            ess_bulk: 217.35431447999386,
            ess_mean: 216.5820052637417,
            mcse_mean: 0.22152891963238902,
            ess_tail: 428.2017893997272,
            mcse_sd: 0.11410066611889985,
            quantiles: [-5.069000541935736, 0.16866578350428857, 5.758144214801668],
        },
    );
}

#[test]
fn arviz_one_stuck_chain() {
    let mut h = ar1(8, 4, 50, 0.5, &[0.0; 4]);
    h.row_mut(2).fill(3.0);
    check(
        "h",
        &h,
        Reference {
            mean: 0.5032913896109826,
            sd: 1.744808532617927,
            rhat_rank: 1.5789230189206627,
            rhat_split: 1.9461237539633043,
            ess_bulk: 8.000562497722104,
            ess_mean: 6.339146509178872,
            mcse_mean: 0.6929986391618019,
            ess_tail: 81.07067205854034,
            mcse_sd: 0.25205175867876667,
            quantiles: [-1.9768433663540934, 0.16581581359548553, 3.0],
        },
    );
}

#[test]
fn arviz_constant_draws() {
    let k = Array2::from_elem((3, 10), 2.5);
    check(
        "constant",
        &k,
        Reference {
            mean: 2.5,
            sd: 0.0,
            rhat_rank: f64::NAN,
            rhat_split: f64::NAN,
            ess_bulk: 30.0,
            ess_mean: 30.0,
            mcse_mean: 0.0,
            ess_tail: 30.0,
            mcse_sd: f64::NAN,
            quantiles: [2.5, 2.5, 2.5],
        },
    );
}

#[test]
fn arviz_too_few_draws() {
    let short = ar1(9, 3, 3, 0.5, &[0.0; 3]);
    check(
        "short",
        &short,
        Reference {
            mean: -0.20899685298347154,
            sd: 1.0905861913575476,
            rhat_rank: f64::NAN,
            rhat_split: f64::NAN,
            ess_bulk: f64::NAN,
            ess_mean: f64::NAN,
            mcse_mean: f64::NAN,
            ess_tail: f64::NAN,
            mcse_sd: f64::NAN,
            quantiles: [
                -1.8109069998206948,
                -0.054246994399671955,
                1.0141679791299565,
            ],
        },
    );
}

#[test]
fn nan_and_empty_inputs_give_nan() {
    let mut a = ar1(1, 4, 50, 0.5, &[0.0; 4]);
    a[[2, 7]] = f64::NAN;
    let s = summarize(a.view());
    for value in [s.r_hat, s.split_r_hat, s.ess_bulk, s.ess_mean, s.mcse_mean] {
        assert!(value.is_nan());
    }
    for value in [
        s.ess_tail,
        s.mcse_sd,
        s.quantiles[0],
        s.quantiles[1],
        s.quantiles[2],
    ] {
        assert!(value.is_nan());
    }
    let empty = Array2::<f64>::zeros((0, 10));
    let s = summarize(empty.view());
    assert!(s.mean.is_nan() && s.sd.is_nan() && s.ess_bulk.is_nan() && s.r_hat.is_nan());
    let no_draws = Array2::<f64>::zeros((4, 0));
    assert!(summarize(no_draws.view()).ess_mean.is_nan());
}

fn iid_normal(seed: u64, chains: usize, draws: usize) -> Array2<f64> {
    let mut g = Lcg(seed);
    Array2::from_shape_simple_fn((chains, draws), || g.normal())
}

#[test]
fn iid_draws_have_ess_near_the_draw_count_and_rhat_near_one() {
    // 4 x 1000 iid normals: the ESS estimates have a relative sd of a few percent,
    // so 10% is a wide margin for this fixed seed.
    let draws = iid_normal(42, 4, 1000);
    let s = summarize(draws.view());
    let n = 4000.0;
    assert!(
        (s.ess_bulk / n - 1.0).abs() < 0.1,
        "bulk ESS {}",
        s.ess_bulk
    );
    assert!((s.ess_mean / n - 1.0).abs() < 0.1, "ESS {}", s.ess_mean);
    assert!(s.r_hat < 1.01, "R-hat {}", s.r_hat);
    assert!(
        (s.split_r_hat - 1.0).abs() < 0.01,
        "split R-hat {}",
        s.split_r_hat
    );
    assert!(
        s.mean.abs() < 4.0 * s.mcse_mean,
        "mean {} mcse {}",
        s.mean,
        s.mcse_mean
    );
    assert!((s.sd - 1.0).abs() < 0.05);
}

#[test]
fn chains_with_different_means_have_large_rhat() {
    let mut draws = iid_normal(7, 4, 500);
    for (c, mut row) in draws.axis_iter_mut(Axis(0)).enumerate() {
        row += c as f64;
    }
    assert!(rank_normalized_split_rhat(draws.view()) > 1.3);
    assert!(split_rhat(draws.view()) > 1.3);
    // One chain off by half a standard deviation is already flagged.
    let mut draws = iid_normal(8, 4, 1000);
    draws.row_mut(0).mapv_inplace(|x| x + 0.5);
    assert!(rank_normalized_split_rhat(draws.view()) > 1.01);
}

#[test]
fn tail_rhat_catches_different_scales() {
    // Same mean, different spread: the bulk R-hat misses it, the folded one does not.
    let mut draws = iid_normal(9, 4, 1000);
    draws.row_mut(3).mapv_inplace(|x| 3.0 * x);
    assert!(split_rhat(draws.view()) < 1.01);
    assert!(rank_normalized_split_rhat(draws.view()) > 1.05);
}

#[test]
fn ar1_ess_matches_theory() {
    // x_t = rho x_{t-1} + sqrt(1 - rho^2) e_t has integrated autocorrelation time
    // (1 + rho) / (1 - rho), so ESS ~ N (1 - rho) / (1 + rho) = 80000 * 0.1 / 1.9 = 4211.
    // With 4 x 20000 draws the estimate's relative sd is about 3%; we allow 10%.
    let rho: f64 = 0.9;
    let (chains, n) = (4, 20_000);
    let mut g = Lcg(2024);
    let mut draws = Array2::zeros((chains, n));
    for c in 0..chains {
        let mut x = g.normal();
        for d in 0..n {
            x = rho * x + (1.0 - rho * rho).sqrt() * g.normal();
            draws[[c, d]] = x;
        }
    }
    let expected = (chains * n) as f64 * (1.0 - rho) / (1.0 + rho);
    let s = summarize(draws.view());
    assert!(
        (s.ess_mean / expected - 1.0).abs() < 0.1,
        "ESS {} vs {expected}",
        s.ess_mean
    );
    assert!(
        (s.ess_bulk / expected - 1.0).abs() < 0.1,
        "bulk ESS {} vs {expected}",
        s.ess_bulk
    );
    assert!(s.r_hat < 1.01);
}

#[test]
fn summarize_all_is_per_coordinate() {
    let a = ar1(1, 4, 50, 0.5, &[0.0; 4]);
    let b = ar1(2, 4, 50, 0.8, &[0.0, 0.5, 1.0, 1.5]);
    let mut draws = Array3::zeros((4, 50, 3));
    draws.index_axis_mut(Axis(2), 0).assign(&a);
    draws.index_axis_mut(Axis(2), 1).assign(&b);
    draws.index_axis_mut(Axis(2), 2).fill(1.0);
    let all: Vec<Summary> = summarize_all(draws.view());
    assert_eq!(all.len(), 3);
    assert_eq!(all[0], summarize(a.view()));
    assert_eq!(all[1], summarize(b.view()));
    assert_eq!(all[2].mean, 1.0);
    assert!(all[2].r_hat.is_nan());
    assert_eq!(all[2].ess_bulk, 200.0);
}

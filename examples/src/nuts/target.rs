//! What the sampler samples: the [`Target`] trait and the two shipped targets.
//!
//! Autobatched code names its primitives at compile time, so the sampler calls one primitive,
//! [`logp_grad()`](super::shared::logp_grad()), and that primitive evaluates the target of the
//! run's context ([`Shared`](super::Shared)), which the runtime hands to every kernel call. A
//! user plugs in their own model by implementing [`Target`]; nothing else changes.

use autobatch_runtime::ndarray::{linalg::general_mat_mul, Array1, Array2, ArrayView2, Axis, Zip};
use autobatch_runtime::Key;

/// A log density with its gradient, evaluated for many points at once.
///
/// `logp_grad` sees every active chain's position as one row of `q`, so a model whose gradient
/// is a matrix product does one GEMM per call. It must be row-wise: row `i` of the result may
/// depend on row `i` of `q` only (this is what makes a chain's draws independent of the batch).
/// Rows for which the density is not finite may return NaN or infinity; the sampler treats
/// that as a divergence of that chain. A target is `Send + Sync`: every chain of a run shares
/// it, and kernels may run on any thread.
///
/// ```
/// use autobatch_examples::nuts::{Settings, Target};
/// use autobatch_runtime::ndarray::{Array1, Array2, ArrayView2, Axis};
///
/// /// Independent standard normals in `dim` dimensions.
/// struct StdNormal(usize);
///
/// impl Target for StdNormal {
///     fn dim(&self) -> usize {
///         self.0
///     }
///     fn name(&self) -> String {
///         format!("{}-d standard normal", self.0)
///     }
///     fn logp_grad(&self, q: ArrayView2<f64>) -> (Array1<f64>, Array2<f64>) {
///         let logp = q.map_axis(Axis(1), |row| -0.5 * row.dot(&row));
///         (logp, q.mapv(|x| -x))
///     }
/// }
///
/// let settings = Settings { chains: 4, draws: 50, warmup: 50, ..Settings::default() };
/// let run = autobatch_examples::nuts::sample(StdNormal(3), &settings, |_| {})?;
/// assert_eq!(run.draws.q.dim(), (4, 50, 3));
/// # Ok::<(), autobatch_examples::nuts::SampleError>(())
/// ```
pub trait Target: Send + Sync {
    /// The number of coordinates.
    fn dim(&self) -> usize;
    /// A short description for reports.
    fn name(&self) -> String;
    /// Log density (one per row) and its gradient (one row per row) at the rows of `q`.
    fn logp_grad(&self, q: ArrayView2<f64>) -> (Array1<f64>, Array2<f64>);
}

/// A zero-mean Gaussian with covariance `Sigma_ij = rho^|i-j|` (an AR(1) process), its
/// gradient applied as the dense precision matrix: one `[chains, dim] x [dim, dim]` GEMM per
/// batched call. Every marginal is a standard normal.
#[derive(Clone, Debug)]
pub struct CorrelatedGaussian {
    rho: f64,
    precision: Array2<f64>,
    /// `-precision`, so the gradient is one plain matrix product.
    neg_precision: Array2<f64>,
}

impl CorrelatedGaussian {
    /// The Gaussian in `dim` dimensions with correlation `rho` between neighbours
    /// (`|rho| < 1`); `CorrelatedGaussian::new(100, 0.9)` is the issue's target (1).
    pub fn new(dim: usize, rho: f64) -> Self {
        assert!(rho.abs() < 1.0, "|rho| must be below 1, got {rho}");
        let s = 1.0 / (1.0 - rho * rho);
        let precision = Array2::from_shape_fn((dim, dim), |(i, j)| {
            if i == j {
                if i == 0 || i + 1 == dim {
                    s
                } else {
                    (1.0 + rho * rho) * s
                }
            } else if i.abs_diff(j) == 1 {
                -rho * s
            } else {
                0.0
            }
        });
        let neg_precision = precision.mapv(|x| -x);
        CorrelatedGaussian {
            rho,
            precision,
            neg_precision,
        }
    }

    /// The covariance `rho^|i-j|`.
    pub fn covariance(&self) -> Array2<f64> {
        let dim = self.precision.nrows();
        Array2::from_shape_fn((dim, dim), |(i, j)| self.rho.powi(i.abs_diff(j) as i32))
    }

    /// The precision matrix the gradient multiplies by.
    pub fn precision(&self) -> &Array2<f64> {
        &self.precision
    }
}

impl Target for CorrelatedGaussian {
    fn dim(&self) -> usize {
        self.precision.nrows()
    }

    fn name(&self) -> String {
        format!("{}-d Gaussian, Sigma_ij = {}^|i-j|", self.dim(), self.rho)
    }

    fn logp_grad(&self, q: ArrayView2<f64>) -> (Array1<f64>, Array2<f64>) {
        // One GEMM with the negated precision (exactly `-(q P)`: negation is exact); `dot`
        // writes its result without zero-filling it first.
        let grad = q.dot(&self.neg_precision);
        let logp = Zip::from(q.rows())
            .and(grad.rows())
            .map_collect(|q, g| 0.5 * q.dot(&g));
        (logp, grad)
    }
}

/// Bayesian logistic regression with a standard normal prior on the coefficients, on a
/// synthetic data set drawn from fixed seeds: standard normal features, true coefficients
/// drawn from the prior, Bernoulli outcomes. Both the linear predictor and the gradient are
/// GEMMs over the batch.
#[derive(Clone, Debug)]
pub struct LogisticRegression {
    x: Array2<f64>,
    y: Array1<f64>,
}

impl LogisticRegression {
    /// A synthetic data set with `rows` observations of `features` features, from `seed`.
    pub fn synthetic(rows: usize, features: usize, seed: u64) -> Self {
        let mut key = Key::new(seed);
        let mut normal = || {
            let (z, k) = key.normal();
            key = k;
            z
        };
        let beta: Vec<f64> = (0..features).map(|_| normal()).collect();
        let x = Array2::from_shape_fn((rows, features), |_| normal() / (features as f64).sqrt());
        let mut key = Key::new(seed).fold_in(1);
        let y = x
            .rows()
            .into_iter()
            .map(|row| {
                let eta: f64 = row.iter().zip(&beta).map(|(a, b)| a * b).sum();
                let (hit, k) = key.bernoulli(1.0 / (1.0 + (-eta).exp()));
                key = k;
                if hit {
                    1.0
                } else {
                    0.0
                }
            })
            .collect();
        LogisticRegression { x, y }
    }

    /// The features, one observation per row.
    pub fn features(&self) -> &Array2<f64> {
        &self.x
    }

    /// The outcomes, 0 or 1.
    pub fn outcomes(&self) -> &Array1<f64> {
        &self.y
    }
}

impl Target for LogisticRegression {
    fn dim(&self) -> usize {
        self.x.ncols()
    }

    fn name(&self) -> String {
        format!(
            "logistic regression, {} rows x {} features (synthetic)",
            self.x.nrows(),
            self.x.ncols()
        )
    }

    fn logp_grad(&self, q: ArrayView2<f64>) -> (Array1<f64>, Array2<f64>) {
        // eta = q X^T: [chains, rows]
        let mut eta = Array2::zeros((q.nrows(), self.x.nrows()));
        general_mat_mul(1.0, &q, &self.x.t(), 0.0, &mut eta);
        let mut logp = q.map_axis(Axis(1), |row| -0.5 * row.dot(&row));
        // residual r = y - sigmoid(eta); log-likelihood y eta - softplus(eta)
        Zip::from(&mut logp)
            .and(eta.rows_mut())
            .for_each(|lp, mut row| {
                let mut ll = 0.0;
                Zip::from(&mut row).and(&self.y).for_each(|e, &y| {
                    let softplus = e.max(0.0) + (-e.abs()).exp().ln_1p();
                    ll += y * *e - softplus;
                    *e = y - 1.0 / (1.0 + (-*e).exp());
                });
                *lp += ll;
            });
        let mut grad = q.mapv(|b| -b);
        general_mat_mul(1.0, &eta, &self.x, 1.0, &mut grad);
        (logp, grad)
    }
}

//! What the sampler samples: the [`Target`] trait and the two shipped targets.
//!
//! Autobatched code names its primitives at compile time, so the sampler calls one primitive,
//! [`logp_grad()`](super::shared::logp_grad()), and that primitive evaluates the target of the
//! run's context ([`Shared`](super::Shared)), which the runtime hands to every kernel call. A
//! user plugs in their own model by implementing [`Target`]; nothing else changes.

use autobatch_runtime::ndarray::{Array1, Array2, ArrayView2, Zip};
use autobatch_runtime::{linalg, math, Key};

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
/// gradient applied as the dense precision matrix: one `[chains, dim] x [dim, dim]` product
/// ([`linalg::rows_times`]) per batched call. Every marginal is a standard normal.
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
        // One product with the negated precision (exactly `-(q P)`: negation is exact), which
        // reads the constant matrix where it lies instead of packing it again at every call.
        let grad = linalg::rows_times(q, self.neg_precision.view())
            .expect("q has one column per row of the dim x dim precision");
        let logp = Zip::from(q.rows())
            .and(grad.rows())
            .map_collect(|q, g| 0.5 * q.dot(&g));
        (logp, grad)
    }
}

/// Bayesian logistic regression with a standard normal prior on the coefficients, on a
/// synthetic data set drawn from fixed seeds: standard normal features, true coefficients
/// drawn from the prior, Bernoulli outcomes.
///
/// The batched gradient is two matrix products over the batch (the linear predictor of every
/// chain and observation, then the gradient), both [`linalg::rows_times`] reading the features
/// where they lie (`X^T` is kept transposed for the first), and, between them, a softplus and
/// a sigmoid per chain and observation from [`autobatch_runtime::math`]: vectorised
/// polynomials within a few ulp of the standard library's `exp` and `ln_1p`, whose bits
/// depend on the element only. A product's row depends on that row alone too, so a chain's
/// draws are the same in any batch, on any thread and CPU. The elementwise speed-up owes
/// nothing to batching (a one-point gradient could run the same polynomials over the
/// observations); the products are batching's share.
#[derive(Clone, Debug)]
pub struct LogisticRegression {
    x: Array2<f64>,
    /// `X^T`, row-major: the linear predictor's product reads it where it lies.
    xt: Array2<f64>,
    y: Array1<f64>,
    /// `X^T y`, so `y . eta` is `q . xty` and the gradient's `y X` is a constant.
    xty: Array1<f64>,
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
        let xty = x.t().dot(&y);
        let xt = x.t().as_standard_layout().into_owned();
        LogisticRegression { x, xt, y, xty }
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
        // With eta = q X^T ([chains, rows]) and s = sigmoid(eta):
        //   logp = -q.q / 2 + y.eta - sum(softplus(eta)) = q.(X^T y) - q.q / 2 - sum(softplus(eta))
        //   grad = -q + (y - s) X = (X^T y - q) - s X
        // so each element of eta needs its softplus (summed) and its sigmoid (written over it),
        // both from one exp and one ln_1p (`math::softplus_sigmoid_in_place`).
        let mut eta = linalg::rows_times(q, self.xt.view())
            .expect("q has one column per row of the features x rows X^T");
        let mut softplus = vec![0.0; self.x.nrows()];
        let logp = Zip::from(q.rows())
            .and(eta.rows_mut())
            .map_collect(|q, eta| {
                let eta = eta
                    .into_slice()
                    .expect("rows of a standard-layout array are contiguous");
                math::softplus_sigmoid_in_place(eta, &mut softplus)
                    .expect("the scratch row is as long as eta's rows");
                q.dot(&self.xty) - 0.5 * q.dot(&q) - sum(&softplus)
            });
        let s_x = linalg::rows_times(eta.view(), self.x.view())
            .expect("s has one column per row of the rows x features X");
        let grad = Zip::from(&q)
            .and_broadcast(&self.xty)
            .and(&s_x)
            .map_collect(|&q, &xty, &s_x| (xty - q) - s_x);
        (logp, grad)
    }
}

/// The sum of `values` in four partial sums (element `i` goes to sum `i % 4`): the same
/// order for every chain and batch, and additions that vectorise.
fn sum(values: &[f64]) -> f64 {
    let mut sums = [0.0; 4];
    let chunks = values.chunks_exact(4);
    let rest = chunks.remainder();
    for chunk in chunks {
        for j in 0..4 {
            sums[j] += chunk[j];
        }
    }
    for (j, v) in rest.iter().enumerate() {
        sums[j] += v;
    }
    (sums[0] + sums[1]) + (sums[2] + sums[3])
}

#[cfg(test)]
mod tests {
    use super::*;
    use autobatch_runtime::ndarray::{s, Array};

    /// The log density and gradient at one point, written plainly with the standard
    /// library's `exp` and `ln_1p`, element by element.
    fn plain(target: &LogisticRegression, q: &[f64]) -> (f64, Vec<f64>) {
        let (x, y) = (target.features(), target.outcomes());
        let mut logp = -0.5 * q.iter().map(|b| b * b).sum::<f64>();
        let mut grad: Vec<f64> = q.iter().map(|b| -b).collect();
        for (row, &y) in x.rows().into_iter().zip(y) {
            let eta: f64 = row.iter().zip(q).map(|(a, b)| a * b).sum();
            logp += y * eta - (1.0 + eta.exp()).ln();
            let residual = y - 1.0 / (1.0 + (-eta).exp());
            for (g, a) in grad.iter_mut().zip(row) {
                *g += residual * a;
            }
        }
        (logp, grad)
    }

    fn points(chains: usize, dim: usize) -> Array2<f64> {
        Array::from_shape_fn((chains, dim), |(c, j)| {
            ((c * 7 + j * 3) % 11) as f64 * 0.35 - 1.75
        })
    }

    /// The batched gradient (GEMMs, polynomial softplus and sigmoid, `X^T y` folded in) is the
    /// plain one to within rounding: relative 1e-12 on the log density, and on each gradient
    /// coordinate relative to the gradient's size.
    #[test]
    fn the_batched_logistic_gradient_is_the_plain_one_within_rounding() {
        let target = LogisticRegression::synthetic(300, 7, 2);
        let q = points(9, 7);
        let (logp, grad) = target.logp_grad(q.view());
        for (c, row) in q.rows().into_iter().enumerate() {
            let (want_logp, want_grad) = plain(&target, row.as_slice().unwrap());
            assert!(
                (logp[c] - want_logp).abs() <= 1e-12 * want_logp.abs(),
                "chain {c}: logp {} vs {want_logp}",
                logp[c]
            );
            let scale = want_grad.iter().fold(1.0f64, |m, g| m.max(g.abs()));
            for (g, w) in grad.row(c).iter().zip(&want_grad) {
                assert!((g - w).abs() <= 1e-12 * scale, "chain {c}: grad {g} vs {w}");
            }
        }
    }

    /// A chain's log density and gradient have the same bits alone and in any batch.
    #[test]
    fn a_chain_alone_gets_the_bits_it_gets_in_a_batch() {
        let target = LogisticRegression::synthetic(203, 5, 4);
        let q = points(13, 5);
        let (logp, grad) = target.logp_grad(q.view());
        for c in [0, 6, 12] {
            let (alone_logp, alone_grad) = target.logp_grad(q.slice(s![c..c + 1, ..]));
            assert_eq!(alone_logp[0].to_bits(), logp[c].to_bits());
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(alone_grad.as_slice().unwrap()),
                bits(grad.row(c).to_vec().as_slice())
            );
        }
    }
}

//! MCMC diagnostics: split R-hat, rank-normalized R-hat, bulk, tail and mean effective sample
//! size, Monte Carlo standard errors of the mean and the sd, quantiles.
//!
//! Everything here follows Vehtari, Gelman, Simpson, Carpenter and Bürkner (2021),
//! "Rank-normalization, folding, and localization: an improved R-hat for assessing
//! convergence of MCMC", and reproduces ArviZ 0.22 (`az.rhat`, `az.ess`, `az.mcse`,
//! `az.summary`) to rounding error; the integration tests pin the ArviZ outputs.
//!
//! Every function takes the draws of one scalar quantity as an [`ArrayView2`] shaped
//! `[chains, draws]`. [`summarize`] computes all diagnostics of one quantity at once
//! (sharing the sort that rank normalization needs) and [`summarize_all`] does so for
//! every coordinate of a `[chains, draws, dims]` array.
//!
//! # Conventions and edge cases (the same as ArviZ)
//!
//! * **Split chains.** Each chain is cut into a first and a last half of `⌊draws/2⌋` draws;
//!   with an odd number of draws the middle draw is left out (of the diagnostics only:
//!   [`mean`] and [`sd`] use every draw).
//! * **Too few draws** (fewer than 4 per chain, or no chain at all): every diagnostic is NaN
//!   (the mean, sd and quantiles are still computed from the draws there are).
//! * **NaN anywhere in the draws**: every diagnostic is NaN.
//! * **One chain**: both R-hats are NaN (ArviZ asks for at least two chains); the ESS
//!   functions still work on the two halves of the single chain.
//! * **Constant draws** (largest minus smallest value below `1e-15`, NumPy's
//!   `finfo(float).resolution`): R-hat is NaN (0/0), an ESS is the number of split draws,
//!   `chains * 2 * ⌊draws/2⌋`, [`mcse_mean`] is 0 and [`mcse_sd`] NaN (0/0). One constant
//!   chain among varying
//!   ones is not special: the between-chain term simply sees its mean.
//! * **Infinite values**: rank-based diagnostics treat them as the largest/smallest
//!   values; the others come out NaN.
//!
//! # Cost
//!
//! The ESS autocovariances are computed with FFTs (two real chains packed into one complex
//! transform, and a single inverse transform for the mean over chains), so an ESS costs
//! `O(chains × draws × log draws)`; rank normalization adds one sort of all draws. The
//! folded ranks for the tail R-hat are derived from that same sort in linear time.

use ndarray::{ArrayView2, ArrayView3, Axis};
use rustfft::num_complex::Complex;
use rustfft::FftPlanner;

/// Below this spread (`max - min`) draws count as constant, as in ArviZ
/// (`np.finfo(float).resolution`).
const CONSTANT_SPREAD: f64 = 1e-15;

/// Fewest draws per chain for which any diagnostic is computed.
const MIN_DRAWS: usize = 4;

/// All diagnostics of one scalar quantity, as produced by [`summarize`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Mean over all chains and draws.
    pub mean: f64,
    /// Standard deviation over all chains and draws (denominator `N - 1`).
    pub sd: f64,
    /// Monte Carlo standard error of the mean, `sd / sqrt(ess_mean)`.
    pub mcse_mean: f64,
    /// Monte Carlo standard error of the sd, see [`mcse_sd`].
    pub mcse_sd: f64,
    /// Bulk effective sample size (rank-normalized split chains), see [`bulk_ess`].
    pub ess_bulk: f64,
    /// Tail effective sample size (of the 5% and 95% quantiles), see [`tail_ess`].
    pub ess_tail: f64,
    /// Effective sample size of the plain split chains, see [`ess`].
    pub ess_mean: f64,
    /// Rank-normalized split R-hat (the 2021 R-hat), see [`rank_normalized_split_rhat`].
    pub r_hat: f64,
    /// Classic split R-hat on the plain draws, see [`split_rhat`].
    pub split_r_hat: f64,
    /// The 5%, 50% and 95% quantiles of all draws, see [`quantile`].
    pub quantiles: [f64; 3],
}

/// The probabilities of [`Summary::quantiles`].
pub const SUMMARY_QUANTILES: [f64; 3] = [0.05, 0.5, 0.95];

/// Mean over all chains and draws; NaN if there are no draws.
pub fn mean(draws: ArrayView2<f64>) -> f64 {
    if draws.is_empty() {
        return f64::NAN;
    }
    draws.iter().sum::<f64>() / draws.len() as f64
}

/// Sample standard deviation over all chains and draws (denominator `N - 1`, NumPy's
/// `std(ddof=1)`); NaN with fewer than two draws.
pub fn sd(draws: ArrayView2<f64>) -> f64 {
    sd_around(draws, mean(draws))
}

/// [`sd`] given the mean.
fn sd_around(draws: ArrayView2<f64>, m: f64) -> f64 {
    let n = draws.len();
    if n < 2 {
        return f64::NAN;
    }
    let ss: f64 = draws.iter().map(|&x| (x - m) * (x - m)).sum();
    (ss / (n - 1) as f64).sqrt()
}

/// Classic split R-hat (Gelman et al., BDA3) on the plain draws: ArviZ `method="split"`.
///
/// NaN with fewer than two chains, fewer than four draws, any NaN or constant draws
/// (see the module documentation).
pub fn split_rhat(draws: ArrayView2<f64>) -> f64 {
    if !valid(draws, 2) {
        return f64::NAN;
    }
    rhat_core(&Split::new(draws))
}

/// The rank-normalized split R-hat of Vehtari et al. (2021): the larger of the split R-hat
/// of the rank-normalized draws (bulk) and of the rank-normalized draws folded around the
/// median (tail). This is what ArviZ (`method="rank"`, the default) and Stan report as R-hat;
/// values above 1.01 indicate the chains have not mixed.
///
/// NaN with fewer than two chains, fewer than four draws, any NaN or constant draws
/// (see the module documentation).
///
/// # Example
///
/// ```
/// use autobatch_examples::diagnostics::{bulk_ess, rank_normalized_split_rhat};
/// use ndarray::Array2;
///
/// // Four chains of 100 draws from the same (deterministic, well mixed) sequence ...
/// let mixed = Array2::from_shape_fn((4, 100), |(c, d)| ((c * 100 + d) as f64 * 0.618034).fract());
/// assert!(rank_normalized_split_rhat(mixed.view()) < 1.05);
/// assert!(bulk_ess(mixed.view()) > 100.0);
///
/// // ... and four chains stuck in different places.
/// let stuck = Array2::from_shape_fn((4, 100), |(c, d)| c as f64 + (d as f64 * 0.618034).fract());
/// assert!(rank_normalized_split_rhat(stuck.view()) > 1.5);
/// ```
pub fn rank_normalized_split_rhat(draws: ArrayView2<f64>) -> f64 {
    if !valid(draws, 2) {
        return f64::NAN;
    }
    let split = Split::new(draws);
    let order = sorted_order(&split.values);
    rank_rhat_from_order(&split, &order)
}

/// Bulk effective sample size: the ESS of the rank-normalized split chains (Vehtari et al.
/// 2021), ArviZ `ess(method="bulk")`. It measures how well the centre of the distribution
/// is explored and is defined even without finite moments.
///
/// NaN with fewer than four draws or any NaN draw; the number of split draws for constant
/// draws (see the module documentation).
pub fn bulk_ess(draws: ArrayView2<f64>) -> f64 {
    if !valid(draws, 1) {
        return f64::NAN;
    }
    let split = Split::new(draws);
    let order = sorted_order(&split.values);
    let z = RankNormalizer::new(split.values.len()).z_scores(&order);
    ess_core(&split.with_values(z))
}

/// Effective sample size of the plain (not rank-normalized) split chains, the ESS for the
/// mean: ArviZ `ess(method="mean")`. Autocorrelations come from FFT autocovariances
/// combined across chains as in Stan, truncated by Geyer's initial positive sequence and
/// made monotone by Geyer's initial monotone sequence.
///
/// NaN with fewer than four draws or any NaN draw; the number of split draws for constant
/// draws (see the module documentation).
pub fn ess(draws: ArrayView2<f64>) -> f64 {
    if !valid(draws, 1) {
        return f64::NAN;
    }
    ess_core(&Split::new(draws))
}

/// Monte Carlo standard error of the mean, `sd / sqrt(ess)` with [`sd`] and [`ess`]
/// (ArviZ `mcse(method="mean")`). NaN where [`ess`] is; 0 for constant draws.
pub fn mcse_mean(draws: ArrayView2<f64>) -> f64 {
    if !valid(draws, 1) {
        return f64::NAN;
    }
    sd(draws) / ess(draws).sqrt()
}

/// Tail effective sample size: the smaller ESS of the indicators `x <= q05` and `x <= q95`
/// (the 5% and 95% [`quantile`]s of all draws) on split chains (Vehtari et al. 2021), ArviZ
/// `ess(method="tail")`. It measures how well the tails are explored, which is what the
/// 5% / 95% quantiles and intervals rest on; it can be much lower than [`bulk_ess`].
///
/// NaN with fewer than four draws or any NaN draw (see the module documentation).
pub fn tail_ess(draws: ArrayView2<f64>) -> f64 {
    if !valid(draws, 1) {
        return f64::NAN;
    }
    let draws = draws.as_standard_layout();
    let sorted = sorted_values(draws.as_slice().expect("standard layout"));
    tail_ess_core(&Split::new(draws.view()), &sorted)
}

/// Monte Carlo standard error of the standard deviation, ArviZ `mcse(method="sd")`: from the
/// squared deviations `s = (x - mean)^2`, `sqrt(((mean(s^2) - mean(s)^2) / ess(s)) / mean(s) / 4)`
/// with [`ess`] of `s` (the delta method). NaN where [`ess`] is, and for constant draws.
pub fn mcse_sd(draws: ArrayView2<f64>) -> f64 {
    if !valid(draws, 1) {
        return f64::NAN;
    }
    mcse_sd_around(draws, mean(draws))
}

/// The `p`-quantile of all draws by linear interpolation between order statistics (R's type 7,
/// NumPy's default, the one ArviZ uses); NaN without draws, with any NaN draw, or for `p`
/// outside `[0, 1]`.
pub fn quantile(draws: ArrayView2<f64>, p: f64) -> f64 {
    if draws.is_empty() || draws.iter().any(|x| x.is_nan()) {
        return f64::NAN;
    }
    quantile_of_sorted(
        &sorted_values(&draws.iter().copied().collect::<Vec<_>>()),
        p,
    )
}

/// Every diagnostic of one scalar quantity (`[chains, draws]`), sharing the work between
/// them: one sort of the draws serves both R-hats and the bulk ESS.
///
/// Edge cases give the documented values of each function (see the module documentation).
pub fn summarize(draws: ArrayView2<f64>) -> Summary {
    // One gather of a strided coordinate (e.g. of a `[chains, draws, dims]` array) instead
    // of several strided passes.
    let draws = draws.as_standard_layout();
    let draws = draws.view();
    let mean = mean(draws);
    let sd = sd_around(draws, mean);
    let mut out = Summary {
        mean,
        sd,
        mcse_mean: f64::NAN,
        mcse_sd: f64::NAN,
        ess_bulk: f64::NAN,
        ess_tail: f64::NAN,
        ess_mean: f64::NAN,
        r_hat: f64::NAN,
        split_r_hat: f64::NAN,
        quantiles: [f64::NAN; 3],
    };
    if draws.is_empty() || draws.iter().any(|x| x.is_nan()) {
        return out;
    }
    let all = draws.as_slice().expect("standard layout");
    if !valid(draws, 1) {
        let sorted = sorted_values(all);
        out.quantiles = SUMMARY_QUANTILES.map(|p| quantile_of_sorted(&sorted, p));
        return out;
    }
    let split = Split::new(draws);
    out.ess_mean = ess_core(&split);
    out.mcse_mean = sd / out.ess_mean.sqrt();
    out.mcse_sd = mcse_sd_around(draws, mean);
    let order = sorted_order(&split.values);
    // With an even number of draws per chain the split chains hold every draw, so their sort
    // is the sort of all draws; otherwise the middle draws need their own.
    let sorted: Vec<f64> = if split.values.len() == all.len() {
        order.iter().map(|&(v, _)| v).collect()
    } else {
        sorted_values(all)
    };
    out.quantiles = SUMMARY_QUANTILES.map(|p| quantile_of_sorted(&sorted, p));
    out.ess_tail = tail_ess_core(&split, &sorted);
    let mut normalizer = RankNormalizer::new(split.values.len());
    let z_split = split.with_values(normalizer.z_scores(&order));
    out.ess_bulk = ess_core(&z_split);
    if split.chains >= 4 {
        // At least two original chains.
        out.split_r_hat = rhat_core(&split);
        let bulk = rhat_core(&z_split);
        let tail = rhat_core(&split.with_values(folded_z_scores(&order, &mut normalizer)));
        out.r_hat = python_max(bulk, tail);
    }
    out
}

/// [`summarize`] for every coordinate of draws shaped `[chains, draws, dims]`; the result
/// has one [`Summary`] per coordinate, in order.
///
/// The coordinates are independent, so they are spread over up to
/// [`std::thread::available_parallelism`] scoped threads (each coordinate of 1,000 chains ×
/// 1,000 draws takes about 0.1 s on one core); the result does not depend on the number of
/// threads.
pub fn summarize_all(draws: ArrayView3<f64>) -> Vec<Summary> {
    let dims = draws.len_of(Axis(2));
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(dims)
        .max(1);
    if threads == 1 {
        return draws.axis_iter(Axis(2)).map(summarize).collect();
    }
    let mut out = vec![None; dims];
    let per_thread = dims.div_ceil(threads);
    std::thread::scope(|scope| {
        for (t, chunk) in out.chunks_mut(per_thread).enumerate() {
            scope.spawn(move || {
                for (k, slot) in chunk.iter_mut().enumerate() {
                    *slot = Some(summarize(draws.index_axis(Axis(2), t * per_thread + k)));
                }
            });
        }
    });
    out.into_iter()
        .map(|s| s.expect("every coordinate is summarised"))
        .collect()
}

/// The inverse of the standard normal CDF, Φ⁻¹(p), by Wichura's algorithm AS 241 (PPND16,
/// about 16 correct digits). Returns -∞ at 0, +∞ at 1 and NaN outside `[0, 1]`.
// The coefficients are kept digit for digit as published, so they can be checked against
// the paper; the digits past double precision are harmless.
#[allow(clippy::excessive_precision)]
pub fn normal_quantile(p: f64) -> f64 {
    if p.is_nan() || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    let q = p - 0.5;
    if q.abs() <= 0.425 {
        let r = 0.180625 - q * q;
        let num = (((((((2.509_080_928_730_122_672_7e3 * r + 3.343_057_558_358_812_810_5e4)
            * r
            + 6.726_577_092_700_870_085_3e4)
            * r
            + 4.592_195_393_154_987_145_7e4)
            * r
            + 1.373_169_376_550_946_112_5e4)
            * r
            + 1.971_590_950_306_551_442_7e3)
            * r
            + 1.331_416_678_917_843_774_5e2)
            * r
            + 3.387_132_872_796_366_608_0)
            * q;
        let den = ((((((5.226_495_278_852_854_561_0e3 * r + 2.872_908_573_572_194_267_4e4) * r
            + 3.930_789_580_009_271_061_0e4)
            * r
            + 2.121_379_430_158_659_586_7e4)
            * r
            + 5.394_196_021_424_751_107_7e3)
            * r
            + 6.871_870_074_920_579_083_0e2)
            * r
            + 4.231_333_070_160_091_125_2e1)
            * r
            + 1.0;
        return num / den;
    }
    let mut r = if q <= 0.0 { p } else { 1.0 - p };
    r = (-r.ln()).sqrt();
    let x = if r <= 5.0 {
        r -= 1.6;
        let num = ((((((7.745_450_142_783_414_076_4e-4 * r + 2.272_384_498_926_918_458_33e-2)
            * r
            + 2.417_807_251_774_506_117_7e-1)
            * r
            + 1.270_458_252_452_368_382_58)
            * r
            + 3.647_848_324_763_204_605_04)
            * r
            + 5.769_497_221_460_691_405_5)
            * r
            + 4.630_337_846_156_545_295_9)
            * r
            + 1.423_437_110_749_683_577_34;
        let den = ((((((1.050_750_071_644_416_843_24e-9 * r + 5.475_938_084_995_344_946e-4)
            * r
            + 1.519_866_656_361_645_719_66e-2)
            * r
            + 1.481_039_764_274_800_745_9e-1)
            * r
            + 6.897_673_349_851_000_045_5e-1)
            * r
            + 1.676_384_830_183_803_849_4)
            * r
            + 2.053_191_626_637_758_821_87)
            * r
            + 1.0;
        num / den
    } else {
        r -= 5.0;
        let num = ((((((2.010_334_399_292_288_132_65e-7 * r + 2.711_555_568_743_487_578_15e-5)
            * r
            + 1.242_660_947_388_078_438_6e-3)
            * r
            + 2.653_218_952_657_612_309_3e-2)
            * r
            + 2.965_605_718_285_048_912_3e-1)
            * r
            + 1.784_826_539_917_291_335_8)
            * r
            + 5.463_784_911_164_114_369_9)
            * r
            + 6.657_904_643_501_103_777_2;
        let den = ((((((2.044_263_103_389_939_785_64e-15 * r + 1.421_511_758_316_445_888_7e-7)
            * r
            + 1.846_318_317_510_054_681_8e-5)
            * r
            + 7.868_691_311_456_132_591e-4)
            * r
            + 1.487_536_129_085_061_485_25e-2)
            * r
            + 1.369_298_809_227_358_053_1e-1)
            * r
            + 5.998_322_065_558_879_376_9e-1)
            * r
            + 1.0;
        num / den
    };
    if q < 0.0 {
        -x
    } else {
        x
    }
}

/// ArviZ's validity check: at least `min_chains` chains, at least four draws, no NaN.
fn valid(draws: ArrayView2<f64>, min_chains: usize) -> bool {
    let (chains, n) = draws.dim();
    chains >= min_chains.max(1) && n >= MIN_DRAWS && !draws.iter().any(|x| x.is_nan())
}

/// Python's built-in `max(a, b)`: `a` unless `b > a` (so a NaN `a` wins), which is how
/// ArviZ combines the bulk and tail R-hats.
fn python_max(a: f64, b: f64) -> f64 {
    if b > a {
        b
    } else {
        a
    }
}

/// [`mcse_sd`] given the mean, for valid draws.
fn mcse_sd_around(draws: ArrayView2<f64>, m: f64) -> f64 {
    let squares = draws.mapv(|x| (x - m) * (x - m));
    let ess = ess_core(&Split::new(squares.view()));
    let n = squares.len() as f64;
    let evar = squares.sum() / n;
    let varvar = (squares.iter().map(|s| s * s).sum::<f64>() / n - evar * evar) / ess;
    (varvar / evar / 4.0).sqrt()
}

/// [`tail_ess`] from the split chains and all draws in ascending order: Python's
/// `min(ess(x <= q05), ess(x <= q95))`.
fn tail_ess_core(split: &Split, sorted: &[f64]) -> f64 {
    let indicator_ess = |p: f64| {
        let q = quantile_of_sorted(sorted, p);
        let hits = split
            .values
            .iter()
            .map(|&x| if x <= q { 1.0 } else { 0.0 })
            .collect();
        ess_core(&split.with_values(hits))
    };
    let (low, high) = (indicator_ess(0.05), indicator_ess(0.95));
    if high < low {
        high
    } else {
        low
    }
}

/// The `p`-quantile of values in ascending order (not empty, no NaN), as SciPy's
/// `mquantiles(alphap=1, betap=1)` (R's type 7) computes it, which ArviZ uses.
fn quantile_of_sorted(sorted: &[f64], p: f64) -> f64 {
    if !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    let n = sorted.len();
    if n == 1 {
        return sorted[0];
    }
    let aleph = n as f64 * p + (1.0 - p);
    let k = aleph.clamp(1.0, (n - 1) as f64).floor();
    let gamma = (aleph - k).clamp(0.0, 1.0);
    let k = k as usize;
    (1.0 - gamma) * sorted[k - 1] + gamma * sorted[k]
}

/// The values in ascending order (NaN must have been excluded).
fn sorted_values(values: &[f64]) -> Vec<f64> {
    sorted_order(values).into_iter().map(|(v, _)| v).collect()
}

/// Split chains stored row-major as `[chains, len]`: the first halves of the original
/// chains, then their last halves (ArviZ's `_split_chains` order).
struct Split {
    values: Vec<f64>,
    chains: usize,
    len: usize,
}

impl Split {
    fn new(draws: ArrayView2<f64>) -> Self {
        let (chains, n) = draws.dim();
        let half = n / 2;
        let mut values = Vec::with_capacity(2 * chains * half);
        for row in draws.outer_iter() {
            values.extend(row.iter().take(half));
        }
        for row in draws.outer_iter() {
            values.extend(row.iter().skip(n - half));
        }
        Split {
            values,
            chains: 2 * chains,
            len: half,
        }
    }

    fn with_values(&self, values: Vec<f64>) -> Self {
        debug_assert_eq!(values.len(), self.values.len());
        Split {
            values,
            chains: self.chains,
            len: self.len,
        }
    }

    fn chain(&self, c: usize) -> &[f64] {
        &self.values[c * self.len..(c + 1) * self.len]
    }
}

/// The values (with their positions) in ascending order. NaN must have been excluded.
fn sorted_order(values: &[f64]) -> Vec<(f64, u32)> {
    // Sorting by an unsigned integer key that orders like `f64::total_cmp` is markedly
    // faster than comparing floats.
    const SIGN: u64 = 1 << 63;
    let mut keyed: Vec<(u64, u32)> = values
        .iter()
        .zip(0u32..)
        .map(|(&v, i)| {
            let bits = v.to_bits();
            (if bits & SIGN != 0 { !bits } else { bits | SIGN }, i)
        })
        .collect();
    keyed.sort_unstable_by_key(|&(key, _)| key);
    keyed
        .into_iter()
        .map(|(key, i)| {
            let bits = if key & SIGN != 0 { key & !SIGN } else { !key };
            (f64::from_bits(bits), i)
        })
        .collect()
}

/// Rank normalization of `size` values: `z = Φ⁻¹((r - 3/8) / (S + 1/4))` (Blom) for a rank
/// `r`. The quantiles of untied ranks are cached, so that the bulk and the folded ranking
/// of one quantity evaluate Φ⁻¹ once per rank between them.
struct RankNormalizer {
    denominator: f64,
    untied: Vec<f64>,
}

impl RankNormalizer {
    fn new(size: usize) -> Self {
        RankNormalizer {
            denominator: size as f64 - 2.0 * 0.375 + 1.0,
            untied: vec![f64::NAN; size],
        }
    }

    /// Rank-normalized values from values in ascending order, with average ranks for ties
    /// (SciPy `rankdata(method="average")`).
    fn z_scores(&mut self, sorted: &[(f64, u32)]) -> Vec<f64> {
        let mut z = vec![0.0; sorted.len()];
        let mut start = 0;
        while start < sorted.len() {
            let mut end = start + 1;
            while end < sorted.len() && sorted[end].0 == sorted[start].0 {
                end += 1;
            }
            // Ranks start+1 ..= end share their average.
            let value = if end == start + 1 {
                let cached = &mut self.untied[start];
                if cached.is_nan() {
                    *cached = normal_quantile(((start + 1) as f64 - 0.375) / self.denominator);
                }
                *cached
            } else {
                let rank = 0.5 * ((start + 1 + end) as f64);
                normal_quantile((rank - 0.375) / self.denominator)
            };
            for &(_, i) in &sorted[start..end] {
                z[i as usize] = value;
            }
            start = end;
        }
        z
    }
}

/// Rank-normalized values of the draws folded around their median, `|x - median|`, from the
/// draws in ascending order. The folded values are put in order by merging the part above
/// the median (ascending) with the part below it (read backwards), in linear time.
fn folded_z_scores(sorted: &[(f64, u32)], normalizer: &mut RankNormalizer) -> Vec<f64> {
    let s = sorted.len();
    let median = if s % 2 == 1 {
        sorted[s / 2].0
    } else {
        (sorted[s / 2 - 1].0 + sorted[s / 2].0) / 2.0
    };
    let split_at = sorted.partition_point(|&(v, _)| v < median);
    let mut folded = Vec::with_capacity(s);
    let (mut lo, mut hi) = (split_at, split_at);
    while lo > 0 || hi < s {
        let below = (lo > 0).then(|| ((sorted[lo - 1].0 - median).abs(), sorted[lo - 1].1));
        let above = (hi < s).then(|| ((sorted[hi].0 - median).abs(), sorted[hi].1));
        match (below, above) {
            (Some(b), Some(a)) if b.0 < a.0 => {
                folded.push(b);
                lo -= 1;
            }
            (_, Some(a)) => {
                folded.push(a);
                hi += 1;
            }
            (Some(b), None) => {
                folded.push(b);
                lo -= 1;
            }
            (None, None) => unreachable!(),
        }
    }
    normalizer.z_scores(&folded)
}

/// Bulk and tail rank-normalized R-hat from the split draws and their sorted order.
fn rank_rhat_from_order(split: &Split, order: &[(f64, u32)]) -> f64 {
    let mut normalizer = RankNormalizer::new(split.values.len());
    let bulk = rhat_core(&split.with_values(normalizer.z_scores(order)));
    let tail = rhat_core(&split.with_values(folded_z_scores(order, &mut normalizer)));
    python_max(bulk, tail)
}

/// Mean and sample variance (denominator `n - 1`) of a slice, two-pass.
fn mean_and_variance(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let ss: f64 = xs.iter().map(|&x| (x - m) * (x - m)).sum();
    (m, ss / (n - 1.0))
}

/// R-hat of already split chains (ArviZ `_rhat`): `sqrt((B/W + n - 1) / n)` with
/// `B = n var(chain means)` and `W = mean(chain variances)`.
fn rhat_core(split: &Split) -> f64 {
    let n = split.len as f64;
    let mut means = Vec::with_capacity(split.chains);
    let mut within = 0.0;
    for c in 0..split.chains {
        let (m, v) = mean_and_variance(split.chain(c));
        means.push(m);
        within += v;
    }
    within /= split.chains as f64;
    let between = n * mean_and_variance(&means).1;
    ((between / within + n - 1.0) / n).sqrt()
}

/// Autocovariances `(1/n) Σ_i d_i d_{i+t}` (d = chain minus its mean) for lags
/// `0..n`, averaged over the chains, by FFT.
fn mean_autocovariance(split: &Split) -> Vec<f64> {
    let n = split.len;
    let size = (2 * n).next_power_of_two();
    let mut planner = FftPlanner::<f64>::new();
    let forward = planner.plan_fft_forward(size);
    let inverse = planner.plan_fft_inverse(size);
    let mut scratch = vec![
        Complex::default();
        forward
            .get_inplace_scratch_len()
            .max(inverse.get_inplace_scratch_len())
    ];
    let mut buffer = vec![Complex::default(); size];
    // Σ_c |X_c(k)|², accumulated two chains per transform: with z = x + i y,
    // |X(k)|² + |Y(k)|² = (|Z(k)|² + |Z(-k)|²) / 2.
    let mut power = vec![0.0f64; size];
    let mut c = 0;
    while c < split.chains {
        buffer.fill(Complex::default());
        let x = split.chain(c);
        let mx = x.iter().sum::<f64>() / n as f64;
        for (b, &v) in buffer.iter_mut().zip(x) {
            b.re = v - mx;
        }
        if c + 1 < split.chains {
            let y = split.chain(c + 1);
            let my = y.iter().sum::<f64>() / n as f64;
            for (b, &v) in buffer.iter_mut().zip(y) {
                b.im = v - my;
            }
        }
        forward.process_with_scratch(&mut buffer, &mut scratch);
        for k in 0..size {
            let mirror = (size - k) % size;
            power[k] += 0.5 * (buffer[k].norm_sqr() + buffer[mirror].norm_sqr());
        }
        c += 2;
    }
    for (b, &p) in buffer.iter_mut().zip(&power) {
        *b = Complex::new(p, 0.0);
    }
    inverse.process_with_scratch(&mut buffer, &mut scratch);
    let scale = 1.0 / (size as f64 * n as f64 * split.chains as f64);
    buffer[..n].iter().map(|b| b.re * scale).collect()
}

/// ESS of already split chains (ArviZ `_ess`, Stan's `ess`): Geyer's initial positive
/// sequence truncates the combined autocorrelations, his initial monotone sequence
/// smooths them.
fn ess_core(split: &Split) -> f64 {
    let (m, n) = (split.chains, split.len);
    let total = (m * n) as f64;
    let (lo, hi) = split
        .values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    if hi - lo < CONSTANT_SPREAD {
        return total;
    }
    let acov = mean_autocovariance(split);
    let nf = n as f64;
    let chain_means: Vec<f64> = (0..m)
        .map(|c| split.chain(c).iter().sum::<f64>() / nf)
        .collect();
    let mean_var = acov[0] * nf / (nf - 1.0);
    let mut var_plus = mean_var * (nf - 1.0) / nf;
    if m > 1 {
        var_plus += mean_and_variance(&chain_means).1;
    }
    let rho = |t: usize| 1.0 - (mean_var - acov[t]) / var_plus;

    let mut rho_hat = vec![0.0; n];
    let mut rho_even = 1.0;
    rho_hat[0] = rho_even;
    let mut rho_odd = rho(1);
    rho_hat[1] = rho_odd;

    // Geyer's initial positive sequence.
    let mut t: usize = 1;
    while t + 3 < n && rho_even + rho_odd > 0.0 {
        rho_even = rho(t + 1);
        rho_odd = rho(t + 2);
        if rho_even + rho_odd >= 0.0 {
            rho_hat[t + 1] = rho_even;
            rho_hat[t + 2] = rho_odd;
        }
        t += 2;
    }
    // `max_t = t - 2` may be -1; keep `max_t + 1` instead.
    let max_t_plus_1 = t - 1;
    if rho_even > 0.0 {
        rho_hat[max_t_plus_1] = rho_even;
    }
    // Geyer's initial monotone sequence.
    let mut t = 1;
    while t + 3 <= max_t_plus_1 {
        if rho_hat[t + 1] + rho_hat[t + 2] > rho_hat[t - 1] + rho_hat[t] {
            rho_hat[t + 1] = (rho_hat[t - 1] + rho_hat[t]) / 2.0;
            rho_hat[t + 2] = rho_hat[t + 1];
        }
        t += 2;
    }
    let tau = -1.0 + 2.0 * rho_hat[..max_t_plus_1].iter().sum::<f64>() + rho_hat[max_t_plus_1];
    if tau.is_nan() || rho_hat.iter().any(|r| r.is_nan()) {
        return f64::NAN;
    }
    let tau = tau.max(1.0 / total.log10());
    total / tau
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    #[test]
    fn normal_quantile_matches_scipy() {
        // scipy.stats.norm.ppf, SciPy 1.17.1.
        let known = [
            (1e-300, -37.0470962993612),
            (1e-20, -9.262340089798409),
            (1e-10, -6.361340902404056),
            (0.001, -3.090232306167813),
            (0.02425, -1.972961051311885),
            (0.1, -1.2815515655446004),
            (0.3, -0.5244005127080409),
            (0.6, 0.2533471031357997),
            (0.975, 1.959963984540054),
            (0.97575, 1.972961051311885),
            (0.999, 3.090232306167813),
            (0.999999999999, 7.0344869100478356),
        ];
        for (p, x) in known {
            let got = normal_quantile(p);
            assert!(
                ((got - x) / x).abs() < 1e-14,
                "p = {p}: got {got}, want {x}"
            );
        }
        assert_eq!(normal_quantile(0.5), 0.0);
        assert_eq!(normal_quantile(0.0), f64::NEG_INFINITY);
        assert_eq!(normal_quantile(1.0), f64::INFINITY);
        assert!(normal_quantile(1.5).is_nan());
        assert!(normal_quantile(-0.1).is_nan());
        assert!(normal_quantile(f64::NAN).is_nan());
    }

    #[test]
    fn normal_quantile_is_odd_and_monotone() {
        let mut last = f64::NEG_INFINITY;
        for i in 1..2000 {
            let p = i as f64 / 2000.0;
            let x = normal_quantile(p);
            assert!(x > last);
            last = x;
            assert!((x + normal_quantile(1.0 - p)).abs() < 1e-12);
        }
    }

    #[test]
    fn average_ranks_for_ties() {
        // Values 3, 1, 3, 2, 1: ranks 4.5, 1.5, 4.5, 3, 1.5.
        let values = [3.0, 1.0, 3.0, 2.0, 1.0];
        let z = RankNormalizer::new(values.len()).z_scores(&sorted_order(&values));
        let expect = |r: f64| normal_quantile((r - 0.375) / 5.25);
        assert_eq!(
            z,
            vec![
                expect(4.5),
                expect(1.5),
                expect(4.5),
                expect(3.0),
                expect(1.5)
            ]
        );
        // -0.0 and 0.0 tie.
        let z = RankNormalizer::new(2).z_scores(&sorted_order(&[0.0, -0.0]));
        assert_eq!(z[0], z[1]);
    }

    #[test]
    fn sorted_order_matches_total_cmp() {
        let mut state = 99u64;
        let mut values: Vec<f64> = (0..5000)
            .map(|i| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let u = (state >> 11) as f64 / 9007199254740992.0;
                match i % 7 {
                    0 => (u * 10.0).floor() - 5.0, // ties
                    1 => -u * 1e300,
                    2 => u * 1e-300,
                    _ => (u - 0.5) * 3.0,
                }
            })
            .collect();
        values.extend([
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
        ]);
        let fast: Vec<f64> = sorted_order(&values).iter().map(|p| p.0).collect();
        let mut slow = values.clone();
        slow.sort_by(f64::total_cmp);
        assert_eq!(
            fast.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            slow.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        // Positions travel with their values.
        for (v, i) in sorted_order(&values) {
            assert_eq!(v.to_bits(), values[i as usize].to_bits());
        }
    }

    #[test]
    fn folded_order_matches_sorting_the_folded_values() {
        let mut state = 12345u64;
        for size in [1usize, 2, 5, 8, 33, 100] {
            let values: Vec<f64> = (0..size)
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    // Few distinct values, so plenty of ties on both sides of the median.
                    ((state >> 60) as f64) - 7.0
                })
                .collect();
            let order = sorted_order(&values);
            let fast = folded_z_scores(&order, &mut RankNormalizer::new(size));
            let mut sorted: Vec<f64> = values.clone();
            sorted.sort_by(f64::total_cmp);
            let median = if size % 2 == 1 {
                sorted[size / 2]
            } else {
                (sorted[size / 2 - 1] + sorted[size / 2]) / 2.0
            };
            let folded: Vec<f64> = values.iter().map(|v| (v - median).abs()).collect();
            let slow = RankNormalizer::new(size).z_scores(&sorted_order(&folded));
            assert_eq!(fast, slow, "size {size}");
        }
    }

    #[test]
    fn fft_autocovariance_matches_direct_sum() {
        for (chains, n) in [(1usize, 5usize), (3, 17), (4, 64), (5, 100)] {
            let draws = Array2::from_shape_fn((chains, 2 * n), |(c, d)| {
                ((c * 7919 + d * d * 31) % 97) as f64 * 0.1 + (d as f64 * 0.3).sin()
            });
            let split = Split::new(draws.view());
            let fast = mean_autocovariance(&split);
            for (t, &f) in fast.iter().enumerate() {
                let mut direct = 0.0;
                for c in 0..split.chains {
                    let x = split.chain(c);
                    let m = x.iter().sum::<f64>() / n as f64;
                    for i in 0..n - t {
                        direct += (x[i] - m) * (x[i + t] - m);
                    }
                }
                direct /= (n * split.chains) as f64;
                assert!((f - direct).abs() < 1e-12, "lag {t}: {f} vs {direct}");
            }
        }
    }

    #[test]
    fn summary_agrees_with_the_single_functions() {
        let draws = Array2::from_shape_fn((3, 41), |(c, d)| {
            ((c * 31 + d * 17) % 23) as f64 + 0.01 * d as f64
        });
        let s = summarize(draws.view());
        assert_eq!(s.mean, mean(draws.view()));
        assert_eq!(s.sd, sd(draws.view()));
        assert_eq!(s.ess_mean, ess(draws.view()));
        assert_eq!(s.ess_bulk, bulk_ess(draws.view()));
        assert_eq!(s.mcse_mean, mcse_mean(draws.view()));
        assert_eq!(s.r_hat, rank_normalized_split_rhat(draws.view()));
        assert_eq!(s.split_r_hat, split_rhat(draws.view()));
        assert_eq!(s.ess_tail, tail_ess(draws.view()));
        assert_eq!(s.mcse_sd, mcse_sd(draws.view()));
        for (q, p) in s.quantiles.iter().zip(SUMMARY_QUANTILES) {
            assert_eq!(*q, quantile(draws.view(), p));
        }
    }

    #[test]
    fn quantiles_interpolate_between_order_statistics() {
        let sorted = [1.0, 2.0, 4.0, 8.0, 16.0];
        assert_eq!(quantile_of_sorted(&sorted, 0.0), 1.0);
        assert_eq!(quantile_of_sorted(&sorted, 0.5), 4.0);
        assert_eq!(quantile_of_sorted(&sorted, 1.0), 16.0);
        // (n - 1) p = 0.2: a fifth of the way from 1 to 2; 3.6: from 8 towards 16.
        assert!((quantile_of_sorted(&sorted, 0.05) - 1.2).abs() < 1e-15);
        assert!((quantile_of_sorted(&sorted, 0.9) - 12.8).abs() < 1e-12);
        assert_eq!(quantile_of_sorted(&[3.0], 0.95), 3.0);
        assert!(quantile_of_sorted(&sorted, 1.5).is_nan());
    }
}

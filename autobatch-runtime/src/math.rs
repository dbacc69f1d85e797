//! Batched elementary functions for log densities: `exp`, `ln_1p` and the logistic pair
//! (softplus and sigmoid), slice in and slice out, with the same bits for every element
//! wherever and however it is computed.
//!
//! A batched density (a logistic regression's likelihood over every chain and every
//! observation, say) spends most of its time in `exp` and `ln_1p`. The standard library's are
//! calls into the C library, one element at a time, which no compiler can turn into vector
//! instructions. The functions here are branch-free polynomials in plain `f64` arithmetic,
//! so a loop over a slice runs eight elements per instruction on AVX-512 and four on AVX2
//! (chosen at run time: a portable build still uses them where the CPU has them).
//!
//! # The same bits everywhere
//!
//! Each element goes through the same sequence of IEEE operations, none fused (no
//! `mul_add`: Rust never contracts a multiply and an add by itself) and none reordered, so its
//! result depends on its value only: not on its position in the slice, the slice's length,
//! the thread, or which vector instructions the CPU has. The scalar forms in [`scalar`] give
//! the same bits as the slice forms, so a [`#[primitive]`](macro@crate::primitive)'s scalar
//! form can use them and still agree bit for bit with its batched form.
//!
//! # Accuracy
//!
//! Within 1 ulp of the standard library's `f64::exp` and `f64::ln_1p` on the whole range
//! (the tests compare millions of points, subnormal results, overflow and underflow
//! thresholds included); softplus within 2 ulp and sigmoid within 3 ulp of the same formulas
//! written with the standard library (which round several times themselves). `NaN` in gives
//! `NaN` out; infinities and the limits of the range give what the standard library gives
//! (`exp(710.0)` is infinite, `exp(-746.0)` is 0, `ln_1p(-1.0)` is minus infinity, `ln_1p`
//! below -1 is `NaN`).
//!
//! # Where the gain comes from
//!
//! Nothing here needs a batch: a sampler evaluating one point at a time can run these same
//! functions over the observations of its one point and gets the same kind of speed-up over
//! the standard library. Batching adds what only a batch has (matrix products instead of
//! matrix-vector products, one call for every chain).
//!
//! ```
//! use autobatch_runtime::math;
//!
//! let x = [-2.0, 0.0, 0.5, 700.0];
//! let mut out = [0.0; 4];
//! math::exp(&x, &mut out)?;
//! assert_eq!(out[1], 1.0);
//! for (x, e) in x.iter().zip(&out) {
//!     assert!((e - x.exp()).abs() <= 2.0 * f64::EPSILON * x.exp());
//!     // The scalar form gives the slice form's bits.
//!     assert_eq!(e.to_bits(), math::scalar::exp(*x).to_bits());
//! }
//!
//! // The logistic pair: softplus(x) = ln(1 + e^x) and sigmoid(x) = 1 / (1 + e^-x), from
//! // one `exp` and one `ln_1p` per element.
//! let (mut softplus, mut sigmoid) = ([0.0; 4], [0.0; 4]);
//! math::softplus_sigmoid(&x, &mut softplus, &mut sigmoid)?;
//! assert_eq!(softplus[3], 700.0);
//! assert_eq!(sigmoid[1], 0.5);
//! # Ok::<(), math::LengthMismatch>(())
//! ```

/// Runs `f` compiled for AVX-512 where the CPU has it (eight elements per instruction, 32
/// vector registers), else for AVX2 and FMA where it has those (`crate::codegen::with_avx2`), else for the
/// baseline. Mark `f` `#[inline(always)]` so it is compiled into each variant.
#[inline(always)]
fn simd(f: impl FnOnce()) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the feature `avx512` is compiled for (just checked).
            return unsafe { avx512(f) };
        }
    }
    avx2(f)
}

/// Runs `f` compiled for AVX2 and FMA where the CPU has them, else for the baseline.
#[inline(always)]
fn avx2(f: impl FnOnce()) {
    use crate::codegen::{cpu, with_avx2, Cpu};
    match cpu() {
        Cpu::Avx2Fma(cpu) => with_avx2(
            cpu,
            #[inline(always)]
            |_| f(),
        ),
        Cpu::Portable(_) => f(),
    }
}

/// `f()`, with `f` inlined into code compiled for AVX-512.
///
/// # Safety
/// The CPU must have the `avx512f` feature.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn avx512(f: impl FnOnce()) {
    f()
}

/// A slice function was handed an output slice whose length is not its input's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the output `{output}` holds {got} values but the input holds {expected}: \
     pass one output value per input value"
)]
pub struct LengthMismatch {
    /// The output's name, as the function's parameter.
    pub output: &'static str,
    /// Its length.
    pub got: usize,
    /// The input's length.
    pub expected: usize,
}

/// Checks that `out` (named `name`) is as long as the input.
fn check(name: &'static str, out: &[f64], expected: usize) -> Result<(), LengthMismatch> {
    if out.len() == expected {
        Ok(())
    } else {
        Err(LengthMismatch {
            output: name,
            got: out.len(),
            expected,
        })
    }
}

/// `out[i] = e^x[i]`, for every `i`; the bits of [`scalar::exp`].
pub fn exp(x: &[f64], out: &mut [f64]) -> Result<(), LengthMismatch> {
    check("out", out, x.len())?;
    simd(
        #[inline(always)]
        || exp_loop(x, out),
    );
    Ok(())
}

/// `out[i] = ln(1 + x[i])`, for every `i`; the bits of [`scalar::ln_1p`].
pub fn ln_1p(x: &[f64], out: &mut [f64]) -> Result<(), LengthMismatch> {
    check("out", out, x.len())?;
    simd(
        #[inline(always)]
        || ln_1p_loop(x, out),
    );
    Ok(())
}

/// `softplus[i] = ln(1 + e^x[i])` and `sigmoid[i] = 1 / (1 + e^-x[i])`, for every `i`; the
/// bits of [`scalar::softplus_sigmoid`]. One `exp` and one `ln_1p` per element give both:
/// with `t = e^-|x|`, softplus is `max(x, 0) + ln_1p(t)` and sigmoid is `1 / (1 + t)` for
/// `x >= 0`, `t / (1 + t)` below.
pub fn softplus_sigmoid(
    x: &[f64],
    softplus: &mut [f64],
    sigmoid: &mut [f64],
) -> Result<(), LengthMismatch> {
    check("softplus", softplus, x.len())?;
    check("sigmoid", sigmoid, x.len())?;
    simd(
        #[inline(always)]
        || softplus_sigmoid_loop(x, softplus, sigmoid),
    );
    Ok(())
}

/// [`softplus_sigmoid`] in place: `softplus[i] = ln(1 + e^x[i])` and `x[i]` replaced by
/// `1 / (1 + e^-x[i])`, the same bits. The gradient of a logistic likelihood needs the sigmoid
/// where the linear predictor was, and the softplus only summed.
pub fn softplus_sigmoid_in_place(
    x: &mut [f64],
    softplus: &mut [f64],
) -> Result<(), LengthMismatch> {
    check("softplus", softplus, x.len())?;
    simd(
        #[inline(always)]
        || softplus_sigmoid_in_place_loop(x, softplus),
    );
    Ok(())
}

/// [`exp`]'s element loop (compiled into each of `simd`'s variants).
#[inline(always)]
fn exp_loop(x: &[f64], out: &mut [f64]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = scalar::exp(v);
    }
}

/// [`ln_1p`]'s element loop.
#[inline(always)]
fn ln_1p_loop(x: &[f64], out: &mut [f64]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = scalar::ln_1p(v);
    }
}

/// [`softplus_sigmoid`]'s element loop.
#[inline(always)]
fn softplus_sigmoid_loop(x: &[f64], softplus: &mut [f64], sigmoid: &mut [f64]) {
    for ((s, g), &v) in softplus.iter_mut().zip(sigmoid.iter_mut()).zip(x) {
        (*s, *g) = scalar::softplus_sigmoid(v);
    }
}

/// [`softplus_sigmoid_in_place`]'s element loop.
#[inline(always)]
fn softplus_sigmoid_in_place_loop(x: &mut [f64], softplus: &mut [f64]) {
    for (s, v) in softplus.iter_mut().zip(x) {
        (*s, *v) = scalar::softplus_sigmoid(*v);
    }
}

/// The functions one element at a time, with the bits of the slice forms.
pub mod scalar {
    /// `1.5 * 2^52`: adding it to a value below `2^51` in magnitude rounds the value to an
    /// integer (to nearest, ties to even) held in the low bits of the sum.
    const SHIFT: f64 = 6_755_399_441_055_744.0;
    /// `2^52`, whose bits with an integer below `2^52` in the low bits make `2^52 + n`.
    const TWO_52: f64 = 4_503_599_627_370_496.0;
    /// The high part of ln 2, with enough trailing zero bits that `n * LN2_HI` is exact for
    /// every `|n| < 2^11`.
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    /// ln 2 minus [`LN2_HI`].
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    /// Above this, `e^x` overflows (`ln(f64::MAX)` is 709.78); clamping here keeps the scale
    /// exponent in range and still gives infinity.
    const EXP_HI: f64 = 710.0;
    /// Below this, `e^x` rounds to 0 (the smallest subnormal's half is `e^-745.13`).
    const EXP_LO: f64 = -746.0;

    /// `2^n` for an integer `n` in `[-1022, 1023]` held in the low bits of `shifted`
    /// (`n + SHIFT`): the exponent field built with integer adds and shifts only, which AVX2
    /// has for 64-bit lanes (a float-to-integer conversion it has not).
    #[inline(always)]
    fn pow2(shifted: f64) -> f64 {
        f64::from_bits(shifted.to_bits().wrapping_add(1023) << 52)
    }

    /// `e^x`, within 1 ulp of `f64::exp`; see the [module](super) on bits and accuracy.
    ///
    /// `x = n ln 2 + r` with `|r| <= ln 2 / 2`; `e^r` by its Taylor series to degree 13
    /// (truncation below `5e-18`), written `1 + (r + r^2 p(r))` so the last rounding is the
    /// sum's; then `2^n` applied as `2^h * 2^(n - h)` with `h = n / 2` rounded, so both factors
    /// are normal numbers even when the result is subnormal or infinite, and the result is
    /// rounded once.
    #[inline(always)]
    pub fn exp(x: f64) -> f64 {
        // `NaN` fails both comparisons and stays `NaN` through the arithmetic below.
        let x = if x > EXP_HI { EXP_HI } else { x };
        let x = if x < EXP_LO { EXP_LO } else { x };
        let shifted = x * std::f64::consts::LOG2_E + SHIFT;
        let n = shifted - SHIFT;
        let r = (x - n * LN2_HI) - n * LN2_LO;
        let mut p = 1.0 / 6_227_020_800.0;
        p = p * r + 1.0 / 479_001_600.0;
        p = p * r + 1.0 / 39_916_800.0;
        p = p * r + 1.0 / 3_628_800.0;
        p = p * r + 1.0 / 362_880.0;
        p = p * r + 1.0 / 40_320.0;
        p = p * r + 1.0 / 5_040.0;
        p = p * r + 1.0 / 720.0;
        p = p * r + 1.0 / 120.0;
        p = p * r + 1.0 / 24.0;
        p = p * r + 1.0 / 6.0;
        p = p * r + 0.5;
        let e_r = 1.0 + (r + (r * r) * p);
        let half = n * 0.5 + SHIFT;
        let rest = (n - (half - SHIFT)) + SHIFT;
        e_r * pow2(half) * pow2(rest)
    }

    /// `(1 + x) - u` for `u = 1 + x` rounded, exactly: `u - x` is exact from 2 up, `u - 1`
    /// below (fdlibm's `log1p`).
    #[inline(always)]
    fn rounding_error(x: f64, u: f64) -> f64 {
        if u >= 2.0 {
            1.0 - (u - x)
        } else {
            x - (u - 1.0)
        }
    }

    /// `ln(1 + x)` before its special cases, given `u = 1 + x` rounded and `c_u`, the
    /// rounding error of `u` over `u`: `k ln 2 + ln(m) + c_u` with `u = 2^k m`, `m` in
    /// `[sqrt(1/2), sqrt(2))`.
    ///
    /// `ln(m) = ln(1 + f)` as fdlibm's `log` computes it: `s = f / (2 + f)`, and its minimax
    /// polynomial in `s^2` (fdlibm's coefficients `Lg1` to `Lg7`), accurate below 1 ulp.
    #[inline(always)]
    fn ln_1p_core(u: f64, c_u: f64) -> f64 {
        const SQRT_HALF: u64 = 0x3fe6_a09e_667f_3bcd;
        const TOP_12: u64 = 0xfff << 52;
        const LG1: f64 = f64::from_bits(0x3fe5_5555_5555_5593);
        const LG2: f64 = f64::from_bits(0x3fd9_9999_9997_fa04);
        const LG3: f64 = f64::from_bits(0x3fd2_4924_9422_9359);
        const LG4: f64 = f64::from_bits(0x3fcc_71c5_1d8e_78af);
        const LG5: f64 = f64::from_bits(0x3fc7_4664_96cb_03de);
        const LG6: f64 = f64::from_bits(0x3fc3_9a09_d078_c69f);
        const LG7: f64 = f64::from_bits(0x3fc2_f112_df3e_5244);
        let bits = u.to_bits();
        // The top 12 bits of `tmp` are `k` in two's complement; flipping the sign bit makes
        // them `k + 2048`, read as a float without a conversion instruction.
        let tmp = bits.wrapping_sub(SQRT_HALF);
        let k = f64::from_bits(((tmp ^ (1 << 63)) >> 52) | TWO_52.to_bits()) - (TWO_52 + 2048.0);
        let m = f64::from_bits(bits.wrapping_sub(tmp & TOP_12));
        let f = m - 1.0;
        let hfsq = 0.5 * f * f;
        let s = f / (2.0 + f);
        let z = s * s;
        let w = z * z;
        let t1 = w * (LG2 + w * (LG4 + w * LG6));
        let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
        let r = t2 + t1;
        k * LN2_HI - ((hfsq - (s * (hfsq + r) + (k * LN2_LO + c_u))) - f)
    }

    /// `ln(1 + x)`, within 1 ulp of `f64::ln_1p`; see the [module](super) on bits and
    /// accuracy. Minus infinity at -1, `NaN` below, `x` itself for `x` = ±0.
    #[inline(always)]
    pub fn ln_1p(x: f64) -> f64 {
        let u = 1.0 + x;
        let y = ln_1p_core(u, rounding_error(x, u) / u);
        let y = if u == f64::INFINITY { u } else { y };
        let y = if u == 0.0 { f64::NEG_INFINITY } else { y };
        // `u < 0` and `NaN`.
        let y = if u >= 0.0 { y } else { f64::NAN };
        if x == 0.0 {
            x
        } else {
            y
        }
    }

    /// `(softplus(x), sigmoid(x))`: `ln(1 + e^x)` and `1 / (1 + e^-x)`, from one [`exp`] and
    /// one `ln_1p` (sharing its division by `1 + e^-|x|` with the sigmoid).
    #[inline(always)]
    pub fn softplus_sigmoid(x: f64) -> (f64, f64) {
        let t = exp(-x.abs());
        // `t` is in [0, 1]: none of `ln_1p`'s special cases arise.
        let u = 1.0 + t;
        let inv_u = 1.0 / u;
        let c_u = rounding_error(t, u) * inv_u;
        let ln = ln_1p_core(u, c_u);
        // 1 / (1 + t), with the rounding of `u` taken back: (1 / u) (1 - c / u).
        let inv = inv_u - inv_u * c_u;
        let positive = if x > 0.0 { x } else { 0.0 };
        // `NaN` takes the second branch, and `t` is `NaN`.
        let sigmoid = if x >= 0.0 { inv } else { t * inv };
        (positive + ln, sigmoid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place between two floats of the same sign (or both
    /// zero); 0 for two `NaN`s, `u64::MAX` when only one is `NaN` or the signs differ.
    fn ulps(a: f64, b: f64) -> u64 {
        if a.is_nan() || b.is_nan() {
            return if a.is_nan() && b.is_nan() {
                0
            } else {
                u64::MAX
            };
        }
        if a == b {
            return 0;
        }
        if a.is_sign_negative() != b.is_sign_negative() {
            return u64::MAX;
        }
        a.abs().to_bits().abs_diff(b.abs().to_bits())
    }

    /// A small deterministic generator (SplitMix64), so the points are the same every run.
    struct Points(u64);

    impl Points {
        fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        /// Uniform in `[lo, hi)`.
        fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
            lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
        }

        /// Any finite float, every exponent equally likely.
        fn any_finite(&mut self) -> f64 {
            loop {
                let x = f64::from_bits(self.next_u64());
                if x.is_finite() {
                    return x;
                }
            }
        }
    }

    /// Values at and around the limits of every function.
    fn edge_cases() -> Vec<f64> {
        let mut v = vec![
            0.0,
            -0.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            f64::from_bits(1),
            -f64::from_bits(1),
            f64::EPSILON,
            -f64::EPSILON,
            1e-300,
            -1e-300,
            1.0,
            -1.0,
            -1.0 + f64::EPSILON / 2.0,
            -1.0 - f64::EPSILON,
            -0.5,
            std::f64::consts::SQRT_2 - 1.0,
            std::f64::consts::FRAC_1_SQRT_2 - 1.0,
            709.782_712_893_384,
            709.782_712_893_385,
            709.79,
            710.0,
            711.0,
            -708.396_418_532_264_1,
            -708.4,
            -745.133_219_101_941_1,
            -745.133_219_101_941_2,
            -745.2,
            -746.0,
            -800.0,
            36.0,
            -36.0,
            37.0,
            -37.0,
            1e15,
            -1e15,
            4503599627370496.0,
        ];
        for k in -60..60 {
            let x = f64::from(k) * std::f64::consts::LN_2;
            v.extend([x, x.next_up(), x.next_down()]);
        }
        v
    }

    /// Every edge case and `n` pseudo-random points spread over the ranges that matter.
    fn points(n: usize, seed: u64) -> Vec<f64> {
        let mut g = Points(seed);
        let mut v = edge_cases();
        for i in 0..n {
            v.push(match i % 4 {
                0 => g.uniform(-750.0, 750.0),
                1 => g.uniform(-40.0, 40.0),
                2 => g.uniform(-1.0, 1.0),
                _ => g.any_finite(),
            });
        }
        v
    }

    /// The largest ulp distance between `ours` and `reference` over `xs`, printed with its
    /// argument.
    fn max_ulps(name: &str, xs: &[f64], ours: &[f64], reference: impl Fn(f64) -> f64) -> u64 {
        let (mut worst, mut at) = (0, 0.0);
        for (&x, &y) in xs.iter().zip(ours) {
            let d = ulps(y, reference(x));
            if d > worst {
                (worst, at) = (d, x);
            }
        }
        println!(
            "{name}: max {worst} ulp from std over {} points (at x = {at:e})",
            xs.len()
        );
        worst
    }

    #[test]
    fn exp_is_within_one_ulp_of_std_everywhere() {
        let xs = points(4_000_000, 1);
        let mut out = vec![0.0; xs.len()];
        exp(&xs, &mut out).unwrap();
        assert!(max_ulps("exp", &xs, &out, f64::exp) <= 1);
        // Subnormal results, underflow to 0 and overflow to infinity, exactly where std has them.
        for x in [
            -740.0, -745.0, -745.2, -746.0, -1e300, 709.78, 709.79, 1e300,
        ] {
            assert_eq!(
                ulps(scalar::exp(x), x.exp()),
                0,
                "exp({x}) = {} (std {})",
                scalar::exp(x),
                x.exp()
            );
        }
    }

    #[test]
    fn ln_1p_is_within_one_ulp_of_std_everywhere() {
        let mut xs = points(4_000_000, 2);
        // Mostly the interesting side: from -1 up, many magnitudes.
        let mut g = Points(3);
        xs.extend((0..1_000_000).map(|_| -1.0 + g.uniform(0.0, 1.0).powi(8)));
        xs.extend((0..1_000_000).map(|_| g.uniform(-60.0, 60.0).exp2()));
        let mut out = vec![0.0; xs.len()];
        ln_1p(&xs, &mut out).unwrap();
        assert!(max_ulps("ln_1p", &xs, &out, f64::ln_1p) <= 1);
        assert_eq!(scalar::ln_1p(-1.0), f64::NEG_INFINITY);
        assert!(scalar::ln_1p(-1.5).is_nan() && scalar::ln_1p(f64::NEG_INFINITY).is_nan());
        assert_eq!(scalar::ln_1p(f64::INFINITY), f64::INFINITY);
        assert_eq!(scalar::ln_1p(-0.0).to_bits(), (-0.0f64).to_bits());
    }

    #[test]
    fn softplus_and_sigmoid_are_within_a_few_ulp_of_the_std_formulas() {
        let xs = points(4_000_000, 4);
        let (mut sp, mut sg) = (vec![0.0; xs.len()], vec![0.0; xs.len()]);
        softplus_sigmoid(&xs, &mut sp, &mut sg).unwrap();
        let std_softplus = |x: f64| x.max(0.0) + (-x.abs()).exp().ln_1p();
        // Written so it does not underflow to 0 where the sigmoid is subnormal (below -709.78,
        // `1 / (1 + e^-x)` divides by infinity).
        let std_sigmoid = |x: f64| {
            if x >= 0.0 {
                1.0 / (1.0 + (-x).exp())
            } else {
                x.exp() / (1.0 + x.exp())
            }
        };
        assert!(max_ulps("softplus", &xs, &sp, std_softplus) <= 2);
        // The std formula rounds four times itself (exp, sum, division; the product below 0).
        assert!(max_ulps("sigmoid", &xs, &sg, std_sigmoid) <= 3);
        assert_eq!(
            scalar::softplus_sigmoid(f64::INFINITY),
            (f64::INFINITY, 1.0)
        );
        assert_eq!(scalar::softplus_sigmoid(f64::NEG_INFINITY), (0.0, 0.0));
        assert_eq!(scalar::softplus_sigmoid(0.0), (std::f64::consts::LN_2, 0.5));
    }

    /// The AVX-512 and AVX2 loops (where the CPU has them), the same loops compiled for the
    /// baseline, the scalar forms, and every slice offset and length give the same bits.
    #[test]
    fn every_path_and_position_gives_the_same_bits() {
        let xs = points(20_000, 5);
        let n = xs.len();
        let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
        let (mut sa, mut sb) = (vec![0.0; n], vec![0.0; n]);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        exp(&xs, &mut a).unwrap();
        exp_loop(&xs, &mut b);
        assert_eq!(bits(&a), bits(&b));
        avx2(
            #[inline(always)]
            || exp_loop(&xs, &mut b),
        );
        assert_eq!(bits(&a), bits(&b), "AVX2 where the CPU has it");
        let one: Vec<f64> = xs.iter().map(|&x| scalar::exp(x)).collect();
        assert_eq!(bits(&a), bits(&one));
        ln_1p(&xs, &mut a).unwrap();
        ln_1p_loop(&xs, &mut b);
        assert_eq!(bits(&a), bits(&b));
        avx2(
            #[inline(always)]
            || ln_1p_loop(&xs, &mut b),
        );
        assert_eq!(bits(&a), bits(&b));
        let one: Vec<f64> = xs.iter().map(|&x| scalar::ln_1p(x)).collect();
        assert_eq!(bits(&a), bits(&one));
        softplus_sigmoid(&xs, &mut a, &mut sa).unwrap();
        softplus_sigmoid_loop(&xs, &mut b, &mut sb);
        assert_eq!((bits(&a), bits(&sa)), (bits(&b), bits(&sb)));
        avx2(
            #[inline(always)]
            || softplus_sigmoid_loop(&xs, &mut b, &mut sb),
        );
        assert_eq!((bits(&a), bits(&sa)), (bits(&b), bits(&sb)));
        let mut in_place = xs.clone();
        softplus_sigmoid_in_place(&mut in_place, &mut b).unwrap();
        assert_eq!((bits(&a), bits(&sa)), (bits(&b), bits(&in_place)));
        let mut in_place = xs.clone();
        softplus_sigmoid_in_place_loop(&mut in_place, &mut b);
        assert_eq!((bits(&a), bits(&sa)), (bits(&b), bits(&in_place)));
        for (offset, len) in [(0, 1), (1, 3), (3, 7), (5, 17), (7, 1000)] {
            let part = &xs[offset..offset + len];
            let (mut s, mut g) = (vec![0.0; len], vec![0.0; len]);
            softplus_sigmoid(part, &mut s, &mut g).unwrap();
            assert_eq!(bits(&s), bits(&a[offset..offset + len]), "at {offset}");
            assert_eq!(bits(&g), bits(&sa[offset..offset + len]), "at {offset}");
        }
    }

    #[test]
    fn outputs_of_the_wrong_length_are_refused_with_their_name() {
        let x = [1.0, 2.0, 3.0];
        let err = exp(&x, &mut [0.0; 2]).unwrap_err();
        assert_eq!(
            err,
            LengthMismatch {
                output: "out",
                got: 2,
                expected: 3
            }
        );
        assert_eq!(
            err.to_string(),
            "the output `out` holds 2 values but the input holds 3: pass one output value per \
             input value"
        );
        let err = softplus_sigmoid(&x, &mut [0.0; 3], &mut [0.0; 4]).unwrap_err();
        assert_eq!(err.output, "sigmoid");
        assert!(ln_1p(&x, &mut [0.0; 0]).is_err());
        assert!(softplus_sigmoid_in_place(&mut [1.0], &mut [0.0; 2]).is_err());
    }
}

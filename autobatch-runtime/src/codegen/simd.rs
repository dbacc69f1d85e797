//! `simd`: runs a compiled vector kernel's lane loop compiled for the widest vector
//! instructions the CPU has (AVX2 on x86-64 where present), chosen once at run time, so a
//! portable build still uses them.
//!
//! The closure handed in is inlined twice: once into a function compiled with the
//! `avx2` and `fma` target features, once into the baseline caller, and [`simd`] calls the first
//! where the CPU has both. Only the instructions differ, never a result: Rust never contracts a
//! multiply and an add into a fused multiply-add nor reorders floating-point operations, so the
//! wider element loops compute each element, and each of a dot's four partial sums, through the
//! same IEEE operations in the same order (the features only make `f64::mul_add`, already exact,
//! one instruction).

/// Runs `f`, compiled for AVX2 if this CPU has it (mark `f` `#[inline(always)]` so it is
/// compiled into each variant).
#[inline(always)]
pub fn simd<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has both features `avx2_fma` is compiled for (just checked).
            return unsafe { avx2_fma(f) };
        }
    }
    f()
}

/// `f()`, with `f` inlined into code compiled for AVX2 and FMA.
///
/// # Safety
/// The CPU must have the `avx2` and `fma` features.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn avx2_fma<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(test)]
mod tests {
    use super::simd;

    #[test]
    fn the_closure_runs_once_and_its_value_is_returned() {
        let mut calls = 0;
        let x = simd(
            #[inline(always)]
            || {
                calls += 1;
                (0..8).map(f64::from).map(|v| v * 0.1 + 1.0).sum::<f64>()
            },
        );
        assert_eq!(calls, 1);
        let want = (0..8).map(f64::from).map(|v| v * 0.1 + 1.0).sum::<f64>();
        assert_eq!(x.to_bits(), want.to_bits());
    }
}

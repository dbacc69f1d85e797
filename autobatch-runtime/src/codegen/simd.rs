//! `cpu` and `with_avx2`: run a compiled vector kernel's lane loop compiled for the widest
//! vector instructions the CPU has (AVX2 on x86-64 where present), chosen once per kernel call
//! at run time, so a portable build still uses them.
//!
//! A kernel writes its loop twice, over two quad types (`F64x4Avx`, one AVX register, and
//! `F64x4`, two SSE2 halves), and matches on [`cpu`]: where the CPU has AVX2 and FMA, the first
//! copy runs through [`with_avx2`], which inlines it into a function compiled with those
//! target features; elsewhere the second runs inline. (Two arms, not two closures handed to
//! one function: each copy borrows the kernel's outputs mutably, and only one copy exists at a
//! time.) Only the instructions differ, never a result: Rust never contracts a multiply and an
//! add into a fused multiply-add nor reorders floating-point operations, so the wider element
//! loops compute each element, and each of a dot's four partial sums, through the same IEEE
//! operations in the same order (the features only make `f64::mul_add`, already exact, one
//! instruction).

/// Proof that the CPU has AVX2 and FMA: only [`cpu`] makes one, after checking, and
/// [`with_avx2`] hands it to the AVX copy of a kernel, whose
/// [`F64x4Avx`](super::quad::F64x4Avx) values are made from it.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug)]
pub struct Avx2Fma(());

/// Off x86-64 no CPU has AVX2: the AVX copy of a kernel is never run, and its proof is the
/// portable one.
#[cfg(not(target_arch = "x86_64"))]
pub type Avx2Fma = Portable;

/// What the portable copy of a kernel computes with: it runs on every CPU.
#[derive(Clone, Copy, Debug)]
pub struct Portable;

/// Which copy of a kernel's loop this CPU runs.
#[derive(Clone, Copy, Debug)]
pub enum Cpu {
    /// The AVX2 copy, through [`with_avx2`].
    Avx2Fma(Avx2Fma),
    /// The portable copy.
    Portable(Portable),
}

/// The copy of a kernel's loop this CPU runs (the features are detected once per process and
/// cached by std).
#[inline(always)]
pub fn cpu() -> Cpu {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Cpu::Avx2Fma(Avx2Fma(()));
        }
    }
    Cpu::Portable(Portable)
}

/// Runs `f`, inlined into code compiled for AVX2 and FMA (mark `f` `#[inline(always)]`).
#[inline(always)]
pub fn with_avx2<R>(cpu: Avx2Fma, f: impl FnOnce(Avx2Fma) -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the CPU has both features `avx2_fma` is compiled for (`cpu` proves it).
    unsafe {
        avx2_fma(f, cpu)
    }
    #[cfg(not(target_arch = "x86_64"))]
    f(cpu)
}

/// `f(cpu)`, with `f` inlined into code compiled for AVX2 and FMA.
///
/// # Safety
/// The CPU must have the `avx2` and `fma` features.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn avx2_fma<R>(f: impl FnOnce(Avx2Fma) -> R, cpu: Avx2Fma) -> R {
    f(cpu)
}

#[cfg(test)]
mod tests {
    use super::{cpu, with_avx2, Cpu};

    #[test]
    fn the_avx_copy_runs_once_where_the_cpu_has_it_and_its_value_is_returned() {
        let sum = || (0..8).map(f64::from).map(|v| v * 0.1 + 1.0).sum::<f64>();
        let x = match cpu() {
            Cpu::Avx2Fma(c) => with_avx2(c, |_| sum()),
            Cpu::Portable(_) => sum(),
        };
        assert_eq!(x.to_bits(), sum().to_bits());
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            matches!(cpu(), Cpu::Avx2Fma(_)),
            std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
        );
    }
}

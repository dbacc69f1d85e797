//! `F64x4` and `F64x4Avx`: four consecutive elements of a vector row as one value, the unit a
//! compiled vector kernel's reduction loop computes with, held in vector registers so the
//! compiler need not rediscover the vectors in scalar code: two SSE2 halves (which every
//! x86-64 CPU has) in the portable copy of a kernel, one AVX register in the copy run through
//! [`with_avx2`] where the CPU has AVX2, so a loop's accumulators take half the registers and a
//! kernel with many dots (the NUTS U-turn check: six over seven rows) keeps them all in
//! registers instead of spilling them.
//!
//! A reduction loop's element expression indexes its sources with `__j`. Inside the loop over
//! chunks of four, each source is a quad and `__j` is [`Quad`], and `x[Quad]` is `x` itself,
//! so the same expression computes four elements at once; over the remaining elements sources
//! are slices and `__j` a `usize` again. Each element goes through the same IEEE operation as
//! alone (the vector instructions are the scalar ones side by side, whatever their width):
//! results are equal bit for bit.
//!
//! [`with_avx2`]: super::simd::with_avx2

use super::simd::{Avx2Fma, Portable};
use std::ops::{Add, AddAssign, Div, Index, IndexMut, Mul, Neg, Sub};

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m128d, __m256d, _mm256_add_pd, _mm256_div_pd, _mm256_loadu_pd, _mm256_mul_pd, _mm256_set1_pd,
    _mm256_storeu_pd, _mm256_sub_pd, _mm_add_pd, _mm_div_pd, _mm_loadu_pd, _mm_mul_pd, _mm_set1_pd,
    _mm_storeu_pd, _mm_sub_pd,
};

/// Four `f64`s computed element by element, in the portable copy of a kernel.
#[derive(Clone, Copy)]
pub struct F64x4(Halves);

/// The two halves, in vector registers.
#[cfg(target_arch = "x86_64")]
type Halves = [__m128d; 2];
/// The four elements.
#[cfg(not(target_arch = "x86_64"))]
type Halves = [f64; 4];

/// Four `f64`s computed element by element in one AVX register, in the copy of a kernel that
/// runs where the CPU has AVX2 and FMA. A value exists only where that was checked: it is made
/// from an [`Avx2Fma`] proof or from another value.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub struct F64x4Avx(__m256d);

/// Off x86-64 there is no AVX copy of a kernel (its closure is never called): the name is the
/// portable type, as [`Avx2Fma`] is [`Portable`].
#[cfg(not(target_arch = "x86_64"))]
pub type F64x4Avx = F64x4;

/// The index that selects a whole quad: `x[Quad]` is `x`.
#[derive(Clone, Copy, Debug)]
pub struct Quad;

/// A value that stands for four elements: a quad, or an `f64` repeated four times.
pub trait Four: Copy {
    /// The four elements.
    fn elements(self) -> [f64; 4];
}

impl Four for f64 {
    #[inline(always)]
    fn elements(self) -> [f64; 4] {
        [self; 4]
    }
}

impl Portable {
    /// Four zeros.
    #[inline(always)]
    pub fn zero(self) -> F64x4 {
        self.load(&[0.0; 4])
    }

    /// The four elements of `x`.
    #[inline(always)]
    pub fn load(self, x: &[f64; 4]) -> F64x4 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of x86-64; both loads read inside `x` (unaligned loads).
        unsafe {
            F64x4([_mm_loadu_pd(x.as_ptr()), _mm_loadu_pd(x.as_ptr().add(2))])
        }
        #[cfg(not(target_arch = "x86_64"))]
        F64x4(*x)
    }
}

impl F64x4 {
    /// A quad holding `x`.
    #[inline(always)]
    fn with(self, x: [f64; 4]) -> F64x4 {
        Portable.load(&x)
    }

    /// `x` four times.
    #[inline(always)]
    fn splat(self, x: f64) -> F64x4 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of x86-64.
        unsafe {
            F64x4([_mm_set1_pd(x), _mm_set1_pd(x)])
        }
        #[cfg(not(target_arch = "x86_64"))]
        F64x4([x; 4])
    }

    /// `op` on each pair of elements (on each half on x86-64).
    #[inline(always)]
    fn zip(self, r: F64x4, op: Op) -> F64x4 {
        let (a, b) = (self.0, r.0);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of x86-64.
        unsafe {
            F64x4(match op {
                Op::Add => [_mm_add_pd(a[0], b[0]), _mm_add_pd(a[1], b[1])],
                Op::Sub => [_mm_sub_pd(a[0], b[0]), _mm_sub_pd(a[1], b[1])],
                Op::Mul => [_mm_mul_pd(a[0], b[0]), _mm_mul_pd(a[1], b[1])],
                Op::Div => [_mm_div_pd(a[0], b[0]), _mm_div_pd(a[1], b[1])],
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        F64x4(std::array::from_fn(|k| op.apply(a[k], b[k])))
    }
}

impl Four for F64x4 {
    #[inline(always)]
    fn elements(self) -> [f64; 4] {
        #[cfg(target_arch = "x86_64")]
        {
            let mut out = [0.0; 4];
            // SAFETY: SSE2 is part of x86-64; both stores write inside `out`.
            unsafe {
                _mm_storeu_pd(out.as_mut_ptr(), self.0[0]);
                _mm_storeu_pd(out.as_mut_ptr().add(2), self.0[1]);
            }
            out
        }
        #[cfg(not(target_arch = "x86_64"))]
        self.0
    }
}

#[cfg(target_arch = "x86_64")]
impl Avx2Fma {
    /// Four zeros.
    #[inline(always)]
    pub fn zero(self) -> F64x4Avx {
        self.load(&[0.0; 4])
    }

    /// The four elements of `x`.
    #[inline(always)]
    pub fn load(self, x: &[f64; 4]) -> F64x4Avx {
        // SAFETY: the CPU has AVX (`self` exists); the load reads inside `x`.
        unsafe { F64x4Avx(_mm256_loadu_pd(x.as_ptr())) }
    }
}

#[cfg(target_arch = "x86_64")]
impl F64x4Avx {
    /// A quad holding `x`.
    #[inline(always)]
    fn with(self, x: [f64; 4]) -> F64x4Avx {
        // SAFETY: the CPU has AVX (`self` exists); the load reads inside `x`.
        unsafe { F64x4Avx(_mm256_loadu_pd(x.as_ptr())) }
    }

    /// `x` four times.
    #[inline(always)]
    fn splat(self, x: f64) -> F64x4Avx {
        // SAFETY: the CPU has AVX (`self` exists).
        unsafe { F64x4Avx(_mm256_set1_pd(x)) }
    }

    /// `op` on each pair of elements.
    #[inline(always)]
    fn zip(self, r: F64x4Avx, op: Op) -> F64x4Avx {
        let (a, b) = (self.0, r.0);
        // SAFETY: the CPU has AVX (`self` exists).
        unsafe {
            F64x4Avx(match op {
                Op::Add => _mm256_add_pd(a, b),
                Op::Sub => _mm256_sub_pd(a, b),
                Op::Mul => _mm256_mul_pd(a, b),
                Op::Div => _mm256_div_pd(a, b),
            })
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl Four for F64x4Avx {
    #[inline(always)]
    fn elements(self) -> [f64; 4] {
        let mut out = [0.0; 4];
        // SAFETY: the CPU has AVX (`self` exists); the store writes inside `out`.
        unsafe { _mm256_storeu_pd(out.as_mut_ptr(), self.0) };
        out
    }
}

/// An element-wise operation.
#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

#[cfg(not(target_arch = "x86_64"))]
impl Op {
    #[inline(always)]
    fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            Op::Add => a + b,
            Op::Sub => a - b,
            Op::Mul => a * b,
            Op::Div => a / b,
        }
    }
}

/// `acc` plus each element of `v` in turn, left to right (a sum's order).
#[inline(always)]
pub fn sum_onto(acc: f64, v: impl Four) -> f64 {
    let v = v.elements();
    (((acc + v[0]) + v[1]) + v[2]) + v[3]
}

/// Everything a quad type has over its `with`, `splat`, `zip` and `elements`: the reduction
/// helpers, indexing by [`Quad`], and arithmetic with quads and `f64`s (either side).
macro_rules! quad_common {
    ($t:ident) => {
        impl $t {
            /// The dot combination of four partial sums: `(s0 + s1) + (s2 + s3)`.
            #[inline(always)]
            pub fn combine(self) -> f64 {
                let s = self.elements();
                (s[0] + s[1]) + (s[2] + s[3])
            }

            /// Adds `r` to partial sum `i` (the remainder of a dot, element by element).
            #[inline(always)]
            pub fn add_at(&mut self, i: usize, r: f64) {
                let mut s = self.elements();
                s[i] += r;
                *self = self.with(s);
            }
        }

        impl std::fmt::Debug for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.elements().fmt(f)
            }
        }

        impl PartialEq for $t {
            fn eq(&self, other: &$t) -> bool {
                self.elements() == other.elements()
            }
        }

        impl Index<Quad> for $t {
            type Output = $t;
            #[inline(always)]
            fn index(&self, _: Quad) -> &$t {
                self
            }
        }

        impl IndexMut<Quad> for $t {
            #[inline(always)]
            fn index_mut(&mut self, _: Quad) -> &mut $t {
                self
            }
        }

        quad_op!($t, Add, add, Op::Add);
        quad_op!($t, Sub, sub, Op::Sub);
        quad_op!($t, Mul, mul, Op::Mul);
        quad_op!($t, Div, div, Op::Div);

        impl Neg for $t {
            type Output = $t;
            #[inline(always)]
            fn neg(self) -> $t {
                // Negation flips the sign bit only, as scalar `-x` does (not `0.0 - x`).
                self.with(self.elements().map(|x| -x))
            }
        }

        impl AddAssign for $t {
            #[inline(always)]
            fn add_assign(&mut self, r: $t) {
                *self = *self + r;
            }
        }

        impl AddAssign<f64> for $t {
            #[inline(always)]
            fn add_assign(&mut self, r: f64) {
                *self = *self + r;
            }
        }
    };
}

/// One operator between two quads and between a quad and an `f64` (either side), element by
/// element.
macro_rules! quad_op {
    ($t:ident, $trait:ident, $method:ident, $op:expr) => {
        impl $trait for $t {
            type Output = $t;
            #[inline(always)]
            fn $method(self, r: $t) -> $t {
                self.zip(r, $op)
            }
        }
        impl $trait<f64> for $t {
            type Output = $t;
            #[inline(always)]
            fn $method(self, r: f64) -> $t {
                self.zip(self.splat(r), $op)
            }
        }
        impl $trait<$t> for f64 {
            type Output = $t;
            #[inline(always)]
            fn $method(self, r: $t) -> $t {
                r.splat(self).zip(r, $op)
            }
        }
    };
}

quad_common!(F64x4);
#[cfg(target_arch = "x86_64")]
quad_common!(F64x4Avx);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::simd::{with_avx2, Cpu};

    /// The operations of a quad type against the scalar ones, element by element.
    macro_rules! check_quad {
        ($t:ident, $cpu:expr) => {{
            let cpu = $cpu;
            let (x, y) = ([1.5, -2.0, 0.1, 3.0], [0.25, 7.0, 0.2, -0.0]);
            let (a, b) = (cpu.load(&x), cpu.load(&y));
            let each = |f: fn(f64, f64) -> f64| std::array::from_fn::<f64, 4, _>(|k| f(x[k], y[k]));
            let bits = |v: $t| v.elements().map(f64::to_bits);
            let want = |v: [f64; 4]| v.map(f64::to_bits);
            assert_eq!(bits(a + b), want(each(|p, q| p + q)));
            assert_eq!(bits(a - b), want(each(|p, q| p - q)));
            assert_eq!(bits(a * b), want(each(|p, q| p * q)));
            assert_eq!(bits(a / b), want(each(|p, q| p / q)));
            assert_eq!(bits(2.0 - a), want(x.map(|p| 2.0 - p)));
            assert_eq!(bits(a / 3.0), want(x.map(|p| p / 3.0)));
            assert_eq!(bits(-b), want(y.map(|q| -q)));
            let mut acc = cpu.zero();
            acc[Quad] += a * b;
            acc += 1.0;
            acc.add_at(2, 0.5);
            let mut sums = each(|p, q| p * q + 1.0);
            sums[2] += 0.5;
            assert_eq!(acc, cpu.load(&sums));
            assert_eq!(acc.combine(), (sums[0] + sums[1]) + (sums[2] + sums[3]));
            let sum = sum_onto(0.5, a);
            assert_eq!(
                sum.to_bits(),
                ((((0.5 + 1.5) + -2.0) + 0.1) + 3.0f64).to_bits()
            );
            assert_eq!(sum_onto(0.0, 2.0), 8.0);
        }};
    }

    #[test]
    fn operations_are_the_scalar_ones_element_by_element() {
        check_quad!(F64x4, Portable);
    }

    #[test]
    fn the_avx_quad_computes_the_same_bits() {
        // Where the CPU has no AVX2 there is no AVX quad to test (`cpu` never makes one).
        match super::super::simd::cpu() {
            Cpu::Avx2Fma(c) => with_avx2(c, |cpu| check_quad!(F64x4Avx, cpu)),
            Cpu::Portable(_) => eprintln!("no AVX2 and FMA on this CPU: nothing to check"),
        }
    }
}

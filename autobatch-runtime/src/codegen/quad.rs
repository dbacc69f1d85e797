//! `F64x4`: four consecutive elements of a vector row as one value, the unit a compiled
//! vector kernel's reduction loop computes with, held in vector registers (two SSE2 halves on
//! x86-64, which every x86-64 CPU has), so the compiler need not rediscover the vectors in
//! scalar code.
//!
//! A reduction loop's element expression indexes its sources with `__j`. Inside the loop over
//! chunks of four, each source is an `F64x4` and `__j` is [`Quad`], and `x[Quad]` is `x`
//! itself, so the same expression computes four elements at once; over the remaining elements
//! sources are slices and `__j` a `usize` again. Each element goes through the same IEEE
//! operation as alone (the vector instructions are the scalar ones side by side): results are
//! equal bit for bit.

use std::ops::{Add, AddAssign, Div, Index, IndexMut, Mul, Neg, Sub};

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m128d, _mm_add_pd, _mm_div_pd, _mm_loadu_pd, _mm_mul_pd, _mm_set1_pd, _mm_storeu_pd,
    _mm_sub_pd,
};

/// Four `f64`s computed element by element.
#[derive(Clone, Copy)]
pub struct F64x4(Halves);

/// The two halves, in vector registers.
#[cfg(target_arch = "x86_64")]
type Halves = [__m128d; 2];
/// The four elements.
#[cfg(not(target_arch = "x86_64"))]
type Halves = [f64; 4];

/// The index that selects a whole [`F64x4`]: `x[Quad]` is `x`.
#[derive(Clone, Copy, Debug)]
pub struct Quad;

impl F64x4 {
    /// Four zeros.
    #[inline(always)]
    pub fn zero() -> F64x4 {
        F64x4::from(0.0)
    }

    /// The four elements of `x`.
    #[inline(always)]
    pub fn load(x: &[f64; 4]) -> F64x4 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of x86-64; both loads read inside `x` (unaligned loads).
        unsafe {
            F64x4([_mm_loadu_pd(x.as_ptr()), _mm_loadu_pd(x.as_ptr().add(2))])
        }
        #[cfg(not(target_arch = "x86_64"))]
        F64x4(*x)
    }

    /// The four elements as an array.
    #[inline(always)]
    pub fn to_array(self) -> [f64; 4] {
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

    /// `acc` plus each element in turn, left to right (a sum's order).
    #[inline(always)]
    pub fn sum_onto(acc: f64, v: impl Into<F64x4>) -> f64 {
        let v = v.into().to_array();
        (((acc + v[0]) + v[1]) + v[2]) + v[3]
    }

    /// The dot combination of four partial sums: `(s0 + s1) + (s2 + s3)`.
    #[inline(always)]
    pub fn combine(self) -> f64 {
        let s = self.to_array();
        (s[0] + s[1]) + (s[2] + s[3])
    }

    /// Adds `r` to partial sum `i` (the remainder of a dot, element by element).
    #[inline(always)]
    pub fn add_at(&mut self, i: usize, r: f64) {
        let mut s = self.to_array();
        s[i] += r;
        *self = F64x4::load(&s);
    }
}

impl std::fmt::Debug for F64x4 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.to_array().fmt(f)
    }
}

impl PartialEq for F64x4 {
    fn eq(&self, other: &F64x4) -> bool {
        self.to_array() == other.to_array()
    }
}

impl From<f64> for F64x4 {
    /// `x` four times.
    #[inline(always)]
    fn from(x: f64) -> F64x4 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of x86-64.
        unsafe {
            F64x4([_mm_set1_pd(x), _mm_set1_pd(x)])
        }
        #[cfg(not(target_arch = "x86_64"))]
        F64x4([x; 4])
    }
}

impl Index<Quad> for F64x4 {
    type Output = F64x4;
    #[inline(always)]
    fn index(&self, _: Quad) -> &F64x4 {
        self
    }
}

impl IndexMut<Quad> for F64x4 {
    #[inline(always)]
    fn index_mut(&mut self, _: Quad) -> &mut F64x4 {
        self
    }
}

/// `op` between two `F64x4`s and between an `F64x4` and an `f64` (either side), element by
/// element (`$intrinsic` on each half on x86-64).
macro_rules! elementwise {
    ($trait:ident, $method:ident, $op:tt, $intrinsic:ident) => {
        impl $trait for F64x4 {
            type Output = F64x4;
            #[inline(always)]
            fn $method(self, r: F64x4) -> F64x4 {
                let (a, b) = (self.0, r.0);
                #[cfg(target_arch = "x86_64")]
                // SAFETY: SSE2 is part of x86-64.
                unsafe {
                    F64x4([$intrinsic(a[0], b[0]), $intrinsic(a[1], b[1])])
                }
                #[cfg(not(target_arch = "x86_64"))]
                F64x4([a[0] $op b[0], a[1] $op b[1], a[2] $op b[2], a[3] $op b[3]])
            }
        }
        impl $trait<f64> for F64x4 {
            type Output = F64x4;
            #[inline(always)]
            fn $method(self, r: f64) -> F64x4 {
                self $op F64x4::from(r)
            }
        }
        impl $trait<F64x4> for f64 {
            type Output = F64x4;
            #[inline(always)]
            fn $method(self, r: F64x4) -> F64x4 {
                F64x4::from(self) $op r
            }
        }
    };
}
elementwise!(Add, add, +, _mm_add_pd);
elementwise!(Sub, sub, -, _mm_sub_pd);
elementwise!(Mul, mul, *, _mm_mul_pd);
elementwise!(Div, div, /, _mm_div_pd);

impl Neg for F64x4 {
    type Output = F64x4;
    #[inline(always)]
    fn neg(self) -> F64x4 {
        // Negation flips the sign bit only, as scalar `-x` does (not `0.0 - x`).
        F64x4::load(&self.to_array().map(|x| -x))
    }
}

impl AddAssign for F64x4 {
    #[inline(always)]
    fn add_assign(&mut self, r: F64x4) {
        *self = *self + r;
    }
}

impl AddAssign<f64> for F64x4 {
    #[inline(always)]
    fn add_assign(&mut self, r: f64) {
        *self = *self + r;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_the_scalar_ones_element_by_element() {
        let (x, y) = ([1.5, -2.0, 0.1, 3.0], [0.25, 7.0, 0.2, -0.0]);
        let (a, b) = (F64x4::load(&x), F64x4::load(&y));
        let each = |f: fn(f64, f64) -> f64| std::array::from_fn::<f64, 4, _>(|k| f(x[k], y[k]));
        let bits = |v: F64x4| v.to_array().map(f64::to_bits);
        let want = |v: [f64; 4]| v.map(f64::to_bits);
        assert_eq!(bits(a + b), want(each(|p, q| p + q)));
        assert_eq!(bits(a - b), want(each(|p, q| p - q)));
        assert_eq!(bits(a * b), want(each(|p, q| p * q)));
        assert_eq!(bits(a / b), want(each(|p, q| p / q)));
        assert_eq!(bits(2.0 - a), want(x.map(|p| 2.0 - p)));
        assert_eq!(bits(a / 3.0), want(x.map(|p| p / 3.0)));
        assert_eq!(bits(-b), want(y.map(|q| -q)));
        let mut acc = F64x4::zero();
        acc[Quad] += a * b;
        acc += 1.0;
        acc.add_at(2, 0.5);
        let mut sums = each(|p, q| p * q + 1.0);
        sums[2] += 0.5;
        assert_eq!(acc, F64x4::load(&sums));
        assert_eq!(acc.combine(), (sums[0] + sums[1]) + (sums[2] + sums[3]));
        let sum = F64x4::sum_onto(0.5, a);
        assert_eq!(
            sum.to_bits(),
            ((((0.5 + 1.5) + -2.0) + 0.1) + 3.0f64).to_bits()
        );
        assert_eq!(F64x4::sum_onto(0.0, 2.0), 8.0);
    }
}

//! `Vector`: the per-lane `f64` vector value type of autobatched code.
//!
//! In a scalar call it is an ordinary owned vector; in a batched run each lane's vector is one
//! row of a `[batch, len]` column, and the same operations run per lane on it, so results are
//! bit-for-bit the same. Operations on vectors of different lengths panic in plain Rust (as
//! ndarray does); in a batched run that panic is caught and reported as a typed error with the
//! lane. The length of every vector in a batched run is fixed when the run starts.

use std::fmt;
use std::ops::{Add, AddAssign, Div, Index, Mul, MulAssign, Neg, Sub, SubAssign};

/// An owned vector of `f64`.
///
/// ```
/// use autobatch_runtime::Vector;
///
/// let q = Vector::from(vec![1.0, 2.0]);
/// let p = Vector::filled(0.5, 2);
/// let next = &q + &(0.1 * &p);
/// assert_eq!(next.as_slice(), &[1.05, 2.05]);
/// assert_eq!(q.dot(&q), 5.0);
/// ```
#[derive(Clone, Default, PartialEq)]
pub struct Vector(Vec<f64>);

impl Vector {
    /// `len` zeros.
    pub fn zeros(len: usize) -> Vector {
        Vector(vec![0.0; len])
    }

    /// `len` copies of `value`.
    pub fn filled(value: f64, len: usize) -> Vector {
        Vector(vec![value; len])
    }

    /// A vector of `like`'s length filled with `value`: construction from a scalar in
    /// autobatched code, where every vector of a run has the run's length.
    pub fn filled_like(value: f64, like: &Vector) -> Vector {
        Vector::filled(value, like.len())
    }

    /// A copy of `values`.
    pub fn from_slice(values: &[f64]) -> Vector {
        Vector(values.to_vec())
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True if the vector has no elements.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The elements.
    pub fn as_slice(&self) -> &[f64] {
        &self.0
    }

    /// The elements, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [f64] {
        &mut self.0
    }

    /// Element `i` (panics if out of range, as slice indexing does).
    pub fn get(&self, i: usize) -> f64 {
        self.0[i]
    }

    /// The inner product, in a fixed order: four interleaved partial sums (element `i` goes
    /// to sum `i % 4`, each summed left to right), combined as `(s0 + s1) + (s2 + s3)`. The
    /// order is the same in every call, batched or not, and lets the sums run in parallel.
    pub fn dot(&self, other: &Vector) -> f64 {
        check_len(self, other);
        let (a, b) = (self.0.chunks_exact(4), other.0.chunks_exact(4));
        let (ra, rb) = (a.remainder(), b.remainder());
        let mut s = [0.0; 4];
        for (x, y) in a.zip(b) {
            for k in 0..4 {
                s[k] += x[k] * y[k];
            }
        }
        for (k, (x, y)) in ra.iter().zip(rb).enumerate() {
            s[k] += x * y;
        }
        (s[0] + s[1]) + (s[2] + s[3])
    }

    /// The sum of the elements (left to right).
    pub fn sum(&self) -> f64 {
        self.0.iter().fold(0.0, |acc, x| acc + x)
    }

    /// The squared Euclidean norm.
    pub fn norm_squared(&self) -> f64 {
        self.dot(self)
    }

    /// Applies `f` to every element.
    pub fn map(&self, f: impl Fn(f64) -> f64) -> Vector {
        Vector(self.0.iter().map(|&x| f(x)).collect())
    }

    /// Elementwise combination of two vectors of equal length.
    pub fn zip_map(&self, other: &Vector, f: impl Fn(f64, f64) -> f64) -> Vector {
        check_len(self, other);
        Vector(
            self.0
                .iter()
                .zip(&other.0)
                .map(|(&a, &b)| f(a, b))
                .collect(),
        )
    }
}

fn check_len(a: &Vector, b: &Vector) {
    assert_eq!(
        a.len(),
        b.len(),
        "vectors of different lengths: {} and {}",
        a.len(),
        b.len()
    );
}

impl fmt::Debug for Vector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.0).finish()
    }
}

impl From<Vec<f64>> for Vector {
    fn from(v: Vec<f64>) -> Vector {
        Vector(v)
    }
}

impl From<Vector> for Vec<f64> {
    fn from(v: Vector) -> Vec<f64> {
        v.0
    }
}

impl Index<usize> for Vector {
    type Output = f64;
    fn index(&self, i: usize) -> &f64 {
        &self.0[i]
    }
}

macro_rules! elementwise {
    ($trait:ident, $method:ident, $op:tt) => {
        impl $trait<&Vector> for &Vector {
            type Output = Vector;
            fn $method(self, rhs: &Vector) -> Vector {
                self.zip_map(rhs, |a, b| a $op b)
            }
        }
        // An operand passed by value lends its buffer to the result: no allocation. The
        // updates are spelled `x = a op b` because `op` may not commute (clippy's
        // assign_op_pattern is allowed on these impls for that reason).
        impl $trait<Vector> for Vector {
            type Output = Vector;
            fn $method(self, rhs: Vector) -> Vector {
                self $op &rhs
            }
        }
        impl $trait<&Vector> for Vector {
            type Output = Vector;
            #[allow(clippy::assign_op_pattern)]
            fn $method(mut self, rhs: &Vector) -> Vector {
                check_len(&self, rhs);
                self.0.iter_mut().zip(&rhs.0).for_each(|(a, &b)| *a = *a $op b);
                self
            }
        }
        impl $trait<Vector> for &Vector {
            type Output = Vector;
            #[allow(clippy::assign_op_pattern)]
            fn $method(self, mut rhs: Vector) -> Vector {
                check_len(self, &rhs);
                rhs.0.iter_mut().zip(&self.0).for_each(|(b, &a)| *b = a $op *b);
                rhs
            }
        }
        impl $trait<f64> for &Vector {
            type Output = Vector;
            fn $method(self, rhs: f64) -> Vector {
                self.map(|a| a $op rhs)
            }
        }
        impl $trait<f64> for Vector {
            type Output = Vector;
            #[allow(clippy::assign_op_pattern)]
            fn $method(mut self, rhs: f64) -> Vector {
                self.0.iter_mut().for_each(|a| *a = *a $op rhs);
                self
            }
        }
        impl $trait<&Vector> for f64 {
            type Output = Vector;
            fn $method(self, rhs: &Vector) -> Vector {
                rhs.map(|b| self $op b)
            }
        }
        impl $trait<Vector> for f64 {
            type Output = Vector;
            #[allow(clippy::assign_op_pattern)]
            fn $method(self, mut rhs: Vector) -> Vector {
                rhs.0.iter_mut().for_each(|b| *b = self $op *b);
                rhs
            }
        }
    };
}
elementwise!(Add, add, +);
elementwise!(Sub, sub, -);
elementwise!(Mul, mul, *);
elementwise!(Div, div, /);

impl Neg for &Vector {
    type Output = Vector;
    fn neg(self) -> Vector {
        self.map(|a| -a)
    }
}

impl Neg for Vector {
    type Output = Vector;
    fn neg(self) -> Vector {
        -&self
    }
}

macro_rules! assign {
    ($trait:ident, $method:ident, $op:tt) => {
        impl $trait<&Vector> for Vector {
            fn $method(&mut self, rhs: &Vector) {
                check_len(self, rhs);
                self.0.iter_mut().zip(&rhs.0).for_each(|(a, b)| *a = *a $op b);
            }
        }
        impl $trait<Vector> for Vector {
            fn $method(&mut self, rhs: Vector) {
                self.$method(&rhs);
            }
        }
    };
}
assign!(AddAssign, add_assign, +);
assign!(SubAssign, sub_assign, -);

impl MulAssign<f64> for Vector {
    fn mul_assign(&mut self, rhs: f64) {
        self.0.iter_mut().for_each(|a| *a *= rhs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_is_elementwise() {
        let a = Vector::from(vec![1.0, 2.0, 3.0]);
        let b = Vector::from(vec![4.0, 5.0, 6.0]);
        assert_eq!((&a + &b).as_slice(), &[5.0, 7.0, 9.0]);
        assert_eq!((&b - &a).as_slice(), &[3.0, 3.0, 3.0]);
        assert_eq!((&a * &b).as_slice(), &[4.0, 10.0, 18.0]);
        assert_eq!((&b / 2.0).as_slice(), &[2.0, 2.5, 3.0]);
        assert_eq!((2.0 * &a).as_slice(), &[2.0, 4.0, 6.0]);
        assert_eq!((-a.clone()).as_slice(), &[-1.0, -2.0, -3.0]);
        assert_eq!(a.dot(&b), 32.0);
        assert_eq!(a.sum(), 6.0);
        assert_eq!(a.norm_squared(), 14.0);
        assert_eq!(a.map(f64::sqrt).get(3 - 2), 2f64.sqrt());
        assert_eq!(a[2], 3.0);
        let mut c = a.clone();
        c += &b;
        c -= Vector::filled(1.0, 3);
        c *= 2.0;
        assert_eq!(c.as_slice(), &[8.0, 12.0, 16.0]);
        assert_eq!(Vector::zeros(2).len(), 2);
        assert!(Vector::default().is_empty());
    }

    #[test]
    fn by_value_operands_give_the_by_reference_results() {
        let a = Vector::from(vec![1.5, -2.0, 3.25]);
        let b = Vector::from(vec![4.0, 0.5, -6.0]);
        let cases: [(Vector, Vector, Vector, Vector); 4] = [
            (
                &a + &b,
                a.clone() + &b,
                &a + b.clone(),
                a.clone() + b.clone(),
            ),
            (
                &a - &b,
                a.clone() - &b,
                &a - b.clone(),
                a.clone() - b.clone(),
            ),
            (
                &a * &b,
                a.clone() * &b,
                &a * b.clone(),
                a.clone() * b.clone(),
            ),
            (
                &a / &b,
                a.clone() / &b,
                &a / b.clone(),
                a.clone() / b.clone(),
            ),
        ];
        for (want, x, y, z) in cases {
            assert_eq!((&want, &want, &want), (&x, &y, &z));
        }
        assert_eq!(3.0 - b.clone(), 3.0 - &b);
        assert_eq!(3.0 / b.clone(), 3.0 / &b);
        assert_eq!(b.clone() - 3.0, &b - 3.0);
    }

    #[test]
    fn dot_sums_in_its_documented_order() {
        let x: Vec<f64> = (0..7).map(|i| 0.1 * f64::from(i) + 1e-17).collect();
        let y: Vec<f64> = (0..7).map(|i| 1.0 / f64::from(i + 3)).collect();
        let p: Vec<f64> = x.iter().zip(&y).map(|(a, b)| a * b).collect();
        let want = ((p[0] + p[4]) + (p[1] + p[5])) + ((p[2] + p[6]) + p[3]);
        let got = Vector::from(x).dot(&Vector::from(y));
        assert_eq!(got.to_bits(), want.to_bits());
    }

    #[test]
    #[should_panic(expected = "vectors of different lengths")]
    fn mismatched_lengths_panic_in_plain_rust() {
        let _ = Vector::zeros(2) + Vector::zeros(3);
    }
}

//! `Key`: per-lane, counter-based random numbers that autobatched code threads explicitly.
//!
//! A key is a Philox4x32-10 key and a block counter. Every draw is the Philox block function of
//! `(key, counter)` alone (the `rand_philox` crate's known-answer-tested implementation), so a
//! lane's stream depends only on its own key: the scalar function, stackless and the full VM
//! draw the same bits whatever the batch size and whichever other lanes share the batch. Draws
//! consume the key and return the next one: `let (u, key) = key.uniform();`.

use crate::vector::Vector;
use rand_philox::{philox4x32_10, splitmix64};

/// Domain words (the counter's third word) separating draws, splits and fold-ins.
const DRAW: u32 = 0;
const SPLIT: u32 = 1;
const FOLD: u32 = 2;

/// A counter-based random-number key.
///
/// ```
/// use autobatch_runtime::Key;
///
/// let key = Key::new(7);
/// let (u, key) = key.uniform();
/// assert!((0.0..1.0).contains(&u));
/// let (left, right) = key.split();
/// assert_ne!(left.uniform().0, right.uniform().0);
/// // A lane's stream is a function of its key alone.
/// assert_eq!(Key::new(7).uniform(), Key::new(7).uniform());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Key {
    key: [u32; 2],
    counter: u64,
}

impl Key {
    /// The key for `seed` (mixed with SplitMix64, so nearby seeds give unrelated streams).
    pub fn new(seed: u64) -> Key {
        let k = splitmix64(seed);
        Key {
            key: [k as u32, (k >> 32) as u32],
            counter: 0,
        }
    }

    /// An independent key derived from this one and `data` (e.g. a chain index), without
    /// consuming this key: `Key::new(seed).fold_in(chain)` gives each chain its own stream.
    pub fn fold_in(self, data: u64) -> Key {
        let w = self.block_at(FOLD, data);
        Key {
            key: [w[0] ^ w[2], w[1] ^ w[3]],
            counter: 0,
        }
    }

    fn block_at(self, domain: u32, counter: u64) -> [u32; 4] {
        philox4x32_10(
            [counter as u32, (counter >> 32) as u32, domain, 0],
            self.key,
        )
    }

    /// The next block of four words and the advanced key.
    fn next_block(self) -> ([u32; 4], Key) {
        (
            self.block_at(DRAW, self.counter),
            Key {
                counter: self.counter.wrapping_add(1),
                ..self
            },
        )
    }

    /// A uniform draw on the open interval (0, 1) with 53 random bits, and the next key.
    pub fn uniform(self) -> (f64, Key) {
        let (w, next) = self.next_block();
        (unit_open(w[0], w[1]), next)
    }

    /// A standard normal draw (Box-Muller on two 53-bit uniforms), and the next key.
    pub fn normal(self) -> (f64, Key) {
        let (w, next) = self.next_block();
        (box_muller(w), next)
    }

    /// `len` independent standard normals, and the next key.
    pub fn normals(self, len: usize) -> (Vector, Key) {
        let mut key = self;
        let mut out = Vector::zeros(len);
        for x in out.as_mut_slice() {
            let (w, next) = key.next_block();
            *x = box_muller(w);
            key = next;
        }
        (out, key)
    }

    /// One independent standard normal per element of `like` (a vector of its length), and the
    /// next key: how autobatched code, whose vector length is fixed per run, draws a momentum.
    pub fn normals_like(self, like: &Vector) -> (Vector, Key) {
        self.normals(like.len())
    }

    /// `true` with probability `p`, and the next key.
    pub fn bernoulli(self, p: f64) -> (bool, Key) {
        let (u, next) = self.uniform();
        (u < p, next)
    }

    /// Two independent keys; this key is consumed.
    pub fn split(self) -> (Key, Key) {
        let w = self.block_at(SPLIT, self.counter);
        (
            Key {
                key: [w[0], w[1]],
                counter: 0,
            },
            Key {
                key: [w[2], w[3]],
                counter: 0,
            },
        )
    }
}

/// A double on (0, 1) from 53 bits of two words.
fn unit_open(hi: u32, lo: u32) -> f64 {
    let bits = ((u64::from(hi) << 32) | u64::from(lo)) >> 11;
    (bits as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}

fn box_muller(w: [u32; 4]) -> f64 {
    let u1 = unit_open(w[0], w[1]);
    let u2 = unit_open(w[2], w[3]);
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mean and variance of `n` draws.
    fn moments(n: usize, mut draw: impl FnMut() -> f64) -> (f64, f64) {
        let xs: Vec<f64> = (0..n).map(|_| draw()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0);
        (mean, var)
    }

    // Tolerances: 6 standard errors of the estimate at n = 200,000 (false-failure odds ~1e-9;
    // the seeds are fixed, so these tests are deterministic).
    const N: usize = 200_000;

    #[test]
    fn uniform_moments() {
        let mut key = Key::new(1);
        let (mean, var) = moments(N, || {
            let (u, k) = key.uniform();
            key = k;
            assert!(u > 0.0 && u < 1.0);
            u
        });
        let se_mean = (1.0f64 / 12.0 / N as f64).sqrt();
        assert!((mean - 0.5).abs() < 6.0 * se_mean, "{mean}");
        assert!(
            (var - 1.0 / 12.0).abs() < 6.0 * (1.0f64 / 180.0 / N as f64).sqrt(),
            "{var}"
        );
    }

    #[test]
    fn normal_moments() {
        let mut key = Key::new(2);
        let (mean, var) = moments(N, || {
            let (z, k) = key.normal();
            key = k;
            z
        });
        assert!(mean.abs() < 6.0 / (N as f64).sqrt(), "{mean}");
        assert!((var - 1.0).abs() < 6.0 * (2.0 / N as f64).sqrt(), "{var}");
    }

    #[test]
    fn normals_vector_matches_scalar_draws() {
        let (v, after) = Key::new(3).normals(4);
        let mut key = Key::new(3);
        for x in v.as_slice() {
            let (z, k) = key.normal();
            assert_eq!(z.to_bits(), x.to_bits());
            key = k;
        }
        assert_eq!(key, after);
    }

    #[test]
    fn bernoulli_frequency() {
        let mut key = Key::new(4);
        let p = 0.3;
        let hits = (0..N)
            .filter(|_| {
                let (b, k) = key.bernoulli(p);
                key = k;
                b
            })
            .count() as f64;
        let se = (p * (1.0 - p) / N as f64).sqrt();
        assert!((hits / N as f64 - p).abs() < 6.0 * se);
        assert!(!Key::new(5).bernoulli(0.0).0);
        assert!(Key::new(5).bernoulli(1.0).0);
    }

    /// Split keys and folded-in keys give uncorrelated streams.
    #[test]
    fn split_and_fold_in_streams_are_independent() {
        let corr = |a: Key, b: Key| {
            let (mut a, mut b) = (a, b);
            let mut s = (0.0, 0.0, 0.0, 0.0, 0.0);
            for _ in 0..N {
                let (x, ka) = a.normal();
                let (y, kb) = b.normal();
                a = ka;
                b = kb;
                s = (s.0 + x, s.1 + y, s.2 + x * x, s.3 + y * y, s.4 + x * y);
            }
            let n = N as f64;
            let cov = s.4 / n - s.0 / n * s.1 / n;
            cov / ((s.2 / n - (s.0 / n).powi(2)) * (s.3 / n - (s.1 / n).powi(2))).sqrt()
        };
        let (l, r) = Key::new(6).split();
        assert!(corr(l, r).abs() < 6.0 / (N as f64).sqrt());
        let base = Key::new(6);
        assert!(corr(base.fold_in(0), base.fold_in(1)).abs() < 6.0 / (N as f64).sqrt());
        assert!(corr(base, l).abs() < 6.0 / (N as f64).sqrt());
        assert_ne!(l, r);
    }
}

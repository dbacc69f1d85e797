//! Number crunching as users write it: gcd, Newton's integer square root, float bisection (bit
//! for bit), modular power, a recursive binary search and a kitchen sink of operators and
//! methods over several integer types and floats.

use super::{check1, check2, modes};
use autobatch_runtime::autobatch;
use autobatch_runtime::ndarray::Array1;
use proptest::prelude::*;

#[autobatch]
pub(crate) fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Integer square root by Newton's iteration, with `loop` / `break value`.
#[autobatch]
fn isqrt(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let mut x = n;
    loop {
        let y = (x + n / x) / 2;
        if y >= x {
            break x;
        }
        x = y;
    }
}

/// Bisection for the root of `x^3 - c` on `[0, max(c, 1)]`.
#[autobatch]
fn cube_root(c: f64) -> f64 {
    let mut lo = 0.0;
    let mut hi = c.max(1.0);
    let mut i = 0;
    while i < 60 {
        let mid = 0.5 * (lo + hi);
        if mid * mid * mid > c {
            hi = mid;
        } else {
            lo = mid;
        }
        i += 1;
    }
    0.5 * (lo + hi)
}

/// Modular exponentiation by squaring (`m` below 2^32, so products fit a `u64`).
#[autobatch]
fn mod_pow(base: u64, exp: u32, m: u64) -> u64 {
    let mut result = 1;
    let mut b = base % m;
    let mut e = exp;
    while e > 0 {
        if e & 1 == 1 {
            result = result * b % m;
        }
        b = b * b % m;
        e >>= 1;
    }
    result % m
}

/// A recursive binary search: the smallest `x` in `lo..=hi` with `x³ >= target`.
#[autobatch]
fn first_cube_at_least(target: i64, lo: i64, hi: i64) -> i64 {
    if lo >= hi {
        return lo;
    }
    let mid = lo + (hi - lo) / 2;
    if mid * mid * mid >= target {
        first_cube_at_least(target, lo, mid)
    } else {
        first_cube_at_least(target, mid + 1, hi)
    }
}

/// The integer cube root, rounded up, by the recursive search.
#[autobatch]
fn cube_root_up(target: i64) -> i64 {
    first_cube_at_least(target, 0, 2_000_000)
}

/// A kitchen sink of operators and methods over several integer types and floats (written the
/// blunt way on purpose: precedence, `%` tests and negated float comparisons included).
#[allow(
    clippy::precedence,
    clippy::manual_is_multiple_of,
    clippy::neg_cmp_op_on_partial_ord
)]
#[autobatch]
fn kitchen_sink(a: i32, b: u16, x: f64) -> (i64, u32, f64, bool) {
    let wide = i64::from(a) * 3 - (b as i64) / 7 % 5;
    let bits = (a as u32).rotate_left(5) ^ u32::from(b).count_ones() | (b as u32) << 3;
    let mixed = a.wrapping_mul(31).saturating_sub(i32::MAX / 2).abs_diff(-7);
    let masked = -wide + !(b as i64) & 0xff;
    let f = (x.abs().sqrt() + x.sin() * 2.0).max(x.floor()).min(1e9) / (1.0 + x * x);
    let g = (x * 0.5 - 1.0).clamp(-3.0, 3.0).powi(3) + f64::from(b).ln();
    let flag = (a > 0 && b % 2 == 0) || !(x < 0.0) && a.signum() != 1;
    (
        wide.pow(2) % 1_000_003 + masked + i64::from(a.leading_zeros()),
        bits.wrapping_add(mixed) >> (b % 32),
        f + g + x.exp().tanh() - (b as f64).sqrt(),
        flag ^ (a % 3 == 0),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(24)))]

    #[test]
    fn gcd_with_swapped_arguments(pairs in prop::collection::vec((0i64..10_000, 0i64..10_000), 1..1000)) {
        let (a, b): (Vec<i64>, Vec<i64>) = pairs.into_iter().unzip();
        check2(&a, &b, gcd, gcd::batch)?;
    }

    #[test]
    fn newton_isqrt_with_loop_break(ns in prop::collection::vec(0u64..1_000_000_000_000, 1..1000)) {
        check1(&ns, isqrt, isqrt::batch)?;
    }

    #[test]
    fn float_bisection_bit_for_bit(cs in prop::collection::vec(0.0f64..1e6, 1..1000)) {
        let expected: Vec<u64> = cs.iter().map(|&c| cube_root(c).to_bits()).collect();
        let input = Array1::from_vec(cs.clone());
        for config in modes() {
            let got = cube_root::batch(input.view(), &config).unwrap();
            prop_assert_eq!(got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), expected.clone());
        }
    }

    #[test]
    fn modular_power(lanes in prop::collection::vec((any::<u64>(), any::<u32>(), 1u64..u32::MAX as u64), 1..1000)) {
        let column = |f: fn(&(u64, u32, u64)) -> u64| Array1::from_iter(lanes.iter().map(f));
        let (b, m) = (column(|l| l.0), column(|l| l.2));
        let e = Array1::from_iter(lanes.iter().map(|l| l.1));
        let expected: Vec<u64> = lanes.iter().map(|&(b, e, m)| mod_pow(b, e, m)).collect();
        for config in modes() {
            let got = mod_pow::batch(b.view(), e.view(), m.view(), &config).unwrap();
            prop_assert_eq!(got.to_vec(), expected.clone(), "{:?}", config.mode);
        }
    }

    #[test]
    fn recursive_binary_search(ts in prop::collection::vec(-5i64..8_000_000_000_000_000_000, 1..1000)) {
        check1(&ts, cube_root_up, cube_root_up::batch)?;
    }

    #[test]
    fn operators_and_methods(lanes in prop::collection::vec((-100_000i32..100_000, any::<u16>(), -1e3f64..1e3), 1..1000)) {
        let a = Array1::from_iter(lanes.iter().map(|l| l.0));
        let b = Array1::from_iter(lanes.iter().map(|l| l.1));
        let x = Array1::from_iter(lanes.iter().map(|l| l.2));
        for config in modes() {
            let (w, bits, f, flag) = kitchen_sink::batch(a.view(), b.view(), x.view(), &config).unwrap();
            for (i, &(a, b, x)) in lanes.iter().enumerate() {
                let (ew, ebits, ef, eflag) = kitchen_sink(a, b, x);
                prop_assert_eq!((w[i], bits[i], f[i].to_bits(), flag[i]), (ew, ebits, ef.to_bits(), eflag));
            }
        }
    }
}

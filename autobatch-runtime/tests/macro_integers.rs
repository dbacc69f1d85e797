//! Every integer type in #[autobatch] code, written as users write it: modular power with
//! `u64` and `wrapping_mul`, popcount, Collatz on `u32`, bit tricks with rotates and shifts, a
//! checksum over `u8`, conversions between widths, `MIN`/`MAX`/`BITS` constants, `abs_diff`,
//! `usize` indices into vectors, primitives over narrow integers, and unannotated literals
//! and `let`s typed as rustc types them. The scalar function, stackless and the full VM agree
//! on proptest batches of 1 to 1,000 lanes with inputs at the types' `MIN` and `MAX` (and the
//! reference interpreter on fixed ones); a lane whose scalar function panics (a debug build's
//! overflow, a division by zero) fails alone, with a kernel error naming that lane.

use autobatch_runtime::ndarray::{Array1, Array2, ArrayView1};
use autobatch_runtime::{
    autobatch, primitive, Column, Config, Isolated, Mode, RuntimeError, Vector,
};
use proptest::prelude::*;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

// ---------------------------------------------------------------------------------------------
// Programs.

/// `base^exp mod m` by squaring (`m` below 2^32, so products fit).
#[autobatch]
fn mod_pow(base: u64, exp: u64, m: u64) -> u64 {
    let mut result = 1;
    let mut b = base % m;
    let mut e = exp;
    while e > 0 {
        if e & 1 == 1 {
            result = result * b % m;
        }
        b = b.wrapping_mul(b) % m;
        e >>= 1;
    }
    result
}

/// Set bits, counted by recursion on the shifted value.
#[autobatch]
fn popcount(x: u32) -> u32 {
    if x == 0 {
        0
    } else {
        (x & 1) + popcount(x >> 1)
    }
}

/// The bit-counting methods at once.
#[autobatch]
fn bit_counts(x: u64) -> (u32, u32, u32, u32) {
    (
        x.count_ones(),
        x.count_zeros(),
        x.leading_zeros(),
        x.trailing_zeros(),
    )
}

/// Collatz steps on `u32` (the counter's type comes from the return type).
#[autobatch]
fn collatz(n: u32) -> u32 {
    let mut x = n;
    let mut steps = 0;
    while x != 1 {
        if x.is_multiple_of(2) {
            x /= 2;
        } else {
            x = 3 * x + 1;
        }
        steps += 1;
    }
    steps
}

/// Bit tricks: rotates, shifts, byte swaps and bit reversal.
#[autobatch]
fn mix(x: u64, k: u32) -> u64 {
    let y = x.rotate_left(k) ^ x.rotate_right(k % 7);
    let z = (y.swap_bytes() >> 3) | (y.reverse_bits() << 1);
    z.wrapping_shl(k).wrapping_add(y.wrapping_shr(k + 1))
}

/// A checksum over the bytes `seed, seed + 1, ..` with wrapping arithmetic on `u8`; the loop
/// counter is a `u16` because it is compared with `n`.
#[autobatch]
fn checksum(seed: u8, n: u16) -> u8 {
    let mut acc = 0u8;
    let mut i = 0;
    while i < n {
        let byte = seed.wrapping_add(i as u8);
        acc = acc.wrapping_add(byte).rotate_left(3) ^ 0x5a;
        i += 1;
    }
    acc
}

/// Conversions between widths: `as`, `From`, `into()`, bool to int.
#[autobatch]
fn widths(a: i8, b: u16, c: i32) -> (i64, u64, f64, i16, u8, usize) {
    let wide: i64 = b.into();
    let sum = i64::from(a) + wide + c as i64;
    let product = u64::from(b) * 3 + (a < 0) as u64;
    let f = f64::from(c) + f64::from(a);
    let narrow = a as i16 * 2;
    let truncated = c as u8;
    let index = b as usize + usize::from(c > 0);
    (sum, product, f, narrow, truncated, index)
}

/// `MIN`, `MAX` and `BITS` constants with saturating and wrapping arithmetic.
#[autobatch]
fn limits(x: i64, y: i64) -> (i64, i64, bool, u32) {
    let s = x.saturating_add(y);
    let near = if x > i64::MAX / 2 {
        i64::MAX - x
    } else {
        x - i64::MIN / 2
    };
    let w = x.wrapping_sub(y).wrapping_neg();
    (
        s.min(near),
        w,
        s == i64::MAX || s == i64::MIN,
        i64::BITS - x.leading_zeros(),
    )
}

/// Signed helpers: `abs_diff`, `unsigned_abs`, `signum`, Euclidean division, signs.
#[autobatch]
fn signed(a: i32, b: i32) -> (u32, u32, i32, i32, (i32, i32, i32), bool) {
    let d = if b == 0 { 7 } else { b };
    (
        a.abs_diff(b),
        a.unsigned_abs(),
        a.signum() * b.signum(),
        a.rem_euclid(d),
        (
            a.wrapping_div(d),
            (a / 2).abs().clamp(-5, 1 << 20),
            a.div_euclid(d),
        ),
        a.is_negative() != b.is_positive(),
    )
}

/// Powers and square roots on unsigned types; `k` becomes a `u32` from its use as an exponent.
#[autobatch]
fn powers(x: u16, e: u8) -> (u16, u16, u32, u16) {
    let k = 2;
    let p = x.saturating_pow(e as u32);
    let w = x.wrapping_pow(e as u32);
    let q = (x as u32).pow(k);
    (p, w, q, x.isqrt())
}

/// `overflowing_*` gives a tuple of the wrapped value and whether it overflowed.
#[autobatch]
fn overflowing(a: u32, b: u32) -> (u32, bool) {
    let (sum, over) = a.overflowing_add(b);
    let (product, over2) = sum.overflowing_mul(3);
    (product, over || over2)
}

/// Float bits: `to_bits` and `f64::from_bits` round trip, with a flipped sign bit.
#[autobatch]
fn float_bits(x: f64) -> (u64, f64, u32) {
    let bits = x.to_bits();
    let flipped = f64::from_bits(bits ^ (1 << 63));
    (bits, flipped, (x as f32).to_bits())
}

/// Triangular numbers on `usize` by recursion; narrower signed types on the way.
#[autobatch]
fn triangle(n: usize, step: i16) -> (usize, isize) {
    if n == 0 {
        (0, step as isize)
    } else {
        let (t, s) = triangle(n - 1, step);
        (t + n, s + isize::from(step))
    }
}

/// Literal typing as rustc does it: a literal compared with or added to a `u8` is a `u8`; an
/// unannotated `let` takes the type of its uses (a comparison, an assignment inside an `if`,
/// an argument of the function itself, the return value).
#[autobatch]
fn literals(x: u8, c: bool, depth: u16) -> (u8, u64, u16, i64) {
    let mut state = 0;
    if c {
        state = u64::from(x) << 40;
    }
    let limit = 200;
    let small = if x < limit { x + 1 } else { x - 50 };
    let next = depth / 2;
    let deep = if depth > 0 {
        literals(x, !c, next).2 + 1
    } else {
        0
    };
    let mut total = 0;
    let mut i = 0;
    while i < 3 {
        total += i;
        i += 1;
    }
    (small, state, deep, total * 1_000_000_000_000)
}

/// Iterative Fibonacci on `u64`: the pair starts as a tuple of bare literals, typed from the
/// return value as rustc types it.
#[autobatch]
fn fib_pair(n: u8) -> u64 {
    let (mut a, mut b) = (0, 1);
    let mut i = 0;
    while i < n {
        let next = a + b;
        a = b;
        b = next;
        i += 1;
    }
    a
}

/// The first `k` elements of a vector summed, indexed by a `usize` counter (its type comes
/// from `len()` and `get`).
#[autobatch]
fn prefix_sum(v: Vector, k: usize) -> f64 {
    let mut i = 0;
    let mut s = 0.0;
    while i < v.len() && i < k {
        s += v.get(i);
        i += 1;
    }
    s
}

/// A batched primitive over `u16`.
#[primitive(batched = bump_all)]
fn bump(x: u16) -> u16 {
    x.wrapping_add(7)
}

fn bump_all(x: ArrayView1<u16>) -> Array1<u16> {
    x.mapv(|v| v.wrapping_add(7))
}

/// A lane-wise primitive from `u32` to `bool`.
#[primitive]
fn parity(x: u32) -> bool {
    x.count_ones() % 2 == 1
}

/// Primitives taking and returning narrow integers.
#[autobatch]
fn use_primitives(x: u32, y: u16) -> (bool, u16) {
    let p: bool = parity(x);
    let b: u16 = bump(y);
    (p, b)
}

/// `a + b` on `u8`: overflows for large inputs (a panic in a debug build, wraps in release).
#[autobatch]
fn add_u8(a: u8, b: u8) -> u8 {
    a + b
}

/// Integer division, recursing first: a zero divisor fails its lane only.
#[autobatch]
fn divide_after(n: u8, a: i16, b: i16) -> i16 {
    if n == 0 {
        a / b
    } else {
        divide_after(n - 1, a, b) + 1
    }
}

// ---------------------------------------------------------------------------------------------
// The differential check.

thread_local! {
    /// True while this thread runs a scalar function whose panic is an expected lane failure.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// `f()`, or `None` if it panics (without printing the panic: it is the lane failure the
/// batched run must report).
fn scalar<O>(f: impl FnOnce() -> O) -> Option<O> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    QUIET.with(|q| q.set(true));
    let out = catch_unwind(AssertUnwindSafe(f)).ok();
    QUIET.with(|q| q.set(false));
    out
}

/// Both modes with lane isolation: lane `i` fails exactly when the scalar function panics on
/// it (with a kernel error naming that lane), and every other lane equals the scalar result.
fn agree<B, O>(
    lanes: usize,
    scalar_at: impl Fn(usize) -> O,
    batch: impl Fn(&Config) -> Result<Isolated<B>, RuntimeError>,
    row: impl Fn(&B, usize) -> O,
) -> Result<(), TestCaseError>
where
    O: PartialEq + std::fmt::Debug,
{
    let expected: Vec<Option<O>> = (0..lanes).map(|i| scalar(|| scalar_at(i))).collect();
    let bad: Vec<usize> = (0..lanes).filter(|&i| expected[i].is_none()).collect();
    for mode in [Mode::FullVm, Mode::Stackless] {
        let run = batch(&Config::with_mode(mode))
            .map_err(|e| TestCaseError::fail(format!("{mode:?}: {e}")))?;
        let failed: Vec<usize> = run.failed.iter().map(|f| f.lane).collect();
        prop_assert_eq!(&failed, &bad, "{:?}: {:?}", mode, run.failed);
        for f in &run.failed {
            let lane_at_fault =
                matches!(f.error, RuntimeError::Kernel { lane, .. } if lane == f.lane);
            prop_assert!(lane_at_fault, "{:?}: {}", mode, f.error);
        }
        for (i, want) in expected.iter().enumerate() {
            if let Some(want) = want {
                prop_assert_eq!(&row(&run.outputs, i), want, "{:?} lane {}", mode, i);
            }
        }
    }
    Ok(())
}

/// Values of an integer type, a third of them at its `MIN`, `MAX` or zero.
macro_rules! edgy {
    ($t:ty) => {
        prop_oneof![
            6 => any::<$t>(),
            1 => Just(<$t>::MIN),
            1 => Just(<$t>::MAX),
            1 => Just(0 as $t),
        ]
    };
}

/// `n` lanes of `strategy`, as an array.
fn lanes<T: std::fmt::Debug>(
    strategy: impl Strategy<Value = T>,
    n: std::ops::Range<usize>,
) -> impl Strategy<Value = Vec<T>> {
    prop::collection::vec(strategy, n)
}

fn arr<T: Clone>(v: &[T]) -> Array1<T> {
    Array1::from_vec(v.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(16)))]

    #[test]
    fn modular_power(v in lanes((edgy!(u64), 0u64..200, 1u64..u32::MAX as u64), 1..1000)) {
        let (b, e, m) = (arr(&v.iter().map(|x| x.0).collect::<Vec<_>>()), arr(&v.iter().map(|x| x.1).collect::<Vec<_>>()), arr(&v.iter().map(|x| x.2).collect::<Vec<_>>()));
        agree(v.len(), |i| mod_pow(v[i].0, v[i].1, v[i].2),
            |c| mod_pow::batch_isolated(b.view(), e.view(), m.view(), c), |o, i| o[i])?;
    }

    #[test]
    fn population_counts(xs in lanes(edgy!(u32), 1..1000), ys in lanes(edgy!(u64), 1..1000)) {
        let x = arr(&xs);
        agree(xs.len(), |i| popcount(xs[i]), |c| popcount::batch_isolated(x.view(), c), |o, i| o[i])?;
        let y = arr(&ys);
        agree(ys.len(), |i| bit_counts(ys[i]), |c| bit_counts::batch_isolated(y.view(), c),
            |o, i| (o.0[i], o.1[i], o.2[i], o.3[i]))?;
    }

    #[test]
    fn collatz_on_u32(ns in lanes(1u32..100_000, 1..1000)) {
        let n = arr(&ns);
        agree(ns.len(), |i| collatz(ns[i]), |c| collatz::batch_isolated(n.view(), c), |o, i| o[i])?;
    }

    #[test]
    fn bit_tricks(v in lanes((edgy!(u64), 0u32..64), 1..1000)) {
        let (x, k) = (arr(&v.iter().map(|p| p.0).collect::<Vec<_>>()), arr(&v.iter().map(|p| p.1).collect::<Vec<_>>()));
        agree(v.len(), |i| mix(v[i].0, v[i].1), |c| mix::batch_isolated(x.view(), k.view(), c), |o, i| o[i])?;
    }

    #[test]
    fn checksum_over_bytes(v in lanes((edgy!(u8), 0u16..600), 1..500)) {
        let (s, n) = (arr(&v.iter().map(|p| p.0).collect::<Vec<_>>()), arr(&v.iter().map(|p| p.1).collect::<Vec<_>>()));
        agree(v.len(), |i| checksum(v[i].0, v[i].1), |c| checksum::batch_isolated(s.view(), n.view(), c), |o, i| o[i])?;
    }

    #[test]
    fn conversions_between_widths(v in lanes((edgy!(i8), edgy!(u16), edgy!(i32)), 1..1000)) {
        let a = arr(&v.iter().map(|p| p.0).collect::<Vec<_>>());
        let b = arr(&v.iter().map(|p| p.1).collect::<Vec<_>>());
        let c3 = arr(&v.iter().map(|p| p.2).collect::<Vec<_>>());
        agree(v.len(), |i| { let r = widths(v[i].0, v[i].1, v[i].2); (r.0, r.1, r.2.to_bits(), r.3, r.4, r.5) },
            |c| widths::batch_isolated(a.view(), b.view(), c3.view(), c),
            |o, i| (o.0[i], o.1[i], o.2[i].to_bits(), o.3[i], o.4[i], o.5[i]))?;
    }

    #[test]
    fn min_max_constants(v in lanes((edgy!(i64), edgy!(i64)), 1..1000)) {
        let (x, y) = (arr(&v.iter().map(|p| p.0).collect::<Vec<_>>()), arr(&v.iter().map(|p| p.1).collect::<Vec<_>>()));
        agree(v.len(), |i| limits(v[i].0, v[i].1), |c| limits::batch_isolated(x.view(), y.view(), c),
            |o, i| (o.0[i], o.1[i], o.2[i], o.3[i]))?;
    }

    #[test]
    fn signed_helpers(v in lanes((edgy!(i32), edgy!(i32)), 1..1000)) {
        let (a, b) = (arr(&v.iter().map(|p| p.0).collect::<Vec<_>>()), arr(&v.iter().map(|p| p.1).collect::<Vec<_>>()));
        agree(v.len(), |i| signed(v[i].0, v[i].1), |c| signed::batch_isolated(a.view(), b.view(), c),
            |o, i| (o.0[i], o.1[i], o.2[i], o.3[i], (o.4.0[i], o.4.1[i], o.4.2[i]), o.5[i]))?;
    }

    #[test]
    fn powers_and_roots(v in lanes((edgy!(u16), 0u8..20), 1..1000)) {
        let (x, e) = (arr(&v.iter().map(|p| p.0).collect::<Vec<_>>()), arr(&v.iter().map(|p| p.1).collect::<Vec<_>>()));
        agree(v.len(), |i| powers(v[i].0, v[i].1), |c| powers::batch_isolated(x.view(), e.view(), c),
            |o, i| (o.0[i], o.1[i], o.2[i], o.3[i]))?;
    }

    #[test]
    fn overflow_flags(v in lanes((edgy!(u32), edgy!(u32)), 1..1000)) {
        let (a, b) = (arr(&v.iter().map(|p| p.0).collect::<Vec<_>>()), arr(&v.iter().map(|p| p.1).collect::<Vec<_>>()));
        agree(v.len(), |i| overflowing(v[i].0, v[i].1), |c| overflowing::batch_isolated(a.view(), b.view(), c),
            |o, i| (o.0[i], o.1[i]))?;
    }

    #[test]
    fn float_bit_patterns(xs in lanes(any::<f64>(), 1..1000)) {
        let x = arr(&xs);
        agree(xs.len(), |i| { let r = float_bits(xs[i]); (r.0, r.1.to_bits(), r.2) },
            |c| float_bits::batch_isolated(x.view(), c), |o, i| (o.0[i], o.1[i].to_bits(), o.2[i]))?;
    }

    #[test]
    fn pointer_sized_recursion(v in lanes((0usize..200, edgy!(i16)), 1..300)) {
        let (n, s) = (arr(&v.iter().map(|p| p.0).collect::<Vec<_>>()), arr(&v.iter().map(|p| p.1).collect::<Vec<_>>()));
        agree(v.len(), |i| triangle(v[i].0, v[i].1), |c| triangle::batch_isolated(n.view(), s.view(), c),
            |o, i| (o.0[i], o.1[i]))?;
    }

    #[test]
    fn literal_typing(v in lanes((edgy!(u8), any::<bool>(), 0u16..300), 1..300)) {
        let x = arr(&v.iter().map(|p| p.0).collect::<Vec<_>>());
        let c3 = arr(&v.iter().map(|p| p.1).collect::<Vec<_>>());
        let d = arr(&v.iter().map(|p| p.2).collect::<Vec<_>>());
        agree(v.len(), |i| literals(v[i].0, v[i].1, v[i].2),
            |c| literals::batch_isolated(x.view(), c3.view(), d.view(), c), |o, i| (o.0[i], o.1[i], o.2[i], o.3[i]))?;
    }

    #[test]
    fn fibonacci_from_a_tuple_of_literals(ns in lanes(0u8..100, 1..1000)) {
        let n = arr(&ns);
        agree(ns.len(), |i| fib_pair(ns[i]), |c| fib_pair::batch_isolated(n.view(), c), |o, i| o[i])?;
    }

    #[test]
    fn vectors_indexed_by_usize(rows in lanes((prop::collection::vec(-1e3f64..1e3, 4), 0usize..6), 1..300)) {
        let v = Array2::from_shape_fn((rows.len(), 4), |(r, c)| rows[r].0[c]);
        let k = arr(&rows.iter().map(|p| p.1).collect::<Vec<_>>());
        let scalar_at = |i: usize| prefix_sum(Vector::from(rows[i].0.clone()), rows[i].1).to_bits();
        agree(rows.len(), scalar_at, |c| prefix_sum::batch_isolated(v.view(), k.view(), c), |o, i| o[i].to_bits())?;
    }

    #[test]
    fn primitives_over_narrow_integers(v in lanes((edgy!(u32), edgy!(u16)), 1..1000)) {
        let (x, y) = (arr(&v.iter().map(|p| p.0).collect::<Vec<_>>()), arr(&v.iter().map(|p| p.1).collect::<Vec<_>>()));
        agree(v.len(), |i| use_primitives(v[i].0, v[i].1), |c| use_primitives::batch_isolated(x.view(), y.view(), c),
            |o, i| (o.0[i], o.1[i]))?;
    }

    /// In a debug build `a + b` panics on overflow and so fails its lane; in release it wraps:
    /// either way the batched lane does what the scalar function does.
    #[test]
    fn overflow_as_the_build_has_it(v in lanes((edgy!(u8), edgy!(u8)), 1..1000)) {
        let (a, b) = (arr(&v.iter().map(|p| p.0).collect::<Vec<_>>()), arr(&v.iter().map(|p| p.1).collect::<Vec<_>>()));
        agree(v.len(), |i| add_u8(v[i].0, v[i].1), |c| add_u8::batch_isolated(a.view(), b.view(), c), |o, i| o[i])?;
    }

    #[test]
    fn division_by_zero_fails_its_lane(v in lanes((0u8..5, edgy!(i16), prop_oneof![Just(0i16), Just(-1), any::<i16>()]), 1..500)) {
        let n = arr(&v.iter().map(|p| p.0).collect::<Vec<_>>());
        let a = arr(&v.iter().map(|p| p.1).collect::<Vec<_>>());
        let b = arr(&v.iter().map(|p| p.2).collect::<Vec<_>>());
        agree(v.len(), |i| divide_after(v[i].0, v[i].1, v[i].2),
            |c| divide_after::batch_isolated(n.view(), a.view(), b.view(), c), |o, i| o[i])?;
    }
}

/// Without isolation, an overflowing lane fails the whole batch with a typed error naming the
/// lane, the expression and the overflow (a debug build: overflow checks on).
#[cfg(debug_assertions)]
#[test]
fn a_debug_overflow_is_a_typed_error_for_its_lane() {
    let a = Array1::from_vec(vec![1u8, 200, 3]);
    let b = Array1::from_vec(vec![1u8, 100, 3]);
    for mode in [Mode::FullVm, Mode::Stackless] {
        let err = add_u8::batch(a.view(), b.view(), &Config::with_mode(mode)).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("`a + b`")
                && message.contains("lane 1")
                && message.contains("overflow"),
            "{mode:?}: {message}"
        );
        let run = add_u8::batch_isolated(a.view(), b.view(), &Config::with_mode(mode)).unwrap();
        assert_eq!(run.failed.iter().map(|f| f.lane).collect::<Vec<_>>(), [1]);
        assert_eq!((run.outputs[0], run.outputs[2]), (2, 6));
    }
}

/// Each integer type is its own dtype in the program.
#[test]
fn programs_hold_each_integer_type() {
    let text = checksum::program().unwrap().to_string();
    assert!(text.contains("checksum.seed :: register, u8"), "{text}");
    // The loop counter is compared with `n: u16`, so rustc (and the macro) make it a `u16`.
    assert!(text.contains("checksum.i :: register, u16"), "{text}");
    let text = triangle::program().unwrap().to_string();
    assert!(
        text.contains("usize") && text.contains("isize") && text.contains("i16"),
        "{text}"
    );
}

/// The single-lane reference interpreter (the oracle, on the program as linked) agrees with
/// both modes and with the scalar function on narrow and pointer-sized types at their limits.
#[test]
fn the_reference_interpreter_agrees_on_every_width() {
    let seeds = [0u8, 1, 127, 128, 254, 255];
    let counts = [0u16, 1, 255, 256, 599, u16::MAX / 64];
    let inputs = [Column::from_scalars(&seeds), Column::from_scalars(&counts)];
    let exe = checksum::executable().unwrap();
    let oracle = exe.run_reference(&inputs, &Config::default()).unwrap();
    let expected: Vec<u8> = seeds
        .iter()
        .zip(&counts)
        .map(|(&s, &n)| checksum(s, n))
        .collect();
    assert_eq!(
        oracle.outputs[0].as_slice::<u8>().unwrap(),
        expected.as_slice()
    );
    for mode in [Mode::FullVm, Mode::Stackless] {
        let run = exe.run(&inputs, &Config::with_mode(mode)).unwrap();
        assert_eq!(run.outputs, oracle.outputs, "{mode:?}");
    }
    let ns = [0usize, 1, 2, 50];
    let steps = [i16::MIN, -1, 0, i16::MAX];
    let inputs = [Column::from_scalars(&ns), Column::from_scalars(&steps)];
    let exe = triangle::executable().unwrap();
    let oracle = exe.run_reference(&inputs, &Config::default()).unwrap();
    for (i, (&n, &s)) in ns.iter().zip(&steps).enumerate() {
        let (t, sum) = triangle(n, s);
        assert_eq!(oracle.outputs[0].as_slice::<usize>().unwrap()[i], t);
        assert_eq!(oracle.outputs[1].as_slice::<isize>().unwrap()[i], sum);
    }
    for mode in [Mode::FullVm, Mode::Stackless] {
        assert_eq!(
            exe.run(&inputs, &Config::with_mode(mode)).unwrap().outputs,
            oracle.outputs
        );
    }
}

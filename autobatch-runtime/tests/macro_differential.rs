//! Differential tests of #[autobatch]: for programs written as users would, the plain scalar
//! function, stackless, the full VM and the reference interpreter agree lane by lane (floats
//! bit for bit), on proptest batches of 1 to 1,000 lanes.

use autobatch_runtime::ndarray::{Array1, ArrayView1};
use autobatch_runtime::{autobatch, Column, Config, Mode, RuntimeError};
use proptest::prelude::*;

mod language;

#[autobatch]
fn fib(n: i64) -> i64 {
    if n <= 1 {
        1
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

#[autobatch]
fn is_even(n: i64) -> bool {
    if n <= 0 {
        true
    } else {
        is_odd(n - 1)
    }
}

#[autobatch]
fn is_odd(n: i64) -> bool {
    if n <= 0 {
        false
    } else {
        is_even(n - 1)
    }
}

#[autobatch]
fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[autobatch]
fn collatz_steps(n: i64) -> i64 {
    let mut n = n;
    let mut steps = 0;
    while n != 1 {
        if n % 2 == 0 {
            n /= 2;
        } else {
            n = 3 * n + 1;
        }
        steps += 1;
    }
    steps
}

/// Integer square root by Newton's iteration, with `loop` / `break value`.
#[autobatch]
fn isqrt(n: i64) -> i64 {
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

#[autobatch]
fn ackermann(m: i64, n: i64) -> i64 {
    if m == 0 {
        n + 1
    } else if n == 0 {
        ackermann(m - 1, 1)
    } else {
        ackermann(m - 1, ackermann(m, n - 1))
    }
}

/// The first `k` in `1..limit` whose square exceeds `target`, with early returns inside loops.
#[autobatch]
fn first_square_above(target: i64, limit: i64) -> i64 {
    let mut k = 1;
    while k < limit {
        if k * k > target {
            return k;
        }
        k += 1;
        if k > 1000 {
            return -1;
        }
    }
    limit
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

/// The reference's `iota_sum`, with a loop instead of tail recursion.
#[autobatch]
fn iota_sum(n: i64, acc: i64) -> i64 {
    let mut n = n;
    let mut acc = acc;
    while n > 0 {
        acc += n;
        n -= 1;
    }
    acc
}

/// `&&` whose right side calls an autobatched function must short-circuit.
#[autobatch]
fn even_and_small(n: i64) -> bool {
    n < 40 && is_even(n)
}

/// Tuples in and out.
#[autobatch]
fn divmod(a: i64, b: i64) -> (i64, i64) {
    if b == 0 {
        (0, a)
    } else {
        (a / b, a % b)
    }
}

fn modes() -> [Config; 2] {
    [
        Config::with_mode(Mode::FullVm),
        Config::with_mode(Mode::Stackless),
    ]
}

/// Checks a single-input function: every mode and the oracle equal the scalar function.
fn check1<T, O>(
    inputs: &[T],
    scalar: impl Fn(T) -> O,
    batch: impl Fn(ArrayView1<'_, T>, &Config) -> Result<Array1<O>, RuntimeError>,
) -> Result<(), TestCaseError>
where
    T: Copy + std::fmt::Debug,
    O: PartialEq + std::fmt::Debug + Clone,
{
    let input = Array1::from_vec(inputs.to_vec());
    let expected: Vec<O> = inputs.iter().map(|&x| scalar(x)).collect();
    for config in modes() {
        let got = batch(input.view(), &config)
            .map_err(|e| TestCaseError::fail(format!("{:?}: {e}", config.mode)))?;
        prop_assert_eq!(
            got.to_vec(),
            expected.clone(),
            "{:?} on {:?}",
            config.mode,
            inputs
        );
    }
    Ok(())
}

fn check2<A, B, O>(
    a: &[A],
    b: &[B],
    scalar: impl Fn(A, B) -> O,
    batch: impl Fn(ArrayView1<'_, A>, ArrayView1<'_, B>, &Config) -> Result<Array1<O>, RuntimeError>,
) -> Result<(), TestCaseError>
where
    A: Copy + std::fmt::Debug,
    B: Copy + std::fmt::Debug,
    O: PartialEq + std::fmt::Debug + Clone,
{
    let (va, vb) = (Array1::from_vec(a.to_vec()), Array1::from_vec(b.to_vec()));
    let expected: Vec<O> = a.iter().zip(b).map(|(&x, &y)| scalar(x, y)).collect();
    for config in modes() {
        let got = batch(va.view(), vb.view(), &config)
            .map_err(|e| TestCaseError::fail(format!("{:?}: {e}", config.mode)))?;
        prop_assert_eq!(got.to_vec(), expected.clone(), "{:?}", config.mode);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn fibonacci(ns in prop::collection::vec(0i64..16, 1..300)) {
        check1(&ns, fib, fib::batch)?;
    }

    #[test]
    fn mutual_recursion(ns in prop::collection::vec(0i64..60, 1..1000)) {
        check1(&ns, is_even, is_even::batch)?;
        check1(&ns, even_and_small, even_and_small::batch)?;
    }

    #[test]
    fn gcd_with_swapped_arguments(pairs in prop::collection::vec((0i64..10_000, 0i64..10_000), 1..1000)) {
        let (a, b): (Vec<i64>, Vec<i64>) = pairs.into_iter().unzip();
        check2(&a, &b, gcd, gcd::batch)?;
    }

    #[test]
    fn collatz_with_while(ns in prop::collection::vec(1i64..5_000, 1..1000)) {
        check1(&ns, collatz_steps, collatz_steps::batch)?;
    }

    #[test]
    fn newton_isqrt_with_loop_break(ns in prop::collection::vec(0i64..1_000_000_000, 1..1000)) {
        check1(&ns, isqrt, isqrt::batch)?;
    }

    #[test]
    fn ackermann_small(pairs in prop::collection::vec((0i64..3, 0i64..4), 1..64)) {
        let (m, n): (Vec<i64>, Vec<i64>) = pairs.into_iter().unzip();
        check2(&m, &n, ackermann, ackermann::batch)?;
    }

    #[test]
    fn early_returns_inside_loops(pairs in prop::collection::vec((0i64..3_000_000, 1i64..2_000), 1..500)) {
        let (t, l): (Vec<i64>, Vec<i64>) = pairs.into_iter().unzip();
        check2(&t, &l, first_square_above, first_square_above::batch)?;
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
    fn tuple_returns(pairs in prop::collection::vec((-1000i64..1000, -5i64..5), 1..200)) {
        let (a, b): (Vec<i64>, Vec<i64>) = pairs.into_iter().unzip();
        let (va, vb) = (Array1::from_vec(a.clone()), Array1::from_vec(b.clone()));
        for config in modes() {
            let (q, r) = divmod::batch(va.view(), vb.view(), &config).unwrap();
            for i in 0..a.len() {
                prop_assert_eq!((q[i], r[i]), divmod(a[i], b[i]));
            }
        }
    }
}

/// The reference front end's conformance checks (docs/reference-semantics.md, "Conformance
/// programs"), through the macro.
#[test]
fn reference_frontend_conformance() {
    use autobatch_runtime::ndarray::array;
    for config in modes() {
        assert_eq!(
            fib::batch(array![6i64, 7, 8, 9].view(), &config).unwrap(),
            array![13, 21, 34, 55]
        );
        assert_eq!(
            gcd::batch(
                array![7i64, 12, 49].view(),
                array![9i64, 9, 56].view(),
                &config
            )
            .unwrap(),
            array![1, 3, 7]
        );
        assert_eq!(
            iota_sum::batch(
                array![12i64, -13, 100].view(),
                array![0i64, 0, 0].view(),
                &config
            )
            .unwrap(),
            array![78, 0, 5050]
        );
        assert_eq!(
            is_even::batch(array![5i64, 6, 8, 9].view(), &config).unwrap(),
            array![false, true, true, false]
        );
        assert_eq!(iota_sum(12, 0), 78);
    }
}

/// Both modes also agree with the single-lane reference interpreter on the linked programs.
#[test]
fn linked_programs_agree_with_the_reference_interpreter() {
    let ns = Array1::from_vec((0..200).map(|i| i % 17).collect::<Vec<i64>>());
    let exe = fib::executable().unwrap();
    let inputs = [Column::from_view1(ns.view())];
    let oracle = exe.run_reference(&inputs, &Config::default()).unwrap();
    for config in modes() {
        assert_eq!(exe.run(&inputs, &config).unwrap().outputs, oracle.outputs);
    }
}

/// Calls across modules resolve through the callee's generated module.
mod geometry {
    use autobatch_runtime::autobatch;

    #[autobatch]
    pub fn square(x: i64) -> i64 {
        x * x
    }
}

#[autobatch]
fn sum_of_squares(a: i64, b: i64) -> i64 {
    geometry::square(a) + geometry::square(b)
}

#[test]
fn calls_across_modules() {
    use autobatch_runtime::ndarray::array;
    for config in modes() {
        let out = sum_of_squares::batch(
            array![1i64, 2, 3].view(),
            array![4i64, 5, 6].view(),
            &config,
        )
        .unwrap();
        assert_eq!(out, array![17, 29, 45]);
    }
    assert_eq!(sum_of_squares(1, 4), 17);
}

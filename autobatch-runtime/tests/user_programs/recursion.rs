//! Recursion as users write it: Fibonacci, Ackermann, two- and three-way mutual recursion,
//! short-circuiting into a recursive call, and deep (non-tail) recursion of thousands of frames.

use super::{check1, check2};
use autobatch_runtime::autobatch;
use autobatch_runtime::ndarray::Array1;
use autobatch_runtime::{Config, Mode};
use proptest::prelude::*;

#[autobatch]
pub(crate) fn fib(n: i64) -> i64 {
    if n <= 1 {
        1
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

#[autobatch]
pub(crate) fn is_even(n: i64) -> bool {
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

/// `&&` whose right side calls an autobatched function must short-circuit.
#[autobatch]
fn even_and_small(n: i64) -> bool {
    n < 40 && is_even(n)
}

#[autobatch]
fn ackermann(m: u32, n: u32) -> u32 {
    if m == 0 {
        n + 1
    } else if n == 0 {
        ackermann(m - 1, 1)
    } else {
        ackermann(m - 1, ackermann(m, n - 1))
    }
}

/// Three-way mutual recursion: `n % 3` by counting down through three functions.
#[autobatch]
fn rem3(n: u32) -> u8 {
    if n == 0 {
        0
    } else {
        rem3_two(n - 1)
    }
}

#[autobatch]
fn rem3_one(n: u32) -> u8 {
    if n == 0 {
        1
    } else {
        rem3(n - 1)
    }
}

#[autobatch]
fn rem3_two(n: u32) -> u8 {
    if n == 0 {
        2
    } else {
        rem3_one(n - 1)
    }
}

/// Deep recursion that is not a tail call: thousands of frames per lane, of different depths.
#[autobatch]
fn sum_down(n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        n + sum_down(n - 1)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(24)))]

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
    fn ackermann_small(pairs in prop::collection::vec((0u32..3, 0u32..4), 1..64)) {
        let (m, n): (Vec<u32>, Vec<u32>) = pairs.into_iter().unzip();
        check2(&m, &n, ackermann, ackermann::batch)?;
    }

    #[test]
    fn three_way_mutual_recursion(ns in prop::collection::vec(0u32..250, 1..1000)) {
        check1(&ns, rem3, rem3::batch)?;
    }

    #[test]
    fn deep_recursion(ns in prop::collection::vec(0u64..3_000, 1..1000)) {
        let input = Array1::from_vec(ns.clone());
        let expected: Vec<u64> = ns.iter().map(|&n| sum_down(n)).collect();
        for mode in [Mode::FullVm, Mode::Stackless] {
            let config = Config { max_stack_depth: 3_001, ..Config::with_mode(mode) };
            let got = sum_down::batch(input.view(), &config).unwrap();
            prop_assert_eq!(got.to_vec(), expected.clone(), "{:?}", mode);
        }
    }
}

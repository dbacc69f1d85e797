//! Programs written as users write them, the test set of the language: recursion, loops,
//! `match`, arithmetic and tuples, one file per family. Each runs differentially: the plain
//! scalar function, stackless and the full VM agree lane by lane (floats bit for bit) on
//! proptest batches of 1 to 1,000 lanes; the reference interpreter agrees on linked programs.

use autobatch_runtime::ndarray::{Array1, ArrayView1};
use autobatch_runtime::{autobatch, Column, Config, Mode, RuntimeError};
use proptest::prelude::*;

mod arithmetic;
mod loops;
mod matching;
mod recursion;
mod tuples;

use arithmetic::gcd;
use loops::iota_sum;
use recursion::{fib, is_even};

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

//! Call results typed from the callee's own signature, with no annotation: in any expression
//! position (`(square(a) + square(b)).sqrt()`, `pair(x).0`, nested calls, method receivers),
//! for callees later in the file, in other modules, imported by `use` (renamed too), mutually
//! recursive, and primitives; the scalar function, stackless and the full VM agreeing bit for
//! bit on proptest batches of 1 to 1,000 lanes.

use autobatch_runtime::ndarray::{Array1, ArrayView1};
use autobatch_runtime::{autobatch, primitive, Config, Mode, RuntimeError};
use proptest::prelude::*;

/// The hypotenuse through a callee defined later in the file, in an expression.
#[autobatch]
fn hypot(a: f64, b: f64) -> f64 {
    (square(a) + square(b)).sqrt()
}

/// A tuple result's element read straight off the call, a nested call as an argument.
#[autobatch]
fn first_of_pair(x: i64) -> i64 {
    pair(x).0 + pair(pair(x).0).1 as i64
}

/// Callees in another module, by path and through a renamed `use`.
#[autobatch]
fn across_modules(x: f64) -> f64 {
    let c = geometry::cube(x);
    c.max(sq(x)) + crate::geometry::inner::halve(c).abs()
}

use geometry::cube as sq;

/// Mutual recursion with no annotation anywhere.
#[autobatch]
fn countdown_even(n: i64) -> bool {
    if n == 0 {
        true
    } else {
        countdown_odd(n - 1) && n > 0
    }
}

/// The other half of the mutual recursion.
#[autobatch]
fn countdown_odd(n: i64) -> bool {
    if n == 0 {
        false
    } else {
        countdown_even(n - 1)
    }
}

/// A primitive's result in an expression, and a recursive call's result as a method receiver.
#[autobatch]
fn damped(x: f64, n: i64) -> f64 {
    if n <= 0 {
        clamp_unit(x)
    } else {
        damped(x * 0.5, n - 1).mul_add(0.25, clamp_unit(x) * 0.5)
    }
}

/// A mapped primitive.
#[primitive]
fn clamp_unit(x: f64) -> f64 {
    x.clamp(-1.0, 1.0)
}

/// A pair out of one integer, defined after its callers.
#[autobatch]
fn pair(x: i64) -> (i64, f64) {
    (x.wrapping_mul(3) % 1000, x as f64 * 0.5)
}

/// Squares a float, defined after its callers.
#[autobatch]
fn square(x: f64) -> f64 {
    x * x
}

mod geometry {
    use autobatch_runtime::autobatch;

    /// A cube.
    #[autobatch]
    pub fn cube(x: f64) -> f64 {
        x * x * x
    }

    pub mod inner {
        use autobatch_runtime::autobatch;

        /// Half of it, calling back up the module tree.
        #[autobatch]
        pub fn halve(x: f64) -> f64 {
            super::cube(x) * 0.0 + x / 2.0
        }
    }
}

fn modes() -> [Config; 2] {
    [
        Config::with_mode(Mode::FullVm),
        Config::with_mode(Mode::Stackless),
    ]
}

/// Every mode's batch equals the scalar function lane by lane, compared by `key` (bits).
fn check<T: Copy, O, K: PartialEq + Clone + std::fmt::Debug>(
    inputs: &[T],
    scalar: impl Fn(T) -> O,
    batch: impl Fn(ArrayView1<'_, T>, &Config) -> Result<Array1<O>, RuntimeError>,
    key: impl Fn(&O) -> K,
) -> Result<(), TestCaseError> {
    let input = Array1::from_vec(inputs.to_vec());
    let expected: Vec<K> = inputs.iter().map(|&x| key(&scalar(x))).collect();
    for config in modes() {
        let got = batch(input.view(), &config)
            .map_err(|e| TestCaseError::fail(format!("{:?}: {e}", config.mode)))?;
        prop_assert_eq!(
            got.iter().map(&key).collect::<Vec<_>>(),
            expected.clone(),
            "{:?}",
            config.mode
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(16)))]

    #[test]
    fn call_results_in_expressions(xs in prop::collection::vec((-1e3f64..1e3, -1e3f64..1e3), 1..1000)) {
        let (a, b): (Vec<f64>, Vec<f64>) = xs.into_iter().unzip();
        let (va, vb) = (Array1::from_vec(a.clone()), Array1::from_vec(b.clone()));
        for config in modes() {
            let got = hypot::batch(va.view(), vb.view(), &config).unwrap();
            for i in 0..a.len() {
                prop_assert_eq!(got[i].to_bits(), hypot(a[i], b[i]).to_bits());
            }
        }
    }

    #[test]
    fn tuple_element_of_a_call_and_nested_calls(xs in prop::collection::vec(-100_000i64..100_000, 1..1000)) {
        check(&xs, first_of_pair, first_of_pair::batch, |v| *v)?;
    }

    #[test]
    fn callees_in_other_modules(xs in prop::collection::vec(-50f64..50.0, 1..1000)) {
        check(&xs, across_modules, across_modules::batch, |v| v.to_bits())?;
    }

    #[test]
    fn mutual_recursion_unannotated(ns in prop::collection::vec(0i64..40, 1..1000)) {
        check(&ns, countdown_even, countdown_even::batch, |v| *v)?;
    }

    #[test]
    fn primitive_and_recursive_results_in_expressions(xs in prop::collection::vec((-4f64..4.0, 0i64..12), 1..1000)) {
        let (x, n): (Vec<f64>, Vec<i64>) = xs.into_iter().unzip();
        let (vx, vn) = (Array1::from_vec(x.clone()), Array1::from_vec(n.clone()));
        for config in modes() {
            let got = damped::batch(vx.view(), vn.view(), &config).unwrap();
            for i in 0..x.len() {
                prop_assert_eq!(got[i].to_bits(), damped(x[i], n[i]).to_bits());
            }
        }
    }
}

/// The compile-time program uses the callees' real signatures: the stand-in for `pair` returns
/// an `i64` and an `f64`, which the macro could not have guessed from `pair(x).0` alone.
#[test]
fn compile_time_program_uses_real_signatures() {
    let text = first_of_pair::COMPILE_TIME_PROGRAM;
    assert!(
        text.contains("pair (not visible here).r0.1 :: register, f64"),
        "{text}"
    );
}

//! The calls where stackless may leave out an argument or result copy, and the calls next to
//! them where it must not: an argument kernel's temporary read again after the call, formals
//! passed permuted (`f(b, a)` in `f(a, b)`), an argument kernel reading a formal another
//! argument writes, a result read after a later call, a result read twice, a result read
//! between two calls or passed on to the next one, nested calls (Ackermann). Each against the scalar function, the reference interpreter and the full VM,
//! bit for bit, on proptest batches.

use autobatch_runtime::ndarray::Array1;
use autobatch_runtime::{autobatch, Column, Config, Executable, Mode};
use proptest::prelude::*;

/// Fibonacci: both arguments computed into the formal, the second result read in place.
#[autobatch]
fn fib(n: i64) -> i64 {
    if n > 1 {
        fib(n - 1) + fib(n - 2)
    } else {
        1
    }
}

/// The argument's temporary is read again after the call: it must be computed where the
/// caller keeps it.
#[autobatch]
fn reuse(n: i64) -> i64 {
    if n > 0 {
        let a = n - 1;
        reuse(a) * 3 + a
    } else {
        n + 7
    }
}

/// Formals passed permuted, one through a kernel: `b - 1` must not land in `a` before `a` is
/// passed on to `b`.
#[autobatch]
fn permuted(a: i64, b: i64, k: i64) -> i64 {
    if k > 0 {
        permuted(b - 1, a, k - 1) * 5 + a
    } else {
        a * 1000 + b
    }
}

/// An argument kernel reading a formal that another argument writes (`a` is read by `a + b`
/// and written by the first argument).
#[autobatch]
fn crossed(a: i64, b: i64, k: i64) -> i64 {
    if k > 0 {
        crossed(b, a + b, k - 1)
    } else {
        a.wrapping_mul(31) + b
    }
}

/// The same the other way round: the kernel writes `a`, the copied argument reads `a`.
#[autobatch]
fn crossed_back(a: i64, b: i64, k: i64) -> i64 {
    if k > 0 {
        crossed_back(a + b, a, k - 1)
    } else {
        a.wrapping_mul(17) - b
    }
}

/// Some arguments computed into formals, one passed through unchanged, and a local computed
/// by the same kernel passed as an argument.
#[autobatch]
fn partly(a: i64, b: i64, k: i64) -> i64 {
    if k > 0 {
        let c = a * 2 - b;
        partly(c, b, k - 1) + b
    } else {
        a * 7 + b
    }
}

/// A result read twice by the kernel after the call, and one read after another call.
#[autobatch]
fn results(n: i64) -> i64 {
    if n > 1 {
        let r = results(n - 1);
        let s = results(n - 2);
        (s * s) % 1_000_003 + r + s
    } else {
        n + 2
    }
}

/// A result read by a kernel between the call and the next one (it must be copied out, not
/// held from the return variable until the next call).
#[autobatch]
fn read_between(n: i64) -> i64 {
    if n > 1 {
        let r = read_between(n - 1);
        let s = read_between(n - 2 + r % 2);
        r * 3 + s
    } else {
        n + 1
    }
}

/// A result passed straight to the next call and read after it.
#[autobatch]
fn passed_on(x: i64, k: i64) -> i64 {
    if k > 0 {
        let r = passed_on(x + 1, k - 1);
        r + passed_on(r, k - 1)
    } else {
        x % 1000
    }
}

/// A result passed straight to the call right after it and read after that one too (it
/// must be copied out, not only passed on from the return variable).
#[autobatch]
fn adjacent(x: i64, k: i64) -> i64 {
    if k > 0 {
        let km1 = k - 1;
        let r = adjacent(x + 1, km1);
        let s = adjacent(r, km1);
        s * 3 + r
    } else {
        x % 1000
    }
}

/// Tuple results swapped on the way out, arguments swapped on the way in.
#[autobatch]
fn swapped(a: i64, b: i64, k: i64) -> (i64, i64) {
    if k > 0 {
        let (x, y) = swapped(b, a - 1, k - 1);
        (y + 1, x)
    } else {
        (a, b)
    }
}

/// Ackermann: a nested call (one call's result is the next call's argument).
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

fn modes() -> [Config; 2] {
    [
        Config::with_mode(Mode::Stackless),
        Config::with_mode(Mode::FullVm),
    ]
}

/// Every output column of a run, as `i64`s.
fn outputs(columns: &[Column]) -> Vec<Vec<i64>> {
    columns
        .iter()
        .map(|c| c.as_slice::<i64>().expect("i64 outputs").to_vec())
        .collect()
}

/// Both modes and the reference interpreter give `expected` (one column per output) on
/// `inputs`.
fn agree(
    exe: &Executable,
    inputs: &[Vec<i64>],
    expected: Vec<Vec<i64>>,
) -> Result<(), TestCaseError> {
    let columns: Vec<Column> = inputs.iter().map(|c| Column::from_scalars(c)).collect();
    let reference = exe.run_reference(&columns, &Config::default()).unwrap();
    prop_assert_eq!(outputs(&reference.outputs), expected.clone(), "reference");
    for config in modes() {
        let run = exe.run(&columns, &config).unwrap();
        prop_assert_eq!(outputs(&run.outputs), expected.clone(), "{:?}", config.mode);
    }
    Ok(())
}

/// Three columns of `(a, b, k)` triples.
fn columns3(xs: &[(i64, i64, i64)]) -> Vec<Vec<i64>> {
    vec![
        xs.iter().map(|x| x.0).collect(),
        xs.iter().map(|x| x.1).collect(),
        xs.iter().map(|x| x.2).collect(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(24)))]

    #[test]
    fn fibonacci(ns in prop::collection::vec(0i64..16, 1..300)) {
        let expected = vec![ns.iter().map(|&n| fib(n)).collect()];
        agree(fib::executable().unwrap(), &[ns], expected)?;
    }

    #[test]
    fn an_argument_read_again_after_the_call(ns in prop::collection::vec(-3i64..25, 1..300)) {
        let expected = vec![ns.iter().map(|&n| reuse(n)).collect()];
        agree(reuse::executable().unwrap(), &[ns], expected)?;
    }

    #[test]
    fn permuted_formals(xs in prop::collection::vec((-50i64..50, -50i64..50, 0i64..8), 1..300)) {
        let expected = vec![xs.iter().map(|&(a, b, k)| permuted(a, b, k)).collect()];
        agree(permuted::executable().unwrap(), &columns3(&xs), expected)?;
    }

    #[test]
    fn a_kernel_reading_a_formal_another_argument_writes(
        xs in prop::collection::vec((-50i64..50, -50i64..50, 0i64..12), 1..300)
    ) {
        let expected = vec![xs.iter().map(|&(a, b, k)| crossed(a, b, k)).collect()];
        agree(crossed::executable().unwrap(), &columns3(&xs), expected)?;
        let expected = vec![xs.iter().map(|&(a, b, k)| crossed_back(a, b, k)).collect()];
        agree(crossed_back::executable().unwrap(), &columns3(&xs), expected)?;
    }

    #[test]
    fn arguments_partly_computed_into_formals(
        xs in prop::collection::vec((-50i64..50, -50i64..50, 0i64..10), 1..300)
    ) {
        let expected = vec![xs.iter().map(|&(a, b, k)| partly(a, b, k)).collect()];
        agree(partly::executable().unwrap(), &columns3(&xs), expected)?;
    }

    #[test]
    fn results_read_twice_and_across_a_call(ns in prop::collection::vec(-2i64..15, 1..300)) {
        let expected = vec![ns.iter().map(|&n| results(n)).collect()];
        agree(results::executable().unwrap(), &[ns], expected)?;
    }

    #[test]
    fn results_read_between_calls_or_passed_on(
        xs in prop::collection::vec((-2i64..14, -50i64..50, 0i64..9), 1..300)
    ) {
        let ns: Vec<i64> = xs.iter().map(|x| x.0).collect();
        let expected = vec![ns.iter().map(|&n| read_between(n)).collect()];
        agree(read_between::executable().unwrap(), &[ns], expected)?;
        let inputs = vec![xs.iter().map(|x| x.1).collect(), xs.iter().map(|x| x.2).collect()];
        let expected = vec![xs.iter().map(|&(_, x, k)| passed_on(x, k)).collect()];
        agree(passed_on::executable().unwrap(), &inputs, expected)?;
        let expected = vec![xs.iter().map(|&(_, x, k)| adjacent(x, k)).collect()];
        agree(adjacent::executable().unwrap(), &inputs, expected)?;
    }

    #[test]
    fn tuple_results_and_arguments_swapped(
        xs in prop::collection::vec((-50i64..50, -50i64..50, 0i64..9), 1..300)
    ) {
        let pairs: Vec<(i64, i64)> = xs.iter().map(|&(a, b, k)| swapped(a, b, k)).collect();
        let expected = vec![
            pairs.iter().map(|p| p.0).collect(),
            pairs.iter().map(|p| p.1).collect(),
        ];
        agree(swapped::executable().unwrap(), &columns3(&xs), expected)?;
    }

    #[test]
    fn nested_calls(xs in prop::collection::vec((0i64..4, 0i64..4), 1..200)) {
        let expected = vec![xs.iter().map(|&(m, n)| ackermann(m, n)).collect()];
        let inputs = vec![xs.iter().map(|x| x.0).collect(), xs.iter().map(|x| x.1).collect()];
        agree(ackermann::executable().unwrap(), &inputs, expected)?;
    }
}

/// The batch entry points agree with the scalar functions too (the generated path).
#[test]
fn batch_entry_points_agree() {
    let ns = Array1::from_vec((0..200i64).map(|i| i % 17).collect());
    for config in modes() {
        let got = fib::batch(ns.view(), &config).unwrap();
        let want: Vec<i64> = ns.iter().map(|&n| fib(n)).collect();
        assert_eq!(got.to_vec(), want, "{:?}", config.mode);
    }
}

//! A first look at #[autobatch]: a few scalar functions run over a batch in both modes, with
//! results, statistics and the printed program. Run: `cargo run -p autobatch-examples --bin basics`.

use autobatch_runtime::ndarray::Array1;
use autobatch_runtime::{autobatch, Config, Mode};

/// Fibonacci with fib(0) = fib(1) = 1, doubly recursive.
#[autobatch]
fn fib(n: i64) -> i64 {
    if n <= 1 {
        1
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

/// Steps of the Collatz map until 1: a `while` loop whose length varies wildly per lane.
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

/// Greatest common divisor: a self tail call with swapped arguments.
#[autobatch]
fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn main() -> Result<(), autobatch_runtime::RuntimeError> {
    let ns = Array1::from_iter((0..10_000).map(|i| i % 21));
    let starts = Array1::from_iter((1..=10_000).map(|i: i64| i * 7 + 1));
    let b = Array1::from_iter((0..10_000).map(|i: i64| i % 97 + 1));
    for mode in [Mode::Stackless, Mode::FullVm] {
        let config = Config::with_mode(mode);
        let t = std::time::Instant::now();
        let (f, stats) = fib::batch_with_stats(ns.view(), &config)?;
        println!(
            "{mode:?}: fib over 10,000 lanes in {:.1} ms: {} block runs, {:.1}% lane utilisation; fib(20) = {}",
            t.elapsed().as_secs_f64() * 1e3,
            stats.steps,
            100.0 * stats.utilisation(),
            f[20]
        );
        let (c, stats) = collatz_steps::batch_with_stats(starts.view(), &config)?;
        println!(
            "{mode:?}: collatz: max {} steps, {} block runs, {:.1}% utilisation",
            c.iter().max().copied().unwrap_or(0),
            stats.steps,
            100.0 * stats.utilisation()
        );
        let g = gcd::batch(starts.view(), b.view(), &config)?;
        println!("{mode:?}: gcd of the first lanes: {:?}", &g.to_vec()[..8]);
        assert_eq!(g[3], gcd(starts[3], b[3]));
        assert_eq!(f[20], fib(20));
        assert_eq!(c[10], collatz_steps(starts[10]));
    }
    println!(
        "\nThe linked program for fib, with every variable's allocation:\n{}",
        fib::program()?
    );
    Ok(())
}

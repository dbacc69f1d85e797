//! Profiling harness (not a test, not a bench): runs one workload of the fibonacci bench's kind
//! once in one mode, so `valgrind --tool=callgrind` counts the instructions of exactly that run.
//!
//! `cargo build --release -p autobatch-runtime --example lane_ops`, then
//! `valgrind --tool=callgrind target/release/examples/lane_ops fib vm` (workloads `fib`,
//! `collatz`, `fib-macro`, `ackermann`, `mandelbrot`; modes `vm`, `sl`, `rust`, and `lowered`,
//! which prints the program stackless runs and the one the full VM runs). It prints the
//! lane-ops the run made (the lanes over every kernel and assignment run) so instructions per
//! lane-op can be read off.
//!
//! With a thread count (`lane_ops collatz sl 2 101`) it times that many runs and prints their
//! median. `LANE_OPS_BATCH` sets the batch (10,000 by default); `LANE_OPS_SHARD` sets
//! `Config::shard_size` (on one thread, shards of half the batch run one after the other:
//! what sharding itself costs, apart from the threads).

use autobatch_runtime::ir::{DType, KernelId};
use autobatch_runtime::ndarray::{Array1, ArrayView1};
use autobatch_runtime::{autobatch, Column, Config, Executable, Kernel, Mode, RuntimeError, Stats};
use autobatch_testkit::conformance;
use std::hint::black_box;
use std::time::Instant;

/// The plain scalar fibonacci the bench compares with.
fn fib(n: i64) -> i64 {
    if n > 1 {
        fib(n - 1) + fib(n - 2)
    } else {
        1
    }
}

/// Fibonacci as a user writes it.
#[autobatch]
fn fib_macro(n: i64) -> i64 {
    if n > 1 {
        fib_macro(n - 1) + fib_macro(n - 2)
    } else {
        1
    }
}

/// Collatz step counts as a user writes them.
#[autobatch]
fn collatz(n: i64) -> i64 {
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

/// Escape-time iterations of the Mandelbrot map at `c = cx + i cy`, at most 256: a loop whose
/// trip count varies from lane to lane, in `f64`.
#[autobatch]
fn mandelbrot(cx: f64, cy: f64) -> i64 {
    let mut x = 0.0;
    let mut y = 0.0;
    let mut i = 0;
    while i < 256 && x * x + y * y <= 4.0 {
        let t = x * x - y * y + cx;
        y = 2.0 * x * y + cy;
        x = t;
        i += 1;
    }
    i
}

/// The point of lane `i` of `batch`: a square grid over `[-2, 1] x [-1.5, 1.5]`, row by row.
fn mandelbrot_point(i: i64, batch: i64) -> (f64, f64) {
    let side = (batch as f64).sqrt().ceil().max(1.0) as i64;
    let (row, col) = (i / side, i % side);
    let step = 3.0 / side as f64;
    (-2.0 + col as f64 * step, -1.5 + row as f64 * step)
}

/// The Ackermann function as a user writes it (the fibonacci bench's mixed small inputs).
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

/// The fibonacci bench's program: the conformance fixture with its kernels.
fn fib_executable() -> Executable {
    let mut sources: Vec<String> = Vec::new();
    let program = conformance::fibonacci_function_calls(
        &mut |s: &str| {
            let i = sources.iter().position(|x| x == s).unwrap_or_else(|| {
                sources.push(s.to_string());
                sources.len() - 1
            });
            KernelId::new(i)
        },
        DType::I64,
    );
    let kernels = sources
        .iter()
        .map(|s| match s.as_str() {
            "n > 1" => Kernel::map1(|n: i64| n > 1),
            "n - 1" => Kernel::map1(|n: i64| n - 1),
            "n - 2" => Kernel::map1(|n: i64| n - 2),
            "x + y" => Kernel::map2(|a: i64, b: i64| a + b),
            "1" => Kernel::constant(1i64),
            other => panic!("no kernel for {other}"),
        })
        .collect();
    Executable::new(program, kernels).expect("valid program")
}

/// Block runs and the lanes they ran, summed over blocks.
fn summary(stats: &Stats) -> String {
    let lanes: u64 = stats.blocks.iter().map(|b| b.lanes).sum();
    let kernel_lanes: u64 = stats.kernels.iter().map(|k| k.lanes).sum();
    format!(
        "steps {}, block-lanes {lanes}, kernel-lanes {kernel_lanes}",
        stats.steps
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (workload, mode) = match args.as_slice() {
        [_, w, m] => (w.as_str(), m.as_str()),
        [_, w, m, _] | [_, w, m, _, _] => (w.as_str(), m.as_str()),
        _ => panic!("usage: lane_ops fib|fib-macro|collatz|ackermann|mandelbrot vm|sl|rust [threads [runs]]"),
    };
    let threads: Option<usize> = args.get(3).map(|t| t.parse().expect("a thread count"));
    let config = match mode {
        "vm" => Some(Config::with_mode(Mode::FullVm)),
        "sl" => Some(Config::with_mode(Mode::Stackless)),
        "rust" | "lowered" => None,
        other => panic!("unknown mode {other}"),
    };
    let config = config.map(|c| Config {
        threads: threads.unwrap_or(1),
        // Set and empty (`LANE_OPS_SHARD= lane_ops ..`, a sweep's first value) is unset.
        shard_size: std::env::var("LANE_OPS_SHARD")
            .ok()
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().expect("a shard size")),
        ..c
    });
    let reps = match (threads, args.get(4)) {
        (_, Some(runs)) => runs.parse().expect("a number of runs"),
        (Some(_), None) => 51,
        (None, None) => 1,
    };
    if mode == "lowered" {
        // The program the full VM runs, with every variable's allocation.
        let fixture;
        let exe = match workload {
            // The builder's program: the bench's fixture.
            "fib" => {
                fixture = fib_executable();
                Ok(&fixture)
            }
            "fib-macro" => fib_macro::executable(),
            "collatz" => collatz::executable(),
            "ackermann" => ackermann::executable(),
            "mandelbrot" => mandelbrot::executable(),
            other => panic!("unknown workload {other}"),
        };
        let exe = exe.expect("links");
        if let Some(high) = exe.program() {
            println!("{high}");
        }
        println!("{}", exe.lowered());
        return;
    }
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        run(workload, mode, config.as_ref(), reps == 1);
        times.push(start.elapsed());
    }
    times.sort();
    if threads.is_some() {
        println!("{workload} {mode}: median {:?} of {reps}", times[reps / 2]);
    }
}

/// Lanes per batch: 10,000, or `LANE_OPS_BATCH` (a small batch shows the interpreter's fixed
/// cost per block execution, which every shard of a multi-threaded run pays again).
fn batch_size() -> i64 {
    std::env::var("LANE_OPS_BATCH").map_or(10_000, |b| b.parse().expect("a batch size"))
}

/// Runs `workload` once with `config` (plain Rust without), printing what it made if `print`.
fn run(workload: &str, mode: &str, config: Option<&Config>, print: bool) {
    let batch = batch_size();
    match workload {
        "fib" | "fib-macro" => {
            let ns: Vec<i64> = (0..batch).map(|i| i % 21).collect();
            let Some(config) = config else {
                let total: i64 = ns.iter().map(|&n| fib(black_box(n))).sum();
                if print {
                    println!("plain fib: {total}");
                }
                return;
            };
            let (total, stats) = if workload == "fib" {
                let run = fib_executable()
                    .run(&[Column::from_scalars(&ns)], config)
                    .expect("runs");
                let out = run.outputs[0].as_slice::<i64>().expect("i64").to_vec();
                (out.iter().sum::<i64>(), run.stats)
            } else {
                let input = Array1::from_vec(ns);
                let (out, stats) = fib_macro::batch_with_stats(input.view(), config).expect("runs");
                (out.sum(), stats)
            };
            if print {
                println!("{workload} {mode}: {total}; {}", summary(&stats));
            }
        }
        "collatz" => {
            let ns: Vec<i64> = (1..=batch).collect();
            let Some(config) = config else {
                let total: i64 = ns.iter().map(|&n| collatz(black_box(n))).sum();
                if print {
                    println!("plain collatz: {total}");
                }
                return;
            };
            let input = Array1::from_vec(ns);
            let (out, stats) = collatz::batch_with_stats(input.view(), config).expect("runs");
            if print {
                println!("collatz {mode}: {}; {}", out.sum(), summary(&stats));
            }
        }
        "ackermann" => run_two(
            ("ackermann", mode, print),
            (0..batch).map(|i| (i % 4, (i / 4) % 4)).unzip(),
            config,
            (ackermann, |m, n, c| ackermann::batch_with_stats(m, n, c)),
        ),
        "mandelbrot" => run_two(
            ("mandelbrot", mode, print),
            (0..batch).map(|i| mandelbrot_point(i, batch)).unzip(),
            config,
            (mandelbrot, |x, y, c| mandelbrot::batch_with_stats(x, y, c)),
        ),
        other => panic!("unknown workload {other}"),
    }
}

/// A workload of two inputs per lane: its plain function and its batched form.
type TwoInputs<A, B> = (fn(A, B) -> i64, BatchedTwo<A, B>);

/// The batched form of a workload of two inputs per lane.
type BatchedTwo<A, B> =
    fn(ArrayView1<'_, A>, ArrayView1<'_, B>, &Config) -> Result<(Array1<i64>, Stats), RuntimeError>;

/// Runs a workload of two inputs per lane once: its plain function over every lane without
/// `config`, else its batched form with it; prints the total (and the run's counts) if `print`.
fn run_two<A: Copy, B: Copy>(
    (name, mode, print): (&str, &str, bool),
    (a, b): (Vec<A>, Vec<B>),
    config: Option<&Config>,
    (plain, batched): TwoInputs<A, B>,
) {
    let Some(config) = config else {
        let total: i64 = (a.iter().zip(&b))
            .map(|(&a, &b)| plain(black_box(a), black_box(b)))
            .sum();
        if print {
            println!("plain {name}: {total}");
        }
        return;
    };
    let (a, b) = (Array1::from_vec(a), Array1::from_vec(b));
    let (out, stats) = batched(a.view(), b.view(), config).expect("runs");
    if print {
        println!("{name} {mode}: {}; {}", out.sum(), summary(&stats));
    }
}

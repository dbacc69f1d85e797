//! Benchmark (not a test): fibonacci over `n = i % 21` (built with the builder, and written
//! with `#[autobatch]`), Collatz step counts and Ackermann (written with `#[autobatch]`), each in both modes on one thread and on
//! every core, against the plain Rust loop and against independent one-thread runs of the
//! batch's parts side by side (what this machine gives such work on every core); how a
//! one-thread run's time depends on the shard size; fibonacci over batch sizes; one busy lane
//! among 99,999 finished ones.
//! Run: `cargo bench -p autobatch-runtime --bench fibonacci` (`FIB_BENCH_MAIN_ONLY=1` prints
//! the first table alone).

use autobatch_runtime::ir::{DType, KernelId};
use autobatch_runtime::ndarray::Array1;
use autobatch_runtime::{
    autobatch, available_threads, Column, Config, Executable, Kernel, Mode, Run, Stats,
};
use autobatch_testkit::conformance;
use rayon::prelude::*;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Steps of the Collatz map from `n` down to 1.
#[autobatch]
fn collatz(n: i64) -> i64 {
    let mut n = n;
    let mut steps = 0;
    while n > 1 {
        if n % 2 == 0 {
            n /= 2;
        } else {
            n = 3 * n + 1;
        }
        steps += 1;
    }
    steps
}

/// Fibonacci as a user writes it (the builder's program above has one kernel per
/// expression; this one is what the macro makes of the same function).
#[autobatch]
fn fib_macro(n: i64) -> i64 {
    if n > 1 {
        fib_macro(n - 1) + fib_macro(n - 2)
    } else {
        1
    }
}

/// The Ackermann function (deep, uneven, doubly recursive).
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

fn kernel(src: &str) -> Kernel {
    match src {
        "n > 1" => Kernel::map1(|n: i64| n > 1),
        "n > 0" => Kernel::map1(|n: i64| n > 0),
        "n - 1" => Kernel::map1(|n: i64| n - 1),
        "n - 2" => Kernel::map1(|n: i64| n - 2),
        "x + y" => Kernel::map2(|a: i64, b: i64| a + b),
        "acc + 2" => Kernel::map1(|a: i64| a + 2),
        "1" => Kernel::constant(1i64),
        "0" => Kernel::constant(0i64),
        other => panic!("no kernel for {other}"),
    }
}

fn executable(
    make: impl FnOnce(&mut dyn FnMut(&str) -> KernelId) -> autobatch_runtime::ir::HighProgram,
) -> Executable {
    let mut sources: Vec<String> = Vec::new();
    let program = make(&mut |s: &str| {
        let i = sources.iter().position(|x| x == s).unwrap_or_else(|| {
            sources.push(s.to_string());
            sources.len() - 1
        });
        KernelId::new(i)
    });
    Executable::new(program, sources.iter().map(|s| kernel(s)).collect()).expect("valid program")
}

fn fib(n: i64) -> i64 {
    if n > 1 {
        fib(n - 1) + fib(n - 2)
    } else {
        1
    }
}

/// Runs of a short workload are repeated until they add up to this much time (at most
/// [`MAX_REPS`] runs): a few runs of a 2 ms workload on two threads are dominated by the
/// worker threads' first allocations, not by the work.
const MIN_TOTAL: Duration = Duration::from_millis(200);

/// Rounds of the main table (see `main`).
const ROUNDS: usize = 5;

/// One round of the main table for one workload: the plain loop's one-thread and every-thread
/// seconds, then per mode the one-thread, every-thread and independent-parts seconds.
type Round = ((f64, f64), [(f64, f64, f64); 2]);

/// The most runs [`median`] makes.
const MAX_REPS: usize = 201;

/// Median wall time of at least `reps` runs of `f` (more for a short `f`, until the runs add
/// up to [`MIN_TOTAL`], unless `reps` is 1: one run for its result), and the last result.
fn median<T>(reps: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut times = Vec::with_capacity(reps);
    let mut last = None;
    let mut total = Duration::ZERO;
    while times.len() < reps || (reps > 1 && total < MIN_TOTAL && times.len() < MAX_REPS) {
        let t = Instant::now();
        last = Some(black_box(f()));
        let took = t.elapsed();
        total += took;
        times.push(took);
    }
    times.sort();
    (times[times.len() / 2], last.expect("reps > 0"))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Lanes per run dealt in turn to the parts of [`Part::Dealt`], as the runtime deals its
/// default shards: each part then holds lanes from every part of the batch (a batch whose work
/// varies with the lane index gives every part about the same work).
const DEALT_RUN: usize = 64;

/// Some lanes of the batch.
#[derive(Clone, Copy)]
enum Part {
    /// Every lane.
    All,
    /// Part `index` of `parts`: runs of [`DEALT_RUN`] consecutive lanes dealt in turn (lane
    /// `l` if `(l / DEALT_RUN) % parts == index`).
    Dealt { index: usize, parts: usize },
}

impl Part {
    /// This part's values of `all` (one per lane of the batch).
    fn of<T: Copy>(self, all: &[T]) -> Vec<T> {
        match self {
            Part::All => all.to_vec(),
            Part::Dealt { index, parts } => (all.iter().enumerate())
                .filter(|(l, _)| (l / DEALT_RUN) % parts == index)
                .map(|(_, &v)| v)
                .collect(),
        }
    }

    /// Where this part's input is in a list made by [`inputs`].
    fn slot(self) -> usize {
        match self {
            Part::All => 0,
            Part::Dealt { index, .. } => 1 + index,
        }
    }
}

/// `make` of the whole batch's values `all`, then of each of `parts` dealt parts' values, in
/// [`Part::slot`] order.
fn inputs<T: Copy, U>(all: &[T], parts: usize, make: impl Fn(Vec<T>) -> U) -> Vec<U> {
    let dealt = (0..parts).map(|index| Part::Dealt { index, parts });
    [Part::All]
        .into_iter()
        .chain(dealt)
        .map(|part| make(part.of(all)))
        .collect()
}

/// A batched run of a part of the batch with a configuration: the outputs as `i64` and the
/// run's statistics.
type Batched<'a> = Box<dyn Fn(&Config, Part) -> (Vec<i64>, Stats) + Sync + 'a>;

/// One workload of the main table: a batched run per configuration (outputs as `i64`) and
/// the plain Rust function of one lane (by lane index), which the plain loop runs over the
/// batch.
struct Workload<'a> {
    name: &'a str,
    batched: Batched<'a>,
    plain: Box<dyn Fn(usize) -> i64 + Sync + 'a>,
}

impl Workload<'_> {
    /// The plain Rust loop over the batch's `lanes` on `pool`'s threads: on one, a loop; on
    /// more, lanes split among them by rayon's work stealing (the best a hand-written
    /// parallel loop gets: what the machine gives perfectly parallel work, the ceiling the
    /// batched runs' speedups are read against).
    fn plain_loop(&self, lanes: usize, pool: &rayon::ThreadPool) -> Vec<i64> {
        let f = &self.plain;
        if pool.current_num_threads() == 1 {
            return (0..lanes).map(|i| f(black_box(i))).collect();
        }
        pool.install(|| {
            (0..lanes)
                .into_par_iter()
                .with_min_len(64)
                .map(|i| f(black_box(i)))
                .collect()
        })
    }
}

/// Median time of the batched run with `config`, and its statistics; checks it against `want`.
fn time_batched(w: &Workload, config: &Config, reps: usize, want: &[i64]) -> (Duration, Stats) {
    let (t, (out, stats)) = median(reps, || (w.batched)(config, Part::All));
    assert_eq!(out, want, "{}: batched == plain Rust", w.name);
    (t, stats)
}

/// Median time of independent one-thread runs (`one`), one per thread of `pool`, side by side,
/// each of its [`Part::Dealt`] of the batch (thread `k` runs part `k`): nothing
/// shared but the machine, so `one`'s time over this is the speedup that this machine gives
/// the work on that many cores, the ceiling a sharded run's speedup is read against. Checks
/// each part against `want`.
fn time_independent(
    w: &Workload,
    one: &Config,
    pool: &rayon::ThreadPool,
    (reps, want): (usize, &[i64]),
) -> Duration {
    let (t, outs) = median(reps, || {
        pool.broadcast(|ctx| {
            let part = Part::Dealt {
                index: ctx.index(),
                parts: ctx.num_threads(),
            };
            (w.batched)(one, part).0
        })
    });
    for (k, out) in outs.iter().enumerate() {
        let part = Part::Dealt {
            index: k,
            parts: outs.len(),
        };
        assert_eq!(out, &part.of(want), "{}: part {k} == plain Rust", w.name);
    }
    t
}

/// The share of a run with `config` spent in lane-wise kernels: one more run, with kernel
/// times measured (which the timed runs leave off, as the default configuration does: the
/// clock reads cost a few percent of these runs).
fn kernel_share(w: &Workload, config: &Config, want: &[i64]) -> f64 {
    let timed = Config {
        time_kernels: true,
        ..config.clone()
    };
    let (t, stats) = time_batched(w, &timed, 1, want);
    stats.lane_kernel_time.as_secs_f64() / t.as_secs_f64()
}

fn main() {
    let all = available_threads();
    let batch = 10_000usize;
    let fib_exe = executable(|k| conformance::fibonacci_function_calls(k, DType::I64));
    let fib_n: Vec<i64> = (0..batch as i64).map(|i| i % 21).collect();
    // The inputs of the whole batch, then of each thread's part.
    let fib_in = inputs(&fib_n, all, |n| [Column::from_scalars(&n)]);
    let run_fib = |config: &Config, part: Part| {
        let run = fib_exe.run(&fib_in[part.slot()], config).expect("runs");
        let out = run.outputs[0].as_slice::<i64>().expect("i64").to_vec();
        (out, run.stats)
    };
    let fib_arr = inputs(&fib_n, all, Array1::from);
    let plain_fib = |i: usize| fib(fib_n[i]);
    let starts: Vec<i64> = (1..=batch as i64).collect();
    let starts_arr = inputs(&starts, all, Array1::from);
    let (ms_mixed, ns_mixed): (Vec<i64>, Vec<i64>) =
        (0..batch as i64).map(|i| (i % 4, (i / 4) % 4)).unzip();
    let m_arr = inputs(&ms_mixed, all, Array1::from);
    let n_arr = inputs(&ns_mixed, all, Array1::from);
    let workloads = [
        Workload {
            name: "fib(i % 21)",
            batched: Box::new(run_fib),
            plain: Box::new(plain_fib),
        },
        Workload {
            name: "fib(i % 21) macro",
            batched: Box::new(|config: &Config, part| {
                let (out, stats) =
                    fib_macro::batch_with_stats(fib_arr[part.slot()].view(), config).expect("runs");
                (out.to_vec(), stats)
            }),
            plain: Box::new(plain_fib),
        },
        Workload {
            name: "collatz(i + 1)",
            batched: Box::new(|config: &Config, part| {
                let (out, stats) =
                    collatz::batch_with_stats(starts_arr[part.slot()].view(), config)
                        .expect("runs");
                (out.to_vec(), stats)
            }),
            plain: Box::new(|i| collatz(starts[i])),
        },
        Workload {
            name: "ackermann(m<4, n<4)",
            batched: Box::new(|config: &Config, part| {
                let (m, n) = (m_arr[part.slot()].view(), n_arr[part.slot()].view());
                let (out, stats) = ackermann::batch_with_stats(m, n, config).expect("runs");
                (out.to_vec(), stats)
            }),
            plain: Box::new(|i| ackermann(ms_mixed[i], ns_mixed[i])),
        },
    ];
    let reps = 5;
    let pool = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool")
    };
    let (one_pool, every_pool) = (pool(1), pool(all));
    println!(
        "batch {batch}, {ROUNDS} rounds, each timing every column back to back (so a slow spell of a shared machine falls on all of them alike) as the median of at least {reps} runs \
         (more, up to {MAX_REPS}, until they take {MIN_TOTAL:?}); each cell is the median over rounds; ratio = autobatched time / plain Rust loop time (one thread); \
         speedup = one-thread time / {all}-thread time, within a round (the plain loop's: lanes split among the threads by rayon); \
         ceiling = one-thread time / the time of {all} independent one-thread runs side by side, each of one of {all} parts of the batch dealt in runs of {DEALT_RUN} lanes as default shards are (nothing shared but the machine: \
         what this machine gives this work on {all} cores); of ceil = speedup / ceiling, within a round; kernels = share of one-thread time in \
         lane-wise kernels (the rest is the interpreter; from one more run with kernel times measured)"
    );
    println!(
        "{:<20} {:>9} {:>7} | {:>9} {:>7} {:>7} {:>7} {:>7} {:>7} | {:>9} {:>7} {:>7} {:>7} {:>7} {:>7}",
        "workload",
        "plain ms",
        "speedup",
        "vm ms",
        "vm/rust",
        "kernels",
        "speedup",
        "ceiling",
        "of ceil",
        "sl ms",
        "sl/rust",
        "kernels",
        "speedup",
        "ceiling",
        "of ceil"
    );
    for w in &workloads {
        let want = w.plain_loop(batch, &one_pool);
        let modes = [Mode::FullVm, Mode::Stackless].map(|mode| {
            let one = Config {
                threads: 1,
                ..Config::with_mode(mode)
            };
            let every = Config {
                threads: all,
                ..Config::with_mode(mode)
            };
            (one, every)
        });
        // Per round: the plain loop, then per mode, one thread and every thread.
        let mut rounds: Vec<Round> = Vec::with_capacity(ROUNDS);
        for _ in 0..ROUNDS {
            let plain = [&one_pool, &every_pool].map(|pool| {
                let (t, out) = median(reps, || w.plain_loop(batch, pool));
                assert_eq!(out, want, "{}: the plain loop on every thread", w.name);
                t.as_secs_f64()
            });
            let times = modes.each_ref().map(|(one, every)| {
                let (t1, _) = time_batched(w, one, reps, &want);
                let (tn, _) = time_batched(w, every, reps, &want);
                let parts = time_independent(w, one, &every_pool, (reps, &want));
                (t1.as_secs_f64(), tn.as_secs_f64(), parts.as_secs_f64())
            });
            rounds.push(((plain[0], plain[1]), times));
        }
        let mid = |f: &dyn Fn(&Round) -> f64| {
            let mut v: Vec<f64> = rounds.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let rust_t = mid(&|r| r.0 .0);
        let mut cells = Vec::new();
        for (m, (one, _)) in modes.iter().enumerate() {
            let t1 = mid(&|r| r.1[m].0);
            cells.push(format!(
                "{:>9.2} {:>7.1} {:>6.0}% {:>7.2} {:>7.2} {:>6.0}%",
                1e3 * t1,
                t1 / rust_t,
                100.0 * kernel_share(w, one, &want),
                mid(&|r| r.1[m].0 / r.1[m].1),
                mid(&|r| r.1[m].0 / r.1[m].2),
                100.0 * mid(&|r| r.1[m].2 / r.1[m].1),
            ));
        }
        println!(
            "{:<20} {:>9.2} {:>7.2} | {} | {}",
            w.name,
            1e3 * rust_t,
            mid(&|r| r.0 .0 / r.0 .1),
            cells[0],
            cells[1]
        );
    }

    if std::env::var_os("FIB_BENCH_MAIN_ONLY").is_some() {
        return;
    }
    println!("\nshard size, one thread (ms, medians of at least {reps} runs; `auto` is Config::shard_size None)");
    let sizes = [64usize, 256, 1_024, 2_500, 10_000];
    print!("{:<20} {:<4}", "workload", "mode");
    for size in sizes {
        print!(" {size:>8}");
    }
    println!(" {:>8}", "auto");
    for w in &workloads {
        let want = w.plain_loop(batch, &one_pool);
        for mode in [Mode::FullVm, Mode::Stackless] {
            print!(
                "{:<20} {:<4}",
                w.name,
                if mode == Mode::FullVm { "vm" } else { "sl" }
            );
            for size in sizes.map(Some).into_iter().chain([None]) {
                let config = Config {
                    threads: 1,
                    shard_size: size,
                    ..Config::with_mode(mode)
                };
                let (t, _) = time_batched(w, &config, reps, &want);
                print!(" {:>8.2}", ms(t));
            }
            println!();
        }
    }

    println!("\nfibonacci over n = i % 21 by batch size, one thread (medians)");
    println!(
        "{:>7} {:>11} {:>11} {:>11} {:>8} {:>8} {:>9} {:>7} {:>9} {:>7}",
        "batch",
        "vm ms",
        "stackless",
        "plain ms",
        "vm/rust",
        "sl/rust",
        "vm steps",
        "vm util",
        "sl steps",
        "sl util"
    );
    for batch in [1usize, 100, 1_000, 10_000] {
        let ns: Vec<i64> = (0..batch as i64).map(|i| i % 21).collect();
        let input = [Column::from_scalars(&ns)];
        let reps = if batch >= 10_000 { 3 } else { 7 };
        let run = |mode| {
            let config = Config {
                threads: 1,
                ..Config::with_mode(mode)
            };
            fib_exe.run(&input, &config).expect("runs")
        };
        let (vm_t, vm): (Duration, Run) = median(reps, || run(Mode::FullVm));
        let (sl_t, sl): (Duration, Run) = median(reps, || run(Mode::Stackless));
        let (rust_t, plain) = median(reps, || ns.iter().map(|&n| fib(n)).collect::<Vec<_>>());
        assert_eq!(vm.outputs[0].as_slice::<i64>().unwrap(), plain.as_slice());
        assert_eq!(sl.outputs, vm.outputs);
        println!(
            "{:>7} {:>11.3} {:>11.3} {:>11.3} {:>8.1} {:>8.1} {:>9} {:>7.3} {:>9} {:>7.3}",
            batch,
            ms(vm_t),
            ms(sl_t),
            ms(rust_t),
            vm_t.as_secs_f64() / rust_t.as_secs_f64(),
            sl_t.as_secs_f64() / rust_t.as_secs_f64(),
            vm.stats.steps,
            vm.stats.utilisation(),
            sl.stats.steps,
            sl.stats.utilisation(),
        );
    }
    println!("\none busy lane: countdown(n = 100,000) alone vs. beside 99,999 lanes with n = 0");
    let countdown = executable(conformance::countdown);
    let long = 100_000i64;
    for mode in [Mode::FullVm, Mode::Stackless] {
        let config = Config {
            step_budget: None,
            threads: 1,
            ..Config::with_mode(mode)
        };
        let alone = [Column::from_scalars(&[long])];
        let mut crowd = vec![0i64; 100_000];
        crowd[0] = long;
        let crowd = [Column::from_scalars(&crowd)];
        let (t1, r1) = median(5, || countdown.run(&alone, &config).expect("runs"));
        let (tb, rb) = median(5, || countdown.run(&crowd, &config).expect("runs"));
        assert_eq!(
            r1.outputs[0].as_slice::<i64>().unwrap()[0],
            rb.outputs[0].as_slice::<i64>().unwrap()[0]
        );
        println!(
            "{mode:?}: alone {:.2} ms, in a batch of 100,000 {:.2} ms: {:.2}x (steps {} vs {})",
            ms(t1),
            ms(tb),
            tb.as_secs_f64() / t1.as_secs_f64(),
            r1.stats.steps,
            rb.stats.steps
        );
    }
}

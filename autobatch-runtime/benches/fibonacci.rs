//! Benchmark (not a test): fibonacci over `n = i % 21` in both modes vs. plain Rust, and one
//! busy lane among 99,999 finished ones. Run: `cargo bench -p autobatch-runtime --bench fibonacci`.

use autobatch_runtime::ir::{DType, KernelId};
use autobatch_runtime::{Column, Config, Executable, Kernel, Mode, Run};
use autobatch_testkit::conformance;
use std::hint::black_box;
use std::time::{Duration, Instant};

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

/// Median wall time of `reps` runs of `f`, and the last result.
fn median<T>(reps: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut times = Vec::with_capacity(reps);
    let mut last = None;
    for _ in 0..reps {
        let t = Instant::now();
        last = Some(black_box(f()));
        times.push(t.elapsed());
    }
    times.sort();
    (times[reps / 2], last.expect("reps > 0"))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let exe = executable(|k| conformance::fibonacci_function_calls(k, DType::I64));
    println!("fibonacci over n = i % 21 (medians; ratios are autobatched time / plain Rust time)");
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
        let run = |mode| exe.run(&input, &Config::with_mode(mode)).expect("runs");
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

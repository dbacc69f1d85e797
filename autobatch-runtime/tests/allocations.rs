//! Memory is allocated per run, not per step: once an `Executable` has run a batch, running it
//! again allocates a bounded number of times, however many block executions the run takes
//! (recursion, loops, vector rows; both interpreters). A per-step allocation in an
//! interpreter's hot loop would cost a call into the allocator at each of tens of thousands of
//! steps; here it fails a test.
//!
//! The count is per thread (runs on one thread start none), so other tests running at the
//! same time in this binary do not disturb it.

use autobatch_runtime::ndarray::Array2;
use autobatch_runtime::{autobatch, Column, Config, Executable, Mode, Run, Vector};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting each allocation and reallocation of the calling thread.
struct Counting;

thread_local! {
    /// Allocations made by this thread so far (a `const` thread-local: reading it allocates
    /// nothing, and it has no destructor).
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count_one() {
    // During thread teardown the thread-local may be gone: such allocations are not counted.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every call is passed on to the system allocator unchanged; counting allocates
// nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: the caller's guarantees for `alloc` are passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` (every allocation here is).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: as for `dealloc`, and the caller's guarantees for `realloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// `f`'s run and the allocations this thread made during it.
fn counted(f: impl FnOnce() -> Run) -> (Run, u64) {
    let before = ALLOCATIONS.with(Cell::get);
    let run = f();
    (run, ALLOCATIONS.with(Cell::get) - before)
}

/// Scalar recursion: depth and steps grow with `n`.
#[autobatch]
fn fib(n: i64) -> i64 {
    if n > 1 {
        fib(n - 1) + fib(n - 2)
    } else {
        1
    }
}

/// A loop: steps grow with the trip count, no recursion.
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

/// Vector rows made and released in a loop.
#[autobatch]
fn shrink(v: Vector, n: i64) -> f64 {
    let mut v = v;
    let mut i = 0;
    while i < n {
        v = &v * 0.5;
        i += 1;
    }
    v.sum()
}

/// Vector rows passed down a recursion of two calls (steps grow exponentially with `n`,
/// the depth linearly).
#[autobatch]
fn split(v: Vector, n: i64) -> f64 {
    if n > 1 {
        let w = &v * 0.5;
        split(w.clone(), n - 1) + split(w, n - 2)
    } else {
        v.sum()
    }
}

/// A workload's inputs for a batch of `lanes`, scaled by `size` (its steps grow with it).
type Inputs = fn(usize, i64) -> Vec<Column>;

fn fib_inputs(lanes: usize, size: i64) -> Vec<Column> {
    let n: Vec<i64> = (0..lanes as i64).map(|i| i % (size + 1)).collect();
    vec![Column::from_scalars(&n)]
}

fn collatz_inputs(lanes: usize, size: i64) -> Vec<Column> {
    let n: Vec<i64> = (0..lanes as i64).map(|i| 1 + i % size).collect();
    vec![Column::from_scalars(&n)]
}

/// Vectors of 8 elements and a size per lane.
fn vector_inputs(lanes: usize, size: i64) -> Vec<Column> {
    let v = Array2::from_shape_fn((lanes, 8), |(i, j)| (i * 8 + j) as f64);
    let n: Vec<i64> = (0..lanes as i64).map(|i| i % (size + 1)).collect();
    vec![Column::from_view2(v.view()), Column::from_scalars(&n)]
}

/// The workloads: name, program, inputs, the sizes of a short run and of a long one, and
/// whether the size is also the depth of recursion.
type Workload = (&'static str, &'static Executable, Inputs, [i64; 2], bool);

fn workloads() -> Vec<Workload> {
    vec![
        ("fib", fib::executable().unwrap(), fib_inputs, [4, 20], true),
        (
            "collatz",
            collatz::executable().unwrap(),
            collatz_inputs,
            [10, 1_000],
            false,
        ),
        (
            "shrink",
            shrink::executable().unwrap(),
            vector_inputs,
            [4, 400],
            false,
        ),
        (
            "split",
            split::executable().unwrap(),
            vector_inputs,
            [3, 16],
            true,
        ),
    ]
}

/// Allocations a run may make beyond those of a short run of the same program: a few, for
/// stacks or lists that grew (the first run grew most of them already).
const SLACK: u64 = 16;

/// Allocations a run may make per level of recursion beyond the short run's: stackless's
/// host frames hold their own lists of lanes (about 7 per level measured), the full VM's
/// stacks and vector rows grow by doubling. The recursive workloads' steps grow exponentially
/// with their depth, so one allocation per step would still be far past this.
const PER_LEVEL: u64 = 10;

/// After a first run, a run of many steps allocates about as often as one of a few steps
/// (but for a few allocations per level of recursion): not once per step.
#[test]
fn runs_allocate_per_run_not_per_step() {
    let lanes = 300;
    for mode in [Mode::FullVm, Mode::Stackless] {
        let config = Config {
            threads: 1,
            ..Config::with_mode(mode)
        };
        for (name, exe, inputs, [short, long], recursive) in workloads() {
            let (short_in, long_in) = (inputs(lanes, short), inputs(lanes, long));
            // The first run grows the memory later runs reuse.
            exe.run(&long_in, &config).unwrap();
            let (few, few_allocations) = counted(|| exe.run(&short_in, &config).unwrap());
            let (many, many_allocations) = counted(|| exe.run(&long_in, &config).unwrap());
            let what = format!(
                "{name} in {mode:?}: {few_allocations} allocations in {} steps, \
                 {many_allocations} in {}",
                few.stats.steps, many.stats.steps
            );
            assert!(many.stats.steps >= 5 * few.stats.steps, "{what}");
            let levels = match recursive {
                true => u64::try_from(long - short).unwrap(),
                false => 0,
            };
            let bound = few_allocations + SLACK + PER_LEVEL * levels;
            assert!(many_allocations <= bound, "{what}: more than {bound}");
        }
    }
}

//! Measuring harness (not a mode of the runtime, not a test): what "compiled blocks" would run
//! for fibonacci, written by hand, so that lever's floor is measured rather than assumed.
//!
//! The full VM runs a block op by op: each kernel, push and pop is its own pass over the
//! block's lanes, and moving lanes between blocks (return addresses, call depth, lane sets) is
//! more passes. Compiled blocks would run each block as one loop over its lanes that does all
//! of the block's work for a lane at once. This file is that loop for `fib_macro`'s lowered
//! program (`lane_ops fib-macro lowered` prints it: blocks `entry`, `then`, `then_ret1`,
//! `then_ret2`, `else`), keeping what the VM keeps:
//!
//! - the same blocks run in the same order (the lowest block with lanes waiting first), so the
//!   same block-lanes (printed);
//! - each stacked variable (`n`, `t.2`) and the return addresses keep their own per-lane depth
//!   and stack-major saved rows (`level * batch + lane`);
//! - lanes wait at a block in a bitset, or in a list when they all go to a block where none
//!   wait (a call's lanes to the entry, the two sides of the entry's branch);
//! - a call past the VM's default depth limit stops the run with an error (the kernels'
//!   arithmetic is the function's own: `-` and `+` as release builds compile them).
//!
//! One thing the VM does not do: a return lists its lanes by the block each returns to (as a
//! branch splits its lanes), where the VM sets each lane's bit in that block's set and lists
//! the set again when the block runs. The result is checked against the plain loop's.
//!
//! `cargo build --release -p autobatch-runtime --example fused_blocks`, then
//! `target/release/examples/fused_blocks` times, in one process and in turn within each of 21
//! rounds (batch 10,000 lanes of `n = i % 21`, one thread), the plain loop, the fused blocks
//! over the whole batch, and the full VM running `fib_macro` beside the fused blocks in the
//! VM's default shards and in shards of 1,000 and 500 lanes (one after the other, as one
//! thread runs shards); it prints each column's median and its ratio to the plain loop's.
//! `fused_blocks fused` or `fused_blocks plain` runs one of them once, for `valgrind
//! --tool=callgrind`. Every run's result is checked against fibonacci by iteration.

use autobatch_runtime::{autobatch, Column, Config, Executable, Mode};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// The plain scalar fibonacci the bench compares with.
fn fib(n: i64) -> i64 {
    if n > 1 {
        fib(n - 1) + fib(n - 2)
    } else {
        1
    }
}

/// Fibonacci as a user writes it: the full VM runs its lowered program, which [`fused`]
/// writes by hand.
#[autobatch]
fn fib_macro(n: i64) -> i64 {
    if n > 1 {
        fib_macro(n - 1) + fib_macro(n - 2)
    } else {
        1
    }
}

/// The blocks, in the order the full VM's plan runs them.
const ENTRY: usize = 0;
const THEN: usize = 1;
const THEN_RET1: usize = 2;
const THEN_RET2: usize = 3;
const ELSE: usize = 4;
const BLOCKS: usize = 5;

/// The VM's default call-depth limit (`Config::max_stack_depth`).
const MAX_DEPTH: usize = 10_000;

/// One stacked variable's saved rows, stack-major (`level * batch + lane`, as the VM keeps
/// them), each lane's depth, and the most any lane has held.
struct Stack<T> {
    slots: Vec<T>,
    depth: Vec<u32>,
    batch: usize,
    top: usize,
}

impl<T: Copy + Default> Stack<T> {
    fn new(batch: usize) -> Self {
        Stack {
            slots: Vec::new(),
            depth: vec![0; batch],
            batch,
            top: 0,
        }
    }

    /// Room for every lane to save one more row: one compare per block execution (the room
    /// doubles when the deepest lane reaches it), so a push in the loop checks nothing.
    fn reserve(&mut self) {
        let need = (self.top + 1) * self.batch;
        if need > self.slots.len() {
            let grown = need.max(2 * self.slots.len());
            self.slots.resize(grown, T::default());
        }
    }
}

/// Saves `value` for `lane` in a stack's `slots` and `depth`; returns the lane's new depth.
///
/// # Safety
/// `lane` is below the batch (`depth.len()`), and the stack was reserved since its deepest
/// lane last pushed.
#[inline(always)]
unsafe fn push<T>(slots: &mut [T], depth: &mut [u32], lane: usize, value: T) -> usize {
    let batch = depth.len();
    let d = depth.get_unchecked_mut(lane);
    *slots.get_unchecked_mut(*d as usize * batch + lane) = value;
    *d += 1;
    *d as usize
}

/// The value `lane` last saved in a stack's `slots` and `depth`, if it saved one.
///
/// # Safety
/// `lane` is below the batch (`depth.len()`).
#[inline(always)]
unsafe fn pop<T: Copy>(slots: &[T], depth: &mut [u32], lane: usize) -> Option<T> {
    let batch = depth.len();
    let d = depth.get_unchecked_mut(lane);
    *d = d.checked_sub(1)?;
    Some(*slots.get_unchecked(*d as usize * batch + lane))
}

/// A call from `lane`: its return address `to` pushed. Returns its new call depth, or the lane
/// if that passes the limit.
///
/// # Safety
/// As for [`push`].
#[inline(always)]
unsafe fn call(returns: &mut Stack<u8>, lane: usize, to: usize) -> Result<usize, usize> {
    let depth = push(&mut returns.slots, &mut returns.depth, lane, to as u8);
    if depth > MAX_DEPTH {
        return Err(lane);
    }
    Ok(depth)
}

/// Lane `lane`'s value in a per-lane column.
///
/// # Safety
/// `lane` is below `values.len()`.
#[inline(always)]
unsafe fn at(values: &[i64], lane: usize) -> i64 {
    *values.get_unchecked(lane)
}

/// Adds `lane` to the bitset at word `base` of `words`.
///
/// # Safety
/// `lane` is below the batch and `base` starts one block's bitset.
#[inline(always)]
unsafe fn send(words: &mut [u64], base: usize, lane: usize) {
    *words.get_unchecked_mut(base + lane / 64) |= 1 << (lane % 64);
}

/// The lanes waiting at each block, as the VM's queue keeps them: a bitset per block (in one
/// buffer), or a list, for lanes sent all at once to a block where none wait.
struct Waiting {
    words: Vec<u64>,
    per_block: usize,
    /// Bit `b`: block `b`'s bitset may hold lanes.
    any: u32,
    /// Per block, lanes listed in rising order (while its bitset is empty).
    lists: Vec<Vec<usize>>,
    /// Bit `b`: block `b`'s list holds lanes.
    listed: u32,
}

impl Waiting {
    /// Sends every lane of `list` to `block`: the list itself if none wait there (no work per
    /// lane; `list` gets back an empty one), else lane by lane into its bitset.
    fn give(&mut self, block: usize, list: &mut Vec<usize>) {
        let bit = 1 << block;
        if list.is_empty() {
            return;
        }
        if (self.any | self.listed) & bit == 0 {
            std::mem::swap(&mut self.lists[block], list);
            self.listed |= bit;
        } else {
            self.join(block, list);
        }
        list.clear();
    }

    /// Adds the lanes of `list` to `block`'s bitset.
    fn join(&mut self, block: usize, list: &[usize]) {
        for &l in list {
            // SAFETY: every listed lane is below the batch.
            unsafe { send(&mut self.words, block * self.per_block, l) };
        }
        self.any |= 1 << block;
    }

    /// The lowest block with lanes waiting, its lanes moved into `lanes` in order.
    fn next(&mut self, lanes: &mut Vec<usize>) -> Option<usize> {
        while self.any | self.listed != 0 {
            let block = (self.any | self.listed).trailing_zeros() as usize;
            let bit = 1 << block;
            if self.listed & bit != 0 {
                self.listed &= !bit;
                let mut list = std::mem::take(&mut self.lists[block]);
                if self.any & bit == 0 {
                    std::mem::swap(lanes, &mut list);
                    list.clear();
                    self.lists[block] = list;
                    return Some(block);
                }
                // Lanes in both: the list joins the bitset.
                self.join(block, &list);
                list.clear();
                self.lists[block] = list;
            }
            self.any &= !bit;
            let start = block * self.per_block;
            let words = &mut self.words[start..start + self.per_block];
            lanes.clear();
            lanes.reserve(64 * words.len());
            let (room, mut k) = (lanes.as_mut_ptr(), 0);
            for (w, word) in words.iter_mut().enumerate() {
                let mut bits = std::mem::take(word);
                while bits != 0 {
                    // SAFETY: the room holds 64 lanes per word, and each bit is one lane.
                    unsafe { room.add(k).write(w * 64 + bits.trailing_zeros() as usize) };
                    k += 1;
                    bits &= bits - 1;
                }
            }
            // SAFETY: the first `k` lanes were written just above.
            unsafe { lanes.set_len(k) };
            if k > 0 {
                return Some(block);
            }
        }
        None
    }
}

/// Fibonacci of every lane's `n`, each block one fused loop over its lanes; also returns the
/// block-lanes run. Fails with the first lane whose call passes the depth limit.
fn fused(ns: &[i64]) -> Result<(Vec<i64>, u64), usize> {
    let batch = ns.len();
    let mut n = ns.to_vec();
    let mut ret = vec![0i64; batch];
    let mut t2 = vec![0i64; batch];
    let (mut saved_n, mut saved_t2) = (Stack::<i64>::new(batch), Stack::<i64>::new(batch));
    let mut returns = Stack::<u8>::new(batch);
    let per_block = batch.div_ceil(64);
    let mut waiting = Waiting {
        words: vec![0; BLOCKS * per_block],
        per_block,
        any: 0,
        lists: (0..BLOCKS).map(|_| Vec::with_capacity(batch)).collect(),
        listed: 0,
    };
    waiting.give(ENTRY, &mut (0..batch).collect());
    // The two sides of the entry's branch.
    let (mut yes, mut no): (Vec<usize>, Vec<usize>) =
        (Vec::with_capacity(batch), Vec::with_capacity(batch));
    // The lanes a return sends to each block.
    let mut backs: [Vec<usize>; BLOCKS] = std::array::from_fn(|_| Vec::with_capacity(batch));
    let mut lanes = Vec::with_capacity(batch);
    let mut block_lanes = 0;
    while let Some(block) = waiting.next(&mut lanes) {
        block_lanes += lanes.len() as u64;
        // SAFETY (every `unsafe` below): each lane listed was sent by a lane below the batch
        // (the length of `n`, `ret`, `t2` and every depth), and each stack pushed to was
        // reserved before the loop.
        let (n, ret, t2) = (n.as_mut_slice(), ret.as_mut_slice(), t2.as_mut_slice());
        match block {
            ENTRY => {
                let (room_yes, room_no) = (yes.as_mut_ptr(), no.as_mut_ptr());
                let (mut k_yes, mut k_no) = (0, 0);
                for &l in &lanes {
                    // SAFETY: each list has room for the batch, and gets each lane once.
                    unsafe {
                        if at(n, l) > 1 {
                            room_yes.add(k_yes).write(l);
                            k_yes += 1;
                        } else {
                            room_no.add(k_no).write(l);
                            k_no += 1;
                        }
                    }
                }
                // SAFETY: the first `k_yes` and `k_no` lanes were written just above.
                unsafe {
                    yes.set_len(k_yes);
                    no.set_len(k_no);
                }
                waiting.give(THEN, &mut yes);
                waiting.give(ELSE, &mut no);
                yes.reserve(batch);
                no.reserve(batch);
            }
            THEN => {
                saved_n.reserve();
                returns.reserve();
                let (mut top_n, mut top_r) = (saved_n.top, returns.top);
                for &l in &lanes {
                    let v = unsafe { at(n, l) };
                    top_n =
                        top_n.max(unsafe { push(&mut saved_n.slots, &mut saved_n.depth, l, v) });
                    unsafe { *n.get_unchecked_mut(l) = v - 1 };
                    top_r = top_r.max(unsafe { call(&mut returns, l, THEN_RET1) }?);
                }
                (saved_n.top, returns.top) = (top_n, top_r);
                waiting.give(ENTRY, &mut lanes);
            }
            THEN_RET1 => {
                saved_t2.reserve();
                returns.reserve();
                let (mut top_t2, mut top_r) = (saved_t2.top, returns.top);
                for &l in &lanes {
                    let old = unsafe { at(t2, l) };
                    top_t2 = top_t2
                        .max(unsafe { push(&mut saved_t2.slots, &mut saved_t2.depth, l, old) });
                    unsafe {
                        *t2.get_unchecked_mut(l) = at(ret, l);
                        *n.get_unchecked_mut(l) = at(n, l) - 2;
                    }
                    top_r = top_r.max(unsafe { call(&mut returns, l, THEN_RET2) }?);
                }
                (saved_t2.top, returns.top) = (top_t2, top_r);
                waiting.give(ENTRY, &mut lanes);
            }
            THEN_RET2 | ELSE => {
                // Each lane is listed for the block its return address names.
                let rooms = backs.each_mut().map(|b| b.as_mut_ptr());
                let mut ks = [0; BLOCKS];
                for &l in &lanes {
                    unsafe {
                        if block == THEN_RET2 {
                            *ret.get_unchecked_mut(l) = at(t2, l) + at(ret, l);
                            if let Some(v) = pop(&saved_t2.slots, &mut saved_t2.depth, l) {
                                *t2.get_unchecked_mut(l) = v;
                            }
                        } else {
                            *ret.get_unchecked_mut(l) = 1;
                            if let Some(v) = pop(&saved_n.slots, &mut saved_n.depth, l) {
                                *n.get_unchecked_mut(l) = v;
                            }
                        }
                        if let Some(to) = pop(&returns.slots, &mut returns.depth, l) {
                            // SAFETY: each list has room for the batch, and gets each lane once.
                            let to = to as usize;
                            rooms[to].add(ks[to]).write(l);
                            ks[to] += 1;
                        }
                    }
                }
                for (to, back) in backs.iter_mut().enumerate() {
                    // SAFETY: the first `ks[to]` lanes were written just above.
                    unsafe { back.set_len(ks[to]) };
                    waiting.give(to, back);
                    back.reserve(batch);
                }
            }
            _ => unreachable!("five blocks"),
        }
    }
    Ok((ret, block_lanes))
}

/// The plain loop's results.
fn plain(ns: &[i64]) -> Vec<i64> {
    ns.iter().map(|&n| fib(black_box(n))).collect()
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Fibonacci by iteration: the check, cheap enough to leave the counts of a run to the
/// function run.
fn fib_by_iteration(n: i64) -> i64 {
    (1..n).fold((1, 1), |(a, b), _| (b, a + b)).1
}

/// The full VM on the same batch (`fib_macro`'s lowered program is what [`fused`] runs by
/// hand), one thread, its shards as `Config` chooses them or of `shard_size` lanes.
fn vm(exe: &Executable, input: &[Column], shard_size: Option<usize>) -> Vec<i64> {
    let config = Config {
        threads: 1,
        shard_size,
        ..Config::with_mode(Mode::FullVm)
    };
    let run = exe.run(input, &config).expect("fib(20) is not deep");
    run.outputs[0]
        .as_array::<i64>()
        .expect("an i64 column")
        .iter()
        .copied()
        .collect()
}

/// [`fused`] over consecutive runs of `size` lanes one after the other, as the VM runs shards
/// on one thread. The VM's default shards are dealt runs of lanes instead; with `n = i % 21`
/// both hold about the same mix of values (each shard spans dozens of cycles of 21), not the
/// same lanes.
fn fused_in_shards(ns: &[i64], size: usize) -> Vec<i64> {
    ns.chunks(size)
        .flat_map(|shard| fused(shard).expect("fib(20) is not deep").0)
        .collect()
}

fn main() {
    let ns: Vec<i64> = (0..10_000).map(|i| i % 21).collect();
    let want: Vec<i64> = ns.iter().map(|&n| fib_by_iteration(n)).collect();
    let check = |got: &[i64], what: &str| assert_eq!(got, want, "{what} computes fibonacci");
    match std::env::args().nth(1).as_deref() {
        Some("fused") => {
            let (got, block_lanes) = fused(&ns).expect("fib(20) is not deep");
            check(&got, "the fused blocks' run");
            println!("fused blocks: {block_lanes} block-lanes");
        }
        Some("plain") => check(&plain(&ns), "the plain loop"),
        None => {
            let exe = fib_macro::executable().expect("fib_macro builds");
            let input = [Column::from_scalars(&ns)];
            let default_shard = exe
                .run(
                    &input,
                    &Config {
                        threads: 1,
                        ..Config::with_mode(Mode::FullVm)
                    },
                )
                .expect("fib(20) is not deep")
                .stats
                .shards;
            let default_size = ns.len().div_ceil(default_shard.max(1));
            // Each column timed once per round, the columns back to back; medians of rounds.
            type Timed<'a> = Box<dyn Fn() -> Vec<i64> + 'a>;
            let mut columns: Vec<(String, Timed<'_>)> = vec![
                ("plain loop".into(), Box::new(|| plain(&ns))),
                (
                    "fused blocks, whole batch".into(),
                    Box::new(|| fused(&ns).expect("fib(20) is not deep").0),
                ),
            ];
            // The VM and the fused blocks in its default shards, and in smaller ones.
            for (size, name) in [
                (
                    None,
                    format!("default shards ({default_shard} of {default_size})"),
                ),
                (Some(1_000), "shards of 1,000".into()),
                (Some(500), "shards of 500".into()),
            ] {
                let (exe, input) = (&exe, &input);
                columns.push((
                    format!("full VM, {name}"),
                    Box::new(move || vm(exe, input, size)),
                ));
                let fused_size = size.unwrap_or(default_size);
                let ns = &ns;
                columns.push((
                    format!("fused blocks, {name}"),
                    Box::new(move || fused_in_shards(ns, fused_size)),
                ));
            }
            let runs = 21;
            let mut times = vec![Vec::new(); columns.len()];
            for _ in 0..runs {
                for ((name, run), times) in columns.iter().zip(&mut times) {
                    let start = Instant::now();
                    let got = black_box(run());
                    times.push(start.elapsed());
                    check(&got, name);
                }
            }
            let medians: Vec<Duration> = times.iter_mut().map(|t| median(t)).collect();
            let (_, block_lanes) = fused(&ns).expect("fib(20) is not deep");
            println!(
                "fib(i % 21), 10,000 lanes, one thread, medians of {runs} rounds ({block_lanes} \
                 block-lanes in every batched column)"
            );
            for ((name, _), t) in columns.iter().zip(&medians) {
                println!(
                    "{name:<44} {:>9.2} ms {:>6.1}x the plain loop",
                    t.as_secs_f64() * 1e3,
                    t.as_secs_f64() / medians[0].as_secs_f64()
                );
            }
        }
        Some(other) => panic!("unknown mode {other}: fused, plain, or none to time every column"),
    }
}

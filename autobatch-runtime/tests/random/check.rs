//! Runs a random program every way (each combination of `Passes`, both interpreters, and
//! cut into shards on several threads) and compares each lane with the one-lane reference
//! interpreter, bit for bit; at small stack limits, compares where the runs stop with depth
//! errors.

use super::build::{build, Built};
use super::prims::Ty;
use super::spec::{Batch, Spec};
use autobatch_runtime::ndarray::Array2;
use autobatch_runtime::{
    Column, Config, Executable, InlineOptions, Key, Mode, Passes, Run, RuntimeError, Schedule,
};
use proptest::test_runner::TestCaseError;

/// The input columns of a batch for an entry taking `params`: the counter, then each
/// parameter's leaves (a pair's are the `i64` and the `f64` its position holds).
pub fn columns(batch: &Batch, params: &[Ty]) -> Vec<Column> {
    let counters: Vec<i64> = batch.lanes.iter().map(|l| l.counter).collect();
    let mut cols = vec![Column::from_scalars(&counters)];
    for (j, &t) in params.iter().enumerate() {
        match t {
            Ty::Pair => cols.extend([leaf(batch, j, Ty::Int), leaf(batch, j, Ty::Float)]),
            t => cols.push(leaf(batch, j, t)),
        }
    }
    cols
}

/// The column of parameter position `j` as leaf type `t`.
fn leaf(batch: &Batch, j: usize, t: Ty) -> Column {
    let lanes = &batch.lanes;
    let slots = lanes.iter().map(|l| &l.slots[j]);
    match t {
        Ty::Int => Column::from_scalars(&slots.map(|s| s.int).collect::<Vec<_>>()),
        Ty::Float => Column::from_scalars(&slots.map(|s| s.float).collect::<Vec<_>>()),
        Ty::Bool => Column::from_scalars(&slots.map(|s| s.bool).collect::<Vec<_>>()),
        Ty::Key => Column::from_scalars(
            &slots
                .map(|s| Key::new(s.key).fold_in(j as u64))
                .collect::<Vec<_>>(),
        ),
        Ty::Vector => {
            let rows: Vec<f64> = slots.flat_map(|s| s.vector[..batch.len].to_vec()).collect();
            let rows =
                Array2::from_shape_vec((lanes.len(), batch.len), rows).expect("one row per lane");
            Column::from_view2(rows.view())
        }
        Ty::Pair => unreachable!("a pair is two columns"),
    }
}

/// Every combination of the optional passes; "inline" inlines every non-recursive function
/// when `inline_all`, only small ones otherwise.
pub fn variants(inline_all: bool) -> Vec<Passes> {
    let mut all = Vec::new();
    for inline in [false, true] {
        for simplify in [false, true] {
            for copies in [false, true] {
                let options = match inline_all {
                    true => InlineOptions {
                        max_ops: usize::MAX,
                    },
                    false => InlineOptions::default(),
                };
                all.push(Passes {
                    inline: inline.then_some(options),
                    simplify,
                    copies,
                    call_copies: copies,
                });
            }
        }
    }
    all
}

/// One lane's value of one output, comparable bit for bit (floats by their bits, so NaN equals
/// NaN and `-0.0` differs from `0.0`).
#[derive(Debug, PartialEq)]
pub enum Bits {
    /// Scalars and vector elements as 64-bit patterns.
    Words(Vec<u64>),
    /// Keys.
    Keys(Vec<Key>),
}

/// Lane `lane` of every output column.
pub fn lane(outputs: &[Column], lane: usize) -> Vec<Bits> {
    outputs
        .iter()
        .map(|c| match c {
            Column::I64(a) => Bits::Words(a.row(lane).iter().map(|&x| x as u64).collect()),
            Column::F64(a) => Bits::Words(a.row(lane).iter().map(|x| x.to_bits()).collect()),
            Column::Bool(a) => Bits::Words(a.row(lane).iter().map(|&x| x as u64).collect()),
            Column::Key(a) => Bits::Keys(a.row(lane).to_vec()),
            other => unreachable!("random programs have no {} outputs", other.dtype()),
        })
        .collect()
}

/// The configuration every run of a case uses.
pub fn config(mode: Mode, batch: &Batch, max_stack_depth: usize) -> Config {
    Config {
        mode,
        max_stack_depth,
        vector_len: Some(batch.len),
        // Far above what a random program runs (its calls are bounded), so a program that
        // failed to terminate fails fast.
        step_budget: Some(5_000_000),
        ..Config::default()
    }
}

/// What a failure report shows of a case: the program (as the builder made it) and the inputs.
fn context(built: &Built, batch: &Batch) -> String {
    format!("program:\n{}\ninputs: {batch:?}", built.program)
}

/// Prepares the program with `passes` and runs it in `mode`.
pub fn run(
    built: &Built,
    passes: &Passes,
    config: &Config,
    inputs: &[Column],
) -> Result<Run, RuntimeError> {
    Executable::with_passes(built.program.clone(), built.kernels.clone(), passes)?
        .run(inputs, config)
}

/// The main property: with depths within the limit, every way of running the program gives
/// the reference interpreter's results, lane by lane, bit for bit.
pub fn agree(spec: &Spec, batch: &Batch) -> Result<(), TestCaseError> {
    let built = build(spec, batch.len);
    let inputs = columns(batch, &spec.funcs[0].params);
    let reference = reference_at(&built, batch, &inputs, LIMIT)?;
    if let Err(e) = &reference {
        let context = context(&built, batch);
        return Err(TestCaseError::fail(format!("reference: {e}\n{context}")));
    }
    // Every way that disagrees, then the first disagreement in full.
    let mut failures: Vec<String> = Vec::new();
    let mut first: Option<String> = None;
    for passes in variants(spec.inline_all) {
        for mode in [Mode::FullVm, Mode::Stackless] {
            let way = format!("{mode:?}, {passes:?}");
            let got = run(&built, &passes, &config(mode, batch, LIMIT), &inputs);
            if let Some(how) = disagreement(&reference, &got, batch) {
                first.get_or_insert(format!("{way}: {how}"));
                failures.push(way);
            }
        }
    }
    if let Some(first) = first {
        return Err(TestCaseError::fail(format!(
            "{} of 16 ways disagree with the reference: {}
{first}
{}",
            failures.len(),
            failures.join("; "),
            context(&built, batch)
        )));
    }
    Ok(())
}

/// The stack limit of the main property: far above the deepest recursion a random program
/// makes, so no run fails.
pub const LIMIT: usize = 4096;

/// Whether `e` says a run went deeper than the configured stack limit.
pub fn is_depth_error(e: &RuntimeError) -> bool {
    matches!(
        e,
        RuntimeError::StackOverflow { .. } | RuntimeError::RecursionLimit { .. }
    )
}

/// At stack limit `limit` (a number of frames, or one found from the batch: see [`Limit`]):
/// where the reference interpreter stops with a depth error, every way (every `Passes`
/// combination, inlining included: depth counts frames of recursive functions, which inlining
/// never removes) stops with one; where it completes, every way gives its results.
pub fn agree_at_limit(spec: &Spec, batch: &Batch, limit: Limit) -> Result<(), TestCaseError> {
    let built = build(spec, batch.len);
    let inputs = columns(batch, &spec.funcs[0].params);
    let limit = limit.frames(&built, batch, &inputs)?;
    let reference = reference_at(&built, batch, &inputs, limit)?;
    let mut failures: Vec<String> = Vec::new();
    for passes in variants(false) {
        for mode in [Mode::FullVm, Mode::Stackless] {
            let got = run(&built, &passes, &config(mode, batch, limit), &inputs);
            if let Some(how) = disagreement(&reference, &got, batch) {
                failures.push(format!("{mode:?}, {passes:?}: {how}"));
            }
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(TestCaseError::fail(format!(
            "at stack limit {limit}, {} ways disagree with the reference:\n{}\n{}",
            failures.len(),
            failures.join("\n"),
            context(&built, batch)
        )))
    }
}

/// The stack limit a case runs at.
#[derive(Clone, Copy, Debug)]
pub enum Limit {
    /// This many frames.
    Fixed(usize),
    /// The deepest lane's depth: the smallest limit at which the reference completes the
    /// whole batch, so every lane completes, the deepest with no frame to spare.
    Deepest,
    /// One below [`Limit::Deepest`]: the deepest lanes fail and the others complete.
    BelowDeepest,
}

impl Limit {
    /// The limit in frames for `built` run on `inputs`.
    fn frames(
        self,
        built: &Built,
        batch: &Batch,
        inputs: &[Column],
    ) -> Result<usize, TestCaseError> {
        Ok(match self {
            Limit::Fixed(limit) => limit,
            Limit::Deepest => deepest(built, batch, inputs)?,
            Limit::BelowDeepest => deepest(built, batch, inputs)?.saturating_sub(1).max(1),
        })
    }
}

/// Shards and threads: with every optional pass on and with none, both interpreters run the
/// batch cut into shards of `shard` lanes on `threads` threads at stack limit `limit` (the
/// full VM taking blocks in the order `schedule` says), and must agree with the reference as [`agree_at_limit`] says; then the same with lane
/// isolation, where each lane must be what the reference makes of that lane alone: its
/// results, or a failure of that lane only, with a depth error. A lane's results, and whether
/// it goes too deep, never depend on which lanes share its shard, how many shards there are,
/// which thread ran them, whether another lane failed or which lanes ran a block together (the
/// schedule). The runs of one pass set share an
/// executable, which first runs the batch in reverse order, so every run also reuses the
/// memory runs before it left (of other lanes, sizes and modes) and must not see their values.
pub fn agree_in_shards(
    spec: &Spec,
    batch: &Batch,
    (threads, shard): (usize, usize),
    limit: Limit,
    schedule: Schedule,
) -> Result<(), TestCaseError> {
    let built = build(spec, batch.len);
    let inputs = columns(batch, &spec.funcs[0].params);
    let limit = limit.frames(&built, batch, &inputs)?;
    let reference = reference_at(&built, batch, &inputs, limit)?;
    let lanes = batch.lanes.len();
    let mut alone = Vec::with_capacity(lanes);
    for l in 0..lanes {
        let one: Vec<Column> = inputs.iter().map(|c| c.gather(&[l])).collect();
        alone.push(reference_at(&built, batch, &one, limit)?);
    }
    let reversed: Vec<usize> = (0..lanes).rev().collect();
    let reversed: Vec<Column> = inputs.iter().map(|c| c.gather(&reversed)).collect();
    let fail = |way: String, how: String| {
        let context = context(&built, batch);
        TestCaseError::fail(format!("{way}, stack limit {limit}: {how}\n{context}"))
    };
    for passes in [Passes::default(), Passes::none()] {
        let exe = Executable::with_passes(built.program.clone(), built.kernels.clone(), &passes)
            .map_err(|e| fail(format!("{passes:?}"), format!("prepare: {e}")))?;
        for mode in [Mode::FullVm, Mode::Stackless] {
            // Leaves its memory (and, with a depth error, a run stopped half way) behind.
            let _ = exe.run(&reversed, &config(mode, batch, limit));
        }
        for lane_isolation in [false, true] {
            for mode in [Mode::FullVm, Mode::Stackless] {
                let sharded = Config {
                    threads,
                    shard_size: Some(shard),
                    lane_isolation,
                    schedule,
                    ..config(mode, batch, limit)
                };
                let got = exe.run(&inputs, &sharded);
                let how = match lane_isolation {
                    false => disagreement(&reference, &got, batch),
                    true => lane_by_lane_disagreement(&alone, &got),
                };
                if let Some(how) = how {
                    let way = format!(
                        "{mode:?}, {passes:?}, {threads} threads, shards of {shard}, lane \
                         isolation {lane_isolation}, {schedule:?}"
                    );
                    return Err(fail(way, how));
                }
            }
        }
    }
    Ok(())
}

/// The smallest stack limit at which the reference completes the whole batch (found by
/// bisection from 1 up to 64, past the random programs' depths).
fn deepest(built: &Built, batch: &Batch, inputs: &[Column]) -> Result<usize, TestCaseError> {
    // The reference completes at `hi` (or `hi` is the bound); it stops below `lo`.
    let (mut lo, mut hi) = (1, 64);
    while lo < hi {
        let mid = (lo + hi) / 2;
        match reference_at(built, batch, inputs, mid)? {
            Ok(_) => hi = mid,
            Err(_) => lo = mid + 1,
        }
    }
    Ok(hi)
}

/// The reference interpreter's run of `built` at stack limit `limit`: its results or its
/// depth error (any other error fails the case).
fn reference_at(
    built: &Built,
    batch: &Batch,
    inputs: &[Column],
    limit: usize,
) -> Result<Result<Run, RuntimeError>, TestCaseError> {
    let exe = Executable::with_passes(
        built.program.clone(),
        built.kernels.clone(),
        &Passes::none(),
    )
    .map_err(|e| TestCaseError::fail(format!("prepare: {e}\n{}", context(built, batch))))?;
    let reference = exe.run_reference(inputs, &config(Mode::FullVm, batch, limit));
    match &reference {
        Err(e) if !is_depth_error(e) => Err(TestCaseError::fail(format!(
            "reference: {e}\n{}",
            context(built, batch)
        ))),
        _ => Ok(reference),
    }
}

/// How run `got` disagrees with the reference's `want`, if it does: both must give every
/// lane's results bit for bit, or both stop with a depth error.
fn disagreement(
    want: &Result<Run, RuntimeError>,
    got: &Result<Run, RuntimeError>,
    batch: &Batch,
) -> Option<String> {
    match (want, got) {
        (Ok(want), Ok(have)) => (0..batch.lanes.len()).find_map(|l| {
            let (want, have) = (lane(&want.outputs, l), lane(&have.outputs, l));
            (want != have).then(|| format!("lane {l} is {have:?}, the reference says {want:?}"))
        }),
        (Err(_), Err(e)) if is_depth_error(e) => None,
        (Err(e), Ok(_)) => Some(format!("results, the reference: {e}")),
        (_, Err(e)) => Some(format!("{e}, the reference: results or a depth error")),
    }
}

/// How run `got`, made with lane isolation, disagrees with `alone`, the reference's run of
/// each lane by itself, if it does: a lane the reference completes has its results and did
/// not fail; a lane it stops with a depth error failed with one, and its outputs are zeros.
fn lane_by_lane_disagreement(
    alone: &[Result<Run, RuntimeError>],
    got: &Result<Run, RuntimeError>,
) -> Option<String> {
    let got = match got {
        Ok(got) => got,
        Err(e) => return Some(format!("{e}, with lane isolation")),
    };
    let zeros: Vec<Column> = (got.outputs.iter())
        .map(|c| Column::zeros(c.dtype(), 1, c.width()))
        .collect();
    alone.iter().enumerate().find_map(|(l, want)| {
        let failure = got.failed.iter().find(|f| f.lane == l);
        match (want, failure) {
            (Ok(want), None) => {
                let (want, have) = (lane(&want.outputs, 0), lane(&got.outputs, l));
                (want != have).then(|| {
                    format!("lane {l} is {have:?}, the reference of it alone says {want:?}")
                })
            }
            (Ok(_), Some(f)) => Some(format!(
                "lane {l} failed ({}), the reference of it alone completes",
                f.error
            )),
            (Err(_), Some(f)) if is_depth_error(&f.error) => {
                let (zero, have) = (lane(&zeros, 0), lane(&got.outputs, l));
                (zero != have).then(|| format!("failed lane {l} holds {have:?}, not zeros"))
            }
            (Err(e), _) => Some(format!(
                "lane {l} did not fail with a depth error, the reference of it alone: {e}"
            )),
        }
    })
}

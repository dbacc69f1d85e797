//! Runs a random program every way (each combination of `Passes`, both interpreters) and
//! compares each lane with the one-lane reference interpreter, bit for bit; at small stack
//! limits, compares where the runs stop with depth errors.

use super::build::{build, Built};
use super::prims::Ty;
use super::spec::{Batch, Spec};
use autobatch_runtime::ndarray::Array2;
use autobatch_runtime::{
    Column, Config, Executable, InlineOptions, Key, Mode, Passes, Run, RuntimeError,
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
    let lanes = batch.lanes.len();
    let reference = Executable::with_passes(
        built.program.clone(),
        built.kernels.clone(),
        &Passes::none(),
    )
    .and_then(|exe| exe.run_reference(&inputs, &config(Mode::FullVm, batch, LIMIT)))
    .map_err(|e| TestCaseError::fail(format!("reference: {e}\n{}", context(&built, batch))))?;
    // Every way that disagrees, then the first disagreement in full.
    let mut failures: Vec<String> = Vec::new();
    let mut first: Option<String> = None;
    for passes in variants(spec.inline_all) {
        for mode in [Mode::FullVm, Mode::Stackless] {
            let way = format!("{mode:?}, {passes:?}");
            let detail = match run(&built, &passes, &config(mode, batch, LIMIT), &inputs) {
                Err(e) => Some(format!("{way}: {e}")),
                Ok(got) => (0..lanes).find_map(|l| {
                    let (want, have) = (lane(&reference.outputs, l), lane(&got.outputs, l));
                    (want != have).then(|| {
                        format!("{way}: lane {l} is {have:?}, the reference says {want:?}")
                    })
                }),
            };
            if let Some(detail) = detail {
                failures.push(way);
                first.get_or_insert(detail);
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

/// At a small stack limit `limit`: where the reference interpreter stops with a depth error,
/// every way (every `Passes` combination, inlining included: depth counts frames of recursive
/// functions, which inlining never removes) stops with one; where it completes, every way
/// gives its results.
pub fn agree_at_limit(spec: &Spec, batch: &Batch, limit: usize) -> Result<(), TestCaseError> {
    let built = build(spec, batch.len);
    let inputs = columns(batch, &spec.funcs[0].params);
    let exe = Executable::with_passes(
        built.program.clone(),
        built.kernels.clone(),
        &Passes::none(),
    )
    .map_err(|e| TestCaseError::fail(format!("prepare: {e}\n{}", context(&built, batch))))?;
    let reference = exe.run_reference(&inputs, &config(Mode::FullVm, batch, limit));
    if let Err(e) = &reference {
        if !is_depth_error(e) {
            return Err(TestCaseError::fail(format!(
                "reference: {e}\n{}",
                context(&built, batch)
            )));
        }
    }
    let same = |want: &Run, have: &Run| {
        (0..batch.lanes.len()).all(|l| lane(&want.outputs, l) == lane(&have.outputs, l))
    };
    let mut failures: Vec<String> = Vec::new();
    for passes in variants(false) {
        for mode in [Mode::FullVm, Mode::Stackless] {
            let got = run(&built, &passes, &config(mode, batch, limit), &inputs);
            let agrees = match (&reference, &got) {
                (Ok(want), Ok(have)) => same(want, have),
                (Err(_), Err(e)) => is_depth_error(e),
                _ => false,
            };
            if !agrees {
                let got = got.map(|_| "results");
                let want = reference.as_ref().map(|_| "results");
                failures.push(format!(
                    "{mode:?}, {passes:?}: {got:?}, the reference: {want:?}"
                ));
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

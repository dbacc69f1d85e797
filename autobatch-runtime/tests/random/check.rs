//! Runs a random program every way (each combination of `Passes`, both interpreters) and
//! compares each lane with the one-lane reference interpreter, bit for bit.

use super::build::{build, Built};
use super::spec::{Batch, Input, Spec};
use autobatch_runtime::ndarray::Array2;
use autobatch_runtime::{
    Column, Config, Executable, InlineOptions, Key, Mode, Passes, Run, RuntimeError,
};
use proptest::test_runner::TestCaseError;

/// The input columns of a batch: the counter, then each entry parameter.
pub fn columns(batch: &Batch) -> Vec<Column> {
    let lanes = batch.counter.len();
    let mut cols = vec![Column::from_scalars(&batch.counter)];
    for values in &batch.params {
        cols.push(match values.first() {
            Some(Input::I(_)) => Column::from_scalars(&pick(values, |v| match v {
                Input::I(x) => Some(*x),
                _ => None,
            })),
            Some(Input::F(_)) => Column::from_scalars(&pick(values, |v| match v {
                Input::F(x) => Some(*x),
                _ => None,
            })),
            Some(Input::B(_)) => Column::from_scalars(&pick(values, |v| match v {
                Input::B(x) => Some(*x),
                _ => None,
            })),
            Some(Input::K(_)) => Column::from_scalars(&pick(values, |v| match v {
                Input::K(seed) => Some(Input::key(*seed)),
                _ => None,
            })),
            Some(Input::V(_)) | None => {
                let rows: Vec<f64> = (values.iter())
                    .flat_map(|v| match v {
                        Input::V(x) => x.clone(),
                        _ => Vec::new(),
                    })
                    .collect();
                let rows = Array2::from_shape_vec((lanes, batch.len), rows)
                    .expect("every vector input has the run's length");
                Column::from_view2(rows.view())
            }
        });
    }
    cols
}

fn pick<T>(values: &[Input], f: impl Fn(&Input) -> Option<T>) -> Vec<T> {
    values
        .iter()
        .map(|v| f(v).expect("one type per input"))
        .collect()
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
    let inputs = columns(batch);
    let lanes = batch.counter.len();
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

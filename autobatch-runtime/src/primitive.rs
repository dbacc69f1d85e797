//! Checking that a primitive's batched kernel agrees with its scalar form.
//!
//! A batched primitive has two implementations: the scalar form (what the plain function and
//! the lane-wise fallback run) and a batched kernel that sees every active lane at once (one
//! GEMM instead of many mat-vecs). [`check_agreement`] runs both on the same inputs, on every
//! lane and on subsets of lanes, and reports the first element where they differ.

use crate::column::{width_of, Column};
use crate::kernel::{Context, Kernel, KernelError, LaneInputs, LaneOutputs};
use autobatch_ir::TensorType;
use std::cell::Cell;
use thiserror::Error;

/// How closely the two forms must agree.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    /// Bit for bit (required for batch-invariant results).
    Exact,
    /// `|a - b| <= rel * max(|a|, |b|, 1)` for floats; integers, bools and keys exactly.
    Relative(f64),
}

/// Where the batched kernel and the scalar form disagree, or why they could not be compared.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum AgreementError {
    /// One of the kernels failed.
    #[error("the {form} form failed: {message}")]
    Failed {
        /// `"scalar"` or `"batched"`.
        form: &'static str,
        /// Its message.
        message: String,
    },
    /// Two outputs differ.
    #[error("output leaf {leaf}, lane {lane}, element {element}: scalar {scalar} vs batched {batched} ({lanes} active lanes)")]
    Mismatch {
        /// Output leaf.
        leaf: usize,
        /// Lane (row of the inputs).
        lane: usize,
        /// Element within the row.
        element: usize,
        /// The scalar form's value.
        scalar: String,
        /// The batched kernel's value.
        batched: String,
        /// How many lanes were active in that comparison.
        lanes: usize,
    },
}

/// Runs `kernel` (given `context`) on `lanes` of `inputs` (one column per input leaf),
/// returning dense outputs.
fn run_kernel(
    kernel: &Kernel,
    context: Context<'_>,
    inputs: &[Column],
    lanes: &[usize],
    outputs: &[TensorType],
    vector_len: usize,
) -> Result<Vec<Column>, KernelError> {
    let mut outs: Vec<Column> = outputs
        .iter()
        .map(|t| Column::zeros(t.dtype, lanes.len(), width_of(*t, vector_len)))
        .collect();
    match kernel {
        Kernel::LaneWise(f) | Kernel::LaneWiseInPlace(f) | Kernel::LaneWiseDirect(f, _) => {
            let refs: Vec<&Column> = inputs.iter().collect();
            let progress = Cell::new(0);
            f(
                &LaneInputs::new(&refs, lanes, &progress).with_context(context),
                &mut LaneOutputs::new(&mut outs),
            )?;
        }
        Kernel::Batched(f) => {
            let dense: Vec<Column> = inputs.iter().map(|c| c.gather(lanes)).collect();
            f(context, &dense.iter().collect::<Vec<_>>(), &mut outs)?;
        }
    }
    Ok(outs)
}

fn close(a: f64, b: f64, tol: Tolerance) -> bool {
    match tol {
        Tolerance::Exact => a.to_bits() == b.to_bits(),
        Tolerance::Relative(rel) => {
            (a.is_nan() && b.is_nan()) || (a - b).abs() <= rel * a.abs().max(b.abs()).max(1.0)
        }
    }
}

fn compare(
    scalar: &[Column],
    batched: &[Column],
    lanes: &[usize],
    tol: Tolerance,
) -> Result<(), AgreementError> {
    for (leaf, (s, b)) in scalar.iter().zip(batched).enumerate() {
        let width = s.width();
        let mismatch = |k: usize, scalar: String, batched: String| AgreementError::Mismatch {
            leaf,
            lane: lanes[k / width.max(1)],
            element: k % width.max(1),
            scalar,
            batched,
            lanes: lanes.len(),
        };
        let found = match (s, b) {
            (Column::F64(x), Column::F64(y)) => x
                .iter()
                .zip(y.iter())
                .enumerate()
                .find(|(_, (a, b))| !close(**a, **b, tol))
                .map(|(k, (a, b))| mismatch(k, a.to_string(), b.to_string())),
            (Column::F32(x), Column::F32(y)) => x
                .iter()
                .zip(y.iter())
                .enumerate()
                .find(|(_, (a, b))| !close(f64::from(**a), f64::from(**b), tol))
                .map(|(k, (a, b))| mismatch(k, a.to_string(), b.to_string())),
            _ if s == b => None,
            _ => Some(mismatch(0, format!("{s:?}"), format!("{b:?}"))),
        };
        if let Some(e) = found {
            return Err(e);
        }
    }
    Ok(())
}

/// Checks that `batched` agrees with `scalar` on `inputs`, both given `context` (the value every
/// lane shares, [`Context::none`] for primitives that take none): on all lanes at once, on
/// every other lane, and on each of the first lanes alone (so a batched kernel whose result for
/// one lane depends on the others is caught).
///
/// ```
/// use autobatch_runtime::ir::{DType, TensorType};
/// use autobatch_runtime::primitive::{check_agreement, Tolerance};
/// use autobatch_runtime::{output_slice, Column, Context, Kernel};
///
/// let scalar = Kernel::map1(|x: f64| 2.0 * x);
/// let batched = Kernel::batched(|ins, outs| {
///     let x = ins[0].as_slice::<f64>().unwrap().to_vec();
///     for (o, x) in output_slice::<f64>(outs, 0)?.iter_mut().zip(x) {
///         *o = 2.0 * x;
///     }
///     Ok(())
/// });
/// let inputs = [Column::from_scalars(&[1.0, -2.5, 3.0])];
/// let outputs = [TensorType::scalar(DType::F64)];
/// let none = Context::none();
/// check_agreement(&scalar, &batched, none, &inputs, &outputs, 0, Tolerance::Exact).unwrap();
/// ```
pub fn check_agreement(
    scalar: &Kernel,
    batched: &Kernel,
    context: Context<'_>,
    inputs: &[Column],
    outputs: &[TensorType],
    vector_len: usize,
    tolerance: Tolerance,
) -> Result<(), AgreementError> {
    let rows = inputs.first().map_or(0, Column::rows);
    let all: Vec<usize> = (0..rows).collect();
    let every_other: Vec<usize> = (0..rows).step_by(2).collect();
    let singles = (0..rows.min(4)).map(|l| vec![l]);
    for lanes in [all, every_other].into_iter().chain(singles) {
        let run = |kernel, form| {
            run_kernel(kernel, context, inputs, &lanes, outputs, vector_len).map_err(|e| {
                AgreementError::Failed {
                    form,
                    message: e.message,
                }
            })
        };
        compare(
            &run(scalar, "scalar")?,
            &run(batched, "batched")?,
            &lanes,
            tolerance,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::output_slice;
    use autobatch_ir::DType;

    fn doubling_batched(offset_on_second_lane: f64) -> Kernel {
        Kernel::batched(move |ins, outs| {
            let x = ins[0].as_slice::<f64>().unwrap().to_vec();
            for (k, (o, x)) in output_slice::<f64>(outs, 0)?.iter_mut().zip(x).enumerate() {
                *o = 2.0 * x + if k == 1 { offset_on_second_lane } else { 0.0 };
            }
            Ok(())
        })
    }

    #[test]
    fn agreement_and_mismatch_are_reported() {
        let scalar = Kernel::map1(|x: f64| 2.0 * x);
        let inputs = [Column::from_scalars(&[1.0, 2.0, 3.0])];
        let outs = [TensorType::scalar(DType::F64)];
        assert!(check_agreement(
            &scalar,
            &doubling_batched(0.0),
            Context::none(),
            &inputs,
            &outs,
            0,
            Tolerance::Exact
        )
        .is_ok());
        let err = check_agreement(
            &scalar,
            &doubling_batched(1e-9),
            Context::none(),
            &inputs,
            &outs,
            0,
            Tolerance::Exact,
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                AgreementError::Mismatch {
                    leaf: 0,
                    lane: 1,
                    element: 0,
                    lanes: 3,
                    ..
                }
            ),
            "{err}"
        );
        // Within a relative tolerance the tiny offset passes.
        assert!(check_agreement(
            &scalar,
            &doubling_batched(1e-12),
            Context::none(),
            &inputs,
            &outs,
            0,
            Tolerance::Relative(1e-9)
        )
        .is_ok());
    }

    #[test]
    fn a_failing_form_is_reported() {
        let scalar = Kernel::try_map1(|_: f64| -> Result<f64, String> { Err("no".into()) });
        let inputs = [Column::from_scalars(&[1.0])];
        let outs = [TensorType::scalar(DType::F64)];
        let err = check_agreement(
            &scalar,
            &doubling_batched(0.0),
            Context::none(),
            &inputs,
            &outs,
            0,
            Tolerance::Exact,
        )
        .unwrap_err();
        assert_eq!(
            err,
            AgreementError::Failed {
                form: "scalar",
                message: "no".into()
            }
        );
    }
}

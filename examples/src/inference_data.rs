//! A sampler run as an ArviZ `InferenceData` Zarr store: `posterior` and `sample_stats` groups
//! with `chain` / `draw` dimensions (and `warmup_posterior` / `warmup_sample_stats` when the
//! warmup was kept), named as ArviZ names them, so that in Python
//!
//! ```python
//! import arviz as az
//! idata = az.from_zarr("run.zarr")   # needs zarr < 3 for ArviZ 0.22
//! print(az.summary(idata))
//! ```
//!
//! reads the draws and every statistic (divergences, tree depth, acceptance, step size, log
//! density, energy).

use crate::nuts::{Draws, Run};
use crate::zarr::{Array, Store, ZarrError};
use ndarray::Array1;
use std::path::Path;

/// The posterior variable's name (ArviZ's `x`, with its dimension `x_dim_0`).
pub const VARIABLE: &str = "x";

/// Writes `run` to a new Zarr store at `path`, with the string attributes `attrs` on every
/// group (ArviZ shows them; e.g. the target and the settings).
pub fn write_run(path: &Path, run: &Run, attrs: &[(&str, &str)]) -> Result<(), ZarrError> {
    let mut store = Store::create(path)?;
    let mut attrs = attrs.to_vec();
    attrs.push(("inference_library", "autobatch"));
    write_group(&mut store, "", &run.draws, &run.chain_ids, &attrs)?;
    if !run.warmup.is_empty() {
        write_group(&mut store, "warmup_", &run.warmup, &run.chain_ids, &attrs)?;
    }
    store.finish()
}

/// The posterior and sample-stats groups of `draws` (of the chains `chain_ids`), their names
/// prefixed with `prefix`.
fn write_group(
    store: &mut Store,
    prefix: &str,
    draws: &Draws,
    chain_ids: &[u64],
    attrs: &[(&str, &str)],
) -> Result<(), ZarrError> {
    let (_, n, dim) = draws.q.dim();
    let posterior = format!("{prefix}posterior");
    store.group(&posterior, attrs)?;
    coordinates(store, &posterior, chain_ids, n)?;
    let dim_name = format!("{VARIABLE}_dim_0");
    let index = Array1::from_iter(0..dim as i64).into_dyn();
    store.array(
        &format!("{posterior}/{dim_name}"),
        &[&dim_name],
        Array::I64(index.view()),
    )?;
    store.array(
        &format!("{posterior}/{VARIABLE}"),
        &["chain", "draw", &dim_name],
        Array::F64(draws.q.view().into_dyn()),
    )?;
    let stats = format!("{prefix}sample_stats");
    store.group(&stats, attrs)?;
    coordinates(store, &stats, chain_ids, n)?;
    let dims = ["chain", "draw"];
    let f64s = [
        ("acceptance_rate", &draws.accept),
        ("step_size", &draws.step_size),
        ("lp", &draws.lp),
        ("energy", &draws.energy),
    ];
    for (name, values) in f64s {
        let data = Array::F64(values.view().into_dyn());
        store.array(&format!("{stats}/{name}"), &dims, data)?;
    }
    for (name, values) in [("tree_depth", &draws.depth), ("n_steps", &draws.n_leapfrog)] {
        let data = Array::I64(values.view().into_dyn());
        store.array(&format!("{stats}/{name}"), &dims, data)?;
    }
    let diverging = Array::Bool(draws.divergent.view().into_dyn());
    store.array(&format!("{stats}/diverging"), &dims, diverging)
}

/// The `chain` coordinate (the chains' indices, so a run without its failed chains keeps
/// theirs) and the `draw` coordinate of a group.
fn coordinates(
    store: &mut Store,
    group: &str,
    chain_ids: &[u64],
    n: usize,
) -> Result<(), ZarrError> {
    let chains = Array1::from_iter(chain_ids.iter().map(|&c| c as i64)).into_dyn();
    let draws = Array1::from_iter(0..n as i64).into_dyn();
    for (name, index) in [("chain", chains), ("draw", draws)] {
        store.array(
            &format!("{group}/{name}"),
            &[name],
            Array::I64(index.view()),
        )?;
    }
    Ok(())
}

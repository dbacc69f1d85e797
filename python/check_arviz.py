"""Reads a `nuts --output` Zarr store with ArviZ and checks that ArviZ's summary of it
matches the summary `nuts --summary-csv` wrote: the ArviZ round trip that .ci/run runs.

Usage: python check_arviz.py RUN.zarr SUMMARY.csv
Exits non-zero, naming the coordinate and the statistic, on any disagreement.
"""

import csv
import math
import sys
import warnings

import arviz as az
import numpy as np

# Agreement asked for: far tighter than the printed table (3 decimals, ESS to the unit).
RELATIVE = 1e-6
STATS = ["mean", "sd", "mcse_mean", "mcse_sd", "ess_bulk", "ess_tail", "r_hat"]
QUANTILES = {"q5": 0.05, "q50": 0.5, "q95": 0.95}
SAMPLE_STATS = {"acceptance_rate", "step_size", "lp", "energy", "tree_depth", "n_steps", "diverging"}


def close(ours, theirs):
    if math.isnan(ours) or math.isnan(theirs):
        return math.isnan(ours) and math.isnan(theirs)
    return abs(ours - theirs) <= RELATIVE * max(abs(theirs), 1e-12)


def main(store, summary_csv):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a reader's warning about the file is a failure too
        check(store, summary_csv)


def check(store, summary_csv):
    idata = az.from_zarr(store)
    for group in ("posterior", "sample_stats"):
        if group not in idata.groups():
            sys.exit(f"{store}: no {group} group (groups: {idata.groups()})")
        dims = idata[group].sizes
        if "chain" not in dims or "draw" not in dims:
            sys.exit(f"{store}: {group} lacks chain/draw dimensions: {dict(dims)}")
    missing = SAMPLE_STATS - set(idata.sample_stats.data_vars)
    if missing:
        sys.exit(f"{store}: sample_stats lacks {sorted(missing)}")
    stat_funcs = {name: (lambda x, p=p: np.quantile(x, p)) for name, p in QUANTILES.items()}
    theirs = az.summary(idata, var_names=["x"], round_to="none", stat_funcs=stat_funcs)
    with open(summary_csv, newline="") as f:
        ours = list(csv.DictReader(f))
    if len(ours) != len(theirs):
        sys.exit(f"{summary_csv}: {len(ours)} coordinates, ArviZ has {len(theirs)}")
    compared = 0
    for row in ours:
        coord = row["coord"]
        for stat in STATS + list(QUANTILES):
            a, b = float(row[stat]), float(theirs.loc[coord, stat])
            if not close(a, b):
                sys.exit(f"{coord} {stat}: nuts says {a!r}, ArviZ {b!r}")
            compared += 1
    print(
        f"ArviZ {az.__version__} reads {store} (groups {', '.join(idata.groups())}); "
        f"its summary matches {summary_csv}: {compared} values over {len(ours)} coordinates"
    )


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])

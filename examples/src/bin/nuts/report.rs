//! What the `nuts` binary prints after a run: the chains that failed (if any), the diagnostics
//! of the worst coordinates (or of all) over the others, sampler statistics, throughput and
//! utilisation, each figure saying what it means; and the same diagnostics for every
//! coordinate as CSV.

use autobatch_examples::diagnostics::Summary;
use autobatch_examples::nuts::{Run, Settings};
use std::io::{self, Write};

/// How many coordinates each "worst" list shows.
const WORST: usize = 3;

/// How many failed chains are listed one by one.
const FAILED_LISTED: usize = 10;

/// The table's header and one row per coordinate.
fn header() -> String {
    format!(
        "{:>8} {:>7} {:>6} {:>9} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>6}",
        "coord",
        "mean",
        "sd",
        "mcse_mean",
        "mcse_sd",
        "5%",
        "50%",
        "95%",
        "ess_bulk",
        "ess_tail",
        "r_hat"
    )
}

fn row(i: usize, s: &Summary) -> String {
    let [q5, q50, q95] = s.quantiles;
    format!(
        "{:>8} {:>7.3} {:>6.3} {:>9.3} {:>7.3} {:>7.3} {:>7.3} {:>7.3} {:>8.0} {:>8.0} {:>6.3}",
        format!("x[{i}]"),
        s.mean,
        s.sd,
        s.mcse_mean,
        s.mcse_sd,
        q5,
        q50,
        q95,
        s.ess_bulk,
        s.ess_tail,
        s.r_hat
    )
}

/// The `n` coordinates with the largest `key` (NaN counts as largest: it is the worst).
pub fn worst_by(summaries: &[Summary], n: usize, key: impl Fn(&Summary) -> f64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..summaries.len()).collect();
    let k = |i: &usize| {
        let v = key(&summaries[*i]);
        if v.is_nan() {
            f64::INFINITY
        } else {
            v
        }
    };
    order.sort_by(|a, b| k(b).total_cmp(&k(a)).then(a.cmp(b)));
    order.truncate(n);
    order
}

/// Prints the report of `run` (made with `settings`, its coordinates' `summaries`) on `target`
/// to `out`; `all` prints every coordinate.
pub fn print(
    out: &mut impl Write,
    target: &str,
    settings: &Settings,
    run: &Run,
    summaries: &[Summary],
    all: bool,
) -> io::Result<()> {
    let (chains, draws, dim) = run.draws.q.dim();
    writeln!(out, "target     {target}")?;
    writeln!(
        out,
        "run        {chains} chains x {draws} draws after {} warmup, {:?}, seed {}",
        settings.warmup, settings.mode, settings.seed
    )?;
    failures(out, run)?;
    writeln!(out)?;
    let lists: Vec<(&str, Vec<usize>)> = if all {
        vec![("every coordinate", (0..dim).collect())]
    } else {
        vec![
            ("worst R-hat", worst_by(summaries, WORST, |s| s.r_hat)),
            (
                "lowest bulk ESS",
                worst_by(summaries, WORST, |s| -s.ess_bulk),
            ),
            (
                "lowest tail ESS",
                worst_by(summaries, WORST, |s| -s.ess_tail),
            ),
        ]
    };
    writeln!(out, "{}", header())?;
    for (title, coords) in lists {
        writeln!(out, "  {title}:")?;
        for i in coords {
            writeln!(out, "{}", row(i, &summaries[i]))?;
        }
    }
    if !all && dim > WORST {
        writeln!(
            out,
            "  (--all prints all {dim} coordinates, --summary-csv writes them)"
        )?;
    }
    writeln!(
        out,
        "  mcse: Monte Carlo standard error; ess: effective sample size (bulk: of the centre,"
    )?;
    writeln!(
        out,
        "  tail: of the 5% and 95% quantiles); r_hat above 1.01: the chains disagree"
    )?;
    writeln!(out)?;
    let depth = &run.draws.depth;
    writeln!(
        out,
        "divergences    {} of {}",
        run.divergences(),
        chains * draws
    )?;
    writeln!(
        out,
        "tree depth     mean {:.2}, max {} (limit {})",
        depth.mapv(|d| d as f64).mean().unwrap_or(0.0),
        depth.iter().max().copied().unwrap_or(0),
        settings.max_depth
    )?;
    writeln!(
        out,
        "acceptance     {:.3} (mean acceptance probability over each trajectory)",
        run.draws.accept.mean().unwrap_or(0.0)
    )?;
    writeln!(
        out,
        "step size      {:.4} (mean of the chains' adapted step sizes)",
        run.step_size.mean().unwrap_or(0.0)
    )?;
    let secs = run.elapsed.as_secs_f64();
    let min_ess = summaries
        .iter()
        .map(|s| s.ess_bulk)
        .fold(f64::INFINITY, f64::min);
    writeln!(out)?;
    writeln!(
        out,
        "wall time      {secs:.2} s: {} gradient evaluations ({:.3} M/s), {:.0} lowest-bulk-ESS/s",
        run.gradients.rows,
        run.gradients_per_second() / 1e6,
        min_ess / secs
    )?;
    writeln!(
        out,
        "utilisation    gradient kernel {:.3}: on average each batched gradient call computed",
        run.gradient_utilisation()
    )?;
    writeln!(
        out,
        "               this fraction of its shard's {:.0} chains ({} shards; {} calls, {:.0} rows per call)",
        run.mean_shard_chains(),
        run.stats.shards,
        run.gradients.calls,
        run.gradients.rows as f64 / run.gradients.calls.max(1) as f64
    )?;
    writeln!(
        out,
        "               blocks {:.3}: mean fraction of the chains at each block execution;",
        run.stats.utilisation()
    )?;
    writeln!(
        out,
        "               low because most blocks are cheap bookkeeping few chains wait at"
    )?;
    let rows = run.stats.vector_rows;
    writeln!(
        out,
        "vector state   {rows} rows at most ({:.1} MB, {:.1} per chain): the most per-chain",
        (rows * dim * 8) as f64 / 1e6,
        rows as f64 / run.stats.batch_size.max(1) as f64
    )?;
    writeln!(out, "               vectors the interpreter held at once")
}

/// Lists the chains that failed (the first [`FAILED_LISTED`]) and says that everything after
/// covers the others; nothing if none failed.
fn failures(out: &mut impl Write, run: &Run) -> io::Result<()> {
    let n = run.failed.len();
    if n == 0 {
        return Ok(());
    }
    writeln!(
        out,
        "failed     {n} of {} chains, left out of everything below (it covers the other {}):",
        n + run.chains(),
        run.chains()
    )?;
    for f in run.failed.iter().take(FAILED_LISTED) {
        writeln!(out, "  chain {}: {}", f.chain, f.error)?;
    }
    if n > FAILED_LISTED {
        writeln!(out, "  ... and {} more", n - FAILED_LISTED)?;
    }
    Ok(())
}

/// Writes every coordinate's diagnostics as CSV (full precision, one row per coordinate).
pub fn write_csv(out: &mut impl Write, summaries: &[Summary]) -> io::Result<()> {
    writeln!(
        out,
        "coord,mean,sd,mcse_mean,mcse_sd,q5,q50,q95,ess_bulk,ess_tail,r_hat"
    )?;
    for (i, s) in summaries.iter().enumerate() {
        let [q5, q50, q95] = s.quantiles;
        writeln!(
            out,
            "x[{i}],{},{},{},{},{},{},{},{},{},{}",
            s.mean, s.sd, s.mcse_mean, s.mcse_sd, q5, q50, q95, s.ess_bulk, s.ess_tail, s.r_hat
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(r_hat: f64, ess_bulk: f64) -> Summary {
        Summary {
            mean: 0.0,
            sd: 1.0,
            mcse_mean: 0.0,
            mcse_sd: 0.0,
            ess_bulk,
            ess_tail: ess_bulk,
            ess_mean: ess_bulk,
            r_hat,
            split_r_hat: r_hat,
            quantiles: [0.0; 3],
        }
    }

    #[test]
    fn worst_coordinates_come_first_and_nan_is_worst() {
        let s = vec![
            summary(1.001, 900.0),
            summary(1.2, 50.0),
            summary(f64::NAN, 400.0),
            summary(1.05, 10.0),
        ];
        assert_eq!(worst_by(&s, 3, |s| s.r_hat), vec![2, 1, 3]);
        assert_eq!(worst_by(&s, 2, |s| -s.ess_bulk), vec![3, 1]);
        assert_eq!(worst_by(&s, 9, |s| s.r_hat).len(), 4);
    }

    #[test]
    fn failed_chains_come_first_and_the_rest_is_said_to_cover_the_others() {
        use autobatch_examples::nuts::{Draws, FailedChain, GradientCounts};
        use autobatch_runtime::ndarray::{Array1, Array2};
        let failed = |chain, at_start| FailedChain {
            chain,
            at_start,
            error: format!("boom {chain}"),
        };
        let mut run = Run {
            chain_ids: vec![0, 2],
            failed: Vec::new(),
            draws: Draws::new(2, 4, 1),
            warmup: Draws::new(2, 0, 1),
            step_size: Array1::zeros(2),
            inverse_metric: Array2::zeros((2, 1)),
            stats: Default::default(),
            gradients: GradientCounts::default(),
            elapsed: Default::default(),
        };
        let mut out = Vec::new();
        failures(&mut out, &run).unwrap();
        assert!(out.is_empty(), "nothing when no chain failed");
        run.failed = vec![failed(1, true), failed(3, false)];
        failures(&mut out, &run).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "failed     2 of 4 chains, left out of everything below (it covers the other 2):\n  \
             chain 1: boom 1\n  chain 3: boom 3\n"
        );
        assert_eq!(
            run.batch(),
            3,
            "the sampler started the chains not refused at start"
        );
        run.failed = (0..12).map(|c| failed(c + 10, false)).collect();
        let mut out = Vec::new();
        failures(&mut out, &run).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1 + FAILED_LISTED + 1);
        assert!(text.ends_with("  ... and 2 more\n"), "{text}");
    }

    #[test]
    fn table_rows_line_up_with_the_header() {
        assert_eq!(header().len(), row(42, &summary(1.0, 1234.0)).len());
    }
}

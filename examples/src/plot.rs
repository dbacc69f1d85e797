//! A picture of a sampler run as SVG (with `plotters`' SVG backend, no system libraries):
//! rank plots of the worst coordinates, and the gradient kernel's lanes per call over the run,
//! which is batching at work.
//!
//! A rank plot ranks all draws of one coordinate together and shows, per chain, how its
//! draws spread over the ranks: if the chains sample the same distribution every chain's
//! histogram is flat at 1 (the expected count); a chain stuck high or low, or exploring a
//! different width, shows as a slope or a bump. With many chains only the most uneven ones are
//! drawn.

use crate::diagnostics::Summary;
use crate::nuts::Run;
use ndarray::{ArrayView2, Axis};
use plotters::prelude::*;
use std::path::Path;

/// Rank bins per rank plot.
const BINS: usize = 20;
/// Chains drawn per rank plot (the most uneven ones).
const SHOWN_CHAINS: usize = 8;
/// Points of the lanes-per-call curve (calls are averaged in this many equal groups).
const CALL_BUCKETS: usize = 600;

/// Why the picture could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw {}: {message}", path.display())]
pub struct PlotError {
    /// The picture's file.
    pub path: std::path::PathBuf,
    /// What went wrong.
    pub message: String,
}

/// Draws rank plots of `coords` (at most three are shown, e.g. the worst by R-hat) and the
/// gradient kernel's lanes per call of `run` into an SVG file at `path`.
pub fn write_svg(
    path: &Path,
    run: &Run,
    summaries: &[Summary],
    coords: &[usize],
) -> Result<(), PlotError> {
    draw(path, run, summaries, coords).map_err(|e| PlotError {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw(path: &Path, run: &Run, summaries: &[Summary], coords: &[usize]) -> DrawResult {
    let root = SVGBackend::new(path, (1200, 820)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(430);
    let panels = top.split_evenly((1, 3));
    for (area, &i) in panels.iter().zip(coords.iter().take(3)) {
        let draws = run.draws.q.index_axis(Axis(2), i);
        rank_plot(area, draws, i, &summaries[i])?;
    }
    lanes_per_call(&bottom, &run.gradients.rows_per_call, run.batch())?;
    root.present()?;
    Ok(())
}

/// Each shown chain's histogram of ranks, as counts over the expected count.
fn rank_plot<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    draws: ArrayView2<f64>,
    coord: usize,
    summary: &Summary,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let histograms = rank_histograms(draws);
    let shown = most_uneven(&histograms, SHOWN_CHAINS);
    let top = histograms
        .iter()
        .flatten()
        .fold(2.0f64, |m, &h| m.max(h))
        .min(10.0);
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "x[{coord}]: R-hat {:.3}, ESS bulk {:.0}",
                summary.r_hat, summary.ess_bulk
            ),
            ("sans-serif", 17),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(44)
        .build_cartesian_2d(0f64..1f64, 0f64..top * 1.05)?;
    chart
        .configure_mesh()
        .light_line_style(WHITE)
        .x_desc("rank among all draws (fraction)")
        .y_desc("draws / expected (flat at 1 = agree)")
        .axis_desc_style(("sans-serif", 13))
        .draw()?;
    chart.draw_series(LineSeries::new(
        [(0.0, 1.0), (1.0, 1.0)],
        BLACK.stroke_width(2),
    ))?;
    for (k, &c) in shown.iter().enumerate() {
        let colour = Palette99::pick(k).mix(0.85);
        chart.draw_series(LineSeries::new(
            histograms[c].iter().enumerate().flat_map(|(b, &h)| {
                let (lo, hi) = (b as f64 / BINS as f64, (b + 1) as f64 / BINS as f64);
                [(lo, h), (hi, h)]
            }),
            colour.stroke_width(2),
        ))?;
    }
    let label = format!("{} most uneven of {} chains", shown.len(), histograms.len());
    area.draw(&Text::new(label, (60, 40), ("sans-serif", 13)))?;
    Ok(())
}

/// Per chain: the count of its draws in each of 20 equal rank bins over the expected
/// count (ranks among all chains' draws; ties broken by position, which is enough for a plot).
pub fn rank_histograms(draws: ArrayView2<f64>) -> Vec<Vec<f64>> {
    let (chains, n) = draws.dim();
    let total = chains * n;
    let mut order: Vec<(f64, usize)> = draws
        .outer_iter()
        .enumerate()
        .flat_map(|(c, row)| row.iter().map(move |&x| (x, c)).collect::<Vec<_>>())
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut counts = vec![vec![0.0; BINS]; chains];
    for (rank, &(_, c)) in order.iter().enumerate() {
        counts[c][rank * BINS / total.max(1)] += 1.0;
    }
    let expected = n as f64 / BINS as f64;
    for h in &mut counts {
        h.iter_mut().for_each(|x| *x /= expected);
    }
    counts
}

/// The `k` chains whose histograms are farthest from flat (total absolute deviation).
pub fn most_uneven(histograms: &[Vec<f64>], k: usize) -> Vec<usize> {
    let deviation = |h: &Vec<f64>| h.iter().map(|x| (x - 1.0).abs()).sum::<f64>();
    let mut order: Vec<usize> = (0..histograms.len()).collect();
    order.sort_by(|&a, &b| deviation(&histograms[b]).total_cmp(&deviation(&histograms[a])));
    order.truncate(k);
    order
}

/// The mean (and smallest) rows per call over consecutive groups of calls.
fn lanes_per_call<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    rows_per_call: &[u32],
    chains: usize,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let calls = rows_per_call.len();
    let buckets = bucket_means(rows_per_call, CALL_BUCKETS);
    let mean = rows_per_call.iter().map(|&r| r as f64).sum::<f64>() / calls.max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "gradient kernel: chains per batched call over the run ({calls} calls, mean {mean:.0} of {chains})"
            ),
            ("sans-serif", 18),
        )
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..calls.max(1) as f64, 0f64..chains as f64 * 1.05)?;
    chart
        .configure_mesh()
        .light_line_style(WHITE)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .x_desc("gradient call (in order)")
        .y_desc("chains in the call")
        .axis_desc_style(("sans-serif", 14))
        .draw()?;
    chart
        .draw_series(LineSeries::new(
            [(0.0, chains as f64), (calls as f64, chains as f64)],
            BLACK.stroke_width(1),
        ))?
        .label("every chain (the batch)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK));
    let width = calls as f64 / buckets.len().max(1) as f64;
    let at = |b: usize| (b as f64 + 0.5) * width;
    chart
        .draw_series(LineSeries::new(
            buckets.iter().enumerate().map(|(b, m)| (at(b), m.1)),
            RED.mix(0.5).stroke_width(1),
        ))?
        .label("fewest in a group of calls")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], RED.mix(0.5)));
    chart
        .draw_series(LineSeries::new(
            buckets.iter().enumerate().map(|(b, m)| (at(b), m.0)),
            BLUE.stroke_width(2),
        ))?
        .label("mean over a group of calls")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLUE));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// `(mean, min)` of `values` over at most `buckets` consecutive groups of (nearly) equal size.
pub fn bucket_means(values: &[u32], buckets: usize) -> Vec<(f64, f64)> {
    let groups = buckets.min(values.len()).max(1);
    (0..groups)
        .filter_map(|g| {
            let part = &values[g * values.len() / groups..(g + 1) * values.len() / groups];
            let min = part.iter().min()?;
            let mean = part.iter().map(|&v| v as f64).sum::<f64>() / part.len() as f64;
            Some((mean, *min as f64))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    #[test]
    fn rank_histograms_are_flat_for_interleaved_chains_and_not_for_shifted_ones() {
        // Chain c holds every 4th value from c: perfectly mixed.
        let mixed = Array2::from_shape_fn((4, 200), |(c, d)| (4 * d + c) as f64);
        for h in rank_histograms(mixed.view()) {
            assert!(h.iter().all(|&x| (x - 1.0).abs() < 1e-12), "{h:?}");
        }
        // Chain 3 holds the largest values: all its ranks are in the top bins.
        let shifted = Array2::from_shape_fn((4, 200), |(c, d)| (c * 1000 + d) as f64);
        let h = rank_histograms(shifted.view());
        assert_eq!(h[3][BINS - 1], 4.0);
        assert_eq!(h[3][0], 0.0);
        assert_eq!(most_uneven(&h, 1).len(), 1);
    }

    #[test]
    fn buckets_average_consecutive_calls() {
        assert_eq!(bucket_means(&[4, 2, 6, 6], 2), vec![(3.0, 2.0), (6.0, 6.0)]);
        assert_eq!(bucket_means(&[5], 10), vec![(5.0, 5.0)]);
        assert!(bucket_means(&[], 10).is_empty());
    }
}

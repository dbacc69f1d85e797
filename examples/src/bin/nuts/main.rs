//! The main job: thousands of NUTS chains in one autobatched call, with a progress bar, a
//! diagnostics summary, throughput and batch utilisation, and optionally the run for ArviZ,
//! every coordinate as CSV and a picture.
//! Run: `cargo run --release -p autobatch-examples --bin nuts` (add `-- --help` for flags).

mod cli;
mod report;

use autobatch_examples::diagnostics::Summary;
use autobatch_examples::nuts::{sample_chains, Run, SampleError, Settings};
use autobatch_examples::{inference_data, npy, plot};
use clap::Parser;
use cli::{Args, Outputs, Refusal};
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use std::sync::Arc;

/// Exit code for flags refused before sampling (as clap uses for its own errors).
const USAGE: u8 = 2;

fn main() -> ExitCode {
    let args = Args::parse();
    let settings = args.settings();
    let target: Arc<dyn autobatch_examples::nuts::Target> = Arc::from(args.target.build());
    let checked = settings
        .validate()
        .map_err(Refusal::from)
        .and_then(|()| cli::check_memory(&settings, target.dim()))
        .and_then(|()| Outputs::prepare(&args));
    let outputs = match checked {
        Ok(outputs) => outputs,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(USAGE);
        }
    };
    for warning in args.warnings() {
        eprintln!("warning: {warning}");
    }
    let run = match run(&args, &settings, target.clone()) {
        Ok(run) => run,
        Err(e) => {
            outputs.remove();
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let summaries = run.summaries();
    let mut out = io::stdout().lock();
    let name = target.name();
    let written = report::print(&mut out, &name, &settings, &run, &summaries, args.all)
        .map_err(|e| e.to_string())
        .and_then(|()| write_outputs(&mut out, &args, &name, &run, &summaries));
    if let Err(e) = written {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn run(
    args: &Args,
    settings: &Settings,
    target: Arc<dyn autobatch_examples::nuts::Target>,
) -> Result<Run, SampleError> {
    let total = (settings.chains as u64) * (settings.warmup + settings.draws) as u64;
    let bar = cli::progress_bar(args.quiet, total);
    let ticker = bar.clone();
    let ids: Vec<u64> = (0..settings.chains as u64).collect();
    let report = move |p: autobatch_examples::nuts::Progress| ticker.set_position(p.done);
    let run = sample_chains(target, settings, &ids, report);
    bar.finish_and_clear();
    run
}

/// Writes what `--output`, `--summary-csv` and `--plot` ask for, saying where it went.
fn write_outputs(
    out: &mut impl Write,
    args: &Args,
    target: &str,
    run: &Run,
    summaries: &[Summary],
) -> Result<(), String> {
    let say =
        |out: &mut dyn Write, line: String| writeln!(out, "{line}").map_err(|e| e.to_string());
    if args.output.is_some() || args.summary_csv.is_some() || args.plot.is_some() {
        say(out, String::new())?;
    }
    if let Some(path) = &args.output {
        if cli::is_npy(path) {
            npy::write_draws(path, run.draws.q.view()).map_err(|e| e.to_string())?;
            say(
                out,
                format!(
                    "draws          {} ([chains, draws, dim]; np.load, or ArviZ via --output run.zarr)",
                    path.display()
                ),
            )?;
        } else {
            let settings = format!("{:?}", args.settings());
            inference_data::write_run(path, run, &[("target", target), ("settings", &settings)])
                .map_err(|e| e.to_string())?;
            let warmup = if run.warmup.is_empty() {
                ""
            } else {
                " and warmup_*"
            };
            say(
                out,
                format!(
                    "InferenceData  {} (posterior, sample_stats{warmup}; az.from_zarr(path))",
                    path.display()
                ),
            )?;
        }
    }
    if let Some(path) = &args.summary_csv {
        let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut file = BufWriter::new(file);
        report::write_csv(&mut file, summaries)
            .and_then(|()| file.flush())
            .map_err(|e| format!("{}: {e}", path.display()))?;
        say(
            out,
            format!("summary CSV    {} (every coordinate)", path.display()),
        )?;
    }
    if let Some(path) = &args.plot {
        let worst = report::worst_by(summaries, 3, |s| s.r_hat);
        plot::write_svg(path, run, summaries, &worst).map_err(|e| e.to_string())?;
        say(
            out,
            format!(
                "picture        {} (rank plots of the 3 worst R-hats; chains per gradient call)",
                path.display()
            ),
        )?;
    }
    Ok(())
}

//! The main job: thousands of NUTS chains in one autobatched call, with a progress bar, a
//! diagnostics summary, throughput and batch utilisation.
//! Run: `cargo run --release -p autobatch-examples --bin nuts` (add `-- --help` for flags).

use autobatch_examples::diagnostics::Summary;
use autobatch_examples::npy;
use autobatch_examples::nuts::{
    sample, CorrelatedGaussian, LogisticRegression, Run, SampleError, Settings,
};
use autobatch_runtime::Mode;
use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::process::ExitCode;

/// Which target to sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum TargetChoice {
    /// 100-d Gaussian, covariance 0.9^|i-j| (dense precision GEMM gradient).
    Gaussian,
    /// Bayesian logistic regression, 1,000 synthetic rows x 25 features.
    Logistic,
}

/// Which interpreter runs the sampler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ModeChoice {
    /// The full VM: per-lane program counters, lanes meet across recursion depths.
    Vm,
    /// Host recursion with active-lane masks.
    Stackless,
}

/// Batched NUTS: every chain's warmup and draws in one autobatched call.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// The target density.
    #[arg(long, value_enum, default_value_t = TargetChoice::Gaussian)]
    target: TargetChoice,
    /// Number of chains (run as one batch).
    #[arg(long, default_value_t = 1000)]
    chains: usize,
    /// Draws kept per chain.
    #[arg(long, default_value_t = 1000)]
    draws: usize,
    /// Warmup transitions per chain.
    #[arg(long, default_value_t = 1000)]
    warmup: usize,
    /// Seed; chain k's stream is a function of (seed, k) only.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Interpreter.
    #[arg(long, value_enum, default_value_t = ModeChoice::Vm)]
    mode: ModeChoice,
    /// Maximum tree depth.
    #[arg(long, default_value_t = 10)]
    max_depth: u32,
    /// Initial step size (the fixed one with --no-adapt).
    #[arg(long, default_value_t = 0.1)]
    step_size: f64,
    /// Fixed step size and unit metric: no adaptation during warmup.
    #[arg(long)]
    no_adapt: bool,
    /// Mean acceptance probability the step-size adaptation aims for.
    #[arg(long, default_value_t = 0.8)]
    target_accept: f64,
    /// Write the draws as a .npy array of shape [chains, draws, dim].
    #[arg(long)]
    output: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

impl Args {
    fn settings(&self) -> Settings {
        Settings {
            chains: self.chains,
            draws: self.draws,
            warmup: self.warmup,
            seed: self.seed,
            max_depth: self.max_depth,
            step_size: self.step_size,
            adapt_step_size: !self.no_adapt,
            adapt_metric: !self.no_adapt,
            target_accept: self.target_accept,
            mode: match self.mode {
                ModeChoice::Vm => Mode::FullVm,
                ModeChoice::Stackless => Mode::Stackless,
            },
            ..Settings::default()
        }
    }
}

fn progress_bar(args: &Args) -> ProgressBar {
    if args.quiet {
        return ProgressBar::hidden();
    }
    let total = (args.chains * (args.warmup + args.draws)) as u64;
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} transitions ({per_sec}, eta {eta})",
        )
        .expect("a valid template"),
    );
    bar
}

fn run(args: &Args) -> Result<Run, SampleError> {
    let settings = args.settings();
    let bar = progress_bar(args);
    let ticker = bar.clone();
    let report = move |p: autobatch_examples::nuts::Progress| ticker.set_position(p.done);
    let run = match args.target {
        TargetChoice::Gaussian => sample(CorrelatedGaussian::new(100, 0.9), &settings, report),
        TargetChoice::Logistic => sample(
            LogisticRegression::synthetic(1000, 25, 1),
            &settings,
            report,
        ),
    };
    bar.finish_and_clear();
    run
}

fn target_name(args: &Args) -> String {
    use autobatch_examples::nuts::Target;
    match args.target {
        TargetChoice::Gaussian => CorrelatedGaussian::new(100, 0.9).name(),
        TargetChoice::Logistic => LogisticRegression::synthetic(1000, 25, 1).name(),
    }
}

fn row(name: &str, s: &Summary) -> String {
    format!(
        "{name:>8} {:>9.4} {:>8.4} {:>8.4} {:>9.0} {:>7.4}",
        s.mean, s.sd, s.mcse_mean, s.ess_bulk, s.r_hat
    )
}

fn report(args: &Args, run: &Run) {
    let summaries = run.summaries();
    let dim = summaries.len();
    let (chains, draws) = (run.chains(), run.draws.q.dim().1);
    println!("target     {}", target_name(args));
    println!(
        "run        {chains} chains x {draws} draws after {} warmup, {:?}, seed {}",
        args.warmup,
        args.settings().mode,
        args.seed
    );
    println!();
    println!(
        "{:>8} {:>9} {:>8} {:>8} {:>9} {:>7}",
        "coord", "mean", "sd", "mcse", "ess_bulk", "r_hat"
    );
    let mut shown: Vec<usize> = (0..dim.min(3)).collect();
    if dim > 3 {
        shown.push(dim - 1);
    }
    for i in shown {
        println!("{}", row(&format!("x[{i}]"), &summaries[i]));
    }
    if args.target == TargetChoice::Gaussian {
        println!("(every coordinate's true mean is 0 and sd 1)");
    }
    let (worst, worst_rhat) = summaries
        .iter()
        .map(|s| s.r_hat)
        .enumerate()
        .fold((0, f64::NEG_INFINITY), |a, b| if b.1 > a.1 { b } else { a });
    let (lowest, min_ess) = summaries
        .iter()
        .map(|s| s.ess_bulk)
        .enumerate()
        .fold((0, f64::INFINITY), |a, b| if b.1 < a.1 { b } else { a });
    println!();
    println!("worst R-hat    {worst_rhat:.4} (x[{worst}])");
    println!("lowest ESS     {min_ess:.0} (x[{lowest}])");
    let depth = &run.draws.depth;
    println!("divergences    {} of {}", run.divergences(), chains * draws);
    println!(
        "tree depth     mean {:.2}, max {}",
        depth.mapv(|d| d as f64).mean().unwrap_or(0.0),
        depth.iter().max().copied().unwrap_or(0)
    );
    println!(
        "acceptance     {:.3} (mean)",
        run.draws.accept.mean().unwrap_or(0.0)
    );
    println!(
        "step size      {:.4} (mean over chains)",
        run.step_size.mean().unwrap_or(0.0)
    );
    let secs = run.elapsed.as_secs_f64();
    println!();
    println!(
        "wall time      {secs:.2} s; {} gradient evaluations ({:.3} M/s), {:.0} min-ESS/s",
        run.gradients.rows,
        run.gradients_per_second() / 1e6,
        min_ess / secs
    );
    println!(
        "utilisation    gradient kernel {:.3} (rows / (calls x chains)), blocks {:.3}",
        run.gradient_utilisation(),
        run.stats.utilisation()
    );
    let rows = run.stats.vector_rows;
    println!(
        "vector state   {rows} rows at most ({:.1} MB, {:.1} per chain)",
        (rows * run.draws.q.dim().2 * 8) as f64 / 1e6,
        rows as f64 / run.stats.batch_size.max(1) as f64
    );
}

fn main() -> ExitCode {
    let args = Args::parse();
    let run = match run(&args) {
        Ok(run) => run,
        Err(e @ SampleError::Setting { .. }) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    report(&args, &run);
    if let Some(path) = &args.output {
        if let Err(e) = npy::write_draws(path, run.draws.q.view()) {
            eprintln!("error: writing {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!();
        println!(
            "draws written to {} ([chains, draws, dim]); load with np.load(path) or \
             az.from_dict(posterior={{\"x\": np.load(path)}})",
            path.display()
        );
    }
    ExitCode::SUCCESS
}

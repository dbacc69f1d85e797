//! The `nuts` binary's flags: parsing with range messages that name the flag as typed, the
//! checks made before any sampling (settings, memory, output paths), and the progress bar.

use autobatch_examples::nuts::{
    CorrelatedGaussian, LogisticRegression, SampleError, Settings, Target,
};
use autobatch_runtime::{available_threads, Mode};
use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use std::fs;
use std::path::{Path, PathBuf};

/// Which target to sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TargetChoice {
    /// 100-d Gaussian, covariance 0.9^|i-j| (dense precision GEMM gradient).
    Gaussian,
    /// Bayesian logistic regression, 1,000 synthetic rows x 25 features.
    Logistic,
}

impl TargetChoice {
    /// The target itself.
    pub fn build(self) -> Box<dyn Target> {
        match self {
            TargetChoice::Gaussian => Box::new(CorrelatedGaussian::new(100, 0.9)),
            TargetChoice::Logistic => Box::new(LogisticRegression::synthetic(1000, 25, 1)),
        }
    }
}

/// Which interpreter runs the sampler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeChoice {
    /// The full VM: per-lane program counters, lanes meet across recursion depths.
    Vm,
    /// Host recursion with active-lane masks (the faster on both targets).
    Stackless,
}

const ABOUT: &str = "Batched NUTS: runs every chain's warmup and draws in one autobatched call \
(the sampler is plain scalar Rust under #[autobatch]), then prints convergence diagnostics \
(R-hat, bulk and tail ESS, MCSE, quantiles), sampler statistics and throughput.";

const EXAMPLES: &str = "\
Examples:
  nuts
      the main job: 1,000 chains on the 100-d Gaussian, under a minute on two cores
  nuts --chains 100
      a look in a few seconds
  nuts --chains 20 --output run.zarr --summary-csv summary.csv --plot run.svg
      a short run written for ArviZ (az.from_zarr(\"run.zarr\")), every coordinate's
      diagnostics as CSV, and a picture of the worst coordinates and of batching at work";

/// Batched NUTS flags.
#[derive(Debug, Parser)]
#[command(name = "nuts", version, about = ABOUT, after_help = EXAMPLES, allow_negative_numbers = true)]
pub struct Args {
    /// The target density.
    #[arg(long, value_enum, default_value_t = TargetChoice::Gaussian)]
    pub target: TargetChoice,
    /// Number of chains (run as one batch).
    #[arg(long, default_value_t = Settings::default().chains, value_parser = at_least_one)]
    pub chains: usize,
    /// Draws kept per chain.
    #[arg(long, default_value_t = Settings::default().draws, value_parser = at_least_one)]
    pub draws: usize,
    /// Warmup transitions per chain (step size and metric adaptation happen here).
    #[arg(long, default_value_t = Settings::default().warmup, value_parser = at_least_zero)]
    pub warmup: usize,
    /// Seed; chain k's stream is a function of (seed, k) only.
    #[arg(long, default_value_t = Settings::default().seed, value_parser = seed)]
    pub seed: u64,
    /// Interpreter.
    #[arg(long, value_enum, default_value_t = ModeChoice::Stackless)]
    pub mode: ModeChoice,
    /// Maximum tree depth (at most 2^depth - 1 leapfrog steps per transition), 1 to 30.
    #[arg(long, default_value_t = Settings::default().max_depth, value_parser = tree_depth)]
    pub max_depth: u32,
    /// Initial step size (the fixed one with --no-adapt), above 0.
    #[arg(long, default_value_t = Settings::default().step_size, value_parser = positive)]
    pub step_size: f64,
    /// Fixed step size and unit metric: no adaptation during warmup.
    #[arg(long)]
    pub no_adapt: bool,
    /// Mean acceptance probability the step-size adaptation aims for, between 0 and 1.
    #[arg(long, default_value_t = Settings::default().target_accept, value_parser = probability)]
    pub target_accept: f64,
    /// Write the run for ArviZ: a Zarr store (a directory, e.g. run.zarr) that
    /// az.from_zarr opens as InferenceData with posterior and sample_stats groups; a path
    /// ending in .npy writes only the draws, shape [chains, draws, dim].
    #[arg(long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Also keep the warmup transitions (warmup_posterior, warmup_sample_stats in --output).
    #[arg(long)]
    pub save_warmup: bool,
    /// Write every coordinate's diagnostics as CSV.
    #[arg(long, value_name = "PATH")]
    pub summary_csv: Option<PathBuf>,
    /// Print every coordinate's diagnostics, not only the worst ones.
    #[arg(long)]
    pub all: bool,
    /// Draw rank plots of the worst coordinates and the gradient kernel's lanes per call
    /// over the run as an SVG picture.
    #[arg(long, value_name = "PATH")]
    pub plot: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Worker threads the chains run on (default: every core); the draws do not depend on it.
    #[arg(long, value_parser = at_least_one)]
    pub threads: Option<usize>,
    /// Chains per shard, each shard an independent batch run by one thread (default: the
    /// runtime chooses: about 128, or fewer so that every thread gets a shard); the draws
    /// do not depend on it.
    #[arg(long, value_parser = at_least_one)]
    pub shard_size: Option<usize>,
}

impl Args {
    /// The sampler's settings.
    pub fn settings(&self) -> Settings {
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
            save_warmup: self.save_warmup,
            threads: self.threads.unwrap_or_else(available_threads),
            shard_size: self.shard_size,
            ..Settings::default()
        }
    }

    /// Warnings about flags that are valid but probably not meant.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.warmup == 0 && !self.no_adapt {
            out.push(format!(
                "--warmup 0: no adaptation; every chain samples from its random initial point \
                 with step size {} and a unit metric, so early draws are not from the target \
                 (pass --no-adapt to say this is meant)",
                self.step_size
            ));
        }
        if self.save_warmup && self.output.is_none() {
            out.push("--save-warmup without --output: the warmup is kept but not written".into());
        }
        out
    }
}

/// Why a run was refused before sampling.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// A setting is out of range (named as the flag).
    #[error("invalid value '{value}' for '{flag}': must be {why}")]
    Flag {
        /// The flag, as typed.
        flag: String,
        /// Its value.
        value: String,
        /// What it must be.
        why: &'static str,
    },
    /// The run would not fit in memory.
    #[error(
        "this run needs about {need} of memory ({chains} chains x {draws} draws x {dim} \
         coordinates, plus sampler state) but {available} is available; lower --chains or \
         --draws{warmup}"
    )]
    Memory {
        /// Bytes needed, formatted.
        need: String,
        /// Bytes available, formatted.
        available: String,
        /// Chains asked for.
        chains: usize,
        /// Draws kept (and warmup kept) per chain.
        draws: usize,
        /// The target's dimension.
        dim: usize,
        /// A hint about --save-warmup, if it is set.
        warmup: &'static str,
    },
    /// Any other error the sampler's checks report.
    #[error(transparent)]
    Sampler(SampleError),
    /// An output path cannot be written.
    #[error("{flag} {}: {why}", path.display())]
    Output {
        /// The flag.
        flag: &'static str,
        /// The path.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

impl From<SampleError> for Refusal {
    /// A sampler setting error, named as the flag that sets it.
    fn from(error: SampleError) -> Self {
        match error {
            SampleError::Setting { name, value, why } => Refusal::Flag {
                flag: format!("--{}", name.replace('_', "-")),
                value,
                why,
            },
            other => Refusal::Sampler(other),
        }
    }
}

/// Checks that a run of `settings` on a `dim`-dimensional target fits in the memory this
/// machine has available (Linux's `MemAvailable`; elsewhere nothing is checked).
pub fn check_memory(settings: &Settings, dim: usize) -> Result<(), Refusal> {
    let Some(available) = available_memory() else {
        return Ok(());
    };
    memory_fits(settings, dim, available)
}

/// [`check_memory`] against `available` bytes.
pub fn memory_fits(settings: &Settings, dim: usize, available: u128) -> Result<(), Refusal> {
    // The summary sorts and rank-normalises one coordinate's draws per thread at a time:
    // about six copies of chains x draws values each.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u128;
    let summary = threads * 48 * settings.chains as u128 * settings.draws as u128;
    let need = settings.memory_estimate(dim) + summary;
    if need <= available {
        return Ok(());
    }
    let kept = if settings.save_warmup {
        settings.warmup
    } else {
        0
    };
    Err(Refusal::Memory {
        need: bytes(need),
        available: bytes(available),
        chains: settings.chains,
        draws: settings.draws + kept,
        dim,
        warmup: if settings.save_warmup {
            ", or drop --save-warmup"
        } else {
            ""
        },
    })
}

/// `MemAvailable` from `/proc/meminfo`, in bytes.
fn available_memory() -> Option<u128> {
    let info = fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u128 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Bytes for people: `512 MB`, `7.3 GB`.
pub fn bytes(n: u128) -> String {
    let n = n as f64;
    match n {
        n if n >= 1e12 => format!("{:.1} TB", n / 1e12),
        n if n >= 1e9 => format!("{:.1} GB", n / 1e9),
        n if n >= 1e6 => format!("{:.0} MB", n / 1e6),
        n => format!("{:.0} kB", n / 1e3),
    }
}

/// The output files, created before sampling (so a bad path fails at once) and removed
/// again if the run fails.
#[derive(Debug, Default)]
pub struct Outputs {
    created: Vec<PathBuf>,
}

impl Outputs {
    /// Creates every output the flags ask for: files are created empty; a Zarr store's
    /// directory is created, replacing a Zarr store already there (never anything else).
    pub fn prepare(args: &Args) -> Result<Self, Refusal> {
        let mut outputs = Outputs::default();
        let result = outputs.prepare_all(args);
        if result.is_err() {
            outputs.remove();
        }
        result.map(|()| outputs)
    }

    fn prepare_all(&mut self, args: &Args) -> Result<(), Refusal> {
        let mut seen: Vec<&Path> = Vec::new();
        for (flag, path) in [
            ("--output", &args.output),
            ("--summary-csv", &args.summary_csv),
            ("--plot", &args.plot),
        ] {
            let Some(path) = path else { continue };
            let refuse = |why: String| Refusal::Output {
                flag,
                path: path.clone(),
                why,
            };
            if seen.contains(&path.as_path()) {
                return Err(refuse("the same path is given to another flag".into()));
            }
            seen.push(path);
            if flag == "--output" && !is_npy(path) {
                prepare_store(path).map_err(refuse)?;
            } else {
                if path.is_dir() {
                    return Err(refuse("is a directory; give a file name".into()));
                }
                fs::File::create(path).map_err(|e| refuse(io_reason(path, e)))?;
            }
            self.created.push(path.clone());
        }
        Ok(())
    }

    /// Removes what [`prepare`](Self::prepare) created (after a failed run).
    pub fn remove(&self) {
        for path in &self.created {
            let _ = if path.is_dir() {
                fs::remove_dir_all(path)
            } else {
                fs::remove_file(path)
            };
        }
    }
}

/// Whether `--output` writes a `.npy` array rather than a Zarr store.
pub fn is_npy(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("npy"))
}

/// An empty directory for a Zarr store at `path`.
fn prepare_store(path: &Path) -> Result<(), String> {
    if path.exists() {
        if !path.join(".zgroup").is_file() {
            return Err("exists and is not a Zarr store; remove it or choose another path".into());
        }
        fs::remove_dir_all(path).map_err(|e| format!("cannot replace the store there: {e}"))?;
    }
    fs::create_dir(path).map_err(|e| io_reason(path, e))
}

/// Why `path` could not be created, in words: a missing directory is named.
fn io_reason(path: &Path, error: std::io::Error) -> String {
    match path.parent() {
        Some(dir) if error.kind() == std::io::ErrorKind::NotFound => {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            format!("the directory {} does not exist", dir.display())
        }
        _ => error.to_string(),
    }
}

/// The progress line: at most 80 columns, so it does not wrap on a standard terminal.
pub const PROGRESS_TEMPLATE: &str =
    "{spinner} {elapsed_precise} {bar:20} {percent:>3}% {human_pos}/{human_len} {rate} eta {eta}";

/// The progress bar for `total` transitions (hidden with `--quiet`).
pub fn progress_bar(quiet: bool, total: u64) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    let style = ProgressStyle::with_template(PROGRESS_TEMPLATE)
        .expect("a valid template")
        .with_key(
            "rate",
            |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{}/s", rate(state.per_sec()));
            },
        );
    bar.set_style(style);
    bar
}

/// Transitions per second in at most five characters (`812`, `41.2k`, `1.3M`).
fn rate(per_sec: f64) -> String {
    match per_sec {
        r if r >= 1e6 => format!("{:.1}M", r / 1e6),
        r if r >= 1e4 => format!("{:.0}k", r / 1e3),
        r if r >= 1e3 => format!("{:.1}k", r / 1e3),
        r => format!("{r:.0}"),
    }
}

fn whole(s: &str) -> Result<i128, String> {
    s.parse::<i128>()
        .map_err(|_| format!("must be a whole number (got '{s}')"))
}

fn at_least_one(s: &str) -> Result<usize, String> {
    match whole(s)? {
        n if n < 1 => Err(format!("must be at least 1 (got {n})")),
        n => usize::try_from(n).map_err(|_| format!("must be at most {}", usize::MAX)),
    }
}

fn at_least_zero(s: &str) -> Result<usize, String> {
    match whole(s)? {
        n if n < 0 => Err(format!("must be 0 or more (got {n})")),
        n => usize::try_from(n).map_err(|_| format!("must be at most {}", usize::MAX)),
    }
}

fn seed(s: &str) -> Result<u64, String> {
    match whole(s)? {
        n if n < 0 => Err(format!("must be 0 or more (got {n})")),
        n => u64::try_from(n).map_err(|_| format!("must be at most {}", u64::MAX)),
    }
}

fn tree_depth(s: &str) -> Result<u32, String> {
    match whole(s)? {
        n @ 1..=30 => Ok(n as u32),
        n => Err(format!("must be between 1 and 30 (got {n})")),
    }
}

fn number(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .map_err(|_| format!("must be a number (got '{s}')"))
}

fn positive(s: &str) -> Result<f64, String> {
    match number(s)? {
        x if x.is_finite() && x > 0.0 => Ok(x),
        x => Err(format!("must be a finite number above 0 (got {x})")),
    }
}

fn probability(s: &str) -> Result<f64, String> {
    match number(s)? {
        x if x > 0.0 && x < 1.0 => Ok(x),
        x => Err(format!("must be strictly between 0 and 1 (got {x})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_line_fits_80_columns_at_its_widest() {
        let widest = PROGRESS_TEMPLATE
            .replace("{spinner}", "⠁")
            .replace("{elapsed_precise}", "99:59:59")
            .replace("{bar:20}", &"#".repeat(20))
            .replace("{percent:>3}", "100")
            .replace("{human_pos}", "999,999,999")
            .replace("{human_len}", "999,999,999")
            .replace("{rate}", &format!("{}/s", rate(999_999.0)))
            .replace("{eta}", "99h");
        assert!(!widest.contains('{'), "{widest}");
        assert!(
            widest.chars().count() <= 80,
            "{} columns: {widest}",
            widest.chars().count()
        );
        for r in [0.4, 812.0, 9_999.0, 41_234.0, 999_999.0, 1.3e6, 9.9e7] {
            assert!(rate(r).len() <= 5, "{r}: {}", rate(r));
        }
    }

    #[test]
    fn threads_and_shard_size_reach_the_settings() {
        let parse = |args: &[&str]| Args::try_parse_from([&["nuts"], args].concat());
        let given = parse(&["--threads", "3", "--shard-size", "50"]).unwrap();
        assert_eq!(
            (given.settings().threads, given.settings().shard_size),
            (3, Some(50))
        );
        let default = parse(&[]).unwrap().settings();
        assert_eq!(default.threads, available_threads());
        assert_eq!(default.shard_size, None);
        assert!(parse(&["--threads", "0"]).is_err());
        assert!(parse(&["--shard-size", "0"]).is_err());
    }

    #[test]
    fn the_flags_default_to_the_sampler_defaults() {
        let parsed = Args::try_parse_from(["nuts"]).unwrap();
        assert_eq!(parsed.settings(), Settings::default());
    }

    #[test]
    fn sampler_setting_errors_name_the_flag_as_typed() {
        let error = SampleError::Setting {
            name: "target_accept",
            value: "1".into(),
            why: "strictly between 0 and 1",
        };
        let message = Refusal::from(error).to_string();
        assert!(message.contains("'--target-accept'"), "{message}");
        assert!(!message.contains("target_accept"), "{message}");
    }

    #[test]
    fn the_memory_estimate_refuses_with_the_figure_and_the_flag() {
        let settings = Settings {
            chains: 10_000_000,
            ..Settings::default()
        };
        let err = memory_fits(&settings, 100, 8 << 30)
            .unwrap_err()
            .to_string();
        assert!(err.contains("TB") && err.contains("--chains"), "{err}");
        assert!(err.contains("8.6 GB is available"), "{err}");
        assert!(memory_fits(&Settings::default(), 100, 8 << 30).is_ok());
    }
}

//! The `nuts` binary's flags and output paths, run as a user runs it: bad flags and bad
//! paths are refused before any sampling, with messages that name the flag as typed.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn nuts(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nuts"))
        .args(args)
        .output()
        .expect("the nuts binary runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nuts-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Refused at once (exit code 2, no sampling: the default run would take minutes), with a
/// message that contains every one of `expect`.
fn refused(args: &[&str], expect: &[&str]) {
    let start = Instant::now();
    let out = nuts(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{args:?} sampled first"
    );
    for e in expect {
        assert!(err.contains(e), "{args:?}: {err:?} lacks {e:?}");
    }
    assert!(out.stdout.is_empty(), "{args:?} printed a report");
}

#[test]
fn negative_and_out_of_range_numbers_get_range_messages_naming_the_flag() {
    refused(
        &["--chains", "-5"],
        &["'--chains", "must be at least 1", "-5"],
    );
    refused(&["--chains=-5"], &["'--chains", "must be at least 1"]);
    refused(&["--draws", "0"], &["'--draws", "at least 1"]);
    refused(&["--warmup", "-1"], &["'--warmup", "0 or more"]);
    refused(&["--seed", "-3"], &["'--seed", "0 or more"]);
    refused(
        &["--max-depth", "31"],
        &["'--max-depth", "between 1 and 30"],
    );
    refused(&["--step-size", "-0.1"], &["'--step-size", "above 0"]);
    refused(&["--step-size", "inf"], &["'--step-size", "above 0"]);
    refused(
        &["--target-accept", "1.5"],
        &["'--target-accept", "between 0 and 1"],
    );
    refused(
        &["--target-accept", "abc"],
        &["'--target-accept", "must be a number"],
    );
    refused(&["--chains", "many"], &["'--chains", "whole number"]);
    let err = stderr(&nuts(&["--target-accept", "0"]));
    assert!(!err.contains("target_accept"), "{err}");
}

#[test]
fn bad_output_paths_are_refused_before_sampling() {
    refused(
        &["--output", "/nonexistent/dir/x.npy"],
        &[
            "--output /nonexistent/dir/x.npy",
            "the directory /nonexistent/dir does not exist",
        ],
    );
    refused(
        &["--output", "/nonexistent/dir/run.zarr"],
        &["--output", "does not exist"],
    );
    refused(
        &["--summary-csv", "/nonexistent/s.csv"],
        &["--summary-csv", "does not exist"],
    );
    refused(
        &["--plot", "/nonexistent/p.svg"],
        &["--plot", "does not exist"],
    );
    let dir = scratch("paths");
    // An existing directory that is not a Zarr store is never replaced.
    let other = dir.join("photos");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("keep.txt"), "mine").unwrap();
    refused(
        &["--output", other.to_str().unwrap()],
        &["not a Zarr store"],
    );
    assert!(other.join("keep.txt").is_file());
    refused(
        &["--plot", dir.to_str().unwrap()],
        &["--plot", "is a directory"],
    );
    let same = dir.join("same").to_str().unwrap().to_string();
    refused(&["--summary-csv", &same, "--plot", &same], &["same path"]);
    // A refusal leaves nothing behind.
    let csv = dir.join("s.csv");
    refused(
        &[
            "--summary-csv",
            csv.to_str().unwrap(),
            "--plot",
            "/nonexistent/p.svg",
        ],
        &["--plot"],
    );
    assert!(!csv.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn runs_too_large_for_memory_are_refused_with_the_figure_and_the_flag() {
    if !std::path::Path::new("/proc/meminfo").exists() {
        return; // only Linux reports what is available
    }
    refused(
        &["--chains", "10000000", "--draws", "100000"],
        &["needs about", "TB", "available", "--chains"],
    );
}

#[test]
fn help_says_what_nuts_does_and_shows_an_example() {
    let out = nuts(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.starts_with("Batched NUTS"), "{help}");
    assert!(
        help.contains("Examples:") && help.contains("nuts --chains"),
        "{help}"
    );
}

/// A short run end to end: the warning for `--warmup 0`, the report, and every output.
#[test]
fn a_short_run_writes_its_outputs_and_warns_about_no_warmup() {
    let dir = scratch("run");
    let (store, csv, svg) = (dir.join("run.zarr"), dir.join("s.csv"), dir.join("run.svg"));
    let out = nuts(&[
        "--chains",
        "4",
        "--draws",
        "40",
        "--warmup",
        "0",
        "--target",
        "logistic",
        "--quiet",
        "--output",
        store.to_str().unwrap(),
        "--summary-csv",
        csv.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: --warmup 0: no adaptation"),
        "{}",
        stderr(&out)
    );
    for expect in [
        "worst R-hat",
        "lowest bulk ESS",
        "lowest tail ESS",
        "ess_tail",
        "mcse_sd",
        "95%",
    ] {
        assert!(report.contains(expect), "{expect}: {report}");
    }
    assert!(
        report.contains("utilisation    gradient kernel"),
        "{report}"
    );
    for group in [
        "posterior/x/.zarray",
        "sample_stats/energy/.zarray",
        ".zmetadata",
    ] {
        assert!(store.join(group).is_file(), "{group}");
    }
    assert!(!store.join("warmup_posterior").exists());
    let lines = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(
        lines.lines().count(),
        1 + 25,
        "a header and every coordinate"
    );
    assert!(lines.starts_with("coord,mean,sd,mcse_mean,mcse_sd,q5,q50,q95,ess_bulk,ess_tail,r_hat"));
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.starts_with("<svg") && picture.contains("chains per batched call"));
    // --all prints every coordinate; a second run replaces the store it wrote.
    let out = nuts(&[
        "--chains",
        "2",
        "--draws",
        "8",
        "--warmup",
        "4",
        "--quiet",
        "--all",
        "--save-warmup",
        "--output",
        store.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("x[99]") && report.contains("every coordinate"),
        "{report}"
    );
    assert!(store.join("warmup_sample_stats/lp/.zarray").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The main job's default warmup and draws give a sound answer, checked on 16 chains instead
/// of 1,000 (the same schedule, 3,200 draws): no divergence, the step size adapted, every
/// split R-hat below 1.01, bulk and tail ESS above 1,000, and every coordinate's mean (0)
/// and sd (1) within its Monte Carlo standard error (|z| < 3.89: two-sided, Bonferroni over
/// 200 tests at family level 1%).
#[test]
fn the_default_warmup_and_draws_are_sound_on_16_chains() {
    let dir = scratch("defaults");
    let csv = dir.join("summary.csv");
    let out = nuts(&[
        "--chains",
        "16",
        "--quiet",
        "--summary-csv",
        csv.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("16 chains x 200 draws after 200 warmup"),
        "{report}"
    );
    assert!(report.contains("divergences    0 of 3200"), "{report}");
    let step = report
        .lines()
        .find_map(|l| l.strip_prefix("step size"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|x| x.parse::<f64>().ok())
        .expect("a step size line");
    assert!((0.11..0.16).contains(&step), "adapted step size {step}");
    let table = std::fs::read_to_string(&csv).unwrap();
    let mut lines = table.lines();
    assert_eq!(
        lines.next(),
        Some("coord,mean,sd,mcse_mean,mcse_sd,q5,q50,q95,ess_bulk,ess_tail,r_hat")
    );
    let mut coords = 0;
    for line in lines {
        let v: Vec<f64> = line
            .split(',')
            .skip(1)
            .map(|x| x.parse().unwrap())
            .collect();
        let (mean, sd, mcse_mean, mcse_sd) = (v[0], v[1], v[2], v[3]);
        let (ess_bulk, ess_tail, r_hat) = (v[7], v[8], v[9]);
        assert!(r_hat < 1.01, "{line}");
        assert!(ess_bulk > 1000.0 && ess_tail > 1000.0, "{line}");
        assert!((mean / mcse_mean).abs() < 3.89, "{line}");
        assert!(((sd - 1.0) / mcse_sd).abs() < 3.89, "{line}");
        coords += 1;
    }
    assert_eq!(coords, 100);
    let _ = std::fs::remove_dir_all(&dir);
}

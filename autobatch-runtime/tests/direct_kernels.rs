//! Direct kernels (`Kernel::lane_wise_direct`): the interpreters call the direct body where
//! storage holds every leaf of the op in place by lane, and the general body elsewhere, with
//! the same results; a branch condition computed last may split the lanes, one computed
//! earlier is written and read back; a direct body's errors and panics are reported with the
//! lane, in both modes and in shards.

use autobatch_runtime::ir::{KernelId, ProgramBuilder, Type};
use autobatch_runtime::{
    Column, Config, DirectCall, Executable, Kernel, KernelError, LaneInputs, LaneOutputs, Mode,
    RuntimeError,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

mod common;
use common::self_update;

/// Every mode, unsharded and in shards of 7 lanes.
fn configs() -> Vec<Config> {
    let mut all = Vec::new();
    for mode in [Mode::FullVm, Mode::Stackless] {
        for shard_size in [None, Some(7)] {
            all.push(Config {
                shard_size,
                ..Config::with_mode(mode)
            });
        }
    }
    all
}

/// How often each body of a counted kernel ran.
#[derive(Default)]
struct Calls {
    general: AtomicUsize,
    direct: AtomicUsize,
}

impl Calls {
    fn take(&self) -> (usize, usize) {
        (
            self.general.swap(0, Ordering::SeqCst),
            self.direct.swap(0, Ordering::SeqCst),
        )
    }
}

/// A kernel computing `f(x)` for each output leaf (one `i64` input, `outs` `i64` outputs;
/// a last `bool` output, if `condition`, is `x > 2`) through either body, counting each.
fn counted(f: fn(i64) -> i64, outs: usize, condition: bool, calls: &Arc<Calls>) -> Kernel {
    let values = outs - usize::from(condition);
    let c = Arc::clone(calls);
    let general = move |ins: &LaneInputs<'_>, o: &mut LaneOutputs<'_>| {
        c.general.fetch_add(1, Ordering::SeqCst);
        let x = ins.rows::<i64>(0)?;
        for leaf in 0..values {
            let mut out = o.scalars::<i64>(leaf)?;
            for (k, &lane) in ins.lanes().iter().enumerate() {
                out.set(k, lane, f(x.scalar(lane)));
            }
        }
        if condition {
            let mut out = o.scalars::<bool>(values)?;
            for (k, &lane) in ins.lanes().iter().enumerate() {
                out.set(k, lane, x.scalar(lane) > 2);
            }
        }
        Ok::<(), KernelError>(())
    };
    let c = Arc::clone(calls);
    let direct = move |call: &mut DirectCall<'_>| {
        c.direct.fetch_add(1, Ordering::SeqCst);
        let x = call.input::<i64>(0)?;
        if condition {
            if let Some(split) = call.split() {
                let mut out = match values {
                    0 => None,
                    _ => Some(call.output::<i64>(0)?),
                };
                split.each(|lane| {
                    let x = x.get(lane);
                    if let Some(out) = &mut out {
                        out.set(lane, f(x));
                    }
                    x > 2
                });
                return Ok(());
            }
            let out = call.output::<bool>(values)?;
            call.each_lane((x, ()), (out, ()), |(x, ())| (x > 2, ()));
        }
        for leaf in 0..values {
            let out = call.output::<i64>(leaf)?;
            call.each_lane((x, ()), (out, ()), |(x, ())| (f(x), ()));
        }
        Ok::<(), KernelError>(())
    };
    Kernel::lane_wise_direct(general, direct)
}

fn run(exe: &Executable, xs: &[i64], config: &Config) -> Result<Vec<i64>, RuntimeError> {
    let run = exe.run(&[Column::from_scalars(xs)], config)?;
    Ok(run.outputs[0].as_slice::<i64>().unwrap().to_vec())
}

#[test]
fn the_direct_body_runs_where_storage_holds_every_leaf_in_place() {
    let calls = Arc::new(Calls::default());
    let exe = self_update(counted(|x| 3 * x + 1, 1, false, &calls));
    let xs: Vec<i64> = (-20..40).collect();
    let want: Vec<i64> = xs.iter().map(|x| 3 * x + 1).collect();
    for config in configs() {
        assert_eq!(run(&exe, &xs, &config).unwrap(), want, "{config:?}");
        let (general, direct) = calls.take();
        assert_eq!(general, 0, "{config:?}");
        assert!(direct > 0, "{config:?}");
    }
}

#[test]
fn the_general_body_runs_where_an_output_is_not_held_by_lane() {
    // `(y, unused) = kernel(x)`: `unused` is never read, so it has no storage and the kernel
    // cannot write it by lane.
    let calls = Arc::new(Calls::default());
    let mut b = ProgramBuilder::new();
    let (x, y, unused) = (
        b.var("x", Type::I64),
        b.var("y", Type::I64),
        b.var("unused", Type::I64),
    );
    let f = b.function("f");
    b.signature(f, &[x], &[y]);
    let e = b.block(f, "entry");
    b.prim(
        e,
        &[y, unused],
        &[x],
        KernelId::new(0),
        "(y, unused) = kernel(x)",
    );
    b.ret(e);
    let program = b.finish_with_entry(f).unwrap();
    let kernel = counted(|x| x - 5, 2, false, &calls);
    let exe = Executable::new(program, vec![kernel]).unwrap();
    let xs: Vec<i64> = (0..30).collect();
    let want: Vec<i64> = xs.iter().map(|x| x - 5).collect();
    for config in configs() {
        assert_eq!(run(&exe, &xs, &config).unwrap(), want, "{config:?}");
        let (general, direct) = calls.take();
        assert!(general > 0, "{config:?}");
        assert_eq!(direct, 0, "{config:?}");
    }
}

/// `f(x) = { outs = kernel(x); if c { y = 100 * y } ; y }` with `outs` either `(y, c)`, the
/// condition last, or `(c, y)`.
fn branching(condition_last: bool, calls: &Arc<Calls>) -> Executable {
    let mut b = ProgramBuilder::new();
    let (x, y, c) = (
        b.var("x", Type::I64),
        b.var("y", Type::I64),
        b.var("c", Type::BOOL),
    );
    let f = b.function("f");
    b.signature(f, &[x], &[y]);
    let (entry, big, done) = (b.block(f, "entry"), b.block(f, "big"), b.block(f, "done"));
    let outs = match condition_last {
        true => [y, c],
        false => [c, y],
    };
    b.prim(entry, &outs, &[x], KernelId::new(0), "(y, c) = kernel(x)");
    b.branch(entry, c, big, done);
    b.prim(big, &[y], &[y], KernelId::new(1), "y = 100 * y");
    b.goto(big, done);
    b.ret(done);
    let program = b.finish_with_entry(f).unwrap();
    let first = match condition_last {
        true => counted(|x| x + 1, 2, true, calls),
        // The condition first: a kernel whose leaves are the other way round.
        false => {
            let c = Arc::clone(calls);
            let d = Arc::clone(calls);
            Kernel::lane_wise_direct(
                move |ins, o| {
                    c.general.fetch_add(1, Ordering::SeqCst);
                    let x = ins.rows::<i64>(0)?;
                    let mut cond = o.scalars::<bool>(0)?;
                    for (k, &lane) in ins.lanes().iter().enumerate() {
                        cond.set(k, lane, x.scalar(lane) > 2);
                    }
                    let mut y = o.scalars::<i64>(1)?;
                    for (k, &lane) in ins.lanes().iter().enumerate() {
                        y.set(k, lane, x.scalar(lane) + 1);
                    }
                    Ok(())
                },
                move |call| {
                    d.direct.fetch_add(1, Ordering::SeqCst);
                    assert!(call.split().is_none(), "only a last condition is offered");
                    let x = call.input::<i64>(0)?;
                    let (cond, y) = (call.output::<bool>(0)?, call.output::<i64>(1)?);
                    call.each_lane((x, ()), (cond, (y, ())), |(x, ())| (x > 2, (x + 1, ())));
                    Ok(())
                },
            )
        }
    };
    let scale = Kernel::map1(|y: i64| 100 * y);
    Executable::new(program, vec![first, scale]).unwrap()
}

#[test]
fn a_branch_condition_splits_the_lanes_if_last_and_is_written_otherwise() {
    let xs: Vec<i64> = (-10..25).collect();
    let want: Vec<i64> = xs
        .iter()
        .map(|&x| if x > 2 { 100 * (x + 1) } else { x + 1 })
        .collect();
    for condition_last in [true, false] {
        let calls = Arc::new(Calls::default());
        let exe = branching(condition_last, &calls);
        for config in configs() {
            let got = run(&exe, &xs, &config).unwrap();
            assert_eq!(got, want, "condition last: {condition_last}, {config:?}");
            let (general, direct) = calls.take();
            assert_eq!(general, 0, "{config:?}");
            assert!(direct > 0, "{config:?}");
        }
    }
}

#[test]
fn a_direct_body_reading_the_wrong_type_is_a_kernel_error() {
    let exe = self_update(Kernel::lane_wise_direct(
        |_, _| Err(KernelError::whole("the general body is not run here")),
        |call| {
            let x = call.input::<f64>(0)?;
            let y = call.output::<i64>(0)?;
            call.each_lane((x, ()), (y, ()), |(x, ())| (x as i64, ()));
            Ok(())
        },
    ));
    for config in configs() {
        match run(&exe, &[1, 2, 3], &config) {
            Err(RuntimeError::Kernel { message, lane, .. }) => {
                assert_eq!(lane, 0, "{config:?}");
                assert!(message.contains("kernel input 0 is i64"), "{message}");
            }
            other => panic!("{config:?}: {other:?}"),
        }
    }
    let missing = self_update(Kernel::lane_wise_direct(
        |_, _| Ok(()),
        |call| call.output::<i64>(3).map(drop),
    ));
    let e = run(&missing, &[1], &configs()[0]).unwrap_err();
    assert!(
        e.to_string().contains("kernel output 3 does not exist"),
        "{e}"
    );
}

#[test]
fn a_direct_body_panicking_in_a_lane_is_reported_with_that_lane() {
    let exe = self_update(Kernel::lane_wise_direct(
        |_, _| Ok(()),
        |call| {
            let x = call.input::<i64>(0)?;
            let y = call.output::<i64>(0)?;
            call.each_lane((x, ()), (y, ()), |(x, ())| {
                assert!(x != 13, "thirteen");
                (x, ())
            });
            Ok(())
        },
    ));
    let xs: Vec<i64> = (0..40).collect();
    for config in configs() {
        match run(&exe, &xs, &config) {
            Err(RuntimeError::Kernel { message, lane, .. }) => {
                assert_eq!(lane, 13, "{config:?}");
                assert!(message.contains("thirteen"), "{message}");
            }
            other => panic!("{config:?}: {other:?}"),
        }
    }
}

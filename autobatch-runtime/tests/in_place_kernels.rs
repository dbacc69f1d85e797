//! In-place lane-wise kernels (`Kernel::lane_wise_in_place`): an output that is also an input
//! is written in storage itself, in both modes, and ordinary lane-wise kernels are unaffected;
//! a kernel writing some outputs by lane (in storage itself) and others by position has them
//! all written.

use autobatch_runtime::ir::{KernelId, ProgramBuilder, Type};
use autobatch_runtime::{Column, Config, Executable, Kernel, KernelError, Mode, RuntimeError};

mod common;
use common::self_update;

fn both() -> [Config; 2] {
    [
        Config::with_mode(Mode::FullVm),
        Config::with_mode(Mode::Stackless),
    ]
}

/// Writes `x + 10` for each lane, then reads `x` at that lane again and writes twice that:
/// `2 (x + 10)` where the output is the input's own rows, `2 x` where it is a column apart.
fn write_then_read(
    ins: &autobatch_runtime::LaneInputs<'_>,
    outs: &mut autobatch_runtime::LaneOutputs<'_>,
) -> Result<(), KernelError> {
    let x = ins.rows::<i64>(0)?;
    let mut out = outs.scalars::<i64>(0)?;
    for (k, &lane) in ins.lanes().iter().enumerate() {
        out.set(k, lane, x.scalar(lane) + 10);
        out.set(k, lane, 2 * x.scalar(lane));
    }
    Ok(())
}

fn run(exe: &Executable, xs: &[i64], config: &Config) -> Vec<i64> {
    let run = exe.run(&[Column::from_scalars(xs)], config).unwrap();
    run.outputs[0].as_slice::<i64>().unwrap().to_vec()
}

#[test]
fn an_in_place_kernel_writes_its_own_input_rows_and_an_ordinary_one_does_not() {
    let xs: Vec<i64> = (0..300).collect();
    let in_place = self_update(Kernel::lane_wise_in_place(write_then_read));
    let ordinary = self_update(Kernel::lane_wise(write_then_read));
    for config in both() {
        for shard_size in [None, Some(7)] {
            let config = Config {
                shard_size,
                ..config.clone()
            };
            let want: Vec<i64> = xs.iter().map(|x| 2 * (x + 10)).collect();
            assert_eq!(run(&in_place, &xs, &config), want, "{config:?}");
            let want: Vec<i64> = xs.iter().map(|x| 2 * x).collect();
            assert_eq!(run(&ordinary, &xs, &config), want, "{config:?}");
        }
    }
}

#[test]
fn an_input_written_in_place_is_read_by_value_only() {
    let by_column = self_update(Kernel::lane_wise_in_place(|ins, outs| {
        let x = ins.column(0)?;
        outs.slice::<i64>(0)?
            .copy_from_slice(x.as_slice::<i64>().unwrap_or_default());
        Ok(())
    }));
    let by_row = self_update(Kernel::lane_wise_in_place(|ins, outs| {
        let x = ins.rows::<i64>(0)?;
        let mut out = outs.scalars::<i64>(0)?;
        for (k, &lane) in ins.lanes().iter().enumerate() {
            ins.at(k);
            out.set(k, lane, x.row(lane)[0]);
        }
        Ok(())
    }));
    for config in both() {
        let e = by_column
            .run(&[Column::from_scalars(&[1i64, 2])], &config)
            .unwrap_err();
        assert!(
            matches!(&e, RuntimeError::Kernel { message, .. } if message.contains("written in place")),
            "{e}"
        );
        let e = by_row
            .run(&[Column::from_scalars(&[1i64, 2])], &config)
            .unwrap_err();
        assert!(
            matches!(&e, RuntimeError::Kernel { lane: 0, message, .. } if message.contains("read with `scalar`")),
            "{e}"
        );
    }
}

/// `f(x) = (a, b)` by one lane-wise kernel writing `a = x + 1` and `b = 2 x`: output 0 through
/// `scalars` (by lane where the interpreter offers it) if `a_by_lane`, else by position into
/// its dense column, and output 1 the other way round.
fn two_outputs(a_by_lane: bool) -> Executable {
    let mut b = ProgramBuilder::new();
    let x = b.var("x", Type::I64);
    let (va, vb) = (b.var("a", Type::I64), b.var("b", Type::I64));
    let f = b.function("f");
    b.signature(f, &[x], &[va, vb]);
    let e = b.block(f, "entry");
    b.prim(e, &[va, vb], &[x], KernelId::new(0), "(x + 1, 2 * x)");
    b.ret(e);
    let program = b.finish_with_entry(f).unwrap();
    let kernel = Kernel::lane_wise(move |ins, outs| {
        let x = ins.rows::<i64>(0)?;
        let lanes = ins.lanes();
        let [a, b] = outs.leaves::<2>()?;
        // Output `i`'s value at `x`.
        let value = |i: usize, x: i64| if i == 0 { x + 1 } else { 2 * x };
        let (lane_leaf, position_leaf) = if a_by_lane { (0, 1) } else { (1, 0) };
        let (by_lane, by_position) = if a_by_lane { (a, b) } else { (b, a) };
        let mut out = by_lane.scalars::<i64>()?;
        for (k, &lane) in lanes.iter().enumerate() {
            out.set(k, lane, value(lane_leaf, x.scalar(lane)));
        }
        let column = by_position.slice::<i64>()?;
        for (k, &lane) in lanes.iter().enumerate() {
            column[k] = value(position_leaf, x.scalar(lane));
        }
        Ok(())
    });
    Executable::new(program, vec![kernel]).unwrap()
}

/// Outputs a kernel writes by lane are in place after it, and outputs it writes by position
/// are copied in after it, in the same call: a call counts as written in place only if the
/// kernel took every offer.
#[test]
fn outputs_written_by_lane_and_by_position_in_one_call_are_all_written() {
    let xs: Vec<i64> = (0..300).map(|i| i * 7 % 101).collect();
    let want_a: Vec<i64> = xs.iter().map(|x| x + 1).collect();
    let want_b: Vec<i64> = xs.iter().map(|x| 2 * x).collect();
    for a_by_lane in [true, false] {
        let exe = two_outputs(a_by_lane);
        for config in both() {
            for shard_size in [None, Some(7)] {
                let config = Config {
                    shard_size,
                    ..config.clone()
                };
                let run = exe.run(&[Column::from_scalars(&xs)], &config).unwrap();
                let got = |i: usize| run.outputs[i].as_slice::<i64>().unwrap().to_vec();
                assert_eq!(got(0), want_a, "a, by lane: {a_by_lane}, {config:?}");
                assert_eq!(got(1), want_b, "b, by lane: {}, {config:?}", !a_by_lane);
            }
        }
    }
}

//! In-place lane-wise kernels (`Kernel::lane_wise_in_place`): an output that is also an input
//! is written in storage itself, in both modes, and ordinary lane-wise kernels are unaffected.

use autobatch_runtime::ir::{KernelId, ProgramBuilder, Type};
use autobatch_runtime::{Column, Config, Executable, Kernel, KernelError, Mode, RuntimeError};

fn both() -> [Config; 2] {
    [
        Config::with_mode(Mode::FullVm),
        Config::with_mode(Mode::Stackless),
    ]
}

/// `f(x) = { x = kernel(x); x }`: one kernel whose output is its own input.
fn self_update(kernel: Kernel) -> Executable {
    let mut b = ProgramBuilder::new();
    let x = b.var("x", Type::I64);
    let f = b.function("f");
    b.signature(f, &[x], &[x]);
    let e = b.block(f, "entry");
    b.prim(e, &[x], &[x], KernelId::new(0), "x = kernel(x)");
    b.ret(e);
    let program = b.finish_with_entry(f).unwrap();
    Executable::new(program, vec![kernel]).unwrap()
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

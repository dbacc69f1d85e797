//! Test support: implementations of the conformance programs' kernels, keyed by source text.

#![allow(dead_code)]

use autobatch_runtime::ir::KernelId;
use autobatch_runtime::Source;
use autobatch_runtime::{
    Column, DirectCall, Executable, Kernel, KernelError, LaneInputs, LaneOutputs, LaneWiseFn,
};
use autobatch_testkit::conformance::KernelNamer;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A dynamically typed scalar, so one test kernel serves every integer dtype.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    I(i64),
    F(f64),
    B(bool),
}

impl Num {
    fn i(self) -> i64 {
        match self {
            Num::I(x) => x,
            Num::F(x) => x as i64,
            Num::B(b) => b as i64,
        }
    }
}

fn read(c: &Column, lane: usize) -> Num {
    match c {
        Column::Bool(a) => Num::B(a[[lane, 0]]),
        Column::I32(a) => Num::I(a[[lane, 0]] as i64),
        Column::I64(a) => Num::I(a[[lane, 0]]),
        Column::F32(a) => Num::F(a[[lane, 0]] as f64),
        Column::F64(a) => Num::F(a[[lane, 0]]),
        Column::Key(_) => panic!("test kernels take no keys"),
        other => panic!("test kernels take no {}", other.dtype()),
    }
}

fn write(c: &mut Column, row: usize, v: Num) {
    match c {
        Column::Bool(a) => a[[row, 0]] = matches!(v, Num::B(true)),
        Column::I32(a) => a[[row, 0]] = v.i() as i32,
        Column::I64(a) => a[[row, 0]] = v.i(),
        Column::F32(a) => {
            a[[row, 0]] = match v {
                Num::F(x) => x as f32,
                o => o.i() as f32,
            }
        }
        Column::F64(a) => {
            a[[row, 0]] = match v {
                Num::F(x) => x,
                o => o.i() as f64,
            }
        }
        Column::Key(_) => panic!("test kernels make no keys"),
        other => panic!("test kernels make no {}", other.dtype()),
    }
}

/// A lane-wise kernel over scalar leaves of any dtype.
pub fn scalar_kernel(f: impl Fn(&[Num]) -> Vec<Num> + Send + Sync + 'static) -> Kernel {
    Kernel::lane_wise(move |ins: &LaneInputs<'_>, outs: &mut LaneOutputs<'_>| {
        let cols: Vec<&Column> = (0..ins.len())
            .map(|i| ins.column(i))
            .collect::<Result<_, _>>()?;
        for (k, &lane) in ins.lanes().iter().enumerate() {
            ins.at(k);
            let args: Vec<Num> = cols.iter().map(|c| read(c, lane)).collect();
            for (i, v) in f(&args).into_iter().enumerate().take(outs.len()) {
                write(outs.column(i)?, k, v);
            }
        }
        Ok::<(), KernelError>(())
    })
}

/// Adds `delta` to every element of an `f32` vector leaf.
fn vector_add(delta: f32) -> Kernel {
    Kernel::lane_wise(move |ins, outs| {
        let rows = ins.rows::<f32>(0)?;
        let out = outs.slice::<f32>(0)?;
        let w = rows.width();
        for (k, &lane) in ins.lanes().iter().enumerate() {
            for (o, x) in out[k * w..(k + 1) * w].iter_mut().zip(rows.row(lane)) {
                *o = x + delta;
            }
        }
        Ok(())
    })
}

/// The implementation of a conformance kernel source text.
pub fn kernel_for(src: &str) -> Kernel {
    use Num::*;
    let c = |v: Num| scalar_kernel(move |_| vec![v]);
    let un = |f: fn(i64) -> Num| scalar_kernel(move |a| vec![f(a[0].i())]);
    let bin = |f: fn(i64, i64) -> Num| scalar_kernel(move |a| vec![f(a[0].i(), a[1].i())]);
    match src {
        "1" => c(I(1)),
        "2" => c(I(2)),
        "0" => c(I(0)),
        "true" => c(B(true)),
        "false" => c(B(false)),
        "n > 1" => un(|n| B(n > 1)),
        "n < 1" => un(|n| B(n < 1)),
        "n > 0" | "count > 0" | "depth > 0" => un(|n| B(n > 0)),
        "n <= 1" => un(|n| B(n <= 1)),
        "b == 0" => un(|n| B(n == 0)),
        "n - 1" | "count - 1" | "depth - 1" => un(|n| I(n - 1)),
        "n - 2" => un(|n| I(n - 2)),
        "acc + 2" => un(|n| I(n + 2)),
        "x + y" | "acc + n" => bin(|a, b| I(a + b)),
        "a % b" => bin(|a, b| I(a % b)),
        "(1, (2, 3))" => scalar_kernel(|_| vec![I(1), I(2), I(3)]),
        "((4, 5), 6)" => scalar_kernel(|_| vec![I(4), I(5), I(6)]),
        "(x + 1, (x + 2, x + 3))" => {
            scalar_kernel(|a| vec![I(a[0].i() + 1), I(a[0].i() + 2), I(a[0].i() + 3)])
        }
        "choose_depth(count)" => un(|n| I(n % 3)),
        "state + 1" => vector_add(1.0),
        "step_state(state)" => vector_add(0.5),
        other => panic!("no test kernel for `{other}`"),
    }
}

/// Builds a conformance program and its kernel table; kernel `i` implements `sources[i]`.
pub fn build<P>(make: impl FnOnce(KernelNamer<'_>) -> P) -> (P, Vec<Kernel>, Vec<String>) {
    let mut sources: Vec<String> = Vec::new();
    let mut namer = |src: &str| {
        let i = sources.iter().position(|s| s == src).unwrap_or_else(|| {
            sources.push(src.to_string());
            sources.len() - 1
        });
        KernelId::new(i)
    };
    let program = make(&mut namer);
    let kernels = sources.iter().map(|s| kernel_for(s)).collect();
    (program, kernels, sources)
}

/// Like [`build`], but the kernel for `counted` also counts its calls and the lanes it computes.
pub fn build_counting<P>(
    make: impl FnOnce(KernelNamer<'_>) -> P,
    counted: &str,
) -> (P, Vec<Kernel>, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let (program, mut kernels, sources) = build(make);
    let calls = Arc::new(AtomicUsize::new(0));
    let lanes = Arc::new(AtomicUsize::new(0));
    let i = sources
        .iter()
        .position(|s| s == counted)
        .expect("counted source is used");
    let (c, l) = (calls.clone(), lanes.clone());
    let count = move |lanes: &[usize]| {
        c.fetch_add(1, Ordering::SeqCst);
        l.fetch_add(lanes.len(), Ordering::SeqCst);
    };
    let general = |inner: Arc<LaneWiseFn>| {
        let count = count.clone();
        move |ins: &LaneInputs<'_>, outs: &mut LaneOutputs<'_>| {
            count(ins.lanes());
            inner(ins, outs)
        }
    };
    kernels[i] = match kernels[i].clone() {
        Kernel::LaneWise(inner) => Kernel::lane_wise(general(inner)),
        Kernel::LaneWiseInPlace(inner) => Kernel::lane_wise_in_place(general(inner)),
        Kernel::LaneWiseDirect(inner, direct) => {
            let count = count.clone();
            let direct = move |call: &mut DirectCall<'_>| {
                count(call.lanes());
                direct(call)
            };
            Kernel::lane_wise_direct(general(inner), direct)
        }
        Kernel::Batched(_) => unreachable!("test kernels are lane-wise"),
    };
    (program, kernels, calls, lanes)
}

/// An executable for a conformance program.
pub fn executable<P: Into<Source>>(make: impl FnOnce(KernelNamer<'_>) -> P) -> Executable {
    let (program, kernels, _) = build(make);
    Executable::new(program, kernels).expect("conformance program builds")
}

/// A column of `i64` scalars.
pub fn i64s(values: &[i64]) -> Column {
    Column::from_scalars(values)
}

/// The `i64` scalars of a column.
pub fn as_i64s(c: &Column) -> Vec<i64> {
    c.as_slice::<i64>().expect("i64 column").to_vec()
}

/// The `bool` scalars of a column.
pub fn as_bools(c: &Column) -> Vec<bool> {
    c.as_slice::<bool>().expect("bool column").to_vec()
}

/// `f(x) = { x = kernel(x); x }`: one `i64` kernel whose output is its own input.
pub fn self_update(kernel: Kernel) -> Executable {
    let mut b = autobatch_runtime::ir::ProgramBuilder::new();
    let x = b.var("x", autobatch_runtime::ir::Type::I64);
    let f = b.function("f");
    b.signature(f, &[x], &[x]);
    let e = b.block(f, "entry");
    b.prim(e, &[x], &[x], KernelId::new(0), "x = kernel(x)");
    b.ret(e);
    let program = b.finish_with_entry(f).unwrap();
    Executable::new(program, vec![kernel]).unwrap()
}

/// Collatz step counts: a loop whose condition (`n != 1`) and inner branch (`n % 2 == 0`)
/// are both branches, whose edges pop the loop's registers.
#[autobatch_runtime::autobatch]
pub fn collatz(n: i64) -> i64 {
    let mut n = n;
    let mut steps = 0;
    while n != 1 {
        if n % 2 == 0 {
            n /= 2;
        } else {
            n = 3 * n + 1;
        }
        steps += 1;
    }
    steps
}

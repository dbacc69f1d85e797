//! Inlining, block simplification and copy propagation change how many blocks and ops the lanes
//! run, never what they compute: programs prepared with and without them agree bit for bit, in
//! both modes, with the reference interpreter (which runs the program as given) and with the
//! plain Rust functions.

mod common;

use autobatch_runtime::ir::{
    DType, HighProgram, KernelId, KernelRef, Op, Program, ProgramBuilder, Terminator, Type,
};
use autobatch_runtime::ndarray::{Array1, Array2};
use autobatch_runtime::{
    autobatch, Column, Config, Executable, InlineOptions, Kernel, Mode, Passes, Run, Source, Vector,
};
use autobatch_testkit::conformance::{self as programs, KernelNamer};
use common::{build, i64s};

/// Every combination worth telling apart.
fn variants() -> Vec<(&'static str, Passes)> {
    let inline = Some(InlineOptions::default());
    let inline_all = Some(InlineOptions {
        max_ops: usize::MAX,
    });
    vec![
        ("none", Passes::none()),
        (
            "inline",
            Passes {
                inline: inline.clone(),
                ..Passes::none()
            },
        ),
        (
            "simplify",
            Passes {
                simplify: true,
                ..Passes::none()
            },
        ),
        (
            "copies",
            Passes {
                copies: true,
                ..Passes::none()
            },
        ),
        (
            "inline, copies",
            Passes {
                inline: inline.clone(),
                copies: true,
                ..Passes::none()
            },
        ),
        (
            "default without copies",
            Passes {
                copies: false,
                ..Passes::default()
            },
        ),
        (
            "default without call copies",
            Passes {
                call_copies: false,
                ..Passes::default()
            },
        ),
        ("default", Passes::default()),
        (
            "inline everything",
            Passes {
                inline: inline_all,
                ..Passes::default()
            },
        ),
    ]
}

/// Floats by their bits, everything else by value.
fn fingerprint(columns: &[Column]) -> Vec<String> {
    columns
        .iter()
        .map(|c| match c {
            Column::F64(a) => format!("f64 {:?}", a.mapv(f64::to_bits)),
            Column::F32(a) => format!("f32 {:?}", a.mapv(f32::to_bits)),
            other => format!("{other:?}"),
        })
        .collect()
}

fn run(exe: &Executable, inputs: &[Column], mode: Mode) -> Run {
    exe.run(inputs, &Config::with_mode(mode))
        .unwrap_or_else(|e| panic!("{mode:?}: {e}"))
}

/// Prepares `program` every way and checks that every mode it supports gives the outputs of
/// the reference interpreter, bit for bit. Returns the full VM's steps without and with the
/// default passes.
fn check_agree<P: Clone + Into<Source>>(
    program: &P,
    kernels: &[Kernel],
    inputs: &[Column],
) -> (u64, u64) {
    let oracle = Executable::with_passes(program.clone(), kernels.to_vec(), &Passes::none())
        .unwrap()
        .run_reference(inputs, &Config::default())
        .unwrap();
    let expected = fingerprint(&oracle.outputs);
    let mut steps = (0, 0);
    for (name, passes) in variants() {
        let exe = Executable::with_passes(program.clone(), kernels.to_vec(), &passes)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let modes: &[Mode] = if exe.program().is_some() {
            &[Mode::FullVm, Mode::Stackless]
        } else {
            &[Mode::FullVm]
        };
        for &mode in modes {
            let got = run(&exe, inputs, mode);
            assert_eq!(
                fingerprint(&got.outputs),
                expected,
                "{name}, {mode:?}\n{}",
                exe.lowered()
            );
            if mode == Mode::FullVm && name == "none" {
                steps.0 = got.stats.steps;
            }
            if mode == Mode::FullVm && name == "default" {
                steps.1 = got.stats.steps;
            }
        }
    }
    steps
}

#[test]
fn conformance_programs_agree_however_prepared() {
    fn int<P: Clone + Into<Source>>(make: impl FnOnce(KernelNamer<'_>) -> P, inputs: Vec<Column>) {
        let (program, kernels, _) = build(make);
        check_agree(&program, &kernels, &inputs);
    }
    int(
        |k| programs::fibonacci_function_calls(k, DType::I64),
        vec![i64s(&[5, 6, 8, 9, 0, 1])],
    );
    for with_pops in [true, false] {
        let (program, kernels, _) =
            build(|k| programs::is_even_function_calls(k, DType::I64, with_pops));
        check_agree(&program, &kernels, &[i64s(&[0, 1, 2, 5, 6, 9])]);
    }
    int(
        programs::iota_sum,
        vec![i64s(&[12, -13, 100]), i64s(&[0, 0, 0])],
    );
    int(programs::gcd, vec![i64s(&[7, 12, 49]), i64s(&[9, 9, 56])]);
    int(programs::countdown, vec![i64s(&[3, 0, -1, 7])]);
    int(programs::fibonacci_sync, vec![i64s(&[3, 7, 4, 5])]);
    int(programs::single_if_program, vec![i64s(&[0, 5, -15])]);
    int(programs::constant_program, vec![i64s(&[5, 10])]);
    int(
        programs::synthetic_pattern_variable_program,
        vec![i64s(&[3, 4])],
    );
    int(programs::fibonacci_program, vec![i64s(&[5, 6, 8, 9])]);
    let state = Column::F32(autobatch_runtime::ndarray::Array2::from_shape_fn(
        (4, 3),
        |(i, j)| (i * 3 + j) as f32,
    ));
    int(programs::pea_nuts_program, vec![i64s(&[3, 0, 2, 5]), state]);
}

/// The IR's `helper_in_recursion` fixture with its kernels.
fn helper_in_recursion() -> (HighProgram, Vec<Kernel>) {
    let (program, kernels, _) = build(programs::helper_in_recursion);
    (program, kernels)
}

fn count_terminators(p: &Program, what: fn(&Terminator) -> bool) -> usize {
    p.blocks.iter().filter(|b| what(&b.term)).count()
}

#[test]
fn a_helper_inlined_into_a_recursive_function_agrees_and_saves_steps() {
    let (program, kernels) = helper_in_recursion();
    let inputs = [i64s(&[0, 1, 2, 5, 8, 3, 7])];
    let (before, after) = check_agree(&program, &kernels, &inputs);
    assert!(
        after < before,
        "full VM steps {after} (default) vs {before} (none)"
    );
    let exe = Executable::new(program, kernels).unwrap();
    let high = exe.program().unwrap();
    assert_eq!(
        high.function_named("h"),
        None,
        "h is inlined everywhere\n{high}"
    );
    let pushes = |t: &Terminator| matches!(t, Terminator::PushGoto { .. });
    assert_eq!(
        count_terminators(exe.lowered(), pushes),
        2,
        "only f's own calls"
    );
    let out = run(&exe, &inputs, Mode::FullVm);
    let fib2 = |n: i64| (0..=n.max(1) - 1).fold((2, 2), |(a, b), _| (b, a + b)).0;
    let expected: Vec<i64> = [0, 1, 2, 5, 8, 3, 7].map(fib2).to_vec();
    assert_eq!(out.outputs[0].as_slice::<i64>().unwrap(), expected);
}

/// `ln(exp(a) + exp(b))` without overflow, as in the NUTS tree.
#[autobatch]
fn log_add_exp(a: f64, b: f64) -> f64 {
    let hi = a.max(b);
    if hi == f64::NEG_INFINITY {
        hi
    } else {
        hi + ((a - hi).exp() + (b - hi).exp()).ln()
    }
}

/// A recursive tree whose leaves and inner nodes both call the helper.
#[autobatch]
fn soft_tree(depth: i64, x: f64) -> f64 {
    if depth <= 0 {
        return log_add_exp(x, -x);
    }
    let left = soft_tree(depth - 1, x * 0.75);
    let right = soft_tree(depth - 1, x - 0.5);
    log_add_exp(left, right) - 0.125 * right
}

/// A loop calling a helper that calls a helper.
#[autobatch]
fn smooth_sum(n: i64, x: f64) -> f64 {
    let mut acc = f64::NEG_INFINITY;
    let mut i = 0;
    while i < n {
        acc = soft_step(acc, x + (i as f64) * 0.1);
        i += 1;
    }
    acc
}

#[autobatch]
fn soft_step(acc: f64, v: f64) -> f64 {
    log_add_exp(acc, v * v) * 0.5
}

fn f64s(values: &[f64]) -> Column {
    Column::from_scalars(values)
}

#[test]
fn autobatched_float_helpers_agree_bit_for_bit() {
    let depths = [0i64, 1, 4, 2, 6, 3, 0, 5];
    let xs = [0.3, -1.7, 2.5, 0.0, 11.0, -40.0, f64::NEG_INFINITY, 1e-3];
    let exe = soft_tree::executable().unwrap();
    let (before, after) = check_agree(
        soft_tree::program().unwrap(),
        exe.kernels(),
        &[i64s(&depths), f64s(&xs)],
    );
    assert!(
        after < before,
        "full VM steps {after} (default) vs {before} (none)"
    );
    for mode in [Mode::FullVm, Mode::Stackless] {
        let out = soft_tree::batch(
            Array1::from(depths.to_vec()).view(),
            Array1::from(xs.to_vec()).view(),
            &Config::with_mode(mode),
        )
        .unwrap();
        for (i, (&d, &x)) in depths.iter().zip(&xs).enumerate() {
            assert_eq!(out[i].to_bits(), soft_tree(d, x).to_bits(), "lane {i}");
        }
    }
    let high = exe.program().unwrap();
    let calls: Vec<&str> = high
        .blocks
        .iter()
        .flat_map(|b| &b.ops)
        .filter_map(|op| match op {
            Op::Call(c) => Some(high.function(c.func).name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(calls, ["soft_tree", "soft_tree", "soft_tree"], "{high}");

    let ns = [0i64, 1, 3, 7, 2, 12];
    let xs = [0.5, -2.0, 3.25, 0.0, 100.0, -0.75];
    let exe = smooth_sum::executable().unwrap();
    check_agree(
        smooth_sum::program().unwrap(),
        exe.kernels(),
        &[i64s(&ns), f64s(&xs)],
    );
    // Both helpers are flattened into the loop: no calls and no return addresses are left.
    let high = exe.program().unwrap();
    assert_eq!(high.functions.len(), 1, "{high}");
    let pushes = |t: &Terminator| matches!(t, Terminator::PushGoto { .. });
    assert_eq!(count_terminators(exe.lowered(), pushes), 0);
    for mode in [Mode::FullVm, Mode::Stackless] {
        let out = smooth_sum::batch(
            Array1::from(ns.to_vec()).view(),
            Array1::from(xs.to_vec()).view(),
            &Config::with_mode(mode),
        )
        .unwrap();
        for (i, (&n, &x)) in ns.iter().zip(&xs).enumerate() {
            assert_eq!(out[i].to_bits(), smooth_sum(n, x).to_bits(), "lane {i}");
        }
    }
}

/// Copies of every kind: a parameter copied into a recursive call that overwrites it, a value
/// saved before a loop changes it, a loop-carried value, results copied once.
#[autobatch]
#[allow(clippy::let_and_return)] // `total` is a result copied once, on purpose
fn copy_tree(depth: i64, x: f64) -> f64 {
    if depth <= 0 {
        return x;
    }
    let saved = x;
    let mut acc = x;
    let mut i = 0;
    while i < depth {
        let before = acc;
        acc = acc * 0.5 + before * 0.25 + (i as f64);
        i += 1;
    }
    let left = copy_tree(depth - 1, saved);
    let kept = acc;
    let right = copy_tree(depth - 2, kept);
    let total = saved + left - right * 0.5 + acc;
    total
}

fn count_assigns(p: &Program) -> usize {
    p.blocks
        .iter()
        .flat_map(|b| &b.ops)
        .filter(|op| matches!(op, Op::Prim(prim) if prim.kernel == KernelRef::Assign))
        .count()
}

#[test]
fn copy_propagation_agrees_bit_for_bit_with_fewer_assignments() {
    let depths = [0i64, 1, 2, 5, 3, 7, 4, -1];
    let xs = [0.3, -1.7, 2.5, 0.0, 11.0, -40.0, 1e-3, 8.5];
    let exe = copy_tree::executable().unwrap();
    check_agree(
        copy_tree::program().unwrap(),
        exe.kernels(),
        &[i64s(&depths), f64s(&xs)],
    );
    for mode in [Mode::FullVm, Mode::Stackless] {
        let out = copy_tree::batch(
            Array1::from(depths.to_vec()).view(),
            Array1::from(xs.to_vec()).view(),
            &Config::with_mode(mode),
        )
        .unwrap();
        for (i, (&d, &x)) in depths.iter().zip(&xs).enumerate() {
            assert_eq!(out[i].to_bits(), copy_tree(d, x).to_bits(), "lane {i}");
        }
    }
    let without = Executable::with_passes(
        copy_tree::program().unwrap().clone(),
        exe.kernels().to_vec(),
        &Passes {
            copies: false,
            ..Passes::default()
        },
    )
    .unwrap();
    let (before, after) = (
        count_assigns(without.program().unwrap()),
        count_assigns(exe.program().unwrap()),
    );
    assert!(
        after < before,
        "assignments: {after} with copies, {before} without\n{}",
        exe.program().unwrap()
    );
}

/// A program built with its allocation (as `#[autobatch]` programs are) is re-allocated when
/// copies are propagated, so the prepared program carries the exact allocation of what runs:
/// `s` was `Temporary` (read only by the copy, in its own block) and is read in other blocks
/// once `t = s` is gone. (Propagation only ever needs `Temporary -> Register`, which share
/// storage in today's runtime, so a stale allocation would still compute the same values.)
#[test]
fn propagated_copies_are_reallocated_even_when_the_allocation_is_trusted() {
    let mut b = ProgramBuilder::new();
    let [x, r, s, t] = ["x", "r", "s", "t"].map(|name| b.var(name, Type::I64));
    let c = b.var("c", Type::BOOL);
    let f = b.function("f");
    b.signature(f, &[x], &[r]);
    let [entry, down, up] = ["entry", "down", "up"].map(|name| b.block(f, name));
    b.prim(entry, &[s], &[x], KernelId::new(0), "n - 1");
    b.assign(entry, &[t], &[s]);
    b.prim(entry, &[c], &[x], KernelId::new(1), "n > 0");
    b.branch(entry, c, down, up);
    b.prim(down, &[r], &[t], KernelId::new(2), "n - 2");
    b.ret(down);
    b.prim(up, &[r], &[t], KernelId::new(0), "n - 1");
    b.ret(up);
    let program = autobatch_runtime::ir::passes::allocate(&b.finish(f).unwrap());
    assert_eq!(
        program.var(s).alloc,
        autobatch_runtime::ir::Allocation::Temporary
    );
    let kernels = ["n - 1", "n > 0", "n - 2"].map(common::kernel_for).to_vec();
    let exe = Executable::with_allocations(program, kernels).unwrap();
    let high = exe.program().unwrap();
    assert_eq!(count_assigns(high), 0, "{high}");
    assert_eq!(
        high.var(s).alloc,
        autobatch_runtime::ir::Allocation::Register
    );
    let inputs = [i64s(&[3, -2, 0, 9, 1])];
    let expected = fingerprint(
        &exe.run_reference(&inputs, &Config::default())
            .unwrap()
            .outputs,
    );
    for mode in [Mode::FullVm, Mode::Stackless] {
        assert_eq!(
            fingerprint(&run(&exe, &inputs, mode).outputs),
            expected,
            "{mode:?}"
        );
    }
}

/// A vector parameter passed straight through to recursive calls (`v.clone()` is a copy the
/// pass reads through): lowered, each call's argument copy pushes `v` onto itself next to real
/// copies, which the runtime does without moving rows.
#[autobatch]
fn scaled_sum(depth: i64, v: Vector, x: f64) -> f64 {
    if depth <= 0 {
        return x + v.sum();
    }
    let a = scaled_sum(depth - 1, v.clone(), x * 0.5);
    let b = scaled_sum(depth - 2, v.clone(), a);
    a - 0.25 * b + v.dot(&v)
}

#[test]
fn a_vector_passed_through_to_recursive_calls_agrees() {
    let exe = scaled_sum::executable().unwrap();
    let self_push = exe.lowered().blocks.iter().flat_map(|b| &b.ops).any(|op| {
        matches!(op, Op::Prim(prim) if prim.kernel == KernelRef::Assign
            && prim.outs.len() > 1
            && prim.outs.iter().any(|v| prim.ins.contains(v)))
    });
    assert!(self_push, "{}", exe.lowered());
    let depths = [0i64, 3, 1, 6, 2, 5];
    let xs = [0.5, -1.25, 3.0, 0.0, 7.5, -0.125];
    let rows = Array2::from_shape_fn((depths.len(), 4), |(i, j)| (i * 4 + j) as f64 * 0.1 - 0.7);
    let inputs = [i64s(&depths), Column::F64(rows.clone()), f64s(&xs)];
    check_agree(scaled_sum::program().unwrap(), exe.kernels(), &inputs);
    for mode in [Mode::FullVm, Mode::Stackless] {
        let out = scaled_sum::batch(
            Array1::from(depths.to_vec()).view(),
            rows.view(),
            Array1::from(xs.to_vec()).view(),
            &Config::with_mode(mode),
        )
        .unwrap();
        for (i, (&d, &x)) in depths.iter().zip(&xs).enumerate() {
            let v = Vector::from(rows.row(i).to_vec());
            assert_eq!(out[i].to_bits(), scaled_sum(d, v, x).to_bits(), "lane {i}");
        }
    }
}

/// `v, w, a, b = (w, v, b, a)` in a loop: an assignment that permutes its own variables (vector
/// rows held by handle, and scalars) must read every input before it writes any output.
#[test]
fn assignments_that_permute_their_own_variables_agree() {
    let mut b = ProgramBuilder::new();
    let n = b.var("n", Type::I64);
    let [v, w] = ["v", "w"].map(|name| b.var(name, Type::vector(DType::F64)));
    let [x, y] = ["x", "y"].map(|name| b.var(name, Type::I64));
    let c = b.var("c", Type::BOOL);
    let f = b.function("f");
    b.signature(f, &[n, v, w, x, y], &[v, w, x, y]);
    let [entry, head, body, exit] = ["entry", "head", "body", "exit"].map(|name| b.block(f, name));
    b.goto(entry, head);
    b.prim(head, &[c], &[n], KernelId::new(0), "n > 0");
    b.branch(head, c, body, exit);
    b.assign(body, &[v, w, x, y], &[w, v, y, x]);
    b.prim(body, &[n], &[n], KernelId::new(1), "n - 1");
    b.goto(body, head);
    b.ret(exit);
    let program = b.finish(f).unwrap();
    let kernels = ["n > 0", "n - 1"].map(common::kernel_for).to_vec();
    let rows = |k: f64| Array2::from_shape_fn((5, 3), |(i, j)| k + (i * 3 + j) as f64);
    let inputs = [
        i64s(&[0, 1, 2, 3, 6]),
        Column::F64(rows(0.5)),
        Column::F64(rows(-100.0)),
        i64s(&[1, 2, 3, 4, 5]),
        i64s(&[-1, -2, -3, -4, -5]),
    ];
    check_agree(&program, &kernels, &inputs);
    let out = run(
        &Executable::new(program, kernels).unwrap(),
        &inputs,
        Mode::FullVm,
    );
    assert_eq!(out.outputs[2].as_slice::<i64>().unwrap(), [1, -2, 3, -4, 5]);
}

/// Preparing an executable verifies the program once, whichever passes run and whether its
/// allocations are computed or trusted (the IR pipeline verifies on entry; every pass takes
/// and returns verified programs).
#[test]
fn an_executable_verifies_its_program_once() {
    use autobatch_runtime::ir::verify::verifications;
    let (program, kernels, _) = build(|k| programs::fibonacci_function_calls(k, DType::I64));
    for (name, passes) in variants() {
        let before = verifications();
        Executable::with_passes(program.clone(), kernels.clone(), &passes).unwrap();
        assert_eq!(verifications() - before, 1, "{name}");
    }
    let before = verifications();
    Executable::with_allocations(program.clone(), kernels.clone()).unwrap();
    assert_eq!(verifications() - before, 1, "with_allocations");
    let (low, kernels, _) = build(programs::fibonacci_program);
    let before = verifications();
    Executable::new(low, kernels).unwrap();
    assert_eq!(verifications() - before, 1, "a hand-lowered program");
}

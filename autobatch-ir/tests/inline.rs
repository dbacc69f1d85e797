//! Inlining: which calls are copied, the names copies get, what is dropped and kept, and
//! that inlined programs verify and lower.

use autobatch_ir::passes::{allocate, inline_calls, lower, InlineOptions};
use autobatch_ir::{
    verify_high, Block, DType, FuncId, HighProgram, KernelId, KernelRef, Op, Program,
    ProgramBuilder, Terminator, Type,
};
use autobatch_testkit::conformance::{self, numbering};

fn inlined(p: &HighProgram, options: &InlineOptions) -> HighProgram {
    let before = p.clone();
    let out = inline_calls(p, options);
    assert_eq!(*p, before, "inline_calls must not modify its input");
    verify_high(out.clone().into_program())
        .unwrap_or_else(|e| panic!("inlined program does not verify:\n{e}\n{out}"));
    lower(&allocate(&out)).unwrap_or_else(|e| panic!("inlined program does not lower: {e}"));
    out
}

fn calls_in(p: &Program, func: &str) -> Vec<String> {
    let f = p.function(p.function_named(func).unwrap());
    f.blocks
        .iter()
        .flat_map(|&b| &p.block(b).ops)
        .filter_map(|op| match op {
            Op::Call(c) => Some(p.function(c.func).name.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_helper_called_twice_from_a_recursive_function_is_copied_twice() {
    let p = conformance::helper_in_recursion(&mut numbering());
    let out = inlined(&p, &InlineOptions::default());
    assert_eq!(calls_in(&out, "f"), ["f", "f"]);
    assert_eq!(calls_in(&out, "main"), ["f"]);
    assert_eq!(out.function_named("h"), None, "every call to h was inlined");
    for name in ["h.a", "h.b", "h.s", "a", "b", "s"] {
        assert_eq!(out.var_named(name), None, "{name} was only h's");
    }
    for name in [
        "a@f.1",
        "b@f.1",
        "s@f.2",
        "f.base",
        "h.entry@f.2",
        "h.exit@f.1",
    ] {
        assert!(
            out.var_named(name).is_some() || out.block_named(name).is_some(),
            "{name} in\n{out}"
        );
    }
    let text = out.to_string();
    let expected = "\
  f.recur:
    nm1 = prim(n) by n - 1
    r1 = call(f, nm1)
    nm2 = prim(n) by n - 2
    r2 = call(f, nm2)
    a@f.1, b@f.1 = prim(r1, r2) by assign
    goto(h.entry@f.1)
  h.entry@f.1:
    s@f.1 = prim(a@f.1, b@f.1) by x + y
    goto(h.exit@f.1)
  h.exit@f.1:
    ans = prim(s@f.1) by assign
    return
  f.base:
    one = prim() by 1
    a@f.2, b@f.2 = prim(one, one) by assign
    goto(h.entry@f.2)
  h.entry@f.2:
    s@f.2 = prim(a@f.2, b@f.2) by x + y
    goto(h.exit@f.2)
  h.exit@f.2:
    ans = prim(s@f.2) by assign
    return
";
    assert!(text.contains(expected), "{text}");
    // The copies keep the kernels.
    let copy = out.block(out.block_named("h.entry@f.2").unwrap());
    assert!(matches!(&copy.ops[0], Op::Prim(p) if p.kernel == KernelRef::User(KernelId::new(0))));
}

/// `main -> g -> h`, both small: everything lands in `main`, `g` and `h` are dropped.
#[test]
fn nested_helpers_flatten_completely() {
    let mut b = ProgramBuilder::new();
    let [x, y, gx, gy, gt, hx, hy] =
        ["x", "y", "g.x", "g.y", "g.t", "h.x", "h.y"].map(|n| b.var(n, Type::I64));
    let c = b.var("h.c", Type::BOOL);
    let h = b.function("h");
    b.signature(h, &[hx], &[hy]);
    let he = b.block(h, "h.entry");
    let ht = b.block(h, "h.then");
    let hf = b.block(h, "h.else");
    b.prim(he, &[c], &[hx], KernelId::new(0), "n > 1");
    b.branch(he, c, ht, hf);
    b.prim(ht, &[hy], &[hx], KernelId::new(1), "n - 1");
    b.ret(ht);
    b.prim(hf, &[hy], &[hx], KernelId::new(2), "n - 2");
    b.ret(hf);
    let g = b.function("g");
    b.signature(g, &[gx], &[gy]);
    let ge = b.block(g, "g.entry");
    b.call(ge, h, &[gx], &[gt]);
    b.call(ge, h, &[gt], &[gy]);
    b.ret(ge);
    let main = b.function("main");
    b.signature(main, &[x], &[y]);
    let me = b.block(main, "main.entry");
    b.call(me, g, &[x], &[y]);
    b.ret(me);
    let p = b.finish(main).unwrap();
    let out = inlined(&p, &InlineOptions::default());
    assert_eq!(out.functions.len(), 1);
    assert_eq!(out.main_function().name, "main");
    assert!(calls_in(&out, "main").is_empty());
    // Three levels of copies: h into g (twice), then g into main.
    for name in ["h.x@g.1@main.1", "h.y@g.2@main.1", "g.t@main.1"] {
        assert!(out.var_named(name).is_some(), "{name} in\n{out}");
    }
    for name in ["h.then@g.2@main.1", "h.exit@g.1@main.1", "g.exit@main.1"] {
        assert!(out.block_named(name).is_some(), "{name} in\n{out}");
    }
    assert_eq!(
        out.vars.len(),
        1 + 2 + 3 + 2 * 3,
        "pc, x, y, g's 3 and h's 3 twice"
    );

    // A limit that h fits and the flattened g does not: h is inlined into g only.
    // Per call of h: the argument assign, h's three ops, the result assign.
    let ops_of_g = 2 * (1 + 3 + 1);
    let out = inlined(
        &p,
        &InlineOptions {
            max_ops: ops_of_g - 1,
        },
    );
    assert_eq!(calls_in(&out, "main"), ["g"]);
    assert!(calls_in(&out, "g").is_empty());
    assert_eq!(out.function_named("h"), None);
    let out = inlined(&p, &InlineOptions { max_ops: ops_of_g });
    assert_eq!(out.functions.len(), 1);
}

#[test]
fn recursion_is_never_inlined() {
    for p in [
        conformance::fibonacci_function_calls(&mut numbering(), DType::I64),
        conformance::is_even_function_calls(&mut numbering(), DType::I64, true),
        conformance::gcd(&mut numbering()),
        conformance::iota_sum(&mut numbering()),
    ] {
        let out = inlined(
            &p,
            &InlineOptions {
                max_ops: usize::MAX,
            },
        );
        assert_eq!(
            out, p,
            "nothing to inline: the program comes back unchanged"
        );
    }
    // The entry function is never inlined, even into itself through a helper: `main`
    // calls `g`, which calls `main` back (so both are recursive).
    let mut b = ProgramBuilder::new();
    let x = b.var("x", Type::I64);
    let c = b.var("c", Type::BOOL);
    let g = b.function("g");
    let main = b.function("main");
    b.signature(g, &[x], &[x]);
    b.signature(main, &[x], &[x]);
    let ge = b.block(g, "g.entry");
    b.call(ge, main, &[x], &[x]);
    b.ret(ge);
    let me = b.block(main, "main.entry");
    let again = b.block(main, "main.again");
    let done = b.block(main, "main.done");
    b.prim(me, &[c], &[x], KernelId::new(0), "n > 0");
    b.branch(me, c, again, done);
    b.prim(again, &[x], &[x], KernelId::new(1), "n - 1");
    b.call(again, g, &[x], &[x]);
    b.ret(again);
    b.ret(done);
    let p = b.finish(main).unwrap();
    assert_eq!(inline_calls(&p, &InlineOptions::default()), p);
}

#[test]
fn a_zero_limit_inlines_nothing() {
    let p = conformance::helper_in_recursion(&mut numbering());
    let out = inlined(&p, &InlineOptions { max_ops: 0 });
    assert_eq!(out, p);
}

/// Copies never take a name in use: a clash gets a `#2` suffix.
#[test]
fn copies_get_fresh_names() {
    let mut b = ProgramBuilder::new();
    let [x, y, a, taken] = ["x", "y", "a", "a@main.1"].map(|n| b.var(n, Type::I64));
    let h = b.function("h");
    b.signature(h, &[a], &[a]);
    let he = b.block(h, "h.entry");
    b.ret(he);
    let main = b.function("main");
    b.signature(main, &[x], &[y]);
    let me = b.block(main, "h.exit@main.1");
    b.prim(me, &[taken], &[x], KernelId::new(0), "n - 1");
    b.call(me, h, &[taken], &[y]);
    b.ret(me);
    let p = b.finish(main).unwrap();
    let out = inlined(&p, &InlineOptions::default());
    assert!(out.var_named("a@main.1#2").is_some(), "{out}");
    assert!(out.block_named("h.exit@main.1#2").is_some(), "{out}");
    // `a` is h's (dropped); the caller's `a@main.1` stays.
    assert_eq!(out.var_named("a"), None);
    assert!(out.var_named("a@main.1").is_some());
}

/// Functions no call reached in the input are kept (and their callees' copies made).
#[test]
fn uncalled_functions_are_kept() {
    let mut b = ProgramBuilder::new();
    let [x, y, a] = ["x", "y", "a"].map(|n| b.var(n, Type::I64));
    let h = b.function("h");
    b.signature(h, &[a], &[a]);
    let he = b.block(h, "h.entry");
    b.ret(he);
    let unused = b.function("unused");
    b.signature(unused, &[x], &[y]);
    let ue = b.block(unused, "unused.entry");
    b.call(ue, h, &[x], &[y]);
    b.ret(ue);
    let main = b.function("main");
    b.signature(main, &[x], &[x]);
    let me = b.block(main, "main.entry");
    b.ret(me);
    let p = b.finish(main).unwrap();
    let out = inlined(&p, &InlineOptions::default());
    let names: Vec<&str> = out.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["unused", "main"]);
    assert_eq!(out.main, FuncId::new(1));
    assert!(calls_in(&out, "unused").is_empty());
}

/// Inlining takes verified high-level programs: a lowered or an invalid program never gets
/// there (it is not a `HighProgram`).
#[test]
fn lowered_and_invalid_programs_are_not_high_level_programs() {
    let low = conformance::fibonacci_program(&mut numbering());
    assert!(verify_high(low.into_program()).is_err());
    let mut broken: Program = conformance::gcd(&mut numbering()).into_program();
    broken.blocks[Block::new(0)].term = Terminator::Goto(Block::new(999));
    assert!(verify_high(broken).is_err());
}

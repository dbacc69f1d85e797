//! The reference's conformance programs (docs/reference-semantics.md, "Conformance programs"),
//! built with the builder, and a few more programs that the IR's and the runtime's tests of the passes share.
//!
//! Each constructor takes a `kernel` callback that maps a kernel's source text (for example
//! `"n > 1"`) to the [`KernelId`] the caller wants it to have: IR tests number them, runtime
//! tests map each source text to an implementation. [`KERNEL_SOURCES`] lists every source text
//! used here.

use autobatch_ir::{
    Block, DType, FuncId, HighProgram, KernelId, LoweredProgram, ProgramBuilder, Type, Var,
};

/// Maps a kernel's source text to its id.
pub type KernelNamer<'a> = &'a mut dyn FnMut(&str) -> KernelId;

/// Every kernel source text the conformance programs use (their meaning is the Rust expression
/// over the op's inputs in order; `choose_depth` and `step_state` are the pea-nuts callbacks).
pub const KERNEL_SOURCES: &[&str] = &[
    "1",
    "2",
    "0",
    "n > 1",
    "n - 1",
    "n - 2",
    "x + y",
    "n < 1",
    "true",
    "false",
    "(1, (2, 3))",
    "((4, 5), 6)",
    "(x + 1, (x + 2, x + 3))",
    "count > 0",
    "count - 1",
    "choose_depth(count)",
    "depth > 0",
    "depth - 1",
    "state + 1",
    "step_state(state)",
    "n > 0",
    "acc + n",
    "b == 0",
    "a % b",
    "acc + 2",
    "n <= 1",
];

/// A [`KernelNamer`] that numbers source texts in order of first use.
pub fn numbering() -> impl FnMut(&str) -> KernelId {
    let mut seen: Vec<String> = Vec::new();
    move |src: &str| {
        let i = seen.iter().position(|s| s == src).unwrap_or_else(|| {
            seen.push(src.to_string());
            seen.len() - 1
        });
        KernelId::new(i)
    }
}

struct Fixture<'a> {
    b: ProgramBuilder,
    k: KernelNamer<'a>,
}

impl<'a> Fixture<'a> {
    fn new(k: KernelNamer<'a>) -> Self {
        Fixture {
            b: ProgramBuilder::new(),
            k,
        }
    }

    fn prim(&mut self, block: Block, outs: &[Var], ins: &[Var], src: &str) {
        let id = (self.k)(src);
        self.b.prim(block, outs, ins, id, src);
    }

    fn vars(&mut self, names: &[&str], ty: Type) -> Vec<Var> {
        names.iter().map(|n| self.b.var(n, ty.clone())).collect()
    }
}

/// `answer = 1; answer = 2; return answer` with `answer` as the input: `5 -> 2`.
pub fn constant_program(kernel: KernelNamer<'_>) -> HighProgram {
    let mut f = Fixture::new(kernel);
    let answer = f.b.var("answer", Type::I64);
    let main = f.b.function("main");
    f.b.signature(main, &[answer], &[answer]);
    let e = f.b.block(main, "entry");
    f.prim(e, &[answer], &[], "1");
    f.prim(e, &[answer], &[], "2");
    f.b.ret(e);
    f.b.finish(main).expect("constant_program")
}

/// `if input > 1 { 2 } else { 0 }`: `[0, 5, -15] -> [0, 2, 0]`.
pub fn single_if_program(kernel: KernelNamer<'_>) -> HighProgram {
    let mut f = Fixture::new(kernel);
    let input = f.b.var("input", Type::I64);
    let cond = f.b.var("cond", Type::BOOL);
    let answer = f.b.var("answer", Type::I64);
    let main = f.b.function("main");
    f.b.signature(main, &[input], &[answer]);
    let entry = f.b.block(main, "entry");
    let then_ = f.b.block(main, "then");
    let else_ = f.b.block(main, "else");
    f.prim(entry, &[cond], &[input], "n > 1");
    f.b.branch(entry, cond, then_, else_);
    f.prim(then_, &[answer], &[], "2");
    f.b.ret(then_);
    f.prim(else_, &[answer], &[], "0");
    f.b.ret(else_);
    f.b.finish(main).expect("single_if_program")
}

/// Outputs `one, three, four, five, six` (flattened from `((one, three), four, (five, six))`):
/// `() -> (1, 3, 4, 5, 6)`.
pub fn synthetic_pattern_program(kernel: KernelNamer<'_>) -> HighProgram {
    let mut f = Fixture::new(kernel);
    let v = f.vars(&["one", "three", "four", "five", "six"], Type::I64);
    let (one, three, four, five, six) = (v[0], v[1], v[2], v[3], v[4]);
    let main = f.b.function("main");
    f.b.signature(main, &[], &[one, three, four, five, six]);
    let e = f.b.block(main, "entry");
    f.prim(e, &[one, five, three], &[], "(1, (2, 3))");
    f.prim(e, &[four, five, six], &[], "((4, 5), 6)");
    f.b.ret(e);
    f.b.finish(main).expect("synthetic_pattern_program")
}

/// `many = (x + 1, (x + 2, x + 3)); (one, two) = many; return two`: `5 -> (7, 8)`.
pub fn synthetic_pattern_variable_program(kernel: KernelNamer<'_>) -> HighProgram {
    let mut f = Fixture::new(kernel);
    let pair = Type::Tuple(vec![Type::I64, Type::I64]);
    let inp = f.b.var("inp", Type::I64);
    let many = f.b.var("many", Type::Tuple(vec![Type::I64, pair.clone()]));
    let one = f.b.var("one", Type::I64);
    let two = f.b.var("two", pair);
    let main = f.b.function("main");
    f.b.signature(main, &[inp], &[two]);
    let e = f.b.block(main, "entry");
    f.prim(e, &[many], &[inp], "(x + 1, (x + 2, x + 3))");
    f.b.assign(e, &[one, two], &[many]);
    f.b.ret(e);
    f.b.finish(main)
        .expect("synthetic_pattern_variable_program")
}

/// The reference's hand-lowered fibonacci (`fib(0) = fib(1) = 1`), exactly as in
/// `test_programs.fibonacci_program`, with an explicit `exit` block as the outer return address.
pub fn fibonacci_program(kernel: KernelNamer<'_>) -> LoweredProgram {
    let mut f = Fixture::new(kernel);
    let n = f.b.var("n", Type::I64);
    let cond = f.b.var("cond", Type::BOOL);
    let v = f.vars(&["nm1", "fibm1", "nm2", "fibm2", "ans"], Type::I64);
    let (nm1, fibm1, nm2, fibm2, ans) = (v[0], v[1], v[2], v[3], v[4]);
    let main = f.b.function("main");
    f.b.signature(main, &[n], &[ans]);
    let names = [
        "entry",
        "enter_fib",
        "recur1",
        "recur2",
        "recur3",
        "finish",
        "exit",
    ];
    let bl: Vec<Block> = names.iter().map(|s| f.b.block(main, s)).collect();
    let (entry, enter_fib, recur1, recur2, recur3, finish, exit) =
        (bl[0], bl[1], bl[2], bl[3], bl[4], bl[5], bl[6]);
    f.b.push_goto(entry, exit, enter_fib);
    f.prim(enter_fib, &[cond], &[n], "n > 1");
    f.b.branch(enter_fib, cond, recur1, finish);
    f.b.pop(recur1, &[cond]);
    f.prim(recur1, &[nm1], &[n], "n - 1");
    f.b.assign(recur1, &[n], &[nm1]);
    f.b.pop(recur1, &[nm1]);
    f.b.push_goto(recur1, recur2, enter_fib);
    f.b.assign(recur2, &[fibm1], &[ans]);
    f.b.pop(recur2, &[ans]);
    f.prim(recur2, &[nm2], &[n], "n - 2");
    f.b.pop(recur2, &[n]);
    f.b.assign(recur2, &[n], &[nm2]);
    f.b.pop(recur2, &[nm2]);
    f.b.push_goto(recur2, recur3, enter_fib);
    f.b.assign(recur3, &[fibm2], &[ans]);
    f.b.pop(recur3, &[ans]);
    f.prim(recur3, &[ans], &[fibm1, fibm2], "x + y");
    f.b.pop(recur3, &[fibm1, fibm2]);
    f.b.indirect_goto(recur3);
    f.b.pop(finish, &[n, cond]);
    f.prim(finish, &[ans], &[], "1");
    f.b.indirect_goto(finish);
    f.b.ret(exit);
    f.b.finish_lowered(main).expect("fibonacci_program")
}

/// `test_programs.fibonacci_function_calls`: fib through `call`s, entry wrapped in `main`.
pub fn fibonacci_function_calls(kernel: KernelNamer<'_>, dtype: DType) -> HighProgram {
    let mut f = Fixture::new(kernel);
    let t = Type::scalar(dtype);
    let n = f.b.var("n", t.clone());
    let n1 = f.b.var("n1", t.clone());
    let cond = f.b.var("cond", Type::BOOL);
    let v = f.vars(&["nm1", "fibm1", "nm2", "fibm2", "ans"], t);
    let (nm1, fibm1, nm2, fibm2, ans) = (v[0], v[1], v[2], v[3], v[4]);
    let fib = f.b.function("fibonacci");
    f.b.signature(fib, &[n], &[ans]);
    let enter = f.b.block(fib, "enter_fib");
    let recur = f.b.block(fib, "recur");
    let finish = f.b.block(fib, "finish");
    f.prim(enter, &[cond], &[n], "n > 1");
    f.b.branch(enter, cond, recur, finish);
    f.prim(recur, &[nm1], &[n], "n - 1");
    f.b.call(recur, fib, &[nm1], &[fibm1]);
    f.prim(recur, &[nm2], &[n], "n - 2");
    f.b.call(recur, fib, &[nm2], &[fibm2]);
    f.prim(recur, &[ans], &[fibm1, fibm2], "x + y");
    f.b.ret(recur);
    f.prim(finish, &[ans], &[], "1");
    f.b.ret(finish);
    let main = f.b.function("main");
    f.b.signature(main, &[n1], &[ans]);
    let e = f.b.block(main, "main_entry");
    f.b.call(e, fib, &[n1], &[ans]);
    f.b.ret(e);
    f.b.finish(main).expect("fibonacci_function_calls")
}

/// `test_programs.is_even_function_calls`: mutual recursion; `with_pops` keeps the reference's
/// explicit pops (the allocation table differs with and without them).
pub fn is_even_function_calls(
    kernel: KernelNamer<'_>,
    dtype: DType,
    with_pops: bool,
) -> HighProgram {
    let mut f = Fixture::new(kernel);
    let t = Type::scalar(dtype);
    let n = f.b.var("n", t.clone());
    let n1 = f.b.var("n1", t.clone());
    let cond = f.b.var("cond", Type::BOOL);
    let nm1 = f.b.var("nm1", t);
    let ans = f.b.var("ans", Type::BOOL);
    let is_even = f.b.function("is_even");
    let is_odd = f.b.function("is_odd");
    for (func, other, name, base) in [
        (is_even, is_odd, "is_even", "true"),
        (is_odd, is_even, "is_odd", "false"),
    ] {
        f.b.signature(func, &[n], &[ans]);
        let enter = f.b.block(func, &format!("enter_{name}"));
        let finish = f.b.block(func, &format!("finish_{name}"));
        let recur = f.b.block(func, &format!("recur_{name}"));
        f.prim(enter, &[cond], &[n], "n < 1");
        f.b.branch(enter, cond, finish, recur);
        if with_pops {
            f.b.pop(finish, &[n, cond]);
        }
        f.prim(finish, &[ans], &[], base);
        f.b.ret(finish);
        if with_pops {
            f.b.pop(recur, &[cond]);
        }
        f.prim(recur, &[nm1], &[n], "n - 1");
        if with_pops {
            f.b.pop(recur, &[n]);
        }
        f.b.call(recur, other, &[nm1], &[ans]);
        if with_pops {
            f.b.pop(recur, &[nm1]);
        }
        f.b.ret(recur);
    }
    let main = f.b.function("main");
    f.b.signature(main, &[n1], &[ans]);
    let e = f.b.block(main, "main_entry");
    f.b.call(e, is_even, &[n1], &[ans]);
    f.b.ret(e);
    f.b.finish(main).expect("is_even_function_calls")
}

/// `test_programs.pea_nuts_program`, hand-lowered, with an `f32` vector state; its outer loop is
/// a backward `goto`. Inputs `count, state`; output `state`.
pub fn pea_nuts_program(kernel: KernelNamer<'_>) -> LoweredProgram {
    let mut f = Fixture::new(kernel);
    let state_t = Type::vector(DType::F32);
    let v = f.vars(&["count", "ctm1", "depth", "dm1"], Type::I64);
    let (count, ctm1, depth, dm1) = (v[0], v[1], v[2], v[3]);
    let c = f.vars(&["cond", "cond1"], Type::BOOL);
    let (cond, cond1) = (c[0], c[1]);
    let s = f.vars(&["state", "state1", "state2", "state3", "ans"], state_t);
    let (state, state1, state2, state3, ans) = (s[0], s[1], s[2], s[3], s[4]);
    let main = f.b.function("main");
    f.b.signature(main, &[count, state], &[state]);
    let names = [
        "entry",
        "top_body",
        "finish_body",
        "enter_recur",
        "recur_body_1",
        "recur_body_2",
        "recur_body_3",
        "recur_base_case",
        "exit",
    ];
    let bl: Vec<Block> = names.iter().map(|s| f.b.block(main, s)).collect();
    let (entry, top, finish_body, enter_recur, body1, body2, body3, base, exit) = (
        bl[0], bl[1], bl[2], bl[3], bl[4], bl[5], bl[6], bl[7], bl[8],
    );
    f.prim(entry, &[cond], &[count], "count > 0");
    f.b.branch(entry, cond, top, exit);
    f.b.pop(top, &[cond]);
    f.prim(top, &[ctm1], &[count], "count - 1");
    f.b.pop(top, &[count]);
    f.b.assign(top, &[count], &[ctm1]);
    f.b.pop(top, &[ctm1]);
    f.prim(top, &[depth], &[count], "choose_depth(count)");
    f.b.assign(top, &[depth, state], &[depth, state]);
    f.b.pop(top, &[depth, state]);
    f.b.push_goto(top, finish_body, enter_recur);
    f.b.assign(finish_body, &[state], &[ans]);
    f.b.pop(finish_body, &[ans]);
    f.b.goto(finish_body, entry);
    f.prim(enter_recur, &[cond1], &[depth], "depth > 0");
    f.b.branch(enter_recur, cond1, body1, base);
    f.b.pop(body1, &[cond1]);
    f.prim(body1, &[dm1], &[depth], "depth - 1");
    f.b.pop(body1, &[depth]);
    f.b.assign(body1, &[depth, state], &[dm1, state]);
    f.b.pop(body1, &[state]);
    f.b.push_goto(body1, body2, enter_recur);
    f.b.assign(body2, &[state1], &[ans]);
    f.b.pop(body2, &[ans]);
    f.prim(body2, &[state2], &[state1], "state + 1");
    f.b.pop(body2, &[state1]);
    f.b.assign(body2, &[depth, state], &[dm1, state2]);
    f.b.pop(body2, &[dm1, state2]);
    f.b.push_goto(body2, body3, enter_recur);
    f.b.assign(body3, &[state3], &[ans]);
    f.b.pop(body3, &[ans]);
    f.prim(body3, &[ans], &[state3], "state + 1");
    f.b.pop(body3, &[state3]);
    f.b.indirect_goto(body3);
    f.b.pop(base, &[cond1, depth]);
    f.prim(base, &[ans], &[state], "step_state(state)");
    f.b.pop(base, &[state]);
    f.b.indirect_goto(base);
    f.b.ret(exit);
    f.b.finish_lowered(main).expect("pea_nuts_program")
}

fn entry_wrapped(f: Fixture<'_>, entry: FuncId, what: &str) -> HighProgram {
    f.b.finish_with_entry(entry)
        .unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// Self tail recursion: `iota_sum(n, acc) = if n > 0 { iota_sum(n - 1, acc + n) } else { acc }`:
/// `([12, -13, 100], [0, 0, 0]) -> [78, 0, 5050]`.
pub fn iota_sum(kernel: KernelNamer<'_>) -> HighProgram {
    let mut f = Fixture::new(kernel);
    let v = f.vars(&["n", "acc", "nm1", "acc1", "ans"], Type::I64);
    let (n, acc, nm1, acc1, ans) = (v[0], v[1], v[2], v[3], v[4]);
    let cond = f.b.var("cond", Type::BOOL);
    let func = f.b.function("iota_sum");
    f.b.signature(func, &[n, acc], &[ans]);
    let enter = f.b.block(func, "enter_iota_sum");
    let recur = f.b.block(func, "recur");
    let base = f.b.block(func, "base");
    f.prim(enter, &[cond], &[n], "n > 0");
    f.b.branch(enter, cond, recur, base);
    f.prim(recur, &[nm1], &[n], "n - 1");
    f.prim(recur, &[acc1], &[acc, n], "acc + n");
    f.b.call(recur, func, &[nm1, acc1], &[ans]);
    f.b.ret(recur);
    f.b.assign(base, &[ans], &[acc]);
    f.b.ret(base);
    entry_wrapped(f, func, "iota_sum")
}

/// Self tail call with swapped arguments: `gcd(a, b) = if b == 0 { a } else { gcd(b, a % b) }`:
/// `([7, 12, 49], [9, 9, 56]) -> [1, 3, 7]`.
pub fn gcd(kernel: KernelNamer<'_>) -> HighProgram {
    let mut f = Fixture::new(kernel);
    let v = f.vars(&["a", "b", "r", "ans"], Type::I64);
    let (a, b, r, ans) = (v[0], v[1], v[2], v[3]);
    let cond = f.b.var("cond", Type::BOOL);
    let func = f.b.function("gcd");
    f.b.signature(func, &[a, b], &[ans]);
    let enter = f.b.block(func, "enter_gcd");
    let base = f.b.block(func, "base");
    let recur = f.b.block(func, "recur");
    f.prim(enter, &[cond], &[b], "b == 0");
    f.b.branch(enter, cond, base, recur);
    f.b.assign(base, &[ans], &[a]);
    f.b.ret(base);
    f.prim(recur, &[r], &[a, b], "a % b");
    f.b.call(recur, func, &[b, r], &[ans]);
    f.b.ret(recur);
    entry_wrapped(f, func, "gcd")
}

/// A `while` loop whose header precedes its body:
/// `countdown(n) { acc = 0; while n > 0 { n = n - 1; acc = acc + 2 } acc }`: `[3, 0, -1] -> [6, 0, 0]`.
pub fn countdown(kernel: KernelNamer<'_>) -> HighProgram {
    let mut f = Fixture::new(kernel);
    let v = f.vars(&["n", "acc"], Type::I64);
    let (n, acc) = (v[0], v[1]);
    let cond = f.b.var("cond", Type::BOOL);
    let func = f.b.function("countdown");
    f.b.signature(func, &[n], &[acc]);
    let entry = f.b.block(func, "entry");
    let head = f.b.block(func, "loop_head");
    let body = f.b.block(func, "loop_body");
    let exit = f.b.block(func, "loop_exit");
    f.prim(entry, &[acc], &[], "0");
    f.b.goto(entry, head);
    f.prim(head, &[cond], &[n], "n > 0");
    f.b.branch(head, cond, body, exit);
    f.prim(body, &[n], &[n], "n - 1");
    f.prim(body, &[acc], &[acc], "acc + 2");
    f.b.goto(body, head);
    f.b.ret(exit);
    entry_wrapped(f, func, "countdown")
}

/// The reference's sync test (`frontend_test.testSyncingAsExpected`): `n <= 1 -> 1`, else
/// `left = fib(n - 2); right = fib(n - 1); left + right`. On `[3, 7, 4, 5]` the full VM runs the
/// addition exactly 20 times (fib(7)'s own count): `[3, 7, 4, 5] -> [3, 21, 5, 8]`.
pub fn fibonacci_sync(kernel: KernelNamer<'_>) -> HighProgram {
    let mut f = Fixture::new(kernel);
    let v = f.vars(&["n", "nm2", "left", "nm1", "right", "ans"], Type::I64);
    let (n, nm2, left, nm1, right, ans) = (v[0], v[1], v[2], v[3], v[4], v[5]);
    let cond = f.b.var("cond", Type::BOOL);
    let fib = f.b.function("fibonacci");
    f.b.signature(fib, &[n], &[ans]);
    let enter = f.b.block(fib, "enter_fibonacci");
    let base = f.b.block(fib, "base");
    let recur = f.b.block(fib, "recur");
    f.prim(enter, &[cond], &[n], "n <= 1");
    f.b.branch(enter, cond, base, recur);
    f.prim(base, &[ans], &[], "1");
    f.b.ret(base);
    f.prim(recur, &[nm2], &[n], "n - 2");
    f.b.call(recur, fib, &[nm2], &[left]);
    f.prim(recur, &[nm1], &[n], "n - 1");
    f.b.call(recur, fib, &[nm1], &[right]);
    f.prim(recur, &[ans], &[left, right], "x + y");
    f.b.ret(recur);
    entry_wrapped(f, fib, "fibonacci_sync")
}

/// A small helper called from a recursive function, where inlining has work to do: `h(a, b) =
/// a + b`; `f(n) = if n > 1 { h(f(n - 1), f(n - 2)) } else { h(1, 1) }`; `main(m) = f(m)`
/// (`f(n)` is `2 fib(n)`: `4 -> 10`).
pub fn helper_in_recursion(kernel: KernelNamer<'_>) -> HighProgram {
    let mut x = Fixture::new(kernel);
    let names = [
        "n", "nm1", "nm2", "r1", "r2", "ans", "one", "a", "b", "s", "m",
    ];
    let [n, nm1, nm2, r1, r2, ans, one, a, bb, s, m] = names.map(|name| x.b.var(name, Type::I64));
    let c = x.b.var("c", Type::BOOL);
    let h = x.b.function("h");
    x.b.signature(h, &[a, bb], &[s]);
    let he = x.b.block(h, "h.entry");
    x.prim(he, &[s], &[a, bb], "x + y");
    x.b.ret(he);
    let f = x.b.function("f");
    x.b.signature(f, &[n], &[ans]);
    let enter = x.b.block(f, "f.entry");
    let recur = x.b.block(f, "f.recur");
    let base = x.b.block(f, "f.base");
    x.prim(enter, &[c], &[n], "n > 1");
    x.b.branch(enter, c, recur, base);
    x.prim(recur, &[nm1], &[n], "n - 1");
    x.b.call(recur, f, &[nm1], &[r1]);
    x.prim(recur, &[nm2], &[n], "n - 2");
    x.b.call(recur, f, &[nm2], &[r2]);
    x.b.call(recur, h, &[r1, r2], &[ans]);
    x.b.ret(recur);
    x.prim(base, &[one], &[], "1");
    x.b.call(base, h, &[one, one], &[ans]);
    x.b.ret(base);
    let main = x.b.function("main");
    x.b.signature(main, &[m], &[ans]);
    let me = x.b.block(main, "main_entry");
    x.b.call(me, f, &[m], &[ans]);
    x.b.ret(me);
    x.b.finish(main).expect("a valid program")
}

/// The conformance programs with calls, loops and branches (kernels numbered in order of first
/// use): the set the passes' tests put every rewrite through.
pub fn control_flow_programs() -> Vec<HighProgram> {
    vec![
        fibonacci_function_calls(&mut numbering(), DType::I64),
        is_even_function_calls(&mut numbering(), DType::I64, true),
        is_even_function_calls(&mut numbering(), DType::I64, false),
        iota_sum(&mut numbering()),
        gcd(&mut numbering()),
        countdown(&mut numbering()),
        fibonacci_sync(&mut numbering()),
        single_if_program(&mut numbering()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fixture_builds_and_uses_only_listed_sources() {
        let mut used = Vec::new();
        let mut k = |s: &str| {
            used.push(s.to_string());
            KernelId::new(0)
        };
        constant_program(&mut k);
        single_if_program(&mut k);
        synthetic_pattern_program(&mut k);
        synthetic_pattern_variable_program(&mut k);
        fibonacci_program(&mut k);
        fibonacci_function_calls(&mut k, DType::I64);
        is_even_function_calls(&mut k, DType::I32, true);
        is_even_function_calls(&mut k, DType::I64, false);
        pea_nuts_program(&mut k);
        iota_sum(&mut k);
        gcd(&mut k);
        countdown(&mut k);
        fibonacci_sync(&mut k);
        for s in used {
            assert!(
                KERNEL_SOURCES.contains(&s.as_str()),
                "{s} missing from KERNEL_SOURCES"
            );
        }
    }

    #[test]
    fn numbering_reuses_ids_for_equal_sources() {
        let mut k = numbering();
        assert_eq!(k("a"), KernelId::new(0));
        assert_eq!(k("b"), KernelId::new(1));
        assert_eq!(k("a"), KernelId::new(0));
    }
}

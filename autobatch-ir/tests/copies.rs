//! Copy propagation: each rewrite on small programs, and on random programs that every lane
//! computes what it computed before, with fewer copies.

mod support;

use autobatch_ir::passes::{allocate, lower, propagate_copies};
use autobatch_ir::{
    verify_high, verify_lowered, Block, FuncId, HighProgram, KernelId, KernelRef, Op, Program,
    ProgramBuilder, Terminator, Type, Var,
};
use autobatch_testkit::conformance::{self, numbering};
use support::Rng;

// -----------------------------------------------------------------------------------------
// A one-lane interpreter with every variable global: a call writes the callee's parameters
// and whatever the callee writes stays written for the caller (the storage a call may
// clobber, which the call rule guards against). Each variable is a stack (a write pushes,
// an in-place write replaces the top, a pop drops it). A kernel hashes its source text and
// inputs; a `bool` output is the hash's low bit.
// -----------------------------------------------------------------------------------------

#[derive(Debug, PartialEq)]
enum Outcome {
    Returned(Vec<i64>),
    Limit,
}

struct Machine<'a> {
    p: &'a Program,
    stacks: Vec<Vec<i64>>,
    blocks_run: usize,
}

impl Machine<'_> {
    fn read(&self, v: Var) -> i64 {
        *self.stacks[v.index()]
            .last()
            .unwrap_or_else(|| panic!("`{}` read unset\n{}", self.p.var(v).name, self.p))
    }

    fn write(&mut self, v: Var, value: i64, in_place: bool) {
        let stack = &mut self.stacks[v.index()];
        match stack.last_mut() {
            Some(top) if in_place => *top = value,
            _ => stack.push(value),
        }
    }

    /// Runs function `f` to its return; `false` if the block budget ran out.
    fn call(&mut self, f: FuncId, depth: usize) -> bool {
        if depth > 20 {
            return false;
        }
        let mut at = self.p.function(f).entry();
        loop {
            self.blocks_run += 1;
            if self.blocks_run > 400 {
                return false;
            }
            let data = self.p.block(at);
            for op in &data.ops {
                match op {
                    Op::Prim(prim) => {
                        let ins: Vec<i64> = prim.ins.iter().map(|&v| self.read(v)).collect();
                        let outs: Vec<i64> = match prim.kernel {
                            KernelRef::Assign => ins,
                            KernelRef::User(_) => (0..prim.outs.len())
                                .map(|j| hash(&prim.source, j, &ins))
                                .collect(),
                        };
                        for (&v, value) in prim.outs.iter().zip(outs) {
                            let value = if self.p.var(v).ty == Type::BOOL {
                                value & 1
                            } else {
                                value
                            };
                            self.write(v, value, prim.is_in_place(v));
                        }
                    }
                    Op::Call(call) => {
                        let args: Vec<i64> = call.ins.iter().map(|&v| self.read(v)).collect();
                        let callee = self.p.function(call.func);
                        for (&formal, value) in callee.params.iter().zip(args) {
                            self.write(formal, value, false);
                        }
                        if !self.call(call.func, depth + 1) {
                            return false;
                        }
                        let callee = self.p.function(call.func);
                        let results: Vec<i64> =
                            callee.returns.iter().map(|&v| self.read(v)).collect();
                        for (&v, value) in call.outs.iter().zip(results) {
                            self.write(v, value, false);
                        }
                    }
                    Op::Pop(vars) => {
                        for v in vars {
                            self.stacks[v.index()].pop();
                        }
                    }
                }
            }
            at = match &data.term {
                Terminator::Goto(t) => *t,
                Terminator::Branch { cond, then_, else_ } => {
                    if self.read(*cond) != 0 {
                        *then_
                    } else {
                        *else_
                    }
                }
                _ => return true,
            };
        }
    }
}

fn hash(source: &str, j: usize, ins: &[i64]) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ j as u64;
    for byte in source.bytes() {
        h = (h ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
    }
    for &x in ins {
        h = (h ^ x as u64).wrapping_mul(0x100_0000_01b3);
        h ^= h >> 29;
    }
    (h >> 4) as i64
}

fn run(p: &Program, inputs: &[i64]) -> Outcome {
    let mut m = Machine {
        p,
        stacks: vec![Vec::new(); p.vars.len()],
        blocks_run: 0,
    };
    for (&v, &x) in p.inputs().iter().zip(inputs) {
        m.write(v, x, false);
    }
    if !m.call(p.main, 0) {
        return Outcome::Limit;
    }
    Outcome::Returned(p.outputs().iter().map(|&v| m.read(v)).collect())
}

/// Runs the pass with every check that holds for any input: the input is untouched, the
/// output verifies and lowers, a second pass changes nothing, blocks and variables are
/// kept, and every lane computes what it computed before.
fn copied(p: &HighProgram) -> HighProgram {
    let before = p.clone();
    let out = propagate_copies(p);
    assert_eq!(*p, before, "propagate_copies must not modify its input");
    verify_high(out.clone().into_program())
        .unwrap_or_else(|e| panic!("output does not verify:\n{e}\n{out}"));
    lower(&allocate(&out)).unwrap_or_else(|e| panic!("output does not lower: {e}\n{out}"));
    assert_eq!(propagate_copies(&out), out, "a second pass changes nothing");
    assert_eq!(out.vars, p.vars);
    assert_eq!(out.functions, p.functions);
    for inputs in [[3, -7], [0, 1], [12_345, 99]] {
        assert_eq!(
            run(p, &inputs),
            run(&out, &inputs),
            "{inputs:?}\n{p}\n{out}"
        );
    }
    out
}

/// One line per op of block `name`: `outs = (ins)` for an assignment, `outs = src(ins)`
/// for a kernel, `outs = call g(ins)`, `pop(vars)`; then the terminator's condition.
fn ops(p: &Program, name: &str) -> Vec<String> {
    let names = |vs: &[Var]| {
        vs.iter()
            .map(|&v| p.var(v).name.clone())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let data = p.block(p.block_named(name).expect("block"));
    let mut lines: Vec<String> = data
        .ops
        .iter()
        .map(|op| match op {
            Op::Prim(prim) if prim.kernel == KernelRef::Assign => {
                format!("{} = ({})", names(&prim.outs), names(&prim.ins))
            }
            Op::Prim(prim) => {
                format!(
                    "{} = {}({})",
                    names(&prim.outs),
                    prim.source,
                    names(&prim.ins)
                )
            }
            Op::Call(call) => format!(
                "{} = call {}({})",
                names(&call.outs),
                p.function(call.func).name,
                names(&call.ins)
            ),
            Op::Pop(vars) => format!("pop({})", names(vars)),
        })
        .collect();
    if let Terminator::Branch { cond, .. } = data.term {
        lines.push(format!("branch {}", p.var(cond).name));
    }
    lines
}

/// A builder with `i64` variables of the given names and a function `f(x, y) -> (r)`
/// (so `x`, `y` and `r` are fixed: parameters and return variable).
fn start(names: &[&str]) -> (ProgramBuilder, FuncId, Vec<Var>) {
    let mut b = ProgramBuilder::new();
    let vars: Vec<Var> = names.iter().map(|n| b.var(n, Type::I64)).collect();
    let f = b.function("f");
    let var = |n: &str| vars[names.iter().position(|m| *m == n).expect("declared")];
    b.signature(f, &[var("x"), var("y")], &[var("r")]);
    (b, f, vars)
}

const K: KernelId = KernelId::new(0);

#[test]
fn a_copy_is_propagated_within_a_block() {
    let (mut b, f, v) = start(&["x", "y", "r", "t", "u"]);
    let [x, y, r, t, u] = [v[0], v[1], v[2], v[3], v[4]];
    let e = b.block(f, "e");
    b.assign(e, &[t], &[x]);
    b.assign(e, &[u], &[t]);
    b.prim(e, &[r], &[t, u, y], K, "k1");
    b.ret(e);
    let out = copied(&b.finish(f).unwrap());
    assert_eq!(ops(&out, "e"), ["r = k1(x, x, y)"]);
}

/// Reads in later blocks, branch conditions and call arguments are reads too; a copy
/// available on both arms of a diamond is available at the join.
#[test]
fn a_copy_reaches_later_blocks_conditions_and_call_arguments() {
    let mut b = ProgramBuilder::new();
    let [x, y, r, t, a, s] = ["x", "y", "r", "t", "a", "s"].map(|n| b.var(n, Type::I64));
    let [c, d] = ["c", "d"].map(|n| b.var(n, Type::BOOL));
    let g = b.function("g");
    b.signature(g, &[a], &[s]);
    let ge = b.block(g, "g.e");
    b.prim(ge, &[s], &[a], K, "k9");
    b.ret(ge);
    let f = b.function("f");
    b.signature(f, &[x, y], &[r]);
    let [e, then_, else_, join] = ["e", "then", "else", "join"].map(|n| b.block(f, n));
    b.prim(e, &[c], &[x], K, "k1");
    b.assign(e, &[t], &[x]);
    b.assign(e, &[d], &[c]);
    b.branch(e, d, then_, else_);
    b.prim(then_, &[r], &[t], K, "k2");
    b.goto(then_, join);
    b.prim(else_, &[r], &[y], K, "k3");
    b.goto(else_, join);
    b.call(join, g, &[t], &[r]);
    b.ret(join);
    let out = copied(&b.finish(f).unwrap());
    assert_eq!(ops(&out, "e"), ["c = k1(x)", "branch c"]);
    assert_eq!(ops(&out, "then"), ["r = k2(x)"]);
    assert_eq!(ops(&out, "join"), ["r = call g(x)"]);
}

/// `t = x; u = t; x = k(x); r = k(u)`: `u = t` may read `x`, but `u`'s read may not
/// (`x` changed since): rewriting both in one round would read the new `x`.
#[test]
fn chained_copies_are_propagated_one_link_at_a_time() {
    let (mut b, f, v) = start(&["x", "y", "r", "t", "u"]);
    let [x, y, r, t, u] = [v[0], v[1], v[2], v[3], v[4]];
    let e = b.block(f, "e");
    b.assign(e, &[t], &[x]);
    b.assign(e, &[u], &[t]);
    b.prim(e, &[x], &[x, y], K, "k1");
    b.prim(e, &[r], &[u, x], K, "k2");
    b.ret(e);
    let out = copied(&b.finish(f).unwrap());
    assert_eq!(ops(&out, "e"), ["u = (x)", "x = k1(x, y)", "r = k2(u, x)"]);
}

#[test]
fn a_copy_is_not_propagated_across_a_redefinition_of_its_source() {
    let (mut b, f, v) = start(&["x", "y", "r", "t", "a"]);
    let [x, y, r, t, a] = [v[0], v[1], v[2], v[3], v[4]];
    let e = b.block(f, "e");
    b.assign(e, &[t], &[x]);
    b.prim(e, &[a], &[t], K, "k1");
    b.prim(e, &[x], &[x, y], K, "k2");
    b.prim(e, &[r], &[t, a, x], K, "k3");
    b.ret(e);
    let p = b.finish(f).unwrap();
    // The first read could read `x`, the second cannot: rewriting only one would keep the
    // copy and make `x` live longer, so neither is rewritten.
    assert_eq!(copied(&p), p);

    // The same across blocks: the source is redefined on one arm.
    let (mut b, f, v) = start(&["x", "y", "r", "t"]);
    let [x, y, r, t] = [v[0], v[1], v[2], v[3]];
    let c = b.var("c", Type::BOOL);
    let [e, then_, join] = ["e", "then", "join"].map(|n| b.block(f, n));
    b.assign(e, &[t], &[x]);
    b.prim(e, &[c], &[y], K, "k1");
    b.branch(e, c, then_, join);
    b.prim(then_, &[x], &[y], K, "k2");
    b.goto(then_, join);
    b.prim(join, &[r], &[t, x], K, "k3");
    b.ret(join);
    let p = b.finish(f).unwrap();
    assert_eq!(copied(&p), p);
}

/// `t = s; call g(..); read t`: if `g`, or a function `g` calls, writes `s`, the read must
/// keep reading `t`; a callee that leaves `s` alone does not stop the propagation.
#[test]
fn a_copy_is_not_propagated_across_a_call_that_writes_its_source() {
    let build = |h_writes_s: bool| {
        let mut b = ProgramBuilder::new();
        let [x, y, r, s, t, q, a, a2, z] =
            ["x", "y", "r", "s", "t", "q", "a", "a2", "z"].map(|n| b.var(n, Type::I64));
        let h = b.function("h");
        b.signature(h, &[a2], &[z]);
        let he = b.block(h, "h.e");
        b.prim(he, &[z], &[a2], K, "k9");
        if h_writes_s {
            b.prim(he, &[s], &[a2], K, "k8");
        }
        b.ret(he);
        let g = b.function("g");
        b.signature(g, &[a], &[q]);
        let ge = b.block(g, "g.e");
        b.call(ge, h, &[a], &[q]);
        b.ret(ge);
        let f = b.function("f");
        b.signature(f, &[x, y], &[r]);
        let e = b.block(f, "e");
        b.prim(e, &[s], &[x], K, "k1");
        b.assign(e, &[t], &[s]);
        b.call(e, g, &[y], &[q]);
        b.prim(e, &[r], &[t, q], K, "k2");
        b.ret(e);
        b.finish(f).unwrap()
    };
    let p = build(true);
    let out = copied(&p);
    assert_eq!(out, p, "h writes s: the copy stays");
    // The interpreter shares storage: propagating here would read h's `s`.
    let mut wrong = p.clone().into_program();
    let e = wrong.block_named("e").unwrap();
    wrong.blocks[e].ops[3] = autobatch_ir::prim_op(
        &[wrong.var_named("r").unwrap()],
        &[wrong.var_named("s").unwrap(), wrong.var_named("q").unwrap()],
        KernelRef::User(K),
        "k2",
    );
    assert_ne!(run(&p, &[1, 2]), run(&wrong, &[1, 2]));

    let out = copied(&build(false));
    assert_eq!(
        ops(&out, "e"),
        ["s = k1(x)", "q = call g(y)", "r = k2(s, q)"]
    );
}

/// `do { t = x; x = k(x) } while c; r = k(t)`: after the loop `t` holds the last
/// iteration's old `x`, not `x`.
#[test]
fn a_copy_is_not_propagated_out_of_a_loop_that_redefines_it() {
    let (mut b, f, v) = start(&["x", "y", "r", "t"]);
    let [x, y, r, t] = [v[0], v[1], v[2], v[3]];
    let c = b.var("c", Type::BOOL);
    let [e, body, exit] = ["e", "body", "exit"].map(|n| b.block(f, n));
    b.goto(e, body);
    b.assign(body, &[t], &[x]);
    b.prim(body, &[x], &[x, y], K, "k1");
    b.prim(body, &[c], &[x], K, "k2");
    b.branch(body, c, body, exit);
    b.prim(exit, &[r], &[t], K, "k3");
    b.ret(exit);
    let p = b.finish(f).unwrap();
    assert_eq!(copied(&p), p);

    // Nor into a loop that redefines the source: `t = x; while c { x = k(t, x) }`.
    let (mut b, f, v) = start(&["x", "y", "r", "t"]);
    let [x, y, r, t] = [v[0], v[1], v[2], v[3]];
    let c = b.var("c", Type::BOOL);
    let [e, head, body, exit] = ["e", "head", "body", "exit"].map(|n| b.block(f, n));
    b.assign(e, &[t], &[x]);
    b.goto(e, head);
    b.prim(head, &[c], &[x, y], K, "k1");
    b.branch(head, c, body, exit);
    b.prim(body, &[x], &[t, x], K, "k2");
    b.goto(body, head);
    b.prim(exit, &[r], &[x], K, "k3");
    b.ret(exit);
    let p = b.finish(f).unwrap();
    assert_eq!(copied(&p), p);
}

#[test]
fn dead_copies_are_removed() {
    let (mut b, f, v) = start(&["x", "y", "r", "t", "u", "w"]);
    let [x, y, r, t, u, w] = [v[0], v[1], v[2], v[3], v[4], v[5]];
    let e = b.block(f, "e");
    // `t` is never read; `u` only by the dead `w`; `y = y` copies nothing; `r` is
    // written twice, the first time for nothing.
    b.assign(e, &[t], &[x]);
    b.assign(e, &[u], &[x]);
    b.assign(e, &[w], &[u]);
    b.assign(e, &[y], &[y]);
    b.assign(e, &[r], &[x]);
    b.prim(e, &[r], &[y], K, "k1");
    b.ret(e);
    let out = copied(&b.finish(f).unwrap());
    assert_eq!(ops(&out, "e"), ["r = k1(y)"]);
}

/// `t = x` before a loop that changes `x`, read after it: kept. `prev = x` at the end of
/// a loop body, read only by the next iteration's header: live around the back edge, kept.
#[test]
fn copies_read_after_or_around_a_loop_are_kept() {
    let (mut b, f, v) = start(&["x", "y", "r", "t", "prev", "n"]);
    let [x, y, r, t, prev, n] = [v[0], v[1], v[2], v[3], v[4], v[5]];
    let c = b.var("c", Type::BOOL);
    let [e, head, body, exit] = ["e", "head", "body", "exit"].map(|n| b.block(f, n));
    b.assign(e, &[t], &[x]);
    b.assign(e, &[prev], &[y]);
    b.goto(e, head);
    b.prim(head, &[c], &[prev, x], K, "k1");
    b.branch(head, c, body, exit);
    b.prim(body, &[x], &[x], K, "k2");
    b.prim(body, &[n], &[x, prev], K, "k3");
    b.assign(body, &[prev], &[n]);
    b.prim(body, &[y], &[n], K, "k4");
    b.goto(body, head);
    b.prim(exit, &[r], &[t, prev], K, "k5");
    b.ret(exit);
    let p = b.finish(f).unwrap();
    let out = copied(&p);
    // `prev = n` is not propagated (prev has two definitions) nor forwarded (`n` has a
    // second read), but `n` and `prev` never hold different live values: `n` becomes `prev`
    // (coalescing). `t = x` stays (`x` changes in the loop while `t` is live), and so does
    // `prev = y` (`y` is written in the loop while `prev` is live). The two copies of the
    // entry block merge.
    assert_eq!(ops(&out, "e"), ["t, prev = (x, y)"]);
    assert_eq!(
        ops(&out, "body"),
        ["x = k2(x)", "prev = k3(x, prev)", "y = k4(prev)"]
    );
}

#[test]
fn adjacent_assignments_merge_unless_they_interfere() {
    let (mut b, f, v) = start(&["x", "y", "r", "a", "c", "d", "e1"]);
    let [x, y, r, a, c, d, e1] = [v[0], v[1], v[2], v[3], v[4], v[5], v[6]];
    let bl = b.block(f, "e");
    b.prim(bl, &[a, c, d, e1], &[x, y], K, "k1");
    // `a = c; c = a` leaves both equal to the old `c`: as one op it would swap them.
    b.assign(bl, &[a], &[c]);
    b.assign(bl, &[c], &[a]);
    // Independent copies merge; one reading the other's output does not.
    b.assign(bl, &[d], &[x]);
    b.assign(bl, &[e1], &[y]);
    b.assign(bl, &[x], &[d]);
    b.assign(bl, &[y], &[x]);
    b.prim(bl, &[r], &[a, c, d, e1, x, y], K, "k2");
    b.ret(bl);
    let out = copied(&b.finish(f).unwrap());
    assert_eq!(
        ops(&out, "e"),
        [
            "a, c, d, e1 = k1(x, y)",
            "a = (c)",
            "c, d, e1 = (a, x, y)",
            "x = (d)",
            "y = (x)",
            "r = k2(a, c, d, e1, x, y)"
        ]
    );
    // Merged in-place flags follow their outputs.
    let merged = &out.block(out.block_named("e").unwrap()).ops[2];
    assert!(matches!(merged, Op::Prim(p) if p.in_place.is_empty() && p.outs.len() == 3));
}

#[test]
fn a_copied_result_is_written_where_the_copy_puts_it() {
    // `r` is a return variable (never a propagated copy's target), `s` is read once.
    let (mut b, f, v) = start(&["x", "y", "r", "s", "s2"]);
    let [x, y, r, s, s2] = [v[0], v[1], v[2], v[3], v[4]];
    let e = b.block(f, "e");
    b.prim(e, &[s, s2], &[x, y], K, "k1");
    b.prim(e, &[y], &[s2], K, "k2");
    b.assign(e, &[r], &[s]);
    b.ret(e);
    let out = copied(&b.finish(f).unwrap());
    assert_eq!(ops(&out, "e"), ["r, s2 = k1(x, y)", "y = k2(s2)"]);

    // Not when the target is read or written in between, or the result is read twice
    // (then coalescing merges the result into the target instead).
    let (mut b, f, v) = start(&["x", "y", "r", "s"]);
    let [x, y, r, s] = [v[0], v[1], v[2], v[3]];
    let e = b.block(f, "e");
    b.prim(e, &[r], &[y], K, "k0");
    b.prim(e, &[s], &[x], K, "k1");
    b.prim(e, &[y], &[r], K, "k2");
    b.assign(e, &[r], &[s]);
    b.ret(e);
    let p = b.finish(f).unwrap();
    assert_eq!(copied(&p), p);
    let (mut b, f, v) = start(&["x", "y", "r", "s"]);
    let [x, y, r, s] = [v[0], v[1], v[2], v[3]];
    let e = b.block(f, "e");
    b.prim(e, &[s], &[x], K, "k1");
    b.assign(e, &[r], &[s]);
    b.prim(e, &[y], &[s], K, "k2");
    b.prim(e, &[r], &[r, y], K, "k3");
    b.ret(e);
    let out = copied(&b.finish(f).unwrap());
    assert_eq!(ops(&out, "e"), ["r = k1(x)", "y = k2(r)", "r = k3(r, y)"]);

    // Not when the copy itself reads the target: `y, x = (s, y)` copies the old `y`.
    let (mut b, f, v) = start(&["x", "y", "r", "s"]);
    let [x, y, r, s] = [v[0], v[1], v[2], v[3]];
    let e = b.block(f, "e");
    b.prim(e, &[s], &[x], K, "k1");
    b.assign(e, &[y, x], &[s, y]);
    b.prim(e, &[r], &[x, y], K, "k2");
    b.ret(e);
    let p = b.finish(f).unwrap();
    assert_eq!(copied(&p), p);

    // A call's result too, and the target may be an argument of the call.
    let mut b = ProgramBuilder::new();
    let [x, y, r, s, a, q] = ["x", "y", "r", "s", "a", "q"].map(|n| b.var(n, Type::I64));
    let g = b.function("g");
    b.signature(g, &[a], &[q]);
    let ge = b.block(g, "g.e");
    b.prim(ge, &[q], &[a], K, "k9");
    b.ret(ge);
    let f = b.function("f");
    b.signature(f, &[x, y], &[r]);
    let e = b.block(f, "e");
    b.call(e, g, &[y], &[s]);
    b.assign(e, &[y], &[s]);
    b.prim(e, &[r], &[x, y], K, "k1");
    b.ret(e);
    let out = copied(&b.finish(f).unwrap());
    assert_eq!(ops(&out, "e"), ["y = call g(y)", "r = k1(x, y)"]);
}

/// A result copied into the return variable on a path where the result is also read
/// elsewhere (neither propagated nor forwarded) is written there directly: the two variables
/// are coalesced. Not when one is written while the other is live, when both are fixed, or
/// when one is live across a call that may write it.
#[test]
fn copies_between_non_interfering_variables_are_coalesced() {
    let mut b = ProgramBuilder::new();
    let [x, y, r, s, t, u, a, q] =
        ["x", "y", "r", "s", "t", "u", "a", "q"].map(|n| b.var(n, Type::I64));
    let c = b.var("c", Type::BOOL);
    let g = b.function("g");
    b.signature(g, &[a], &[q]);
    let ge = b.block(g, "g.e");
    b.prim(ge, &[q], &[a], K, "k9");
    b.ret(ge);
    let f = b.function("f");
    b.signature(f, &[x, y], &[r]);
    let [e, p1, p2] = ["e", "p1", "p2"].map(|n| b.block(f, n));
    b.prim(e, &[c], &[x], K, "kc");
    b.branch(e, c, p1, p2);
    b.call(p1, g, &[x], &[s]);
    b.prim(p1, &[t], &[s], K, "k1");
    b.assign(p1, &[r], &[s]);
    b.prim(p1, &[r], &[r, t], K, "k3");
    b.ret(p1);
    b.prim(p2, &[u], &[y], K, "k2");
    b.prim(p2, &[t], &[u], K, "k4");
    b.assign(p2, &[r], &[u]);
    b.prim(p2, &[r], &[r, t], K, "k5");
    b.ret(p2);
    let out = copied(&b.finish(f).unwrap());
    assert_eq!(
        ops(&out, "p1"),
        ["r = call g(x)", "t = k1(r)", "r = k3(r, t)"]
    );
    assert_eq!(ops(&out, "p2"), ["r = k2(y)", "t = k4(r)", "r = k5(r, t)"]);

    // `s` is written again while `r`, its copy, is live.
    let (mut b, f, v) = start(&["x", "y", "r", "s"]);
    let [x, r, s] = [v[0], v[2], v[3]];
    let e = b.block(f, "e");
    b.prim(e, &[s], &[x], K, "k1");
    b.assign(e, &[r], &[s]);
    b.prim(e, &[s], &[s], K, "k2");
    b.prim(e, &[r], &[r, s], K, "k3");
    b.ret(e);
    let p = b.finish(f).unwrap();
    assert_eq!(copied(&p), p);

    // A parameter copied into the return variable: both fixed.
    let (mut b, f, v) = start(&["x", "y", "r"]);
    let [x, y, r] = [v[0], v[1], v[2]];
    let e = b.block(f, "e");
    b.prim(e, &[y], &[x], K, "k1");
    b.assign(e, &[r], &[x]);
    b.prim(e, &[r], &[r, y], K, "k2");
    b.ret(e);
    let p = b.finish(f).unwrap();
    assert_eq!(copied(&p), p);

    // `w` is live across a recursive call, which writes it (and `s`): the interpreters keep
    // its value around the call apart from its storage, so it is not merged with `s`.
    let mut b = ProgramBuilder::new();
    let [x, y, r, hx, hy, hr, s, w, t, q] =
        ["x", "y", "r", "hx", "hy", "hr", "s", "w", "t", "q"].map(|n| b.var(n, Type::I64));
    let c = b.var("c", Type::BOOL);
    let h = b.function("h");
    b.signature(h, &[hx, hy], &[hr]);
    let [he, rec, base] = ["he", "rec", "base"].map(|n| b.block(h, n));
    b.prim(he, &[c], &[hx], K, "kc");
    b.branch(he, c, rec, base);
    b.prim(rec, &[s], &[hx], K, "k1");
    b.assign(rec, &[w], &[s]);
    b.prim(rec, &[t], &[s], K, "k5");
    b.call(rec, h, &[t, hy], &[q]);
    b.prim(rec, &[hr], &[w, q], K, "k2");
    b.ret(rec);
    b.prim(base, &[hr], &[hy], K, "k0");
    b.ret(base);
    let f = b.function("f");
    b.signature(f, &[x, y], &[r]);
    let e = b.block(f, "e");
    b.call(e, h, &[x, y], &[r]);
    b.ret(e);
    let out = copied(&b.finish(f).unwrap());
    assert_eq!(
        ops(&out, "rec"),
        [
            "s = k1(hx)",
            "w = (s)",
            "t = k5(s)",
            "q = call h(t, hy)",
            "hr = k2(w, q)"
        ]
    );
}

/// A copy's target that is popped somewhere is left alone; a pop of the source ends the
/// copy's reach (it changes the source's value).
#[test]
fn pops_are_respected() {
    let (mut b, f, v) = start(&["x", "y", "r", "t"]);
    let [x, r, t] = [v[0], v[2], v[3]];
    let e = b.block(f, "e");
    b.assign(e, &[t], &[x]);
    b.prim(e, &[r], &[t], K, "k1");
    b.pop(e, &[t]);
    b.ret(e);
    let p = b.finish(f).unwrap();
    assert_eq!(copied(&p), p);

    let (mut b, f, v) = start(&["x", "y", "r", "t", "u"]);
    let [x, y, r, t, u] = [v[0], v[1], v[2], v[3], v[4]];
    let e = b.block(f, "e");
    // Two frames of `u`; `t` copies the top one, which the pop then drops: reading `u`
    // instead of `t` would read the frame below.
    b.prim(e, &[u], &[x], K, "k0");
    b.prim(e, &[u], &[y], K, "k1");
    b.assign(e, &[t], &[u]);
    b.pop(e, &[u]);
    b.prim(e, &[r], &[t], K, "k2");
    b.ret(e);
    let p = b.finish(f).unwrap();
    assert_eq!(copied(&p), p);
}

/// `u = u` pushes a second frame of `u` in the reference semantics: a pop then drops
/// that one, not the frame below. (Lowering rejects reading a popped variable, so only the
/// stack semantics itself tells; the interpreter runs it.)
#[test]
fn a_self_copy_of_a_popped_variable_stays() {
    let (mut b, f, v) = start(&["x", "y", "r", "u"]);
    let [x, y, r, u] = [v[0], v[1], v[2], v[3]];
    let e = b.block(f, "e");
    b.prim(e, &[u], &[x], K, "k0");
    b.prim(e, &[u], &[y], K, "k1");
    b.assign(e, &[u], &[u]);
    b.pop(e, &[u]);
    b.prim(e, &[r], &[u], K, "k2");
    b.ret(e);
    let p = b.finish(f).unwrap();
    let out = propagate_copies(&p);
    assert_eq!(out, p);
    assert_eq!(run(&out, &[1, 2]), run(&p, &[1, 2]));
}

/// Parallel copies: `a, b = (b', a')` swaps are pairs of copies like any other, but a
/// copy whose source the same op overwrites is not one.
#[test]
fn swaps_in_one_assignment_are_not_copies_of_their_own_outputs() {
    let (mut b, f, v) = start(&["x", "y", "r", "a", "c"]);
    let [x, y, r, a, c] = [v[0], v[1], v[2], v[3], v[4]];
    let e = b.block(f, "e");
    b.prim(e, &[a, c], &[x, y], K, "k1");
    b.assign(e, &[a, c], &[c, a]);
    b.prim(e, &[r], &[a, c], K, "k2");
    b.ret(e);
    let p = b.finish(f).unwrap();
    assert_eq!(copied(&p), p);
}

#[test]
fn tuples_and_partial_copies_keep_their_leaves_aligned() {
    let mut b = ProgramBuilder::new();
    let [x, y, r, s, u] = ["x", "y", "r", "s", "u"].map(|n| b.var(n, Type::I64));
    let pair = Type::Tuple(vec![Type::I64, Type::I64]);
    let [tup, tup2] = ["tup", "tup2"].map(|n| b.var(n, pair.clone()));
    let f = b.function("f");
    b.signature(f, &[x, y], &[r]);
    let e = b.block(f, "e");
    // `tup = (x, y)` assembles a tuple: no pair. `tup2, s, u = (tup, y, x)` pairs all
    // three; `s` is dead, `u` and `tup2` are copies.
    b.assign(e, &[tup], &[x, y]);
    b.assign(e, &[tup2, s, u], &[tup, y, x]);
    b.prim(e, &[r], &[tup2, u], K, "k1");
    b.ret(e);
    let p = b.finish(f).unwrap();
    let out = propagate_copies(&p);
    verify_high(out.clone().into_program()).unwrap();
    assert_eq!(ops(&out, "e"), ["tup = (x, y)", "r = k1(tup, x)"]);
}

/// Copy propagation takes verified high-level programs: a lowered or an invalid program
/// never gets there (it is not a `HighProgram`).
#[test]
fn lowered_and_invalid_programs_are_not_high_level_programs() {
    let low = conformance::fibonacci_program(&mut numbering());
    assert!(verify_lowered(low.clone().into_program()).is_ok());
    assert!(verify_high(low.into_program()).is_err());
    let mut broken: Program = conformance::gcd(&mut numbering()).into_program();
    broken.blocks[Block::new(0)].term = Terminator::Goto(Block::new(999));
    assert!(verify_high(broken).is_err());
}

#[test]
fn conformance_programs_stay_equivalent() {
    for p in conformance::control_flow_programs() {
        copied(&allocate(&p));
    }
}

// -----------------------------------------------------------------------------------------
// Random programs: every lane computes what it computed before.
// -----------------------------------------------------------------------------------------

/// A random `main(x, y) -> r` over long-lived variables `v0..v3` (written first thing),
/// temporaries `t0..t5` (written by copies, kernels and calls here and there), a condition
/// `c` and a helper `g(p) -> q` that also writes `v3` (or `t0`), called from `main`.
/// `None` if it does not verify (a temporary read on a path that does not write it).
fn random_program(rng: &mut Rng) -> Option<HighProgram> {
    let mut b = ProgramBuilder::new();
    let [x, y, r, gp, gq] = ["x", "y", "r", "g.p", "g.q"].map(|n| b.var(n, Type::I64));
    let v: Vec<Var> = (0..4).map(|i| b.var(&format!("v{i}"), Type::I64)).collect();
    let t: Vec<Var> = (0..6).map(|i| b.var(&format!("t{i}"), Type::I64)).collect();
    let c = b.var("c", Type::BOOL);
    let g = b.function("g");
    b.signature(g, &[gp], &[gq]);
    let ge = b.block(g, "g.e");
    b.prim(ge, &[gq], &[gp], K, "g1");
    let clobbered = if rng.below(2) == 0 { v[3] } else { t[0] };
    b.prim(ge, &[clobbered], &[gp, gq], K, "g2");
    b.ret(ge);
    let f = b.function("main");
    b.signature(f, &[x, y], &[r]);
    let n = 2 + rng.below(7);
    let bl: Vec<Block> = (0..n).map(|i| b.block(f, &format!("b{i}"))).collect();
    b.prim(bl[0], &[v[0], v[1], v[2], v[3], c], &[x, y], K, "init");
    let all: Vec<Var> = v.iter().chain(&t).copied().collect();
    let mut k = 0;
    for &blk in &bl {
        for _ in 0..rng.below(5) {
            let any = |rng: &mut Rng| all[rng.below(all.len())];
            let temp = |rng: &mut Rng| t[rng.below(t.len())];
            let long = |rng: &mut Rng| v[rng.below(v.len())];
            k += 1;
            match rng.below(9) {
                0 | 1 => {
                    let (to, from) = (temp(rng), any(rng));
                    b.assign(blk, &[to], &[from]);
                }
                2 => {
                    let (to, from) = (long(rng), any(rng));
                    b.assign(blk, &[to], &[from]);
                }
                3 => {
                    let (a, d) = (any(rng), any(rng));
                    if a != d {
                        let (s1, s2) = (any(rng), any(rng));
                        b.assign(blk, &[a, d], &[s1, s2]);
                    }
                }
                4 => {
                    let (to, i1, i2) = (long(rng), any(rng), any(rng));
                    b.prim(blk, &[to], &[i1, i2], K, &format!("k{k}"));
                }
                5 => {
                    let (to, from) = (temp(rng), any(rng));
                    b.prim(blk, &[to], &[from], K, &format!("k{k}"));
                }
                6 => {
                    let from = any(rng);
                    b.prim(blk, &[c], &[from], K, &format!("k{k}"));
                }
                _ => {
                    let (to, from) = (any(rng), any(rng));
                    b.call(blk, g, &[from], &[to]);
                }
            }
        }
        let target = |rng: &mut Rng| bl[1 + rng.below(n - 1)];
        match rng.below(5) {
            0 | 1 => {
                let (th, el) = (target(rng), target(rng));
                b.branch(blk, c, th, el);
            }
            2 => {
                let from = all[rng.below(all.len())];
                b.assign(blk, &[r], &[from]);
                b.ret(blk);
            }
            _ => {
                let to = target(rng);
                b.goto(blk, to);
            }
        }
    }
    b.finish(f).ok()
}

fn assign_pairs(p: &Program) -> usize {
    p.blocks
        .iter()
        .flat_map(|b| &b.ops)
        .filter_map(|op| match op {
            Op::Prim(prim) if prim.kernel == KernelRef::Assign => Some(prim.outs.len()),
            _ => None,
        })
        .sum()
}

#[test]
fn random_programs_compute_the_same_with_fewer_copies() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut programs, mut removed, mut halted) = (0, 0, 0);
    while programs < 3_000 {
        let Some(p) = random_program(&mut rng) else {
            continue;
        };
        programs += 1;
        let out = copied(&p);
        assert!(assign_pairs(&out) <= assign_pairs(&p), "{p}\n{out}");
        removed += assign_pairs(&p) - assign_pairs(&out);
        halted += usize::from(matches!(run(&p, &[5, 6]), Outcome::Returned(_)));
    }
    assert!(
        removed > 3_000,
        "the generator exercises the pass: {removed}"
    );
    assert!(halted > 1_000, "most programs return: {halted}");
}

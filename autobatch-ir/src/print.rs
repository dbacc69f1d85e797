//! The stable text format (`Display` for `Program`), used by golden tests.
//!
//! Declarations first, one per variable sorted by name (`name :: allocation, type`), then each
//! function (the entry function last) with its blocks and ops, in the spirit of the reference.

use crate::program::{FunctionData, KernelRef, Op, Program, Terminator};
use crate::Var;
use std::fmt::{self, Write};

struct Names<'a>(&'a Program);

impl Names<'_> {
    fn var(&self, v: Var) -> &str {
        self.0
            .vars
            .get(v)
            .map_or("<unknown var>", |d| d.name.as_str())
    }

    fn list(&self, vars: &[Var]) -> String {
        vars.iter()
            .map(|v| self.var(*v))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn block(&self, b: crate::Block) -> &str {
        self.0
            .blocks
            .get(b)
            .map_or("<unknown block>", |d| d.name.as_str())
    }
}

/// Collapses every run of whitespace in kernel source text to one space.
fn one_line(source: &str) -> String {
    source.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn write_op(out: &mut String, names: &Names<'_>, p: &Program, op: &Op) -> fmt::Result {
    match op {
        Op::Prim(prim) => {
            let outs: Vec<String> = prim
                .outs
                .iter()
                .map(|v| {
                    let bang = if prim.is_in_place(*v) { "!" } else { "" };
                    format!("{}{bang}", names.var(*v))
                })
                .collect();
            let lhs = if outs.is_empty() {
                "()".to_string()
            } else {
                outs.join(", ")
            };
            let by = match prim.kernel {
                KernelRef::Assign => "assign".to_string(),
                KernelRef::User(_) => one_line(&prim.source),
            };
            write!(out, "{lhs} = prim({}) by {by}", names.list(&prim.ins))
        }
        Op::Call(call) => {
            let lhs = if call.outs.is_empty() {
                "()".to_string()
            } else {
                names.list(&call.outs)
            };
            let callee = p
                .functions
                .get(call.func)
                .map_or("<unknown fn>", |f| &f.name);
            let args = if call.ins.is_empty() {
                String::new()
            } else {
                format!(", {}", names.list(&call.ins))
            };
            write!(out, "{lhs} = call({callee}{args})")
        }
        Op::Pop(vars) => write!(out, "pop({})", names.list(vars)),
    }
}

fn write_terminator(out: &mut String, names: &Names<'_>, term: &Terminator) -> fmt::Result {
    match term {
        Terminator::Goto(b) => write!(out, "goto({})", names.block(*b)),
        Terminator::Branch { cond, then_, else_ } => write!(
            out,
            "branch({}, {}, {})",
            names.var(*cond),
            names.block(*then_),
            names.block(*else_)
        ),
        Terminator::Return => out.write_str("return"),
        Terminator::PushGoto { ret, target } => {
            write!(
                out,
                "push_goto({}, {})",
                names.block(*ret),
                names.block(*target)
            )
        }
        Terminator::IndirectGoto => out.write_str("indirect_jump"),
    }
}

fn write_function(out: &mut String, p: &Program, f: &FunctionData) -> fmt::Result {
    let names = Names(p);
    writeln!(out, "def {}({}):", f.name, names.list(&f.params))?;
    let returns = if f.returns.is_empty() {
        "()".to_string()
    } else {
        names.list(&f.returns)
    };
    writeln!(out, "  returns {returns}")?;
    for b in &f.blocks {
        let Some(block) = p.blocks.get(*b) else {
            writeln!(out, "  <unknown block {b}>")?;
            continue;
        };
        writeln!(out, "  {}:", block.name)?;
        for op in &block.ops {
            out.write_str("    ")?;
            write_op(out, &names, p, op)?;
            out.write_char('\n')?;
        }
        out.write_str("    ")?;
        write_terminator(out, &names, &block.term)?;
        out.write_char('\n')?;
    }
    Ok(())
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        let mut decls: Vec<_> = self.vars.iter().collect();
        decls.sort_by(|a, b| a.name.cmp(&b.name));
        for d in decls {
            writeln!(out, "{} :: {}, {}", d.name, d.alloc, d.ty)?;
        }
        let order = self
            .functions
            .keys()
            .filter(|&f| f != self.main)
            .chain([self.main]);
        for f in order {
            if let Some(func) = self.functions.get(f) {
                out.write_char('\n')?;
                write_function(&mut out, self, func)?;
            }
        }
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use crate::{KernelId, ProgramBuilder, Type};

    #[test]
    fn prints_declarations_functions_and_ops() {
        let mut b = ProgramBuilder::new();
        let n = b.var("n", Type::I64);
        let c = b.var("cond", Type::BOOL);
        let ans = b.var("ans", Type::I64);
        let f = b.function("f");
        b.signature(f, &[n], &[ans]);
        let e = b.block(f, "enter_f");
        let t = b.block(f, "then");
        let el = b.block(f, "else");
        b.prim(e, &[c], &[n], KernelId::new(0), "n >\n    1");
        b.branch(e, c, t, el);
        b.prim(t, &[ans], &[n], KernelId::new(1), "n - 1");
        b.pop(t, &[n]);
        b.ret(t);
        b.assign(el, &[ans], &[n]);
        b.ret(el);
        let p = b.finish_with_entry(f).unwrap();
        let text = p.to_string();
        let expected = "\
__program_counter__ :: full, i32
ans :: full, i64
cond :: full, bool
n :: full, i64

def f(n):
  returns ans
  enter_f:
    cond = prim(n) by n > 1
    branch(cond, then, else)
  then:
    ans = prim(n) by n - 1
    pop(n)
    return
  else:
    ans = prim(n) by assign
    return

def main(n):
  returns ans
  main_entry:
    ans = call(f, n)
    return
";
        assert_eq!(text, expected);
    }
}

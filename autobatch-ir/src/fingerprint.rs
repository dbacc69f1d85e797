//! A program's fingerprint: one number for everything about it but its names, the same
//! wherever it is computed (in `#[autobatch]` at compile time and in the runtime), so code
//! generated for a program can check that the program it runs on is that one.

use crate::program::Program;
use std::hash::{Hash, Hasher};

/// FNV-1a over the bytes a value's `Hash` implementation writes: no random keys, so the same
/// program gives the same number in every process built by the same compiler.
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// The fingerprint of `program`: its variables' types and allocations, its functions'
/// signatures and blocks, every op (kernel, variables, in-place writes, source text) and
/// terminator, in order; names of variables, blocks and functions are left out (the linker
/// prefixes them with the function's path). Two programs with the same fingerprint run
/// alike in every interpreter (barring a hash collision).
pub fn fingerprint(program: &Program) -> u64 {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    program.vars.len().hash(&mut h);
    for v in program.vars.iter() {
        (&v.ty, v.alloc).hash(&mut h);
    }
    program.functions.len().hash(&mut h);
    for f in program.functions.iter() {
        (&f.params, &f.returns, &f.blocks).hash(&mut h);
    }
    program.blocks.len().hash(&mut h);
    for b in program.blocks.iter() {
        (&b.ops, &b.term).hash(&mut h);
    }
    (program.main, program.pc).hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::fingerprint;
    use crate::{Allocation, KernelId, ProgramBuilder, Type};

    /// `f(x) = x + 1` with its names made from `prefix` and the kernel's text `source`.
    fn program(prefix: &str, source: &str, alloc: Allocation) -> crate::Program {
        let mut b = ProgramBuilder::new();
        let f = b.function(&format!("{prefix}f"));
        let x = b.var(&format!("{prefix}x"), Type::scalar(crate::DType::I64));
        let y = b.var(&format!("{prefix}y"), Type::scalar(crate::DType::I64));
        b.set_allocation(y, alloc);
        let entry = b.block(f, &format!("{prefix}entry"));
        b.prim(entry, &[y], &[x], KernelId::new(0), source);
        b.ret(entry);
        b.signature(f, &[x], &[y]);
        b.finish_with_entry(f).unwrap().into_program()
    }

    #[test]
    fn names_do_not_count_and_everything_else_does() {
        let base = fingerprint(&program("", "x + 1", Allocation::Register));
        assert_eq!(
            base,
            fingerprint(&program("g.", "x + 1", Allocation::Register))
        );
        assert_ne!(
            base,
            fingerprint(&program("", "x + 2", Allocation::Register))
        );
        assert_ne!(base, fingerprint(&program("", "x + 1", Allocation::Full)));
    }
}

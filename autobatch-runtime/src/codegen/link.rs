//! Linking `#[autobatch]` functions into one Program with its kernel table.
//!
//! Each annotated function's generated code calls [`Linker::declare`] to add itself, declaring
//! itself first so recursion and mutual recursion terminate, then defining its callees through
//! their own generated code. The entry's [`Executable`] is built once per program.

use crate::compiled::CompiledBlocks;
use crate::error::{Result, RuntimeError};
use crate::kernel::{ContextType, Kernel};
use crate::Executable;
use autobatch_ir::{Allocation, Block, FuncId, KernelId, ProgramBuilder, Type, Var};
use std::collections::HashMap;

/// What a call in `#[autobatch]` code resolves to when the program is linked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Callee {
    /// Another `#[autobatch]` function: a `call` op.
    Function(FuncId),
    /// A `#[primitive]`: a primitive op running this kernel.
    Primitive(KernelId),
}

/// Collects functions, variables, blocks and kernels while `#[autobatch]` functions define
/// themselves.
pub struct Linker {
    builder: ProgramBuilder,
    kernels: Vec<Kernel>,
    defined: HashMap<&'static str, FuncId>,
    primitives: HashMap<&'static str, KernelId>,
    prefixes: Vec<String>,
    exact: bool,
    /// The context type read by the functions and primitives defined so far, and where.
    context: Option<(ContextType, &'static str)>,
    /// A second, different context type, and where it was read (an error at `finish`).
    conflict: Option<(ContextType, &'static str)>,
    /// Compiled blocks offered by functions for the program each would be the entry of.
    compiled: HashMap<FuncId, CompiledBlocks>,
}

impl Default for Linker {
    fn default() -> Self {
        Self::new()
    }
}

impl Linker {
    /// An empty linker.
    pub fn new() -> Self {
        Linker {
            builder: ProgramBuilder::new(),
            kernels: Vec::new(),
            defined: HashMap::new(),
            primitives: HashMap::new(),
            prefixes: Vec::new(),
            exact: true,
            context: None,
            conflict: None,
            compiled: HashMap::new(),
        }
    }

    /// The function registered under `key` (its unique path), or `None` and a fresh declaration
    /// named after `name` that the caller must then define.
    pub fn declare(
        &mut self,
        key: &'static str,
        name: &str,
    ) -> std::result::Result<FuncId, FuncId> {
        if let Some(&f) = self.defined.get(key) {
            return Ok(f);
        }
        let mut unique = name.to_string();
        let mut n = 1;
        while self.prefixes.contains(&unique) {
            n += 1;
            unique = format!("{name}#{n}");
        }
        let f = self.builder.function(&unique);
        self.prefixes.push(unique);
        self.defined.insert(key, f);
        Err(f)
    }

    /// The kernel of the primitive registered under `key`, registering `make()` the first time.
    pub fn primitive(&mut self, key: &'static str, make: impl FnOnce() -> Kernel) -> KernelId {
        if let Some(&k) = self.primitives.get(key) {
            return k;
        }
        let k = self.kernel(make());
        self.primitives.insert(key, k);
        k
    }

    /// Adds a call of `callee` to block `b`: a `call` op for a function, a primitive op for a
    /// primitive (named `name` in the printed program).
    pub fn call(&mut self, b: Block, callee: Callee, ins: &[Var], outs: &[Var], name: &str) {
        match callee {
            Callee::Function(f) => self.builder.call(b, f, ins, outs),
            Callee::Primitive(k) => self.builder.prim(b, outs, ins, k, name),
        }
    }

    /// Records that the function or primitive registered under `key` reads a context of type
    /// `ty`: the program must be run with one. Every function and primitive of a program reads
    /// the same type; a second one fails [`finish`](Self::finish).
    pub fn context(&mut self, key: &'static str, ty: ContextType) {
        match self.context {
            None => self.context = Some((ty, key)),
            Some((have, _)) if have == ty => {}
            Some(_) => {
                self.conflict.get_or_insert((ty, key));
            }
        }
    }

    /// Offers `blocks`, compiled by `#[autobatch]` for the program `f` is the entry of (alone:
    /// the function and what the macro saw of it); used if `f` is the entry and the linked
    /// program is that one.
    pub fn compiled(&mut self, f: FuncId, blocks: CompiledBlocks) {
        self.compiled.insert(f, blocks);
    }

    /// Records that a function's compile-time allocation was conservative (it calls functions
    /// its macro could not see), so the linked program's allocation must be recomputed.
    pub fn inexact(&mut self) {
        self.exact = false;
    }

    fn prefix(&self, f: FuncId) -> &str {
        &self.prefixes[f.index()]
    }

    /// Declares variable `name` of function `f` (printed as `f.name`) with its allocation.
    pub fn var(&mut self, f: FuncId, name: &str, ty: Type, alloc: Allocation) -> Var {
        let full = format!("{}.{name}", self.prefix(f));
        let v = self.builder.var(&full, ty);
        self.builder.set_allocation(v, alloc);
        v
    }

    /// Appends block `name` to function `f` (printed as `f.name`).
    pub fn block(&mut self, f: FuncId, name: &str) -> Block {
        let full = format!("{}.{name}", self.prefix(f));
        self.builder.block(f, &full)
    }

    /// Registers a kernel, returning its id.
    pub fn kernel(&mut self, kernel: Kernel) -> KernelId {
        self.kernels.push(kernel);
        KernelId::new(self.kernels.len() - 1)
    }

    /// The builder, for signatures, ops and terminators.
    pub fn builder(&mut self) -> &mut ProgramBuilder {
        &mut self.builder
    }

    /// Finishes the program with `entry` as its entry function.
    pub fn finish(self, entry: FuncId) -> Result<Executable> {
        if let (Some((have, first)), Some((other, second))) = (self.context, self.conflict) {
            return Err(RuntimeError::Link(format!(
                "`{first}` reads a context of type `{}` but `{second}` one of type `{}`: every function and primitive of a program takes the same context type",
                have.name, other.name
            )));
        }
        let context = self.context.map(|(ty, _)| ty);
        let program = self.builder.finish_with_entry(entry).map_err(|e| match e {
            autobatch_ir::BuildError::Invalid(v) => RuntimeError::Invalid(v),
            other => RuntimeError::Link(other.to_string()),
        })?;
        let mut exe = if self.exact {
            Executable::with_allocations(program, self.kernels)
        } else {
            Executable::new(program, self.kernels)
        }?;
        if let Some(&compiled) = self.compiled.get(&entry) {
            exe.attach_compiled(compiled);
        }
        Ok(match context {
            Some(ty) => exe.expecting_context(ty),
            None => exe,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linked_function_is_declared_once() {
        let mut l = Linker::new();
        let f = l.declare("k", "f").unwrap_err();
        assert_eq!(l.declare("k", "f"), Ok(f));
        let g = l.declare("other::k", "f").unwrap_err();
        assert_ne!(f, g, "same name, different path: two functions");
    }

    #[test]
    fn two_context_types_in_one_program_fail_to_link() {
        let mut l = Linker::new();
        let f = l.declare("f", "f").unwrap_err();
        l.context("f", ContextType::of::<u8>());
        l.context("g", ContextType::of::<u8>());
        l.context("h", ContextType::of::<u16>());
        let b = l.block(f, "entry");
        l.builder().signature(f, &[], &[]);
        l.builder().ret(b);
        match l.finish(f) {
            Err(RuntimeError::Link(m)) => assert!(m.contains("`h`") && m.contains("u16"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}

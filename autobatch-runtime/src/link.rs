//! Linking `#[autobatch]` functions into one Program with its kernel table.
//!
//! Each annotated function's generated code calls [`Linker::declare`] to add itself, declaring
//! itself first so recursion and mutual recursion terminate, then defining its callees through
//! their own generated code. The entry's [`Executable`] is built once per program.

use crate::column::{Column, Element};
use crate::error::{Result, RuntimeError};
use crate::kernel::{FreshRows, Kernel, KernelError, OutLeaf};
use crate::vector::Vector;
use crate::Executable;
use autobatch_ir::{Allocation, Block, FuncId, KernelId, ProgramBuilder, Type, Var};
use ndarray::{Array1, Array2, ArrayBase, ArrayView1, ArrayView2, Axis, Data, Ix1, Ix2};
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
        let program = self.builder.finish_with_entry(entry).map_err(|e| match e {
            autobatch_ir::BuildError::Invalid(v) => RuntimeError::Invalid(v),
            other => RuntimeError::Link(other.to_string()),
        })?;
        if self.exact {
            Executable::with_allocations(program, self.kernels)
        } else {
            Executable::new(program, self.kernels)
        }
    }
}

/// A scalar input column from a 1-d view.
pub fn input<T: Element>(values: ArrayView1<'_, T>) -> Column {
    Column::from_view1(values)
}

/// A vector input column from a 2-d view (`[lanes, len]`).
pub fn input_vectors<T: Element>(values: ArrayView2<'_, T>) -> Column {
    Column::from_view2(values)
}

/// A 1-d output array from a scalar output column.
pub fn output<T: Element>(column: &Column) -> Result<Array1<T>> {
    column
        .as_array::<T>()
        .map(|a| a.index_axis(Axis(1), 0).to_owned())
        .ok_or_else(|| {
            RuntimeError::Link(format!(
                "output is {}, expected {}",
                column.dtype(),
                T::DTYPE
            ))
        })
}

/// A 2-d output array (`[lanes, len]`) from a vector output column.
pub fn output_vectors<T: Element>(column: &Column) -> Result<Array2<T>> {
    column.as_array::<T>().cloned().ok_or_else(|| {
        RuntimeError::Link(format!(
            "output is {}, expected {}",
            column.dtype(),
            T::DTYPE
        ))
    })
}

/// Typed mutable access to one dense kernel output leaf.
pub fn out_leaf<T: Element>(column: &mut Column) -> std::result::Result<&mut [T], KernelError> {
    let dtype = column.dtype();
    column.as_slice_mut::<T>().ok_or_else(|| {
        KernelError::whole(format!("kernel output is {dtype}, expected {}", T::DTYPE))
    })
}

/// A vector output leaf of a lane-wise kernel: one row of the run's vector length per active
/// lane, in a dense column or written in place into the interpreter's vector storage.
pub struct VectorOut<'a>(Rows<'a>);

enum Rows<'a> {
    Dense { data: &'a mut [f64], width: usize },
    Fresh(FreshRows<'a>),
}

impl<'a> VectorOut<'a> {
    /// Wraps a dense `f64` output column.
    pub fn new(column: &'a mut Column) -> std::result::Result<Self, KernelError> {
        let width = column.width();
        Ok(VectorOut(Rows::Dense {
            data: out_leaf::<f64>(column)?,
            width,
        }))
    }

    pub(crate) fn from_leaf(leaf: OutLeaf<'a>) -> std::result::Result<Self, KernelError> {
        match leaf {
            OutLeaf::Dense(c) => VectorOut::new(c),
            OutLeaf::Fresh(f) => Ok(VectorOut(Rows::Fresh(f))),
        }
    }

    fn width(&self) -> usize {
        match &self.0 {
            Rows::Dense { width, .. } => *width,
            Rows::Fresh(f) => f.width(),
        }
    }

    /// Row `k`, to write in place (a compiled vector kernel fills it element by element).
    #[inline]
    pub fn row_mut(&mut self, k: usize) -> &mut [f64] {
        match &mut self.0 {
            Rows::Dense { data, width } => &mut data[k * *width..(k + 1) * *width],
            Rows::Fresh(f) => f.row_mut(k),
        }
    }

    /// Stores `value` as row `k`; a vector of another length is an error naming the lane.
    pub fn store(&mut self, k: usize, value: &Vector) -> std::result::Result<(), KernelError> {
        let width = self.width();
        if value.len() != width {
            return Err(KernelError::at(
                k,
                format!(
                    "a vector of length {} where this run's vectors have length {width}",
                    value.len(),
                ),
            ));
        }
        self.row_mut(k).copy_from_slice(value.as_slice());
        Ok(())
    }
}

thread_local! {
    /// Buffers of finished [`Scratch`]es, for the next ones on this thread.
    static SCRATCH: std::cell::RefCell<Vec<Vec<f64>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Working memory of one kernel call (a compiled vector kernel's scratch rows), taken from a
/// per-thread pool and given back when dropped, so a kernel call does not allocate.
pub struct Scratch(Vec<f64>);

impl Scratch {
    /// At least `len` elements (their values are unspecified: write before reading).
    pub fn new(len: usize) -> Scratch {
        let mut v = SCRATCH
            .with(|pool| pool.borrow_mut().pop())
            .unwrap_or_default();
        if v.len() < len {
            v.resize(len, 0.0);
        }
        Scratch(v)
    }
}

impl std::ops::Deref for Scratch {
    type Target = [f64];
    fn deref(&self) -> &[f64] {
        &self.0
    }
}

impl std::ops::DerefMut for Scratch {
    fn deref_mut(&mut self) -> &mut [f64] {
        &mut self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let v = std::mem::take(&mut self.0);
        SCRATCH.with(|pool| pool.borrow_mut().push(v));
    }
}

/// Input `i` of a batched kernel as a 1-d view (one element per active lane).
pub fn batched_input<'a, T: Element>(
    inputs: &'a [&'a Column],
    i: usize,
) -> std::result::Result<ArrayView1<'a, T>, KernelError> {
    let c = inputs
        .get(i)
        .ok_or_else(|| KernelError::whole(format!("batched input {i} is missing")))?;
    let a = c.as_array::<T>().ok_or_else(|| {
        KernelError::whole(format!(
            "batched input {i} is {}, expected {}",
            c.dtype(),
            T::DTYPE
        ))
    })?;
    Ok(a.index_axis(Axis(1), 0))
}

/// Input `i` of a batched kernel as a 2-d view (`[active lanes, len]`).
pub fn batched_input_vectors<'a, T: Element>(
    inputs: &'a [&'a Column],
    i: usize,
) -> std::result::Result<ArrayView2<'a, T>, KernelError> {
    let c = inputs
        .get(i)
        .ok_or_else(|| KernelError::whole(format!("batched input {i} is missing")))?;
    c.as_array::<T>().map(|a| a.view()).ok_or_else(|| {
        KernelError::whole(format!(
            "batched input {i} is {}, expected {}",
            c.dtype(),
            T::DTYPE
        ))
    })
}

/// Stores a batched kernel's 1-d result into its dense output leaf, checking the shape. An
/// owned contiguous array becomes the leaf (no copy); anything else is copied.
pub fn batched_output<T: Element, S: Data<Elem = T>>(
    out: &mut Column,
    value: ArrayBase<S, Ix1>,
) -> std::result::Result<(), KernelError> {
    let rows = out.rows();
    if value.len() != rows {
        return Err(KernelError::whole(format!(
            "batched kernel returned {} rows for {rows} lanes",
            value.len()
        )));
    }
    if out.as_array::<T>().is_none() {
        return Err(KernelError::whole(format!(
            "kernel output is {}, expected {}",
            out.dtype(),
            T::DTYPE
        )));
    }
    match value.into_owned().into_shape_with_order((rows, 1)) {
        Ok(a) if a.is_standard_layout() => *out = T::column(a),
        Ok(a) => copy_into(out_leaf::<T>(out)?, a.iter(), a.as_slice()),
        Err(_) => {
            return Err(KernelError::whole(
                "batched kernel result has no 1-d layout",
            ))
        }
    }
    Ok(())
}

/// Stores a batched kernel's 2-d result into its dense vector output leaf, checking the shape.
/// An owned array in standard layout becomes the leaf (no copy); anything else is copied.
pub fn batched_output_vectors<T: Element, S: Data<Elem = T>>(
    out: &mut Column,
    value: ArrayBase<S, Ix2>,
) -> std::result::Result<(), KernelError> {
    let (rows, width) = (out.rows(), out.width());
    if value.dim() != (rows, width) {
        return Err(KernelError::whole(format!(
            "batched kernel returned shape {:?} for {rows} lanes of length {width}",
            value.dim()
        )));
    }
    let slice = out_leaf::<T>(out)?;
    if value.is_standard_layout() {
        *out = T::column(value.into_owned());
    } else {
        copy_into(slice, value.iter(), value.as_slice());
    }
    Ok(())
}

/// Copies a result into a kernel output: one `memcpy` when the result is contiguous.
fn copy_into<'a, T: Element>(
    out: &mut [T],
    values: impl Iterator<Item = &'a T>,
    contiguous: Option<&[T]>,
) {
    match contiguous {
        Some(src) => out.copy_from_slice(src),
        None => out.iter_mut().zip(values).for_each(|(o, v)| *o = *v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_of_the_wrong_type_are_link_errors() {
        let ints = Column::from_scalars(&[1i64, 2]);
        assert_eq!(output::<i64>(&ints).unwrap().to_vec(), vec![1, 2]);
        assert!(matches!(output::<f64>(&ints), Err(RuntimeError::Link(_))));
        assert!(matches!(
            output_vectors::<bool>(&ints),
            Err(RuntimeError::Link(_))
        ));
    }

    #[test]
    fn scratch_buffers_are_reused_and_large_enough() {
        let first = {
            let mut s = Scratch::new(8);
            s[7] = 1.0;
            s.as_ptr()
        };
        let again = Scratch::new(4);
        assert!(again.len() >= 4);
        assert_eq!(
            again.as_ptr(),
            first,
            "the pooled buffer is handed out again"
        );
        let nested = Scratch::new(16);
        assert_ne!(
            nested.as_ptr(),
            again.as_ptr(),
            "two live scratches never share memory"
        );
        assert!(nested.len() >= 16);
    }

    #[test]
    fn a_linked_function_is_declared_once() {
        let mut l = Linker::new();
        let f = l.declare("k", "f").unwrap_err();
        assert_eq!(l.declare("k", "f"), Ok(f));
        let g = l.declare("other::k", "f").unwrap_err();
        assert_ne!(f, g, "same name, different path: two functions");
    }
}

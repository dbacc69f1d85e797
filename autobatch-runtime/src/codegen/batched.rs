//! Typed inputs and outputs of a generated batched kernel (`#[primitive(batched = ..)]`):
//! views of its gathered input columns, and its result arrays stored into its output columns.

use crate::column::{Column, Element};
use crate::kernel::{typed_mut, KernelError};
use ndarray::{Array2, ArrayBase, ArrayView1, ArrayView2, Axis, Data, Ix1, Ix2};

/// Typed mutable access to one dense kernel output leaf.
pub fn out_leaf<T: Element>(column: &mut Column) -> Result<&mut [T], KernelError> {
    typed_mut(column, None)
}

/// Input `i` of a batched kernel as its typed `[active lanes, width]` array.
fn batched_array<'a, T: Element>(
    inputs: &'a [&'a Column],
    i: usize,
) -> Result<&'a Array2<T>, KernelError> {
    let c = inputs
        .get(i)
        .ok_or_else(|| KernelError::whole(format!("batched input {i} is missing")))?;
    c.as_array::<T>().ok_or_else(|| {
        KernelError::whole(format!(
            "batched input {i} is {}, expected {}",
            c.dtype(),
            T::DTYPE
        ))
    })
}

/// Input `i` of a batched kernel as a 1-d view (one element per active lane).
pub fn batched_input<'a, T: Element>(
    inputs: &'a [&'a Column],
    i: usize,
) -> Result<ArrayView1<'a, T>, KernelError> {
    Ok(batched_array(inputs, i)?.index_axis(Axis(1), 0))
}

/// Input `i` of a batched kernel as a 2-d view (`[active lanes, len]`).
pub fn batched_input_vectors<'a, T: Element>(
    inputs: &'a [&'a Column],
    i: usize,
) -> Result<ArrayView2<'a, T>, KernelError> {
    Ok(batched_array(inputs, i)?.view())
}

/// Stores a batched kernel's 1-d result into its dense output leaf, checking the shape. An
/// owned contiguous array becomes the leaf (no copy); anything else is copied.
pub fn batched_output<T: Element, S: Data<Elem = T>>(
    out: &mut Column,
    value: ArrayBase<S, Ix1>,
) -> Result<(), KernelError> {
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
) -> Result<(), KernelError> {
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

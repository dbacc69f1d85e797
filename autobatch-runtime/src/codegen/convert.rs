//! Conversions between the typed arrays of a generated `batch` entry point and the runtime's
//! columns, with a typed error when a linked program's output is not what the entry expects;
//! and between an `#[autobatch] struct`, its struct of arrays and its columns ([`Batched`]).

use crate::column::{Column, Element};
use crate::error::{Result, RuntimeError};
use crate::vector::Vector;
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};

/// What every `#[autobatch] struct` is in batches (implemented by the attribute): its struct
/// of arrays and the conversions generated code uses, reached through the struct's own name
/// (`<Tree as Batched>::Batch`), so a struct nested in another or passed to a `batch` entry
/// point needs only the struct in scope.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an #[autobatch] struct",
    label = "used in #[autobatch] code",
    note = "add `#[autobatch]` to `struct {Self}` to use it in #[autobatch] functions"
)]
pub trait Batched: Sized {
    /// The struct of arrays (`<Name>Batch`).
    type Batch;
    /// How many columns (leaves) one value is.
    const LEAVES: usize;
    /// The lanes' values as arrays; an error if two lanes' `Vector` fields differ in length.
    fn from_refs(lanes: &[&Self]) -> Result<Self::Batch>;
    /// Lane `lane`'s value, `None` past the last row of any field.
    fn lane(batch: &Self::Batch, lane: usize) -> Option<Self>;
    /// How many lanes.
    fn rows(batch: &Self::Batch) -> usize;
    /// Pushes the leaves' columns in order, as a `batch` entry point passes them.
    fn push_columns(batch: &Self::Batch, out: &mut Vec<Column>);
    /// The struct of arrays from the leaves' columns in order (at least [`Self::LEAVES`]).
    fn from_columns(columns: &[Column]) -> Result<Self::Batch>;
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

/// The `[lanes, len]` rows of a struct-of-arrays `Vector` field, one lane's vector per row;
/// `field` names it in the error when two lanes' vectors differ in length.
pub fn vector_rows<'a>(
    field: &str,
    lanes: usize,
    vectors: impl Iterator<Item = &'a Vector>,
) -> Result<Array2<f64>> {
    let mut len = None;
    let mut values = Vec::new();
    for (lane, v) in vectors.enumerate() {
        let expected = *len.get_or_insert(v.len());
        if v.len() != expected {
            return Err(RuntimeError::VectorLength {
                input: format!("{field} (lane {lane})"),
                found: v.len(),
                expected,
            });
        }
        values.extend_from_slice(v.as_slice());
    }
    let shape = (lanes, len.unwrap_or(0));
    Array2::from_shape_vec(shape, values).map_err(|e| RuntimeError::Link(e.to_string()))
}

/// One lane's vector of a struct-of-arrays `Vector` field.
pub fn vector_row(rows: &Array2<f64>, lane: usize) -> Vector {
    Vector::from_slice(&rows.row(lane).to_vec())
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
    fn vector_fields_become_rows_and_back_and_ragged_ones_are_refused() {
        let vs = [
            Vector::from_slice(&[1.0, 2.0]),
            Vector::from_slice(&[3.0, 4.0]),
        ];
        let rows = vector_rows("Tree.q", 2, vs.iter()).unwrap();
        assert_eq!(rows.shape(), &[2, 2]);
        assert!(vector_row(&rows, 1) == vs[1]);
        let ragged = [Vector::from_slice(&[1.0]), Vector::from_slice(&[3.0, 4.0])];
        let e = vector_rows("Tree.q", 2, ragged.iter()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "vector input `Tree.q (lane 1)` has length 2, but vectors in this run have length 1"
        );
        assert_eq!(
            vector_rows("Tree.q", 0, [].iter()).unwrap().shape(),
            &[0, 0]
        );
    }

    #[test]
    fn narrow_and_pointer_sized_integers_convert_at_their_own_width() {
        let bytes = input(ndarray::array![0u8, 255].view());
        assert_eq!(output::<u8>(&bytes).unwrap().to_vec(), vec![0, 255]);
        let err = output::<i8>(&bytes).unwrap_err().to_string();
        assert!(err.contains("output is u8, expected i8"), "{err}");
        let sizes = input(ndarray::array![usize::MAX].view());
        assert_eq!(output::<usize>(&sizes).unwrap()[0], usize::MAX);
        assert!(output::<u64>(&sizes).is_err());
    }
}

//! Conversions between the typed arrays of a generated `batch` entry point and the runtime's
//! columns, with a typed error when a linked program's output is not what the entry expects.

use crate::column::{Column, Element};
use crate::error::{Result, RuntimeError};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};

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

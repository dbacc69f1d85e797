//! `Column`: a typed `[rows, width]` ndarray holding one tensor leaf for many lanes.
//!
//! Storage, kernel inputs and kernel outputs are all columns. A scalar leaf has width 1, a
//! vector leaf the program's vector length. Rows are lanes (storage) or active-lane positions
//! (dense kernel inputs and outputs).

use crate::random::Key;
use autobatch_ir::{DType, Shape, TensorType};
use ndarray::{Array2, ArrayView1, ArrayView2, Axis, Slice};
use std::fmt::Debug;

/// A typed column of rows, one per lane (or per active lane).
///
/// The inputs of [`Executable::run`](crate::Executable::run) and of a `#[primitive]`'s
/// generated `check_agreement` are columns, one per input leaf:
///
/// ```
/// use autobatch_runtime::ndarray::array;
/// use autobatch_runtime::Column;
///
/// let xs = Column::from_view1(array![1.0, 2.0, 3.0].view()); // a scalar per lane
/// let qs = Column::from_view2(array![[0.1, 0.2], [0.3, 0.4]].view()); // a vector per lane
/// let ns = Column::from_scalars(&[7i64, 8]);
/// assert_eq!((xs.rows(), xs.width()), (3, 1));
/// assert_eq!((qs.rows(), qs.width()), (2, 2));
/// assert_eq!(ns.as_slice::<i64>(), Some(&[7, 8][..]));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    /// `bool` elements.
    Bool(Array2<bool>),
    /// `i32` elements.
    I32(Array2<i32>),
    /// `i64` elements.
    I64(Array2<i64>),
    /// `f32` elements.
    F32(Array2<f32>),
    /// `f64` elements.
    F64(Array2<f64>),
    /// Random-number keys.
    Key(Array2<Key>),
    /// `i8` elements.
    I8(Array2<i8>),
    /// `i16` elements.
    I16(Array2<i16>),
    /// `isize` elements.
    Isize(Array2<isize>),
    /// `u8` elements.
    U8(Array2<u8>),
    /// `u16` elements.
    U16(Array2<u16>),
    /// `u32` elements.
    U32(Array2<u32>),
    /// `u64` elements.
    U64(Array2<u64>),
    /// `usize` elements.
    Usize(Array2<usize>),
}

/// Applies `$body` to the typed array inside a column, binding it to `$a`.
macro_rules! with_array {
    ($col:expr, $a:ident => $body:expr) => {
        match $col {
            Column::Bool($a) => $body,
            Column::I32($a) => $body,
            Column::I64($a) => $body,
            Column::F32($a) => $body,
            Column::F64($a) => $body,
            Column::Key($a) => $body,
            Column::I8($a) => $body,
            Column::I16($a) => $body,
            Column::Isize($a) => $body,
            Column::U8($a) => $body,
            Column::U16($a) => $body,
            Column::U32($a) => $body,
            Column::U64($a) => $body,
            Column::Usize($a) => $body,
        }
    };
}

/// An element type a column can hold.
pub trait Element: Copy + Default + PartialEq + Debug + Send + Sync + 'static {
    /// The IR dtype of this element type.
    const DTYPE: DType;
    /// The typed array inside `column`, if it holds this type.
    fn array(column: &Column) -> Option<&Array2<Self>>;
    /// The typed array inside `column`, mutably, if it holds this type.
    fn array_mut(column: &mut Column) -> Option<&mut Array2<Self>>;
    /// Wraps a typed array.
    fn column(array: Array2<Self>) -> Column;
}

macro_rules! element {
    ($t:ty, $variant:ident, $dtype:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            fn array(column: &Column) -> Option<&Array2<Self>> {
                match column {
                    Column::$variant(a) => Some(a),
                    _ => None,
                }
            }
            fn array_mut(column: &mut Column) -> Option<&mut Array2<Self>> {
                match column {
                    Column::$variant(a) => Some(a),
                    _ => None,
                }
            }
            fn column(array: Array2<Self>) -> Column {
                Column::$variant(array)
            }
        }
    };
}
element!(bool, Bool, Bool);
element!(i32, I32, I32);
element!(i64, I64, I64);
element!(f32, F32, F32);
element!(f64, F64, F64);
element!(Key, Key, Key);
element!(i8, I8, I8);
element!(i16, I16, I16);
element!(isize, Isize, Isize);
element!(u8, U8, U8);
element!(u16, U16, U16);
element!(u32, U32, U32);
element!(u64, U64, U64);
element!(usize, Usize, Usize);

/// Calls `$f::<T>($args)` with `T` the element type of `$dtype`.
macro_rules! with_element {
    ($dtype:expr, $f:ident($($args:expr),*)) => {
        match $dtype {
            DType::Bool => $f::<bool>($($args),*),
            DType::I32 => $f::<i32>($($args),*),
            DType::I64 => $f::<i64>($($args),*),
            DType::F32 => $f::<f32>($($args),*),
            DType::F64 => $f::<f64>($($args),*),
            DType::Key => $f::<Key>($($args),*),
            DType::I8 => $f::<i8>($($args),*),
            DType::I16 => $f::<i16>($($args),*),
            DType::Isize => $f::<isize>($($args),*),
            DType::U8 => $f::<u8>($($args),*),
            DType::U16 => $f::<u16>($($args),*),
            DType::U32 => $f::<u32>($($args),*),
            DType::U64 => $f::<u64>($($args),*),
            DType::Usize => $f::<usize>($($args),*),
        }
    };
}

impl Column {
    /// A zero-filled (`false`, `0`) column.
    pub fn zeros(dtype: DType, rows: usize, width: usize) -> Column {
        fn zeros<T: Element>(rows: usize, width: usize) -> Column {
            T::column(Array2::from_elem((rows, width), T::default()))
        }
        with_element!(dtype, zeros(rows, width))
    }

    /// Bytes of one element of `dtype` (the host's width for `isize` and `usize`).
    pub(crate) fn element_bytes(dtype: DType) -> usize {
        fn size<T: Element>() -> usize {
            std::mem::size_of::<T>()
        }
        with_element!(dtype, size())
    }

    /// This column's allocation reused for `rows` rows (same dtype and width); it reallocates
    /// only to grow. Rows it had keep their old values (a kernel overwrites every output row),
    /// and so do rows it held before it shrank: a column keeps every element its allocation
    /// was given and shrinks by viewing fewer rows of them, so a pooled column that shrank
    /// grows back without zero-filling. Only rows it never held are zero.
    pub(crate) fn resized(mut self, rows: usize) -> Column {
        if self.rows() == rows {
            return self;
        }
        if rows < self.rows() {
            // Fewer rows: a narrower view of the same elements, no new array.
            with_array!(&mut self, a => a.slice_axis_inplace(Axis(0), Slice::from(..rows)));
            return self;
        }
        fn resize<T: Element>(a: Array2<T>, rows: usize) -> Column {
            let width = a.ncols();
            let (mut v, offset) = a.into_raw_vec_and_offset();
            // Elements before the first row (an array sliced from the front) are not rows.
            let offset = offset.unwrap_or(0).min(v.len());
            if offset > 0 {
                v.drain(..offset);
            }
            if v.len() < rows * width {
                v.resize(rows * width, T::default());
            }
            let held = match width {
                0 => rows,
                w => v.len() / w,
            };
            v.truncate(held * width);
            let mut array = Array2::from_shape_vec((held, width), v)
                .unwrap_or_else(|_| Array2::from_elem((rows, width), T::default()));
            array.slice_axis_inplace(Axis(0), Slice::from(..rows));
            T::column(array)
        }
        with_array!(self, a => resize(a, rows))
    }

    /// [`resized`](Self::resized) in place: `rows` rows, keeping what `resized` keeps.
    pub(crate) fn resize_to(&mut self, rows: usize) {
        if self.rows() != rows {
            let empty = Column::zeros(self.dtype(), 0, self.width());
            *self = std::mem::replace(self, empty).resized(rows);
        }
    }

    /// Sets every element to zero (`false`, the zero key).
    pub(crate) fn fill_zero(&mut self) {
        with_array!(self, a => a.fill(Default::default()))
    }

    /// A column of scalars (width 1) from a slice.
    pub fn from_scalars<T: Element>(values: &[T]) -> Column {
        T::column(Array2::from_shape_fn((values.len(), 1), |(r, _)| values[r]))
    }

    /// A column of scalars from a 1-d view (one row per lane).
    pub fn from_view1<T: Element>(values: ArrayView1<'_, T>) -> Column {
        T::column(
            values
                .to_owned()
                .insert_axis(ndarray::Axis(1))
                .as_standard_layout()
                .into_owned(),
        )
    }

    /// A column of vectors from a 2-d view (`[lanes, len]`).
    pub fn from_view2<T: Element>(values: ArrayView2<'_, T>) -> Column {
        T::column(values.as_standard_layout().into_owned())
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        fn dtype_of<T: Element>(_: &Array2<T>) -> DType {
            T::DTYPE
        }
        with_array!(self, a => dtype_of(a))
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        with_array!(self, a => a.nrows())
    }

    /// Elements per row (1 for scalars).
    pub fn width(&self) -> usize {
        with_array!(self, a => a.ncols())
    }

    /// True if this column can hold leaves of type `ty` with vector length `vector_len`.
    pub fn fits(&self, ty: TensorType, vector_len: usize) -> bool {
        self.dtype() == ty.dtype && self.width() == width_of(ty, vector_len)
    }

    /// The typed array, if the column holds `T`.
    pub fn as_array<T: Element>(&self) -> Option<&Array2<T>> {
        T::array(self)
    }

    /// The typed elements in row-major order, if the column holds `T`.
    pub fn as_slice<T: Element>(&self) -> Option<&[T]> {
        T::array(self).and_then(|a| a.as_slice())
    }

    /// The typed elements in row-major order, mutably, if the column holds `T`.
    pub fn as_slice_mut<T: Element>(&mut self) -> Option<&mut [T]> {
        T::array_mut(self).and_then(|a| a.as_slice_mut())
    }

    /// Copies rows of `src` into rows of `self`: for each `(to, from)` pair, row `from` of `src`
    /// into row `to` of `self`. Dispatches on the dtype once, then copies in a tight loop.
    /// Returns `false` (copying nothing) if the dtypes or widths differ.
    pub(crate) fn copy_rows(
        &mut self,
        src: &Column,
        pairs: impl IntoIterator<Item = (usize, usize)>,
    ) -> bool {
        self.copy_runs(src, pairs.into_iter().map(|(to, from)| (to, from, 1)))
    }

    /// Copies runs of rows of `src` into `self`: for each `(to, from, len)`, rows
    /// `from..from + len` of `src` into rows `to..to + len` of `self`, one slice copy each.
    /// Returns `false` (copying nothing) if the dtypes or widths differ.
    fn copy_runs(
        &mut self,
        src: &Column,
        runs: impl IntoIterator<Item = (usize, usize, usize)>,
    ) -> bool {
        fn copy<T: Copy>(
            dst: &mut Array2<T>,
            src: &Array2<T>,
            runs: impl IntoIterator<Item = (usize, usize, usize)>,
        ) -> bool {
            let w = dst.ncols();
            if w != src.ncols() {
                return false;
            }
            let (Some(d), Some(s)) = (dst.as_slice_mut(), src.as_slice()) else {
                return false;
            };
            for (to, from, len) in runs {
                if w == 1 && len == 1 {
                    d[to] = s[from];
                } else {
                    d[to * w..(to + len) * w].copy_from_slice(&s[from * w..(from + len) * w]);
                }
            }
            true
        }
        with_array!(self, d => match Element::array(src) {
            Some(s) => copy(d, s, runs),
            None => false,
        })
    }

    /// Copies row `from` of `src` into row `to` of `self` (same dtype and width required).
    pub(crate) fn copy_row_from(&mut self, to: usize, src: &Column, from: usize) -> bool {
        self.copy_rows(src, [(to, from)])
    }

    /// A new dense column holding `rows` of `self` in order (consecutive rows copied as one
    /// slice).
    pub fn gather(&self, rows: &[usize]) -> Column {
        let mut out = Column::zeros(self.dtype(), rows.len(), self.width());
        out.copy_runs(self, runs(rows));
        out
    }

    /// Writes row `k` of dense `src` into row `rows[k]` of `self`, for every `k` (consecutive
    /// rows copied as one slice).
    pub fn scatter(&mut self, rows: &[usize], src: &Column) {
        self.copy_runs(src, runs(rows).map(|(k, row, len)| (row, k, len)));
    }
}

/// The runs of consecutive values in `rows`: `(k, rows[k], len)` for each longest stretch
/// `rows[k..k + len]` of `rows[k], rows[k] + 1, ..`.
fn runs(rows: &[usize]) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
    let mut k = 0;
    std::iter::from_fn(move || {
        let &first = rows.get(k)?;
        let len = 1
            + (rows[k + 1..].iter().zip(first + 1..))
                .take_while(|(&r, next)| r == *next)
                .count();
        let run = (k, first, len);
        k += len;
        Some(run)
    })
}

/// The row width of a leaf of type `ty` when vectors have `vector_len` elements.
pub fn width_of(ty: TensorType, vector_len: usize) -> usize {
    match ty.shape {
        Shape::Scalar => 1,
        Shape::Vector => vector_len,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_scatter_round_trip() {
        let c = Column::from_scalars(&[10i64, 11, 12, 13]);
        let g = c.gather(&[3, 1]);
        assert_eq!(g.as_slice::<i64>().unwrap(), &[13, 11]);
        let mut d = Column::zeros(DType::I64, 4, 1);
        d.scatter(&[0, 2], &g);
        assert_eq!(d.as_slice::<i64>().unwrap(), &[13, 0, 11, 0]);
        assert_eq!(c.dtype(), DType::I64);
        assert!(c.as_slice::<f64>().is_none());
    }

    /// Rows in runs of consecutive indices (copied a run at a time) land where single rows
    /// would, in vector columns too.
    #[test]
    fn gathers_and_scatters_copy_runs_of_rows_as_single_rows_would() {
        assert_eq!(
            runs(&[4, 5, 6, 0, 2, 3, 9]).collect::<Vec<_>>(),
            [(0, 4, 3), (3, 0, 1), (4, 2, 2), (6, 9, 1)]
        );
        assert_eq!(runs(&[]).count(), 0);
        let rows: Vec<[f64; 2]> = (0..10).map(|r| [r as f64, -(r as f64)]).collect();
        let c = Column::from_view2(ndarray::Array2::from(rows).view());
        let lanes = [4, 5, 6, 0, 2, 3, 9];
        let g = c.gather(&lanes);
        let expected: Vec<f64> = lanes
            .iter()
            .flat_map(|&r| [r as f64, -(r as f64)])
            .collect();
        assert_eq!(g.as_slice::<f64>().unwrap(), &expected[..]);
        let mut back = Column::zeros(DType::F64, 10, 2);
        back.scatter(&lanes, &g);
        for r in 0..10 {
            let row = &back.as_slice::<f64>().unwrap()[2 * r..2 * r + 2];
            let want = match lanes.contains(&r) {
                true => [r as f64, -(r as f64)],
                false => [0.0, 0.0],
            };
            assert_eq!(row, want, "row {r}");
        }
    }

    #[test]
    fn reused_columns_take_the_new_size() {
        let c = Column::from_view2(ndarray::array![[1.0, 2.0], [3.0, 4.0]].view());
        let z = c.resized(3);
        assert_eq!(
            z.as_slice::<f64>().unwrap(),
            &[1.0, 2.0, 3.0, 4.0, 0.0, 0.0]
        );
        assert_eq!((z.rows(), z.width()), (3, 2));
        let one = z.resized(1);
        assert_eq!(
            (one.rows(), one.as_slice::<f64>().unwrap()),
            (1, &[1.0, 2.0][..])
        );
        // Grown back, it shows the rows it held before it shrank, and zeros past them.
        let back = one.resized(4);
        let held = [1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0];
        assert_eq!(back.as_slice::<f64>().unwrap(), &held);
    }

    #[test]
    fn vector_rows_copy_whole_rows() {
        let c = Column::from_view2(ndarray::array![[1.0, 2.0], [3.0, 4.0]].view());
        let g = c.gather(&[1]);
        assert_eq!(g.as_slice::<f64>().unwrap(), &[3.0, 4.0]);
        assert!(c.fits(TensorType::vector(DType::F64), 2));
        assert!(!c.fits(TensorType::scalar(DType::F64), 2));
    }

    /// Every integer dtype has its own column, zeros, element size, gather and scatter.
    #[test]
    fn every_integer_dtype_has_a_column() {
        fn round_trip<T: Element + From<u8>>() {
            let c = Column::from_scalars(&[T::from(1), T::from(2), T::from(3)]);
            assert_eq!(c.dtype(), T::DTYPE);
            assert_eq!(Column::element_bytes(T::DTYPE), std::mem::size_of::<T>());
            let mut z = Column::zeros(T::DTYPE, 3, 1);
            z.scatter(&[2, 0], &c.gather(&[0, 2]));
            assert_eq!(
                z.as_slice::<T>().unwrap(),
                &[T::from(3), T::default(), T::from(1)]
            );
            assert!(z.fits(TensorType::scalar(T::DTYPE), 7));
            assert!(!z.copy_row_from(0, &Column::from_scalars(&[true]), 0));
        }
        round_trip::<i16>();
        round_trip::<i32>();
        round_trip::<i64>();
        round_trip::<isize>();
        round_trip::<u8>();
        round_trip::<u16>();
        round_trip::<u32>();
        round_trip::<u64>();
        round_trip::<usize>();
        let c = Column::from_scalars(&[-3i8, 4]);
        assert_eq!(c.dtype(), DType::I8);
        assert_eq!(c.resized(3).as_slice::<i8>().unwrap(), &[-3, 4, 0]);
        assert_eq!(
            Column::element_bytes(DType::Isize),
            std::mem::size_of::<isize>()
        );
    }
}

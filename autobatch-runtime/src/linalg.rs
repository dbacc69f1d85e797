//! The matrix product a batched gradient needs, [`rows_times`]: every chain's row times one
//! constant matrix, each row's result with the same bits whatever the batch, fast at the few
//! dozen rows a batched interpreter hands a kernel.
//!
//! A batched density's gradient is often `q B`, one row of `q` per active chain and `B` fixed
//! for the run (a Gaussian's precision, a regression's design matrix). A general matrix
//! product (ndarray's `dot`, through `matrixmultiply`) copies both operands into packed panels
//! on every call; at the rows a sampler's call sees (tens, where chains have taken different
//! paths) packing the constant `B` again and again is a large share of the call. The product
//! here reads both operands where they lie, row-major: for a block of six rows and eight
//! columns, each step over the inner dimension loads eight elements of one row of `B` and
//! multiplies them by one element of each of the six rows, into twelve accumulator registers
//! of four doubles (AVX2). Where the CPU has AVX-512 the registers hold eight doubles and a
//! block is six rows by sixteen columns: about 1.7 times the AVX2 blocks' speed on a
//! `[143, 100] x [100, 100]` product (290 against 490 ns a row on one core of a Xeon with
//! AVX-512).
//!
//! # When a general product is faster
//!
//! The columns of `B` a block reads over the whole inner dimension stay in the L1 cache while
//! every row passes them only for inner dimensions up to a few hundred, and the CPU decides
//! the rest. Measured side by side on one core (`[n, k] x [k, m]`, each returning a new
//! array): on one machine with AVX2 only, `[54, 100] x [100, 100]` took 26 us against 31 for
//! ndarray's `dot` (`matrixmultiply`), but `[143, 1000] x [1000, 25]` 247 us against 213; on a
//! Xeon with AVX-512, that shape took 153 us against 272 (207 with the AVX2 blocks), and
//! `[143, 25] x [25, 1000]` 111 against 217 (203). Time both on your shapes and machines; the
//! NUTS example's logistic regression, whose gradient is those two products, uses this one.
//!
//! # The same bits everywhere
//!
//! Each element of the result is one chain of fused multiply-adds over the inner dimension in
//! order, from zero: `c = fma(a[i][0], b[0][j], 0)`, then `fma(a[i][1], b[1][j], c)`, and so
//! on. Which rows share a block, how many there are, the thread and the vector instructions
//! used (AVX-512, else AVX2 and FMA, where the CPU has them, chosen at run time; plain
//! `f64::mul_add` elsewhere) change nothing: a chain's gradient has the same bits alone, in
//! any batch and on any of these CPUs.
//!
//! ```
//! use autobatch_runtime::linalg::rows_times;
//! use autobatch_runtime::ndarray::{array, s};
//!
//! let b = array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]];
//! let q = array![[1.0, 0.0, 1.0], [0.5, 0.5, 0.5], [2.0, -1.0, 0.0]];
//! let all = rows_times(q.view(), b.view())?;
//! assert_eq!(all, array![[6.0, 8.0], [4.5, 6.0], [-1.0, 0.0]]);
//! // A row alone gets the bits it gets in the batch.
//! assert_eq!(rows_times(q.slice(s![1..2, ..]), b.view())?.row(0), all.row(1));
//! # Ok::<(), autobatch_runtime::linalg::ShapeMismatch>(())
//! ```

use ndarray::{Array2, ArrayView2};

/// [`rows_times`] was handed a matrix whose row count is not the rows' length.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the rows hold {row_len} values each but the matrix has {matrix_rows} rows: \
     `rows_times(q, b)` needs `q.ncols() == b.nrows()`"
)]
pub struct ShapeMismatch {
    /// The length of each row of `q`.
    pub row_len: usize,
    /// The matrix's row count.
    pub matrix_rows: usize,
}

/// `q b`: row `i` of the result is row `i` of `q` times the matrix `b`, computed as the
/// module says (one fused multiply-add chain per element, in the inner dimension's order), so
/// its bits depend on row `i` of `q` and on `b` only. Operands in any layout (a non-row-major
/// one is copied first); an empty `q` gives an empty result.
pub fn rows_times(q: ArrayView2<f64>, b: ArrayView2<f64>) -> Result<Array2<f64>, ShapeMismatch> {
    let (n, k) = q.dim();
    let (bk, m) = b.dim();
    if bk != k {
        return Err(ShapeMismatch {
            row_len: k,
            matrix_rows: bk,
        });
    }
    let (q, b) = (q.as_standard_layout(), b.as_standard_layout());
    let shape = Shape { n, k, m };
    let (a, b) = (standard(&q), standard(&b));
    let c = product(a, b, shape);
    Ok(Array2::from_shape_vec((n, m), c).expect("n * m values for an [n, m] array"))
}

/// The elements of a row-major array.
fn standard<'a>(x: &'a ndarray::CowArray<'_, f64, ndarray::Ix2>) -> &'a [f64] {
    x.as_slice()
        .expect("as_standard_layout gives a row-major array")
}

/// The product's dimensions: `[n, k]` times `[k, m]`.
#[derive(Clone, Copy, Debug)]
struct Shape {
    n: usize,
    k: usize,
    m: usize,
}

/// The instructions a product runs with: the widest the CPU has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
enum Isa {
    /// Eight-double vectors (AVX-512F, whose fused multiply-adds are part of it).
    Avx512,
    /// Four-double vectors with AVX2 and FMA.
    Avx2Fma,
    /// `f64::mul_add`, on every CPU.
    Portable,
}

impl Isa {
    /// The widest this CPU runs (detected once per process and cached by std).
    fn best() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Isa::Avx512;
            }
            if let crate::codegen::Cpu::Avx2Fma(_) = crate::codegen::cpu() {
                return Isa::Avx2Fma;
            }
        }
        Isa::Portable
    }
}

/// `a b` (row-major `[n, k]` and `[k, m]`), row-major `[n, m]`, with the widest vector
/// instructions the CPU has.
fn product(a: &[f64], b: &[f64], shape: Shape) -> Vec<f64> {
    // SAFETY: `Isa::best` is what this CPU has.
    unsafe { product_on(Isa::best(), a, b, shape) }
}

/// A set of vector blocks: `c = a b` (see `avx::product`).
#[cfg(target_arch = "x86_64")]
type Blocks = unsafe fn(&[f64], &[f64], *mut f64, Shape);

/// `a b` with `isa`'s instructions, each element written once, into memory not zeroed first on
/// the vector paths.
///
/// # Safety
/// The CPU must have `isa`'s instructions ([`Isa::best`] or a narrower set it also has).
unsafe fn product_on(isa: Isa, a: &[f64], b: &[f64], shape: Shape) -> Vec<f64> {
    let len = shape.n * shape.m;
    #[cfg(target_arch = "x86_64")]
    {
        let vectors: Option<Blocks> = match isa {
            Isa::Avx512 => Some(avx512::product),
            Isa::Avx2Fma => Some(avx::product),
            Isa::Portable => None,
        };
        if let Some(vectors) = vectors {
            let mut c = Vec::with_capacity(len);
            // SAFETY: the CPU has the instructions (the caller's contract); the slices have
            // the shape's lengths (`rows_times` made them from arrays of those
            // shapes) and `c` room for `n * m` values, every one of which the blocks write.
            unsafe {
                vectors(a, b, c.as_mut_ptr(), shape);
                c.set_len(len);
            }
            return c;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = isa;
    let mut c = vec![0.0; len];
    portable(a, b, &mut c, shape);
    c
}

/// `c = a b` with `f64::mul_add`, element by element in the same order as the AVX blocks:
/// for each row, each step over the inner dimension adds one product to every element.
fn portable(a: &[f64], b: &[f64], c: &mut [f64], Shape { k, m, .. }: Shape) {
    if m == 0 {
        // No columns: nothing to write (and no chunks of width zero).
        return;
    }
    for (row, c) in a.chunks_exact(k.max(1)).zip(c.chunks_exact_mut(m)) {
        for (&x, b) in row.iter().zip(b.chunks_exact(m)) {
            for (c, &b) in c.iter_mut().zip(b) {
                *c = x.mul_add(b, *c);
            }
        }
    }
}

/// Runs `block::<R, V>(args)` over every row block of a block column of `n` rows: blocks of
/// the calling module's `ROWS` (six) rows, the last one smaller, with `V = vectors` (two, else
/// one); `i` names each block's first row in `args`. The block sizes both sets of vector
/// blocks are compiled for, chosen at a block's edge.
#[cfg(target_arch = "x86_64")]
macro_rules! row_blocks {
    ($n:expr, $vectors:expr, |$i:ident| $block:ident($($arg:expr),*)) => {{
        let (n, vectors) = ($n, $vectors);
        let mut $i = 0;
        while $i < n {
            let rows = (n - $i).min(ROWS);
            match (rows, vectors) {
                (6, 2) => $block::<6, 2>($($arg),*),
                (5, 2) => $block::<5, 2>($($arg),*),
                (4, 2) => $block::<4, 2>($($arg),*),
                (3, 2) => $block::<3, 2>($($arg),*),
                (2, 2) => $block::<2, 2>($($arg),*),
                (1, 2) => $block::<1, 2>($($arg),*),
                (6, _) => $block::<6, 1>($($arg),*),
                (5, _) => $block::<5, 1>($($arg),*),
                (4, _) => $block::<4, 1>($($arg),*),
                (3, _) => $block::<3, 1>($($arg),*),
                (2, _) => $block::<2, 1>($($arg),*),
                _ => $block::<1, 1>($($arg),*),
            }
            $i += rows;
        }
    }};
}

/// The AVX2 and FMA blocks.
#[cfg(target_arch = "x86_64")]
mod avx {
    use super::Shape;
    use std::arch::x86_64::{
        __m256d, _mm256_broadcast_sd, _mm256_fmadd_pd, _mm256_loadu_pd, _mm256_setzero_pd,
        _mm256_storeu_pd,
    };

    /// Rows per block.
    const ROWS: usize = 6;
    /// Four-column vectors per block.
    const VECTORS: usize = 2;

    /// `c = a b` in blocks of [`ROWS`] rows and `4 * VECTORS` columns (smaller blocks at the
    /// edges), columns outermost so a block column of `b` stays in the cache while every row
    /// passes it. Past the last multiple of four columns, one more block of four ends at the
    /// last column: it computes again a few columns already written, each through the same
    /// chain of fused multiply-adds, so they are written again with the same bits. Only a
    /// matrix of fewer than four columns takes scalar fused multiply-adds.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA; `a` and `b` must hold `n * k` and `k * m` values, and
    /// `c` must be valid for writing `n * m`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn product(a: &[f64], b: &[f64], c: *mut f64, shape: Shape) {
        let Shape { n, k, m } = shape;
        assert!(a.len() == n * k && b.len() == k * m);
        let quads = m / 4 * 4;
        let mut j = 0;
        while j < quads {
            let vectors = ((quads - j) / 4).min(VECTORS);
            // SAFETY: `vectors * 4` columns from `j` lie inside the shape; the caller's
            // contract covers the rest.
            unsafe { column_block(a, b, c, shape, j, vectors) };
            j += 4 * vectors;
        }
        if quads == m {
            return;
        }
        if m >= 4 {
            // SAFETY: the four columns from `m - 4` lie inside the shape.
            return unsafe { column_block(a, b, c, shape, m - 4, 1) };
        }
        for i in 0..n {
            let row = &a[i * k..(i + 1) * k];
            for j in 0..m {
                let dot = row
                    .iter()
                    .zip(b.iter().skip(j).step_by(m))
                    .fold(0.0, |acc, (&x, &b)| x.mul_add(b, acc));
                c.add(i * m + j).write(dot);
            }
        }
    }

    /// Every row times the `4 * vectors` columns (one or two vectors) from column `j`, in
    /// blocks of [`ROWS`] rows.
    ///
    /// # Safety
    /// As [`product`], and the columns must lie inside the shape.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn column_block(
        a: &[f64],
        b: &[f64],
        c: *mut f64,
        shape: Shape,
        j: usize,
        vectors: usize,
    ) {
        // SAFETY: each block's rows from `i` lie inside the shape; the caller's contract
        // covers the rest.
        unsafe { row_blocks!(shape.n, vectors, |i| block(a, b, c, At { i, j, shape })) }
    }

    /// Where a block starts: row `i`, column `j`.
    #[derive(Clone, Copy)]
    struct At {
        i: usize,
        j: usize,
        shape: Shape,
    }

    /// The `R` rows from `at.i` times the `4 * V` columns from `at.j`, accumulated in
    /// `R * V` registers over the whole inner dimension, then stored.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA; the block must lie inside the shape, whose sizes the
    /// slices have and `c` can be written with.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn block<const R: usize, const V: usize>(a: &[f64], b: &[f64], c: *mut f64, at: At) {
        let At { i, j, shape } = at;
        let Shape { k, m, .. } = shape;
        let mut acc: [[__m256d; V]; R] = [[_mm256_setzero_pd(); V]; R];
        let a = a.as_ptr().add(i * k);
        let b = b.as_ptr().add(j);
        for kk in 0..k {
            let mut bv: [__m256d; V] = [_mm256_setzero_pd(); V];
            for (v, bv) in bv.iter_mut().enumerate() {
                *bv = _mm256_loadu_pd(b.add(kk * m + 4 * v));
            }
            for (r, acc) in acc.iter_mut().enumerate() {
                let x = _mm256_broadcast_sd(&*a.add(r * k + kk));
                for (acc, &bv) in acc.iter_mut().zip(&bv) {
                    *acc = _mm256_fmadd_pd(x, bv, *acc);
                }
            }
        }
        let c = c.add(i * m + j);
        for (r, acc) in acc.iter().enumerate() {
            for (v, &acc) in acc.iter().enumerate() {
                _mm256_storeu_pd(c.add(r * m + 4 * v), acc);
            }
        }
    }
}

/// The AVX-512 blocks: as the AVX2 ones with vectors of eight doubles, and masked loads and
/// stores for the last columns instead of an overlapping block.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::Shape;
    use std::arch::x86_64::{
        __m512d, __mmask8, _mm512_fmadd_pd, _mm512_loadu_pd, _mm512_mask_storeu_pd,
        _mm512_maskz_loadu_pd, _mm512_set1_pd, _mm512_setzero_pd, _mm512_storeu_pd,
    };

    /// Rows per block.
    const ROWS: usize = 6;
    /// Eight-column vectors per block.
    const VECTORS: usize = 2;

    /// `c = a b` in blocks of [`ROWS`] rows and up to `8 * VECTORS` columns, columns
    /// outermost so a block column of `b` stays in the cache while every row passes it. The
    /// last vector of a block column covers the columns left (one to eight) through a mask:
    /// the others are neither read nor written.
    ///
    /// # Safety
    /// The CPU must have AVX-512F; `a` and `b` must hold `n * k` and `k * m` values, and `c`
    /// must be valid for writing `n * m`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn product(a: &[f64], b: &[f64], c: *mut f64, shape: Shape) {
        let Shape { n, k, m } = shape;
        assert!(a.len() == n * k && b.len() == k * m);
        let mut j = 0;
        while j < m {
            let columns = (m - j).min(8 * VECTORS);
            let vectors = columns.div_ceil(8);
            let last = columns - 8 * (vectors - 1);
            // The low `last` (1 to 8) bits.
            let mask = (0xff_u16 >> (8 - last)) as __mmask8;
            // SAFETY: `columns` columns from `j` lie inside the shape; the caller's contract
            // covers the rest.
            unsafe { column_block(a, b, c, shape, Columns { j, vectors, mask }) };
            j += columns;
        }
    }

    /// A block column: `vectors` (one or two) vectors from column `j`, the last one `mask`ed.
    #[derive(Clone, Copy)]
    struct Columns {
        j: usize,
        vectors: usize,
        mask: __mmask8,
    }

    /// Every row times the block column, in blocks of [`ROWS`] rows.
    ///
    /// # Safety
    /// As [`product`], and the block column must lie inside the shape.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn column_block(a: &[f64], b: &[f64], c: *mut f64, shape: Shape, cols: Columns) {
        // SAFETY: each block's rows from `i` lie inside the shape; the caller's contract
        // covers the rest.
        unsafe {
            row_blocks!(shape.n, cols.vectors, |i| block(
                a,
                b,
                c,
                At { i, cols, shape }
            ))
        }
    }

    /// Where a block starts: row `i` of block column `cols`.
    #[derive(Clone, Copy)]
    struct At {
        i: usize,
        cols: Columns,
        shape: Shape,
    }

    /// The `R` rows from `at.i` times the `V` vectors of `at.cols`, accumulated in `R * V`
    /// registers over the whole inner dimension, then stored.
    ///
    /// # Safety
    /// The CPU must have AVX-512F; the block must lie inside the shape, whose sizes the
    /// slices have and `c` can be written with.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn block<const R: usize, const V: usize>(a: &[f64], b: &[f64], c: *mut f64, at: At) {
        let At { i, cols, shape } = at;
        let Shape { k, m, .. } = shape;
        let mut acc: [[__m512d; V]; R] = [[_mm512_setzero_pd(); V]; R];
        let a = a.as_ptr().add(i * k);
        let b = b.as_ptr().add(cols.j);
        for kk in 0..k {
            let row = b.add(kk * m);
            let mut bv: [__m512d; V] = [_mm512_setzero_pd(); V];
            for (v, bv) in bv.iter_mut().enumerate() {
                *bv = if v + 1 < V {
                    _mm512_loadu_pd(row.add(8 * v))
                } else {
                    _mm512_maskz_loadu_pd(cols.mask, row.add(8 * v))
                };
            }
            for (r, acc) in acc.iter_mut().enumerate() {
                let x = _mm512_set1_pd(*a.add(r * k + kk));
                for (acc, &bv) in acc.iter_mut().zip(&bv) {
                    *acc = _mm512_fmadd_pd(x, bv, *acc);
                }
            }
        }
        let c = c.add(i * m + cols.j);
        for (r, acc) in acc.iter().enumerate() {
            for (v, &acc) in acc.iter().enumerate() {
                let to = c.add(r * m + 8 * v);
                if v + 1 < V {
                    _mm512_storeu_pd(to, acc);
                } else {
                    _mm512_mask_storeu_pd(to, cols.mask, acc);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{s, Array2};

    /// Values with many significant bits, from a seed.
    fn values(rows: usize, cols: usize, seed: usize) -> Array2<f64> {
        Array2::from_shape_fn((rows, cols), |(i, j)| {
            let x = ((i * 7919 + j * 104_729 + seed * 15_485_863) % 1_000_003) as f64;
            (x / 1_000_003.0 - 0.5) * 3.7
        })
    }

    fn bits(x: &Array2<f64>) -> Vec<u64> {
        x.iter().map(|v| v.to_bits()).collect()
    }

    /// Shapes `(n, k, m)` with every kind of edge: rows not a multiple of six, widths not a
    /// multiple of eight or of four (the AVX2 blocks' overlapping last block, the AVX-512
    /// blocks' masked last vector), of one block column and a bit (9, 17, 33), below four (the
    /// AVX2 blocks' scalar path), no rows, no columns, an empty inner dimension.
    const SHAPES: [(usize, usize, usize); 14] = [
        (13, 100, 100),
        (8, 17, 11),
        (7, 9, 5),
        (7, 9, 25),
        (6, 1, 8),
        (7, 9, 16),
        (4, 5, 9),
        (13, 10, 33),
        (5, 6, 3),
        (3, 5, 4),
        (1, 3, 1),
        (5, 0, 7),
        (0, 4, 4),
        (3, 4, 0),
    ];

    /// Within rounding of the product summed plainly, for every one of [`SHAPES`].
    #[test]
    fn the_product_is_the_plain_one_within_rounding() {
        for (n, k, m) in SHAPES {
            let (q, b) = (values(n, k, 1), values(k, m, 2));
            let c = rows_times(q.view(), b.view()).unwrap();
            assert_eq!(c.dim(), (n, m));
            for ((i, j), &got) in c.indexed_iter() {
                let want: f64 = (0..k).map(|t| q[[i, t]] * b[[t, j]]).sum();
                let scale: f64 = (0..k).map(|t| (q[[i, t]] * b[[t, j]]).abs()).sum();
                assert!(
                    (got - want).abs() <= 1e-13 * scale.max(1e-300),
                    "{n}x{k}x{m} [{i},{j}]"
                );
            }
        }
    }

    /// Every row alone (and every run of rows) gets the bits it gets in the whole batch, for
    /// every batch size up to thirteen (each remainder of the six-row blocks).
    #[test]
    fn a_row_has_the_same_bits_in_any_batch() {
        let b = values(37, 23, 3);
        for n in 1..=13 {
            let q = values(n, 37, n);
            let all = rows_times(q.view(), b.view()).unwrap();
            for i in 0..n {
                let alone = rows_times(q.slice(s![i..i + 1, ..]), b.view()).unwrap();
                assert_eq!(bits(&alone), bits(&all.slice(s![i..i + 1, ..]).to_owned()));
                let tail = rows_times(q.slice(s![i.., ..]), b.view()).unwrap();
                assert_eq!(bits(&tail), bits(&all.slice(s![i.., ..]).to_owned()));
            }
        }
    }

    /// The instructions this CPU can run a product with: [`Isa::best`] and every narrower one.
    fn runnable() -> Vec<Isa> {
        let all = [Isa::Avx512, Isa::Avx2Fma, Isa::Portable];
        let best = all.iter().position(|&isa| isa == Isa::best()).unwrap();
        let mut runnable = all[best..].to_vec();
        // A CPU with AVX-512F but without AVX2 and FMA (none is made) runs no AVX2 blocks.
        #[cfg(target_arch = "x86_64")]
        if !matches!(crate::codegen::cpu(), crate::codegen::Cpu::Avx2Fma(_)) {
            runnable.retain(|&isa| isa != Isa::Avx2Fma);
        }
        runnable
    }

    /// Every set of vector blocks this CPU can run gives the portable loop's bits, for every
    /// one of [`SHAPES`].
    #[test]
    fn the_vector_blocks_give_the_portable_bits() {
        let runnable = runnable();
        assert!(runnable.contains(&Isa::best()) && runnable.contains(&Isa::Portable));
        for (n, k, m) in SHAPES {
            let (q, b) = (values(n, k, 4), values(k, m, 5));
            let (a, bs) = (q.as_slice().unwrap(), b.as_slice().unwrap());
            let shape = Shape { n, k, m };
            let mut portable_c = vec![0.0; n * m];
            portable(a, bs, &mut portable_c, shape);
            for &isa in &runnable {
                // SAFETY: `runnable` lists only instructions this CPU has.
                let c = unsafe { product_on(isa, a, bs, shape) };
                let same = c
                    .iter()
                    .zip(&portable_c)
                    .all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "{isa:?}: {n}x{k}x{m}");
            }
        }
    }

    /// A transposed (column-major) operand gives the row-major operand's bits.
    #[test]
    fn any_layout_gives_the_same_bits() {
        let (q, b) = (values(9, 12, 6), values(12, 10, 7));
        let (qt, bt) = (q.t().to_owned(), b.t().to_owned());
        let want = rows_times(q.view(), b.view()).unwrap();
        assert_eq!(bits(&rows_times(qt.t(), bt.t()).unwrap()), bits(&want));
    }

    #[test]
    fn a_matrix_of_the_wrong_height_is_an_error() {
        let err = rows_times(values(2, 3, 1).view(), values(4, 2, 1).view()).unwrap_err();
        assert_eq!(
            err,
            ShapeMismatch {
                row_len: 3,
                matrix_rows: 4
            }
        );
        assert!(err.to_string().contains("q.ncols() == b.nrows()"));
    }
}

//! Writing draws as NumPy `.npy` files, for NumPy and ArviZ.
//!
//! The sampler's draws are an `[chains, draws, dims]` array of `f64`. [`write_draws`] saves
//! it as a version 1.0 `.npy` file (little-endian `<f8`, C order) with the
//! [`ndarray-npy`](https://docs.rs/ndarray-npy) crate, so that in Python
//!
//! ```python
//! import numpy as np, arviz as az
//! draws = np.load("draws.npy")                  # shape (chains, draws, dims)
//! idata = az.from_dict(posterior={"x": draws})  # ArviZ's (chain, draw, *shape) convention
//! print(az.summary(idata))
//! ```
//!
//! reads it back. [`read_draws`] loads such a file in Rust.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use ndarray::{Array3, ArrayView3};
use ndarray_npy::{ReadNpyError, ReadNpyExt, WriteNpyError, WriteNpyExt};

/// Why draws could not be written to or read from a `.npy` file.
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    /// The file could not be created.
    #[error("cannot create {}: {source}", path.display())]
    Create {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file could not be opened for reading.
    #[error("cannot open {}: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Writing the header or the data failed (I/O, e.g. a full disk).
    #[error("cannot write draws to {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: WriteNpyError,
    },
    /// Flushing the written data to the file failed.
    #[error("cannot write draws to {}: {source}", path.display())]
    Flush {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file is not a three-dimensional `f64` `.npy` array, or reading it failed.
    #[error("cannot read draws from {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: ReadNpyError,
    },
}

/// Writes draws shaped `[chains, draws, dims]` to `path` as a `.npy` file (`<f8`, C order,
/// `fortran_order: False`), replacing the file if it exists. Views in any memory layout
/// are accepted.
///
/// # Errors
///
/// [`NpyError`] if the file cannot be created or written.
pub fn write_draws(path: impl AsRef<Path>, draws: ArrayView3<f64>) -> Result<(), NpyError> {
    let path = path.as_ref();
    let file = File::create(path).map_err(|source| NpyError::Create {
        path: path.to_owned(),
        source,
    })?;
    let mut writer = BufWriter::new(file);
    draws
        .as_standard_layout()
        .write_npy(&mut writer)
        .map_err(|source| NpyError::Write {
            path: path.to_owned(),
            source,
        })?;
    writer.flush().map_err(|source| NpyError::Flush {
        path: path.to_owned(),
        source,
    })
}

/// Reads a three-dimensional `f64` `.npy` file, such as one written by [`write_draws`].
///
/// # Errors
///
/// [`NpyError`] if the file cannot be opened, or is not a 3-d `f64` array.
pub fn read_draws(path: impl AsRef<Path>) -> Result<Array3<f64>, NpyError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| NpyError::Open {
        path: path.to_owned(),
        source,
    })?;
    Array3::<f64>::read_npy(std::io::BufReader::new(file)).map_err(|source| NpyError::Read {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array3, ShapeBuilder};

    fn temp_path(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("autobatch-npy-{}-{name}", std::process::id()))
    }

    #[test]
    fn round_trip_keeps_shape_and_values() {
        let draws = Array3::from_shape_fn((3, 5, 2), |(c, d, k)| {
            c as f64 * 100.0 + d as f64 + k as f64 * 0.5 - 1e-300
        });
        let path = temp_path("round-trip.npy");
        write_draws(&path, draws.view()).unwrap();
        let back = read_draws(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(back, draws);
    }

    #[test]
    fn writes_the_npy_v1_header_numpy_expects() {
        let draws = Array3::<f64>::zeros((2, 3, 4));
        let path = temp_path("header.npy");
        write_draws(&path, draws.view()).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + header_len) % 64, 0, "header padded to 64 bytes");
        let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
        assert!(header.contains("'descr': '<f8'"), "{header}");
        assert!(header.contains("'fortran_order': False"), "{header}");
        assert!(header.contains("'shape': (2, 3, 4)"), "{header}");
        assert_eq!(bytes.len(), 10 + header_len + 2 * 3 * 4 * 8);
    }

    #[test]
    fn fortran_and_strided_views_are_written_in_c_order() {
        let fortran = Array3::from_shape_fn((2, 3, 4).f(), |(c, d, k)| (c * 12 + d * 4 + k) as f64);
        let path = temp_path("fortran.npy");
        write_draws(&path, fortran.view()).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(read_draws(&path).unwrap(), fortran);
        std::fs::remove_file(&path).unwrap();
        let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        let data: Vec<f64> = bytes[10 + header_len..]
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(data, (0..24).map(|i| i as f64).collect::<Vec<_>>());

        let big = Array3::from_shape_fn((4, 6, 3), |(c, d, k)| (c * 100 + d * 10 + k) as f64);
        let strided = big.slice(ndarray::s![..;2, 1..;2, ..]);
        let path = temp_path("strided.npy");
        write_draws(&path, strided).unwrap();
        assert_eq!(read_draws(&path).unwrap(), strided);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn io_failures_are_typed_errors() {
        let dir = temp_path("no-such-dir");
        let err =
            write_draws(dir.join("x.npy"), Array3::<f64>::zeros((1, 1, 1)).view()).unwrap_err();
        assert!(matches!(err, NpyError::Create { .. }), "{err}");
        assert!(err.to_string().contains("no-such-dir"));
        let err = read_draws(dir.join("x.npy")).unwrap_err();
        assert!(matches!(err, NpyError::Open { .. }), "{err}");

        // A 2-d file is not draws.
        let path = temp_path("two-d.npy");
        ndarray::Array2::<f64>::zeros((2, 2))
            .write_npy(File::create(&path).unwrap())
            .unwrap();
        let err = read_draws(&path).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(err, NpyError::Read { .. }), "{err}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_full_disk_is_a_typed_error() {
        let err = write_draws("/dev/full", Array3::<f64>::zeros((10, 100, 10)).view()).unwrap_err();
        assert!(
            matches!(err, NpyError::Write { .. } | NpyError::Flush { .. }),
            "{err}"
        );
    }
}

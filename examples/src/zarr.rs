//! A minimal writer of Zarr version 2 stores (a directory tree of JSON metadata and raw
//! little-endian chunks) that xarray, and so ArviZ, open directly.
//!
//! Only what labelled arrays need is written: groups (`.zgroup`), attributes (`.zattrs`),
//! uncompressed C-order arrays (`.zarray`) chunked along their first axis, xarray's
//! `_ARRAY_DIMENSIONS` attribute naming each axis, and the consolidated metadata
//! (`.zmetadata`) that lets a reader open the store without listing it. The format is
//! specified at <https://zarr-specs.readthedocs.io/en/latest/v2/v2.0.html>.
//!
//! ```
//! use autobatch_examples::zarr::{Array, Store};
//! use ndarray::array;
//!
//! let dir = std::env::temp_dir().join(format!("zarr-doc-{}", std::process::id()));
//! let mut store = Store::create(&dir)?;
//! store.group("posterior", &[("inference_library", "autobatch")])?;
//! let x = array![[1.0, 2.0], [3.0, 4.0]].into_dyn();
//! store.array("posterior/x", &["chain", "draw"], Array::F64(x.view()))?;
//! store.finish()?;
//! assert!(dir.join("posterior/x/0.0").is_file());
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok::<(), autobatch_examples::zarr::ZarrError>(())
//! ```

use ndarray::{ArrayViewD, Axis};
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Chunks are cut along the first axis to at most this many bytes (at least one row): 64 MiB,
/// 1 KiB in unit tests so that chunking is tested on small arrays.
const CHUNK_BYTES: usize = if cfg!(test) { 1 << 10 } else { 64 << 20 };

/// Why a store could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ZarrError {
    /// Creating a directory or writing a file failed.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The dimension names do not match the array's axes.
    #[error("array `{name}` has {axes} axes but {names} dimension names")]
    Dimensions {
        /// The array's path in the store.
        name: String,
        /// Its number of axes.
        axes: usize,
        /// The number of names given.
        names: usize,
    },
}

/// An array to store, by element type.
#[derive(Clone, Debug)]
pub enum Array<'a> {
    /// `<f8`.
    F64(ArrayViewD<'a, f64>),
    /// `<i8`.
    I64(ArrayViewD<'a, i64>),
    /// `|b1` (one byte, 0 or 1).
    Bool(ArrayViewD<'a, bool>),
}

impl Array<'_> {
    fn shape(&self) -> &[usize] {
        match self {
            Array::F64(a) => a.shape(),
            Array::I64(a) => a.shape(),
            Array::Bool(a) => a.shape(),
        }
    }

    fn dtype(&self) -> (&'static str, usize) {
        match self {
            Array::F64(_) => ("<f8", 8),
            Array::I64(_) => ("<i8", 8),
            Array::Bool(_) => ("|b1", 1),
        }
    }

    /// The little-endian bytes of rows `rows` of the first axis, in C order.
    fn chunk_bytes(&self, rows: std::ops::Range<usize>) -> Vec<u8> {
        fn bytes<T: Copy, const N: usize>(
            a: &ArrayViewD<T>,
            rows: std::ops::Range<usize>,
            to_le: impl Fn(T) -> [u8; N],
        ) -> Vec<u8> {
            let part = a.slice_axis(Axis(0), rows.into());
            let mut out = Vec::with_capacity(part.len() * N);
            for &x in part.iter() {
                out.extend_from_slice(&to_le(x));
            }
            out
        }
        match self {
            Array::F64(a) => bytes(a, rows, f64::to_le_bytes),
            Array::I64(a) => bytes(a, rows, i64::to_le_bytes),
            Array::Bool(a) => bytes(a, rows, |b| [u8::from(b)]),
        }
    }
}

/// A Zarr v2 store being written: create it, add groups and arrays, then [`finish`](Self::finish)
/// it to write the consolidated metadata.
#[derive(Debug)]
pub struct Store {
    root: PathBuf,
    /// `(key, JSON)` of every metadata document written, for `.zmetadata`.
    metadata: Vec<(String, String)>,
}

impl Store {
    /// Starts a store in directory `root`, which is created if missing (its parent must
    /// exist), with a root group without attributes.
    pub fn create(root: &Path) -> Result<Self, ZarrError> {
        let mut store = Store {
            root: root.to_path_buf(),
            metadata: Vec::new(),
        };
        if !root.is_dir() {
            fs::create_dir(root).map_err(|source| ZarrError::Io {
                path: root.to_path_buf(),
                source,
            })?;
        }
        store.group("", &[])?;
        Ok(store)
    }

    /// Writes the group at `path` (`""` is the root) with string attributes `attrs`.
    pub fn group(&mut self, path: &str, attrs: &[(&str, &str)]) -> Result<(), ZarrError> {
        let dir = self.root.join(path);
        self.make_dir(&dir)?;
        self.document(path, ".zgroup", "{\"zarr_format\": 2}".into())?;
        let attrs = attrs
            .iter()
            .map(|(k, v)| format!("{}: {}", json_string(k), json_string(v)))
            .collect::<Vec<_>>()
            .join(", ");
        self.document(path, ".zattrs", format!("{{{attrs}}}"))
    }

    /// Writes the array at `path` (inside an existing group) with the names of its axes
    /// (`dims`, xarray's `_ARRAY_DIMENSIONS`).
    pub fn array(&mut self, path: &str, dims: &[&str], data: Array) -> Result<(), ZarrError> {
        let shape = data.shape().to_vec();
        if dims.len() != shape.len() {
            return Err(ZarrError::Dimensions {
                name: path.into(),
                axes: shape.len(),
                names: dims.len(),
            });
        }
        let (dtype, size) = data.dtype();
        let row_bytes = shape[1..].iter().product::<usize>() * size;
        let rows_per_chunk = (CHUNK_BYTES / row_bytes.max(1)).clamp(1, shape[0].max(1));
        let mut chunks = shape.clone();
        chunks[0] = rows_per_chunk;
        let list = |xs: &[usize]| {
            xs.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        self.make_dir(&self.root.join(path))?;
        self.document(
            path,
            ".zarray",
            format!(
                "{{\"zarr_format\": 2, \"shape\": [{}], \"chunks\": [{}], \"dtype\": \"{dtype}\", \
                 \"compressor\": null, \"fill_value\": null, \"order\": \"C\", \
                 \"filters\": null, \"dimension_separator\": \".\"}}",
                list(&shape),
                list(&chunks)
            ),
        )?;
        let names = dims
            .iter()
            .map(|d| json_string(d))
            .collect::<Vec<_>>()
            .join(", ");
        self.document(
            path,
            ".zattrs",
            format!("{{\"_ARRAY_DIMENSIONS\": [{names}]}}"),
        )?;
        // One chunk per `rows_per_chunk` rows; the other axes are whole (index 0).
        let rest = ".0".repeat(shape.len() - 1);
        for (i, start) in (0..shape[0]).step_by(rows_per_chunk).enumerate() {
            let end = (start + rows_per_chunk).min(shape[0]);
            let file = self.root.join(path).join(format!("{i}{rest}"));
            write_file(&file, &data.chunk_bytes(start..end))?;
        }
        Ok(())
    }

    /// Writes the consolidated metadata (`.zmetadata`) of everything written so far.
    pub fn finish(self) -> Result<(), ZarrError> {
        let mut json = String::from("{\"zarr_consolidated_format\": 1, \"metadata\": {");
        for (i, (key, doc)) in self.metadata.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(json, "{sep}{}: {doc}", json_string(key)).expect("writing to a String");
        }
        json.push_str("}}");
        write_file(&self.root.join(".zmetadata"), json.as_bytes())
    }

    fn document(&mut self, path: &str, name: &str, json: String) -> Result<(), ZarrError> {
        write_file(&self.root.join(path).join(name), json.as_bytes())?;
        let key = if path.is_empty() {
            name.to_string()
        } else {
            format!("{path}/{name}")
        };
        self.metadata.push((key, json));
        Ok(())
    }

    fn make_dir(&self, dir: &Path) -> Result<(), ZarrError> {
        fs::create_dir_all(dir).map_err(|source| ZarrError::Io {
            path: dir.to_path_buf(),
            source,
        })
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ZarrError> {
    fs::File::create(path)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(|source| ZarrError::Io {
            path: path.to_path_buf(),
            source,
        })
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32).expect("a String"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array3, ArrayD, IxDyn};

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("zarr-test-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn writes_metadata_and_little_endian_chunks() {
        let dir = temp("layout");
        let mut store = Store::create(&dir).unwrap();
        store
            .group("posterior", &[("note", "a \"quoted\"\nline")])
            .unwrap();
        let x = Array3::from_shape_fn((2, 3, 2), |(c, d, i)| (c * 100 + d * 10 + i) as f64);
        store
            .array(
                "posterior/x",
                &["chain", "draw", "x_dim_0"],
                Array::F64(x.view().into_dyn()),
            )
            .unwrap();
        let flags = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![true, false, false, true]).unwrap();
        store
            .array(
                "posterior/flag",
                &["chain", "draw"],
                Array::Bool(flags.view()),
            )
            .unwrap();
        store.finish().unwrap();

        let read = |p: &str| fs::read_to_string(dir.join(p)).unwrap();
        assert_eq!(read(".zgroup"), "{\"zarr_format\": 2}");
        assert_eq!(
            read("posterior/.zattrs"),
            "{\"note\": \"a \\\"quoted\\\"\\u000aline\"}"
        );
        let meta = read("posterior/x/.zarray");
        assert!(meta.contains("\"shape\": [2, 3, 2]"), "{meta}");
        assert!(meta.contains("\"chunks\": [2, 3, 2]"), "{meta}");
        assert!(meta.contains("\"dtype\": \"<f8\""), "{meta}");
        assert_eq!(
            read("posterior/x/.zattrs"),
            "{\"_ARRAY_DIMENSIONS\": [\"chain\", \"draw\", \"x_dim_0\"]}"
        );
        let bytes = fs::read(dir.join("posterior/x/0.0.0")).unwrap();
        let values: Vec<f64> = bytes
            .chunks(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(values, x.iter().copied().collect::<Vec<_>>());
        assert_eq!(
            fs::read(dir.join("posterior/flag/0.0")).unwrap(),
            [1, 0, 0, 1]
        );
        let consolidated = read(".zmetadata");
        for key in [
            ".zgroup",
            "posterior/.zattrs",
            "posterior/x/.zarray",
            "posterior/flag/.zattrs",
        ] {
            assert!(consolidated.contains(&format!("\"{key}\": {{")), "{key}");
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn large_arrays_are_chunked_along_the_first_axis() {
        let dir = temp("chunks");
        let mut store = Store::create(&dir).unwrap();
        // Rows of 256 bytes: four per 1 KiB chunk (in tests), so 9 rows make chunks 0, 1, 2.
        let row = 32;
        let data = ArrayD::from_elem(IxDyn(&[9, row]), 1i64);
        store
            .array("big", &["a", "b"], Array::I64(data.view()))
            .unwrap();
        let meta = fs::read_to_string(dir.join("big/.zarray")).unwrap();
        assert!(meta.contains(&format!("\"chunks\": [4, {row}]")), "{meta}");
        assert_eq!(
            fs::metadata(dir.join("big/2.0")).unwrap().len(),
            8 * row as u64
        );
        assert!(!dir.join("big/3.0").exists());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn mismatched_dimension_names_and_unwritable_paths_are_errors() {
        let dir = temp("errors");
        let mut store = Store::create(&dir).unwrap();
        let data = ArrayD::from_elem(IxDyn(&[2, 2]), 0.0);
        let err = store
            .array("x", &["a"], Array::F64(data.view()))
            .unwrap_err();
        assert!(matches!(
            err,
            ZarrError::Dimensions {
                axes: 2,
                names: 1,
                ..
            }
        ));
        fs::remove_dir_all(&dir).unwrap();
        let err = Store::create(Path::new("/nonexistent-dir/sub/x.zarr")).unwrap_err();
        assert!(err.to_string().contains("/nonexistent-dir"), "{err}");
    }
}

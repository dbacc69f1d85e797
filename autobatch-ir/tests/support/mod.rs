//! Golden files of the IR's integration tests live in `tests/golden`.

/// Asserts that `actual` equals `tests/golden/<name>.txt` (`AUTOBATCH_BLESS=1` re-blesses).
pub fn assert_golden(name: &str, actual: &str) {
    autobatch_ir::golden::assert_golden(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden"),
        name,
        actual,
    );
}

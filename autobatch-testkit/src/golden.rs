//! Golden-file comparison for the workspace's tests: printed programs against files in a repo.
//!
//! Set `AUTOBATCH_BLESS=1` to (re)write the golden files from the current output instead of
//! comparing; review the diff before committing it.

use std::path::Path;

/// Asserts that `actual` equals the file `dir/<name>.txt` (or writes it when blessing).
pub fn assert_golden(dir: impl AsRef<Path>, name: &str, actual: &str) {
    let path = dir.as_ref().join(format!("{name}.txt"));
    if std::env::var_os("AUTOBATCH_BLESS").is_some() {
        std::fs::write(&path, actual)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "missing golden file {} ({e}); run with AUTOBATCH_BLESS=1 to create it",
            path.display()
        )
    });
    if expected != actual {
        panic!(
            "golden mismatch for {name} ({}); run with AUTOBATCH_BLESS=1 to re-bless\n--- expected\n{expected}\n--- actual\n{actual}",
            path.display()
        );
    }
}

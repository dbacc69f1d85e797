//! What the IR's integration tests share: golden files (in `tests/golden`) and a small
//! deterministic random number generator.

/// Asserts that `actual` equals `tests/golden/<name>.txt` (`AUTOBATCH_BLESS=1` re-blesses).
#[allow(dead_code)] // Not every test binary compares golden files.
pub fn assert_golden(name: &str, actual: &str) {
    autobatch_testkit::golden::assert_golden(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden"),
        name,
        actual,
    );
}

/// A tiny deterministic xorshift generator for the random-program tests.
#[allow(dead_code)] // Not every test binary draws random programs.
pub struct Rng(pub u64);

#[allow(dead_code)]
impl Rng {
    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

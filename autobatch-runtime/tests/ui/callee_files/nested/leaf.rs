//! A plain function two files down.

pub fn deep(n: i64) -> i64 {
    n - 1
}

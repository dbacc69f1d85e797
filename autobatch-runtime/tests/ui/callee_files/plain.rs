//! Plain Rust items: neither #[autobatch] nor #[primitive].

pub fn helper(n: i64) -> i64 {
    n + 1
}

pub struct Point {
    pub x: i64,
}

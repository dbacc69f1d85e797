//! UI case, compile error: a callee taking another context type than its caller passes on.
use autobatch_runtime::autobatch;

pub struct Settings {
    limit: i64,
}

pub struct Other {
    limit: i64,
}

#[autobatch]
fn caller(settings: &Settings, x: i64) -> i64 {
    callee(settings, x)
}

#[autobatch]
fn callee(other: &Other, x: i64) -> i64 {
    x.min(other.limit)
}

fn main() {}

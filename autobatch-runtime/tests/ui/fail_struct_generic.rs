//! UI case, compile error: a generic #[autobatch] struct.
use autobatch_runtime::autobatch;

#[autobatch]
struct Pair<T> {
    a: T,
    b: T,
}

fn main() {}

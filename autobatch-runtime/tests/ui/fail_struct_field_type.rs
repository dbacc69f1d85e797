//! UI case, compile error: a struct field of a type outside the language.
use autobatch_runtime::autobatch;

#[autobatch]
struct Named {
    depth: i64,
    label: String,
}

fn main() {}

//! UI case, compile error: `crate = path` names a path that is not the runtime, and generated
//! code uses it (it would compile if the path were ignored).
use autobatch_runtime::autobatch;

mod not_the_runtime {}

#[autobatch(crate = crate::not_the_runtime)]
fn f(n: i64) -> i64 {
    n + 1
}

fn main() {}

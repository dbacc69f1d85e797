//! UI case, compile error: a plain function of another file, called by its module path, says
//! which attribute to add, at the call, once.
use autobatch_runtime::autobatch;

mod callee_files;

#[autobatch]
fn caller(n: i64) -> i64 {
    callee_files::attributed::double(n) + callee_files::plain::helper(n)
}

fn main() {}

//! UI case, compile error: a plain function of another file behind a renaming `use`, two files
//! down, says which attribute to add, at the call, once.
use autobatch_runtime::autobatch;

mod callee_files;

use callee_files::attributed::double;
use callee_files::nested::{leaf::deep as lower};

#[autobatch]
fn caller(n: i64) -> i64 {
    double(n) + lower(n)
}

fn main() {}

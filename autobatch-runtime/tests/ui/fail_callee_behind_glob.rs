//! UI case, compile error: a plain function of another file behind a glob `use`, called from
//! an inline module through `super`, says which attribute to add, at the call, once.

mod callee_files;

use callee_files::plain::*;

mod inner {
    use autobatch_runtime::autobatch;

    #[autobatch]
    pub fn caller(n: i64) -> i64 {
        super::helper(n)
    }
}

fn main() {}

//! UI case, compile error: a call from #[autobatch] code to a plain Rust function says which
//! attribute to add, at the call, once.
use autobatch_runtime::autobatch;

#[autobatch]
fn caller(n: i64) -> i64 {
    helper(n) + inner::nested(n)
}

fn helper(n: i64) -> i64 {
    n
}

mod inner {
    use autobatch_runtime::autobatch;

    #[autobatch]
    pub fn nested(n: i64) -> i64 {
        n
    }
}

fn main() {}

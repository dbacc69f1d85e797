//! UI case, compile error: a path that is neither a local variable nor a constant.
use autobatch_runtime::autobatch;

#[autobatch]
fn scaled(n: i64) -> i64 {
    n * factors::three
}

mod factors {
    #[allow(non_upper_case_globals)]
    pub const three: i64 = 3;
}

fn main() {}

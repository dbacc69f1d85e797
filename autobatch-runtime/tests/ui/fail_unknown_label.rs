//! UI case, compile error: `break` with a label no enclosing loop has. Invalid Rust whatever
//! the types, so rustc's error on the function as written is the one error (the macro stops
//! without its own).
use autobatch_runtime::autobatch;

#[autobatch]
fn search(n: i64) -> i64 {
    'outer: for i in 0..n {
        if i > 3 {
            break 'inner;
        }
    }
    n
}

fn main() {}

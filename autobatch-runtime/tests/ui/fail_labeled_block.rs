//! UI case, compile error: a labelled block (loop labels are supported, block labels are not).
use autobatch_runtime::autobatch;

#[autobatch]
fn labeled(n: i64) -> i64 {
    let x = 'done: {
        if n > 0 {
            break 'done 1;
        }
        2
    };
    x
}

fn main() {}

//! UI case, compile error: an enum.
use autobatch_runtime::autobatch;

#[autobatch]
enum State {
    Running,
    Done,
}

fn main() {}

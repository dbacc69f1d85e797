use autobatch_runtime::autobatch;

#[autobatch]
struct NotAFunction;

fn main() {}

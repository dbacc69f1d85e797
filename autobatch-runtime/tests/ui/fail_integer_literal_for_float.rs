use autobatch_runtime::autobatch;

#[autobatch]
fn half(x: f64) -> f64 {
    x * 1
}

fn main() {}

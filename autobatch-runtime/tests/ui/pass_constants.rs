//! UI case, must compile and run: module, associated and primitive types' constants.
use autobatch_runtime::ndarray::array;
use autobatch_runtime::{autobatch, Config};

const STEPS: i64 = 4;

struct Limits;

impl Limits {
    const CAP: f64 = 10.0;
}

#[autobatch]
fn grow(x: f64) -> f64 {
    let mut y = x;
    for _ in 0..STEPS {
        y = (y * 2.0).min(Limits::CAP);
    }
    if y > f64::MAX { 0.0 } else { y }
}

fn main() {
    let out = grow::batch(array![0.5, 1.0].view(), &Config::default()).unwrap();
    assert_eq!(out, array![8.0, 10.0]);
}

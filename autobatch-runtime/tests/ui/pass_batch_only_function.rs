//! UI case, must compile and run: a function used only through its batched form is not dead
//! code (the generated module refers to it).
#![deny(dead_code)]

use autobatch_runtime::ndarray::array;
use autobatch_runtime::{autobatch, Config};

#[autobatch]
fn halve(n: i64) -> i64 {
    n / 2
}

fn main() {
    let out = halve::batch(array![4i64, 6].view(), &Config::default()).unwrap();
    assert_eq!(out, array![2, 3]);
}

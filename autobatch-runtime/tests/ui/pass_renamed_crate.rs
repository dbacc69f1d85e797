//! UI case, must compile and run: the runtime under another name, given with `crate = ..`.
extern crate autobatch_runtime as abrt;

use abrt::ndarray::array;
use abrt::{autobatch, Config};

#[autobatch(crate = abrt)]
fn inc(n: i64) -> i64 {
    n + 1
}

fn main() {
    let out = inc::batch(array![1i64, 2].view(), &Config::default()).unwrap();
    assert_eq!(out, array![2, 3]);
}

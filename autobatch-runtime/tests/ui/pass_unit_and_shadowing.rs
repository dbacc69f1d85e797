//! UI case, must compile and run: unit and shadowing.
use autobatch_runtime::ndarray::array;
use autobatch_runtime::{autobatch, Config};

#[autobatch]
fn shadow(x: i32) -> i32 {
    let x = x + 1;
    let x = x * 2;
    {
        let x = 100;
        let _ = x;
    }
    x
}

fn main() {
    let out = shadow::batch(array![1i32, 2].view(), &Config::default()).unwrap();
    assert_eq!(out, array![shadow(1), shadow(2)]);
}

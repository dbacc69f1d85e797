//! UI case, must compile and run: parameters and locals named as the generated code's own
//! names.
use autobatch_runtime::ndarray::array;
use autobatch_runtime::{autobatch, Config};

#[autobatch]
fn names(config: i64, lanes: i64, exe: i64, inputs: i64) -> i64 {
    let outputs = config + lanes * exe + inputs;
    let ctx = outputs * 2;
    let program = ctx - 1;
    program
}

fn main() {
    let out = names::batch(
        array![1i64].view(),
        array![2i64].view(),
        array![3i64].view(),
        array![4i64].view(),
        &Config::default(),
    )
    .unwrap();
    assert_eq!(out, array![names(1, 2, 3, 4)]);
}

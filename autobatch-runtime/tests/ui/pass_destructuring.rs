//! UI case, must compile and run: destructuring assignment and tuple parameters.
use autobatch_runtime::ndarray::array;
use autobatch_runtime::{autobatch, Config};

#[autobatch]
fn gcd((a, b): (i64, i64)) -> i64 {
    let (mut a, mut b) = (a, b);
    while b != 0 {
        (a, b) = (b, a % b);
    }
    let mut c = 1;
    (c, _) = (c * a * 2, b);
    c / 2
}

fn main() {
    let out = gcd::batch((array![12i64, 7].view(), array![18i64, 5].view()), &Config::default()).unwrap();
    assert_eq!(out, array![6, 1]);
}

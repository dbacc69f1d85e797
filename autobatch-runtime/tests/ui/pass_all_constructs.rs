//! UI case, must compile and run: all constructs.
use autobatch_runtime::ndarray::array;
use autobatch_runtime::{autobatch, Config};

/// Uses every construct of the language once.
#[autobatch]
fn everything(n: i64, x: f64, flag: bool) -> (i64, f64) {
    let (mut a, b) = (n, 2i64);
    let mut y: f64 = x;
    let c = if flag && n > 0 { 1 } else if n < -3 { 2 } else { 3 };
    let mut i = 0;
    while i < 3 {
        i += 1;
        if i == 2 {
            continue;
        }
        y = y * 0.5 + (a as f64).abs().sqrt();
    }
    let found = loop {
        a = a.wrapping_mul(3) % 1000;
        if a % 7 == 0 || a < 0 {
            break a;
        }
        if a > 900 {
            return (a + b + c, y);
        }
    };
    (found + b * c, y.max(0.25).min(i64::MAX as f64))
}

fn main() {
    let (ints, floats) =
        everything::batch(array![1i64, -5, 9].view(), array![0.5, 2.0, 7.0].view(), array![true, false, true].view(), &Config::default()).unwrap();
    for (i, (n, x, f)) in [(1, 0.5, true), (-5, 2.0, false), (9, 7.0, true)].into_iter().enumerate() {
        let (a, b) = everything(n, x, f);
        assert_eq!(ints[i], a);
        assert_eq!(floats[i].to_bits(), b.to_bits());
    }
}

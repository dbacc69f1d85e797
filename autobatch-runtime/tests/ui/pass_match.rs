//! UI case, must compile and run: `match`, `if let`, `let else` and `matches!`.
use autobatch_runtime::ndarray::array;
use autobatch_runtime::{autobatch, Config};

#[autobatch]
fn describe(n: i64, flag: bool) -> i64 {
    let k @ -100..=100 = n else {
        return -1;
    };
    let base = match (k, flag) {
        (0, _) => 0,
        (1..=9, true) | (-9..=-1, true) => 1,
        (x, false) if x % 2 == 0 => 2,
        _ => 3,
    };
    if let 50.. = k {
        return base * 10;
    }
    if matches!(k, -5..=5 if flag) { base + 100 } else { base }
}

fn main() {
    let n = array![0i64, 5, -3, 60, 200, 8];
    let f = array![true, true, false, false, true, false];
    let out = describe::batch(n.view(), f.view(), &Config::default()).unwrap();
    let expected: Vec<i64> = n.iter().zip(&f).map(|(&n, &f)| describe(n, f)).collect();
    assert_eq!(out.to_vec(), expected);
}

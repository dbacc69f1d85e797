//! UI case, must compile and run: `for` over integer ranges, loop labels, `break 'label value`.
use autobatch_runtime::ndarray::array;
use autobatch_runtime::{autobatch, Config};

#[autobatch]
fn search(n: i64) -> i64 {
    let mut hits = 0;
    'rows: for a in 1..=n {
        for b in (0..a).rev().step_by(2) {
            if a * b > 20 {
                continue 'rows;
            }
            hits += b;
        }
    }
    let found: i64 = 'find: loop {
        let mut k = n;
        while k > 0 {
            if k % 7 == 0 {
                break 'find k;
            }
            k -= 1;
        }
        break 0;
    };
    hits + found
}

fn main() {
    let out = search::batch(array![3i64, 9, 15].view(), &Config::default()).unwrap();
    assert_eq!(out, array![search(3), search(9), search(15)]);
}

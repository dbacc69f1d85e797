//! UI case, must compile and run: an unannotated literal, or a `let` of one, passed to another
//! `#[autobatch]` function takes that function's parameter type (learnt from its signature:
//! `u16`, `i8`), as rustc types it: directly, through `let`s used together, an `if`, a loop
//! counter, a tuple `let` of a call; and a `let` of a literal that a call's result is added or
//! assigned to takes the result's type (`acc += scale(i, 2)` makes `acc` a `u64`).
use autobatch_runtime::ndarray::array;
use autobatch_runtime::{autobatch, Config};

#[autobatch]
fn caller(n: u16, c: bool) -> u64 {
    let x = 5;
    let direct = scale(x, 3);
    let literal = scale(7, -2);
    let y = scale(n, 1);
    let sum = y + widen(y);
    let base = 3;
    let derived = base + 1;
    let linked = scale(derived, 1);
    let branch = scale(if c { 1 } else { 2 }, 1);
    let mut i = 0;
    let mut acc = 0;
    while i < 3 {
        acc += scale(i, 2);
        i += 1;
    }
    let (p, q) = pair(4);
    let paired = scale(p, q);
    let mut m = 0;
    if c {
        m = 9;
    }
    let later = scale(m, 1);
    let mut total = 0;
    total = total + scale(2, 2) * 2;
    let mut t2 = 1;
    t2 = scale(3, 1) + t2;
    direct + literal + sum + linked + branch + acc + paired + later + later_defined(x) + total + t2
}

#[autobatch]
fn scale(n: u16, k: i8) -> u64 {
    n as u64 * (k as i64).unsigned_abs()
}

#[autobatch]
fn widen(v: u64) -> u64 {
    v * 2
}

#[autobatch]
fn pair(v: u16) -> (u16, i8) {
    (v + 1, -3)
}

mod later {
    use autobatch_runtime::autobatch;
    #[autobatch]
    pub fn defined(v: u16) -> u64 {
        v as u64
    }
}
use later::defined as later_defined;

fn main() {
    let out = caller::batch(array![1u16, 40].view(), array![true, false].view(), &Config::default()).unwrap();
    assert_eq!(out, array![caller(1, true), caller(40, false)]);
}

//! UI case, must compile and run: unannotated integer literals and `let`s take the type their
//! uses require, as rustc infers them; `i32` only when nothing constrains them.
use autobatch_runtime::ndarray::array;
use autobatch_runtime::{autobatch, Config};

/// A counter compared with a `usize`, returned as one.
#[autobatch]
fn count_to(n: usize) -> usize {
    let mut i = 0;
    while i < n {
        i += 1;
    }
    i
}

/// A state assigned a `u16` inside an `if`; a literal compared with and added to a `u8`.
#[autobatch]
fn state(c: bool, x: u16, b: u8) -> (u16, u8) {
    let mut state = 0;
    if c {
        state = x;
    }
    let limit = 100;
    let bumped = if b < limit { b + 1 } else { 255 - b };
    (state, bumped)
}

/// A literal `let` passed to the function itself takes its parameter's type (`u16`).
#[autobatch]
fn halve(x: u16, depth: u8) -> u16 {
    let five = 5;
    if depth == 0 {
        x + five
    } else {
        let start = 5;
        halve(start, depth - 1) + x / 2
    }
}

/// Two unannotated `let`s used together get one type, fixed by a later use (`i64`); a let
/// copied from another follows it; an exponent is a `u32`.
#[autobatch]
fn totals(n: u8, y: u64) -> (i64, u64, u64) {
    let mut total = 0;
    let mut i = 0;
    while i < 4 {
        total += i;
        i += 1;
    }
    let a = 7;
    let b = a;
    let k = 3;
    (total * 1_000_000_000_000 + i64::from(n), b + y, y.wrapping_pow(k))
}

/// Shifts keep the left operand's type; a literal shifted into an `i64`; a divisor from a literal.
#[autobatch]
fn shifts(x: u32, z: i64, w: i16) -> (u32, i64, i16) {
    let s = 3;
    let big = 1 << 40;
    let d = 10;
    (x << s, big + z, w / d)
}

/// Tuples of literals: a pattern's names and a tuple bound to one name (through its field)
/// take the types their uses require; a literal `let` from a `loop`'s `break` too.
#[autobatch]
fn pairs(x: u8, y: u16) -> (u16, u16, u16) {
    let (a, b) = (0, x);
    let t = (0, b);
    let r = loop {
        if y > 3 {
            break 0;
        }
        break 1;
    };
    (a + y, t.0 + y, r * y)
}

/// With nothing to constrain it, a literal is an `i32`, as in rustc.
#[autobatch]
fn unconstrained(flag: bool) -> bool {
    let x = 2_000_000_000;
    let y = x / 2;
    flag && y > 0
}

fn main() {
    let c = Config::default();
    assert_eq!(count_to::batch(array![0usize, 3, 10].view(), &c).unwrap(), array![0usize, 3, 10]);
    let (s, b) = state::batch(array![true, false].view(), array![7u16, 9].view(), array![3u8, 200].view(), &c).unwrap();
    assert_eq!((s[0], b[0], s[1], b[1]), (state(true, 7, 3).0, state(true, 7, 3).1, state(false, 9, 200).0, state(false, 9, 200).1));
    let h = halve::batch(array![10u16, 60000].view(), array![0u8, 3].view(), &c).unwrap();
    assert_eq!(h, array![halve(10, 0), halve(60000, 3)]);
    let (t, by, p) = totals::batch(array![4u8, 0].view(), array![1u64, 2].view(), &c).unwrap();
    assert_eq!((t[0], by[1], p[1]), (totals(4, 1).0, totals(0, 2).1, totals(0, 2).2));
    let (a, b2, c2) = shifts::batch(array![1u32].view(), array![-1i64].view(), array![-25i16].view(), &c).unwrap();
    assert_eq!((a[0], b2[0], c2[0]), shifts(1, -1, -25));
    let (p, q, r) = pairs::batch(array![1u8, 2].view(), array![2u16, 9].view(), &c).unwrap();
    assert_eq!((p[1], q[1], r[1]), pairs(2, 9));
    assert_eq!((p[0], q[0], r[0]), pairs(1, 2));
    assert_eq!(unconstrained::batch(array![true].view(), &c).unwrap(), array![true]);
}

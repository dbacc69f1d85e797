//! UI case, passes: struct values in functions (parameters, results, locals, nested structs,
//! field reads and assignments, literals with shorthand and `..base`, a struct declared after
//! the function using it and one from another module imported with `use`).
use autobatch_runtime::ndarray::array;
use autobatch_runtime::{autobatch, Config};
use shapes::Size;

#[autobatch]
fn grow(b: Boxed, by: i64) -> Boxed {
    let mut b = b;
    b.size.w += by;
    let h = b.size.h * 2;
    Boxed { size: Size { h, ..b.size }, ..b }
}

#[autobatch]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Boxed {
    size: Size,
    open: bool,
}

mod shapes {
    use autobatch_runtime::autobatch;

    #[autobatch]
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Size {
        pub w: i64,
        pub h: i64,
    }
}

fn main() {
    let start = Boxed { size: Size { w: 1, h: 2 }, open: true };
    let batch = BoxedBatch::from_lanes(&[start, start]).unwrap();
    let out = grow::batch(&batch, array![3, 4].view(), &Config::default()).unwrap();
    assert_eq!(out.lane(1), Some(grow(start, 4)));
}

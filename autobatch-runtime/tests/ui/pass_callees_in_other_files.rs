//! UI case, must compile and run: #[autobatch] functions, #[primitive]s and #[autobatch]
//! structs of other files, by module path and behind `use` items (renamed, grouped, glob).
use autobatch_runtime::autobatch;
use autobatch_runtime::ndarray::array;
use autobatch_runtime::Config;

mod callee_files;

use callee_files::attributed::*;
use callee_files::attributed::{double as twice, Pair as Both};

#[autobatch]
fn caller(n: i64, x: f64) -> Both {
    let a = double(n) + twice(n) + callee_files::attributed::double(1);
    Pair { a, b: halve(x) + callee_files::attributed::halve(x) }
}

fn main() {
    let out = caller::batch(array![1, 5].view(), array![2.0, 4.0].view(), &Config::default());
    let out = out.unwrap();
    assert_eq!(out.a, array![6, 22]);
    assert_eq!(out.b, array![2.0, 4.0]);
}

//! UI case, compile error: `&T` of an `#[autobatch] struct` is not the shared context (such a
//! struct is a per-lane value, taken by value), in a function and in a primitive.
use autobatch_runtime::{autobatch, primitive};

#[autobatch]
#[derive(Clone, Copy)]
pub struct Tree {
    depth: i64,
    weight: f64,
}

#[autobatch]
fn deeper(tree: &Tree, x: i64) -> i64 {
    x + tree.depth
}

#[primitive]
fn heavier(tree: &Tree, w: f64) -> f64 {
    w * tree.weight
}

fn main() {}

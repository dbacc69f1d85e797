//! UI case, must compile and run: a context parameter (settings and a model) read in the body,
//! passed on to a recursive call and to a primitive whose batched form receives it.
use autobatch_runtime::ndarray::{array, Array1, ArrayView1};
use autobatch_runtime::{autobatch, primitive, Config};

pub struct Model {
    offset: f64,
    settings: Settings,
}

pub struct Settings {
    depth: i64,
}

impl Model {
    fn depth(&self) -> i64 {
        self.settings.depth
    }
}

#[primitive(batched = shift_all)]
fn shift(model: &Model, x: f64) -> f64 {
    x + model.offset
}

fn shift_all(model: &Model, xs: ArrayView1<f64>) -> Array1<f64> {
    xs.mapv(|x| x + model.offset)
}

#[autobatch]
fn walk(model: &Model, x: f64, n: i64) -> f64 {
    if n >= model.depth() || n >= model.settings.depth {
        x
    } else {
        let y: f64 = shift(model, x);
        walk(model, y, n + 1)
    }
}

fn main() {
    let model = Model { offset: 0.5, settings: Settings { depth: 3 } };
    let out = walk::batch(&model, array![1.0, 2.0].view(), array![0i64, 2].view(), &Config::default()).unwrap();
    assert_eq!(out, array![2.5, 2.5]);
    assert_eq!(walk(&model, 1.0, 0), 2.5);
}

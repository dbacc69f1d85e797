//! UI case, compile error: two context parameters (one context per function: one struct).
use autobatch_runtime::autobatch;

pub struct Settings {
    limit: i64,
}

pub struct Model {
    scale: f64,
}

#[autobatch]
fn both(settings: &Settings, model: &Model, x: i64) -> i64 {
    x.min(settings.limit)
}

fn main() {}

//! UI case, compile error: the context stored into a variable.
use autobatch_runtime::autobatch;

pub struct Settings {
    limit: i64,
}

#[autobatch]
fn capped(settings: &Settings, x: i64) -> i64 {
    let s = settings;
    x
}

fn main() {}

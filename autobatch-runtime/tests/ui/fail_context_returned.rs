//! UI case, compile error: the context returned as the function's value.
use autobatch_runtime::autobatch;

pub struct Settings {
    limit: i64,
}

#[autobatch]
fn pick(settings: &Settings) -> &Settings {
    settings
}

fn main() {}

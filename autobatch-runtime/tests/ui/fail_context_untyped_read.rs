//! UI case, compile error: a context read whose type nothing around it fixes.
use autobatch_runtime::autobatch;

pub struct Settings {
    limit: i64,
}

#[autobatch]
fn capped(settings: &Settings, x: i64) -> i64 {
    let limit = settings.limit;
    x.min(limit)
}

fn main() {}

//! UI case, compile error: a context taken by `&mut` (it is shared by every lane, read-only).
use autobatch_runtime::autobatch;

pub struct Settings {
    limit: i64,
}

#[autobatch]
fn capped(settings: &mut Settings, x: i64) -> i64 {
    x.min(settings.limit)
}

fn main() {}

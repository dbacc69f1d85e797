//! UI case, compile error: a lane's value as an argument of a method of the context.
use autobatch_runtime::autobatch;

pub struct Table {
    values: Vec<f64>,
}

impl Table {
    fn at(&self, i: i64) -> f64 {
        self.values[i as usize]
    }
}

#[autobatch]
fn look_up(table: &Table, i: i64) -> f64 {
    table.at(i)
}

fn main() {}

//! Random valid programs for differential tests: their description and its strategies
//! (`spec`), their primitives (`prims`), building them (`build`) and running them every way
//! against the reference interpreter (`check`).

pub mod build;
pub mod check;
pub mod prims;
pub mod spec;

//! A caller in a file of its own (reached through `#[path]`), calling a plain function of
//! another file through `crate::`.
use autobatch_runtime::autobatch;

#[autobatch]
pub fn walker(n: i64) -> i64 {
    crate::callee_files::plain::helper(n)
}

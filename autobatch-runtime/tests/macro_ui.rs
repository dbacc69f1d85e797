//! trybuild UI tests: one minimal case per #[autobatch] compile error, and passing cases.
//! Re-bless the `.stderr` files with `TRYBUILD=overwrite cargo test --test macro_ui`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail_*.rs");
    t.pass("tests/ui/pass_*.rs");
}

//! How many cases a property test runs: `PROPTEST_CASES` if it is set, else the test's own
//! count, so one variable turns every property test of the workspace into a long run.

/// The cases a property test runs: the `PROPTEST_CASES` environment variable if it holds a
/// number, else `default` (the count that keeps `cargo test` quick). Every property test in
/// the workspace takes its count from here, so
/// `PROPTEST_CASES=10000 cargo test --release --workspace` runs each of them 10,000 times.
pub fn cases(default: u32) -> u32 {
    cases_from(std::env::var("PROPTEST_CASES").ok().as_deref(), default)
}

/// [`cases`] with the variable's value given: a number is the count, anything else (or
/// nothing) leaves `default`.
fn cases_from(var: Option<&str>, default: u32) -> u32 {
    var.and_then(|n| n.trim().parse().ok()).unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::cases_from;

    #[test]
    fn a_number_in_the_variable_is_the_count_and_anything_else_the_default() {
        assert_eq!(cases_from(Some("5000"), 24), 5000);
        assert_eq!(cases_from(Some(" 7 "), 24), 7);
        assert_eq!(cases_from(None, 24), 24);
        assert_eq!(cases_from(Some(""), 24), 24);
        assert_eq!(cases_from(Some("many"), 24), 24);
        assert_eq!(cases_from(Some("-3"), 24), 24);
    }
}

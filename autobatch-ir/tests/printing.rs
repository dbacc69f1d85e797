//! Golden tests of the printed form of every conformance program as built.

mod support;

use autobatch_ir::DType;
use autobatch_testkit::conformance::{self, numbering};
use support::assert_golden;

#[test]
fn conformance_programs_print_stably() {
    let cases = [
        (
            "print_constant",
            conformance::constant_program(&mut numbering()).into_program(),
        ),
        (
            "print_single_if",
            conformance::single_if_program(&mut numbering()).into_program(),
        ),
        (
            "print_synthetic_pattern",
            conformance::synthetic_pattern_program(&mut numbering()).into_program(),
        ),
        (
            "print_synthetic_pattern_variable",
            conformance::synthetic_pattern_variable_program(&mut numbering()).into_program(),
        ),
        (
            "print_fibonacci_program",
            conformance::fibonacci_program(&mut numbering()).into_program(),
        ),
        (
            "print_fibonacci_function_calls",
            conformance::fibonacci_function_calls(&mut numbering(), DType::I64).into_program(),
        ),
        (
            "print_is_even_function_calls",
            conformance::is_even_function_calls(&mut numbering(), DType::I64, true).into_program(),
        ),
        (
            "print_pea_nuts",
            conformance::pea_nuts_program(&mut numbering()).into_program(),
        ),
        (
            "print_iota_sum",
            conformance::iota_sum(&mut numbering()).into_program(),
        ),
        (
            "print_gcd",
            conformance::gcd(&mut numbering()).into_program(),
        ),
        (
            "print_countdown",
            conformance::countdown(&mut numbering()).into_program(),
        ),
    ];
    for (name, program) in cases {
        assert_golden(name, &program.to_string());
    }
}

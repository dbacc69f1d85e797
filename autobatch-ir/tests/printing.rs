//! Golden tests of the printed form of every conformance program as built.

mod support;

use autobatch_ir::conformance::{self, numbering};
use autobatch_ir::DType;
use support::assert_golden;

#[test]
fn conformance_programs_print_stably() {
    let cases = [
        (
            "print_constant",
            conformance::constant_program(&mut numbering()),
        ),
        (
            "print_single_if",
            conformance::single_if_program(&mut numbering()),
        ),
        (
            "print_synthetic_pattern",
            conformance::synthetic_pattern_program(&mut numbering()),
        ),
        (
            "print_synthetic_pattern_variable",
            conformance::synthetic_pattern_variable_program(&mut numbering()),
        ),
        (
            "print_fibonacci_program",
            conformance::fibonacci_program(&mut numbering()),
        ),
        (
            "print_fibonacci_function_calls",
            conformance::fibonacci_function_calls(&mut numbering(), DType::I64),
        ),
        (
            "print_is_even_function_calls",
            conformance::is_even_function_calls(&mut numbering(), DType::I64, true),
        ),
        (
            "print_pea_nuts",
            conformance::pea_nuts_program(&mut numbering()),
        ),
        ("print_iota_sum", conformance::iota_sum(&mut numbering())),
        ("print_gcd", conformance::gcd(&mut numbering())),
        ("print_countdown", conformance::countdown(&mut numbering())),
    ];
    for (name, program) in cases {
        assert_golden(name, &program.to_string());
    }
}

//! What only the code `#[autobatch]` and `#[primitive]` generate uses: the linker that builds
//! one program from many functions, conversions for the typed `batch` entry points, and the
//! helpers generated kernels call (and the kernel module's lane loops, re-exported). Reached
//! only through `crate::__private`.

mod batched;
mod convert;
mod link;
mod quad;
mod scratch;
mod simd;

pub use crate::kernel::{each_lane, split_lanes, Reads, Writes};
pub use batched::{
    batched_input, batched_input_vectors, batched_output, batched_output_vectors, out_leaf,
};
pub use convert::{input, input_vectors, output, output_vectors, vector_row, vector_rows, Batched};
pub use link::{Callee, Linker};
pub use quad::{sum_onto, F64x4, F64x4Avx, Four, Quad};
pub use scratch::Scratch;
pub use simd::{cpu, with_avx2, Avx2Fma, Cpu, Portable};

#[cfg(test)]
mod tests {
    /// The contract with the macro: every name generated code may use stays exported from
    /// `__private` under the same name (a removed or renamed one fails to compile here).
    #[test]
    fn the_private_module_exports_every_name_generated_code_uses() {
        use crate::__private as rt;
        use std::any::type_name;
        let types = [
            type_name::<rt::Callee>(),
            type_name::<rt::Linker>(),
            type_name::<rt::Scratch>(),
            type_name::<rt::F64x4>(),
            type_name::<rt::F64x4Avx>(),
            type_name::<rt::Avx2Fma>(),
            type_name::<rt::Portable>(),
            type_name::<rt::Cpu>(),
            type_name::<rt::Quad>(),
            type_name::<rt::VectorOut<'_>>(),
            type_name::<rt::Column>(),
            type_name::<rt::Config>(),
            type_name::<rt::Executable>(),
            type_name::<rt::Kernel>(),
            type_name::<rt::KernelError>(),
            type_name::<rt::Key>(),
            type_name::<rt::LaneInputs<'_>>(),
            type_name::<rt::DirectCall<'_>>(),
            type_name::<rt::LaneOutputs<'_>>(),
            type_name::<rt::RuntimeError>(),
            type_name::<rt::Stats>(),
            type_name::<rt::Vector>(),
            type_name::<rt::AgreementError>(),
            type_name::<rt::Tolerance>(),
            type_name::<rt::ir::Program>(),
            type_name::<rt::ndarray::Array1<f64>>(),
        ];
        assert!(types.iter().all(|t| !t.is_empty()));
        let _ = (
            rt::input::<f64>,
            rt::input_vectors::<f64>,
            rt::output::<f64>,
            rt::output_vectors::<f64>,
            rt::out_leaf::<f64>,
            rt::batched_input::<f64>,
            rt::batched_input_vectors::<f64>,
            rt::batched_output::<f64, ndarray::OwnedRepr<f64>>,
            rt::batched_output_vectors::<f64, ndarray::OwnedRepr<f64>>,
            rt::check_agreement,
            rt::cpu(),
            |c: rt::Avx2Fma| rt::with_avx2(c, |_| ()),
            rt::sum_onto(0.0, 1.0),
            |ins: &rt::LaneInputs<'_>| rt::each_lane(ins, (), (), |()| ()),
            |call: &mut rt::DirectCall<'_>| {
                let _ = (call.input::<f64>(0), call.output::<f64>(0), call.split());
                call.each_lane((), (), |()| ());
                call.context::<f64>().map(drop)
            },
            |s: crate::LaneSplit<'_>| rt::split_lanes(s, (), (), |()| ((), true)),
        );
        assert_eq!(rt::PREFETCH_AHEAD, crate::prefetch::PREFETCH_AHEAD);
    }
}

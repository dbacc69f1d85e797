//! Generated names are hygienic: parameters and locals named exactly as the generated code's
//! own locals (kernel inputs and outputs, lane loops, linker, entry points, vector element
//! loops, a primitive's batched kernel and agreement check, a struct's companion) compute what
//! the scalar function computes, in both modes.

use autobatch_runtime::ndarray::{Array1, Array2, ArrayView1};
use autobatch_runtime::primitive::Tolerance;
use autobatch_runtime::{autobatch, primitive, Column, Config, Mode, Vector};

/// Scalar kernels: every local of a lane-wise kernel, the linker's and the entry points'.
#[autobatch]
#[allow(clippy::too_many_arguments)]
fn scalar_names(__ins: i64, __outs: i64, __lane: i64, __k: i64, __r: i64, __i0: i64) -> i64 {
    let __i1 = __ins + __outs * __lane;
    let __o0 = __i1 - __k * __r + __i0;
    let mut __l = 0;
    let mut __f = __o0;
    for __v0 in 0..__o0 % 5 {
        let __b0 = __v0 + 1;
        __l += __b0;
        __f = __f * 3 % 1_001;
    }
    let __c0 = if __l > 3 { __l } else { -__l };
    let __inputs = __c0 + __f;
    let __config = __inputs * 2;
    let __run = __config - 1;
    let __out = __run + __ins;
    let mut __a0 = __out;
    __a0 += twice(__out % 7);
    __a0
}

/// One kernel alone in its block (not merged): its inputs keep the user's names.
#[autobatch]
fn lone(__lane: i64, __k: i64, __i1: i64, __o0: i64) -> i64 {
    __lane * 3 + __k - __i1 * __o0
}

/// The run's shared settings.
pub struct Settings {
    scale: i64,
}

/// A context parameter named as the kernel's inputs.
#[autobatch]
fn context_named(__ins: &Settings, __lane: i64) -> i64 {
    __lane * __ins.scale + 1
}

#[autobatch]
fn twice(__define: i64) -> i64 {
    let config = __define;
    config * 2
}

/// A primitive whose context and parameters are named as the locals and parameters of its
/// generated kernels and of `check_agreement` (`inputs`, `vector_len`, `tolerance`).
#[primitive(batched = mixed_all)]
#[allow(clippy::too_many_arguments)]
fn mixed(
    inputs: &Settings,
    __ins: i64,
    __outs: i64,
    __cx: i64,
    __r: i64,
    __o0: i64,
    vector_len: i64,
    tolerance: i64,
) -> (i64, i64) {
    let __l = __ins * inputs.scale + __outs - __cx;
    (__l * __r, __o0 + vector_len - tolerance)
}

/// `mixed` for every active lane at once.
#[allow(clippy::too_many_arguments)]
fn mixed_all(
    inputs: &Settings,
    __ins: ArrayView1<i64>,
    __outs: ArrayView1<i64>,
    __cx: ArrayView1<i64>,
    __r: ArrayView1<i64>,
    __o0: ArrayView1<i64>,
    vector_len: ArrayView1<i64>,
    tolerance: ArrayView1<i64>,
) -> (Array1<i64>, Array1<i64>) {
    let __l = &(&__ins * inputs.scale) + &(&__outs - &__cx);
    (&__l * &__r, &(&__o0 + &vector_len) - &tolerance)
}

/// Calls `mixed` with arguments named as its kernels' locals.
#[autobatch]
fn calls_mixed(__define: &Settings, __lane: i64) -> i64 {
    let (a, b) = mixed(__define, __lane, 2, 3, __lane % 5, 7, 11, 13);
    a + b
}

/// A struct whose fields are named as every local and parameter of its companion's code.
#[autobatch]
#[derive(Clone, Debug, PartialEq)]
pub struct Named {
    __s: i64,
    __lane: i64,
    lane: i64,
    lanes: i64,
    __x: Vector,
    __at: (i64, f64),
    __cols: Inner,
    __out: i64,
    __v: bool,
}

/// A nested struct, read and written through the companion's column code.
#[autobatch]
#[derive(Clone, Debug, PartialEq)]
pub struct Inner {
    __cols: i64,
    __at: f64,
}

/// Takes and returns the struct, so its columns go both ways through a batch.
#[autobatch]
fn shift(__ins: Named, __lane: i64) -> Named {
    let mut n = __ins;
    n.__s += __lane;
    n.lanes = n.lane * n.__lane + n.__cols.__cols;
    n.__v = n.__out > __lane;
    n.__at = (n.__at.0 + 1, n.__at.1 + n.__cols.__at);
    n
}

/// Compiled vector kernels: the element loop's, the scratch rows' and the prefetcher's names.
#[autobatch]
fn vector_names(__x0: Vector, __n: f64, __j: f64) -> (Vector, f64) {
    let __s0 = &(&__x0 * __n) + __j;
    let __rest = &(&__s0 * &__s0) - &__x0;
    let __scratch = __rest.dot(&__x0);
    let __lanes = &(&__rest + __scratch) * 0.5;
    let __ahead = __lanes.sum() + __scratch;
    let __d0 = &__lanes * __ahead;
    let __q = __d0.norm_squared();
    (__d0, __q + __ahead)
}

// The vector kernel is the compiled kind (element loops), whose names are tested here.
const _: () = assert!(vector_names::VECTOR_KERNELS >= 1);

fn modes() -> [Config; 2] {
    [
        Config::with_mode(Mode::Stackless),
        Config::with_mode(Mode::FullVm),
    ]
}

#[test]
fn scalar_kernel_names_never_meet_the_users() {
    let cols: Vec<Array1<i64>> = (0..6)
        .map(|c| Array1::from_iter((0..40).map(|i| (i * (c + 3) % 17) - 5)))
        .collect();
    let expected: Vec<i64> = (0..40)
        .map(|i| {
            let a = |c: usize| cols[c][i];
            scalar_names(a(0), a(1), a(2), a(3), a(4), a(5))
        })
        .collect();
    for config in modes() {
        let v = |c: usize| cols[c].view();
        let got = scalar_names::batch(v(0), v(1), v(2), v(3), v(4), v(5), &config).unwrap();
        assert_eq!(got.to_vec(), expected);
    }
}

#[test]
fn a_lone_kernel_reads_inputs_named_as_its_own_locals() {
    let a = Array1::from_iter(0..50i64);
    let b = Array1::from_iter((0..50i64).map(|i| 7 - i));
    let expected: Vec<i64> = (0..50)
        .map(|i| lone(a[i], b[i], a[i] % 3, b[i] % 5))
        .collect();
    let (c, d) = (a.mapv(|x| x % 3), b.mapv(|x| x % 5));
    for config in modes() {
        let got = lone::batch(a.view(), b.view(), c.view(), d.view(), &config).unwrap();
        assert_eq!(got.to_vec(), expected);
    }
}

#[test]
fn a_context_named_as_the_kernel_inputs() {
    let settings = Settings { scale: 7 };
    let x = Array1::from_iter(-5..20i64);
    for config in modes() {
        let got = context_named::batch(&settings, x.view(), &config).unwrap();
        assert_eq!(got, x.mapv(|x| context_named(&settings, x)));
    }
}

#[test]
fn vector_kernel_names_never_meet_the_users() {
    let x = Array2::from_shape_fn((9, 5), |(i, j)| (i as f64 - 4.0) * 0.75 + j as f64);
    let n = Array1::from_iter((0..9).map(|i| 1.5 - i as f64 * 0.25));
    let j = Array1::from_iter((0..9).map(|i| i as f64 / 3.0));
    for config in modes() {
        let (vs, qs) = vector_names::batch(x.view(), n.view(), j.view(), &config).unwrap();
        for lane in 0..9 {
            let (v, q) = vector_names(
                Vector::from_slice(x.row(lane).as_slice().unwrap()),
                n[lane],
                j[lane],
            );
            assert_eq!(vs.row(lane).to_vec(), v.as_slice().to_vec());
            assert_eq!(qs[lane].to_bits(), q.to_bits());
        }
    }
}

#[test]
fn primitive_names_never_meet_the_users() {
    let settings = Settings { scale: 3 };
    let x = Array1::from_iter(-6..30i64);
    for config in modes() {
        let got = calls_mixed::batch(&settings, x.view(), &config).unwrap();
        assert_eq!(got, x.mapv(|x| calls_mixed(&settings, x)));
    }
    let columns: Vec<Column> = (0..7)
        .map(|c| Column::from_view1(Array1::from_iter((0..12i64).map(|i| i * c - 4)).view()))
        .collect();
    mixed::check_agreement(&settings, &columns, 0, Tolerance::Exact).unwrap();
}

#[test]
fn struct_companion_names_never_meet_the_users() {
    let lanes: Vec<Named> = (0..9i64)
        .map(|i| Named {
            __s: i,
            __lane: i - 3,
            lane: 2 * i,
            lanes: -i,
            __x: Vector::from_slice(&[i as f64, 0.5]),
            __at: (i % 4, i as f64 * 0.25),
            __cols: Inner {
                __cols: 7 - i,
                __at: 1.5,
            },
            __out: i % 3,
            __v: i % 2 == 0,
        })
        .collect();
    let batch = NamedBatch::from_lanes(&lanes).unwrap();
    assert_eq!(batch.to_lanes(), lanes);
    let by = Array1::from_iter(0..9i64);
    for config in modes() {
        let got = shift::batch(&batch, by.view(), &config).unwrap();
        let expected: Vec<Named> = lanes
            .iter()
            .zip(by.iter())
            .map(|(n, &b)| shift(n.clone(), b))
            .collect();
        assert_eq!(got.to_lanes(), expected);
    }
}

/// Merged kernels: one local per variable (`__v0`, `__v1`, ..), here against parameters named
/// as each other's locals, read together by one step.
#[autobatch]
fn merged_names(__v1: i64, __v0: i64) -> i64 {
    let __v2 = __v1 - __v0;
    let __v3 = __v2 * __v1 + __v0;
    __v3 - __v2 * 3
}

#[test]
fn merged_kernel_locals_never_meet_the_users() {
    let a = Array1::from_iter(-20..30i64);
    let b = Array1::from_iter((0..50i64).map(|i| 11 - 2 * i));
    let expected: Vec<i64> = (0..50).map(|i| merged_names(a[i], b[i])).collect();
    for config in modes() {
        let got = merged_names::batch(a.view(), b.view(), &config).unwrap();
        assert_eq!(got.to_vec(), expected);
    }
}

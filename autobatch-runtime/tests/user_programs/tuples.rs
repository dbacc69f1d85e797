//! Tuples as users write them: tuple results, tuple parameters (tak), calls returning tuples
//! taken apart by `let`, and nested tuples.

use super::modes;
use autobatch_runtime::autobatch;
use autobatch_runtime::ndarray::Array1;
use proptest::prelude::*;

/// Tuples in and out.
#[autobatch]
fn divmod(a: i64, b: i64) -> (i64, i64) {
    if b == 0 {
        (0, a)
    } else {
        (a / b, a % b)
    }
}

/// tak, with a tuple pattern parameter.
#[autobatch]
fn tak((x, y): (i64, i64), z: i64) -> i64 {
    if y < x {
        tak((tak((x - 1, y), z), tak((y - 1, z), x)), tak((z - 1, x), y))
    } else {
        z
    }
}

/// The smaller and the larger of two values.
#[autobatch]
fn min_max(a: i64, b: i64) -> (i64, i64) {
    if a < b {
        (a, b)
    } else {
        (b, a)
    }
}

/// Three values sorted, from a tuple parameter, through calls returning tuples.
#[autobatch]
fn sort3((a, b, c): (i64, i64, i64)) -> (i64, i64, i64) {
    let (lo, hi) = min_max(a, b);
    let (lo, mid) = min_max(lo, c);
    let (mid, hi) = min_max(mid, hi);
    (lo, mid, hi)
}

/// Nested tuples: the spread of three values and, of the middle one, its sign and a sum.
#[autobatch]
fn spread(a: i64, b: i64) -> (i64, (bool, i64)) {
    let sorted = sort3((a, b, a - b));
    let (lo, mid, hi) = sorted;
    (hi - lo, (mid > 0, sorted.0 + sorted.1))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(24)))]

    #[test]
    fn tuple_returns(pairs in prop::collection::vec((-1000i64..1000, -5i64..5), 1..200)) {
        let (a, b): (Vec<i64>, Vec<i64>) = pairs.into_iter().unzip();
        let (va, vb) = (Array1::from_vec(a.clone()), Array1::from_vec(b.clone()));
        for config in modes() {
            let (q, r) = divmod::batch(va.view(), vb.view(), &config).unwrap();
            for i in 0..a.len() {
                prop_assert_eq!((q[i], r[i]), divmod(a[i], b[i]));
            }
        }
    }

    #[test]
    fn tuple_parameters(xyz in prop::collection::vec((0i64..12, 0i64..12, 0i64..12), 1..200)) {
        let x = Array1::from_vec(xyz.iter().map(|t| t.0).collect());
        let y = Array1::from_vec(xyz.iter().map(|t| t.1).collect());
        let z = Array1::from_vec(xyz.iter().map(|t| t.2).collect());
        let expected: Vec<i64> = xyz.iter().map(|&(a, b, c)| tak((a, b), c)).collect();
        for config in modes() {
            let got = tak::batch((x.view(), y.view()), z.view(), &config).unwrap();
            prop_assert_eq!(got.to_vec(), expected.clone());
        }
    }

    #[test]
    fn tuple_functions(pairs in prop::collection::vec((-1_000_000i64..1_000_000, -1_000_000i64..1_000_000), 1..1000)) {
        let (a, b): (Vec<i64>, Vec<i64>) = pairs.iter().copied().unzip();
        let (va, vb) = (Array1::from_vec(a), Array1::from_vec(b));
        for config in modes() {
            let (width, (positive, sum)) = spread::batch(va.view(), vb.view(), &config).unwrap();
            for (i, &(a, b)) in pairs.iter().enumerate() {
                prop_assert_eq!((width[i], (positive[i], sum[i])), spread(a, b));
            }
        }
    }
}

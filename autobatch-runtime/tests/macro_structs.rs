//! `#[autobatch] struct`: the struct stays as written, and its companion `<Name>Batch` holds many
//! of them as a struct of arrays (one array per leaf field, one row per lane) that round-trips
//! every field bit for bit, refuses ragged `Vector` fields with a typed error, and answers
//! `None` past its rows.

use autobatch_runtime::ndarray::{array, Array1};
use autobatch_runtime::{autobatch, Key, RuntimeError, Vector};
use proptest::prelude::*;

/// A tree summary as a user writes it: numbers, a bool, a vector, a key and a tuple.
#[autobatch]
#[derive(Clone, Debug, PartialEq)]
pub struct Tree {
    depth: i64,
    log_sum: f64,
    q: Vector,
    key: Key,
    turning: bool,
    t: (f64, (i32, bool)),
}

fn tree(i: usize, len: usize) -> Tree {
    Tree {
        depth: i as i64 * 3 - 7,
        log_sum: (i as f64).ln() * -0.5,
        q: Vector::from_slice(&vec![i as f64 * 0.25; len]),
        key: Key::new(i as u64),
        turning: i.is_multiple_of(3),
        t: (i as f64 / 7.0, (i as i32 - 2, !i.is_multiple_of(2))),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(16)))]

    #[test]
    fn struct_of_arrays_round_trips_every_field(lanes in 1usize..1000, len in 0usize..5) {
        let trees: Vec<Tree> = (0..lanes).map(|i| tree(i, len)).collect();
        let batch = TreeBatch::from_lanes(&trees).unwrap();
        prop_assert_eq!(batch.len(), lanes);
        prop_assert_eq!(batch.q.shape(), &[lanes, len]);
        prop_assert_eq!(&batch.depth, &Array1::from_iter(trees.iter().map(|t| t.depth)));
        let back = batch.to_lanes();
        for (a, b) in back.iter().zip(&trees) {
            prop_assert_eq!(a.log_sum.to_bits(), b.log_sum.to_bits());
        }
        prop_assert_eq!(back, trees);
        prop_assert!(batch.lane(lanes).is_none());
    }
}

#[test]
fn ragged_vector_fields_are_refused_naming_the_field_and_lane() {
    let trees = vec![tree(1, 2), tree(2, 3)];
    let e = TreeBatch::from_lanes(&trees).unwrap_err();
    assert!(matches!(e, RuntimeError::VectorLength { .. }));
    assert_eq!(
        e.to_string(),
        "vector input `Tree.q (lane 1)` has length 3, but vectors in this run have length 2"
    );
}

#[test]
fn fields_of_different_lengths_answer_none_past_the_shortest() {
    let mut batch = TreeBatch::from_lanes(&[tree(1, 1), tree(2, 1)]).unwrap();
    batch.t.1 .0 = array![5];
    assert!(batch.lane(0).is_some());
    assert!(batch.lane(1).is_none());
    assert!(!batch.is_empty());
}

//! Struct values inside `#[autobatch]` functions, in programs written as users write them: a
//! struct-returning recursive function, a loop-carried accumulator, nested structs, `..base`
//! updates, field assignment, tuples of structs, structs holding tuples, `Vector` and `Key`
//! fields, structs in and out of `batch`. Each runs differentially: the scalar function,
//! stackless and the full VM agree lane by lane (floats bit for bit) on proptest batches of 1
//! to 1,000 lanes.

use autobatch_runtime::ir::Allocation;
use autobatch_runtime::ndarray::{Array1, Array2};
use autobatch_runtime::{autobatch, Config, Key, Mode, Vector};
use autobatch_testkit::golden::assert_golden;
use proptest::prelude::*;

/// What a walk down a binary tree of depth `depth` sees.
#[autobatch]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    leaves: i64,
    weight: f64,
    balanced: bool,
}

/// A recursive function returning a struct: the summary of a tree of `depth` levels.
#[autobatch]
fn walk(depth: i64) -> Summary {
    if depth <= 0 {
        return Summary {
            leaves: 1,
            weight: 0.5,
            balanced: true,
        };
    }
    let left = walk(depth - 1);
    let right = walk(depth - 2);
    Summary {
        leaves: left.leaves + right.leaves,
        weight: left.weight * 0.75 + right.weight,
        balanced: left.balanced && right.leaves <= left.leaves,
    }
}

/// Running statistics, Welford's way.
#[autobatch]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    n: i64,
    mean: f64,
    m2: f64,
}

/// A loop-carried struct: statistics of `x, x * 1.5, ..` for `count` terms.
#[autobatch]
fn running(x: f64, count: i64) -> (f64, f64) {
    let mut s = Stats {
        n: 0,
        mean: 0.0,
        m2: 0.0,
    };
    let mut v = x;
    while s.n < count {
        s.n += 1;
        let delta = v - s.mean;
        s.mean += delta / s.n as f64;
        s.m2 += delta * (v - s.mean);
        v = v * 1.5 - 1.0;
    }
    let var = if s.n > 1 {
        s.m2 / (s.n - 1) as f64
    } else {
        0.0
    };
    (s.mean, var)
}

/// A struct inside a struct.
#[autobatch]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    x: i64,
    y: i64,
}

/// A segment between two points, with a tuple field.
#[autobatch]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment {
    from: Point,
    to: Point,
    tag: (i32, bool),
}

/// Moves a segment `steps` times: nested field reads and writes, `..base`, a whole inner
/// struct assigned, shorthand fields.
#[autobatch]
fn crawl(start: i64, steps: i64) -> Segment {
    let from = Point {
        x: start,
        y: -start,
    };
    let to = Point {
        x: start + 1,
        ..from
    };
    let mut s = Segment {
        from,
        to,
        tag: (0, false),
    };
    for i in 0..steps {
        s.to.y += i;
        if s.to.y > s.from.y + 3 {
            s.from = s.to;
            s.tag = (s.tag.0 + 1, s.tag.1);
        } else {
            s = Segment {
                tag: (s.tag.0, !s.tag.1),
                ..s
            };
        }
    }
    s
}

/// Swaps a segment's ends and measures it: a struct in, a struct and a tuple of structs out.
#[autobatch]
fn flip(s: Segment) -> (Segment, i64) {
    let t = Segment {
        from: s.to,
        to: s.from,
        ..s
    };
    let len = (t.to.x - t.from.x).abs() + (t.to.y - t.from.y).abs();
    (t, len)
}

/// Calls `flip` twice through a tuple of structs.
#[autobatch]
fn flip_twice(start: i64, steps: i64) -> i64 {
    let (once, a) = flip(crawl(start, steps));
    let pair = flip(once);
    pair.0.from.x * 1000 + pair.1 + a + pair.0.tag.0 as i64
}

/// Structs in control flow: an `if` and a `match` for a struct's value, a `loop` breaking
/// with one, a struct built from a call inside a literal, and a struct of a tuple.
#[autobatch]
fn wander(start: i64, steps: i64) -> (Point, i64) {
    let origin = Point { x: start, y: 0 };
    let mut p = if start % 2 == 0 {
        origin
    } else {
        Point { y: 1, ..origin }
    };
    let mut rounds = 0;
    let found = loop {
        rounds += 1;
        if p.x.abs() > 20 || p.y > steps || rounds > 12 {
            break p;
        }
        p = match p.x % 3 {
            0 => Point { x: p.x + 5, ..p },
            1 | -1 => Point {
                x: p.x - 2,
                y: p.y + 1,
            },
            _ => flip(crawl(p.x, p.y.abs() % 4)).0.to,
        };
    };
    let pair = (
        found,
        Point {
            x: walk(steps % 5).leaves,
            y: -1,
        },
    );
    (pair.1, pair.0.x * 100 + pair.0.y)
}

/// A struct of one field.
#[autobatch]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Meters {
    value: f64,
}

/// Settings every lane shares.
pub struct Scale {
    factor: f64,
}

/// The context after a struct parameter, passed on after a struct argument.
#[autobatch]
fn stretch(m: Meters, scale: &Scale, times: i64) -> Meters {
    if times <= 0 {
        m
    } else {
        stretch(
            Meters {
                value: m.value * scale.factor,
            },
            scale,
            times - 1,
        )
    }
}

/// Another function's struct parameter before the context.
#[autobatch]
fn stretch_twice(v: f64, scale: &Scale) -> f64 {
    stretch(Meters { value: v }, scale, 2).value
}

/// A particle: a `Vector` position and a random key.
#[autobatch]
#[derive(Clone, Debug, PartialEq)]
pub struct Particle {
    q: Vector,
    key: Key,
    moves: i64,
}

/// A random walk of a particle: its vector and key updated through fields.
#[autobatch]
fn jiggle(p: Particle, steps: i64) -> Particle {
    let mut p = p;
    while p.moves < steps {
        let (noise, key) = p.key.normals_like(&p.q);
        p.q = &p.q + &(&noise * 0.5);
        p.key = key;
        p.moves += 1;
    }
    p
}

/// An accumulator passed down a recursion.
#[autobatch]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Acc {
    total: i64,
    depth: i64,
    scale: f64,
}

/// Only `a.total` is read after the recursive call: it alone of `a`'s fields is FULL.
#[autobatch]
fn deepen(a: Acc, n: i64) -> Acc {
    if n <= 0 {
        return a;
    }
    let inner = deepen(
        Acc {
            depth: a.depth + 1,
            ..a
        },
        n - 1,
    );
    Acc {
        total: inner.total + a.total * 2,
        ..inner
    }
}

#[test]
fn allocation_is_per_field() {
    assert_golden(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden"),
        "macro_struct_linked",
        &deepen::program().unwrap().to_string(),
    );
    let program = deepen::program().unwrap();
    let allocation = |name: &str| {
        program
            .vars
            .iter()
            .find(|v| v.name == name)
            .unwrap_or_else(|| panic!("no variable {name}"))
            .alloc
    };
    assert_eq!(allocation("deepen.a.total"), Allocation::Full);
    assert_ne!(allocation("deepen.a.depth"), Allocation::Full);
    assert_ne!(allocation("deepen.a.scale"), Allocation::Full);
}

fn modes() -> [Config; 2] {
    [
        Config::with_mode(Mode::FullVm),
        Config::with_mode(Mode::Stackless),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(12)))]

    #[test]
    fn a_recursive_function_returns_a_struct(ds in prop::collection::vec(-1i64..12, 1..1000)) {
        let input = Array1::from_vec(ds.clone());
        for config in modes() {
            let got = walk::batch(input.view(), &config).unwrap();
            prop_assert_eq!(got.len(), ds.len());
            for (lane, &d) in ds.iter().enumerate() {
                let want = walk(d);
                let have = got.lane(lane).unwrap();
                prop_assert_eq!(have.leaves, want.leaves);
                prop_assert_eq!(have.weight.to_bits(), want.weight.to_bits());
                prop_assert_eq!(have.balanced, want.balanced);
            }
        }
    }

    #[test]
    fn a_loop_carries_a_struct(xs in prop::collection::vec(-100.0f64..100.0, 1..1000), n in 0i64..20) {
        let counts: Vec<i64> = (0..xs.len() as i64).map(|i| (i * 7 + n) % 20).collect();
        let (a, b) = (Array1::from_vec(xs.clone()), Array1::from_vec(counts.clone()));
        for config in modes() {
            let (mean, var) = running::batch(a.view(), b.view(), &config).unwrap();
            for lane in 0..xs.len() {
                let (m, v) = running(xs[lane], counts[lane]);
                prop_assert_eq!(mean[lane].to_bits(), m.to_bits());
                prop_assert_eq!(var[lane].to_bits(), v.to_bits());
            }
        }
    }

    #[test]
    fn nested_structs_update_and_flow_through_calls(starts in prop::collection::vec(-50i64..50, 1..1000)) {
        let steps: Vec<i64> = starts.iter().map(|s| s.rem_euclid(9)).collect();
        let (a, b) = (Array1::from_vec(starts.clone()), Array1::from_vec(steps.clone()));
        for config in modes() {
            let segments = crawl::batch(a.view(), b.view(), &config).unwrap();
            let want: Vec<Segment> = starts.iter().zip(&steps).map(|(&s, &n)| crawl(s, n)).collect();
            prop_assert_eq!(segments.to_lanes(), want.clone());
            let (flipped, lens) = flip::batch(&segments, &config).unwrap();
            for (lane, w) in want.iter().enumerate() {
                let (f, l) = flip(*w);
                prop_assert_eq!(flipped.lane(lane).unwrap(), f);
                prop_assert_eq!(lens[lane], l);
            }
            let twice = flip_twice::batch(a.view(), b.view(), &config).unwrap();
            let want: Vec<i64> = starts.iter().zip(&steps).map(|(&s, &n)| flip_twice(s, n)).collect();
            prop_assert_eq!(twice.to_vec(), want);
        }
    }

    #[test]
    fn structs_flow_through_if_match_and_loop(starts in prop::collection::vec(-30i64..30, 1..1000)) {
        let steps: Vec<i64> = starts.iter().map(|s| (s * 7).rem_euclid(11)).collect();
        let (a, b) = (Array1::from_vec(starts.clone()), Array1::from_vec(steps.clone()));
        for config in modes() {
            let (points, codes) = wander::batch(a.view(), b.view(), &config).unwrap();
            for lane in 0..starts.len() {
                let (p, code) = wander(starts[lane], steps[lane]);
                prop_assert_eq!(points.lane(lane).unwrap(), p);
                prop_assert_eq!(codes[lane], code);
            }
        }
    }

    #[test]
    fn a_one_field_struct_beside_the_context(values in prop::collection::vec(-10.0f64..10.0, 1..1000)) {
        let scale = Scale { factor: 1.25 };
        let times = Array1::from_iter((0..values.len() as i64).map(|i| i % 5));
        let batch = MetersBatch { value: Array1::from_vec(values.clone()) };
        for config in modes() {
            let out = stretch::batch(&scale, &batch, times.view(), &config).unwrap();
            for lane in 0..values.len() {
                let want = stretch(Meters { value: values[lane] }, &scale, times[lane]);
                prop_assert_eq!(out.value[lane].to_bits(), want.value.to_bits());
            }
            let twice = stretch_twice::batch(&scale, batch.value.view(), &config).unwrap();
            prop_assert_eq!(twice[0].to_bits(), stretch_twice(values[0], &scale).to_bits());
        }
    }

    #[test]
    fn a_struct_passes_down_a_recursion(totals in prop::collection::vec(-1000i64..1000, 1..1000)) {
        let batch = AccBatch {
            total: Array1::from_vec(totals.clone()),
            depth: Array1::from_iter(totals.iter().map(|t| t % 3)),
            scale: Array1::from_iter(totals.iter().map(|&t| t as f64 / 7.0)),
        };
        let ns = Array1::from_iter(totals.iter().map(|t| t.rem_euclid(6)));
        for config in modes() {
            let out = deepen::batch(&batch, ns.view(), &config).unwrap();
            for lane in 0..totals.len() {
                let want = deepen(batch.lane(lane).unwrap(), ns[lane]);
                let have = out.lane(lane).unwrap();
                prop_assert_eq!((have.total, have.depth), (want.total, want.depth));
                prop_assert_eq!(have.scale.to_bits(), want.scale.to_bits());
            }
        }
    }

    #[test]
    fn vector_and_key_fields(lanes in 1usize..1000, len in 1usize..4) {
        let particles: Vec<Particle> = (0..lanes)
            .map(|i| Particle {
                q: Vector::from_slice(&vec![i as f64 * 0.1; len]),
                key: Key::new(i as u64 * 31 + 5),
                moves: (i % 4) as i64,
            })
            .collect();
        let steps: Vec<i64> = (0..lanes as i64).map(|i| i % 6).collect();
        let batch = ParticleBatch::from_lanes(&particles).unwrap();
        let steps_a = Array1::from_vec(steps.clone());
        for config in modes() {
            let out = jiggle::batch(&batch, steps_a.view(), &config).unwrap();
            let q: &Array2<f64> = &out.q;
            prop_assert_eq!(q.shape(), &[lanes, len]);
            for (lane, p) in particles.iter().enumerate() {
                let want = jiggle(p.clone(), steps[lane]);
                let have = out.lane(lane).unwrap();
                prop_assert_eq!(have.moves, want.moves);
                prop_assert_eq!(have.key, want.key);
                let bits = |v: &Vector| v.as_slice().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                prop_assert_eq!(bits(&have.q), bits(&want.q));
            }
        }
    }
}

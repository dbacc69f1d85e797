//! The shared context in #[autobatch] code, as users write it: settings read in the body, a
//! model whose data a primitive's batched form reads, recursion and mutual recursion passing
//! the context on. The scalar function, stackless, the full VM and the reference interpreter
//! agree lane by lane (floats bit for bit) on proptest batches of 1 to 1,000 lanes; a context
//! of the wrong type, or none, is a typed error before anything runs.

use autobatch_runtime::ndarray::{Array1, Array2, ArrayView2, Axis};
use autobatch_runtime::primitive::Tolerance;
use autobatch_runtime::{
    autobatch, primitive, Column, Config, Context, Mode, RuntimeError, Vector,
};
use proptest::prelude::*;

/// Per-run constants, read in the body: never a per-lane column.
pub struct Settings {
    max_steps: i64,
    step: f64,
    damping: Damping,
    tolerance_exponent: i32,
}

/// A nested part of the settings.
pub struct Damping {
    factor: f64,
}

impl Settings {
    fn tolerance(&self) -> f64 {
        10f64.powi(self.tolerance_exponent)
    }
}

/// A loop bounded by a setting, a nested field, and a method of the settings.
#[autobatch]
fn relax(settings: &Settings, x: f64) -> (f64, i64) {
    let mut x = x;
    let mut i = 0;
    while i < settings.max_steps && x.abs() > settings.tolerance() {
        x = x * settings.damping.factor - settings.step;
        i += 1;
    }
    (x, i)
}

/// Recursion passing the context on; a context read compared with a lane's value.
#[autobatch]
fn capped_sum(ctx: &Settings, n: i64) -> i64 {
    if n <= 0 || n > ctx.max_steps {
        0
    } else {
        n + capped_sum(ctx, n - 1)
    }
}

/// Mutual recursion, the context in another position in each function.
#[autobatch]
fn ping(n: i64, ctx: &Settings) -> i64 {
    if n <= 0 {
        0
    } else {
        1 + pong(ctx, n - 1)
    }
}

#[autobatch]
fn pong(ctx: &Settings, n: i64) -> i64 {
    if n <= 0 {
        ctx.max_steps
    } else {
        let step: f64 = ctx.step;
        (step as i64) + ping(n - 1, ctx)
    }
}

/// A model: data a batched gradient reads (one GEMM over the active lanes), and a constant.
pub struct Model {
    precision: Array2<f64>,
    rate: f64,
}

impl Model {
    fn new(dim: usize, rate: f64) -> Self {
        let precision = Array2::from_shape_fn((dim, dim), |(i, j)| {
            0.5f64.powi((i as i32 - j as i32).abs())
        });
        Model { precision, rate }
    }
}

/// Energy and gradient of a Gaussian: the scalar form runs the batched form on one row, so
/// the two agree bit for bit.
#[primitive(batched = energy_all)]
fn energy(model: &Model, q: &Vector) -> (f64, Vector) {
    let row = ArrayView2::from_shape((1, q.len()), q.as_slice()).expect("one row");
    let (e, g) = energy_all(model, row);
    (e[0], Vector::from(g.row(0).to_vec()))
}

/// Every active lane's position is a row of `q`; the model comes from the run's context.
fn energy_all(model: &Model, q: ArrayView2<f64>) -> (Array1<f64>, Array2<f64>) {
    let g = q.dot(&model.precision);
    let e = (&q * &g).sum_axis(Axis(1)) * 0.5;
    (e, g)
}

/// Gradient descent with a batched primitive receiving the model, and a rate read in the body.
#[autobatch]
fn descend(model: &Model, q: Vector, steps: i64) -> (Vector, f64) {
    let mut q = q;
    let mut e = 0.0;
    let mut i = 0;
    while i < steps {
        let (e1, g): (f64, Vector) = energy(model, &q);
        q = &q - &(model.rate * &g);
        e = e1;
        i += 1;
    }
    (q, e)
}

fn modes() -> [Config; 2] {
    [
        Config::with_mode(Mode::FullVm),
        Config::with_mode(Mode::Stackless),
    ]
}

fn settings(max_steps: i64) -> Settings {
    Settings {
        max_steps,
        step: 0.25,
        damping: Damping { factor: 0.9 },
        tolerance_exponent: -3,
    }
}

const DIM: usize = 5;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(16)))]

    #[test]
    fn settings_read_in_the_body(xs in prop::collection::vec(-50.0f64..50.0, 1..1000), max in 0i64..40) {
        let s = settings(max);
        let (want_x, want_i): (Vec<f64>, Vec<i64>) = xs.iter().map(|&x| relax(&s, x)).unzip();
        let xs = Array1::from_vec(xs);
        for config in modes() {
            let (x, i) = relax::batch(&s, xs.view(), &config).unwrap();
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            prop_assert_eq!(bits(&x.to_vec()), bits(&want_x), "{:?}", config.mode);
            prop_assert_eq!(i.to_vec(), want_i.clone(), "{:?}", config.mode);
        }
    }

    #[test]
    fn recursion_passes_the_context_on(ns in prop::collection::vec(-3i64..60, 1..1000), max in 0i64..50) {
        let s = settings(max);
        let ns = Array1::from_vec(ns);
        let want: Vec<i64> = ns.iter().map(|&n| capped_sum(&s, n)).collect();
        let want_ping: Vec<i64> = ns.iter().map(|&n| ping(n, &s)).collect();
        for config in modes() {
            prop_assert_eq!(capped_sum::batch(&s, ns.view(), &config).unwrap().to_vec(), want.clone());
            prop_assert_eq!(ping::batch(&s, ns.view(), &config).unwrap().to_vec(), want_ping.clone());
        }
        let exe = ping::executable().unwrap();
        let reference = exe
            .run_reference_with_context(Context::new(&s), &[Column::from_view1(ns.view())], &Config::default())
            .unwrap();
        prop_assert_eq!(reference.outputs[0].clone(), Column::from_scalars(&want_ping));
    }

    #[test]
    fn a_primitive_reads_the_model_in_its_batched_form(
        rows in prop::collection::vec(prop::collection::vec(-3.0f64..3.0, DIM), 1..400),
        steps in 0i64..6,
    ) {
        let model = Model::new(DIM, 0.1);
        let q = Array2::from_shape_vec((rows.len(), DIM), rows.concat()).unwrap();
        let steps = Array1::from_elem(rows.len(), steps);
        let want: Vec<(Vector, f64)> = rows
            .iter()
            .zip(&steps)
            .map(|(r, &s)| descend(&model, Vector::from(r.clone()), s))
            .collect();
        for config in modes() {
            let (qs, es) = descend::batch(&model, q.view(), steps.view(), &config).unwrap();
            for (k, (wq, we)) in want.iter().enumerate() {
                let got: Vec<u64> = qs.row(k).iter().map(|x| x.to_bits()).collect();
                let exp: Vec<u64> = wq.as_slice().iter().map(|x| x.to_bits()).collect();
                prop_assert_eq!(got, exp, "{:?} lane {}", config.mode, k);
                prop_assert_eq!(es[k].to_bits(), we.to_bits());
            }
        }
    }
}

#[test]
fn the_batched_form_agrees_with_the_scalar_form_given_the_model() {
    let model = Model::new(DIM, 0.1);
    let q = Array2::from_shape_fn((7, DIM), |(i, j)| (i as f64 - 3.0) * 0.3 + j as f64 * 0.1);
    let inputs = [Column::from_view2(q.view())];
    energy::check_agreement(&model, &inputs, DIM, Tolerance::Exact).unwrap();
}

#[test]
fn a_context_of_another_type_or_none_is_a_typed_error() {
    let exe = capped_sum::executable().unwrap();
    assert_eq!(
        exe.context_type().map(|t| t.name),
        Some(std::any::type_name::<Settings>())
    );
    let ns = [Column::from_scalars(&[1i64, 2, 3])];
    for config in modes() {
        let wrong = exe.run_with_context(Context::new(&Model::new(2, 0.5)), &ns, &config);
        match wrong {
            Err(RuntimeError::Context { expected, found }) => {
                assert!(expected.ends_with("Settings"), "{expected}");
                assert!(found.contains("Model"), "{found}");
            }
            other => panic!("{other:?}"),
        }
        let none = exe.run(&ns, &config).unwrap_err();
        assert!(
            none.to_string().contains("given none"),
            "{none}: the message says what is missing"
        );
        let s = settings(10);
        let run = exe
            .run_with_context(Context::new(&s), &ns, &config)
            .unwrap();
        assert_eq!(run.outputs[0], Column::from_scalars(&[1i64, 3, 6]));
    }
}

#[test]
fn programs_without_a_context_need_none() {
    #[autobatch]
    fn twice(x: i64) -> i64 {
        2 * x
    }
    let exe = twice::executable().unwrap();
    assert_eq!(exe.context_type(), None);
    let xs = [Column::from_scalars(&[4i64])];
    // A context given to a program that reads none is ignored.
    let run = exe
        .run_with_context(Context::new(&1u8), &xs, &Config::default())
        .unwrap();
    assert_eq!(run.outputs[0], Column::from_scalars(&[8i64]));
}

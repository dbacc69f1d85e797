//! The random programs' primitives: a catalogue of total operations (no input makes one panic or
//! overflow), their types, and their kernels, lane-wise or batched.

use autobatch_runtime::{
    Column, InputRows, Kernel, KernelError, Key, LaneInputs, LaneOutputs, Vector,
};

/// The value types a random program uses; each is one tensor leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// `i64` scalar.
    Int,
    /// `f64` scalar.
    Float,
    /// `bool` scalar.
    Bool,
    /// `f64` per-lane vector.
    Vector,
    /// A counter-based random key.
    Key,
    /// A tuple `(i64, f64)`: two leaves, which assignments pack and unpack, calls pass and
    /// return, and no kernel takes whole.
    Pair,
}

impl Ty {
    /// Every type, in a fixed order.
    pub const ALL: [Ty; 6] = [Ty::Int, Ty::Float, Ty::Bool, Ty::Vector, Ty::Key, Ty::Pair];

    /// The IR type.
    pub fn ir(self) -> autobatch_runtime::ir::Type {
        use autobatch_runtime::ir::{DType, Type};
        match self {
            Ty::Int => Type::I64,
            Ty::Float => Type::F64,
            Ty::Bool => Type::BOOL,
            Ty::Vector => Type::vector(DType::F64),
            Ty::Key => Type::KEY,
            Ty::Pair => Type::Tuple(vec![Type::I64, Type::F64]),
        }
    }

    /// A short name for variable names.
    pub fn short(self) -> &'static str {
        match self {
            Ty::Int => "i",
            Ty::Float => "x",
            Ty::Bool => "b",
            Ty::Vector => "v",
            Ty::Key => "k",
            Ty::Pair => "t",
        }
    }
}

/// One lane's value of one leaf.
#[derive(Clone, Debug)]
pub enum Val {
    /// An `i64`.
    I(i64),
    /// An `f64`.
    F(f64),
    /// A `bool`.
    B(bool),
    /// A vector's elements.
    V(Vec<f64>),
    /// A key.
    K(Key),
}

impl Val {
    fn i(&self) -> i64 {
        match self {
            Val::I(x) => *x,
            other => unreachable!("expected an i64, got {other:?}"),
        }
    }

    fn f(&self) -> f64 {
        match self {
            Val::F(x) => *x,
            other => unreachable!("expected an f64, got {other:?}"),
        }
    }

    fn b(&self) -> bool {
        match self {
            Val::B(x) => *x,
            other => unreachable!("expected a bool, got {other:?}"),
        }
    }

    fn v(&self) -> &[f64] {
        match self {
            Val::V(x) => x,
            other => unreachable!("expected a vector, got {other:?}"),
        }
    }

    fn k(&self) -> Key {
        match self {
            Val::K(x) => *x,
            other => unreachable!("expected a key, got {other:?}"),
        }
    }
}

/// A total primitive operation. Constants carry their value (floats as bits, so `Prim` is
/// `Eq + Hash` and names one kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Prim {
    /// An `i64` constant.
    ConstI(i64),
    /// `a.wrapping_add(b)`.
    AddI,
    /// `a.wrapping_sub(b)`.
    SubI,
    /// `a.wrapping_mul(b)`.
    MulI,
    /// `a / b` (wrapping), `a` when `b == 0`.
    DivI,
    /// `a % b` (wrapping), `0` when `b == 0`.
    RemI,
    /// `a ^ b`.
    XorI,
    /// `a.wrapping_shr(b)`.
    ShrI,
    /// `a.min(b)`.
    MinI,
    /// `a.wrapping_neg()`.
    NegI,
    /// An `f64` constant, by its bits.
    ConstF(u64),
    /// `a + b`.
    AddF,
    /// `a - b`.
    SubF,
    /// `a * b`.
    MulF,
    /// `a / b`.
    DivF,
    /// `a.max(b)`.
    MaxF,
    /// `a.sqrt()`.
    SqrtF,
    /// `a.sin()`.
    SinF,
    /// `a.exp()`.
    ExpF,
    /// `a.ln()`.
    LnF,
    /// `a as f64`.
    IntToF,
    /// `a as i64` (saturating; NaN is 0).
    FToInt,
    /// `a as i64` for a `bool`.
    BoolToInt,
    /// A `bool` constant.
    ConstB(bool),
    /// `a < b` on `i64`.
    LtI,
    /// `a == b` on `i64`.
    EqI,
    /// `a < b` on `f64`.
    LtF,
    /// `a.is_nan()`.
    IsNan,
    /// `a && b`.
    And,
    /// `a || b`.
    Or,
    /// `!a`.
    Not,
    /// `if c { a } else { b }` on any type.
    Select(Ty),
    /// A vector of the run's length filled with `a`.
    Splat,
    /// `v + w`.
    AddV,
    /// `a * v`.
    ScaleV,
    /// `v.map(f64::sin)`.
    SinV,
    /// `v.dot(w)`.
    Dot,
    /// `v.sum()`.
    SumV,
    /// `v[i mod len]`, `0.0` for an empty vector.
    GetV,
    /// `Key::new(seed)`.
    ConstKey(u64),
    /// `key.uniform()`.
    Uniform,
    /// Two uniforms from one key: `(u1, u2, key)`.
    Uniform2,
    /// `key.normal()`.
    Normal,
    /// `key.split()`.
    Split,
    /// `key.fold_in(i as u64)`.
    FoldIn,
    /// `key.normals_like(&v)`: `(normals, key)`.
    NormalsLike,
    /// `key.bernoulli(p)`: `(coin, key)`.
    Bernoulli,
    /// `n - d`, for the recursion counter (`d > 0`).
    Dec(u8),
    /// `n.clamp(-1, cap)`: the recursion counter the entry passes on.
    Clamp(i64),
    /// `n <= 0`: the recursion's base case.
    NotPositive,
    /// `n mod (max + 1)`: a loop's trip count.
    TripCount(u8),
    /// `n > 0`: a loop's condition.
    Positive,
}

/// The primitives random statements draw from (the counter and loop ones are the builder's).
pub const CATALOGUE: &[Prim] = &[
    Prim::AddI,
    Prim::SubI,
    Prim::MulI,
    Prim::DivI,
    Prim::RemI,
    Prim::XorI,
    Prim::ShrI,
    Prim::MinI,
    Prim::NegI,
    Prim::AddF,
    Prim::SubF,
    Prim::MulF,
    Prim::DivF,
    Prim::MaxF,
    Prim::SqrtF,
    Prim::SinF,
    Prim::ExpF,
    Prim::LnF,
    Prim::IntToF,
    Prim::FToInt,
    Prim::BoolToInt,
    Prim::LtI,
    Prim::EqI,
    Prim::LtF,
    Prim::IsNan,
    Prim::And,
    Prim::Or,
    Prim::Not,
    Prim::Select(Ty::Int),
    Prim::Select(Ty::Float),
    Prim::Select(Ty::Bool),
    Prim::Select(Ty::Vector),
    Prim::Select(Ty::Key),
    Prim::Splat,
    Prim::AddV,
    Prim::ScaleV,
    Prim::SinV,
    Prim::Dot,
    Prim::SumV,
    Prim::GetV,
    Prim::Uniform,
    Prim::Uniform2,
    Prim::Normal,
    Prim::Split,
    Prim::FoldIn,
    Prim::NormalsLike,
    Prim::Bernoulli,
];

impl Prim {
    /// Input and output types.
    pub fn sig(self) -> (Vec<Ty>, Vec<Ty>) {
        use Ty::*;
        let (ins, outs): (&[Ty], &[Ty]) = match self {
            Prim::ConstI(_) => (&[], &[Int]),
            Prim::AddI
            | Prim::SubI
            | Prim::MulI
            | Prim::DivI
            | Prim::RemI
            | Prim::XorI
            | Prim::ShrI
            | Prim::MinI => (&[Int, Int], &[Int]),
            Prim::NegI | Prim::Dec(_) | Prim::Clamp(_) | Prim::TripCount(_) => (&[Int], &[Int]),
            Prim::ConstF(_) => (&[], &[Float]),
            Prim::AddF | Prim::SubF | Prim::MulF | Prim::DivF | Prim::MaxF => {
                (&[Float, Float], &[Float])
            }
            Prim::SqrtF | Prim::SinF | Prim::ExpF | Prim::LnF => (&[Float], &[Float]),
            Prim::IntToF => (&[Int], &[Float]),
            Prim::FToInt => (&[Float], &[Int]),
            Prim::BoolToInt => (&[Bool], &[Int]),
            Prim::ConstB(_) => (&[], &[Bool]),
            Prim::LtI | Prim::EqI => (&[Int, Int], &[Bool]),
            Prim::LtF => (&[Float, Float], &[Bool]),
            Prim::IsNan => (&[Float], &[Bool]),
            Prim::And | Prim::Or => (&[Bool, Bool], &[Bool]),
            Prim::Not => (&[Bool], &[Bool]),
            Prim::NotPositive | Prim::Positive => (&[Int], &[Bool]),
            Prim::Select(t) => return (vec![Bool, t, t], vec![t]),
            Prim::Splat => (&[Float], &[Vector]),
            Prim::AddV => (&[Vector, Vector], &[Vector]),
            Prim::ScaleV => (&[Float, Vector], &[Vector]),
            Prim::SinV => (&[Vector], &[Vector]),
            Prim::Dot => (&[Vector, Vector], &[Float]),
            Prim::SumV => (&[Vector], &[Float]),
            Prim::GetV => (&[Vector, Int], &[Float]),
            Prim::ConstKey(_) => (&[], &[Key]),
            Prim::Uniform | Prim::Normal => (&[Key], &[Float, Key]),
            Prim::Uniform2 => (&[Key], &[Float, Float, Key]),
            Prim::Split => (&[Key], &[Key, Key]),
            Prim::FoldIn => (&[Key, Int], &[Key]),
            Prim::NormalsLike => (&[Key, Vector], &[Vector, Key]),
            Prim::Bernoulli => (&[Key, Float], &[Bool, Key]),
        };
        (ins.to_vec(), outs.to_vec())
    }

    /// A constant of leaf type `t` (for an operand no variable in scope can supply); `None`
    /// for a pair, which is packed from leaves instead.
    pub fn constant(t: Ty) -> Option<Prim> {
        match t {
            Ty::Int => Some(Prim::ConstI(3)),
            Ty::Float => Some(Prim::ConstF(0.5f64.to_bits())),
            Ty::Bool => Some(Prim::ConstB(true)),
            Ty::Vector => Some(Prim::Splat),
            Ty::Key => Some(Prim::ConstKey(7)),
            Ty::Pair => None,
        }
    }

    /// The op's value on one lane; `len` is the run's vector length.
    pub fn eval(self, a: &[Val], len: usize) -> Vec<Val> {
        use Val::*;
        let one = |v: Val| vec![v];
        match self {
            Prim::ConstI(c) => one(I(c)),
            Prim::AddI => one(I(a[0].i().wrapping_add(a[1].i()))),
            Prim::SubI => one(I(a[0].i().wrapping_sub(a[1].i()))),
            Prim::MulI => one(I(a[0].i().wrapping_mul(a[1].i()))),
            Prim::DivI => one(I(match a[1].i() {
                0 => a[0].i(),
                d => a[0].i().wrapping_div(d),
            })),
            Prim::RemI => one(I(match a[1].i() {
                0 => 0,
                d => a[0].i().wrapping_rem(d),
            })),
            Prim::XorI => one(I(a[0].i() ^ a[1].i())),
            Prim::ShrI => one(I(a[0].i().wrapping_shr(a[1].i() as u32))),
            Prim::MinI => one(I(a[0].i().min(a[1].i()))),
            Prim::NegI => one(I(a[0].i().wrapping_neg())),
            Prim::ConstF(bits) => one(F(f64::from_bits(bits))),
            Prim::AddF => one(F(a[0].f() + a[1].f())),
            Prim::SubF => one(F(a[0].f() - a[1].f())),
            Prim::MulF => one(F(a[0].f() * a[1].f())),
            Prim::DivF => one(F(a[0].f() / a[1].f())),
            Prim::MaxF => one(F(a[0].f().max(a[1].f()))),
            Prim::SqrtF => one(F(a[0].f().sqrt())),
            Prim::SinF => one(F(a[0].f().sin())),
            Prim::ExpF => one(F(a[0].f().exp())),
            Prim::LnF => one(F(a[0].f().ln())),
            Prim::IntToF => one(F(a[0].i() as f64)),
            Prim::FToInt => one(I(a[0].f() as i64)),
            Prim::BoolToInt => one(I(a[0].b() as i64)),
            Prim::ConstB(c) => one(B(c)),
            Prim::LtI => one(B(a[0].i() < a[1].i())),
            Prim::EqI => one(B(a[0].i() == a[1].i())),
            Prim::LtF => one(B(a[0].f() < a[1].f())),
            Prim::IsNan => one(B(a[0].f().is_nan())),
            Prim::And => one(B(a[0].b() && a[1].b())),
            Prim::Or => one(B(a[0].b() || a[1].b())),
            Prim::Not => one(B(!a[0].b())),
            Prim::Select(_) => one(if a[0].b() { a[1].clone() } else { a[2].clone() }),
            Prim::Splat => one(V(vec![a[0].f(); len])),
            Prim::AddV => one(V(a[0]
                .v()
                .iter()
                .zip(a[1].v())
                .map(|(x, y)| x + y)
                .collect())),
            Prim::ScaleV => one(V(a[1].v().iter().map(|x| a[0].f() * x).collect())),
            Prim::SinV => one(V(a[0].v().iter().map(|x| x.sin()).collect())),
            Prim::Dot => one(F(
                Vector::from(a[0].v().to_vec()).dot(&Vector::from(a[1].v().to_vec()))
            )),
            Prim::SumV => one(F(a[0].v().iter().sum())),
            Prim::GetV => {
                let v = a[0].v();
                one(F(if v.is_empty() {
                    0.0
                } else {
                    v[a[1].i().rem_euclid(v.len() as i64) as usize]
                }))
            }
            Prim::ConstKey(seed) => one(K(Key::new(seed))),
            Prim::Uniform => {
                let (u, k) = a[0].k().uniform();
                vec![F(u), K(k)]
            }
            Prim::Uniform2 => {
                let (u, k) = a[0].k().uniform();
                let (w, k) = k.uniform();
                vec![F(u), F(w), K(k)]
            }
            Prim::Normal => {
                let (z, k) = a[0].k().normal();
                vec![F(z), K(k)]
            }
            Prim::Split => {
                let (l, r) = a[0].k().split();
                vec![K(l), K(r)]
            }
            Prim::FoldIn => one(K(a[0].k().fold_in(a[1].i() as u64))),
            Prim::NormalsLike => {
                let (z, k) = a[0].k().normals_like(&Vector::from(a[1].v().to_vec()));
                vec![V(z.as_slice().to_vec()), K(k)]
            }
            Prim::Bernoulli => {
                let (c, k) = a[0].k().bernoulli(a[1].f());
                vec![B(c), K(k)]
            }
            Prim::Dec(d) => one(I(a[0].i().wrapping_sub(d as i64))),
            Prim::Clamp(cap) => one(I(a[0].i().clamp(-1, cap))),
            Prim::NotPositive => one(B(a[0].i() <= 0)),
            Prim::TripCount(max) => one(I(a[0].i().rem_euclid(max as i64 + 1))),
            Prim::Positive => one(B(a[0].i() > 0)),
        }
    }

    /// The op's kernel: lane-wise, or batched (one call over the gathered active lanes).
    pub fn kernel(self, batched: bool, len: usize) -> Kernel {
        let (ins, outs) = self.sig();
        if batched {
            Kernel::batched(move |inputs: &[&Column], outputs: &mut [Column]| {
                // Every primitive has an output; its rows are the active lanes.
                let rows = outputs.first().map_or(0, |c| c.rows());
                for r in 0..rows {
                    let args: Vec<Val> = inputs
                        .iter()
                        .zip(&ins)
                        .map(|(c, &t)| read_dense(c, t, r))
                        .collect::<Result<_, _>>()?;
                    for (out, v) in outputs.iter_mut().zip(self.eval(&args, len)) {
                        write_dense(out, r, v)?;
                    }
                }
                Ok(())
            })
        } else {
            Kernel::lane_wise(
                move |inputs: &LaneInputs<'_>, outputs: &mut LaneOutputs<'_>| {
                    let readers: Vec<Reader<'_>> = ins
                        .iter()
                        .enumerate()
                        .map(|(i, &t)| Reader::new(inputs, i, t))
                        .collect::<Result<_, _>>()?;
                    let mut writers = writers(outputs, &outs)?;
                    for (k, &lane) in inputs.lanes().iter().enumerate() {
                        inputs.at(k);
                        let args: Vec<Val> = readers.iter().map(|r| r.read(lane)).collect();
                        for (w, v) in writers.iter_mut().zip(self.eval(&args, len)) {
                            w(k, v);
                        }
                    }
                    Ok(())
                },
            )
        }
    }
}

fn wrong(what: &str) -> KernelError {
    KernelError::whole(format!("a column of the wrong dtype for {what}"))
}

/// No primitive takes or makes a whole pair (see [`Ty::Pair`]).
fn not_a_leaf() -> KernelError {
    KernelError::whole("a pair is two leaves, not one")
}

/// Row `r` of a dense column of type `t`.
fn read_dense(c: &Column, t: Ty, r: usize) -> Result<Val, KernelError> {
    Ok(match t {
        Ty::Int => Val::I(c.as_array::<i64>().ok_or_else(|| wrong("i64"))?[[r, 0]]),
        Ty::Float => Val::F(c.as_array::<f64>().ok_or_else(|| wrong("f64"))?[[r, 0]]),
        Ty::Bool => Val::B(c.as_array::<bool>().ok_or_else(|| wrong("bool"))?[[r, 0]]),
        Ty::Key => Val::K(c.as_array::<Key>().ok_or_else(|| wrong("key"))?[[r, 0]]),
        Ty::Pair => return Err(not_a_leaf()),
        Ty::Vector => Val::V(
            c.as_array::<f64>()
                .ok_or_else(|| wrong("vector"))?
                .row(r)
                .to_vec(),
        ),
    })
}

/// Writes `v` as row `r` of a dense column.
fn write_dense(c: &mut Column, r: usize, v: Val) -> Result<(), KernelError> {
    let width = c.width();
    match v {
        Val::I(x) => c.as_slice_mut::<i64>().ok_or_else(|| wrong("i64"))?[r] = x,
        Val::F(x) => c.as_slice_mut::<f64>().ok_or_else(|| wrong("f64"))?[r] = x,
        Val::B(x) => c.as_slice_mut::<bool>().ok_or_else(|| wrong("bool"))?[r] = x,
        Val::K(x) => c.as_slice_mut::<Key>().ok_or_else(|| wrong("key"))?[r] = x,
        Val::V(x) => c.as_slice_mut::<f64>().ok_or_else(|| wrong("vector"))?
            [r * width..(r + 1) * width]
            .iter_mut()
            .zip(x)
            .for_each(|(o, x)| *o = x),
    }
    Ok(())
}

/// One input leaf of a lane-wise kernel, typed.
enum Reader<'a> {
    Int(InputRows<'a, i64>),
    Float(InputRows<'a, f64>),
    Bool(InputRows<'a, bool>),
    Vector(InputRows<'a, f64>),
    Key(InputRows<'a, Key>),
}

impl<'a> Reader<'a> {
    fn new(inputs: &LaneInputs<'a>, i: usize, t: Ty) -> Result<Self, KernelError> {
        Ok(match t {
            Ty::Int => Reader::Int(inputs.rows(i)?),
            Ty::Float => Reader::Float(inputs.rows(i)?),
            Ty::Bool => Reader::Bool(inputs.rows(i)?),
            Ty::Vector => Reader::Vector(inputs.rows(i)?),
            Ty::Key => Reader::Key(inputs.rows(i)?),
            Ty::Pair => return Err(not_a_leaf()),
        })
    }

    fn read(&self, lane: usize) -> Val {
        match self {
            Reader::Int(r) => Val::I(r.scalar(lane)),
            Reader::Float(r) => Val::F(r.scalar(lane)),
            Reader::Bool(r) => Val::B(r.scalar(lane)),
            Reader::Vector(r) => Val::V(r.row(lane).to_vec()),
            Reader::Key(r) => Val::K(r.scalar(lane)),
        }
    }
}

/// Stores one lane's value of one output leaf: `(position among the active lanes, value)`.
type Writer<'a> = Box<dyn FnMut(usize, Val) + 'a>;

/// A writer per output leaf of a lane-wise kernel call.
fn writers<'a>(
    outputs: &'a mut LaneOutputs<'_>,
    types: &[Ty],
) -> Result<Vec<Writer<'a>>, KernelError> {
    let leaves: Vec<_> = match types.len() {
        1 => outputs.leaves::<1>()?.into(),
        2 => outputs.leaves::<2>()?.into(),
        3 => outputs.leaves::<3>()?.into(),
        n => return Err(KernelError::whole(format!("{n} output leaves"))),
    };
    leaves
        .into_iter()
        .zip(types)
        .map(|(leaf, t)| {
            Ok(match t {
                Ty::Int => {
                    let s = leaf.slice::<i64>()?;
                    Box::new(move |k, v: Val| s[k] = v.i()) as Writer<'a>
                }
                Ty::Float => {
                    let s = leaf.slice::<f64>()?;
                    Box::new(move |k, v: Val| s[k] = v.f())
                }
                Ty::Bool => {
                    let s = leaf.slice::<bool>()?;
                    Box::new(move |k, v: Val| s[k] = v.b())
                }
                Ty::Key => {
                    let s = leaf.slice::<Key>()?;
                    Box::new(move |k, v: Val| s[k] = v.k())
                }
                Ty::Vector => {
                    let mut rows = leaf.vectors()?;
                    Box::new(move |k, v: Val| rows.row_mut(k).copy_from_slice(v.v()))
                }
                Ty::Pair => return Err(not_a_leaf()),
            })
        })
        .collect()
}

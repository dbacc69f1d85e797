//! The description of a random program (a small AST) and the proptest strategies that draw one
//! with a batch of inputs. Operands and targets are raw indices, resolved against the variables
//! in scope when the program is built, so every description builds a valid program and
//! proptest can shrink any part of it freely.

use super::prims::{Prim, Ty, CATALOGUE};
use autobatch_runtime::Key;
use proptest::prelude::*;

/// A program: `funcs[0]` is the entry (`main`, never called); the others are called with a
/// recursion counter that every call decreases, so every program terminates.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The functions; the first is the entry.
    pub funcs: Vec<FuncSpec>,
    /// Which variables functions share.
    pub sharing: Sharing,
    /// "Inline on" inlines every non-recursive function, not only small ones.
    pub inline_all: bool,
}

/// Which variables of different functions are one: a return (or parameter) in the same
/// position and of the same type is one variable in every function (as `n` and `ans` are in
/// the reference's `is_even` / `is_odd`), or each function has its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// Every function has its own variables.
    Nothing,
    /// Return variables are shared.
    Returns,
    /// Return variables, parameters and the recursion counter are shared.
    Everything,
}

/// One function.
#[derive(Clone, Debug)]
pub struct FuncSpec {
    /// Parameter types (after the recursion counter).
    pub params: Vec<Ty>,
    /// Return types (at least one).
    pub returns: Vec<Ty>,
    /// The base case's results (operands), when the counter is not positive.
    pub base: Vec<u8>,
    /// The body, when the counter is positive (always, for the entry).
    pub body: Vec<Stmt>,
    /// The results if the body falls off its end (operands).
    pub tail: Vec<u8>,
}

/// A statement.
#[derive(Clone, Debug)]
pub enum Stmt {
    /// New variables for the primitive's outputs.
    Let {
        /// The operation.
        prim: Prim,
        /// Its operands.
        ins: Vec<u8>,
        /// Run it as a batched kernel.
        batched: bool,
    },
    /// The primitive's outputs overwrite variables in scope.
    Set {
        /// The operation.
        prim: Prim,
        /// Its operands.
        ins: Vec<u8>,
        /// The variables written, one per output.
        outs: Vec<u8>,
        /// Run it as a batched kernel.
        batched: bool,
    },
    /// A parallel copy (one assignment op): `(target, source, type)` triples.
    Copy(Vec<(u8, u8, Ty)>),
    /// A call; the callee's counter is this function's minus `dec`.
    Call {
        /// The callee (index into the functions other than the entry).
        func: u8,
        /// Operands, one per callee parameter.
        args: Vec<u8>,
        /// Per result: a variable in scope to overwrite, or `None` for a new one.
        outs: Vec<Option<u8>>,
        /// How much the counter decreases (1 or 2).
        dec: u8,
    },
    /// `if cond { then } else { else_ }`.
    If(u8, Vec<Stmt>, Vec<Stmt>),
    /// `for _ in 0..(count mod (max + 1)) { body }`, as a `while` loop with a back edge.
    Loop {
        /// The operand that fixes the trip count.
        count: u8,
        /// The most iterations.
        max: u8,
        /// The body.
        body: Vec<Stmt>,
    },
    /// An early return (operands for the results).
    Return(Vec<u8>),
    /// `return callee(args)` where the callee returns what this function returns (otherwise an
    /// ordinary early return of the arguments).
    TailCall {
        /// The callee.
        func: u8,
        /// Operands.
        args: Vec<u8>,
        /// How much the counter decreases.
        dec: u8,
    },
}

/// A batch of inputs for a program: `counter` for the entry's recursion counter, then one
/// column of values per entry parameter.
#[derive(Clone, Debug)]
pub struct Batch {
    /// Vector length of the run.
    pub len: usize,
    /// The counter per lane.
    pub counter: Vec<i64>,
    /// Per entry parameter, one value per lane.
    pub params: Vec<Vec<Input>>,
}

/// One lane's value of one input.
#[derive(Clone, Debug)]
pub enum Input {
    /// `i64`.
    I(i64),
    /// `f64`.
    F(f64),
    /// `bool`.
    B(bool),
    /// A vector.
    V(Vec<f64>),
    /// A key, by its seed.
    K(u64),
}

fn ty() -> impl Strategy<Value = Ty> {
    prop::sample::select(Ty::ALL.to_vec())
}

fn operands(n: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), n..=n)
}

fn prim() -> impl Strategy<Value = Prim> {
    prop_oneof![
        8 => prop::sample::select(CATALOGUE.to_vec()),
        1 => prop_oneof![Just(0i64), Just(1), Just(-1), Just(i64::MAX), Just(i64::MIN), -9i64..9]
            .prop_map(Prim::ConstI),
        1 => float().prop_map(|x| Prim::ConstF(x.to_bits())),
        1 => any::<bool>().prop_map(Prim::ConstB),
        1 => any::<u64>().prop_map(Prim::ConstKey),
    ]
}

fn leaf() -> impl Strategy<Value = Stmt> {
    prop_oneof![
        6 => (prim(), operands(3), prop::bool::weighted(0.2))
            .prop_map(|(prim, ins, batched)| Stmt::Let { prim, ins, batched }),
        4 => (prim(), operands(3), operands(3), prop::bool::weighted(0.2))
            .prop_map(|(prim, ins, outs, batched)| Stmt::Set { prim, ins, outs, batched }),
        1 => prop::collection::vec((any::<u8>(), any::<u8>(), ty()), 1..4).prop_map(Stmt::Copy),
        3 => (any::<u8>(), operands(4), prop::collection::vec(prop::option::of(any::<u8>()), 3), 1u8..=2)
            .prop_map(|(func, args, outs, dec)| Stmt::Call { func, args, outs, dec }),
        1 => operands(3).prop_map(Stmt::Return),
        1 => (any::<u8>(), operands(4), 1u8..=2)
            .prop_map(|(func, args, dec)| Stmt::TailCall { func, args, dec }),
    ]
}

/// Statements nested at most `depth` deep.
fn stmts(depth: u32) -> BoxedStrategy<Vec<Stmt>> {
    let stmt = if depth == 0 {
        leaf().boxed()
    } else {
        let inner = stmts(depth - 1);
        prop_oneof![
            6 => leaf(),
            1 => (any::<u8>(), inner.clone(), inner.clone()).prop_map(|(c, t, e)| Stmt::If(c, t, e)),
            1 => (any::<u8>(), 1u8..=3, inner)
                .prop_map(|(count, max, body)| Stmt::Loop { count, max, body }),
        ]
        .boxed()
    };
    prop::collection::vec(stmt, 0..6).boxed()
}

fn func() -> impl Strategy<Value = FuncSpec> {
    (
        prop::collection::vec(ty(), 0..4),
        prop::collection::vec(ty(), 1..3),
        operands(2),
        stmts(2),
        operands(2),
    )
        .prop_map(|(params, returns, base, body, tail)| FuncSpec {
            params,
            returns,
            base,
            body,
            tail,
        })
}

/// A random program whose functions share the variables `sharing` allows.
pub fn spec(sharing: Vec<Sharing>) -> impl Strategy<Value = Spec> {
    (
        prop::collection::vec(func(), 1..5),
        prop::sample::select(sharing),
        any::<bool>(),
    )
        .prop_map(|(funcs, sharing, inline_all)| Spec {
            funcs,
            sharing,
            inline_all,
        })
}

/// Floats with the awkward ones often: NaN, infinities, signed zeros, subnormals, huge.
fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => -10.0f64..10.0,
        1 => prop::sample::select(vec![
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            0.0,
            f64::MIN_POSITIVE / 4.0,
            f64::MAX,
            -1e300,
        ]),
        1 => any::<f64>(),
    ]
}

fn input(t: Ty, len: usize) -> BoxedStrategy<Input> {
    match t {
        Ty::Int => prop_oneof![
            4 => -5i64..40,
            1 => prop::sample::select(vec![i64::MIN, i64::MAX, -1, 0]),
            1 => any::<i64>(),
        ]
        .prop_map(Input::I)
        .boxed(),
        Ty::Float => float().prop_map(Input::F).boxed(),
        Ty::Bool => any::<bool>().prop_map(Input::B).boxed(),
        Ty::Vector => prop::collection::vec(float(), len..=len)
            .prop_map(Input::V)
            .boxed(),
        Ty::Key => any::<u64>().prop_map(Input::K).boxed(),
    }
}

/// A batch of 1 to 64 lanes for a program whose entry takes `params`.
pub fn batch(params: Vec<Ty>) -> impl Strategy<Value = Batch> {
    (1usize..=64, 0usize..4).prop_flat_map(move |(lanes, len)| {
        let counter = prop::collection::vec(
            prop_oneof![4 => -2i64..12, 1 => 12i64..80, 1 => any::<i64>()],
            lanes..=lanes,
        );
        let params: Vec<_> = params
            .iter()
            .map(|&t| prop::collection::vec(input(t, len), lanes..=lanes))
            .collect();
        (counter, params).prop_map(move |(counter, params)| Batch {
            len,
            counter,
            params,
        })
    })
}

/// A program (sharing what `sharing` allows) and a batch of inputs for it.
pub fn case(sharing: Vec<Sharing>) -> impl Strategy<Value = (Spec, Batch)> {
    spec(sharing).prop_flat_map(|s| {
        let params = s.funcs[0].params.clone();
        (Just(s), batch(params))
    })
}

impl Input {
    /// The key of a seed input.
    pub fn key(seed: u64) -> Key {
        Key::new(seed).fold_in(1)
    }
}

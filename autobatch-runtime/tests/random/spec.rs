//! The description of a random program (a small AST) and the proptest strategies that draw one
//! with a batch of inputs. Operands and targets are raw indices, resolved against the variables
//! in scope when the program is built, so every description builds a valid program and
//! proptest can shrink any part of it freely.

use super::prims::{Prim, Ty, CATALOGUE};
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
    /// Each function makes at most one call, outside loops (the first its body has; later ones
    /// are left out): recursion is a chain, so it can go deep within the call budget.
    pub linear: bool,
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
    /// A new pair from an `i64` and an `f64` operand (an assignment).
    Pack(u8, u8),
    /// A pair's two leaves into variables (new, or in scope to overwrite): an assignment.
    Unpack(u8, Vec<Option<u8>>),
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

/// The most parameters a function has.
pub const MAX_PARAMS: usize = 3;

/// The most elements a vector has.
pub const MAX_LEN: usize = 3;

/// A batch of inputs, drawn independently of the program (so each shrinks on its own): per
/// lane the recursion counter and, per parameter position, a value of every type; the entry's
/// parameter types pick which.
#[derive(Clone, Debug)]
pub struct Batch {
    /// Vector length of the run.
    pub len: usize,
    /// The lanes.
    pub lanes: Vec<Lane>,
}

/// One lane's inputs.
#[derive(Clone, Debug)]
pub struct Lane {
    /// The entry's recursion counter.
    pub counter: i64,
    /// Per parameter position, a value of each type.
    pub slots: Vec<Slot>,
}

/// A value of each type for one parameter of one lane.
#[derive(Clone, Debug)]
pub struct Slot {
    /// If the parameter is an `i64`.
    pub int: i64,
    /// If it is an `f64`.
    pub float: f64,
    /// If it is a `bool`.
    pub bool: bool,
    /// If it is a vector: its first `len` elements.
    pub vector: Vec<f64>,
    /// If it is a key: its seed.
    pub key: u64,
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
        1 => (any::<u8>(), any::<u8>()).prop_map(|(i, x)| Stmt::Pack(i, x)),
        1 => (any::<u8>(), prop::collection::vec(prop::option::of(any::<u8>()), 2))
            .prop_map(|(t, outs)| Stmt::Unpack(t, outs)),
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
        prop::collection::vec(ty(), 0..=MAX_PARAMS),
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
        prop::bool::weighted(0.4),
    )
        .prop_map(|(funcs, sharing, inline_all, linear)| Spec {
            funcs,
            sharing,
            inline_all,
            linear,
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

fn slot() -> impl Strategy<Value = Slot> {
    (
        prop_oneof![
            4 => -5i64..40,
            1 => prop::sample::select(vec![i64::MIN, i64::MAX, -1, 0]),
            1 => any::<i64>(),
        ],
        float(),
        any::<bool>(),
        prop::collection::vec(float(), MAX_LEN..=MAX_LEN),
        any::<u64>(),
    )
        .prop_map(|(int, float, bool, vector, key)| Slot {
            int,
            float,
            bool,
            vector,
            key,
        })
}

fn lane() -> impl Strategy<Value = Lane> {
    (
        prop_oneof![4 => -2i64..12, 2 => 12i64..80, 1 => any::<i64>()],
        prop::collection::vec(slot(), MAX_PARAMS..=MAX_PARAMS),
    )
        .prop_map(|(counter, slots)| Lane { counter, slots })
}

/// A batch of 1 to 64 lanes, vectors of length 0 to [`MAX_LEN`].
pub fn batch() -> impl Strategy<Value = Batch> {
    (0..=MAX_LEN, prop::collection::vec(lane(), 1..=64))
        .prop_map(|(len, lanes)| Batch { len, lanes })
}

/// A program (sharing what `sharing` allows) and a batch of inputs for it.
pub fn case(sharing: Vec<Sharing>) -> impl Strategy<Value = (Spec, Batch)> {
    (spec(sharing), batch())
}

/// Like [`case`], but the program recurses as deep as each lane's counter lets it: every
/// function first calls the next (the entry the first callee, the last callee the first; a
/// program of one function gains a callee, a copy of it), and each function makes that call
/// only ([`Spec::linear`]). So the lanes of a batch, whose counters differ, reach different
/// depths, where most programs of [`case`] recurse little or not at all: a stack limit just
/// below the deepest lane's depth then fails some lanes and not others.
pub fn recursive_case(sharing: Vec<Sharing>) -> impl Strategy<Value = (Spec, Batch)> {
    (case(sharing), operands(4)).prop_map(|((mut spec, batch), args)| {
        if spec.funcs.len() == 1 {
            spec.funcs.push(spec.funcs[0].clone());
        }
        let callees = spec.funcs.len() - 1;
        for (i, f) in spec.funcs.iter_mut().enumerate() {
            // The callee's index among the functions after the entry.
            let next = (i % callees) as u8;
            let call = Stmt::Call {
                func: next,
                args: args.clone(),
                outs: vec![None; 3],
                dec: 1,
            };
            f.body.insert(0, call);
        }
        spec.linear = true;
        (spec, batch)
    })
}

//! Value types: a dtype, a per-lane event shape, and tuples of them.

use std::fmt;

/// The element type of a tensor leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// `bool`
    Bool,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// `f32`
    F32,
    /// `f64`
    F64,
    /// A per-lane counter-based random-number key (the runtime's `Key`).
    Key,
}

impl DType {
    /// The Rust spelling of this dtype (`"i64"`, ...), as printed.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::Key => "key",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The per-lane event shape of a tensor leaf (the batch dimension is not part of it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Shape {
    /// One element per lane.
    Scalar,
    /// A vector per lane whose length is fixed when the program starts running.
    Vector,
}

/// The type of one stored leaf: a dtype and an event shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorType {
    /// Element type.
    pub dtype: DType,
    /// Per-lane event shape.
    pub shape: Shape,
}

impl TensorType {
    /// A scalar leaf of `dtype`.
    pub const fn scalar(dtype: DType) -> Self {
        Self {
            dtype,
            shape: Shape::Scalar,
        }
    }

    /// A vector leaf of `dtype`.
    pub const fn vector(dtype: DType) -> Self {
        Self {
            dtype,
            shape: Shape::Vector,
        }
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.shape {
            Shape::Scalar => write!(f, "{}", self.dtype),
            Shape::Vector => write!(f, "{}[n]", self.dtype),
        }
    }
}

/// The type of a variable: one tensor leaf, or a tuple of types (one variable may hold a tuple).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Type {
    /// A single leaf.
    Tensor(TensorType),
    /// A tuple; its leaves are stored separately, in order.
    Tuple(Vec<Type>),
}

impl Type {
    /// `bool` scalar.
    pub const BOOL: Type = Type::Tensor(TensorType::scalar(DType::Bool));
    /// `i32` scalar.
    pub const I32: Type = Type::Tensor(TensorType::scalar(DType::I32));
    /// `i64` scalar.
    pub const I64: Type = Type::Tensor(TensorType::scalar(DType::I64));
    /// `f32` scalar.
    pub const F32: Type = Type::Tensor(TensorType::scalar(DType::F32));
    /// `f64` scalar.
    pub const F64: Type = Type::Tensor(TensorType::scalar(DType::F64));
    /// Random-number key scalar.
    pub const KEY: Type = Type::Tensor(TensorType::scalar(DType::Key));

    /// A scalar of `dtype`.
    pub const fn scalar(dtype: DType) -> Type {
        Type::Tensor(TensorType::scalar(dtype))
    }

    /// A per-lane vector of `dtype`.
    pub const fn vector(dtype: DType) -> Type {
        Type::Tensor(TensorType::vector(dtype))
    }

    /// The leaves of this type in storage order (depth first).
    pub fn leaves(&self) -> Vec<TensorType> {
        let mut out = Vec::new();
        self.push_leaves(&mut out);
        out
    }

    /// Appends the leaves of this type to `out` in storage order.
    pub fn push_leaves(&self, out: &mut Vec<TensorType>) {
        match self {
            Type::Tensor(t) => out.push(*t),
            Type::Tuple(items) => items.iter().for_each(|t| t.push_leaves(out)),
        }
    }

    /// True for a scalar `bool` (the only type a branch may test).
    pub fn is_scalar_bool(&self) -> bool {
        *self == Type::BOOL
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Tensor(t) => write!(f, "{t}"),
            Type::Tuple(items) => {
                f.write_str("(")?;
                for (i, t) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                if items.len() == 1 {
                    f.write_str(",")?;
                }
                f.write_str(")")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_print_and_flatten() {
        let t = Type::Tuple(vec![
            Type::I64,
            Type::Tuple(vec![Type::BOOL, Type::vector(DType::F64)]),
        ]);
        assert_eq!(t.to_string(), "(i64, (bool, f64[n]))");
        assert_eq!(
            t.leaves(),
            vec![
                TensorType::scalar(DType::I64),
                TensorType::scalar(DType::Bool),
                TensorType::vector(DType::F64)
            ]
        );
        assert_eq!(Type::Tuple(vec![Type::F32]).to_string(), "(f32,)");
        assert!(Type::BOOL.is_scalar_bool());
        assert!(!Type::vector(DType::Bool).is_scalar_bool());
    }
}

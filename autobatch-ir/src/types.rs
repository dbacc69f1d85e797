//! Value types: a dtype, a per-lane event shape, and tuples of them.

use std::fmt;

/// The element type of a tensor leaf.
///
/// Every Rust integer type up to 64 bits is its own dtype; `isize` and `usize` are too, with
/// the width of the host that runs the program (the kernels are compiled for it).
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
    /// `i8`
    I8,
    /// `i16`
    I16,
    /// `isize`
    Isize,
    /// `u8`
    U8,
    /// `u16`
    U16,
    /// `u32`
    U32,
    /// `u64`
    U64,
    /// `usize`
    Usize,
}

impl DType {
    /// Every integer dtype, signed ones first, each family from narrow to wide.
    pub const INTEGERS: [DType; 10] = [
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::Isize,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::Usize,
    ];

    /// The Rust spelling of this dtype (`"i64"`, ...), as printed.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::Isize => "isize",
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::Usize => "usize",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::Key => "key",
        }
    }

    /// The dtype a Rust scalar type name stands for (`"u8"` -> `U8`); `None` for `Key` and
    /// anything that is not a number or `bool`.
    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "bool" => DType::Bool,
            "f32" => DType::F32,
            "f64" => DType::F64,
            _ => return DType::INTEGERS.into_iter().find(|d| d.name() == name),
        })
    }

    /// True for the integer dtypes.
    pub fn is_int(self) -> bool {
        DType::INTEGERS.contains(&self)
    }

    /// True for the signed integer dtypes.
    pub fn is_signed_int(self) -> bool {
        matches!(
            self,
            DType::I8 | DType::I16 | DType::I32 | DType::I64 | DType::Isize
        )
    }

    /// True for `f32` and `f64`.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    /// The unsigned integer dtype of the same width as a signed one (`i8` -> `u8`; what
    /// `unsigned_abs` and `abs_diff` return); an unsigned dtype is its own.
    pub fn unsigned(self) -> Option<DType> {
        Some(match self {
            DType::I8 | DType::U8 => DType::U8,
            DType::I16 | DType::U16 => DType::U16,
            DType::I32 | DType::U32 => DType::U32,
            DType::I64 | DType::U64 => DType::U64,
            DType::Isize | DType::Usize => DType::Usize,
            _ => return None,
        })
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

    #[test]
    fn integer_dtypes_round_trip_through_their_names() {
        for d in DType::INTEGERS {
            assert_eq!(DType::from_name(d.name()), Some(d));
            assert!(d.is_int() && !d.is_float());
            let u = d.unsigned().unwrap();
            assert!(!u.is_signed_int() && u.is_int());
        }
        assert_eq!(DType::I16.unsigned(), Some(DType::U16));
        assert_eq!(DType::Isize.unsigned(), Some(DType::Usize));
        assert_eq!(DType::from_name("f32"), Some(DType::F32));
        assert_eq!(DType::from_name("i128"), None);
        assert_eq!(DType::from_name("key"), None);
        assert_eq!(Type::scalar(DType::U8).to_string(), "u8");
        assert!(DType::F64.unsigned().is_none() && !DType::Bool.is_int());
    }
}

//! Entity handles: small `u32` newtypes indexing the [`Program`](crate::Program)'s side tables.

use std::fmt;

macro_rules! entity {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);

        impl $name {
            /// The entity with this table index.
            pub fn new(index: usize) -> Self {
                Self(u32::try_from(index).expect("entity index exceeds u32"))
            }

            /// This entity's index in its side table.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

entity!(
    /// A variable: an index into [`Program::vars`](crate::Program::vars).
    Var,
    "v"
);
entity!(
    /// A basic block: an index into [`Program::blocks`](crate::Program::blocks).
    Block,
    "block"
);
entity!(
    /// A function: an index into [`Program::functions`](crate::Program::functions).
    FuncId,
    "fn"
);
entity!(
    /// A user kernel: an index into the kernel table the runtime is given with the program.
    KernelId,
    "k"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_round_trip_and_print() {
        let v = Var::new(7);
        assert_eq!(v.index(), 7);
        assert_eq!(format!("{v} {v:?}"), "v7 v7");
        assert_eq!(Block::new(2).to_string(), "block2");
        assert!(FuncId(1) < FuncId(2));
        assert_eq!(KernelId(3).to_string(), "k3");
    }
}

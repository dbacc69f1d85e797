//! Entity handles (small `u32` newtypes with private fields) and [`EntityVec`], the typed
//! table each kind of handle indexes.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

/// A handle that indexes an [`EntityVec`]: a table position, made only by the table or by
/// [`new`](Var::new).
pub trait EntityRef: Copy + Eq {
    /// The handle of table position `index`.
    fn new(index: usize) -> Self;
    /// This handle's table position.
    fn index(self) -> usize;
}

macro_rules! entity {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(u32);

        impl $name {
            /// The entity with this table index (tables never exceed `u32::MAX` entries).
            #[inline]
            pub const fn new(index: usize) -> Self {
                assert!(index <= u32::MAX as usize, "entity index exceeds u32");
                Self(index as u32)
            }

            /// This entity's index in its side table.
            #[inline]
            pub const fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl EntityRef for $name {
            fn new(index: usize) -> Self {
                $name::new(index)
            }

            fn index(self) -> usize {
                $name::index(self)
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

/// A table of `V` indexed by the handle `K` only (Cranelift's `PrimaryMap`): `vars[v]` for a
/// [`Var`] `v`, never a bare `usize`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct EntityVec<K, V> {
    items: Vec<V>,
    key: PhantomData<fn(K) -> K>,
}

impl<K: EntityRef, V> EntityVec<K, V> {
    /// An empty table.
    pub fn new() -> Self {
        EntityVec {
            items: Vec::new(),
            key: PhantomData,
        }
    }

    /// Appends `value`; returns its handle.
    pub fn push(&mut self, value: V) -> K {
        let k = K::new(self.items.len());
        self.items.push(value);
        k
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when the table has no entries.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The entry of `k`, or `None` when `k` is out of range.
    pub fn get(&self, k: K) -> Option<&V> {
        self.items.get(k.index())
    }

    /// The entry of `k` for writing, or `None` when `k` is out of range.
    pub fn get_mut(&mut self, k: K) -> Option<&mut V> {
        self.items.get_mut(k.index())
    }

    /// True when `k` indexes an entry.
    pub fn contains(&self, k: K) -> bool {
        k.index() < self.items.len()
    }

    /// Every handle, in table order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = K> + ExactSizeIterator {
        (0..self.items.len()).map(K::new)
    }

    /// The entries, in table order.
    pub fn iter(&self) -> std::slice::Iter<'_, V> {
        self.items.iter()
    }

    /// The entries for writing, in table order.
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, V> {
        self.items.iter_mut()
    }

    /// Each handle with its entry, in table order.
    pub fn entries(&self) -> impl DoubleEndedIterator<Item = (K, &V)> + ExactSizeIterator {
        self.items.iter().enumerate().map(|(i, v)| (K::new(i), v))
    }

    /// The first handle whose entry satisfies `pred`.
    pub fn position(&self, pred: impl FnMut(&V) -> bool) -> Option<K> {
        self.items.iter().position(pred).map(K::new)
    }
}

impl<K: EntityRef, V> Default for EntityVec<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V: fmt::Debug> fmt::Debug for EntityVec<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.items.fmt(f)
    }
}

impl<K: EntityRef, V> From<Vec<V>> for EntityVec<K, V> {
    fn from(items: Vec<V>) -> Self {
        EntityVec {
            items,
            key: PhantomData,
        }
    }
}

impl<K: EntityRef, V> FromIterator<V> for EntityVec<K, V> {
    fn from_iter<I: IntoIterator<Item = V>>(iter: I) -> Self {
        Vec::from_iter(iter).into()
    }
}

impl<K: EntityRef, V> Index<K> for EntityVec<K, V> {
    type Output = V;

    fn index(&self, k: K) -> &V {
        &self.items[k.index()]
    }
}

impl<K: EntityRef, V> IndexMut<K> for EntityVec<K, V> {
    fn index_mut(&mut self, k: K) -> &mut V {
        &mut self.items[k.index()]
    }
}

impl<'a, K: EntityRef, V> IntoIterator for &'a EntityVec<K, V> {
    type Item = &'a V;
    type IntoIter = std::slice::Iter<'a, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl<'a, K: EntityRef, V> IntoIterator for &'a mut EntityVec<K, V> {
    type Item = &'a mut V;
    type IntoIter = std::slice::IterMut<'a, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter_mut()
    }
}

impl<K: EntityRef, V> IntoIterator for EntityVec<K, V> {
    type Item = V;
    type IntoIter = std::vec::IntoIter<V>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_round_trip_and_print() {
        let v = Var::new(7);
        assert_eq!(v.index(), 7);
        assert_eq!(format!("{v} {v:?}"), "v7 v7");
        assert_eq!(Block::new(2).to_string(), "block2");
        assert!(FuncId::new(1) < FuncId::new(2));
        assert_eq!(KernelId::new(3).to_string(), "k3");
    }

    #[test]
    fn tables_are_indexed_by_their_handles() {
        let mut t: EntityVec<Block, &str> = EntityVec::new();
        let a = t.push("a");
        let b = t.push("b");
        assert_eq!((t[a], t[b], t.len()), ("a", "b", 2));
        t[b] = "c";
        assert_eq!(t.get(Block::new(5)), None);
        assert_eq!(t.position(|s| *s == "c"), Some(b));
        assert_eq!(t.entries().collect::<Vec<_>>(), [(a, &"a"), (b, &"c")]);
        assert_eq!(t.keys().collect::<Vec<_>>(), [a, b]);
    }
}

//! [`Context`]: the one value every lane of a run shares (a model, a data set, settings),
//! passed once to the run and handed to every kernel call, never expanded into a column.

use super::error::KernelError;
use std::any::{type_name, Any, TypeId};
use std::fmt;

/// The value shared by every lane of a run, by reference: what a `ctx: &T` parameter of an
/// `#[autobatch]` function or a `model: &T` parameter of a `#[primitive]` receives.
///
/// It is `Copy`, `Send` and `Sync` (its value is `Sync`), so a kernel running on any thread
/// reads it without a thread-local. A kernel reads it with [`get`](Self::get), a typed error
/// (never a panic) if the run was given no context or one of another type.
///
/// ```
/// use autobatch_runtime::Context;
///
/// struct Model { scale: f64 }
/// let model = Model { scale: 2.0 };
/// let cx = Context::new(&model);
/// assert_eq!(cx.get::<Model>().unwrap().scale, 2.0);
/// assert!(cx.get::<u32>().is_err());
/// assert!(Context::none().get::<Model>().is_err());
/// ```
#[derive(Clone, Copy, Default)]
pub struct Context<'a> {
    value: Option<(&'a (dyn Any + Sync), &'static str)>,
}

impl<'a> Context<'a> {
    /// No context: for programs none of whose functions or primitives takes one.
    pub fn none() -> Self {
        Context { value: None }
    }

    /// `value` as the context of a run.
    pub fn new<T: Any + Sync>(value: &'a T) -> Self {
        Context {
            value: Some((value, type_name::<T>())),
        }
    }

    /// The context as a `T`, or why it is not one.
    pub fn get<T: Any>(&self) -> Result<&'a T, KernelError> {
        match self.value {
            Some((v, name)) => (v as &dyn Any).downcast_ref::<T>().ok_or_else(|| {
                KernelError::whole(format!(
                    "the context is a `{name}`, but this kernel reads a `{}`",
                    type_name::<T>()
                ))
            }),
            None => Err(KernelError::whole(format!(
                "this kernel reads a context of type `{}`, but the run was given none",
                type_name::<T>()
            ))),
        }
    }

    /// The type of the value, if any: its id and name.
    pub(crate) fn type_of(&self) -> Option<(TypeId, &'static str)> {
        self.value
            .map(|(v, name)| (Any::type_id(v as &dyn Any), name))
    }
}

impl fmt::Debug for Context<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Some((_, name)) => write!(f, "Context({name})"),
            None => f.write_str("Context(none)"),
        }
    }
}

/// The context type a program's functions and primitives read: what a run must be given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextType {
    /// Its id.
    pub(crate) id: TypeId,
    /// Its name, for errors.
    pub name: &'static str,
}

impl ContextType {
    /// The context type `T`.
    pub fn of<T: Any>() -> Self {
        ContextType {
            id: TypeId::of::<T>(),
            name: type_name::<T>(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_is_read_as_its_own_type_only() {
        let settings = (3i64, 0.5f64);
        let cx = Context::new(&settings);
        assert_eq!(cx.get::<(i64, f64)>().unwrap(), &(3, 0.5));
        let wrong = cx.get::<f64>().unwrap_err();
        assert!(wrong.message.contains("(i64, f64)"), "{wrong}");
        assert_eq!(
            cx.type_of().map(|(id, _)| id),
            Some(ContextType::of::<(i64, f64)>().id)
        );
        assert!(Context::none().type_of().is_none());
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Context<'_>>();
    }
}

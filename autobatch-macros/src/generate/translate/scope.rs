//! Names and scopes: variables, blocks and their unique names, bindings, the return
//! destination, and the translation's scope as type inference sees it.

use super::LocalVar;
use super::{Dest, Step, Translator};
use crate::generate::infer::{unknown_variable, Scope};
use crate::parse::ast::{Pat, Ty};
use proc_macro2::Ident;

/// The translation's names in scope, as type inference sees them.
pub(super) struct ScopeView<'l, 'a>(pub(super) &'l Translator<'a>);

impl Scope for ScopeView<'_, '_> {
    fn lookup(&self, name: &str) -> Option<Ty> {
        self.0.lookup(name).map(|v| self.0.out.vars[v].ty.clone())
    }

    fn is_poisoned(&self, name: &str) -> bool {
        self.0.poisoned.iter().any(|p| p == name)
    }

    fn callee_return(&self, path: &syn::Path) -> Option<Ty> {
        self.0.func.callee_return(path)
    }
}

impl Translator<'_> {
    pub(super) fn lookup(&self, name: &str) -> Option<usize> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.iter().rev().find(|(n, _)| n == name).map(|(_, v)| *v))
    }

    pub(super) fn bind(&mut self, name: String, var: usize) {
        self.scopes.last_mut().expect("a scope").push((name, var));
    }

    /// A fresh name: `base` the first time, then `base.1`, `base.2`, .., skipping names
    /// already handed out (another base's, such as the return variable `ret.1`).
    pub(super) fn unique(&mut self, base: &str) -> String {
        loop {
            let n = self.used_names.entry(base.to_string()).or_insert(0);
            *n += 1;
            let name = if *n == 1 {
                base.to_string()
            } else {
                format!("{base}.{}", *n - 1)
            };
            if self.taken.insert(name.clone()) {
                return name;
            }
        }
    }

    /// Where the function's result goes: its return variable, one per element for a tuple,
    /// none for `()`.
    pub(super) fn return_dest(&self) -> Option<Dest> {
        match &self.func.ret {
            Ty::Tuple(items) if items.is_empty() => None,
            Ty::Tuple(_) => Some(Dest::Elems(self.out.returns.clone())),
            _ => self.out.returns.first().map(|&r| Dest::Var(r)),
        }
    }

    /// The type of the value `dest` holds.
    pub(super) fn dest_ty(&self, dest: &Dest) -> Ty {
        match dest {
            Dest::Var(v) => self.out.vars[*v].ty.clone(),
            Dest::Elems(vs) => Ty::Tuple(vs.iter().map(|&v| self.out.vars[v].ty.clone()).collect()),
        }
    }

    pub(super) fn new_var(&mut self, base: &str, ty: Ty) -> usize {
        // A struct's field variable (`t__depth`) is printed as the field (`t.depth`).
        let name = self.unique(&crate::generate::flatten::display_name(base));
        self.out.vars.push(LocalVar { name, ty });
        self.out.vars.len() - 1
    }

    pub(super) fn new_block(&mut self, base: &str) -> usize {
        let name = self.unique(&format!("@{base}"));
        self.out
            .blocks
            .push(name.trim_start_matches('@').to_string());
        self.out.blocks.len() - 1
    }

    /// Reports an unknown variable unless its binding already failed.
    pub(super) fn unknown(&mut self, id: &Ident) {
        if !self.poisoned.iter().any(|p| *id == p) {
            self.errors.at(id.span(), unknown_variable(id));
        }
    }

    /// Marks every name a pattern binds as poisoned (its initialiser failed).
    pub(super) fn poison(&mut self, pat: &Pat) {
        match pat {
            Pat::Ident(id) => self.poisoned.push(id.to_string()),
            Pat::Tuple(ps) => ps.iter().for_each(|p| self.poison(p)),
            Pat::Wild => {}
        }
    }

    pub(super) fn goto(&mut self, target: usize) {
        if let Some(cur) = self.current.take() {
            self.out.steps.push(Step::Goto(cur, target));
        }
    }
}

//! Items other than functions, and what they tell each other: `#[autobatch] struct`s (named
//! fields of the language's types, everything else rejected with what to write instead), and
//! the hidden `__learnt("path" = fn(..) -> ..)` / `__learnt("path" = struct { .. })`
//! arguments a callee's or a struct's description adds to a caller's attribute
//! (`generate/describe.rs` makes them).

use super::ast::{Signature, StructDef, Ty};
use super::{ty, Errors};
use syn::parse::ParseStream;

/// What a description taught: a callee's signature or a struct's layout.
pub enum Learnt {
    /// `"path" = fn(T, ..) -> R`.
    Function(String, Signature),
    /// `"path" = struct { field: T, .. }`.
    Struct(String, Vec<(String, Ty)>),
}

/// Parses the inside of one `__learnt(..)` argument: `"path" = fn(T, ..) -> R` or
/// `"path" = struct { field: T, .. }`.
pub fn learnt(input: ParseStream) -> syn::Result<Learnt> {
    let content;
    syn::parenthesized!(content in input);
    let key: syn::LitStr = content.parse()?;
    content.parse::<syn::Token![=]>()?;
    if content.peek(syn::Token![struct]) {
        content.parse::<syn::Token![struct]>()?;
        let fields: syn::FieldsNamed = content.parse()?;
        let mut errors = Errors::default();
        let fields = fields
            .named
            .iter()
            .map(|f| {
                let name = f.ident.as_ref().map(|i| i.to_string()).unwrap_or_default();
                (name, ty(&f.ty, &mut errors))
            })
            .collect();
        errors.finish()?;
        return Ok(Learnt::Struct(key.value(), fields));
    }
    let f: syn::TypeBareFn = content.parse()?;
    let mut errors = Errors::default();
    let params = f.inputs.iter().map(|a| ty(&a.ty, &mut errors)).collect();
    let ret = match &f.output {
        syn::ReturnType::Default => Ty::unit(),
        syn::ReturnType::Type(_, t) => ty(t, &mut errors),
    };
    errors.finish()?;
    Ok(Learnt::Function(key.value(), Signature { params, ret }))
}

/// Parses an `#[autobatch] struct`.
pub fn struct_def(item: &syn::ItemStruct, errors: &mut Errors) -> StructDef {
    if !item.generics.params.is_empty() || item.generics.where_clause.is_some() {
        errors.at(
            &item.generics,
            "generic structs cannot be #[autobatch]; write one struct per concrete type",
        );
        // Its fields' types are its parameters: one error for the cause, none per field.
        return StructDef {
            name: item.ident.clone(),
            fields: Vec::new(),
        };
    }
    let mut fields = Vec::new();
    match &item.fields {
        syn::Fields::Named(named) => {
            for f in &named.named {
                let name = f.ident.clone().expect("a named field has a name");
                fields.push((name, ty(&f.ty, errors)));
            }
            if fields.is_empty() {
                errors.at(&item.ident, "an #[autobatch] struct needs at least one field: a struct without fields carries nothing per lane");
            }
        }
        syn::Fields::Unnamed(_) | syn::Fields::Unit => errors.at(
            &item.ident,
            format!(
                "tuple and unit structs cannot be #[autobatch]; name the fields (`struct {} {{ x: f64 }}`) or use a tuple",
                item.ident
            ),
        ),
    }
    StructDef {
        name: item.ident.clone(),
        fields,
    }
}

//! `#[autobatch] struct`: the struct as written, documented, and its struct of arrays (the
//! companion `<Name>Batch`, one array per leaf field, one row per lane; a nested struct's
//! field is its own companion), with the hidden column conversions `batch` entry points use.

use super::names::quote;
use super::runtime::{struct_path, Runtime};
use crate::parse::ast::{StructDef, Ty};
use proc_macro2::TokenStream;
use quote::format_ident;

/// An expression for one lane's value of a field of type `t` at `path` of the companion, or
/// `None` (through `?`) past its rows.
fn lane_value(rt: &Runtime, t: &Ty, path: TokenStream) -> TokenStream {
    let rtp = rt.path();
    match t {
        Ty::Tuple(items) => {
            let parts = items.iter().enumerate().map(|(i, item)| {
                let idx = syn::Index::from(i);
                lane_value(rt, item, quote!(#path.#idx))
            });
            quote!((#(#parts,)*))
        }
        Ty::Struct { path: p, .. } => {
            let p = struct_path(p);
            quote!(<#p as #rtp::Batched>::lane(&__s #path, __lane)?)
        }
        Ty::Vector => quote!({
            if __lane >= __s #path.nrows() {
                return ::std::option::Option::None;
            }
            #rtp::vector_row(&__s #path, __lane)
        }),
        _ => quote!(*__s #path.get(__lane)?),
    }
}

/// The arrays of a field of type `t` reached by `path` from each lane (`lanes: &[&Name]`),
/// named `label` in errors.
fn from_refs(rt: &Runtime, t: &Ty, path: TokenStream, label: String) -> TokenStream {
    let rtp = rt.path();
    match t {
        Ty::Tuple(items) => {
            let parts = items.iter().enumerate().map(|(i, item)| {
                let idx = syn::Index::from(i);
                from_refs(rt, item, quote!(#path.#idx), format!("{label}.{i}"))
            });
            quote!((#(#parts,)*))
        }
        Ty::Struct { path: p, .. } => {
            let p = struct_path(p);
            quote!(<#p as #rtp::Batched>::from_refs(&lanes.iter().map(|__x| &__x #path).collect::<::std::vec::Vec<_>>())?)
        }
        Ty::Vector => {
            quote!(#rtp::vector_rows(#label, lanes.len(), lanes.iter().map(|__x| &__x #path))?)
        }
        _ => quote!(#rtp::ndarray::Array1::from_iter(lanes.iter().map(|__x| __x #path))),
    }
}

/// How many columns a field of type `t` is (an expression: a nested companion knows its own).
fn leaf_count(rt: &Runtime, t: &Ty) -> TokenStream {
    let rtp = rt.path();
    match t {
        Ty::Tuple(items) => {
            let parts = items.iter().map(|i| leaf_count(rt, i));
            quote!((0 #(+ #parts)*))
        }
        Ty::Struct { path, .. } => {
            let p = struct_path(path);
            quote!(<#p as #rtp::Batched>::LEAVES)
        }
        _ => quote!(1),
    }
}

/// Statements pushing the columns of the field at `path` (of `__s`) onto `__out`.
fn push_columns(rt: &Runtime, t: &Ty, path: TokenStream) -> TokenStream {
    let rtp = rt.path();
    match t {
        Ty::Tuple(items) => {
            let parts = items.iter().enumerate().map(|(i, item)| {
                let idx = syn::Index::from(i);
                push_columns(rt, item, quote!(#path.#idx))
            });
            quote!(#(#parts)*)
        }
        Ty::Struct { path: p, .. } => {
            let p = struct_path(p);
            quote!(<#p as #rtp::Batched>::push_columns(&__s #path, __out);)
        }
        Ty::Vector => quote!(__out.push(#rtp::input_vectors(__s #path.view()));),
        _ => quote!(__out.push(#rtp::input(__s #path.view()));),
    }
}

/// An expression reading a field of type `t` from `__cols[__at..]`, advancing `__at`.
fn from_columns(rt: &Runtime, t: &Ty) -> TokenStream {
    let rtp = rt.path();
    match t {
        Ty::Tuple(items) => {
            let parts = items.iter().map(|i| from_columns(rt, i));
            quote!((#(#parts,)*))
        }
        Ty::Struct { path, .. } => {
            let p = struct_path(path);
            quote!({
                let __v = <#p as #rtp::Batched>::from_columns(&__cols[__at..])?;
                __at += <#p as #rtp::Batched>::LEAVES;
                __v
            })
        }
        Ty::Vector => quote!({
            let __v = #rtp::output_vectors::<f64>(&__cols[__at])?;
            __at += 1;
            __v
        }),
        leaf => {
            let el = rt.rust_type(leaf);
            quote!({
                let __v = #rtp::output::<#el>(&__cols[__at])?;
                __at += 1;
                __v
            })
        }
    }
}

/// An expression for the number of rows of a field of type `t` at `path`.
fn rows(rt: &Runtime, t: &Ty, path: TokenStream) -> TokenStream {
    let rtp = rt.path();
    match t {
        Ty::Tuple(items) => match items.first() {
            Some(first) => rows(rt, first, quote!(#path.0)),
            None => quote!(0),
        },
        Ty::Struct { path: p, .. } => {
            let p = struct_path(p);
            quote!(<#p as #rtp::Batched>::rows(&__s #path))
        }
        Ty::Vector => quote!(__s #path.nrows()),
        _ => quote!(__s #path.len()),
    }
}

/// The struct as written (with a doc line naming its companion) and the companion.
pub fn expand(rt: &Runtime, item: &syn::ItemStruct, def: &StructDef) -> TokenStream {
    let rtp = rt.path();
    let name = &def.name;
    let vis = &item.vis;
    let batch = format_ident!("{}Batch", name);
    let doc_struct = format!(
        "In batches, many `{name}`s are one [`{batch}`]: a struct of arrays, one per field, one row per lane (what `batch` entry points take and return)."
    );
    let doc_batch = format!(
        "Many [`{name}`]s as a struct of arrays, generated by `#[autobatch]`: one array per field, one row per lane (`Array1` per scalar field, `Array2` `[lanes, len]` per `Vector` field, a tuple of arrays per tuple field, the struct of arrays of a struct field)."
    );
    let field_names: Vec<_> = def.fields.iter().map(|(n, _)| n).collect();
    let field_types = def.fields.iter().map(|(_, t)| rt.array_type(t));
    let refs = def
        .fields
        .iter()
        .map(|(n, t)| from_refs(rt, t, quote!(.#n), format!("{name}.{n}")));
    let lane_fields = def
        .fields
        .iter()
        .map(|(n, t)| lane_value(rt, t, quote!(.#n)));
    let counts = def.fields.iter().map(|(_, t)| leaf_count(rt, t));
    let pushes = def
        .fields
        .iter()
        .map(|(n, t)| push_columns(rt, t, quote!(.#n)));
    let reads = def.fields.iter().map(|(_, t)| from_columns(rt, t));
    let len = def
        .fields
        .first()
        .map_or_else(|| quote!(0), |(n, t)| rows(rt, t, quote!(.#n)));
    quote! {
        #[doc = ""]
        #[doc = #doc_struct]
        #item

        #[doc = #doc_batch]
        #[derive(Clone, Debug, PartialEq)]
        #vis struct #batch {
            #(
                #[doc = "One row per lane."]
                pub #field_names: #field_types,
            )*
        }

        #[allow(dead_code)]
        impl #batch {
            /// The lanes' values as arrays; an error if two lanes' `Vector` fields differ in
            /// length.
            pub fn from_lanes(lanes: &[#name]) -> ::std::result::Result<#batch, #rtp::RuntimeError> {
                <#name as #rtp::Batched>::from_refs(&lanes.iter().collect::<::std::vec::Vec<_>>())
            }

            /// Lane `lane`'s value, `None` past the last row of any field.
            pub fn lane(&self, lane: usize) -> ::std::option::Option<#name> {
                <#name as #rtp::Batched>::lane(self, lane)
            }

            /// Every lane's value.
            pub fn to_lanes(&self) -> ::std::vec::Vec<#name> {
                (0..self.len()).filter_map(|__lane| self.lane(__lane)).collect()
            }

            /// How many lanes (the rows of the first field).
            pub fn len(&self) -> usize {
                <#name as #rtp::Batched>::rows(self)
            }

            /// True if there are no lanes.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
        }

        #[allow(unused_assignments, clippy::all)]
        impl #rtp::Batched for #name {
            type Batch = #batch;
            const LEAVES: usize = 0 #(+ #counts)*;

            fn from_refs(lanes: &[&#name]) -> ::std::result::Result<#batch, #rtp::RuntimeError> {
                ::std::result::Result::Ok(#batch { #(#field_names: #refs,)* })
            }

            fn lane(__s: &#batch, __lane: usize) -> ::std::option::Option<#name> {
                ::std::option::Option::Some(#name { #(#field_names: #lane_fields,)* })
            }

            fn rows(__s: &#batch) -> usize {
                #len
            }

            fn push_columns(__s: &#batch, __out: &mut ::std::vec::Vec<#rtp::Column>) {
                #(#pushes)*
            }

            fn from_columns(__cols: &[#rtp::Column]) -> ::std::result::Result<#batch, #rtp::RuntimeError> {
                let mut __at = 0usize;
                ::std::result::Result::Ok(#batch { #(#field_names: #reads,)* })
            }
        }
    }
}

//! How generated code names the runtime and spells the language's types: the runtime's path
//! (`::autobatch_runtime` unless `crate = path` overrides it), Rust and IR types, and the leaves
//! of a type.

use crate::parse::ast::Ty;
use autobatch_ir::DType;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

/// The path generated code reaches the runtime's items by: `<crate>::__private`, the runtime's
/// one `#[doc(hidden)]` module.
#[derive(Clone)]
pub struct Runtime {
    private: TokenStream,
}

impl Runtime {
    /// The runtime at `krate` (as given by `crate = path`), or at `::autobatch_runtime`.
    pub fn new(krate: Option<&syn::Path>) -> Self {
        let private = match krate {
            // Spanned at the path, so a path without the runtime's items is the error's place.
            Some(p) => quote_spanned!(p.span()=> #p::__private),
            None => quote!(::autobatch_runtime::__private),
        };
        Runtime { private }
    }

    /// The path of the runtime's `__private` module.
    pub fn path(&self) -> &TokenStream {
        &self.private
    }

    /// The owned batched array type of a value of type `t`: `Array1` per scalar, `Array2`
    /// `[lanes, len]` per `Vector`, a tuple of arrays per tuple, a struct's struct of arrays.
    pub fn array_type(&self, t: &Ty) -> TokenStream {
        let rtp = self.path();
        match t {
            Ty::Tuple(items) => {
                let items = items.iter().map(|i| self.array_type(i));
                quote!((#(#items,)*))
            }
            Ty::Struct { path, .. } => {
                let p = struct_path(path);
                quote!(<#p as #rtp::Batched>::Batch)
            }
            Ty::Vector => quote!(#rtp::ndarray::Array2<f64>),
            leaf => {
                let el = self.rust_type(leaf);
                quote!(#rtp::ndarray::Array1<#el>)
            }
        }
    }

    /// The Rust type of a language type.
    pub fn rust_type(&self, t: &Ty) -> TokenStream {
        let rt = &self.private;
        match t {
            Ty::Scalar(DType::Key) => quote!(#rt::Key),
            Ty::Scalar(d) => {
                // Every other dtype is spelled as Rust spells it (`u8`, `isize`, `f64`, ..).
                let name = format_ident!("{}", d.name());
                quote!(#name)
            }
            Ty::Vector => quote!(#rt::Vector),
            Ty::Tuple(items) => {
                let items = items.iter().map(|i| self.rust_type(i));
                quote!((#(#items,)*))
            }
            Ty::Struct { path, .. } => struct_path(path),
        }
    }

    /// The element type stored in a leaf's column (`f64` for a `Vector`'s elements).
    pub fn element_type(&self, t: &Ty) -> TokenStream {
        match t {
            Ty::Vector => quote!(f64),
            other => self.rust_type(other),
        }
    }

    /// An expression building the IR type of `t`.
    pub fn ir_type_expr(&self, t: &Ty) -> TokenStream {
        let rt = &self.private;
        match t {
            Ty::Scalar(d) => {
                let d = format_ident!("{}", format!("{d:?}"));
                quote!(#rt::ir::Type::scalar(#rt::ir::DType::#d))
            }
            Ty::Vector => quote!(#rt::ir::Type::vector(#rt::ir::DType::F64)),
            Ty::Tuple(items) => {
                let items = items.iter().map(|i| self.ir_type_expr(i));
                quote!(#rt::ir::Type::Tuple(::std::vec![#(#items),*]))
            }
            Ty::Struct { fields, .. } => {
                let items = fields.iter().map(|(_, t)| self.ir_type_expr(t));
                quote!(#rt::ir::Type::Tuple(::std::vec![#(#items),*]))
            }
        }
    }

    /// The IR leaf types of `t`, as a `Vec<TensorType>` expression.
    pub fn leaf_types_expr(&self, t: &Ty) -> TokenStream {
        let rt = &self.private;
        let items = leaf_paths(t, quote!())
            .into_iter()
            .map(|(leaf, _)| match leaf {
                Ty::Scalar(d) => {
                    let d = format_ident!("{}", format!("{d:?}"));
                    quote!(#rt::ir::TensorType::scalar(#rt::ir::DType::#d))
                }
                _ => quote!(#rt::ir::TensorType::vector(#rt::ir::DType::F64)),
            });
        quote!(::std::vec![#(#items),*])
    }
}

/// The leaves of `t` in storage order, with the field path reaching each from `root` (`.0.1`).
pub fn leaf_paths(t: &Ty, root: TokenStream) -> Vec<(Ty, TokenStream)> {
    fn walk(t: &Ty, path: TokenStream, out: &mut Vec<(Ty, TokenStream)>) {
        match t {
            Ty::Tuple(items) => {
                for (i, item) in items.iter().enumerate() {
                    let idx = syn::Index::from(i);
                    walk(item, quote!(#path.#idx), out);
                }
            }
            Ty::Struct { fields, .. } => {
                for (name, item) in fields {
                    let name = format_ident!("{}", name);
                    walk(item, quote!(#path.#name), out);
                }
            }
            leaf => out.push((leaf.clone(), path)),
        }
    }
    let mut out = Vec::new();
    walk(t, root, &mut out);
    out
}

/// The tokens of a struct path as written (`Tree`, `crate::m::Tree`).
pub fn struct_path(path: &str) -> TokenStream {
    syn::parse_str::<syn::Path>(path)
        .map(|p| quote!(#p))
        .unwrap_or_else(|e| e.to_compile_error())
}

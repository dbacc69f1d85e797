//! Types of the language: `bool`, `i32`, `i64`, `f32`, `f64`, `Key`, `Vector` and tuples.

use super::ast::Ty;
use super::Errors;
use autobatch_ir::DType;
use quote::ToTokens;

/// Parses a Rust type of the language.
pub fn ty(t: &syn::Type, errors: &mut Errors) -> Ty {
    match t {
        syn::Type::Path(p) if p.qself.is_none() => {
            let last = p
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            match last.as_str() {
                "bool" => Ty::Scalar(DType::Bool),
                "i32" => Ty::Scalar(DType::I32),
                "i64" => Ty::Scalar(DType::I64),
                "f32" => Ty::Scalar(DType::F32),
                "f64" => Ty::Scalar(DType::F64),
                "Key" => Ty::Scalar(DType::Key),
                "Vector" => Ty::Vector,
                _ => {
                    errors.at(t, format!("type `{}` is not supported in #[autobatch] code; use bool, i32, i64, f32, f64, Vector, Key or tuples of them", t.to_token_stream()));
                    Ty::unit()
                }
            }
        }
        syn::Type::Tuple(tuple) => Ty::Tuple(tuple.elems.iter().map(|e| ty(e, errors)).collect()),
        syn::Type::Paren(p) => ty(&p.elem, errors),
        syn::Type::Reference(_) => {
            errors.at(t, "references are not supported in #[autobatch] code; pass values (they are copied per lane)");
            Ty::unit()
        }
        _ => {
            errors.at(t, format!("type `{}` is not supported in #[autobatch] code; use bool, i32, i64, f32, f64, Vector, Key or tuples of them", t.to_token_stream()));
            Ty::unit()
        }
    }
}

/// The scalar type a literal suffix or a type name stands for (`i64` in `1i64`, `i64::MAX`).
pub(super) fn suffix(s: &str) -> Option<DType> {
    match s {
        "i32" => Some(DType::I32),
        "i64" => Some(DType::I64),
        "f32" => Some(DType::F32),
        "f64" => Some(DType::F64),
        _ => None,
    }
}

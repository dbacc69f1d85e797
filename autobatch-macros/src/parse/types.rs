//! Types of the language: `bool`, every integer type up to 64 bits (`i8`..`i64`, `isize`,
//! `u8`..`u64`, `usize`), `f32`, `f64`, `Key`, `Vector`, tuples and `#[autobatch] struct`s
//! (any other capitalised path without generic arguments, its layout learnt later).

use super::ast::Ty;
use super::Errors;
use autobatch_ir::DType;
use quote::ToTokens;
use syn::spanned::Spanned;

/// The types a message lists as supported.
const SUPPORTED: &str = "bool, i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, f32, f64, Vector, Key, #[autobatch] structs or tuples of them";

/// Standard library types a struct path could otherwise be taken for.
const STD_TYPES: [&str; 12] = [
    "String", "Vec", "Option", "Result", "Box", "Rc", "Arc", "HashMap", "BTreeMap", "HashSet",
    "BTreeSet", "Self",
];

/// True if `p` can name an `#[autobatch] struct`: a capitalised last segment that is no
/// standard library type, and no generic arguments anywhere.
fn struct_path(p: &syn::Path) -> bool {
    let Some(last) = p.segments.last() else {
        return false;
    };
    let name = last.ident.to_string();
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && !STD_TYPES.contains(&name.as_str())
        && p.segments.iter().all(|s| s.arguments.is_empty())
}

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
                "Key" => Ty::Scalar(DType::Key),
                "Vector" => Ty::Vector,
                name => match DType::from_name(name) {
                    Some(d) => Ty::Scalar(d),
                    None if struct_path(&p.path) => Ty::Struct {
                        path: super::ast::path_key(&p.path),
                        fields: Vec::new(),
                    },
                    None => {
                        errors.at(t, unsupported(&t.to_token_stream().to_string()));
                        Ty::unit()
                    }
                },
            }
        }
        syn::Type::Tuple(tuple) => Ty::Tuple(tuple.elems.iter().map(|e| ty(e, errors)).collect()),
        syn::Type::Paren(p) => ty(&p.elem, errors),
        syn::Type::Reference(_) => {
            errors.at(t, "references are not supported in #[autobatch] code; pass values (they are copied per lane)");
            Ty::unit()
        }
        _ => {
            errors.at(t, unsupported(&t.to_token_stream().to_string()));
            Ty::unit()
        }
    }
}

/// Why type `name` is refused, and what to write instead.
fn unsupported(name: &str) -> String {
    match name {
        "i128" | "u128" => {
            let narrower = if name == "i128" { "i64" } else { "u64" };
            format!("`{name}` is not supported in #[autobatch] code (lanes hold at most 64 bits); use `{narrower}`")
        }
        _ => format!("type `{name}` is not supported in #[autobatch] code; use {SUPPORTED}"),
    }
}

/// The scalar type a type name stands for (`u8` in `u8::MAX`, `u8::from`): every number type
/// and `bool`.
pub(super) fn suffix(s: &str) -> Option<DType> {
    DType::from_name(s).filter(|d| *d != DType::Bool)
}

/// The type of a literal with suffix `s` (`1u8`, `2.0f32`; `None` without one); an `i128` or
/// `u128` suffix is reported at `lit`.
pub(super) fn literal_suffix(s: &str, lit: impl Spanned, errors: &mut Errors) -> Option<DType> {
    if matches!(s, "i128" | "u128") {
        errors.at(lit, unsupported(s));
    }
    suffix(s)
}

/// The type of the associated constant `name` of the number type `of` (`u32` for `BITS`,
/// which every integer type has; `of` itself for `MAX`, `MIN`, `EPSILON`, ..).
pub(super) fn constant(of: DType, name: &str) -> Ty {
    match name {
        "BITS" if of.is_int() => Ty::Scalar(DType::U32),
        _ => Ty::Scalar(of),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(t: syn::Type) -> (Ty, Vec<String>) {
        let mut errors = Errors::default();
        let ty = ty(&t, &mut errors);
        let messages = match errors.finish() {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        };
        (ty, messages)
    }

    #[test]
    fn every_integer_type_parses() {
        for d in DType::INTEGERS {
            let t: syn::Type = syn::parse_str(d.name()).unwrap();
            assert_eq!(parsed(t), (Ty::Scalar(d), Vec::new()));
        }
        assert_eq!(
            parsed(syn::parse_quote!((u8, usize))).0,
            Ty::Tuple(vec![Ty::Scalar(DType::U8), Ty::Scalar(DType::Usize)])
        );
    }

    #[test]
    fn wide_integers_are_refused_with_the_type_to_use() {
        let (_, e) = parsed(syn::parse_quote!(u128));
        assert_eq!(e.len(), 1);
        assert!(e[0].contains("use `u64`"), "{e:?}");
        let (_, e) = parsed(syn::parse_quote!(i128));
        assert!(e[0].contains("use `i64`"), "{e:?}");
        let (_, e) = parsed(syn::parse_quote!(String));
        assert!(e[0].contains("u8, u16, u32, u64, usize"), "{e:?}");
    }

    #[test]
    fn bits_is_a_u32() {
        assert_eq!(constant(DType::U8, "BITS"), Ty::Scalar(DType::U32));
        assert_eq!(constant(DType::I16, "MAX"), Ty::Scalar(DType::I16));
        assert_eq!(suffix("usize"), Some(DType::Usize));
        assert_eq!(suffix("bool"), None);
    }
}

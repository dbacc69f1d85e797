//! A callee the macro can prove is a plain Rust function (neither `#[autobatch]` nor
//! `#[primitive]`), or a struct it can prove has no `#[autobatch]`, found by reading the
//! caller's own source file, so the code gets one message saying which attribute to add
//! instead of rustc's failed lookup of the item's description.
//!
//! Only what is certain is reported: the caller's module is found in its file (every inline
//! module holding an `#[autobatch]` function of the caller's name), the callee's path is
//! followed through inline modules of that file, and it must end at a function (or struct)
//! carrying no attribute that could be a macro. Anything else (a callee in another file, behind a `use`, a
//! file that cannot be read) leaves the lookup to `describe.rs` as before.

use proc_macro2::Span;

/// The error for a call of `callee` from the function `caller` (its item), if `callee` is
/// provably a plain function of the caller's file; `None` when that cannot be shown.
pub fn error(caller: &syn::ItemFn, callee: &syn::Path) -> Option<syn::Error> {
    let name = &callee.segments.last()?.ident;
    plain(caller, callee, Kind::Function).then(|| {
        syn::Error::new(
            name.span(),
            format!(
                "`{name}` is a plain Rust function, and #[autobatch] code calls only #[autobatch] \
                 functions and #[primitive]s: add `#[autobatch]` to `fn {name}` (its body then runs \
                 batched too) or `#[primitive]` (it then runs as one opaque kernel per block)"
            ),
        )
    })
}

/// Whether the struct `path`, named in the function `caller`, is provably a struct of the
/// caller's file without `#[autobatch]` (so it has no layout description to look up).
pub fn plain_struct(caller: &syn::ItemFn, path: &syn::Path) -> bool {
    plain(caller, path, Kind::Struct)
}

/// The kind of item a path is looked up as.
#[derive(Clone, Copy)]
enum Kind {
    Function,
    Struct,
}

/// Whether `path`, named in `caller`, is an item of `kind` in the caller's file with no
/// attribute that could be a macro, from every module the caller may be in.
fn plain(caller: &syn::ItemFn, path: &syn::Path, kind: Kind) -> bool {
    let Some(file) = source_file(caller.sig.ident.span()) else {
        return false;
    };
    let modules = caller_modules(&file.items, &caller.sig.ident, &mut Vec::new());
    !modules.is_empty()
        && modules
            .iter()
            .all(|module| plain_item(&file.items, module, path, kind))
}

/// The file `span` is in, parsed; `None` outside a real file (or if it does not parse).
fn source_file(span: Span) -> Option<syn::File> {
    let path = span.unwrap().local_file()?;
    let text = std::fs::read_to_string(path).ok()?;
    syn::parse_file(&text).ok()
}

/// Every inline module path (from the file's root) holding a function named `caller` with an
/// attribute that could be `#[autobatch]`.
fn caller_modules(
    items: &[syn::Item],
    caller: &syn::Ident,
    here: &mut Vec<syn::Ident>,
) -> Vec<Vec<syn::Ident>> {
    let mut found = Vec::new();
    for item in items {
        match item {
            syn::Item::Fn(f) if f.sig.ident == *caller && !macro_attributes(&f.attrs) => {}
            syn::Item::Fn(f) if f.sig.ident == *caller => found.push(here.clone()),
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    here.push(m.ident.clone());
                    found.extend(caller_modules(inner, caller, here));
                    here.pop();
                }
            }
            _ => {}
        }
    }
    found
}

/// Whether `callee`, named from the module at `module` (a path from the file's root), is an
/// item of `kind` in this file with no attribute that could be a macro.
fn plain_item(root: &[syn::Item], module: &[syn::Ident], callee: &syn::Path, kind: Kind) -> bool {
    if callee.leading_colon.is_some() {
        return false;
    }
    let mut at: Vec<syn::Ident> = module.to_vec();
    let (last, init) = match callee.segments.iter().collect::<Vec<_>>().split_last() {
        Some((last, init)) => (last.ident.clone(), init.to_vec()),
        None => return false,
    };
    for segment in init {
        if !segment.arguments.is_none() {
            return false;
        }
        if segment.ident == "self" {
            continue;
        }
        if segment.ident == "super" {
            if at.pop().is_none() {
                return false;
            }
            continue;
        }
        if segment.ident == "crate" {
            return false;
        }
        at.push(segment.ident.clone());
    }
    let Some(items) = module_items(root, &at) else {
        return false;
    };
    // Every item of that name (there may be several under `cfg`s) must be plain.
    let mut plain = false;
    for item in items {
        let attrs = match (kind, item) {
            (Kind::Function, syn::Item::Fn(f)) if f.sig.ident == last => Some(&f.attrs),
            (Kind::Struct, syn::Item::Struct(s)) if s.ident == last => Some(&s.attrs),
            _ => None,
        };
        if let Some(attrs) = attrs {
            if macro_attributes(attrs) {
                return false;
            }
            plain = true;
            continue;
        }
        match item {
            // Anything else that may bring a description of that name: a `use` of it or a glob,
            // an item macro, a module of that name.
            syn::Item::Use(u) if imports(&u.tree, &last) => return false,
            syn::Item::Macro(_) => return false,
            syn::Item::Mod(m) if m.ident == last => return false,
            _ => {}
        }
    }
    plain
}

/// Whether the `use` tree may import something named `name` (a glob may).
fn imports(tree: &syn::UseTree, name: &syn::Ident) -> bool {
    match tree {
        syn::UseTree::Path(p) => imports(&p.tree, name),
        syn::UseTree::Name(n) => n.ident == *name,
        syn::UseTree::Rename(r) => r.rename == *name,
        syn::UseTree::Glob(_) => true,
        syn::UseTree::Group(g) => g.items.iter().any(|t| imports(t, name)),
    }
}

/// The items of the inline module at `path` from the file's root.
fn module_items<'a>(root: &'a [syn::Item], path: &[syn::Ident]) -> Option<&'a [syn::Item]> {
    let Some((first, rest)) = path.split_first() else {
        return Some(root);
    };
    root.iter().find_map(|item| match item {
        syn::Item::Mod(m) if m.ident == *first => {
            let (_, inner) = m.content.as_ref()?;
            module_items(inner, rest)
        }
        _ => None,
    })
}

/// Whether any of `attrs` could be a macro (an attribute not built into the language).
fn macro_attributes(attrs: &[syn::Attribute]) -> bool {
    const BUILT_IN: &[&str] = &[
        "doc",
        "allow",
        "warn",
        "deny",
        "expect",
        "forbid",
        "inline",
        "cold",
        "must_use",
        "track_caller",
        "deprecated",
        "cfg",
    ];
    attrs
        .iter()
        .any(|a| !BUILT_IN.iter().any(|b| a.path().is_ident(b)))
}

#[cfg(test)]
mod tests {
    use super::{caller_modules, plain_item, Kind};

    fn plain(file: &str, caller: &str, callee: &str) -> bool {
        plain_as(file, caller, callee, Kind::Function)
    }

    fn plain_as(file: &str, caller: &str, callee: &str, kind: Kind) -> bool {
        let file = syn::parse_file(file).unwrap();
        let caller = syn::Ident::new(caller, proc_macro2::Span::call_site());
        let callee: syn::Path = syn::parse_str(callee).unwrap();
        let modules = caller_modules(&file.items, &caller, &mut Vec::new());
        !modules.is_empty()
            && modules
                .iter()
                .all(|m| plain_item(&file.items, m, &callee, kind))
    }

    const FILE: &str = r#"
        use autobatch_runtime::autobatch;
        #[autobatch] fn caller(n: i64) -> i64 { helper(n) }
        fn helper(n: i64) -> i64 { n }
        #[autobatch] fn described(n: i64) -> i64 { n }
        struct Bare { n: i64 }
        #[autobatch] struct Described { n: i64 }
        #[cfg(test)] fn twin(n: i64) -> i64 { n }
        #[cfg(not(test))] #[autobatch] fn twin(n: i64) -> i64 { n }
        mod inner {
            pub fn plain(n: i64) -> i64 { n }
            #[inline] pub fn deeper(n: i64) -> i64 { n }
        }
        mod globbed {
            use super::*;
            #[autobatch] fn nested_caller(n: i64) -> i64 { helper(n) }
        }
    "#;

    #[test]
    fn a_plain_function_of_the_callers_module_is_found() {
        assert!(plain(FILE, "caller", "helper"));
        assert!(plain(FILE, "caller", "self::helper"));
        assert!(plain(FILE, "caller", "inner::plain"));
        assert!(plain(FILE, "caller", "inner::deeper"));
    }

    #[test]
    fn anything_that_may_have_a_description_is_left_to_the_lookup() {
        // Attributed, one of several under `cfg`s attributed, unknown, behind a glob import,
        // outside the file, or a caller this file does not define.
        assert!(!plain(FILE, "caller", "described"));
        assert!(!plain(FILE, "caller", "twin"));
        assert!(!plain(FILE, "caller", "missing"));
        assert!(!plain(FILE, "nested_caller", "helper"));
        assert!(!plain(FILE, "caller", "crate::helper"));
        assert!(!plain(FILE, "caller", "super::helper"));
        assert!(!plain(FILE, "not_here", "helper"));
    }

    #[test]
    fn a_struct_without_the_attribute_is_found_and_one_with_it_is_not() {
        assert!(plain_as(FILE, "caller", "Bare", Kind::Struct));
        assert!(!plain_as(FILE, "caller", "Described", Kind::Struct));
        // A function is not a struct, nor the other way round.
        assert!(!plain_as(FILE, "caller", "helper", Kind::Struct));
        assert!(!plain_as(FILE, "caller", "Bare", Kind::Function));
    }
}

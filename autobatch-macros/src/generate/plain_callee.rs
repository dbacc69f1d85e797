//! A callee the macro can prove is a plain Rust function (neither `#[autobatch]` nor
//! `#[primitive]`), or a struct it can prove has no `#[autobatch]`, found by reading the
//! crate's source files from the caller's, so the code gets one message saying which
//! attribute to add instead of rustc's failed lookup of the item's description.
//!
//! Only what is certain is reported: the caller's module is found in its file (every inline
//! module holding an `#[autobatch]` function of the caller's name), the callee's path is
//! followed through the crate's modules and imports (`modules.rs`: inline modules, `mod x;`
//! files, `use` items, globs that alone bring the name), and every definition it may name must
//! be a function (or struct) carrying no attribute that could be a macro. Anything else (an
//! item of another crate, a name an item macro may define, a file that cannot be read)
//! leaves the lookup to `describe.rs` as before.

use super::modules::{attribute_among, disk_roots, Crate, Disk, Lookup, Name, Want};
use std::path::Path;

/// The error for a call of `callee` from the function `caller` (its item), if `callee` is
/// provably a plain function of the caller's crate; `None` when that cannot be shown.
pub fn error(caller: &syn::ItemFn, callee: &syn::Path) -> Option<syn::Error> {
    let name = &callee.segments.last()?.ident;
    let defined = plain(caller, callee, Kind::Function)?;
    let renamed = if defined == *name {
        String::new()
    } else {
        format!(" (`{defined}` renamed by a `use`)")
    };
    Some(syn::Error::new(
        name.span(),
        format!(
            "`{name}`{renamed} is a plain Rust function, and #[autobatch] code calls only \
             #[autobatch] functions and #[primitive]s: add `#[autobatch]` to `fn {defined}` (its \
             body then runs batched too) or `#[primitive]` (it then runs as one opaque kernel per \
             block)"
        ),
    ))
}

/// Whether the struct `path`, named in the function `caller`, is provably a struct of the
/// caller's crate without `#[autobatch]` (so it has no layout description to look up).
pub fn plain_struct(caller: &syn::ItemFn, path: &syn::Path) -> bool {
    plain(caller, path, Kind::Struct).is_some()
}

/// The kind of item a path is looked up as.
#[derive(Clone, Copy)]
enum Kind {
    Function,
    Struct,
}

/// The name `path`, named in `caller`, is defined under if it is an item of `kind` with no
/// attribute that could be a macro, from every module the caller may be in, following the
/// crate's modules and imports from the caller's file; `None` if that cannot be shown.
fn plain(caller: &syn::ItemFn, path: &syn::Path, kind: Kind) -> Option<syn::Ident> {
    let file = caller.sig.ident.span().unwrap().local_file()?;
    let krate = Crate::new(Box::new(Disk), disk_roots());
    plain_in(&krate, &file, &caller.sig.ident, path, kind)
}

/// [`plain`] in `krate`, for the caller `caller` of the file `file`.
fn plain_in(
    krate: &Crate,
    file: &Path,
    caller: &syn::Ident,
    path: &syn::Path,
    kind: Kind,
) -> Option<syn::Ident> {
    let want = match kind {
        Kind::Function => Want::Fn,
        Kind::Struct => Want::Struct,
    };
    let mut defined = None;
    for module in krate.modules_with(file, caller, macro_attributes) {
        let Lookup::Found(names) = krate.resolve(&module, path, want) else {
            return None;
        };
        for name in names {
            match name {
                Name::Item { ident, attrs, .. } if !macro_attributes(&attrs) => {
                    if defined.get_or_insert_with(|| ident.clone()) != &ident {
                        return None;
                    }
                }
                _ => return None,
            }
        }
    }
    defined
}

/// Whether any of `attrs` could be a macro (an attribute not built into the language).
fn macro_attributes(attrs: &[syn::Attribute]) -> bool {
    const BUILT_IN: &[&str] = &["inline", "cold", "must_use", "track_caller", "deprecated"];
    attrs.iter().any(|a| !attribute_among(a, BUILT_IN))
}

#[cfg(test)]
mod tests {
    use super::super::modules::{Crate, Source};
    use super::{plain_in, Kind};
    use std::collections::HashMap;
    use std::path::{Component, Path, PathBuf};

    /// Files in memory, by path.
    struct Memory(HashMap<PathBuf, String>);

    impl Source for Memory {
        fn locate(&self, path: &Path) -> Option<PathBuf> {
            let path = normalise(path);
            self.0.contains_key(&path).then_some(path)
        }

        fn read(&self, path: &Path) -> Option<String> {
            self.0.get(&normalise(path)).cloned()
        }
    }

    /// `path` without `.` and `..` components (as far as they can be removed).
    fn normalise(path: &Path) -> PathBuf {
        let mut out = PathBuf::new();
        for c in path.components() {
            match c {
                Component::CurDir => {}
                Component::ParentDir
                    if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
                {
                    out.pop();
                }
                other => out.push(other),
            }
        }
        out
    }

    /// The crate of `files` whose root is `/c/src/lib.rs`.
    fn krate(files: &[(&str, &str)]) -> Crate {
        let memory = files
            .iter()
            .map(|(p, t)| (PathBuf::from(p), t.to_string()))
            .collect();
        Crate::new(Box::new(Memory(memory)), vec![PathBuf::from(ROOT)])
    }

    /// The name `callee`, called by `caller` of the file `at`, is defined under if it is
    /// provably a plain item of `kind` in the crate of `files`.
    fn defined(
        files: &[(&str, &str)],
        at: &str,
        caller: &str,
        callee: &str,
        kind: Kind,
    ) -> Option<String> {
        let caller = syn::Ident::new(caller, proc_macro2::Span::call_site());
        let callee: syn::Path = syn::parse_str(callee).unwrap();
        plain_in(&krate(files), Path::new(at), &caller, &callee, kind).map(|d| d.to_string())
    }

    /// Whether `callee` is provably a plain item ([`defined`]).
    fn plain_as(files: &[(&str, &str)], at: &str, caller: &str, callee: &str, kind: Kind) -> bool {
        defined(files, at, caller, callee, kind).is_some()
    }

    fn plain(file: &str, caller: &str, callee: &str) -> bool {
        plain_as(&[(ROOT, file)], ROOT, caller, callee, Kind::Function)
    }

    const ROOT: &str = "/c/src/lib.rs";

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
        mod other_crate_glob {
            use autobatch_runtime::*;
            #[autobatch] fn far_caller(n: i64) -> i64 { helper(n) }
        }
    "#;

    #[test]
    fn a_plain_function_of_the_callers_module_is_found() {
        assert!(plain(FILE, "caller", "helper"));
        assert!(plain(FILE, "caller", "self::helper"));
        assert!(plain(FILE, "caller", "crate::helper"));
        assert!(plain(FILE, "caller", "inner::plain"));
        assert!(plain(FILE, "caller", "inner::deeper"));
        // A glob of the parent module brings its private items.
        assert!(plain(FILE, "nested_caller", "helper"));
        assert!(plain(FILE, "nested_caller", "super::helper"));
    }

    #[test]
    fn anything_that_may_have_a_description_is_left_to_the_lookup() {
        // Attributed, one of several under `cfg`s attributed, unknown, behind a glob of
        // another crate, above the crate root, or a caller this file does not define.
        assert!(!plain(FILE, "caller", "described"));
        assert!(!plain(FILE, "caller", "twin"));
        assert!(!plain(FILE, "caller", "missing"));
        assert!(!plain(FILE, "far_caller", "helper"));
        assert!(!plain(FILE, "caller", "super::helper"));
        assert!(!plain(FILE, "caller", "::helper"));
        assert!(!plain(FILE, "not_here", "helper"));
    }

    #[test]
    fn a_struct_without_the_attribute_is_found_and_one_with_it_is_not() {
        let struct_ = |callee| plain_as(&[(ROOT, FILE)], ROOT, "caller", callee, Kind::Struct);
        assert!(struct_("Bare"));
        assert!(!struct_("Described"));
        // A function is not a struct, nor the other way round.
        assert!(!struct_("helper"));
        assert!(!plain(FILE, "caller", "Bare"));
    }

    /// A crate whose helpers are in other files: `util.rs`, `deep/mod.rs` with `deep/leaf.rs`,
    /// a `#[path]` module, and `walk.rs` (not a `mod.rs`) whose child is `walk/step.rs`.
    const LIB: &str = r#"
        mod util;
        mod deep;
        #[path = "elsewhere/odd_name.rs"] mod odd;
        mod walk;
        use util::helper;
        use deep::leaf::{far as renamed, Bare as Plain};
        use crate::util::{described, primitive_one};
        #[autobatch] fn caller(n: i64) -> i64 { helper(n) }
    "#;
    const UTIL: &str = r#"
        pub fn helper(n: i64) -> i64 { n }
        #[autobatch] pub fn described(n: i64) -> i64 { n }
        #[primitive] pub fn primitive_one(n: f64) -> f64 { n }
        fn private(n: i64) -> i64 { n }
    "#;
    const DEEP: &str = "pub mod leaf;";
    const LEAF: &str = r#"
        pub fn far(n: i64) -> i64 { n }
        pub struct Bare { n: i64 }
    "#;
    const ODD: &str = "pub fn odd_one(n: i64) -> i64 { n }";
    const WALK: &str = r#"
        mod step;
        use super::util::*;
        use self::step::stride;
        #[autobatch] fn walker(n: i64) -> i64 { helper(n) }
    "#;
    const STEP: &str = "pub fn stride(n: i64) -> i64 { n }";

    fn files() -> Vec<(&'static str, &'static str)> {
        vec![
            (ROOT, LIB),
            ("/c/src/util.rs", UTIL),
            ("/c/src/deep/mod.rs", DEEP),
            ("/c/src/deep/leaf.rs", LEAF),
            ("/c/src/elsewhere/odd_name.rs", ODD),
            ("/c/src/walk.rs", WALK),
            ("/c/src/walk/step.rs", STEP),
        ]
    }

    fn in_crate(at: &str, caller: &str, callee: &str) -> bool {
        plain_as(&files(), at, caller, callee, Kind::Function)
    }

    #[test]
    fn mod_files_are_found_as_rustc_finds_them() {
        assert!(in_crate(ROOT, "caller", "util::helper"));
        assert!(in_crate(ROOT, "caller", "deep::leaf::far"));
        assert!(in_crate(ROOT, "caller", "odd::odd_one"));
        let walk = "/c/src/walk.rs";
        assert!(in_crate(walk, "walker", "step::stride"));
        assert!(in_crate(walk, "walker", "super::util::helper"));
        assert!(in_crate(walk, "walker", "crate::deep::leaf::far"));
        // `walk.rs` is not a `mod.rs`: its `mod step;` is `src/walk/step.rs`, not a
        // `src/step.rs` beside it (the file's place in the crate says which).
        let described = "#[autobatch] pub fn stride(n: i64) -> i64 { n }";
        let mut beside = files();
        beside.push(("/c/src/step.rs", described));
        assert!(plain_as(
            &beside,
            walk,
            "walker",
            "step::stride",
            Kind::Function
        ));
        beside.retain(|(p, _)| !p.ends_with("step.rs"));
        beside.push(("/c/src/step.rs", STEP));
        beside.push(("/c/src/walk/step.rs", described));
        assert!(!plain_as(
            &beside,
            walk,
            "walker",
            "step::stride",
            Kind::Function
        ));
    }

    #[test]
    fn use_items_are_followed() {
        assert!(in_crate(ROOT, "caller", "helper"));
        // The error names the function as defined, not as imported.
        let far = defined(&files(), ROOT, "caller", "renamed", Kind::Function);
        assert_eq!(far.as_deref(), Some("far"));
        assert!(in_crate(ROOT, "caller", "renamed"));
        assert!(plain_as(&files(), ROOT, "caller", "Plain", Kind::Struct));
        // A glob of a sibling module brings its public items only.
        let walk = "/c/src/walk.rs";
        assert!(in_crate(walk, "walker", "helper"));
        assert!(in_crate(walk, "walker", "stride"));
        assert!(!in_crate(walk, "walker", "private"));
        // Imported, but #[autobatch] or #[primitive]: it has a description.
        assert!(!in_crate(ROOT, "caller", "described"));
        assert!(!in_crate(ROOT, "caller", "primitive_one"));
        assert!(!in_crate(walk, "walker", "described"));
    }

    #[test]
    fn uncertain_files_and_imports_are_left_to_the_lookup() {
        // Both `x.rs` and `x/mod.rs`: rustc refuses it, the macro leaves it.
        let mut both = files();
        both.push(("/c/src/util/mod.rs", UTIL));
        assert!(!plain_as(&both, ROOT, "caller", "helper", Kind::Function));
        // Two globs bringing the name, a glob beside a local function (it may bring the
        // description), an import from another crate, a module with an item macro.
        let two = r#"
            mod a { pub fn helper(n: i64) -> i64 { n } }
            mod b { pub fn helper(n: i64) -> i64 { n } }
            mod c { use super::a::*; use super::b::*; #[autobatch] fn c1(n: i64) -> i64 { helper(n) } }
            mod d { use super::a::*; fn helper(n: i64) -> i64 { n } #[autobatch] fn d1(n: i64) -> i64 { helper(n) } }
            mod e { use other::helper; #[autobatch] fn e1(n: i64) -> i64 { helper(n) } }
            mod f { thread_local!{} fn helper(n: i64) -> i64 { n } #[autobatch] fn f1(n: i64) -> i64 { helper(n) } }
        "#;
        for caller in ["c1", "d1", "e1", "f1"] {
            assert!(!plain(two, caller, "helper"), "{caller}");
        }
        // A file no root reaches: `mod x;` is followed only when one file can be it.
        let lost = "/c/src/lost.rs";
        let lone = r#"mod near; #[autobatch] fn lone(n: i64) -> i64 { near::helper(n) }"#;
        let near = "pub fn helper(n: i64) -> i64 { n }";
        let one = [(ROOT, ""), (lost, lone), ("/c/src/lost/near.rs", near)];
        assert!(plain_as(&one, lost, "lone", "near::helper", Kind::Function));
        let two_views = [
            (ROOT, ""),
            (lost, lone),
            ("/c/src/lost/near.rs", near),
            ("/c/src/near.rs", near),
        ];
        assert!(!plain_as(
            &two_views,
            lost,
            "lone",
            "near::helper",
            Kind::Function
        ));
        assert!(!plain_as(
            &one,
            lost,
            "lone",
            "crate::helper",
            Kind::Function
        ));
    }
}

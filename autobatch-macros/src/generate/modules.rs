//! The crate's modules as rustc finds them in its source files, read at compile time: inline
//! modules, `mod x;` files (`x.rs` or `x/mod.rs`, `#[path]`, the directories of non-`mod.rs`
//! files), `self`/`super`/`crate` paths and `use` imports (lists, renames, globs), so a name
//! used in one module can be followed to the item it names, in whatever file it is.
//!
//! Every answer is certain or says it is not ([`Lookup::Unknown`]): a file that cannot be
//! read or parsed, a `mod x;` with no single file, a name an item macro or another crate may
//! define, two globs bringing the same name, a file whose place in the crate is not found.
//! Each file is read and parsed at most once per [`Crate`].

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Where source files come from: the disk, or memory in tests.
pub trait Source {
    /// The file's normalised path if it exists (the path rustc would open names the same file).
    fn locate(&self, path: &Path) -> Option<PathBuf>;
    /// The file's text.
    fn read(&self, path: &Path) -> Option<String>;
}

/// Source files on disk, paths canonicalised.
pub struct Disk;

impl Source for Disk {
    fn locate(&self, path: &Path) -> Option<PathBuf> {
        std::fs::canonicalize(path).ok().filter(|p| p.is_file())
    }

    fn read(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }
}

/// The crate roots that may hold a file, best first: the source file on rustc's command line
/// (the proc macro runs inside rustc), then the package's usual target roots for the crate
/// being compiled (`src/lib.rs`, `src/main.rs`, `tests/<name>.rs`, ..).
pub fn disk_roots() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = std::env::args_os()
        .map(PathBuf::from)
        .filter(|a| a.extension().is_some_and(|e| e == "rs"))
        .collect();
    if let Ok(dir) = std::env::var("CARGO_MANIFEST_DIR") {
        let dir = PathBuf::from(dir);
        roots.push(dir.join("src/lib.rs"));
        roots.push(dir.join("src/main.rs"));
        if let Ok(name) = std::env::var("CARGO_CRATE_NAME") {
            for name in [name.clone(), name.replace('_', "-")] {
                for sub in ["src/bin", "tests", "examples", "benches"] {
                    roots.push(dir.join(sub).join(format!("{name}.rs")));
                    roots.push(dir.join(sub).join(&name).join("main.rs"));
                }
            }
        }
    }
    roots
}

/// The directory a module's `mod x;` files are found from: `dir`, then `relative` (the file's
/// own name, for a file not named `mod.rs` and not a crate root).
#[derive(Clone, PartialEq)]
struct Base {
    dir: PathBuf,
    relative: Option<String>,
}

impl Base {
    /// `dir` joined with `relative`: where a child module's directory starts.
    fn children(&self) -> PathBuf {
        match &self.relative {
            Some(r) => self.dir.join(r),
            None => self.dir.clone(),
        }
    }
}

/// A module's parent.
enum Parent {
    /// The module is the crate root.
    Root,
    /// The module is the top of a file whose place in the crate is looked for on demand.
    Unplaced,
    /// The enclosing module.
    Module(Rc<Module>),
}

/// One module: a file, or an inline module inside one.
pub struct Module {
    file: PathBuf,
    ast: Rc<syn::File>,
    /// The inline modules from the file's top to this one.
    inline: Vec<syn::Ident>,
    /// Where its `mod x;` files are; two when it is unknown whether the file is a `mod.rs`
    /// (any file found must then be the only one among both).
    bases: Vec<Base>,
    parent: Parent,
}

impl Module {
    /// The module's items.
    fn items(&self) -> &[syn::Item] {
        let mut items: &[syn::Item] = &self.ast.items;
        for name in &self.inline {
            let inner = items.iter().find_map(|i| match i {
                syn::Item::Mod(m) if m.ident == *name => m.content.as_ref().map(|(_, c)| c),
                _ => None,
            });
            match inner {
                Some(inner) => items = inner,
                None => return &[],
            }
        }
        items
    }
}

/// What a name can be looked up as.
#[derive(Clone, Copy, PartialEq)]
pub enum Want {
    /// A function (the value namespace).
    Fn,
    /// A struct (the type namespace).
    Struct,
    /// A module (the type namespace).
    Module,
}

/// One definition a name resolves to.
pub enum Name {
    /// A function or struct (as wanted), with its attributes.
    Item {
        /// Its name where it is defined.
        ident: syn::Ident,
        /// Its attributes.
        attrs: Vec<syn::Attribute>,
        /// Whether it is visible outside its module (`pub` in any form).
        public: bool,
    },
    /// A module.
    Module(Rc<Module>),
}

/// The answer to a lookup.
pub enum Lookup {
    /// Every definition the name may resolve to (several under `cfg`s).
    Found(Vec<Name>),
    /// Certainly nothing of that name in the module.
    Absent,
    /// Cannot be known from the sources.
    Unknown,
}

/// How deep imports are followed (a cycle of globs or renames ends as unknown).
const MAX_DEPTH: usize = 24;

/// The crate's files, each read and parsed once.
pub struct Crate {
    source: Box<dyn Source>,
    roots: Vec<PathBuf>,
    files: RefCell<HashMap<PathBuf, Option<Rc<syn::File>>>>,
    placed: RefCell<HashMap<PathBuf, Option<Rc<Module>>>>,
}

impl Crate {
    /// The crate whose files come from `source`, its root among `roots` (best first).
    pub fn new(source: Box<dyn Source>, roots: Vec<PathBuf>) -> Crate {
        Crate {
            source,
            roots,
            files: RefCell::default(),
            placed: RefCell::default(),
        }
    }

    /// The parsed file at the normalised path `path`.
    fn parse(&self, path: &Path) -> Option<Rc<syn::File>> {
        if let Some(f) = self.files.borrow().get(path) {
            return f.clone();
        }
        let parsed = self
            .source
            .read(path)
            .and_then(|t| syn::parse_file(&t).ok())
            .map(Rc::new);
        self.files
            .borrow_mut()
            .insert(path.to_path_buf(), parsed.clone());
        parsed
    }

    /// The top module of the file at `path` (any path naming it), its place in the crate
    /// looked for when a path leaves it upwards.
    fn file(&self, path: &Path) -> Option<Rc<Module>> {
        let file = self.source.locate(path)?;
        let ast = self.parse(&file)?;
        let dir = file.parent()?.to_path_buf();
        let stem = file.file_stem()?.to_string_lossy().into_owned();
        let mut bases = vec![Base {
            dir: dir.clone(),
            relative: None,
        }];
        if stem != "mod" {
            bases.push(Base {
                dir,
                relative: Some(stem),
            });
        }
        Some(Rc::new(Module {
            file,
            ast,
            inline: Vec::new(),
            bases,
            parent: Parent::Unplaced,
        }))
    }

    /// The top module of the crate root at `path`.
    fn root(&self, path: &Path) -> Option<Rc<Module>> {
        let file = self.source.locate(path)?;
        let ast = self.parse(&file)?;
        let dir = file.parent()?.to_path_buf();
        Some(Rc::new(Module {
            file,
            ast,
            inline: Vec::new(),
            bases: vec![Base {
                dir,
                relative: None,
            }],
            parent: Parent::Root,
        }))
    }

    /// The file `file`'s top module as placed in the crate: reached from the first root that
    /// reaches it exactly once, or a root itself; `None` if no root does.
    fn place(&self, file: &Path) -> Option<Rc<Module>> {
        if let Some(placed) = self.placed.borrow().get(file) {
            return placed.clone();
        }
        let placed = self.roots.iter().find_map(|root| {
            let root = self.root(root)?;
            if root.file == file {
                return Some(root);
            }
            let mut found = Vec::new();
            self.search(&root, file, &mut found);
            (found.len() == 1).then(|| found.pop()).flatten()
        });
        self.placed
            .borrow_mut()
            .insert(file.to_path_buf(), placed.clone());
        placed
    }

    /// Every module of file `target` below `m`, following only `mod x;` files on the way to it.
    fn search(&self, m: &Rc<Module>, target: &Path, found: &mut Vec<Rc<Module>>) {
        for item in m.items() {
            let syn::Item::Mod(decl) = item else { continue };
            if found.len() > 1 {
                return;
            }
            if decl.content.is_some() {
                if let Some(child) = self.child(m, decl) {
                    self.search(&child, target, found);
                }
                continue;
            }
            let Some((file, base)) = self.mod_file(m, decl) else {
                continue;
            };
            if file == target {
                found.extend(self.child(m, decl));
            } else if target.starts_with(base.children()) {
                if let Some(child) = self.child(m, decl) {
                    self.search(&child, target, found);
                }
            }
        }
    }

    /// The file of `mod x;` declared in `m` and the base of its own children, if exactly one
    /// file can be it (when two can, for a file not known to be a `mod.rs` or not, the file's
    /// place in the crate says which).
    fn mod_file(&self, m: &Module, decl: &syn::ItemMod) -> Option<(PathBuf, Base)> {
        let found = self.mod_files(m, decl);
        if found.len() > 1 && m.bases.len() > 1 {
            return self.mod_file(&*self.placed_twin(m)?, decl);
        }
        (found.len() == 1)
            .then(|| found.into_iter().next())
            .flatten()
    }

    /// The same module as `m` (of a file whose place was not looked for) as placed in the crate.
    fn placed_twin(&self, m: &Module) -> Option<Rc<Module>> {
        let mut at = self.place(&m.file)?;
        for name in &m.inline {
            let decl = at.items().iter().find_map(|i| match i {
                syn::Item::Mod(d) if d.ident == *name && d.content.is_some() => Some(d.clone()),
                _ => None,
            })?;
            at = self.child(&at, &decl)?;
        }
        Some(at)
    }

    /// Every file `mod x;` declared in `m` may be, with the base of its own children.
    fn mod_files(&self, m: &Module, decl: &syn::ItemMod) -> Vec<(PathBuf, Base)> {
        let mut found: Vec<(PathBuf, Base)> = Vec::new();
        let name = decl.ident.to_string();
        for base in &m.bases {
            let Some(path) = path_attr(&decl.attrs) else {
                return Vec::new();
            };
            let candidates = match path {
                Some(p) => vec![(base.dir.join(p), None)],
                None => vec![
                    (
                        base.children().join(format!("{name}.rs")),
                        Some(name.clone()),
                    ),
                    (base.children().join(&name).join("mod.rs"), None),
                ],
            };
            for (path, relative) in candidates {
                let Some(file) = self.source.locate(&path) else {
                    continue;
                };
                let Some(dir) = file.parent().map(Path::to_path_buf) else {
                    continue;
                };
                if !found.iter().any(|(f, _)| *f == file) {
                    found.push((file, Base { dir, relative }));
                }
            }
        }
        found
    }

    /// The module `decl` declares in `m` (inline or a file).
    fn child(&self, m: &Rc<Module>, decl: &syn::ItemMod) -> Option<Rc<Module>> {
        if !plain_attributes(&decl.attrs) {
            return None;
        }
        let parent = Parent::Module(m.clone());
        if decl.content.is_some() {
            let path = path_attr(&decl.attrs)?;
            let bases = m
                .bases
                .iter()
                .map(|b| Base {
                    dir: match &path {
                        Some(p) => b.dir.join(p),
                        None => b.children().join(decl.ident.to_string()),
                    },
                    relative: None,
                })
                .fold(Vec::new(), |mut all, b| {
                    if !all.contains(&b) {
                        all.push(b);
                    }
                    all
                });
            let mut inline = m.inline.clone();
            inline.push(decl.ident.clone());
            return Some(Rc::new(Module {
                file: m.file.clone(),
                ast: m.ast.clone(),
                inline,
                bases,
                parent,
            }));
        }
        let (file, base) = self.mod_file(m, decl)?;
        let ast = self.parse(&file)?;
        Some(Rc::new(Module {
            file,
            ast,
            inline: Vec::new(),
            bases: vec![base],
            parent,
        }))
    }

    /// Every module of the file `path` holding a function `name` with an attribute for which
    /// `attributed` holds (the `#[autobatch]` caller), in the crate.
    pub fn modules_with(
        &self,
        path: &Path,
        name: &syn::Ident,
        attributed: impl Fn(&[syn::Attribute]) -> bool + Copy,
    ) -> Vec<Rc<Module>> {
        let Some(top) = self.file(path) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        self.holding(&top, name, attributed, &mut found);
        found
    }

    /// [`Crate::modules_with`] from `m` through its inline modules.
    fn holding(
        &self,
        m: &Rc<Module>,
        name: &syn::Ident,
        attributed: impl Fn(&[syn::Attribute]) -> bool + Copy,
        found: &mut Vec<Rc<Module>>,
    ) {
        for item in m.items() {
            match item {
                syn::Item::Fn(f) if f.sig.ident == *name && attributed(&f.attrs) => {
                    found.push(m.clone());
                }
                syn::Item::Mod(decl) if decl.content.is_some() => {
                    if let Some(child) = self.child(m, decl) {
                        self.holding(&child, name, attributed, found);
                    }
                }
                _ => {}
            }
        }
    }

    /// The parent of `m`, if known.
    fn parent(&self, m: &Module) -> Option<Rc<Module>> {
        match &m.parent {
            Parent::Root => None,
            Parent::Module(p) => Some(p.clone()),
            Parent::Unplaced => match &self.place(&m.file)?.parent {
                Parent::Module(p) => Some(p.clone()),
                _ => None,
            },
        }
    }

    /// The crate root above `m`, if known.
    fn crate_root(&self, m: &Rc<Module>) -> Option<Rc<Module>> {
        match &m.parent {
            Parent::Root => Some(m.clone()),
            Parent::Module(p) => self.crate_root(p),
            Parent::Unplaced => {
                let placed = self.place(&m.file)?;
                self.crate_root(&placed)
            }
        }
    }

    /// What `path`, written in module `m`, names as `want`.
    pub fn resolve(&self, m: &Rc<Module>, path: &syn::Path, want: Want) -> Lookup {
        if path.leading_colon.is_some() || path.segments.iter().any(|s| !s.arguments.is_none()) {
            return Lookup::Unknown;
        }
        let segments: Vec<syn::Ident> = path.segments.iter().map(|s| s.ident.clone()).collect();
        self.resolve_segments(m, &segments, want, 0)
    }

    /// [`Crate::resolve`] on a path's segments, `depth` imports deep.
    fn resolve_segments(
        &self,
        m: &Rc<Module>,
        segments: &[syn::Ident],
        want: Want,
        depth: usize,
    ) -> Lookup {
        let Some((last, init)) = segments.split_last() else {
            return Lookup::Unknown;
        };
        let mut at = m.clone();
        for (i, segment) in init.iter().enumerate() {
            let next = if segment == "self" && i == 0 {
                Some(at.clone())
            } else if segment == "super" && init[..i].iter().all(|s| s == "self" || s == "super") {
                self.parent(&at)
            } else if segment == "crate" && i == 0 {
                self.crate_root(&at)
            } else {
                match self.lookup(&at, segment, Want::Module, depth) {
                    Lookup::Found(names) => one_module(names),
                    _ => None,
                }
            };
            match next {
                Some(n) => at = n,
                None => return Lookup::Unknown,
            }
        }
        let keyword = if last == "self" && init.is_empty() {
            Some(Some(at.clone()))
        } else if last == "super" && init.iter().all(|s| s == "self" || s == "super") {
            Some(self.parent(&at))
        } else if last == "crate" && init.is_empty() {
            Some(self.crate_root(&at))
        } else {
            None
        };
        match keyword {
            Some(Some(module)) if want == Want::Module => Lookup::Found(vec![Name::Module(module)]),
            Some(_) => Lookup::Unknown,
            None => self.lookup(&at, last, want, depth),
        }
    }

    /// The module the glob `use path::*` in `m` reads.
    fn glob_module(&self, m: &Rc<Module>, path: &[syn::Ident], depth: usize) -> Option<Rc<Module>> {
        match self.resolve_segments(m, path, Want::Module, depth + 1) {
            Lookup::Found(modules) => one_module(modules),
            _ => None,
        }
    }

    /// What `name` is in module `m` as `want`: its items, its imports, then its globs (exactly
    /// one glob must bring it).
    fn lookup(&self, m: &Rc<Module>, name: &syn::Ident, want: Want, depth: usize) -> Lookup {
        if depth > MAX_DEPTH {
            return Lookup::Unknown;
        }
        let mut found = Vec::new();
        let mut globs = Vec::new();
        for item in m.items() {
            let named = |n: &syn::Ident| n == name;
            match item {
                syn::Item::Fn(f) if named(&f.sig.ident) && want == Want::Fn => {
                    found.push(item_name(&f.sig.ident, &f.attrs, &f.vis));
                }
                syn::Item::Struct(s) if named(&s.ident) => match want {
                    Want::Struct => found.push(item_name(&s.ident, &s.attrs, &s.vis)),
                    // A tuple or unit struct is a constructor of that name.
                    Want::Fn if matches!(s.fields, syn::Fields::Named(_)) => {}
                    _ => return Lookup::Unknown,
                },
                syn::Item::Mod(decl) if named(&decl.ident) => match want {
                    Want::Module => match self.child(m, decl) {
                        Some(child) => found.push(Name::Module(child)),
                        None => return Lookup::Unknown,
                    },
                    _ => return Lookup::Unknown,
                },
                syn::Item::Use(u) => {
                    let mut prefix = Vec::new();
                    let mut imports = Vec::new();
                    use_leaves(&u.tree, &mut prefix, name, &mut imports, &mut globs);
                    for path in imports {
                        match self.resolve_segments(m, &path, want, depth + 1) {
                            Lookup::Found(names) => found.extend(names),
                            Lookup::Absent => {}
                            Lookup::Unknown => return Lookup::Unknown,
                        }
                    }
                }
                syn::Item::Macro(mac) => match &mac.ident {
                    Some(defined) if defined != name => {}
                    _ => return Lookup::Unknown,
                },
                syn::Item::Const(c) if named(&c.ident) && want == Want::Fn => {
                    return Lookup::Unknown
                }
                syn::Item::Static(s) if named(&s.ident) && want == Want::Fn => {
                    return Lookup::Unknown
                }
                syn::Item::Enum(e) if named(&e.ident) && want != Want::Fn => {
                    return Lookup::Unknown
                }
                syn::Item::Trait(t) if named(&t.ident) && want != Want::Fn => {
                    return Lookup::Unknown
                }
                syn::Item::Type(t) if named(&t.ident) && want != Want::Fn => {
                    return Lookup::Unknown
                }
                syn::Item::Union(u) if named(&u.ident) && want != Want::Fn => {
                    return Lookup::Unknown
                }
                syn::Item::ExternCrate(_) | syn::Item::ForeignMod(_) | syn::Item::Verbatim(_) => {
                    return Lookup::Unknown
                }
                _ => {}
            }
        }
        if !found.is_empty() {
            // A glob bringing an item of that name brings its description too (the macro
            // namespace), which the item found here does not shadow.
            let shadows = want == Want::Module
                || globs.iter().all(|glob| {
                    self.glob_module(m, glob, depth).is_some_and(|g| {
                        [Want::Fn, Want::Struct]
                            .into_iter()
                            .all(|w| matches!(self.lookup(&g, name, w, depth + 1), Lookup::Absent))
                    })
                });
            return if shadows {
                Lookup::Found(found)
            } else {
                Lookup::Unknown
            };
        }
        let mut bringing = Vec::new();
        for glob in globs {
            let Some(module) = self.glob_module(m, &glob, depth) else {
                return Lookup::Unknown;
            };
            // A glob brings the private items of an ancestor only.
            let ancestor = glob.iter().all(|s| s == "super" || s == "self");
            match self.lookup(&module, name, want, depth + 1) {
                Lookup::Found(names) => {
                    if !ancestor
                        && names
                            .iter()
                            .any(|n| matches!(n, Name::Item { public: false, .. }))
                    {
                        return Lookup::Unknown;
                    }
                    bringing.push(names);
                }
                Lookup::Absent => {}
                Lookup::Unknown => return Lookup::Unknown,
            }
        }
        match bringing.len() {
            0 => Lookup::Absent,
            1 => Lookup::Found(bringing.pop().unwrap_or_default()),
            _ => Lookup::Unknown,
        }
    }
}

/// The one module among `names`, if that is all they are.
fn one_module(mut names: Vec<Name>) -> Option<Rc<Module>> {
    match (names.pop(), names.is_empty()) {
        (Some(Name::Module(m)), true) => Some(m),
        _ => None,
    }
}

/// A function or struct found.
fn item_name(ident: &syn::Ident, attrs: &[syn::Attribute], vis: &syn::Visibility) -> Name {
    Name::Item {
        ident: ident.clone(),
        attrs: attrs.to_vec(),
        public: !matches!(vis, syn::Visibility::Inherited),
    }
}

/// The paths (from the `use`'s module) of the imports in `tree` that bring `name`, and the
/// module paths of its globs; `prefix` is the path so far.
fn use_leaves(
    tree: &syn::UseTree,
    prefix: &mut Vec<syn::Ident>,
    name: &syn::Ident,
    imports: &mut Vec<Vec<syn::Ident>>,
    globs: &mut Vec<Vec<syn::Ident>>,
) {
    let full = |prefix: &[syn::Ident], ident: &syn::Ident| {
        let mut p = prefix.to_vec();
        if ident != "self" {
            p.push(ident.clone());
        }
        p
    };
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.clone());
            use_leaves(&p.tree, prefix, name, imports, globs);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let brought = match (n.ident == "self", prefix.last()) {
                (true, Some(module)) => module,
                _ => &n.ident,
            };
            if brought == name {
                imports.push(full(prefix, &n.ident));
            }
        }
        syn::UseTree::Rename(r) => {
            if r.rename == *name {
                imports.push(full(prefix, &r.ident));
            }
        }
        syn::UseTree::Glob(_) => globs.push(prefix.clone()),
        syn::UseTree::Group(g) => g
            .items
            .iter()
            .for_each(|t| use_leaves(t, prefix, name, imports, globs)),
    }
}

/// A module's `#[path = ".."]`: `Some(None)` without one, `None` if it cannot be read.
fn path_attr(attrs: &[syn::Attribute]) -> Option<Option<String>> {
    let mut path = None;
    for a in attrs.iter().filter(|a| a.path().is_ident("path")) {
        let syn::Meta::NameValue(nv) = &a.meta else {
            return None;
        };
        let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) = &nv.value
        else {
            return None;
        };
        path = Some(s.value());
    }
    Some(path)
}

/// Attributes built into the language that neither move nor rewrite the item they are on:
/// documentation, lint levels, and `cfg` (which keeps it or drops it whole).
const INERT_ATTRIBUTES: &[&str] = &["doc", "allow", "warn", "deny", "expect", "forbid", "cfg"];

/// Whether `a` is one of `names`, or of [`INERT_ATTRIBUTES`].
pub(super) fn attribute_among(a: &syn::Attribute, names: &[&str]) -> bool {
    (INERT_ATTRIBUTES.iter().chain(names)).any(|n| a.path().is_ident(n))
}

/// Whether a module's attributes leave it where rustc's rules put it (no macro, no `cfg_attr`).
fn plain_attributes(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .all(|a| attribute_among(a, &["path", "macro_use"]))
}

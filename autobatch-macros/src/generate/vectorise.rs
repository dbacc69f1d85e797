//! Vector kernels: the `Vector` arithmetic of a lane-wise kernel compiled to fused element
//! loops over the rows in storage, bit-identical to the `Vector` operations of the scalar
//! function.
//!
//! The generic kernel ([`lane_kernel`](super::emit::lane_kernel)) evaluates the user's
//! expression per lane on owned `Vector`s: every vector input is copied out of storage, every
//! operation allocates its result, every output is copied back. Here the same code is compiled
//! instead, per lane:
//!
//! * vector inputs are read in place (and the rows of lanes a little ahead are prefetched);
//! * a vector value is an *element template*: element `__j` as a scalar expression over the
//!   rows it reads. `let`s of cheap element-wise vectors stay templates (recomputed where used,
//!   which is cheaper than storing and reloading them); others are written once into a scratch
//!   row allocated per kernel call;
//! * every `dot`, `sum` and `norm_squared` of a statement is computed in one loop before it,
//!   each summing in exactly the order [`Vector`] documents; a pure element-wise reduction is
//!   hoisted out of `&&`, `||` and `if` to where its operands exist (it cannot fail or have an
//!   effect, so computing it where the scalar function might skip it changes nothing);
//! * vector outputs are written in the kernel's last unconditional reduction loop where
//!   their elements can be computed there (that loop already reads their rows), and the rest by
//!   one loop at the end;
//! * the lane loop is written twice, and the runtime's `cpu` chooses which runs: the first
//!   copy, compiled for AVX2 (through `with_avx2`), where the CPU has it, else the portable
//!   second; reductions walk
//!   four elements at a time, so a dot's four partial sums are one vector register (one AVX
//!   `F64x4Avx` in the first copy, two SSE2 halves in the portable `F64x4`), and a loop of
//!   several dots keeps every accumulator in registers.
//!
//! Each element goes through the same IEEE operations, in the same order, as in the `Vector`
//! methods, so results are equal bit for bit. Scalar code is emitted as written, with every
//! binding renamed uniquely (so blocks can be flattened without shadowing surprises) and the
//! right-hand sides of `&&` / `||` and the branches of `if` kept conditional.
//!
//! The subset: `+ - * /` between vectors and `f64`s, unary `-`, `&`, parentheses, `.clone()`,
//! `.map(f)`, `.zip_map(&w, f)`, `Vector::filled_like(x, &v)`, `.dot(&w)`, `.sum()`,
//! `.norm_squared()`, `.get(i)`, with blocks, `let`s and scalar code around them. A kernel with
//! anything else touching a vector (a key method that makes one, a vector-valued `if`, a tuple
//! holding one) is not compiled here: [`vector_kernel`] returns `None` and the generic kernel
//! is used.
//!
//! [`Vector`]: ../../../autobatch_runtime/vector/struct.Vector.html

use super::names::{format_ident, quote};
use super::runtime::{leaf_paths, Runtime};
use crate::parse::ast::{BinOp, Block, Expr, ExprKind, Pat, Stmt, Ty};
use proc_macro2::{Delimiter, Ident, TokenStream, TokenTree};

/// Element-wise operations above which a vector `let` is stored in a scratch row instead of
/// being recomputed at each use.
const VIRTUAL_OPS: usize = 8;

/// The compiled form of a lane-wise kernel whose inputs are `inputs` (bound by name, leaves in
/// order), computing `body` of type `out_ty`; `None` if it touches no vector or leaves the
/// compiled subset.
pub fn vector_kernel(
    rt: &Runtime,
    inputs: &[(Ident, Ty)],
    body: &Expr,
    out_ty: &Ty,
) -> Option<TokenStream> {
    let rtp = rt.path();
    let mut c = Compiler {
        rt: rt.clone(),
        lists: Vec::new(),
        scopes: Vec::new(),
        scratch: 0,
        fresh: 0,
    };
    c.lists.push(List::default());
    c.scopes.push(Vec::new());
    let mut accessors = Vec::new();
    let mut prefetches = Vec::new();
    let mut width = None;
    let mut next = 0usize;
    for (name, ty) in inputs {
        let leaves = leaf_paths(ty, quote!());
        for (i, (leaf, _)) in leaves.iter().enumerate() {
            let acc = format_ident!("__i{}", next + i);
            let el = match leaf {
                Ty::Vector => quote!(f64),
                other => rt.rust_type(other),
            };
            let idx = next + i;
            accessors.push(quote!(let #acc = __ins.rows::<#el>(#idx)?;));
        }
        match ty {
            Ty::Vector => {
                let acc = format_ident!("__i{next}");
                let row = format_ident!("__x{next}");
                c.emit(quote!(let #row: &[f64] = #acc.row(__lane);));
                prefetches.push(quote!(#acc.prefetch(__ahead);));
                width.get_or_insert_with(|| quote!(#acc.width()));
                c.bind(name, Sym::Vector(Elems::row(row, 0)));
            }
            t if contains_vector(t) => return None,
            t => {
                let rty = rt.rust_type(t);
                let value = read_scalars(t, &mut next.clone());
                let id = c.unique(name);
                c.emit(quote!(let #id: #rty = #value;));
                c.bind(name, Sym::Value(id, 0));
            }
        }
        next += leaves.len();
    }
    // Without a vector input there is no vector to compile (and no length to give one).
    let width = width?;
    let mut outs = Vec::new();
    let mut wrappers = Vec::new();
    for (i, (leaf, _)) in leaf_paths(out_ty, quote!()).iter().enumerate() {
        let o = format_ident!("__o{i}");
        outs.push(o.clone());
        wrappers.push(match leaf {
            Ty::Vector => quote!(let mut #o = #o.vectors()?;),
            other => {
                let el = rt.rust_type(other);
                quote!(let #o = #o.slice::<#el>()?;)
            }
        });
    }
    let mut fills: Vec<(TokenStream, Elems)> = Vec::new();
    c.output(body, out_ty, &mut 0, &mut fills)?;
    c.flush(0);
    c.write_outputs(fills);
    let body = std::mem::take(&mut c.lists[0].stmts);
    let n_outs = outs.len();
    let count = c.scratch;
    let scratch = (0..count).map(|i| {
        let s = format_ident!("__s{i}");
        quote!(let (#s, __rest) = __rest.split_at_mut(__n);)
    });
    // The loop is written twice, once per quad type: `__cpu` is the proof of AVX2 in the
    // first copy, which then computes in `F64x4Avx`, and portable in the second (`F64x4`).
    let lane_loop = quote! {
        for (__k, &__lane) in __lanes.iter().enumerate() {
            __ins.at(__k);
            if let ::std::option::Option::Some(&__ahead) = __lanes.get(__k + #rtp::PREFETCH_AHEAD) {
                #(#prefetches)*
            }
            #(#body)*
        }
    };
    Some(quote! {
        #rtp::Kernel::lane_wise(|__ins: &#rtp::LaneInputs<'_>, __outs: &mut #rtp::LaneOutputs<'_>| -> ::std::result::Result<(), #rtp::KernelError> {
            #(#accessors)*
            let [#(#outs),*] = __outs.leaves::<#n_outs>()?;
            #(#wrappers)*
            let __n: usize = #width;
            let mut __scratch = #rtp::Scratch::new(#count * __n);
            let __rest: &mut [f64] = &mut __scratch;
            #(#scratch)*
            let __lanes = __ins.lanes();
            match #rtp::cpu() {
                #rtp::Cpu::Avx2Fma(__avx) => #rtp::with_avx2(__avx, #[inline(always)] |__cpu| { #lane_loop }),
                #rtp::Cpu::Portable(__cpu) => { #lane_loop }
            }
            ::std::result::Result::Ok(())
        })
    })
}

/// True if a value of type `t` holds a vector anywhere.
fn contains_vector(t: &Ty) -> bool {
    match t {
        Ty::Vector => true,
        Ty::Tuple(items) => items.iter().any(contains_vector),
        Ty::Struct { .. } => t.has_vector(),
        Ty::Scalar(_) => false,
    }
}

/// An expression reading a scalar-only value of type `t` from input leaves `*next..`.
fn read_scalars(t: &Ty, next: &mut usize) -> TokenStream {
    match t {
        Ty::Tuple(items) => {
            let parts = items.iter().map(|i| read_scalars(i, next));
            quote!((#(#parts,)*))
        }
        _ => {
            let acc = format_ident!("__i{}", *next);
            *next += 1;
            quote!(#acc.scalar(__lane))
        }
    }
}

/// What a name of the user's stands for.
#[derive(Clone)]
enum Sym {
    /// A vector.
    Vector(Elems),
    /// A value without vectors, bound to this unique name in the list at this depth.
    Value(Ident, usize),
}

/// A compiled value; `level` is the depth of the deepest statement list that defines a name
/// it reads (the value exists in that list and the lists nested in it).
enum Compiled {
    /// A value without vectors: the Rust expression computing it.
    Scalar(TokenStream, usize),
    /// A vector, element by element.
    Vector(Elems),
}

/// A vector as an element template: element `__j` is `elem`, which indexes the slices in
/// `sources` (each exactly `__n` long).
#[derive(Clone)]
struct Elems {
    elem: TokenStream,
    sources: Vec<Ident>,
    level: usize,
    /// Element-wise operations in `elem`.
    ops: usize,
    /// `elem` calls a function (`map`, `zip_map`): not free to recompute or to hoist.
    calls: bool,
}

impl Elems {
    fn row(src: Ident, level: usize) -> Elems {
        Elems {
            elem: quote!(#src[__j]),
            sources: vec![src],
            level,
            ops: 0,
            calls: false,
        }
    }

    /// A template combining `self` with `other` through `elem`.
    fn join(mut self, other: Elems, elem: TokenStream) -> Elems {
        merge_sources(&mut self.sources, other.sources);
        Elems {
            elem,
            sources: self.sources,
            level: self.level.max(other.level),
            ops: self.ops + other.ops + 1,
            calls: self.calls || other.calls,
        }
    }
}

/// One reduction waiting for its list's next loop.
struct Reduction {
    /// The name its result is bound to.
    result: Ident,
    kind: ReductionKind,
}

enum ReductionKind {
    /// `a.dot(b)`: elements multiplied, summed in four interleaved partial sums.
    Dot(Elems, Elems),
    /// `a.sum()`: elements summed left to right.
    Sum(Elems),
}

/// Statements being emitted at one nesting depth, and the reductions waiting to be computed
/// before the next of them.
#[derive(Default)]
struct List {
    stmts: Vec<TokenStream>,
    pending: Vec<Reduction>,
    /// The last reduction loop emitted here: its index in `stmts` and its reductions (so the
    /// loop can be written again with the kernel's vector outputs in it).
    last_loop: Option<(usize, Vec<Reduction>)>,
}

struct Compiler {
    /// How the generated code names the runtime.
    rt: Runtime,
    /// Nested statement lists; the last is where code goes now.
    lists: Vec<List>,
    scopes: Vec<Vec<(String, Sym)>>,
    /// Scratch rows allocated so far (`__s0..`).
    scratch: usize,
    /// Names made so far.
    fresh: usize,
}

impl Compiler {
    fn depth(&self) -> usize {
        self.lists.len() - 1
    }

    fn bind(&mut self, name: &Ident, sym: Sym) {
        let scope = self.scopes.last_mut().expect("a scope");
        scope.push((name.to_string(), sym));
    }

    fn lookup(&self, name: &str) -> Option<&Sym> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.iter().rev().find(|(n, _)| n == name).map(|(_, sym)| sym))
    }

    fn fresh(&mut self, prefix: &str) -> Ident {
        self.fresh += 1;
        format_ident!("__{}{}", prefix, self.fresh - 1)
    }

    /// A unique name for a binding of the user's called `name`.
    fn unique(&mut self, name: &Ident) -> Ident {
        self.fresh += 1;
        format_ident!(
            "__{}_{}",
            name.to_string().trim_start_matches("r#"),
            self.fresh - 1
        )
    }

    /// Appends a statement to the current list, after the reductions waiting there.
    fn emit(&mut self, stmt: TokenStream) {
        let d = self.depth();
        self.flush(d);
        self.lists[d].stmts.push(stmt);
    }

    /// Computes the reductions waiting in list `depth` in one loop.
    fn flush(&mut self, depth: usize) {
        let pending = std::mem::take(&mut self.lists[depth].pending);
        if !pending.is_empty() {
            let code = reduction_loop(self.rt.path(), &pending, &[]);
            let list = &mut self.lists[depth];
            list.stmts.push(code);
            list.last_loop = Some((list.stmts.len() - 1, pending));
        }
    }

    /// Writes the vector outputs `fills` that can be into the kernel's last unconditional
    /// reduction loop (which already walks the rows they read, so the rows are read once, not
    /// twice) and the rest in a loop of their own at the end. An output goes into the loop
    /// when its elements are plain arithmetic (no `map` or `zip_map`: quads compute it) and
    /// read nothing defined by the loop or after it (an identifier check over the generated
    /// code, on the side of caution). Outputs are rows of their own, read by nothing in the
    /// kernel, so writing them earlier changes no value.
    fn write_outputs(&mut self, fills: Vec<(TokenStream, Elems)>) {
        let rtp = self.rt.path().clone();
        let list = &mut self.lists[0];
        let (early, late): (Vec<_>, Vec<_>) = match &list.last_loop {
            Some((at, pending)) if quad_loop(pending) => {
                let mut later: Vec<String> = pending.iter().map(|r| r.result.to_string()).collect();
                for stmt in &list.stmts[at + 1..] {
                    identifiers(stmt.clone(), &mut later);
                }
                fills.into_iter().partition(|(_, el)| {
                    let mut read = Vec::new();
                    identifiers(el.elem.clone(), &mut read);
                    !el.calls && read.iter().all(|i| i == "__j" || !later.contains(i))
                })
            }
            _ => (Vec::new(), fills),
        };
        if let (false, Some((at, pending))) = (early.is_empty(), &list.last_loop) {
            list.stmts[*at] = reduction_loop(&rtp, pending, &early);
        }
        if !late.is_empty() {
            list.stmts.push(fill_loop(&late));
        }
    }

    /// Registers a reduction in the shallowest list where its operands exist (a pure
    /// element-wise one may leave conditional code; one calling functions stays in the current
    /// list); its result is readable at once in the current statement.
    fn reduce(&mut self, kind: ReductionKind) -> Compiled {
        let (level, calls) = match &kind {
            ReductionKind::Dot(a, b) => (a.level.max(b.level), a.calls || b.calls),
            ReductionKind::Sum(a) => (a.level, a.calls),
        };
        let target = if calls { self.depth() } else { level };
        let result = self.fresh("rd");
        self.lists[target].pending.push(Reduction {
            result: result.clone(),
            kind,
        });
        Compiled::Scalar(quote!(#result), target)
    }

    /// Compiles `e` in a list of its own (code that runs only sometimes: an `if` branch, the
    /// right side of `&&`); the value is an expression, a block when statements were needed.
    fn conditional(
        &mut self,
        e: impl FnOnce(&mut Self) -> Option<Compiled>,
    ) -> Option<(TokenStream, usize)> {
        self.lists.push(List::default());
        self.scopes.push(Vec::new());
        let value = e(self);
        self.scopes.pop();
        let d = self.depth();
        self.flush(d);
        let list = self.lists.pop().expect("pushed");
        let (t, level) = match value? {
            Compiled::Scalar(t, level) => (t, level),
            Compiled::Vector(_) => return None,
        };
        let stmts = list.stmts;
        let t = if stmts.is_empty() {
            t
        } else {
            quote!({ #(#stmts)* #t })
        };
        Some((t, level.min(d - 1)))
    }

    /// Stores the value of `e` (of type `ty`) into output leaves `*next..` for lane `__k`;
    /// vector leaves are added to `fills` for the final loop.
    fn output(
        &mut self,
        e: &Expr,
        ty: &Ty,
        next: &mut usize,
        fills: &mut Vec<(TokenStream, Elems)>,
    ) -> Option<()> {
        if !contains_vector(ty) {
            let Compiled::Scalar(t, _) = self.compile(e)? else {
                return None;
            };
            let r = self.fresh("r");
            let rty = self.rt.rust_type(ty);
            self.emit(quote!(let #r: #rty = #t;));
            for (_, path) in leaf_paths(ty, quote!(#r)) {
                let o = format_ident!("__o{}", *next);
                *next += 1;
                self.emit(quote!(#o[__k] = #path;));
            }
            return Some(());
        }
        match (&e.kind, ty) {
            (ExprKind::Block(b), _) => {
                self.scopes.push(Vec::new());
                let done = self.stmts(&b.stmts).and_then(|()| match &b.tail {
                    Some(tail) => self.output(tail, ty, next, fills),
                    None => None,
                });
                self.scopes.pop();
                done
            }
            (ExprKind::Tuple(items), Ty::Tuple(tys)) if items.len() == tys.len() => {
                for (item, ty) in items.iter().zip(tys) {
                    self.output(item, ty, next, fills)?;
                }
                Some(())
            }
            (_, Ty::Vector) => {
                let Compiled::Vector(el) = self.compile(e)? else {
                    return None;
                };
                let o = format_ident!("__o{}", *next);
                *next += 1;
                fills.push((quote!(#o.row_mut(__k)), el));
                Some(())
            }
            _ => None,
        }
    }

    /// The statements of a block but its value, emitted into the current list.
    fn stmts(&mut self, stmts: &[Stmt]) -> Option<()> {
        for s in stmts {
            match s {
                Stmt::Let { pat, ty, init } => self.local(pat, ty.as_ref(), init)?,
                Stmt::Expr(e) => match self.compile(e)? {
                    Compiled::Scalar(t, _) => self.emit(quote!(#t;)),
                    // A vector computed and dropped: nothing to do.
                    Compiled::Vector(_) => {}
                },
            }
        }
        Some(())
    }

    fn local(&mut self, pat: &Pat, annotated: Option<&Ty>, init: &Expr) -> Option<()> {
        let declared = annotated.map(kind_of_type);
        match self.compile(init)? {
            Compiled::Scalar(t, _) => {
                if matches!(declared, Some(Kind::Vector | Kind::Opaque)) {
                    return None;
                }
                let mut names = Vec::new();
                let pat = self.rename(pat, &mut names);
                let ty = annotated.map(|t| {
                    let t = self.rt.rust_type(t);
                    quote!(: #t)
                });
                self.emit(quote!(let #pat #ty = #t;));
                let d = self.depth();
                for (name, id) in names {
                    self.bind(&name, Sym::Value(id, d));
                }
                Some(())
            }
            Compiled::Vector(el) => {
                if matches!(declared, Some(Kind::Value | Kind::Opaque)) {
                    return None;
                }
                match pat {
                    Pat::Wild => Some(()),
                    Pat::Ident(id) => {
                        let el = if el.calls || el.ops > VIRTUAL_OPS {
                            self.materialize(el)
                        } else {
                            el
                        };
                        self.bind(id, Sym::Vector(el));
                        Some(())
                    }
                    Pat::Tuple(_) => None,
                }
            }
        }
    }

    /// Writes `el` into a fresh scratch row now; the row is its template from then on.
    fn materialize(&mut self, el: Elems) -> Elems {
        let s = format_ident!("__s{}", self.scratch);
        self.scratch += 1;
        let fill = fill_loop(&[(quote!(#s), el)]);
        self.emit(fill);
        Elems::row(s, self.depth())
    }

    /// `pat` with every bound name replaced by a unique one; `(name, unique)` pairs go to
    /// `names`.
    fn rename(&mut self, pat: &Pat, names: &mut Vec<(Ident, Ident)>) -> TokenStream {
        match pat {
            Pat::Ident(id) => {
                let unique = self.unique(id);
                names.push((id.clone(), unique.clone()));
                quote!(#unique)
            }
            Pat::Wild => quote!(_),
            Pat::Tuple(ps) => {
                let parts: Vec<TokenStream> = ps.iter().map(|p| self.rename(p, names)).collect();
                quote!((#(#parts,)*))
            }
        }
    }

    /// A scalar operand: its tokens and level, or `None` for a vector.
    fn scalar(&mut self, e: &Expr) -> Option<(TokenStream, usize)> {
        match self.compile(e)? {
            Compiled::Scalar(t, level) => Some((t, level)),
            Compiled::Vector(_) => None,
        }
    }

    fn compile(&mut self, e: &Expr) -> Option<Compiled> {
        match &e.kind {
            ExprKind::Lit { .. } | ExprKind::Const(_) => {
                Some(Compiled::Scalar(e.tokens.clone(), 0))
            }
            ExprKind::Var(id) => match self.lookup(&id.to_string()) {
                Some(Sym::Vector(el)) => Some(Compiled::Vector(el.clone())),
                Some(Sym::Value(unique, level)) => Some(Compiled::Scalar(quote!(#unique), *level)),
                None => Some(Compiled::Scalar(quote!(#id), 0)),
            },
            ExprKind::Ref(x) => self.compile(x).map(|v| wrap(v, |t| quote!((&#t)))),
            ExprKind::Unary(op, x) => match self.compile(x)? {
                Compiled::Scalar(t, level) => Some(Compiled::Scalar(quote!((#op #t)), level)),
                Compiled::Vector(mut el) if op.to_string() == "-" => {
                    let x = &el.elem;
                    el.elem = quote!((-#x));
                    el.ops += 1;
                    Some(Compiled::Vector(el))
                }
                Compiled::Vector(_) => None,
            },
            ExprKind::Binary(op, op_tokens, l, r) => self.binary(*op, op_tokens, l, r),
            ExprKind::Cast(x, _, ty) => {
                let (t, level) = self.scalar(x)?;
                Some(Compiled::Scalar(quote!((#t as #ty)), level))
            }
            ExprKind::Field(x, i) => {
                let (t, level) = self.scalar(x)?;
                let idx = syn::Index::from(*i as usize);
                Some(Compiled::Scalar(quote!(#t.#idx), level))
            }
            ExprKind::Tuple(xs) => {
                let mut items = Vec::new();
                let mut level = 0;
                for x in xs {
                    let (t, l) = self.scalar(x)?;
                    items.push(t);
                    level = level.max(l);
                }
                Some(Compiled::Scalar(quote!((#(#items,)*)), level))
            }
            ExprKind::Method(recv, name, args) => self.method(recv, name, args),
            ExprKind::Assoc(ty, f, args) => self.assoc(ty, f, args),
            ExprKind::If(cond, then, els) => {
                let (cond, cl) = self.scalar(cond)?;
                let (then_, tl) = self.conditional(|c| c.block(then))?;
                let (else_, el) = match els {
                    Some(e) => {
                        let (t, l) = self.conditional(|c| c.compile(e))?;
                        (quote!(else { #t }), l)
                    }
                    None => (quote!(), 0),
                };
                Some(Compiled::Scalar(
                    quote!((if #cond { #then_ } #else_)),
                    cl.max(tl).max(el),
                ))
            }
            ExprKind::Block(b) => self.block(b),
            _ => None,
        }
    }

    /// A block's value, its statements flattened into the current list (names are unique).
    fn block(&mut self, b: &Block) -> Option<Compiled> {
        self.scopes.push(Vec::new());
        let value = self.stmts(&b.stmts).and_then(|()| match &b.tail {
            Some(tail) => self.compile(tail),
            None => Some(Compiled::Scalar(quote!(()), 0)),
        });
        self.scopes.pop();
        value
    }

    fn binary(
        &mut self,
        op: BinOp,
        op_tokens: &TokenStream,
        l: &Expr,
        r: &Expr,
    ) -> Option<Compiled> {
        if matches!(op, BinOp::And | BinOp::Or) {
            let (l, ll) = self.scalar(l)?;
            let (r, rl) = self.conditional(|c| c.compile(r))?;
            return Some(Compiled::Scalar(quote!((#l #op_tokens #r)), ll.max(rl)));
        }
        let l = self.compile(l)?;
        let r = self.compile(r)?;
        let arith = matches!(op_tokens.to_string().as_str(), "+" | "-" | "*" | "/");
        Some(match (l, r) {
            (Compiled::Scalar(l, ll), Compiled::Scalar(r, rl)) => {
                Compiled::Scalar(quote!((#l #op_tokens #r)), ll.max(rl))
            }
            (Compiled::Vector(l), Compiled::Vector(r)) if arith => {
                let elem = {
                    let (le, re) = (&l.elem, &r.elem);
                    quote!((#le #op_tokens #re))
                };
                Compiled::Vector(l.join(r, elem))
            }
            (Compiled::Vector(l), Compiled::Scalar(r, rl)) if arith => {
                let c = self.constant(r, rl);
                let elem = {
                    let le = &l.elem;
                    quote!((#le #op_tokens #c))
                };
                Compiled::Vector(l.join(c.into_elems(), elem))
            }
            (Compiled::Scalar(l, ll), Compiled::Vector(r)) if arith => {
                let c = self.constant(l, ll);
                let elem = {
                    let re = &r.elem;
                    quote!((#c #op_tokens #re))
                };
                Compiled::Vector(c.into_elems().join(r, elem))
            }
            _ => return None,
        })
    }

    /// A scalar that a vector operation uses for every element, evaluated once: a literal or
    /// a name stays as it is, anything else is bound to a new name first.
    fn constant(&mut self, t: TokenStream, level: usize) -> Constant {
        // A reduction's result is not computed until its loop runs: bind it here (which runs
        // that loop first) so it can be read inside another loop.
        let pending = self
            .lists
            .iter()
            .flat_map(|l| &l.pending)
            .any(|r| r.result == t.to_string());
        if !pending && is_name_or_literal(&t) {
            return Constant { tokens: t, level };
        }
        let c = self.fresh("c");
        self.emit(quote!(let #c: f64 = #t;));
        Constant {
            tokens: quote!(#c),
            level: self.depth(),
        }
    }

    fn method(&mut self, recv: &Expr, method: &Ident, args: &[Expr]) -> Option<Compiled> {
        let recv = self.compile(recv)?;
        let name = method.to_string();
        let el = match recv {
            Compiled::Scalar(r, mut level) => {
                let mut ts = Vec::new();
                for a in args {
                    let (t, l) = self.scalar(a)?;
                    ts.push(t);
                    level = level.max(l);
                }
                return Some(Compiled::Scalar(quote!(#r.#method(#(#ts),*)), level));
            }
            Compiled::Vector(el) => el,
        };
        match (name.as_str(), args) {
            ("clone", []) => Some(Compiled::Vector(el)),
            ("map", [f]) => {
                let (f, fl) = self.scalar(f)?;
                let fname = self.fresh("f");
                self.emit(quote!(let #fname = #f;));
                let x = &el.elem;
                let elem = quote!(#fname(#x));
                let level = el.level.max(fl).max(self.depth());
                Some(Compiled::Vector(Elems {
                    elem,
                    level,
                    ops: el.ops + 1,
                    calls: true,
                    ..el
                }))
            }
            ("zip_map", [other, f]) => {
                let Compiled::Vector(other) = self.compile(other)? else {
                    return None;
                };
                let (f, fl) = self.scalar(f)?;
                let fname = self.fresh("f");
                self.emit(quote!(let #fname = #f;));
                let elem = {
                    let (x, y) = (&el.elem, &other.elem);
                    quote!(#fname(#x, #y))
                };
                let mut joined = el.join(other, elem);
                joined.calls = true;
                joined.level = joined.level.max(fl).max(self.depth());
                Some(Compiled::Vector(joined))
            }
            ("dot", [other]) => {
                let Compiled::Vector(other) = self.compile(other)? else {
                    return None;
                };
                Some(self.reduce(ReductionKind::Dot(el, other)))
            }
            ("norm_squared", []) => Some(self.reduce(ReductionKind::Dot(el.clone(), el))),
            ("sum", []) => Some(self.reduce(ReductionKind::Sum(el))),
            ("get", [i]) => {
                let (i, il) = self.scalar(i)?;
                let elem = &el.elem;
                let level = el.level.max(il);
                Some(Compiled::Scalar(
                    quote!({ let __j: usize = #i; #elem }),
                    level,
                ))
            }
            _ => None,
        }
    }

    /// `Type::function(args)`: `Vector::filled_like` and `Vector::clone` on vectors, any
    /// other as scalar code.
    fn assoc(&mut self, ty: &Ident, f: &Ident, args: &[Expr]) -> Option<Compiled> {
        let on_vector = ty == "Vector";
        match (f.to_string().as_str(), args) {
            ("clone", [x]) => match self.compile(x)? {
                Compiled::Vector(el) => Some(Compiled::Vector(el)),
                Compiled::Scalar(t, level) => Some(Compiled::Scalar(quote!(#ty::#f(#t)), level)),
            },
            ("filled_like", [value, like]) if on_vector => {
                let (value, vl) = self.scalar(value)?;
                // Only the length of `like` matters, and every vector has the run's length.
                let Compiled::Vector(_) = self.compile(like)? else {
                    return None;
                };
                Some(Compiled::Vector(self.constant(value, vl).into_elems()))
            }
            _ if on_vector => None,
            _ => {
                let mut ts = Vec::new();
                let mut level = 0;
                for a in args {
                    let (t, l) = self.scalar(a)?;
                    ts.push(t);
                    level = level.max(l);
                }
                Some(Compiled::Scalar(quote!(#ty::#f(#(#ts),*)), level))
            }
        }
    }
}

/// A scalar used for every element of a vector operation.
struct Constant {
    tokens: TokenStream,
    level: usize,
}

impl Constant {
    /// The constant as a template of its own (every element the same).
    fn into_elems(self) -> Elems {
        let t = self.tokens;
        Elems {
            elem: quote!(#t),
            sources: Vec::new(),
            level: self.level,
            ops: 0,
            calls: false,
        }
    }
}

impl quote::ToTokens for Constant {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.tokens.to_tokens(tokens);
    }
}

/// Adds the slices of `more` that `sources` does not name yet.
fn merge_sources(sources: &mut Vec<Ident>, more: impl IntoIterator<Item = Ident>) {
    for s in more {
        if !sources.contains(&s) {
            sources.push(s);
        }
    }
}

/// Applies `f` to a scalar's tokens; a vector passes through (`&v` and `(v)` are `v`).
fn wrap(v: Compiled, f: impl FnOnce(TokenStream) -> TokenStream) -> Compiled {
    match v {
        Compiled::Scalar(t, level) => Compiled::Scalar(f(t), level),
        vector => vector,
    }
}

/// Every source re-sliced to exactly `__n` elements, so loops index without bounds checks.
fn exact<'a>(templates: impl IntoIterator<Item = &'a Elems>) -> TokenStream {
    let mut sources = Vec::new();
    for t in templates {
        merge_sources(&mut sources, t.sources.iter().cloned());
    }
    quote!(#(let #sources: &[f64] = &#sources[..__n];)*)
}

/// One loop writing each template into its destination (an expression indexable as a
/// mutable slice of at least `__n` elements: a scratch row, an output row).
fn fill_loop(fills: &[(TokenStream, Elems)]) -> TokenStream {
    let dests = fills.iter().enumerate().map(|(i, (d, _))| {
        let name = format_ident!("__d{i}");
        quote!(let #name: &mut [f64] = &mut #d[..__n];)
    });
    let writes = fills.iter().enumerate().map(|(i, (_, el))| {
        let name = format_ident!("__d{i}");
        let e = &el.elem;
        quote!(#name[__j] = #e;)
    });
    let exact = exact(fills.iter().map(|(_, el)| el));
    quote!({
        #(#dests)*
        #exact
        for __j in 0..__n {
            #(#writes)*
        }
    })
}

/// One loop computing every reduction of `pending`, binding each result to its name. A dot
/// sums element `i` into partial sum `i % 4` and combines them as `(s0 + s1) + (s2 + s3)`; a
/// sum adds elements left to right from `0.0`: the orders `Vector::dot` and `Vector::sum` use.
///
/// The loop walks the sources four elements at a time, then over the remaining elements. In
/// the first part each source is its chunk of four: as a quad loaded through the loop copy's
/// `__cpu` (an `F64x4Avx` or an [`F64x4`]) indexed by `Quad` (the element templates then
/// compute four elements per operation in vector registers, and a dot's four partial sums are
/// one quad), or, when a template calls a function (`map`, `zip_map`), as a `[f64; 4]` indexed
/// element by element.
///
/// The loop also writes each of `fills` (a vector output and its template; only in a quad
/// loop, and only templates that call nothing) into its destination, four elements at a time
/// and then the rest, element by element as [`fill_loop`] does.
///
/// [`F64x4`]: ../../../autobatch_runtime/__private/struct.F64x4.html
fn reduction_loop(
    rtp: &TokenStream,
    pending: &[Reduction],
    fills: &[(TokenStream, Elems)],
) -> TokenStream {
    let quad = quad_loop(pending);
    let mut inits = Vec::new();
    let mut chunk_steps = Vec::new();
    let mut tail_steps = Vec::new();
    let mut results = Vec::new();
    let mut templates = Vec::new();
    for (i, r) in pending.iter().enumerate() {
        let acc = format_ident!("__a{i}");
        let result = &r.result;
        match &r.kind {
            ReductionKind::Dot(a, b) => {
                let (ae, be) = (&a.elem, &b.elem);
                chunk_steps.push(quote!(#acc[__j] += #ae * #be;));
                if quad {
                    inits.push(quote!(let mut #acc = __cpu.zero();));
                    tail_steps.push(quote!(#acc.add_at(__j, #ae * #be);));
                    results.push(quote!(let #result: f64 = #acc.combine();));
                } else {
                    inits.push(quote!(let mut #acc = [0.0f64; 4];));
                    tail_steps.push(quote!(#acc[__j] += #ae * #be;));
                    results.push(
                        quote!(let #result: f64 = (#acc[0] + #acc[1]) + (#acc[2] + #acc[3]);),
                    );
                }
                templates.extend([a, b]);
            }
            ReductionKind::Sum(a) => {
                let ae = &a.elem;
                inits.push(quote!(let mut #acc: f64 = 0.0;));
                chunk_steps.push(if quad {
                    quote!(#acc = #rtp::sum_onto(#acc, #ae);)
                } else {
                    quote!(#acc = #acc + #ae;)
                });
                tail_steps.push(quote!(#acc = #acc + #ae;));
                results.push(quote!(let #result: f64 = #acc;));
                templates.push(a);
            }
        }
    }
    debug_assert!(quad || fills.is_empty(), "outputs only in a quad loop");
    let mut dests = Vec::new();
    let mut dest_chunks = Vec::new();
    for (i, (d, el)) in fills.iter().enumerate() {
        let (name, tail) = (format_ident!("__d{i}"), format_ident!("__dt{i}"));
        let e = &el.elem;
        dests.push(quote!(let (#name, #tail) = #d[..__n].as_chunks_mut::<4>();));
        dest_chunks.push(name.clone());
        chunk_steps.push(quote!(*#name = #rtp::Four::elements(#e);));
        tail_steps.push(quote!(#tail[__j] = #e;));
        templates.push(el);
    }
    let mut sources = Vec::new();
    for t in &templates {
        merge_sources(&mut sources, t.sources.iter().cloned());
    }
    let exact = exact(templates);
    let chunks: Vec<Ident> = sources.iter().map(|s| format_ident!("__ck{s}")).collect();
    let tails: Vec<Ident> = sources.iter().map(|s| format_ident!("__tl{s}")).collect();
    let mut pattern = quote!(_);
    let mut walk = quote!(0..__n / 4);
    // Each source walks as its chunks, each output's destination as its own (bound by the
    // destination's name, a chunk of four at each step).
    let walked = sources
        .iter()
        .zip(&chunks)
        .chain(dest_chunks.iter().zip(&dest_chunks));
    for (s, c) in walked {
        pattern = quote!((#pattern, #s));
        walk = quote!((#walk).zip(#c));
    }
    let chunk_body = if quad {
        quote!(
            #(let #sources = __cpu.load(#sources);)*
            let __j = #rtp::Quad;
            #(#chunk_steps)*
        )
    } else {
        quote!(for __j in 0..4 {
            #(#chunk_steps)*
        })
    };
    let names = pending.iter().map(|r| &r.result);
    let values = pending.iter().map(|r| &r.result);
    quote!(
        let (#(#names,)*) = {
            #exact
            #(#dests)*
            #(let (#chunks, #tails) = #sources.as_chunks::<4>();)*
            #(#inits)*
            for #pattern in #walk {
                #chunk_body
            }
            #(let #sources: &[f64] = #tails;)*
            for __j in 0..__n % 4 {
                #(#tail_steps)*
            }
            #(#results)*
            (#(#values,)*)
        };
    )
}

/// True if every template of `pending` is plain arithmetic, so their loop computes in quads.
fn quad_loop(pending: &[Reduction]) -> bool {
    !pending.iter().any(|r| match &r.kind {
        ReductionKind::Dot(a, b) => a.calls || b.calls,
        ReductionKind::Sum(a) => a.calls,
    })
}

/// Adds every identifier in `tokens` (inside groups too) to `out`.
fn identifiers(tokens: TokenStream, out: &mut Vec<String>) {
    for t in tokens {
        match t {
            TokenTree::Ident(i) => out.push(i.to_string()),
            TokenTree::Group(g) => identifiers(g.stream(), out),
            TokenTree::Punct(_) | TokenTree::Literal(_) => {}
        }
    }
}

/// True for compiled scalar code that is a literal or a name (a path), under parentheses.
fn is_name_or_literal(t: &TokenStream) -> bool {
    let tokens: Vec<TokenTree> = t.clone().into_iter().collect();
    match tokens.as_slice() {
        [TokenTree::Group(g)]
            if matches!(g.delimiter(), Delimiter::Parenthesis | Delimiter::None) =>
        {
            is_name_or_literal(&g.stream())
        }
        [] => false,
        ts => ts.iter().all(|t| match t {
            TokenTree::Ident(_) | TokenTree::Literal(_) => true,
            TokenTree::Punct(p) => p.as_char() == ':',
            TokenTree::Group(_) => false,
        }),
    }
}

/// How a declared type is held.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Vector,
    Value,
    Opaque,
}

fn kind_of_type(t: &Ty) -> Kind {
    match t {
        Ty::Vector => Kind::Vector,
        Ty::Tuple(items) if items.iter().any(|i| kind_of_type(i) != Kind::Value) => Kind::Opaque,
        Ty::Tuple(_) | Ty::Scalar(_) => Kind::Value,
        Ty::Struct { .. } => Kind::Opaque,
    }
}

#[cfg(test)]
mod tests {
    use super::vector_kernel;
    use crate::generate::runtime::Runtime;
    use crate::parse::ast::Ty;
    use crate::parse::{expr::expr, Errors};
    use autobatch_ir::DType;
    use proc_macro2::Ident;
    use quote::format_ident;

    /// The compiled kernel for `body` over `inputs`, as text; `None` if it is not compiled.
    fn compiled(inputs: &[(&str, Ty)], body: syn::Expr, out: Ty) -> Option<String> {
        let mut errors = Errors::default();
        let body = expr(&body, &mut errors);
        assert!(errors.finish().is_ok());
        let inputs: Vec<(Ident, Ty)> = inputs
            .iter()
            .map(|(n, t)| (format_ident!("{n}"), t.clone()))
            .collect();
        vector_kernel(&Runtime::new(None), &inputs, &body, &out).map(|k| k.to_string())
    }

    const F64: Ty = Ty::Scalar(DType::F64);

    #[test]
    fn vector_arithmetic_and_reductions_become_element_loops() {
        let k = compiled(
            &[("q", Ty::Vector), ("p", Ty::Vector), ("eps", F64)],
            syn::parse_quote!(q.dot(&p) + eps),
            F64,
        )
        .expect("compiled");
        assert!(k.contains("__j"), "an element loop: {k}");
        let v = compiled(
            &[("q", Ty::Vector), ("p", Ty::Vector), ("eps", F64)],
            syn::parse_quote!({
                let s = &p * eps;
                &q + &s
            }),
            Ty::Vector,
        )
        .expect("compiled");
        assert!(
            v.contains("row_mut"),
            "the output row is written in place: {v}"
        );
    }

    /// A vector output whose template reads only what exists before the kernel's last
    /// reduction loop is written in that loop (no loop of its own over `__n`); one that reads
    /// the loop's result, or calls a function, gets the loop of its own.
    #[test]
    fn vector_outputs_are_written_in_the_last_reduction_loop_where_they_can_be() {
        let inputs = [("q", Ty::Vector), ("p", Ty::Vector), ("eps", F64)];
        let out = Ty::Tuple(vec![Ty::Vector, F64]);
        // Loops of its own over the elements, in each of the lane loop's two copies.
        let fill_loops = |k: &str| k.matches("for __j in 0 .. __n {").count() / 2;
        let fused = compiled(
            &inputs,
            syn::parse_quote!({
                let r = &q + &(eps * &p);
                let ok = q.dot(&r) > 0.0 && p.dot(&r) > 0.0;
                (r, if ok { 1.0 } else { 0.0 })
            }),
            out.clone(),
        )
        .expect("compiled");
        assert_eq!(fill_loops(&fused), 0, "written in the dot loop: {fused}");
        assert!(fused.contains("as_chunks_mut"), "{fused}");
        let reads_result = compiled(
            &inputs,
            syn::parse_quote!({
                let d = q.dot(&p);
                (&q * d, d)
            }),
            out.clone(),
        )
        .expect("compiled");
        assert_eq!(fill_loops(&reads_result), 1, "{reads_result}");
        let calls = compiled(
            &inputs,
            syn::parse_quote!((q.map(f64::abs), q.dot(&p))),
            out,
        )
        .expect("compiled");
        assert_eq!(fill_loops(&calls), 1, "{calls}");
    }

    #[test]
    fn kernels_outside_the_subset_keep_the_generic_form() {
        // No vector input: nothing to compile.
        assert_eq!(
            compiled(&[("x", F64)], syn::parse_quote!(x * 2.0), F64),
            None
        );
        // A key method making a vector.
        let key = Ty::Scalar(DType::Key);
        assert_eq!(
            compiled(
                &[("k", key.clone()), ("q", Ty::Vector)],
                syn::parse_quote!(k.normals_like(&q)),
                Ty::Tuple(vec![Ty::Vector, key]),
            ),
            None
        );
    }
}

//! Struct values flattened to their fields, before inference: every variable holding a struct
//! becomes one variable per field (`t.depth` is the variable `t__depth`, printed `t.depth`),
//! recursively through nested structs and tuples of structs, so the allocation is per field
//! (only the fields that live across a recursive call are FULL). A struct parameter is one
//! parameter per field, a struct result a tuple of its fields (one return variable each), a
//! struct literal (`Tree { depth: 0, ..base }`) the tuple of its fields in declaration order,
//! a field assignment (`t.depth += 1`, `t.inner = e`) an assignment of those fields. What
//! comes out has no struct left: inference and translation see tuples and leaves only.
//!
//! Kernels are the user's tokens: a chain of fields rooted at a struct variable (`t.inner.q`)
//! is rewritten in them to the field's variable (`t__inner__q`), the same name the AST uses.

use crate::parse::ast::{
    field_var, Block, Expr, ExprKind, Func, Pat, Signature, Stmt, StructLit, Ty,
};
use crate::parse::Errors;
use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use quote::quote;
use std::collections::BTreeMap;

/// Where the parts of a value holding a struct are.
#[derive(Clone, Debug, PartialEq)]
enum Shape {
    /// A part holding no struct: one variable, of this type if known.
    Plain(Option<Ty>),
    /// A struct: its path and its fields' shapes, in declaration order.
    Struct(String, Vec<(String, Shape)>),
    /// A tuple holding a struct.
    Tuple(Vec<Shape>),
}

impl Shape {
    /// The shape of a (resolved) type.
    fn of(t: &Ty) -> Shape {
        match t {
            Ty::Struct { path, fields } => Shape::Struct(
                path.clone(),
                fields
                    .iter()
                    .map(|(n, t)| (n.clone(), Shape::of(t)))
                    .collect(),
            ),
            Ty::Tuple(items) if t.has_struct() => {
                Shape::Tuple(items.iter().map(Shape::of).collect())
            }
            other => Shape::Plain(Some(other.clone())),
        }
    }

    /// The parts in order: the field path reaching each (`["inner", "q"]`) and its type.
    fn parts(&self) -> Vec<(Vec<String>, Option<Ty>)> {
        fn walk(s: &Shape, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, Option<Ty>)>) {
            match s {
                Shape::Plain(t) => out.push((path.clone(), t.clone())),
                Shape::Struct(_, fields) => {
                    for (n, f) in fields {
                        path.push(n.clone());
                        walk(f, path, out);
                        path.pop();
                    }
                }
                Shape::Tuple(items) => {
                    for (i, item) in items.iter().enumerate() {
                        path.push(i.to_string());
                        walk(item, path, out);
                        path.pop();
                    }
                }
            }
        }
        let mut out = Vec::new();
        walk(self, &mut Vec::new(), &mut out);
        out
    }

    /// The part at member `m` (a field name or a tuple index).
    fn member(&self, m: &str) -> Option<&Shape> {
        match self {
            Shape::Struct(_, fields) => fields.iter().find(|(n, _)| n == m).map(|(_, s)| s),
            Shape::Tuple(items) => m.parse::<usize>().ok().and_then(|i| items.get(i)),
            Shape::Plain(_) => None,
        }
    }

    fn is_plain(&self) -> bool {
        matches!(self, Shape::Plain(_))
    }

    /// The shape as users name it, for messages.
    fn describe(&self) -> String {
        match self {
            Shape::Plain(Some(t)) => crate::generate::infer::describe(t),
            Shape::Plain(None) => "a value".into(),
            Shape::Struct(p, _) => format!("`{p}`"),
            Shape::Tuple(items) => format!(
                "({})",
                items
                    .iter()
                    .map(Shape::describe)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// The types a struct-holding type is flattened to: one per part.
fn flat_types(t: &Ty) -> Vec<Ty> {
    Shape::of(t)
        .parts()
        .into_iter()
        .map(|(_, t)| t.expect("a type's parts have types"))
        .collect()
}

/// The type a value of type `t` has once flattened: itself without a struct, else its one
/// part or the tuple of its parts.
pub fn flat_type(t: &Ty) -> Ty {
    if !t.has_struct() {
        return t.clone();
    }
    let mut parts = flat_types(t);
    if parts.len() == 1 {
        parts.remove(0)
    } else {
        Ty::Tuple(parts)
    }
}

/// A signature with every struct flattened: parameters one per part, the result
/// [`flat_type`].
pub fn flat_signature(s: &Signature) -> Signature {
    Signature {
        params: s
            .params
            .iter()
            .flat_map(|t| {
                if t.has_struct() {
                    flat_types(t)
                } else {
                    vec![t.clone()]
                }
            })
            .collect(),
        ret: flat_type(&s.ret),
    }
}

/// The first struct `func` uses whose layout is not learnt yet: in its signature, its
/// callees' signatures, its `let` annotations, its struct literals, and (recursively) the
/// fields of the structs it knows.
pub fn unknown_struct(func: &Func) -> Option<String> {
    let mut types: Vec<Ty> = func.params.iter().map(|(_, t)| t.clone()).collect();
    types.push(func.ret.clone());
    for s in func.learnt.values() {
        types.extend(s.params.iter().cloned());
        types.push(s.ret.clone());
    }
    let mut literals = Vec::new();
    block_types(&func.body, &mut types, &mut literals);
    let mut out = Vec::new();
    for t in &types {
        t.resolved(&func.structs).unknown_structs(&mut out);
    }
    for p in literals {
        Ty::Struct {
            path: p,
            fields: Vec::new(),
        }
        .resolved(&func.structs)
        .unknown_structs(&mut out);
    }
    out.into_iter().next()
}

/// Every `let` annotation and struct literal path in `b`.
fn block_types(b: &Block, types: &mut Vec<Ty>, literals: &mut Vec<String>) {
    for s in &b.stmts {
        match s {
            Stmt::Let { ty, init, .. } => {
                types.extend(ty.iter().cloned());
                expr_types(init, types, literals);
            }
            Stmt::Expr(e) => expr_types(e, types, literals),
        }
    }
    if let Some(t) = &b.tail {
        expr_types(t, types, literals);
    }
}

fn expr_types(e: &Expr, types: &mut Vec<Ty>, literals: &mut Vec<String>) {
    if let ExprKind::Struct(lit) = &e.kind {
        literals.push(lit.path.clone());
    }
    if let ExprKind::Cast(_, t, _) = &e.kind {
        types.push(t.clone());
    }
    let (es, bs) = children(e);
    es.into_iter().for_each(|c| expr_types(c, types, literals));
    bs.into_iter().for_each(|b| block_types(b, types, literals));
}

/// The direct sub-expressions of `e` and the blocks directly in it.
fn children(e: &Expr) -> (Vec<&Expr>, Vec<&Block>) {
    let mut es: Vec<&Expr> = Vec::new();
    let mut bs: Vec<&Block> = Vec::new();
    match &e.kind {
        ExprKind::Lit { .. }
        | ExprKind::Var(_)
        | ExprKind::Const(_)
        | ExprKind::Uniform(_)
        | ExprKind::Continue(_)
        | ExprKind::Invalid => {}
        ExprKind::Binary(_, _, a, b) => es.extend([&**a, &**b]),
        ExprKind::Unary(_, a)
        | ExprKind::Cast(a, _, _)
        | ExprKind::Field(a, _)
        | ExprKind::NamedField(a, _)
        | ExprKind::Ref(a)
        | ExprKind::Assign(_, a, _) => es.push(a),
        ExprKind::Method(r, _, args) => {
            es.push(r);
            es.extend(args);
        }
        ExprKind::Assoc(_, _, args) | ExprKind::Call(_, args) | ExprKind::Tuple(args) => {
            es.extend(args)
        }
        ExprKind::Struct(lit) => {
            es.extend(lit.fields.iter().map(|(_, x)| x));
            es.extend(lit.base.as_deref());
        }
        ExprKind::If(c, t, e) => {
            es.push(c);
            bs.push(t);
            es.extend(e.as_deref());
        }
        ExprKind::While(_, c, b) => {
            es.push(c);
            bs.push(b);
        }
        ExprKind::For(l) => {
            es.extend([&l.lo, &l.hi]);
            es.extend(l.step.as_ref());
            bs.push(&l.body);
        }
        ExprKind::Loop(_, b) | ExprKind::Block(b) => bs.push(b),
        ExprKind::Break(_, v) | ExprKind::Return(v) => es.extend(v.as_deref()),
    }
    (es, bs)
}

/// The expressions of a block's statements and tail, in order.
fn block_exprs(b: &Block) -> Vec<&Expr> {
    let mut out: Vec<&Expr> = b
        .stmts
        .iter()
        .map(|s| match s {
            Stmt::Let { init, .. } => init,
            Stmt::Expr(e) => e,
        })
        .collect();
    out.extend(b.tail.as_deref());
    out
}

/// True if `e` calls a function anywhere (so where it is evaluated matters).
fn has_call(e: &Expr) -> bool {
    if matches!(e.kind, ExprKind::Call(..)) {
        return true;
    }
    let (es, bs) = children(e);
    es.into_iter().any(has_call) || bs.into_iter().flat_map(block_exprs).any(has_call)
}

/// `func` with its structs flattened (see the module's documentation); errors go to `errors`.
pub fn flatten(func: &Func, errors: &mut Errors) -> Func {
    let mut f = Flattener {
        func,
        errors,
        scopes: vec![Vec::new()],
        fresh: 0,
    };
    let mut params = Vec::new();
    for (name, t) in &func.params {
        let t = f.resolve(t);
        if t.has_struct() {
            let shape = Shape::of(&t);
            for (path, ty) in shape.parts() {
                let id = Ident::new(&part_name(&name.to_string(), &path), name.span());
                params.push((id, ty.expect("a type's parts have types")));
            }
            f.bind(name.to_string(), Some(shape));
        } else {
            f.bind(name.to_string(), None);
            params.push((name.clone(), t));
        }
    }
    let ret = f.resolve(&func.ret);
    let ret_shape = ret.has_struct().then(|| Shape::of(&ret));
    let body = f.block(&func.body, ret_shape.as_ref());
    Func {
        name: func.name.clone(),
        params,
        ret: flat_type(&ret),
        body,
        poisoned: func.poisoned.clone(),
        context: func.context.clone(),
        learnt: func
            .learnt
            .iter()
            .map(|(k, s)| {
                let s = Signature {
                    params: s.params.iter().map(|t| f.resolve(t)).collect(),
                    ret: f.resolve(&s.ret),
                };
                (k.clone(), flat_signature(&s))
            })
            .collect(),
        structs: BTreeMap::new(),
    }
}

/// The variable of the part at `path` of the value named `root`.
fn part_name(root: &str, path: &[String]) -> String {
    path.iter()
        .fold(root.to_string(), |acc, m| field_var(&acc, m))
}

/// The flattening's state: the function, the struct-holding names in scope.
struct Flattener<'a> {
    func: &'a Func,
    errors: &'a mut Errors,
    /// Names in scope: `Some(shape)` for a value holding a struct, `None` for any other.
    scopes: Vec<Vec<(String, Option<Shape>)>>,
    fresh: usize,
}

/// An expression of `kind` spelled `tokens` at `span`.
fn made(kind: ExprKind, tokens: TokenStream, span: Span) -> Expr {
    Expr::made(kind, tokens, span)
}

/// The variable `name` at `span`.
fn var(name: &str, span: Span) -> Expr {
    Expr::var(&Ident::new(name, span))
}

/// A tuple expression of `items`, or the one item.
fn tuple_or_one(mut items: Vec<Expr>, span: Span) -> Expr {
    if items.len() == 1 {
        return items.remove(0);
    }
    let tokens = items.iter().map(|i| &i.tokens);
    let tokens = quote!((#(#tokens,)*));
    made(ExprKind::Tuple(items), tokens, span)
}

/// A tuple pattern of `pats`, or the one pattern.
fn pat_tuple_or_one(mut pats: Vec<Pat>) -> Pat {
    if pats.len() == 1 {
        pats.remove(0)
    } else {
        Pat::Tuple(pats)
    }
}

fn pat_tokens(p: &Pat) -> TokenStream {
    match p {
        Pat::Ident(id) => quote!(#id),
        Pat::Wild => quote!(_),
        Pat::Tuple(ps) => {
            let ps = ps.iter().map(pat_tokens);
            quote!((#(#ps,)*))
        }
    }
}

fn stmt_tokens(s: &Stmt) -> TokenStream {
    match s {
        Stmt::Let { pat, init, .. } => {
            let (p, i) = (pat_tokens(pat), &init.tokens);
            quote!(let #p = #i;)
        }
        Stmt::Expr(e) => {
            let t = &e.tokens;
            quote!(#t;)
        }
    }
}

/// A block expression of `stmts` and `tail`, spelled out.
fn block_expr(b: Block, span: Span) -> Expr {
    let stmts = b.stmts.iter().map(stmt_tokens);
    let tail = b.tail.as_ref().map(|t| &t.tokens);
    let tokens = quote!({ #(#stmts)* #tail });
    made(ExprKind::Block(b), tokens, span)
}

/// `stmts` then `e`, as one expression (`e` itself without statements).
fn with_prelude(stmts: Vec<Stmt>, e: Expr) -> Expr {
    if stmts.is_empty() {
        return e;
    }
    let span = e.span;
    block_expr(
        Block {
            stmts,
            tail: Some(Box::new(e)),
        },
        span,
    )
}

impl Flattener<'_> {
    fn resolve(&self, t: &Ty) -> Ty {
        t.resolved(&self.func.structs)
    }

    fn bind(&mut self, name: String, shape: Option<Shape>) {
        self.scopes.last_mut().expect("a scope").push((name, shape));
    }

    fn lookup(&self, name: &str) -> Option<&Shape> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.iter().rev().find(|(n, _)| n == name))
            .and_then(|(_, s)| s.as_ref())
    }

    fn bind_pat(&mut self, p: &Pat) {
        for n in p.names() {
            self.bind(n, None);
        }
    }

    /// A fresh variable name no user name takes.
    fn fresh(&mut self) -> String {
        self.fresh += 1;
        format!("__flat{}", self.fresh)
    }

    /// The layout of the struct at `path`, as a shape.
    fn struct_shape(&self, path: &str) -> Option<Shape> {
        let t = self.resolve(&Ty::Struct {
            path: path.to_string(),
            fields: Vec::new(),
        });
        matches!(&t, Ty::Struct { fields, .. } if !fields.is_empty()).then(|| Shape::of(&t))
    }

    /// The place `e` names when it is a chain of fields rooted at a variable holding a struct
    /// (`t`, `t.inner`, `pair.0.depth`): the part's variable name and its shape.
    fn place(&self, e: &Expr) -> Option<(String, Shape)> {
        match &e.kind {
            ExprKind::Var(id) => {
                let name = id.to_string();
                self.lookup(&name).map(|s| (name, s.clone()))
            }
            ExprKind::NamedField(b, m) => {
                let (name, s) = self.place(b)?;
                let m = m.to_string();
                let sub = s.member(&m)?.clone();
                Some((field_var(&name, &m), sub))
            }
            ExprKind::Field(b, i) => {
                let (name, s) = self.place(b)?;
                let m = i.to_string();
                let sub = s.member(&m)?.clone();
                Some((field_var(&name, &m), sub))
            }
            _ => None,
        }
    }

    /// The shape of the value `e` has, if it holds a struct.
    fn shape_of(&mut self, e: &Expr) -> Option<Shape> {
        match &e.kind {
            ExprKind::Var(_) | ExprKind::Field(..) | ExprKind::NamedField(..) => {
                if let Some((_, s)) = self.place(e) {
                    return (!s.is_plain()).then_some(s);
                }
                let (b, m) = match &e.kind {
                    ExprKind::Field(b, i) => (b, i.to_string()),
                    ExprKind::NamedField(b, m) => (b, m.to_string()),
                    _ => return None,
                };
                let s = self.shape_of(b)?;
                s.member(&m).filter(|s| !s.is_plain()).cloned()
            }
            ExprKind::Struct(lit) => self.struct_shape(&lit.path),
            ExprKind::Call(path, _) => {
                let ret = self.resolve(&self.func.callee_return(path)?);
                ret.has_struct().then(|| Shape::of(&ret))
            }
            ExprKind::If(_, t, e) => self
                .block_shape(t)
                .or_else(|| e.as_deref().and_then(|e| self.shape_of(e))),
            ExprKind::Block(b) => self.block_shape(b),
            ExprKind::Tuple(items) => {
                let shapes: Vec<Option<Shape>> = items.iter().map(|i| self.shape_of(i)).collect();
                shapes.iter().any(Option::is_some).then(|| {
                    Shape::Tuple(
                        shapes
                            .into_iter()
                            .map(|s| s.unwrap_or(Shape::Plain(None)))
                            .collect(),
                    )
                })
            }
            ExprKind::Loop(_, b) => self.break_shape(b),
            ExprKind::Method(r, m, args) if m == "clone" && args.is_empty() => self.shape_of(r),
            _ => None,
        }
    }

    /// The shape of a block's value, its `let`s in scope.
    fn block_shape(&mut self, b: &Block) -> Option<Shape> {
        self.scopes.push(Vec::new());
        for s in &b.stmts {
            if let Stmt::Let { pat, ty, init } = s {
                let shape = self.let_shape(ty.as_ref(), init);
                match (pat, shape) {
                    (Pat::Ident(id), Some(s)) => self.bind(id.to_string(), Some(s)),
                    (p, _) => self.bind_pat(p),
                }
            }
        }
        let s = b.tail.as_deref().and_then(|t| self.shape_of(t));
        self.scopes.pop();
        s
    }

    /// The shape of the first `break value` of a loop's own body that holds a struct.
    fn break_shape(&mut self, b: &Block) -> Option<Shape> {
        fn breaks<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
            match &e.kind {
                ExprKind::Break(_, Some(v)) => out.push(v),
                ExprKind::Loop(..) | ExprKind::While(..) | ExprKind::For(..) => {}
                _ => {
                    let (es, bs) = children(e);
                    es.into_iter().for_each(|c| breaks(c, out));
                    bs.into_iter().for_each(|b| block_breaks(b, out));
                }
            }
        }
        fn block_breaks<'e>(b: &'e Block, out: &mut Vec<&'e Expr>) {
            block_exprs(b).into_iter().for_each(|e| breaks(e, out));
        }
        let mut out = Vec::new();
        block_breaks(b, &mut out);
        out.into_iter().find_map(|v| self.shape_of(v))
    }

    /// The shape a `let` binds: its annotation's, else its initialiser's.
    fn let_shape(&mut self, ty: Option<&Ty>, init: &Expr) -> Option<Shape> {
        match ty.map(|t| self.resolve(t)) {
            Some(t) if t.has_struct() => Some(Shape::of(&t)),
            Some(_) => None,
            None => self.shape_of(init),
        }
    }

    /// `tokens` with every chain of fields rooted at a struct-holding variable in scope
    /// (`t.inner.q`, `pair.0.depth`) as that part's variable (`t__inner__q`).
    fn rewrite(&self, tokens: &TokenStream) -> TokenStream {
        let tts: Vec<TokenTree> = tokens.clone().into_iter().collect();
        let mut out: Vec<TokenTree> = Vec::new();
        let dot = |t: Option<&TokenTree>| matches!(t, Some(TokenTree::Punct(p)) if p.as_char() == '.' && p.spacing() == proc_macro2::Spacing::Alone);
        let mut i = 0;
        while i < tts.len() {
            let t = &tts[i];
            // A single `.` before (not the second of `..`) makes this a member, not a root.
            let after_dot = i >= 1
                && dot(tts.get(i - 1))
                && !(i >= 2 && matches!(&tts[i - 2], TokenTree::Punct(p) if p.as_char() == '.'));
            match t {
                TokenTree::Ident(id) if !after_dot => {
                    if let Some(shape) = self.lookup(&id.to_string()) {
                        let mut shape = shape;
                        let mut name = id.to_string();
                        let mut j = i + 1;
                        while !shape.is_plain() && dot(tts.get(j)) {
                            let member = match tts.get(j + 1) {
                                Some(TokenTree::Ident(m)) => m.to_string(),
                                Some(TokenTree::Literal(l)) => l.to_string(),
                                _ => break,
                            };
                            let call = matches!(tts.get(j + 2), Some(TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Parenthesis);
                            let Some(sub) = shape.member(&member).filter(|_| !call) else {
                                break;
                            };
                            shape = sub;
                            name = field_var(&name, &member);
                            j += 2;
                        }
                        out.push(TokenTree::Ident(Ident::new(&name, id.span())));
                        i = j;
                        continue;
                    }
                    out.push(t.clone());
                }
                TokenTree::Group(g) => {
                    let mut g2 = proc_macro2::Group::new(g.delimiter(), self.rewrite(&g.stream()));
                    g2.set_span(g.span());
                    out.push(TokenTree::Group(g2));
                }
                other => out.push(other.clone()),
            }
            i += 1;
        }
        out.into_iter().collect()
    }

    /// `e` with its own kind and rewritten tokens.
    fn keep(&self, e: &Expr, kind: ExprKind) -> Expr {
        made(kind, self.rewrite(&e.tokens), e.span)
    }

    /// A block whose value has `shape` if it holds a struct (flattened), else a plain block.
    fn block(&mut self, b: &Block, shape: Option<&Shape>) -> Block {
        self.scopes.push(Vec::new());
        let mut stmts = Vec::new();
        for s in &b.stmts {
            self.stmt(s, &mut stmts);
        }
        let tail = b.tail.as_deref().map(|t| match shape {
            Some(s) => {
                let v = self.flat(t, s, &mut stmts);
                Box::new(v)
            }
            None => Box::new(self.expr(t)),
        });
        self.scopes.pop();
        Block { stmts, tail }
    }

    fn stmt(&mut self, s: &Stmt, out: &mut Vec<Stmt>) {
        match s {
            Stmt::Expr(e) => {
                let e = match self.shape_of(e) {
                    // A struct value computed for its effects only.
                    Some(shape) if !matches!(e.kind, ExprKind::Var(_)) => {
                        let mut pre = Vec::new();
                        let v = self.flat(e, &shape, &mut pre);
                        with_prelude(pre, v)
                    }
                    _ => self.expr(e),
                };
                out.push(Stmt::Expr(e));
            }
            Stmt::Let { pat, ty, init } => {
                let Some(shape) = self.let_shape(ty.as_ref(), init) else {
                    let init = self.expr(init);
                    self.bind_pat(pat);
                    out.push(Stmt::Let {
                        pat: pat.clone(),
                        ty: ty.clone(),
                        init,
                    });
                    return;
                };
                let init = self.flat(init, &shape, out);
                let mut pats = Vec::new();
                let mut types = Vec::new();
                self.let_parts(pat, &shape, &mut pats, &mut types);
                let ty = types
                    .into_iter()
                    .collect::<Option<Vec<Ty>>>()
                    .map(|mut ts| {
                        if ts.len() == 1 {
                            ts.remove(0)
                        } else {
                            Ty::Tuple(ts)
                        }
                    });
                out.push(Stmt::Let {
                    pat: pat_tuple_or_one(pats),
                    ty,
                    init,
                });
            }
        }
    }

    /// The part patterns (and types) a `let` pattern binds for a value of `shape`, binding
    /// its names.
    fn let_parts(
        &mut self,
        pat: &Pat,
        shape: &Shape,
        pats: &mut Vec<Pat>,
        types: &mut Vec<Option<Ty>>,
    ) {
        match (pat, shape) {
            (Pat::Ident(id), _) => {
                for (path, t) in shape.parts() {
                    pats.push(Pat::Ident(Ident::new(
                        &part_name(&id.to_string(), &path),
                        id.span(),
                    )));
                    types.push(t);
                }
                let s = (!shape.is_plain()).then(|| shape.clone());
                self.bind(id.to_string(), s);
            }
            (Pat::Wild, _) => {
                for (_, t) in shape.parts() {
                    pats.push(Pat::Wild);
                    types.push(t);
                }
            }
            (Pat::Tuple(ps), Shape::Tuple(items)) if ps.len() == items.len() => {
                for (p, s) in ps.iter().zip(items) {
                    self.let_parts(p, s, pats, types);
                }
            }
            (p, _) => {
                let names = p.names().join(", ");
                let at = first_ident(p).map_or_else(Span::call_site, Ident::span);
                self.errors.at(
                    at,
                    format!(
                        "this pattern ({names}) does not match the value's shape, {}",
                        shape.describe()
                    ),
                );
                pats.push(Pat::Wild);
                types.push(None);
            }
        }
    }

    /// `e`, a value holding no struct, with its structs flattened.
    fn expr(&mut self, e: &Expr) -> Expr {
        match &e.kind {
            ExprKind::Lit { .. }
            | ExprKind::Const(_)
            | ExprKind::Uniform(_)
            | ExprKind::Continue(_)
            | ExprKind::Invalid => e.clone(),
            ExprKind::Var(id) => {
                if let Some(s) = self.lookup(&id.to_string()) {
                    let s = s.describe();
                    self.whole(e, &s);
                    return made(ExprKind::Invalid, e.tokens.clone(), e.span);
                }
                e.clone()
            }
            ExprKind::NamedField(..) | ExprKind::Field(..) => self.field(e),
            ExprKind::Binary(op, t, a, b) => {
                let kind = ExprKind::Binary(
                    *op,
                    t.clone(),
                    Box::new(self.expr(a)),
                    Box::new(self.expr(b)),
                );
                self.keep(e, kind)
            }
            ExprKind::Unary(t, a) => {
                let kind = ExprKind::Unary(t.clone(), Box::new(self.expr(a)));
                self.keep(e, kind)
            }
            ExprKind::Cast(a, t, tt) => {
                let kind = ExprKind::Cast(Box::new(self.expr(a)), t.clone(), tt.clone());
                self.keep(e, kind)
            }
            ExprKind::Ref(a) => {
                let kind = ExprKind::Ref(Box::new(self.expr(a)));
                self.keep(e, kind)
            }
            ExprKind::Method(r, m, args) => {
                if let Some(s) = self.shape_of(r) {
                    self.errors.at(
                        m.span(),
                        format!("methods on structs are not supported in #[autobatch] code (`{m}` on {}): write an #[autobatch] function taking the struct", s.describe()),
                    );
                    return made(ExprKind::Invalid, e.tokens.clone(), e.span);
                }
                let args = args.iter().map(|a| self.expr(a)).collect();
                let kind = ExprKind::Method(Box::new(self.expr(r)), m.clone(), args);
                self.keep(e, kind)
            }
            ExprKind::Assoc(t, f, args) => {
                let args = args.iter().map(|a| self.expr(a)).collect();
                self.keep(e, ExprKind::Assoc(t.clone(), f.clone(), args))
            }
            ExprKind::Call(path, args) => self.call(e, path, args),
            ExprKind::Tuple(items) => {
                if let Some(shape) = self.shape_of(e) {
                    let mut pre = Vec::new();
                    let v = self.flat(e, &shape, &mut pre);
                    return with_prelude(pre, v);
                }
                let items = items.iter().map(|i| self.expr(i)).collect();
                self.keep(e, ExprKind::Tuple(items))
            }
            ExprKind::Struct(lit) => {
                let what = format!("`{}`", lit.path);
                self.whole(e, &what);
                made(ExprKind::Invalid, e.tokens.clone(), e.span)
            }
            ExprKind::If(c, t, el) => {
                let c = self.expr(c);
                let t = self.block(t, None);
                let el = el.as_deref().map(|x| Box::new(self.expr(x)));
                self.rebuild_if(e, c, t, el)
            }
            ExprKind::While(l, c, b) => {
                let c = self.expr(c);
                let b = self.block(b, None);
                self.keep(e, ExprKind::While(l.clone(), Box::new(c), b))
            }
            ExprKind::Loop(l, b) => {
                let b = self.block(b, None);
                self.keep(e, ExprKind::Loop(l.clone(), b))
            }
            ExprKind::For(f) => {
                let mut f2 = (**f).clone();
                f2.lo = self.expr(&f.lo);
                f2.hi = self.expr(&f.hi);
                f2.step = f.step.as_ref().map(|s| self.expr(s));
                self.scopes.push(Vec::new());
                if let Some(v) = &f.var {
                    self.bind(v.to_string(), None);
                }
                f2.body = self.block(&f.body, None);
                self.scopes.pop();
                self.keep(e, ExprKind::For(Box::new(f2)))
            }
            ExprKind::Break(l, v) => {
                let flat = v.as_deref().and_then(|v| Some((v, self.shape_of(v)?)));
                let Some((v, s)) = flat else {
                    let v = v.as_deref().map(|v| Box::new(self.expr(v)));
                    return self.keep(e, ExprKind::Break(l.clone(), v));
                };
                let mut pre = Vec::new();
                let x = self.flat(v, &s, &mut pre);
                let v = with_prelude(pre, x);
                let vt = &v.tokens;
                let lt = l.as_ref().map(|l| {
                    syn::Lifetime::new(&format!("'{}", l.trim_start_matches('\'')), e.span)
                });
                made(
                    ExprKind::Break(l.clone(), Some(Box::new(v.clone()))),
                    quote!(break #lt #vt),
                    e.span,
                )
            }
            ExprKind::Return(v) => {
                let ret = self.resolve(&self.func.ret);
                match v {
                    Some(v) if ret.has_struct() => {
                        let mut pre = Vec::new();
                        let x = self.flat(v, &Shape::of(&ret), &mut pre);
                        let xt = &x.tokens;
                        let r = made(
                            ExprKind::Return(Some(Box::new(x.clone()))),
                            quote!(return #xt),
                            e.span,
                        );
                        with_prelude(pre, r)
                    }
                    Some(v) => {
                        let kind = ExprKind::Return(Some(Box::new(self.expr(v))));
                        self.keep(e, kind)
                    }
                    None => e.clone(),
                }
            }
            ExprKind::Block(b) => {
                let b = self.block(b, None);
                block_expr(b, e.span)
            }
            ExprKind::Assign(target, value, op) => self.assign(e, target, value, op.as_ref()),
        }
    }

    /// Reports a struct value used where only a field or a whole-value place can be.
    fn whole(&mut self, e: &Expr, what: &str) {
        self.errors.at(
            e.span,
            format!("a struct value ({what}) cannot be used here in #[autobatch] code: read its fields (`t.field`), or bind, assign, pass or return it whole"),
        );
    }

    fn rebuild_if(&self, e: &Expr, c: Expr, t: Block, el: Option<Box<Expr>>) -> Expr {
        let ct = &c.tokens;
        let tt = block_expr(t.clone(), e.span).tokens;
        let et = el.as_ref().map(|x| {
            let x = &x.tokens;
            quote!(else #x)
        });
        let tokens = quote!(if #ct #tt #et);
        made(ExprKind::If(Box::new(c), t, el), tokens, e.span)
    }

    /// A field read in a plain context: its part's variable, or the field of a struct value
    /// computed first.
    fn field(&mut self, e: &Expr) -> Expr {
        if let Some((name, shape)) = self.place(e) {
            if shape.is_plain() {
                return var(&name, e.span);
            }
            let s = shape.describe();
            self.whole(e, &s);
            return made(ExprKind::Invalid, e.tokens.clone(), e.span);
        }
        let (b, m) = match &e.kind {
            ExprKind::NamedField(b, m) => (b, m.to_string()),
            ExprKind::Field(b, i) => (b, i.to_string()),
            _ => unreachable!("field() is called on fields"),
        };
        let Some(shape) = self.shape_of(b) else {
            if let ExprKind::Field(_, i) = &e.kind {
                let kind = ExprKind::Field(Box::new(self.expr(b)), *i);
                return self.keep(e, kind);
            }
            let at = match &e.kind {
                ExprKind::NamedField(_, id) => id.span(),
                _ => e.span,
            };
            self.errors.at(
                at,
                format!("no field `{m}` here: only #[autobatch] structs have named fields in #[autobatch] code"),
            );
            return made(ExprKind::Invalid, e.tokens.clone(), e.span);
        };
        // A field of a computed struct: the struct's parts into fresh variables first.
        let mut pre = Vec::new();
        match self.computed_parts(e, &mut pre) {
            Some((mut parts, s)) if s.is_plain() && parts.len() == 1 => {
                with_prelude(pre, parts.remove(0))
            }
            Some((_, s)) => {
                let s = s.describe();
                self.whole(e, &s);
                made(ExprKind::Invalid, e.tokens.clone(), e.span)
            }
            None => {
                self.errors
                    .at(e.span, format!("no field `{m}` in {}", shape.describe()));
                made(ExprKind::Invalid, e.tokens.clone(), e.span)
            }
        }
    }

    /// The parts of the field `e` of a computed struct value (`f(x).0.to`), the value's
    /// parts evaluated into fresh variables first, with the field's shape.
    fn computed_parts(&mut self, e: &Expr, pre: &mut Vec<Stmt>) -> Option<(Vec<Expr>, Shape)> {
        let (b, m) = match &e.kind {
            ExprKind::NamedField(b, m) => (b, m.to_string()),
            ExprKind::Field(b, i) => (b, i.to_string()),
            _ => return None,
        };
        let computed = matches!(b.kind, ExprKind::NamedField(..) | ExprKind::Field(..))
            && self.place(b).is_none();
        let (parts, shape) = if computed {
            self.computed_parts(b, pre)?
        } else {
            let s = self.shape_of(b)?;
            (self.parts(b, &s, pre), s)
        };
        let sub = shape.member(&m)?.clone();
        let picked = shape
            .parts()
            .into_iter()
            .zip(parts)
            .filter(|((p, _), _)| p.first() == Some(&m))
            .map(|(_, x)| x)
            .collect();
        Some((picked, sub))
    }

    /// A call: struct arguments passed part by part (evaluated into fresh variables first
    /// when they are computed, the other arguments with calls too, so the order stays).
    fn call(&mut self, e: &Expr, path: &syn::Path, args: &[Expr]) -> Expr {
        let sig = self.func.callee_signature(path);
        // The context passed on (`g(ctx, x)`) is no parameter of the signature.
        let mut position = 0;
        let shapes: Vec<Option<Shape>> = args
            .iter()
            .map(|a| {
                if matches!(a.kind, ExprKind::Uniform(true)) {
                    return None;
                }
                position += 1;
                let declared = sig
                    .as_ref()
                    .and_then(|s| s.params.get(position - 1))
                    .map(|t| self.resolve(t))
                    .filter(Ty::has_struct)
                    .map(|t| Shape::of(&t));
                declared.or_else(|| self.shape_of(a))
            })
            .collect();
        let structured = shapes.iter().any(Option::is_some);
        let mut pre = Vec::new();
        let mut flat_args = Vec::new();
        for (a, s) in args.iter().zip(&shapes) {
            match s {
                Some(s) => flat_args.extend(self.parts(a, s, &mut pre)),
                None if structured && has_call(a) => {
                    let x = self.expr(a);
                    let t = self.fresh();
                    pre.push(Stmt::Let {
                        pat: Pat::Ident(Ident::new(&t, a.span)),
                        ty: None,
                        init: x,
                    });
                    flat_args.push(var(&t, a.span));
                }
                None => flat_args.push(self.expr(a)),
            }
        }
        let ats = flat_args.iter().map(|a| &a.tokens);
        let tokens = quote!(#path(#(#ats),*));
        with_prelude(
            pre,
            made(ExprKind::Call(path.clone(), flat_args), tokens, e.span),
        )
    }

    /// `e`, a value of `shape`, as one expression of its flattened type; statements it needs
    /// first go to `pre`.
    fn flat(&mut self, e: &Expr, shape: &Shape, pre: &mut Vec<Stmt>) -> Expr {
        if shape.is_plain() {
            return self.expr(e);
        }
        if let Some((name, s)) = self.place(e) {
            if s != *shape && !same_layout(&s, shape) {
                self.mismatch(e, shape, &s);
            }
            let parts = s
                .parts()
                .into_iter()
                .map(|(p, _)| var(&part_name(&name, &p), e.span));
            return tuple_or_one(parts.collect(), e.span);
        }
        match &e.kind {
            ExprKind::Struct(lit) => self.literal(e, lit, shape, pre),
            // A copy of a struct is a copy of each of its fields.
            ExprKind::Method(r, m, args) if m == "clone" && args.is_empty() => {
                self.flat(r, shape, pre)
            }
            ExprKind::Tuple(items) => {
                let Shape::Tuple(ss) = shape else {
                    self.mismatch_described(e, shape);
                    return made(ExprKind::Invalid, e.tokens.clone(), e.span);
                };
                let mut parts = Vec::new();
                for (item, s) in items.iter().zip(ss) {
                    parts.extend(self.parts(item, s, pre));
                }
                tuple_or_one(parts, e.span)
            }
            ExprKind::Call(path, args) => self.call(e, path, args),
            ExprKind::NamedField(..) | ExprKind::Field(..) => match self.computed_parts(e, pre) {
                Some((parts, _)) => tuple_or_one(parts, e.span),
                None => {
                    self.mismatch_described(e, shape);
                    made(ExprKind::Invalid, e.tokens.clone(), e.span)
                }
            },
            ExprKind::If(c, t, el) => {
                let c = self.expr(c);
                let t = self.block(t, Some(shape));
                let el = el.as_deref().map(|x| {
                    let mut inner = Vec::new();
                    let v = self.flat(x, shape, &mut inner);
                    Box::new(with_prelude(inner, v))
                });
                self.rebuild_if(e, c, t, el)
            }
            ExprKind::Block(b) => {
                let b = self.block(b, Some(shape));
                block_expr(b, e.span)
            }
            ExprKind::Loop(..)
            | ExprKind::Return(_)
            | ExprKind::Break(..)
            | ExprKind::Continue(_)
            | ExprKind::Invalid => self.expr(e),
            _ => {
                self.mismatch_described(e, shape);
                made(ExprKind::Invalid, e.tokens.clone(), e.span)
            }
        }
    }

    fn mismatch(&mut self, e: &Expr, want: &Shape, found: &Shape) {
        self.errors.at(
            e.span,
            format!("expected {}, found {}", want.describe(), found.describe()),
        );
    }

    fn mismatch_described(&mut self, e: &Expr, want: &Shape) {
        self.errors
            .at(e.span, format!("expected {} here", want.describe()));
    }

    /// `e`, a value of `shape`, one expression per part (computed values into fresh
    /// variables first).
    fn parts(&mut self, e: &Expr, shape: &Shape, pre: &mut Vec<Stmt>) -> Vec<Expr> {
        let n = shape.parts().len();
        let v = self.flat(e, shape, pre);
        if n == 1 {
            return vec![v];
        }
        if let ExprKind::Tuple(items) = &v.kind {
            if items.len() == n {
                return items.clone();
            }
        }
        let names: Vec<String> = (0..n).map(|_| self.fresh()).collect();
        pre.push(Stmt::Let {
            pat: Pat::Tuple(
                names
                    .iter()
                    .map(|t| Pat::Ident(Ident::new(t, e.span)))
                    .collect(),
            ),
            ty: None,
            init: v,
        });
        names.iter().map(|t| var(t, e.span)).collect()
    }

    /// A struct literal: its fields' parts in declaration order, fields not given taken from
    /// `..base`; fields that call functions are evaluated first, in source order, then base.
    fn literal(&mut self, e: &Expr, lit: &StructLit, shape: &Shape, pre: &mut Vec<Stmt>) -> Expr {
        let Some(Shape::Struct(path, fields)) = self.struct_shape(&lit.path) else {
            self.errors.at(
                e.span,
                format!("`{}` is not an #[autobatch] struct", lit.path),
            );
            return made(ExprKind::Invalid, e.tokens.clone(), e.span);
        };
        if !matches!(shape, Shape::Struct(p, _) if *p == path)
            && !same_layout(shape, &Shape::Struct(path.clone(), fields.clone()))
        {
            self.mismatch_described(e, shape);
        }
        for (name, _) in &lit.fields {
            if !fields.iter().any(|(n, _)| *name == n) {
                self.errors
                    .at(name.span(), format!("`{path}` has no field `{name}`"));
            }
        }
        // Given fields, in source order.
        let ordered = lit.fields.iter().any(|(_, x)| has_call(x));
        let mut given: BTreeMap<String, Vec<Expr>> = BTreeMap::new();
        for (name, x) in &lit.fields {
            let Some((_, s)) = fields.iter().find(|(n, _)| *name == n) else {
                continue;
            };
            let mut ps = self.parts(x, s, pre);
            if ordered {
                ps = ps
                    .into_iter()
                    .map(|p| {
                        if matches!(p.kind, ExprKind::Var(_) | ExprKind::Lit { .. }) {
                            return p;
                        }
                        let t = self.fresh();
                        pre.push(Stmt::Let {
                            pat: Pat::Ident(Ident::new(&t, p.span)),
                            ty: None,
                            init: p,
                        });
                        var(&t, e.span)
                    })
                    .collect();
            }
            given.insert(name.to_string(), ps);
        }
        let missing: Vec<&String> = fields
            .iter()
            .map(|(n, _)| n)
            .filter(|n| !given.contains_key(*n))
            .collect();
        let base_parts = match (&lit.base, missing.is_empty()) {
            (Some(b), _) => {
                let whole = Shape::Struct(path.clone(), fields.clone());
                Some(self.parts(b, &whole, pre))
            }
            (None, true) => None,
            (None, false) => {
                let names: Vec<String> = missing.iter().map(|n| format!("`{n}`")).collect();
                self.errors.at(
                    e.span,
                    format!(
                        "missing fields {} in this `{path}` (or write `..base`)",
                        names.join(", ")
                    ),
                );
                return made(ExprKind::Invalid, e.tokens.clone(), e.span);
            }
        };
        let mut parts = Vec::new();
        let mut base_iter = base_parts.map(|b| b.into_iter());
        for (n, s) in &fields {
            let count = s.parts().len();
            let from_base: Vec<Expr> = match base_iter.as_mut() {
                Some(it) => it.by_ref().take(count).collect(),
                None => Vec::new(),
            };
            match given.remove(n) {
                Some(ps) => parts.extend(ps),
                None => parts.extend(from_base),
            }
        }
        tuple_or_one(parts, e.span)
    }

    /// `target = value` / `target op= value`, where the target may be a struct (assigned
    /// part by part) or a field of one (its own variable).
    fn assign(
        &mut self,
        e: &Expr,
        target: &Ident,
        value: &Expr,
        op: Option<&(crate::parse::ast::BinOp, TokenStream)>,
    ) -> Expr {
        let name = target.to_string();
        let shape = self.target_shape(&name);
        let Some(shape) = shape.filter(|s| !s.is_plain()) else {
            let value = self.expr(value);
            return self.keep(
                e,
                ExprKind::Assign(target.clone(), Box::new(value), op.cloned()),
            );
        };
        if op.is_some() {
            self.errors.at(
                e.span,
                format!(
                    "a compound assignment needs a number, not {}",
                    shape.describe()
                ),
            );
            return made(ExprKind::Invalid, e.tokens.clone(), e.span);
        }
        let mut stmts = Vec::new();
        let parts = self.parts(value, &shape, &mut stmts);
        let targets: Vec<String> = shape
            .parts()
            .into_iter()
            .map(|(p, _)| part_name(&name, &p))
            .collect();
        // Parts that are their own target need nothing; the others go through fresh variables
        // when any reads a target (`t = T { a: t.b, b: t.a }` swaps).
        let moves: Vec<(String, Expr)> = targets
            .into_iter()
            .zip(parts)
            .filter(|(t, p)| !matches!(&p.kind, ExprKind::Var(id) if id == t))
            .collect();
        let reads_target = moves.iter().any(|(_, p)| {
            let text = p.tokens.to_string();
            moves.iter().any(|(t, _)| mentions(&text, t))
        });
        let mut assigns = Vec::new();
        for (t, p) in moves {
            let value = if reads_target {
                let tmp = self.fresh();
                stmts.push(Stmt::Let {
                    pat: Pat::Ident(Ident::new(&tmp, e.span)),
                    ty: None,
                    init: p,
                });
                var(&tmp, e.span)
            } else {
                p
            };
            let id = Ident::new(&t, target.span());
            let vt = &value.tokens;
            let tokens = quote!(#id = #vt);
            assigns.push(Stmt::Expr(made(
                ExprKind::Assign(id, Box::new(value), None),
                tokens,
                e.span,
            )));
        }
        stmts.extend(assigns);
        block_expr(Block { stmts, tail: None }, e.span)
    }

    /// The shape of the assignment target `name`: a variable, or a field path encoded as one
    /// (`t__inner`).
    fn target_shape(&self, name: &str) -> Option<Shape> {
        if let Some(s) = self.lookup(name) {
            return Some(s.clone());
        }
        let segs: Vec<&str> = name.split("__").collect();
        for k in (1..segs.len()).rev() {
            let root = segs[..k].join("__");
            if let Some(mut s) = self.lookup(&root) {
                for m in &segs[k..] {
                    s = s.member(m)?;
                }
                return Some(s.clone());
            }
        }
        None
    }
}

/// The first name a pattern binds, for an error's place.
fn first_ident(p: &Pat) -> Option<&Ident> {
    match p {
        Pat::Ident(id) => Some(id),
        Pat::Tuple(ps) => ps.iter().find_map(first_ident),
        Pat::Wild => None,
    }
}

/// True if the identifier `name` occurs in the token text `text`.
fn mentions(text: &str, name: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|w| w == name)
}

/// True if two shapes have the same parts (a struct and its own layout learnt twice).
fn same_layout(a: &Shape, b: &Shape) -> bool {
    let names = |s: &Shape| s.parts().into_iter().map(|(p, _)| p).collect::<Vec<_>>();
    match (a, b) {
        (Shape::Struct(p, _), Shape::Struct(q, _)) => p == q || names(a) == names(b),
        _ => names(a) == names(b),
    }
}

/// The name a flattened variable is printed with: `t__inner__q` as `t.inner.q` (a leading
/// `__` of a generated name stays).
pub fn display_name(name: &str) -> String {
    let (lead, rest) = name.split_at(name.len() - name.trim_start_matches('_').len());
    format!("{lead}{}", rest.replace("__", "."))
}

/// Source text with every struct field variable in it printed as the field
/// ([`display_name`]: `a__depth + 1` as `a.depth + 1`).
pub fn display_source(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    for c in text.chars().chain(std::iter::once(' ')) {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            let starts_ident = word.starts_with(|c: char| c.is_alphabetic() || c == '_');
            out.push_str(&if starts_ident {
                display_name(&word)
            } else {
                word.clone()
            });
            word.clear();
        }
        out.push(c);
    }
    out.pop();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use autobatch_ir::DType;

    fn point() -> Ty {
        let i = Ty::Scalar(DType::I64);
        Ty::Struct {
            path: "Point".into(),
            fields: vec![("x".into(), i.clone()), ("y".into(), i)],
        }
    }

    fn segment() -> Ty {
        Ty::Struct {
            path: "Segment".into(),
            fields: vec![
                ("from".into(), point()),
                (
                    "tag".into(),
                    Ty::Tuple(vec![Ty::Scalar(DType::Bool), Ty::Vector]),
                ),
            ],
        }
    }

    /// A function `f` of these parameters, returning `()`, with an empty body.
    fn function(params: Vec<(Ident, Ty)>) -> Func {
        Func {
            name: Ident::new("f", Span::call_site()),
            params,
            ret: Ty::unit(),
            body: Block {
                stmts: Vec::new(),
                tail: None,
            },
            poisoned: Vec::new(),
            context: None,
            learnt: BTreeMap::new(),
            structs: BTreeMap::new(),
        }
    }

    #[test]
    fn a_struct_is_one_part_per_field_and_tuples_inside_stay_whole() {
        let parts: Vec<String> = Shape::of(&segment())
            .parts()
            .into_iter()
            .map(|(p, _)| part_name("s", &p))
            .collect();
        assert_eq!(parts, ["s__from__x", "s__from__y", "s__tag"]);
        let sig = flat_signature(&Signature {
            params: vec![Ty::Scalar(DType::F64), segment()],
            ret: Ty::Tuple(vec![point(), Ty::Scalar(DType::Bool)]),
        });
        assert_eq!(sig.params.len(), 4);
        assert_eq!(
            sig.ret,
            Ty::Tuple(vec![
                Ty::Scalar(DType::I64),
                Ty::Scalar(DType::I64),
                Ty::Scalar(DType::Bool)
            ])
        );
        assert_eq!(
            flat_type(&point().clone()),
            Ty::Tuple(vec![Ty::Scalar(DType::I64); 2])
        );
    }

    #[test]
    fn field_variables_print_as_fields() {
        assert_eq!(display_name("t__inner__q"), "t.inner.q");
        assert_eq!(display_name("__flat3__x"), "__flat3.x");
        assert_eq!(display_name("ret.0"), "ret.0");
        assert_eq!(
            display_source("a__depth + 1.5e3 * __a0"),
            "a.depth + 1.5e3 * __a0"
        );
    }

    #[test]
    fn field_chains_rooted_at_struct_variables_become_their_variables() {
        let func = function(Vec::new());
        let mut errors = Errors::default();
        let mut f = Flattener {
            func: &func,
            errors: &mut errors,
            scopes: vec![Vec::new()],
            fresh: 0,
        };
        f.bind("s".into(), Some(Shape::of(&segment())));
        let tokens: TokenStream = syn::parse_str(
            "s.from.x + s.tag.0 as i64 + (0..s.from.y).len() + x.from.y + s.from.y.max(1)",
        )
        .unwrap();
        let out = f.rewrite(&tokens).to_string();
        assert_eq!(
            out,
            "s__from__x + s__tag . 0 as i64 + (0 .. s__from__y) . len () + x . from . y + s__from__y . max (1)"
        );
    }

    #[test]
    fn nested_struct_layouts_still_to_learn_are_found() {
        let mut func = function(vec![(
            Ident::new("s", Span::call_site()),
            Ty::Struct {
                path: "Segment".into(),
                fields: Vec::new(),
            },
        )]);
        assert_eq!(unknown_struct(&func).as_deref(), Some("Segment"));
        let Ty::Struct { fields, .. } = segment() else {
            unreachable!()
        };
        let fields = fields
            .into_iter()
            .map(|(n, t)| match t {
                Ty::Struct { path, .. } => (
                    n,
                    Ty::Struct {
                        path,
                        fields: Vec::new(),
                    },
                ),
                t => (n, t),
            })
            .collect();
        func.structs.insert("Segment".into(), fields);
        assert_eq!(unknown_struct(&func).as_deref(), Some("Point"));
        let Ty::Struct { fields, .. } = point() else {
            unreachable!()
        };
        func.structs.insert("Point".into(), fields);
        assert_eq!(unknown_struct(&func), None);
    }
}

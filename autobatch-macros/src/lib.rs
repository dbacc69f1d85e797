//! `#[autobatch]`: compiles ordinary scalar Rust functions into autobatch Programs at compile time.
//!
//! The entry point is thin: `parse` turns the function into the macro's own AST (collecting
//! every unsupported construct as a spanned error); `generate` infers its types, translates it
//! to a recorded IR, merges its kernels, analyses that IR at compile time and emits the code.
//! On any error the original function is emitted too, so the IDE keeps working.

pub(crate) mod generate;
mod parse;
mod primitive;

use proc_macro::TokenStream;
use quote::quote;

/// Compiles an ordinary scalar Rust function for batched execution, at compile time.
///
/// The function stays callable as plain Rust. Next to it the attribute generates a module of the
/// same name with the batched API:
///
/// * `f::batch(inputs.., &Config) -> Result<outputs, RuntimeError>`: one lane per row. Scalar
///   parameters take an `ArrayView1`, `Vector` parameters an `ArrayView2` (`[lanes, len]`), tuple
///   parameters a tuple of views; results come back the same way as owned arrays.
/// * `f::batch_with_stats(..)`: also returns the run's [`Stats`](../autobatch_runtime/struct.Stats.html).
/// * `f::program()`: the linked program (its `Display` shows every variable's allocation), and
///   `f::COMPILE_TIME_PROGRAM`: the function's IR and allocation as computed at compile time.
/// * `f::executable()`: the linked program prepared for both modes (small calls inlined, blocks
///   simplified, needless copies removed, lowered) with its kernels, built once.
///
/// ```
/// use autobatch_runtime::ndarray::array;
/// use autobatch_runtime::{autobatch, Config, Mode};
///
/// #[autobatch]
/// fn fib(n: i64) -> i64 {
///     if n <= 1 { 1 } else { fib(n - 1) + fib(n - 2) }
/// }
///
/// assert_eq!(fib(7), 21); // still plain Rust
/// let config = Config::with_mode(Mode::FullVm);
/// let out = fib::batch(array![6, 7, 8, 9].view(), &config).unwrap();
/// assert_eq!(out, array![13, 21, 34, 55]);
/// println!("{}", fib::program().unwrap());
/// ```
///
/// # The language
///
/// The language is the Rust you would write anyway: parameters and results of `bool`, every
/// integer type (`i8`, `i16`, `i32`, `i64`, `isize`, `u8`, `u16`, `u32`, `u64`, `usize`), `f32`,
/// `f64`, `Vector`, `Key` and tuples of them (a parameter may be a tuple pattern,
/// `(a, b): (i64, i64)`); `let` (patterns over tuples, shadowing, `mut`), assignment, compound
/// and destructuring assignment (`(a, b) = (b, a % b)`), `if` / `else if` / `else` as
/// statements and expressions, `while`, `loop` with `break` / `break value`, `continue`, `for`
/// over integer ranges, loop labels, `match`, `if let`, `let ... else` and `matches!` on
/// integers, bools and tuples of them, early `return`, calls to other `#[autobatch]` functions
/// (recursion and mutual recursion, across modules), constants, `&&` / `||` with
/// short-circuiting, arithmetic, comparison and bit operators, the usual float and integer
/// methods and `as` casts. Each with its meaning in plain Rust, by area: control flow, integers,
/// calls, the shared context and structs. Name variables and parameters as you like: the
/// generated code's own names (`__lane`, `__ins`, `config`, ..) are hygienic and never meet
/// yours.
///
/// ## Control flow
///
/// `for` over `a..b`, `a..=b`, `(a..b).rev()`, `(a..b).step_by(k)` and `.rev().step_by(k)`,
/// bounds and step evaluated once; labels on `for`, `while` and `loop`, with `break 'label`,
/// `continue 'label` and `break 'label value`. A range ending at the type's maximum does not
/// overflow, and `step_by(0)`, which panics in Rust, is an error naming the lane:
///
/// ```
/// use autobatch_runtime::ndarray::array;
/// use autobatch_runtime::{autobatch, Config};
///
/// /// The first pair `a <= b` below `limit` with `a * b == target`, as `a * 1000 + b`.
/// #[autobatch]
/// fn factor_pair(target: i64, limit: i64) -> i64 {
///     let mut found = -1;
///     'outer: for a in 2..limit {
///         for b in (a..limit).step_by(1) {
///             if a * b == target {
///                 found = a * 1000 + b;
///                 break 'outer;
///             }
///         }
///     }
///     found
/// }
///
/// let out = factor_pair::batch(array![15, 49, 13].view(), array![20, 20, 20].view(), &Config::default());
/// assert_eq!(out.unwrap(), array![3005, 7007, -1]);
/// ```
///
/// `match` with literal, range (`1..=9`, `..=0`, `10..`), `|`, `_`, binding (`x`, `n @ 1..=9`)
/// and tuple patterns and guards, as a statement or for its value; `if let`, `let ... else` and
/// `matches!(x, pat)` (with a guard) on the same patterns. The `match` is rustc's to check for
/// exhaustiveness, as the function is also compiled unchanged:
///
/// ```
/// use autobatch_runtime::ndarray::array;
/// use autobatch_runtime::{autobatch, Config};
///
/// #[autobatch]
/// fn collatz(n: i64) -> i64 {
///     let 1.. = n else { return -1 };
///     let mut n = n;
///     let mut steps = 0;
///     while !matches!(n, 1) {
///         n = match (n % 2, n) {
///             (0, _) => n / 2,
///             (_, big @ 1_000_000..) if big % 3 == 0 => big / 3,
///             _ => 3 * n + 1,
///         };
///         steps += 1;
///     }
///     steps
/// }
///
/// let out = collatz::batch(array![1, 6, 27, 0].view(), &Config::default()).unwrap();
/// assert_eq!(out, array![0, 8, 111, -1]);
/// ```
///
/// Destructuring assignment, tuple parameters and constants (a name in SCREAMING_CASE, or
/// `Type::NAME`, is a constant: it is compiled into the kernel that reads it, where rustc
/// resolves and types it):
///
/// ```
/// use autobatch_runtime::ndarray::array;
/// use autobatch_runtime::{autobatch, Config};
///
/// const SCALE: i64 = 10;
///
/// #[autobatch]
/// fn gcd((a, b): (i64, i64)) -> i64 {
///     let (mut a, mut b) = (a, b);
///     while b != 0 {
///         (a, b) = (b, a % b);
///     }
///     a * SCALE + i64::MAX % 2
/// }
///
/// fn main() {
///     let out = gcd::batch((array![12, 7].view(), array![18, 5].view()), &Config::default());
///     assert_eq!(out.unwrap(), array![61, 11]);
/// }
/// ```
///
/// Anything else is a compile error pointing at it and saying what to write instead, one per
/// cause (a construct outside the language stops the macro there, so no error follows from it):
///
/// ```compile_fail
/// use autobatch_runtime::autobatch;
///
/// #[autobatch]
/// fn halve(n: i64) -> i64 {
///     let mut k = n;
///     while let 1.. = k { k /= 2; } // `while let` is not supported: write a `loop` with `if let`
///     k
/// }
/// ```
///
/// ## Shared context
///
/// A value every lane shares (settings, a model, a data set) is one reference parameter of any
/// `Sync + 'static` type, anywhere in the list: `ctx: &T`. It is not a lane's input: the batch
/// entry points take it first, once (`f::batch(&model, xs.view(), &config)`), and
/// `Executable::run_with_context` takes it as a `Context`. The body reads it where it is used
/// (`ctx.limit`, `ctx.a.b`, `ctx.dim()`, compiled into the kernel that uses it, as written; a
/// method's arguments are literals or other reads), with the type its place needs (annotate one
/// nothing fixes: `let r: f64 = ctx.rate;`), and passes it on to calls (`g(ctx, x)`; callees
/// take the same `&T`). It cannot be taken `&mut`, stored in a variable, returned, or be a
/// second context parameter. Its type is one without `#[autobatch]`: a per-lane type by
/// reference is a compile error saying to take it by value, `&i64` as well as `&Tree` for an
/// `#[autobatch] struct Tree` (write `t: Tree`; one value for every lane is a struct of its own
/// without the attribute, so which parameters are per lane is always visible in the signature):
///
/// ```compile_fail
/// use autobatch_runtime::autobatch;
///
/// #[autobatch]
/// pub struct Tree { depth: i64 }
///
/// #[autobatch]
/// fn deeper(tree: &Tree, x: i64) -> i64 { // `Tree` is an #[autobatch] struct: write `tree: Tree`
///     x + tree.depth
/// }
///
/// fn main() {}
/// ```
///
/// ```
/// use autobatch_runtime::ndarray::array;
/// use autobatch_runtime::{autobatch, Config};
///
/// pub struct Settings { limit: i64, step: i64 }
///
/// #[autobatch]
/// fn climb(settings: &Settings, x: i64) -> i64 {
///     if x >= settings.limit { x } else { climb(settings, x + settings.step) }
/// }
///
/// fn main() {
///     let settings = Settings { limit: 10, step: 3 };
///     let out = climb::batch(&settings, array![0, 9, 12].view(), &Config::default()).unwrap();
///     assert_eq!(out, array![12, 12, 12]);
/// }
/// ```
///
/// ## Integers
///
/// Integers behave exactly as in the scalar function: each type is stored at its own width,
/// unannotated literals and `let`s take the type their uses require (`i32` only when nothing
/// constrains them, as rustc infers them), and the integer methods of std are there
/// (`count_ones`, `leading_zeros`, `pow`, `abs_diff`, `unsigned_abs`, `signum`, `rotate_left`,
/// `swap_bytes`, `reverse_bits`, `rem_euclid`, `isqrt`, `wrapping_*`, `saturating_*`,
/// `overflowing_*`, `min`/`max`/`clamp`, `f64::to_bits`/`from_bits`, `From`/`into()` and `as`
/// conversions, `T::MIN`/`T::MAX`/`T::BITS`). An overflow that panics in a debug build, or a
/// division by zero, is a typed error for that lane (`Config::lane_isolation` keeps the other
/// lanes' results); a release build wraps, bit for bit as the scalar function. `checked_*`
/// (an `Option`) and `i128`/`u128` are refused with what to write instead.
///
/// ```
/// use autobatch_runtime::ndarray::array;
/// use autobatch_runtime::{autobatch, Config};
///
/// #[autobatch]
/// fn checksum(seed: u8, n: u16) -> (u8, u32) {
///     let mut acc = seed;
///     let mut i = 0; // a u16: it is compared with `n`
///     while i < n {
///         acc = acc.wrapping_mul(31).wrapping_add(i as u8).rotate_left(3);
///         i += 1;
///     }
///     (acc, acc.count_ones() + u32::from(n))
/// }
///
/// let (sums, ones) = checksum::batch(array![7u8, 255].view(), array![3u16, 300].view(), &Config::default()).unwrap();
/// assert_eq!((sums[1], ones[1]), checksum(255, 300));
/// ```
///
/// ## How it runs
///
/// Straight-line code runs as lane-wise kernels: your own expressions, compiled by rustc, run
/// for each active lane. An `if` with an `else` is part of such a kernel when it is pure: no
/// call to an `#[autobatch]` function or primitive, no assignment, loop, `break`, `continue`
/// or `return` in it, only `let`s in its branches, and no `Vector` in its value. Each lane
/// then runs the branch it takes, as the scalar function does. So is an `if` statement whose
/// branches only assign number or `bool` variables declared before it (`if n % 2 == 0 { n /= 2 }
/// else { n = 3 * n + 1 }`, with or without `else`, nested `if`s of the same kind and `let`s
/// allowed): one kernel computes the variables' new values. Any other `if` branches: the lanes
/// split between its two blocks and meet again after it. A `while` or `for` loop tests its
/// condition where it starts and again where its body ends, so one iteration of a loop whose
/// body is straight-line code is one block and one kernel.
///
/// A tuple result is one variable per element (`ret.0`, `ret.1`, .. in the printed program),
/// and a call of a function or primitive returning a tuple writes one output per element. When
/// a `let` pattern takes the result apart (`let (q, p, _) = f(..);`), its variables are those
/// outputs: nothing is copied on the way. A tuple bound to one name (`let t = f(..);`) is
/// assembled from them first, one more copy of every element.
///
/// ## Calls
///
/// A call's result is typed from the callee's own signature, so it can stand anywhere in an
/// expression with no annotation, whether the callee is later in the file, in another module,
/// or imported with `use` (renamed too); and an unannotated literal passed to it, or a `let` of
/// one, takes the parameter's type (`let x = 5; scale(x)` with `fn scale(n: u16)` makes `x` a
/// `u16`), as rustc types it:
///
/// ```
/// use autobatch_runtime::ndarray::array;
/// use autobatch_runtime::{autobatch, Config};
///
/// #[autobatch]
/// fn hypot(a: f64, b: f64) -> f64 {
///     (square(a) + square(b)).sqrt() + split(a).0
/// }
///
/// #[autobatch]
/// fn square(x: f64) -> f64 {
///     x * x
/// }
///
/// #[autobatch]
/// fn split(x: f64) -> (f64, bool) {
///     (x * 0.0, x > 0.0)
/// }
///
/// fn main() {
///     let out = hypot::batch(array![3.0].view(), array![4.0].view(), &Config::default());
///     assert_eq!(out.unwrap(), array![5.0]);
/// }
/// ```
///
/// How: every `#[autobatch]` and `#[primitive]` item also leaves a hidden `macro_rules!`
/// description of its signature, imported under the item's own name in the macro namespace
/// (`pub(crate)`); the attribute on a caller that meets a callee it does not know yet expands
/// to that description, which applies the attribute again with the signature learnt, once per
/// callee. So callees must be in the same crate, and a function must not share its name with a
/// macro used in the same module (`vec`, `format`, ..). A call to a plain function of the
/// crate, neither `#[autobatch]` nor `#[primitive]`, is an error at the call saying to add one
/// of the two attributes to it, in the same file or another, by path or behind a `use`: the
/// macro reads the crate's files as rustc finds them (`mod x;` files, `#[path]`, `use` items,
/// globs) and reports only what it is sure of. Anything else (a function of another crate, a
/// name an item macro may define) gets rustc's `cannot find macro `f`` at the call, which
/// means the same: add one of the attributes to `f`. A struct without `#[autobatch]` gets one
/// error saying to add it, wherever it is.
///
/// ```compile_fail
/// use autobatch_runtime::autobatch;
///
/// #[autobatch]
/// fn caller(n: i64) -> i64 {
///     helper(n) // `helper` is a plain Rust function: add `#[autobatch]` or `#[primitive]` to it
/// }
///
/// fn helper(n: i64) -> i64 {
///     n + 1
/// }
/// ```
///
/// Annotated functions are items of a module (not of a function body): the generated module
/// reaches its neighbours through `super`.
///
/// ## Structs
///
/// On a struct with named fields of the language's types, `#[autobatch]` checks the fields
/// and generates its struct of arrays, `<Name>Batch`: one public array per leaf field, one
/// row per lane (`Array1` per scalar, `Array2` `[lanes, len]` per `Vector`, a tuple of arrays
/// per tuple), with `from_lanes`, `lane`, `to_lanes` and `len`. Generic, tuple and unit
/// structs, enums and fields of other types are compile errors saying what to write instead.
///
/// ```
/// use autobatch_runtime::{autobatch, Vector};
///
/// #[autobatch]
/// #[derive(Clone, Debug, PartialEq)]
/// pub struct Tree {
///     depth: i64,
///     q: Vector,
///     t: (f64, bool),
/// }
///
/// fn main() {
///     let trees = vec![
///         Tree { depth: 1, q: Vector::from_slice(&[1.0, 2.0]), t: (0.5, true) },
///         Tree { depth: 2, q: Vector::from_slice(&[3.0, 4.0]), t: (1.5, false) },
///     ];
///     let batch = TreeBatch::from_lanes(&trees).unwrap();
///     assert_eq!(batch.q.shape(), &[2, 2]);
///     assert_eq!(batch.t.1[1], false);
///     assert_eq!(batch.to_lanes(), trees);
/// }
/// ```
///
/// Inside functions a struct is a value like any other: parameters, results, locals and
/// loop-carried variables of struct type, passed to and returned from (recursive) calls, field
/// reads (`t.depth`, `t.inner.q`), field assignment (`t.depth += 1`, `t.inner = e`), struct
/// literals with shorthand fields and `..base`, nested structs, tuples of structs. Each field
/// is a variable of its own (`t.depth` in the printed program), so the allocation is per field:
/// only the fields read after a recursive call are stored per call. Batch entry points take a
/// struct parameter as `&<Name>Batch` and return a struct result as `<Name>Batch`. A struct
/// type is found like a callee (from its own hidden description), so it may be declared later
/// in the file or in another module; the struct types named inside a struct must be nameable
/// where the function using it is. Methods on structs, struct patterns and structs without
/// `#[autobatch]` are compile errors saying what to write instead.
///
/// ```
/// use autobatch_runtime::ndarray::array;
/// use autobatch_runtime::{autobatch, Config};
///
/// #[autobatch]
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// pub struct Summary {
///     leaves: i64,
///     weight: f64,
/// }
///
/// #[autobatch]
/// fn walk(depth: i64) -> Summary {
///     if depth <= 0 {
///         return Summary { leaves: 1, weight: 0.5 };
///     }
///     let left = walk(depth - 1);
///     let right = walk(depth - 2);
///     Summary { leaves: left.leaves + right.leaves, ..left }
/// }
///
/// #[autobatch]
/// fn heavier(s: Summary, by: f64) -> Summary {
///     let mut s = s;
///     s.weight *= by;
///     s
/// }
///
/// fn main() {
///     let trees = walk::batch(array![0, 3, 5].view(), &Config::default()).unwrap();
///     assert_eq!(trees.leaves, array![1, 5, 13]);
///     let heavy = heavier::batch(&trees, array![2.0, 2.0, 2.0].view(), &Config::default());
///     assert_eq!(heavy.unwrap().lane(2), Some(heavier(walk(5), 2.0)));
/// }
/// ```
///
/// Generated code reaches the runtime as `::autobatch_runtime`. A crate that depends on it
/// under another name, or re-exports it, says where it is with `#[autobatch(crate = path)]`
/// (and `#[primitive(crate = path)]`), as serde's `crate = ..` does.
#[proc_macro_attribute]
pub fn autobatch(attr: TokenStream, item: TokenStream) -> TokenStream {
    let original: proc_macro2::TokenStream = item.clone().into();
    let attr: proc_macro2::TokenStream = attr.into();
    let item_fn = match syn::parse2::<syn::Item>(original.clone()) {
        Ok(syn::Item::Fn(f)) => f,
        Ok(syn::Item::Struct(s)) => return autobatch_struct(attr, &s, &original).into(),
        Ok(syn::Item::Enum(e)) => {
            let msg = syn::Error::new(
                e.ident.span(),
                "enums cannot be #[autobatch]; write a struct with named fields (a flag or an integer for the variant)",
            )
            .to_compile_error();
            return quote!(#msg #original).into();
        }
        _ => {
            let msg = syn::Error::new(
                proc_macro2::Span::call_site(),
                "#[autobatch] applies to functions and structs",
            )
            .to_compile_error();
            return quote!(#msg #original).into();
        }
    };
    let mut errors = parse::Errors::default();
    let args = parse::args::args(attr.clone(), parse::args::Macro::Autobatch, &mut errors);
    let mut func = parse::func(&item_fn, &mut errors);
    func.learnt.extend(args.learnt.iter().cloned());
    func.structs.extend(args.structs.iter().cloned());
    let first = args.learnt.is_empty() && args.structs.is_empty();
    let runtime = generate::runtime::Runtime::new(args.krate.as_ref());
    // The function's own description, once (on the expansion that learnt nothing yet), before
    // it learns its callees': mutually recursive functions each wait for the other's.
    // A method has no description (`macro_rules!` cannot stand in an `impl`): it is an error.
    let described = (first && item_fn.sig.receiver().is_none())
        .then(|| generate::describe::item_macro(&runtime, &func.name, &func.signature()));
    // The scalar function, once too (so it exists even if a callee cannot be learnt).
    let scalar = first.then(|| original.clone());
    if errors.len() == 0 {
        // Struct layouts first: callees' signatures may name them.
        if let Some(path) = generate::flatten::unknown_struct(&func) {
            match syn::parse_str::<syn::Path>(&path) {
                Ok(p) => {
                    let learn = generate::describe::learn_struct(&runtime, &attr, &p, &original);
                    return quote!(#scalar #described #learn).into();
                }
                Err(e) => errors.at(func.name.span(), e),
            }
        }
        if let Some(callee) = generate::describe::unknown_callee(&func) {
            let learn = generate::describe::learn(&runtime, &attr, &callee, &original);
            return quote!(#scalar #described #learn).into();
        }
    }
    // A construct outside the language leaves the body incomplete: translating it anyway would
    // only add follow-on errors (a variable it never bound, a type it never saw); so would
    // flattening structs whose layouts were not learnt, or translating a body flattening refused.
    let stop = |errors: parse::Errors| -> TokenStream {
        let e = errors.finish().err().map(|e| e.to_compile_error());
        quote!(#e #scalar #described).into()
    };
    if errors.len() > 0 {
        return stop(errors);
    }
    // Entry points take and return structs as their structs of arrays: their layouts known.
    for (_, t) in &mut func.params {
        *t = t.resolved(&func.structs);
    }
    func.ret = func.ret.resolved(&func.structs);
    let flat = generate::flatten::flatten(&func, &mut errors);
    if errors.len() > 0 {
        return stop(errors);
    }
    let lets = generate::infer::function::let_types(&flat);
    let mut record = generate::translate::translate(&flat, &lets, &mut errors);
    if errors.len() > 0 {
        return stop(errors);
    }
    generate::merge::merge_kernels(&runtime, &mut record);
    match generate::ir::compile_time(&record, &func.name.to_string()) {
        Ok(ct) => {
            let generated = generate::emit::function(&runtime, &item_fn, &func, &record, &ct);
            let context = func
                .context
                .as_ref()
                .map(|c| generate::context::not_a_struct(&runtime, c));
            quote!(#scalar #described #generated #context).into()
        }
        Err(message) => {
            let e = syn::Error::new(
                func.name.span(),
                format!("#[autobatch] internal error: {message}"),
            )
            .to_compile_error();
            quote!(#e #scalar #described).into()
        }
    }
}

/// `#[autobatch]` on a struct: checked, documented, and given its struct of arrays.
fn autobatch_struct(
    attr: proc_macro2::TokenStream,
    item: &syn::ItemStruct,
    original: &proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let mut errors = parse::Errors::default();
    let args = parse::args::args(attr, parse::args::Macro::Autobatch, &mut errors);
    let def = parse::item::struct_def(item, &mut errors);
    if let Err(e) = errors.finish() {
        let e = e.to_compile_error();
        return quote!(#e #original);
    }
    let runtime = generate::runtime::Runtime::new(args.krate.as_ref());
    let described = generate::describe::struct_macro(&runtime, &def.name, &def.fields);
    let expanded = generate::structs::expand(&runtime, item, &def);
    quote!(#expanded #described)
}

/// Hidden: a callee's description re-applying `#[autobatch]` to a caller with the callee's
/// signature learnt (see `generate/describe.rs`); reached as `autobatch_runtime::__private::resume`.
#[doc(hidden)]
#[proc_macro]
pub fn resume(input: TokenStream) -> TokenStream {
    match generate::describe::resume(input.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// Declares a function as a primitive of `#[autobatch]` code: opaque to the interpreter, it runs
/// as one kernel per block for the active lanes.
///
/// Without arguments the scalar function is mapped over the active lanes. With
/// `#[primitive(batched = f_batched)]`, `f_batched` receives every active lane's inputs at once
/// (`ArrayView1` per scalar parameter, `ArrayView2` per `Vector` parameter, one row per active
/// lane) and returns the outputs as arrays of the same shapes (a tuple for a tuple result): a
/// log-density gradient for all chains as one matrix-matrix product, say. Parameters may be
/// taken by shared reference (`q: &Vector`). A reference to a type outside the language
/// (`model: &Model`; not an `#[autobatch] struct`, refused as in `#[autobatch]`) is the run's
/// shared context, as in `#[autobatch]`: both forms receive it
/// in its place (`f_batched(model: &Model, q: ArrayView2<f64>)`), and `check_agreement` takes it
/// first.
///
/// The generated module of the same name has `scalar_kernel()`, `kernel()`, `output_types()` and,
/// with a batched form, `batched_kernel()` and `check_agreement(inputs, vector_len, tolerance)`,
/// which checks the two forms against each other.
///
/// ```
/// use autobatch_runtime::ndarray::{array, Array1, ArrayView1};
/// use autobatch_runtime::{autobatch, primitive, Config};
///
/// #[primitive(batched = square_all)]
/// fn square(x: f64) -> f64 {
///     x * x
/// }
///
/// fn square_all(xs: ArrayView1<f64>) -> Array1<f64> {
///     xs.mapv(|x| x * x)
/// }
///
/// #[autobatch]
/// fn sum_of_squares(a: f64, b: f64) -> f64 {
///     let x: f64 = square(a);
///     x + square(b)
/// }
///
/// fn main() {
///     let (a, b) = (array![1.0, 2.0], array![3.0, 4.0]);
///     let out = sum_of_squares::batch(a.view(), b.view(), &Config::default()).unwrap();
///     assert_eq!(out, array![10.0, 20.0]);
///     square::check_agreement(
///         &[autobatch_runtime::Column::from_view1(a.view())],
///         0,
///         autobatch_runtime::primitive::Tolerance::Exact,
///     )
///     .unwrap();
/// }
/// ```
#[proc_macro_attribute]
pub fn primitive(attr: TokenStream, item: TokenStream) -> TokenStream {
    let original: proc_macro2::TokenStream = item.clone().into();
    match syn::parse2::<syn::ItemFn>(original.clone()) {
        Ok(f) => match primitive::expand(attr.into(), f) {
            Ok(tokens) => tokens.into(),
            Err(e) => {
                let e = e.to_compile_error();
                quote!(#e #original).into()
            }
        },
        Err(e) => {
            let msg =
                syn::Error::new(e.span(), "#[primitive] applies to functions").to_compile_error();
            quote!(#msg #original).into()
        }
    }
}

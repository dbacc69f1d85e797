//! `#[autobatch]`: compiles ordinary scalar Rust functions into autobatch Programs at compile time.
//!
//! The entry point is thin: [`parse`] turns the function into the macro's own AST (collecting
//! every unsupported construct as a spanned error), [`generate`] lowers it to IR, analyses that
//! IR at compile time and emits the code. On any error the original function is emitted too, so
//! the IDE keeps working.

mod generate;
mod parse;

use proc_macro::TokenStream;
use quote::quote;

/// Compiles a scalar Rust function for batched execution; see the `autobatch_runtime` crate
/// docs for the language and the generated API.
#[proc_macro_attribute]
pub fn autobatch(attr: TokenStream, item: TokenStream) -> TokenStream {
    let original: proc_macro2::TokenStream = item.clone().into();
    let attr: proc_macro2::TokenStream = attr.into();
    let item_fn = match syn::parse2::<syn::ItemFn>(original.clone()) {
        Ok(f) => f,
        Err(e) => {
            let msg =
                syn::Error::new(e.span(), "#[autobatch] applies to functions").to_compile_error();
            return quote!(#msg #original).into();
        }
    };
    let mut errors = parse::Errors::default();
    if !attr.is_empty() {
        errors.at(&attr, "#[autobatch] takes no arguments");
    }
    let func = parse::func(&item_fn, &mut errors);
    let lowered = generate::lower::lower(&func, &mut errors);
    if let Err(e) = errors.finish() {
        let e = e.to_compile_error();
        return quote!(#e #original).into();
    }
    match generate::ir::compile_time(&lowered, &func.name.to_string()) {
        Ok(ct) => {
            let generated = generate::emit::function(&item_fn, &func, &lowered, &ct);
            quote!(#original #generated).into()
        }
        Err(message) => {
            let e = syn::Error::new(
                func.name.span(),
                format!("#[autobatch] internal error: {message}"),
            )
            .to_compile_error();
            quote!(#e #original).into()
        }
    }
}

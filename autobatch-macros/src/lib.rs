//! `#[autobatch]`: compiles ordinary scalar Rust functions into autobatch Programs at compile time.

use proc_macro::TokenStream;

/// Placeholder: passes the item through unchanged until the compiler lands.
#[proc_macro_attribute]
pub fn autobatch(_attr: TokenStream, item: TokenStream) -> TokenStream {
    item
}

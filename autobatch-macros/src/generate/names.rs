//! The generated code's own names, hygienic: `quote!` and `format_ident!` as the quote crate's,
//! except that every identifier they write gets `Span::mixed_site()`. Generated locals
//! (`__ins`, `__lane`, `__k`, `__i0`, ..) then never meet the user's, whatever the user names a
//! variable or parameter, while items and paths still resolve where the function is (so
//! `f::batch` and the runtime's paths work as before). A file whose generated code wraps the
//! user's own tokens imports these two in place of the quote crate's.

/// `quote::quote!` with every identifier written in the template spanned `Span::mixed_site()`
/// (interpolated tokens keep their own spans).
macro_rules! hygienic_quote {
    ($($tt:tt)*) => {
        ::quote::quote_spanned!(::proc_macro2::Span::mixed_site()=> $($tt)*)
    };
}

/// `quote::format_ident!` spanned `Span::mixed_site()`.
macro_rules! hygienic_format_ident {
    ($fmt:literal $(, $arg:expr)* $(,)?) => {
        ::quote::format_ident!($fmt $(, $arg)*, span = ::proc_macro2::Span::mixed_site())
    };
}

pub(crate) use hygienic_format_ident as format_ident;
pub(crate) use hygienic_quote as quote;

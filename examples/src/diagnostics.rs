//! MCMC diagnostics: split R-hat and bulk effective sample size.

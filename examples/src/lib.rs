//! Shared code for the runnable autobatch examples.

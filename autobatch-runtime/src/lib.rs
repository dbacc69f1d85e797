//! Executes autobatch Programs over a batch of lanes: stackless and the full VM, on ndarray.

//! The `k1s` command line: parses flags and wires the crates together; no logic lives here.
fn main() {}

//! Black-box tests of the built `k1s` binary with real clients live in `tests/tests/`.

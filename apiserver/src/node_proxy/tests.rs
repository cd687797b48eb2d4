//! Tests of the synthetic logs and connect errors.

//! Tests of the metrics synthesis.

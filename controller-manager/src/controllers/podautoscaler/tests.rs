//! Tests of the HPA normalization and quantity helpers.

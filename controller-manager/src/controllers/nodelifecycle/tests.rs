//! Unit tests of the node lifecycle decisions.

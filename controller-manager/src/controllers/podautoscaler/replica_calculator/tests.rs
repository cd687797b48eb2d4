//! Replica calculation facts from upstream replica_calculator_test.go.

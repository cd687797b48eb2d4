//! Per-kind round-trip tests of the protobuf codec.

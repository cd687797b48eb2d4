//! Tests of PodSecurity.

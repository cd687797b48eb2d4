//! The Kubernetes API server: TLS, the filter chain, discovery and the generic registry over the store.

pub mod discovery;
pub mod openapi;
pub mod patch;
pub mod table;

//! The Kubernetes API server: TLS, the filter chain, discovery and the generic registry over the store.

pub mod admission;
pub mod allocator;
pub mod audit;
pub mod auth;
pub mod authorization;
pub mod bootstrap;
pub mod chain;
pub mod conversion;
pub mod discovery;
pub mod encoding;
pub mod errors;
pub mod field_validation;
pub mod handlers;
pub mod metrics;
pub mod openapi;
pub mod overload;
pub mod patch;
pub mod protobuf;
pub mod registry;
pub mod request;
pub mod reviews;
pub mod server;
pub mod strategies;
pub mod table;
pub mod tls;

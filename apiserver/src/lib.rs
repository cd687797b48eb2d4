//! The Kubernetes API server: TLS, the filter chain, discovery and the generic registry over the store.

//! The web dashboard: static assets embedded in the binary (`assets`), served at `/ui/` by the
//! API server for bearer-token users, and by `k1s dashboard` (`dashboard`), a loopback-only,
//! kubectl-proxy-like server that forwards the browser's API calls with a kubeconfig's
//! credentials behind a one-time login link.

pub mod assets;
pub mod dashboard;

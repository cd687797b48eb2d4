//! Cluster bootstrap: PKI, kubeconfig files, bootstrap tokens and the init / join flows.

pub mod api;
pub mod cmd;
pub mod config;
pub mod copycerts;
pub mod discovery;
mod fsutil;
pub mod init;
pub mod join;
pub mod jws;
pub mod kubeconfig;
pub mod phases;
pub mod pki;
pub mod rotate;
pub mod token;

pub use kubeconfig::{Kubeconfig, KubeconfigError, ResolvedContext, write_admin_kubeconfig};
pub use pki::{Pki, PkiError, PkiOptions, client_identity, ensure_pki};

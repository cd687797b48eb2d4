//! Cluster bootstrap: PKI, kubeconfig files, bootstrap tokens and the init / join flows.

mod fsutil;
pub mod kubeconfig;
pub mod pki;

pub use kubeconfig::{Kubeconfig, KubeconfigError, ResolvedContext, write_admin_kubeconfig};
pub use pki::{Pki, PkiError, PkiOptions, client_identity, ensure_pki};

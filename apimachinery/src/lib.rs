//! Shared API machinery: group/version/kind names, the built-in kind catalog, selectors, `Status`
//! errors, resource quantities and the quota usage arithmetic shared by admission and controller.

pub mod catalog;
pub mod cron;
pub mod gofmt;
pub mod gvk;
pub mod ip;
pub mod meta;
pub mod pod_refs;
pub mod quantity;
pub mod quota;
pub mod selector;
pub mod simulated_command;
pub mod status;
pub mod validation;

pub use gvk::{GroupKind, GroupResource, GroupVersion, GroupVersionKind, GroupVersionResource};
pub use status::{ApiError, FieldError, Reason};

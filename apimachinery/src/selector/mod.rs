//! Label selectors (`app=web,tier in (a,b)`, `metav1.LabelSelector`) and field selectors
//! (`metadata.name=x`), parsed and matched as upstream does.

mod field;
mod label;
mod parser;

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;

use serde_json::Value;

pub use field::{FieldOperator, FieldRequirement, FieldSelector};
pub use label::{LabelSelector, Operator, Requirement};

/// A selector that could not be parsed or built; the message follows upstream's wording
/// (`unable to parse requirement: ...`, `invalid selector: ...`, `field label not supported: ...`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SelectorError {
    message: String,
}

impl SelectorError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

/// A set of labels a selector can be matched against.
pub trait Labels {
    /// The value of `key`, if the label is present.
    fn get_label(&self, key: &str) -> Option<&str>;
}

impl Labels for BTreeMap<String, String> {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl<S: BuildHasher> Labels for HashMap<String, String, S> {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// A JSON `metadata.labels` object; non-string values count as absent.
impl Labels for serde_json::Map<String, Value> {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }
}

impl Labels for [(&str, &str)] {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }
}

impl<L: Labels + ?Sized> Labels for &L {
    fn get_label(&self, key: &str) -> Option<&str> {
        (**self).get_label(key)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

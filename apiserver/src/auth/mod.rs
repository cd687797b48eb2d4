//! Who is calling and what they may do: the user a request authenticates as, and the attributes
//! authorization decides on. Authenticators and authorizers live in submodules.

pub mod authn;

pub mod rbac;

use std::collections::BTreeMap;

/// The caller, as authentication established it (upstream's user.Info).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    pub fn new(name: impl Into<String>, groups: Vec<String>) -> Self {
        UserInfo {
            name: name.into(),
            groups,
            ..Default::default()
        }
    }

    /// A service account as its tokens authenticate it (`system:serviceaccount:<ns>:<name>` in
    /// `system:serviceaccounts` and `system:serviceaccounts:<ns>`).
    pub fn service_account(namespace: &str, name: &str) -> Self {
        UserInfo::new(
            format!("system:serviceaccount:{namespace}:{name}"),
            vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
        )
    }

    pub fn anonymous() -> Self {
        UserInfo::new("system:anonymous", vec!["system:unauthenticated".into()])
    }

    pub fn is_anonymous(&self) -> bool {
        self.name == "system:anonymous"
    }

    /// Groups as upstream reports them: every authenticated user is also `system:authenticated`.
    pub fn effective_groups(&self) -> Vec<String> {
        let mut groups = self.groups.clone();
        if !self.is_anonymous() && !groups.iter().any(|g| g == "system:authenticated") {
            groups.push("system:authenticated".into());
        }
        groups
    }
}

/// What a request asks to do, as authorization sees it (upstream's authorizer.Attributes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    pub user: UserInfo,
    /// Resource verbs (get, list, watch, create, update, patch, delete, deletecollection) or,
    /// for other paths, the lower-case HTTP method (get, post, put, ...). Also `impersonate`,
    /// `bind`, `escalate`, `approve`, `use` for the special checks.
    pub verb: String,
    pub is_resource_request: bool,
    pub namespace: String,
    pub api_group: String,
    pub api_version: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    /// The request path, for non-resource requests.
    pub path: String,
}

/// An authorizer's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow(String),
    Deny(String),
    NoOpinion(String),
}

//! Group/version/kind/resource names and parsing of `apiVersion` strings, shaped like
//! upstream's `k8s.io/apimachinery/pkg/runtime/schema`.

use std::fmt;

/// An `apiVersion` string that is not `version` or `group/version`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GvkError {
    /// More than one `/` in an `apiVersion` (upstream: `ParseGroupVersion`).
    #[error("unexpected GroupVersion string: {0}")]
    InvalidGroupVersion(String),
}

/// Splits an `apiVersion` into `(group, version)` without allocating.
///
/// `"v1"` is `("", "v1")`, `"apps/v1"` is `("apps", "v1")`, `""` and `"/"` are `("", "")`.
pub fn split_api_version(api_version: &str) -> Result<(&str, &str), GvkError> {
    if api_version.is_empty() || api_version == "/" {
        return Ok(("", ""));
    }
    let mut parts = api_version.splitn(3, '/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(version), None, None) => Ok(("", version)),
        (Some(group), Some(version), None) => Ok((group, version)),
        _ => Err(GvkError::InvalidGroupVersion(api_version.to_string())),
    }
}

/// Formats a group and version as an `apiVersion`: `v1` for the core group, else `group/version`.
pub fn format_api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// An API group and version (`apps/v1`; the core group is `""`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupVersion {
    pub group: String,
    pub version: String,
}

impl GroupVersion {
    pub fn new(group: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
        }
    }

    /// Parses an `apiVersion` string (`v1`, `apps/v1`).
    pub fn parse(api_version: &str) -> Result<Self, GvkError> {
        let (group, version) = split_api_version(api_version)?;
        Ok(Self::new(group, version))
    }

    /// True for the legacy core group served under `/api`.
    pub fn is_core(&self) -> bool {
        self.group.is_empty()
    }

    /// The `apiVersion` string (same as `Display`).
    pub fn api_version(&self) -> String {
        format_api_version(&self.group, &self.version)
    }

    pub fn with_kind(&self, kind: impl Into<String>) -> GroupVersionKind {
        GroupVersionKind::new(self.group.clone(), self.version.clone(), kind)
    }

    pub fn with_resource(&self, resource: impl Into<String>) -> GroupVersionResource {
        GroupVersionResource::new(self.group.clone(), self.version.clone(), resource)
    }
}

impl fmt::Display for GroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.version)
        } else {
            write!(f, "{}/{}", self.group, self.version)
        }
    }
}

impl std::str::FromStr for GroupVersion {
    type Err = GvkError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// A kind in a group and version (`apps/v1, Kind=Deployment`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupVersionKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl GroupVersionKind {
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        kind: impl Into<String>,
    ) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// Builds a GVK from an object's `apiVersion` and `kind` fields.
    pub fn from_api_version_kind(api_version: &str, kind: &str) -> Result<Self, GvkError> {
        let (group, version) = split_api_version(api_version)?;
        Ok(Self::new(group, version, kind))
    }

    pub fn api_version(&self) -> String {
        format_api_version(&self.group, &self.version)
    }

    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(self.group.clone(), self.version.clone())
    }

    pub fn group_kind(&self) -> GroupKind {
        GroupKind::new(self.group.clone(), self.kind.clone())
    }
}

impl fmt::Display for GroupVersionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

/// A resource (plural, lowercase) in a group and version (`apps/v1, Resource=deployments`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupVersionResource {
    pub group: String,
    pub version: String,
    pub resource: String,
}

impl GroupVersionResource {
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        resource: impl Into<String>,
    ) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
        }
    }

    pub fn api_version(&self) -> String {
        format_api_version(&self.group, &self.version)
    }

    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(self.group.clone(), self.version.clone())
    }

    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(self.group.clone(), self.resource.clone())
    }
}

impl fmt::Display for GroupVersionResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}, Resource={}",
            self.group, self.version, self.resource
        )
    }
}

/// A resource qualified by its group; displays as upstream: `pods`, `deployments.apps`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupResource {
    pub group: String,
    pub resource: String,
}

impl GroupResource {
    pub fn new(group: impl Into<String>, resource: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            resource: resource.into(),
        }
    }

    /// A resource in the core group.
    pub fn core(resource: impl Into<String>) -> Self {
        Self::new("", resource)
    }

    /// True when both group and resource are empty (upstream `GroupResource.Empty`).
    pub fn is_empty(&self) -> bool {
        self.group.is_empty() && self.resource.is_empty()
    }

    /// Parses `deployments.apps` / `pods` (first dot splits resource from group), as
    /// upstream's `ParseGroupResource`.
    pub fn parse(s: &str) -> Self {
        match s.split_once('.') {
            Some((resource, group)) => Self::new(group, resource),
            None => Self::new("", s),
        }
    }
}

impl fmt::Display for GroupResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// A kind qualified by its group; displays as upstream: `Pod`, `Deployment.apps`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupKind {
    pub group: String,
    pub kind: String,
}

impl GroupKind {
    pub fn new(group: impl Into<String>, kind: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            kind: kind.into(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.group.is_empty() && self.kind.is_empty()
    }
}

impl fmt::Display for GroupKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.kind)
        } else {
            write!(f, "{}.{}", self.kind, self.group)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_api_versions() {
        assert_eq!(
            GroupVersion::parse("v1").unwrap(),
            GroupVersion::new("", "v1")
        );
        assert_eq!(
            GroupVersion::parse("apps/v1").unwrap(),
            GroupVersion::new("apps", "v1")
        );
        assert_eq!(
            GroupVersion::parse("rbac.authorization.k8s.io/v1").unwrap(),
            GroupVersion::new("rbac.authorization.k8s.io", "v1")
        );
        assert_eq!(GroupVersion::parse("").unwrap(), GroupVersion::default());
        assert_eq!(GroupVersion::parse("/").unwrap(), GroupVersion::default());
        let err = GroupVersion::parse("a/b/c").unwrap_err();
        assert_eq!(err.to_string(), "unexpected GroupVersion string: a/b/c");
        assert!("x/y/".parse::<GroupVersion>().is_err());
    }

    #[test]
    fn formats_api_versions() {
        assert_eq!(GroupVersion::new("", "v1").to_string(), "v1");
        assert_eq!(GroupVersion::new("apps", "v1").to_string(), "apps/v1");
        assert_eq!(GroupVersion::new("apps", "v1").api_version(), "apps/v1");
        assert_eq!(format_api_version("", "v1"), "v1");
        assert_eq!(format_api_version("batch", "v1"), "batch/v1");
        for s in ["v1", "apps/v1", "autoscaling/v2"] {
            assert_eq!(GroupVersion::parse(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn gvk_and_gvr() {
        let gvk = GroupVersionKind::from_api_version_kind("apps/v1", "Deployment").unwrap();
        assert_eq!(gvk, GroupVersionKind::new("apps", "v1", "Deployment"));
        assert_eq!(gvk.api_version(), "apps/v1");
        assert_eq!(gvk.to_string(), "apps/v1, Kind=Deployment");
        assert_eq!(gvk.group_kind().to_string(), "Deployment.apps");
        let pod = GroupVersionKind::from_api_version_kind("v1", "Pod").unwrap();
        assert_eq!(pod.group, "");
        assert_eq!(pod.group_kind().to_string(), "Pod");
        assert_eq!(pod.api_version(), "v1");

        let gvr = GroupVersion::new("apps", "v1").with_resource("deployments");
        assert_eq!(gvr.to_string(), "apps/v1, Resource=deployments");
        assert_eq!(gvr.group_resource().to_string(), "deployments.apps");
        assert_eq!(gvr.group_version(), GroupVersion::new("apps", "v1"));
        let pods = GroupVersion::new("", "v1").with_resource("pods");
        assert_eq!(pods.to_string(), "/v1, Resource=pods");
        assert_eq!(pods.group_resource().to_string(), "pods");
    }

    #[test]
    fn group_resource_display_and_parse() {
        assert_eq!(GroupResource::core("pods").to_string(), "pods");
        assert_eq!(
            GroupResource::new("apps", "deployments").to_string(),
            "deployments.apps"
        );
        assert_eq!(
            GroupResource::parse("deployments.apps"),
            GroupResource::new("apps", "deployments")
        );
        assert_eq!(
            GroupResource::parse("roles.rbac.authorization.k8s.io"),
            GroupResource::new("rbac.authorization.k8s.io", "roles")
        );
        assert_eq!(GroupResource::parse("pods"), GroupResource::core("pods"));
        assert!(GroupResource::default().is_empty());
        assert!(!GroupResource::core("pods").is_empty());
    }
}

//! Tests of the patch module: a small Pod/Deployment-like `PatchSchema` and shared helpers.
#![allow(clippy::unwrap_used)]

mod directives;
mod json;
mod strategic;

use k1s_apimachinery::status::ApiError;
use serde_json::Value;

use super::{FieldPatchMeta, PatchSchema, PatchType, apply_patch};

/// Patch metadata for a few upstream types, with upstream's strategies and merge keys.
pub(super) struct TestSchema {
    fields: Vec<(&'static str, &'static str, FieldPatchMeta)>,
}

fn meta(strategies: &str, merge_key: Option<&str>, value_type: Option<&str>) -> FieldPatchMeta {
    FieldPatchMeta {
        strategies: strategies
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        merge_key: merge_key.map(str::to_string),
        list_type: None,
        value_type: value_type.map(str::to_string),
    }
}

impl TestSchema {
    pub(super) fn new() -> Self {
        let fields = vec![
            ("Pod", "metadata", meta("", None, Some("ObjectMeta"))),
            ("Pod", "spec", meta("", None, Some("PodSpec"))),
            ("ObjectMeta", "name", meta("", None, None)),
            ("ObjectMeta", "labels", meta("", None, None)),
            ("ObjectMeta", "finalizers", meta("merge", None, None)),
            (
                "ObjectMeta",
                "ownerReferences",
                meta("merge", Some("uid"), Some("OwnerReference")),
            ),
            (
                "PodSpec",
                "containers",
                meta("merge", Some("name"), Some("Container")),
            ),
            (
                "PodSpec",
                "volumes",
                meta("merge,retainKeys", Some("name"), Some("Volume")),
            ),
            ("PodSpec", "tolerations", meta("", None, Some("Toleration"))),
            ("PodSpec", "nodeName", meta("", None, None)),
            ("PodSpec", "nodeSelector", meta("", None, None)),
            (
                "PodSpec",
                "securityContext",
                meta("", None, Some("PodSecurityContext")),
            ),
            ("Container", "name", meta("", None, None)),
            ("Container", "image", meta("", None, None)),
            ("Container", "args", meta("", None, None)),
            (
                "Container",
                "ports",
                meta("merge", Some("containerPort"), Some("ContainerPort")),
            ),
            (
                "Container",
                "env",
                meta("merge", Some("name"), Some("EnvVar")),
            ),
            (
                "Container",
                "volumeMounts",
                meta("merge", Some("mountPath"), Some("VolumeMount")),
            ),
            ("Volume", "name", meta("", None, None)),
            (
                "Volume",
                "configMap",
                meta("", None, Some("ConfigMapVolumeSource")),
            ),
            (
                "Volume",
                "emptyDir",
                meta("", None, Some("EmptyDirVolumeSource")),
            ),
            ("Deployment", "metadata", meta("", None, Some("ObjectMeta"))),
            ("Deployment", "spec", meta("", None, Some("DeploymentSpec"))),
            ("DeploymentSpec", "replicas", meta("", None, None)),
            (
                "DeploymentSpec",
                "strategy",
                meta("retainKeys", None, Some("DeploymentStrategy")),
            ),
            (
                "DeploymentSpec",
                "template",
                meta("", None, Some("PodTemplateSpec")),
            ),
            ("DeploymentStrategy", "type", meta("", None, None)),
            (
                "DeploymentStrategy",
                "rollingUpdate",
                meta("", None, Some("RollingUpdateDeployment")),
            ),
            (
                "PodTemplateSpec",
                "metadata",
                meta("", None, Some("ObjectMeta")),
            ),
            ("PodTemplateSpec", "spec", meta("", None, Some("PodSpec"))),
            // A map field (additionalProperties) whose values are objects.
            ("Registry", "entries", meta("", None, Some("Entry"))),
            ("Entry", "tags", meta("merge", None, None)),
        ];
        Self { fields }
    }
}

impl PatchSchema for TestSchema {
    fn field(&self, type_name: &str, field: &str) -> Option<FieldPatchMeta> {
        self.fields
            .iter()
            .find(|(t, f, _)| *t == type_name && *f == field)
            .map(|(_, _, m)| m.clone())
    }
}

/// Applies a strategic merge patch given as JSON to `original` of type `root`.
pub(super) fn smp(root: &str, original: &Value, patch: &Value) -> Result<Value, ApiError> {
    let schema = TestSchema::new();
    apply_patch(
        PatchType::StrategicMerge,
        original,
        patch.to_string().as_bytes(),
        Some((&schema, root)),
    )
}

/// A table case: a name, the original, the patch and the expected result.
pub(super) type Case = (&'static str, Value, Value, Value);

/// Runs strategic merge patch cases against `root`, failing with the case name.
pub(super) fn run_smp_cases(root: &str, cases: Vec<Case>) {
    for (name, original, patch, want) in cases {
        match smp(root, &original, &patch) {
            Ok(got) => assert_eq!(got, want, "case {name:?}"),
            Err(e) => panic!("case {name:?}: unexpected error {e:?}"),
        }
    }
}

/// Runs strategic merge patch cases that must fail with `code` and a message containing `msg`.
pub(super) fn run_smp_error_cases(root: &str, cases: Vec<(&'static str, Value, Value, u16, &str)>) {
    for (name, original, patch, code, msg) in cases {
        match smp(root, &original, &patch) {
            Ok(got) => panic!("case {name:?}: expected an error, got {got}"),
            Err(e) => {
                assert_eq!(e.code, code, "case {name:?}: {e:?}");
                assert!(
                    e.message.contains(msg),
                    "case {name:?}: message {:?} lacks {msg:?}",
                    e.message
                );
            }
        }
    }
}

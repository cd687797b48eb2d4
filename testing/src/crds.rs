//! CustomResourceDefinitions for tests: read from manifest files, created, and waited for until
//! discovery serves them.

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};

use crate::Error;

/// How often discovery is asked again while waiting.
const POLL: Duration = Duration::from_millis(10);

/// The CustomResourceDefinitions in the `.yaml`, `.yml` and `.json` files of `dir`, in file-name
/// order: multi-document YAML and `List`s are read, other kinds skipped (as envtest's
/// `CRDDirectoryPaths`), subdirectories not entered. A file that does not parse is an error
/// naming it.
pub fn read_crds(dir: &Path) -> Result<Vec<CustomResourceDefinition>, Error> {
    let mut files: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        })
        .collect();
    files.sort();
    let mut crds = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path)?;
        let manifest = |message: String| Error::Manifest {
            path: path.clone(),
            message,
        };
        let docs: Vec<serde_json::Value> = if path.extension().is_some_and(|e| e == "json") {
            vec![serde_json::from_str(&text).map_err(|e| manifest(e.to_string()))?]
        } else {
            serde_saphyr::from_multiple(&text).map_err(|e| manifest(e.to_string()))?
        };
        for doc in docs {
            // A `List` (as `kubectl get -o yaml` writes) holds its objects in `items`.
            let objects = match doc.get("kind").and_then(|k| k.as_str()) {
                Some("List") => doc
                    .get("items")
                    .and_then(|i| i.as_array())
                    .cloned()
                    .unwrap_or_default(),
                _ => vec![doc],
            };
            for object in objects {
                if object.get("kind").and_then(|k| k.as_str()) != Some("CustomResourceDefinition") {
                    continue;
                }
                crds.push(serde_json::from_value(object).map_err(|e| manifest(e.to_string()))?);
            }
        }
    }
    Ok(crds)
}

/// Creates each CRD; an existing one of that name gets this spec.
pub(crate) async fn create(
    client: &kube::Client,
    crds: Vec<CustomResourceDefinition>,
) -> Result<Vec<CustomResourceDefinition>, Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut stored = Vec::with_capacity(crds.len());
    for crd in crds {
        match api.create(&PostParams::default(), &crd).await {
            Ok(c) => stored.push(c),
            Err(kube::Error::Api(s)) if s.code == 409 => {
                let name = crd.metadata.name.clone().unwrap_or_default();
                let mut current = api.get(&name).await?;
                current.spec = crd.spec;
                stored.push(api.replace(&name, &PostParams::default(), &current).await?);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(stored)
}

/// Waits until every served version of each CRD is in discovery.
pub(crate) async fn wait_all_served(
    client: &kube::Client,
    crds: &[CustomResourceDefinition],
) -> Result<(), Error> {
    for crd in crds {
        for version in crd.spec.versions.iter().filter(|v| v.served) {
            wait_served(
                client,
                &crd.spec.group,
                &version.name,
                &crd.spec.names.plural,
                crate::DEFAULT_TIMEOUT,
            )
            .await?;
        }
    }
    Ok(())
}

/// Polls discovery until `group/version` lists `plural`.
pub(crate) async fn wait_served(
    client: &kube::Client,
    group: &str,
    version: &str,
    plural: &str,
    timeout: Duration,
) -> Result<(), Error> {
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let started = Instant::now();
    loop {
        let listed = if group.is_empty() {
            client.list_core_api_resources(version).await
        } else {
            client.list_api_group_resources(&group_version).await
        };
        if let Ok(list) = listed
            && list.resources.iter().any(|r| r.name == plural)
        {
            return Ok(());
        }
        if started.elapsed() >= timeout {
            return Err(Error::Timeout {
                what: format!("{plural}.{group_version} to be served"),
                after: timeout,
            });
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(plural: &str, kind: &str) -> String {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: {plural}.test.k1s.io}}\nspec:\n  group: test.k1s.io\n  scope: Namespaced\n  names: {{plural: {plural}, kind: {kind}}}\n  versions: [{{name: v1, served: true, storage: true}}]\n"
        )
    }

    #[test]
    fn reads_yaml_streams_lists_and_skips_the_rest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path();
        std::fs::write(
            p.join("a.yaml"),
            format!(
                "{}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}\n---\n{}",
                crd("widgets", "Widget"),
                crd("gadgets", "Gadget")
            ),
        )
        .expect("write");
        let gizmo: serde_json::Value =
            serde_saphyr::from_str(&crd("gizmos", "Gizmo")).expect("yaml");
        std::fs::write(
            p.join("b.json"),
            serde_json::json!({"kind": "List", "items": [gizmo]}).to_string(),
        )
        .expect("write");
        std::fs::write(p.join("c.yml"), crd("doohickeys", "Doohickey")).expect("write");
        std::fs::write(p.join("README.md"), "not a manifest").expect("write");
        std::fs::create_dir(p.join("sub")).expect("mkdir");
        std::fs::write(p.join("sub/d.yaml"), crd("nested", "Nested")).expect("write");

        let names: Vec<String> = read_crds(p)
            .expect("read")
            .into_iter()
            .map(|c| c.spec.names.plural)
            .collect();
        assert_eq!(names, ["widgets", "gadgets", "gizmos", "doohickeys"]);

        std::fs::write(p.join("e.yaml"), "kind: [unclosed").expect("write");
        match read_crds(p) {
            Err(Error::Manifest { path, .. }) => assert!(path.ends_with("e.yaml")),
            other => panic!("a broken manifest was accepted: {other:?}"),
        }
        assert!(matches!(read_crds(&p.join("missing")), Err(Error::Io(_))));
    }
}

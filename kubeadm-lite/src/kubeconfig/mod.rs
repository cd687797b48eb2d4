//! kubeconfig files: the standard v1 `Config` format, kubeadm-style admin.conf, and resolving a
//! context into the server address and credentials a client needs.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize};

use crate::fsutil::{self, SECRET_MODE};

/// The user kubeadm puts in admin.conf.
pub const ADMIN_USER: &str = "kubernetes-admin";

/// Errors from reading, writing or resolving a kubeconfig.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: not a valid kubeconfig: {reason}", path.display())]
    Yaml { path: PathBuf, reason: String },
    #[error("kubeconfig is not valid YAML: {0}")]
    YamlText(String),
    #[error("cannot serialize kubeconfig: {0}")]
    Serialize(String),
    #[error("kubeconfig has kind {0:?}, expected \"Config\"")]
    WrongKind(String),
    #[error("kubeconfig has no current-context and no context was named")]
    NoCurrentContext,
    #[error("context {0:?} not found in kubeconfig")]
    ContextNotFound(String),
    #[error("context {context:?} names no cluster")]
    ContextWithoutCluster { context: String },
    #[error("cluster {cluster:?} (used by context {context:?}) not found in kubeconfig")]
    ClusterNotFound { context: String, cluster: String },
    #[error("user {user:?} (used by context {context:?}) not found in kubeconfig")]
    UserNotFound { context: String, user: String },
    #[error("cluster {cluster:?} has no server address")]
    NoServer { cluster: String },
    #[error("{field}: invalid base64: {reason}")]
    Base64 { field: String, reason: String },
    #[error("{field}: cannot read {}: {source}", path.display())]
    CredentialFile {
        field: String,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Treats an explicit YAML `null` like an absent key, as client-go does.
fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A kubeconfig file (`apiVersion: v1`, `kind: Config`). Keys are spelled as kubectl writes
/// them; fields this type does not model (exec plugins, preferences, extensions, ...) are kept
/// in `extra` so that a load/save round trip does not drop them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Kubeconfig {
    #[serde(rename = "apiVersion", default, deserialize_with = "null_as_default")]
    pub api_version: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub kind: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub clusters: Vec<NamedCluster>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub contexts: Vec<NamedContext>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub users: Vec<NamedUser>,
    #[serde(
        rename = "current-context",
        default,
        deserialize_with = "null_as_default"
    )]
    pub current_context: String,
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NamedCluster {
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub cluster: Cluster,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Cluster {
    #[serde(default, deserialize_with = "null_as_default")]
    pub server: String,
    /// Base64 of PEM CA certificates; overrides `certificate-authority`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_authority_data: Option<String>,
    /// Path to a PEM CA file, relative to the kubeconfig's directory when not absolute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_authority: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure_skip_tls_verify: Option<bool>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NamedUser {
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub user: AuthInfo,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct AuthInfo {
    /// Base64 of a PEM client certificate; overrides `client-certificate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_certificate_data: Option<String>,
    /// Base64 of a PEM private key; overrides `client-key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_key_data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_certificate: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// kubectl spells this one in camelCase.
    #[serde(rename = "tokenFile", default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<String>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NamedContext {
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub context: Context,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Context {
    #[serde(default, deserialize_with = "null_as_default")]
    pub cluster: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub user: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// One context with everything read: data fields decoded, files loaded.
#[derive(Clone, PartialEq, Eq)]
pub struct ResolvedContext {
    pub server: String,
    pub ca_pem: Option<Vec<u8>>,
    pub client_cert_pem: Option<Vec<u8>>,
    pub client_key_pem: Option<Vec<u8>>,
    pub token: Option<String>,
    pub namespace: Option<String>,
    pub insecure: bool,
}

impl std::fmt::Debug for ResolvedContext {
    /// Shows which credentials are present, never their contents.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedContext")
            .field("server", &self.server)
            .field("ca_pem", &self.ca_pem.is_some())
            .field("client_cert_pem", &self.client_cert_pem.is_some())
            .field("client_key_pem", &self.client_key_pem.is_some())
            .field("token", &self.token.is_some())
            .field("namespace", &self.namespace)
            .field("insecure", &self.insecure)
            .finish()
    }
}

fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// Empty strings count as unset, as Go's `omitempty` makes them.
fn non_empty(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|s| !s.is_empty())
}

impl Kubeconfig {
    /// A single-cluster, single-user kubeconfig with embedded client certificate credentials,
    /// shaped like the files kubeadm writes (admin.conf, kubelet.conf, ...): context
    /// `<user>@<cluster>` is current.
    pub fn for_client_cert(
        server_url: &str,
        cluster_name: &str,
        user_name: &str,
        ca_pem: &str,
        client_cert_pem: &str,
        client_key_pem: &str,
    ) -> Self {
        let context_name = format!("{user_name}@{cluster_name}");
        Kubeconfig {
            api_version: "v1".into(),
            kind: "Config".into(),
            clusters: vec![NamedCluster {
                name: cluster_name.into(),
                cluster: Cluster {
                    server: server_url.into(),
                    certificate_authority_data: Some(b64(ca_pem.as_bytes())),
                    ..Cluster::default()
                },
            }],
            contexts: vec![NamedContext {
                name: context_name.clone(),
                context: Context {
                    cluster: cluster_name.into(),
                    user: user_name.into(),
                    ..Context::default()
                },
            }],
            users: vec![NamedUser {
                name: user_name.into(),
                user: AuthInfo {
                    client_certificate_data: Some(b64(client_cert_pem.as_bytes())),
                    client_key_data: Some(b64(client_key_pem.as_bytes())),
                    ..AuthInfo::default()
                },
            }],
            current_context: context_name,
            extra: BTreeMap::from([(
                "preferences".to_string(),
                serde_json::Value::Object(serde_json::Map::new()),
            )]),
        }
    }

    /// Parses kubeconfig YAML (or JSON, which is YAML too).
    pub fn from_yaml(text: &str) -> Result<Self, KubeconfigError> {
        let config: Kubeconfig =
            serde_saphyr::from_str(text).map_err(|e| KubeconfigError::YamlText(e.to_string()))?;
        if !config.kind.is_empty() && config.kind != "Config" {
            return Err(KubeconfigError::WrongKind(config.kind));
        }
        Ok(config)
    }

    pub fn load(path: &Path) -> Result<Self, KubeconfigError> {
        let bytes = std::fs::read(path).map_err(|source| KubeconfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let text = std::str::from_utf8(&bytes).map_err(|_| KubeconfigError::Yaml {
            path: path.to_path_buf(),
            reason: "file is not valid UTF-8".into(),
        })?;
        Self::from_yaml(text).map_err(|e| match e {
            KubeconfigError::YamlText(reason) => KubeconfigError::Yaml {
                path: path.to_path_buf(),
                reason,
            },
            other => other,
        })
    }

    pub fn to_yaml(&self) -> Result<String, KubeconfigError> {
        let mut opts = serde_saphyr::SerializerOptions::default();
        // Keep long base64 values as plain one-line scalars, the way kubectl writes them.
        opts.prefer_block_scalars = false;
        serde_saphyr::to_string_with_options(self, opts)
            .map_err(|e| KubeconfigError::Serialize(e.to_string()))
    }

    /// Writes the file atomically with mode 0600: it holds credentials.
    pub fn save(&self, path: &Path) -> Result<(), KubeconfigError> {
        let io_err = |source| KubeconfigError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io_err)?;
        }
        fsutil::write_atomic(path, self.to_yaml()?.as_bytes(), SECRET_MODE).map_err(io_err)
    }

    /// Loads `path` and resolves `context` (the current context when `None`), reading
    /// relative credential paths relative to the file's directory.
    pub fn load_context(
        path: &Path,
        context: Option<&str>,
    ) -> Result<ResolvedContext, KubeconfigError> {
        let base = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        Self::load(path)?.resolve(context, base)
    }

    /// Resolves `context` (the current context when `None`) into a server and credentials.
    /// `*-data` fields win over file paths, as in client-go; relative paths are taken
    /// relative to `base_dir` (the kubeconfig's directory).
    pub fn resolve(
        &self,
        context: Option<&str>,
        base_dir: &Path,
    ) -> Result<ResolvedContext, KubeconfigError> {
        let context_name = match context {
            Some(name) => name,
            None if self.current_context.is_empty() => {
                return Err(KubeconfigError::NoCurrentContext);
            }
            None => self.current_context.as_str(),
        };
        let ctx = &self
            .contexts
            .iter()
            .find(|c| c.name == context_name)
            .ok_or_else(|| KubeconfigError::ContextNotFound(context_name.to_string()))?
            .context;
        if ctx.cluster.is_empty() {
            return Err(KubeconfigError::ContextWithoutCluster {
                context: context_name.to_string(),
            });
        }
        let cluster = &self
            .clusters
            .iter()
            .find(|c| c.name == ctx.cluster)
            .ok_or_else(|| KubeconfigError::ClusterNotFound {
                context: context_name.to_string(),
                cluster: ctx.cluster.clone(),
            })?
            .cluster;
        if cluster.server.is_empty() {
            return Err(KubeconfigError::NoServer {
                cluster: ctx.cluster.clone(),
            });
        }
        // A context without a user is anonymous; a named user that is absent is a mistake.
        let user = if ctx.user.is_empty() {
            None
        } else {
            Some(
                &self
                    .users
                    .iter()
                    .find(|u| u.name == ctx.user)
                    .ok_or_else(|| KubeconfigError::UserNotFound {
                        context: context_name.to_string(),
                        user: ctx.user.clone(),
                    })?
                    .user,
            )
        };

        let reader = CredentialReader { base_dir };
        let cluster_field = |f: &str| format!("clusters[{}].cluster.{f}", ctx.cluster);
        let user_field = |f: &str| format!("users[{}].user.{f}", ctx.user);
        let ca_pem = reader.data_or_file(
            &cluster.certificate_authority_data,
            &cluster.certificate_authority,
            &cluster_field("certificate-authority"),
        )?;
        let (client_cert_pem, client_key_pem, token) = match user {
            None => (None, None, None),
            Some(u) => {
                let cert = reader.data_or_file(
                    &u.client_certificate_data,
                    &u.client_certificate,
                    &user_field("client-certificate"),
                )?;
                let key = reader.data_or_file(
                    &u.client_key_data,
                    &u.client_key,
                    &user_field("client-key"),
                )?;
                // client-go lets a token file override the inline token.
                let token = match non_empty(&u.token_file) {
                    Some(file) => {
                        let bytes = reader.read(file, &user_field("tokenFile"))?;
                        Some(String::from_utf8_lossy(&bytes).trim().to_string())
                    }
                    None => non_empty(&u.token).map(str::to_string),
                };
                (cert, key, token)
            }
        };
        Ok(ResolvedContext {
            server: cluster.server.clone(),
            ca_pem,
            client_cert_pem,
            client_key_pem,
            token,
            namespace: ctx.namespace.clone().filter(|n| !n.is_empty()),
            insecure: cluster.insecure_skip_tls_verify.unwrap_or(false),
        })
    }
}

struct CredentialReader<'a> {
    base_dir: &'a Path,
}

impl CredentialReader<'_> {
    /// `field-data` decoded if set, else the file at `field` read, else `None`.
    fn data_or_file(
        &self,
        data: &Option<String>,
        file: &Option<String>,
        field: &str,
    ) -> Result<Option<Vec<u8>>, KubeconfigError> {
        if let Some(data) = non_empty(data) {
            // Tolerate line-wrapped base64 from hand-edited files.
            let compact: String = data.chars().filter(|c| !c.is_whitespace()).collect();
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(compact)
                .map_err(|e| KubeconfigError::Base64 {
                    field: format!("{field}-data"),
                    reason: e.to_string(),
                })?;
            return Ok(Some(decoded));
        }
        match non_empty(file) {
            Some(file) => Ok(Some(self.read(file, field)?)),
            None => Ok(None),
        }
    }

    fn read(&self, file: &str, field: &str) -> Result<Vec<u8>, KubeconfigError> {
        let path = self.base_dir.join(file); // join keeps absolute paths as they are
        std::fs::read(&path).map_err(|source| KubeconfigError::CredentialFile {
            field: field.to_string(),
            path,
            source,
        })
    }
}

/// Writes an admin kubeconfig like kubeadm's admin.conf: user `kubernetes-admin`, context
/// `kubernetes-admin@<cluster>`, credentials embedded as base64; mode 0600, written atomically.
pub fn write_admin_kubeconfig(
    path: &Path,
    server_url: &str,
    cluster_name: &str,
    ca_pem: &str,
    client_cert_pem: &str,
    client_key_pem: &str,
) -> Result<(), KubeconfigError> {
    Kubeconfig::for_client_cert(
        server_url,
        cluster_name,
        ADMIN_USER,
        ca_pem,
        client_cert_pem,
        client_key_pem,
    )
    .save(path)
}

#[cfg(test)]
mod tests;

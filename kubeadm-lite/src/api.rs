//! What the kubeadm commands do through the Kubernetes API (kube-rs clients): bootstrap-token
//! Secrets, kubeadm's create-or-update of objects, and the clients discovery and TLS bootstrap
//! use (anonymous without TLS verification, then pinned CA + bootstrap token).

use std::path::Path;

use base64::Engine as _;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use kube::{Client, Config};
use serde_json::Value;

use crate::token::{self, BootstrapToken};

/// A failed API step, with what was being done.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{what}: {source}")]
    Kube {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("{0}")]
    Other(String),
}

impl ApiError {
    pub fn kube(what: impl Into<String>) -> impl FnOnce(kube::Error) -> ApiError {
        let what = what.into();
        move |source| ApiError::Kube { what, source }
    }

    /// The HTTP status the API answered with, if it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            ApiError::Kube {
                source: kube::Error::Api(s),
                ..
            } => Some(s.code),
            _ => None,
        }
    }
}

fn is_status(e: &kube::Error, code: u16) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code)
}

/// A client from a kubeconfig file (its current context).
pub async fn client_from_kubeconfig(path: &Path) -> Result<Client, ApiError> {
    let config = kube::config::Kubeconfig::read_from(path).map_err(|e| {
        ApiError::Other(format!(
            "failed to load admin kubeconfig {}: {e}",
            path.display()
        ))
    })?;
    let config = Config::from_custom_kubeconfig(config, &Default::default())
        .await
        .map_err(|e| ApiError::Other(format!("loading {}: {e}", path.display())))?;
    Client::try_from(config).map_err(ApiError::kube("building the API client"))
}

/// What a client presents to the API server.
#[derive(Clone, Default)]
pub enum Credentials {
    #[default]
    Anonymous,
    /// A bearer token (a bootstrap token during join).
    Token(String),
    /// A client certificate and its key, PEM.
    ClientCert { cert_pem: String, key_pem: String },
}

impl std::fmt::Debug for Credentials {
    /// Names the kind of credential, never its contents.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Credentials::Anonymous => "Anonymous",
            Credentials::Token(_) => "Token",
            Credentials::ClientCert { .. } => "ClientCert",
        })
    }
}

/// A client from in-memory kubeconfig parts: `ca_pem` (None: no TLS verification) and the
/// credentials to present.
pub async fn client_for(
    server_url: &str,
    ca_pem: Option<&str>,
    credentials: &Credentials,
) -> Result<Client, ApiError> {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let cluster = match ca_pem {
        Some(ca) => {
            serde_json::json!({ "server": server_url, "certificate-authority-data": b64(ca) })
        }
        None => serde_json::json!({ "server": server_url, "insecure-skip-tls-verify": true }),
    };
    let user = match credentials {
        Credentials::Anonymous => serde_json::json!({}),
        Credentials::Token(t) => serde_json::json!({ "token": t }),
        Credentials::ClientCert { cert_pem, key_pem } => serde_json::json!({
            "client-certificate-data": b64(cert_pem),
            "client-key-data": b64(key_pem),
        }),
    };
    let doc = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{ "name": "c", "cluster": cluster }],
        "users": [{ "name": "u", "user": user }],
        "contexts": [{ "name": "x", "context": { "cluster": "c", "user": "u" } }],
        "current-context": "x",
    });
    let kubeconfig: kube::config::Kubeconfig = serde_json::from_value(doc)
        .map_err(|e| ApiError::Other(format!("building a kubeconfig: {e}")))?;
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .map_err(|e| ApiError::Other(format!("client configuration for {server_url}: {e}")))?;
    config.connect_timeout = Some(std::time::Duration::from_secs(5));
    config.read_timeout = Some(std::time::Duration::from_secs(15));
    config.default_retry = false;
    Client::try_from(config).map_err(ApiError::kube("building the API client"))
}

/// GETs an `https://` URL, verifying the server against the host's CA bundle (as kubeadm's
/// HTTPS discovery does; `SSL_CERT_FILE` / `SSL_CERT_DIR` point elsewhere), and returns the body.
pub async fn https_get(url: &str) -> Result<String, ApiError> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| ApiError::Other(format!("{url:?} is not a valid URL: {e}")))?;
    if uri.scheme_str() != Some("https") || uri.authority().is_none() {
        return Err(ApiError::Other(format!(
            "{url:?}: if a URL is used, the scheme must be https"
        )));
    }
    let base: http::Uri = format!(
        "https://{}",
        uri.authority().map(|a| a.as_str()).unwrap_or("")
    )
    .parse()
    .map_err(|e| ApiError::Other(format!("{url:?}: {e}")))?;
    let path = uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    // kube's client with no CA of its own verifies against the platform's roots.
    let mut config = Config::new(base);
    config.connect_timeout = Some(std::time::Duration::from_secs(5));
    config.read_timeout = Some(std::time::Duration::from_secs(15));
    config.default_retry = false;
    let client = Client::try_from(config).map_err(ApiError::kube("building the HTTPS client"))?;
    let request = http::Request::get(path)
        .body(Vec::new())
        .map_err(|e| ApiError::Other(format!("{url:?}: {e}")))?;
    client
        .request_text(request)
        .await
        .map_err(ApiError::kube(format!("GET {url}")))
}

/// Creates the token's Secret; with `fail_if_exists` an existing one is an error (`token
/// create`), otherwise it is replaced (`init` re-using a token).
pub async fn create_token(
    client: &Client,
    t: &BootstrapToken,
    fail_if_exists: bool,
) -> Result<(), ApiError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), token::NAMESPACE);
    let secret: Secret = serde_json::from_value(t.to_secret())
        .map_err(|e| ApiError::Other(format!("building the token Secret: {e}")))?;
    match api.create(&PostParams::default(), &secret).await {
        Ok(_) => Ok(()),
        Err(e) if is_status(&e, 409) => {
            if fail_if_exists {
                return Err(ApiError::Other(format!(
                    "a token with id {:?} already exists",
                    t.id
                )));
            }
            let current = api
                .get(&t.secret_name())
                .await
                .map_err(ApiError::kube("reading the existing token"))?;
            let mut updated = secret;
            updated.metadata.resource_version = current.metadata.resource_version;
            api.replace(&t.secret_name(), &PostParams::default(), &updated)
                .await
                .map(|_| ())
                .map_err(ApiError::kube(format!(
                    "failed to update bootstrap token with name {:?}",
                    t.secret_name()
                )))
        }
        Err(e) => Err(ApiError::Kube {
            what: format!(
                "failed to create bootstrap token with name {:?}",
                t.secret_name()
            ),
            source: e,
        }),
    }
}

/// Every bootstrap token in kube-system, with warnings for Secrets that do not parse.
pub async fn list_tokens(client: &Client) -> Result<(Vec<BootstrapToken>, Vec<String>), ApiError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), token::NAMESPACE);
    let list = api
        .list(&Default::default())
        .await
        .map_err(ApiError::kube("failed to list bootstrap tokens"))?;
    let mut tokens = Vec::new();
    let mut warnings = Vec::new();
    for s in list.items {
        if s.type_.as_deref() != Some(token::SECRET_TYPE) {
            continue;
        }
        let value = serde_json::to_value(&s).unwrap_or(Value::Null);
        match BootstrapToken::from_secret(&value) {
            Ok(t) => tokens.push(t),
            Err(e) => warnings.push(e),
        }
    }
    tokens.sort_by(|a, b| a.id.cmp(&b.id));
    Ok((tokens, warnings))
}

/// Deletes the Secret of token `id`.
pub async fn delete_token(client: &Client, id: &str) -> Result<(), ApiError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), token::NAMESPACE);
    api.delete(
        &format!("{}{id}", token::SECRET_PREFIX),
        &DeleteParams::default(),
    )
    .await
    .map(|_| ())
    .map_err(ApiError::kube(format!(
        "failed to delete bootstrap token {id:?}"
    )))
}

/// kubeadm's `CreateOrUpdate` for any object given as JSON (`apiVersion`, `kind`, metadata):
/// create it, or replace the existing one with it.
pub async fn create_or_update(client: &Client, obj: &Value) -> Result<(), ApiError> {
    let api_version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("v1");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let what = format!("{kind} {name:?}");
    let dynamic: DynamicObject =
        serde_json::from_value(obj.clone()).map_err(|e| ApiError::Other(format!("{what}: {e}")))?;
    let api: Api<DynamicObject> = match obj.pointer("/metadata/namespace").and_then(Value::as_str) {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    match api.create(&PostParams::default(), &dynamic).await {
        Ok(_) => Ok(()),
        Err(e) if is_status(&e, 409) => {
            let current = api
                .get(&name)
                .await
                .map_err(ApiError::kube(format!("reading {what}")))?;
            let mut updated = dynamic;
            updated.metadata.resource_version = current.metadata.resource_version;
            api.replace(&name, &PostParams::default(), &updated)
                .await
                .map(|_| ())
                .map_err(ApiError::kube(format!("updating {what}")))
        }
        Err(e) => Err(ApiError::Kube {
            what: format!("creating {what}"),
            source: e,
        }),
    }
}

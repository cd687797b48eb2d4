//! kubeadm's copycerts: the control plane's shared certificates and keys in the
//! `kube-system/kubeadm-certs` Secret, each AES-256-GCM encrypted under the certificate key
//! (nonce first, then ciphertext and tag, as kubeadm seals them), owned by a short-lived
//! bootstrap token so that the Secret goes when the token expires. With an external etcd its
//! client certificate, key and CA travel too (kubeadm's `external-etcd*` keys). `join
//! --control-plane` downloads and decrypts them with the same key.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::Api;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::SecureRandom as _;
use serde_json::{Value, json};

use crate::api::{self, ApiError};
use crate::token::{self, BootstrapToken};

pub const SECRET_NAME: &str = "kubeadm-certs";
/// kubeadm's DefaultCertTokenDuration: the Secret lives as long as its owner token.
pub const TOKEN_TTL: Duration = Duration::from_secs(2 * 3600);
/// The files shared by every control plane (k1s has no etcd CA of its own).
pub const FILES: [&str; 6] = [
    "ca.crt",
    "ca.key",
    "front-proxy-ca.crt",
    "front-proxy-ca.key",
    "sa.key",
    "sa.pub",
];

/// kubeadm's Secret keys for an external etcd's CA, client certificate and client key.
pub const EXTERNAL_ETCD_CA: &str = "external-etcd-ca.crt";
pub const EXTERNAL_ETCD_CERT: &str = "external-etcd.crt";
pub const EXTERNAL_ETCD_KEY: &str = "external-etcd.key";

/// The external etcd files by Secret key: (key, path), from ClusterConfiguration's
/// etcd.external caFile / certFile / keyFile (an empty path: not configured).
pub fn external_etcd_files(etcd: &crate::init::EtcdExternal) -> [(&'static str, &str); 3] {
    [
        (EXTERNAL_ETCD_CA, etcd.ca_file.as_str()),
        (EXTERNAL_ETCD_CERT, etcd.cert_file.as_str()),
        (EXTERNAL_ETCD_KEY, etcd.key_file.as_str()),
    ]
}

#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Api(#[from] ApiError),
}

/// The 32-byte key from its 64 hex characters.
pub fn parse_key(hex: &str) -> Result<[u8; 32], CopyError> {
    let bad = || {
        CopyError::Invalid(format!(
            "error decoding certificate key: {hex:?} is not 64 hexadecimal characters (32 bytes); 'k1s certs certificate-key' makes one"
        ))
    };
    let hex = hex.trim();
    if hex.len() != 64 || !hex.is_ascii() {
        return Err(bad());
    }
    let mut key = [0u8; 32];
    for (i, b) in key.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(key)
}

fn aead_key(key: &[u8; 32]) -> Result<LessSafeKey, CopyError> {
    UnboundKey::new(&AES_256_GCM, key)
        .map(LessSafeKey::new)
        .map_err(|_| CopyError::Invalid("invalid AES-256 key".into()))
}

/// nonce ‖ ciphertext ‖ tag.
pub fn encrypt(key: &[u8; 32], data: &[u8]) -> Result<Vec<u8>, CopyError> {
    let mut nonce = [0u8; NONCE_LEN];
    ring::rand::SystemRandom::new()
        .fill(&mut nonce)
        .map_err(|_| CopyError::Invalid("reading random bytes failed".into()))?;
    let mut sealed = data.to_vec();
    aead_key(key)?
        .seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::empty(),
            &mut sealed,
        )
        .map_err(|_| CopyError::Invalid("encryption failed".into()))?;
    let mut out = nonce.to_vec();
    out.extend(sealed);
    Ok(out)
}

pub fn decrypt(key: &[u8; 32], data: &[u8]) -> Result<Vec<u8>, CopyError> {
    if data.len() < NONCE_LEN {
        return Err(CopyError::Invalid(
            "error decoding secret data with provided key: size of data is less than the nonce size".into(),
        ));
    }
    let (nonce, sealed) = data.split_at(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(nonce)
        .map_err(|_| CopyError::Invalid("bad nonce".into()))?;
    let mut buf = sealed.to_vec();
    let plain = aead_key(key)?
        .open_in_place(nonce, Aad::empty(), &mut buf)
        .map_err(|_| {
            CopyError::Invalid(
                "error decoding secret data with provided key: cipher: message authentication failed (is the --certificate-key the one 'k1s init --upload-certs' printed?)"
                    .into(),
            )
        })?;
    Ok(plain.to_vec())
}

/// The upload-certs phase: a 2h owner token, the encrypted Secret owned by it, and the Role and
/// RoleBinding that let bootstrap tokens read it. With an external etcd (`etcd`) its files go
/// along; one that is not configured or not on disk is stored empty, as kubeadm does.
pub async fn upload(
    client: &Client,
    cert_dir: &Path,
    etcd: Option<&crate::init::EtcdExternal>,
    key_hex: &str,
) -> Result<(), CopyError> {
    let key = parse_key(key_hex)?;
    let mut data = serde_json::Map::new();
    let sealed = |bytes: &[u8]| -> Result<Value, CopyError> {
        Ok(json!(
            base64::engine::general_purpose::STANDARD.encode(encrypt(&key, bytes)?)
        ))
    };
    for f in FILES {
        let path = cert_dir.join(f);
        let bytes = std::fs::read(&path)
            .map_err(|e| CopyError::Invalid(format!("{}: {e}", path.display())))?;
        data.insert(f.to_string(), sealed(&bytes)?);
    }
    for (name, path) in etcd.map(external_etcd_files).into_iter().flatten() {
        let value = match std::fs::read(path) {
            Ok(bytes) if !path.is_empty() => sealed(&bytes)?,
            Err(e) if !path.is_empty() && e.kind() != std::io::ErrorKind::NotFound => {
                return Err(CopyError::Invalid(format!("{path}: {e}")));
            }
            _ => json!(""),
        };
        data.insert(name.to_string(), value);
    }
    println!(
        "[upload-certs] Storing the certificates in Secret \"{SECRET_NAME}\" in the \"kube-system\" Namespace"
    );
    let owner = BootstrapToken::new(
        &token::generate_token().map_err(|e| CopyError::Invalid(e.to_string()))?,
        TOKEN_TTL,
        "Proxy for managing TTL for the kubeadm-certs secret",
        &[],
        &[],
        jiff::Timestamp::now(),
    )
    .map_err(|e| CopyError::Invalid(e.to_string()))?;
    api::create_token(client, &owner, true).await?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), token::NAMESPACE);
    let owner_secret = secrets
        .get(&owner.secret_name())
        .await
        .map_err(ApiError::kube("reading the kubeadm-certs owner token"))?;
    let uid = owner_secret.metadata.uid.unwrap_or_default();
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": SECRET_NAME,
            "namespace": token::NAMESPACE,
            "ownerReferences": [{
                "apiVersion": "v1",
                "kind": "Secret",
                "name": owner.secret_name(),
                "uid": uid,
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "data": Value::Object(data),
    });
    api::create_or_update(client, &secret).await?;
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": { "name": "kubeadm:kubeadm-certs", "namespace": token::NAMESPACE },
        "rules": [{
            "apiGroups": [""],
            "resources": ["secrets"],
            "resourceNames": [SECRET_NAME],
            "verbs": ["get"],
        }],
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": { "name": "kubeadm:kubeadm-certs", "namespace": token::NAMESPACE },
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": "kubeadm:kubeadm-certs",
        },
        "subjects": [{
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Group",
            "name": token::DEFAULT_GROUP,
        }],
    });
    api::create_or_update(client, &role).await?;
    api::create_or_update(client, &binding).await?;
    println!("[upload-certs] Using certificate key:\n{key_hex}");
    Ok(())
}

/// Downloads and decrypts the shared files: (file name, contents). Nothing is written here.
pub async fn download(client: &Client, key_hex: &str) -> Result<Vec<(String, Vec<u8>)>, CopyError> {
    let key = parse_key(key_hex)?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), token::NAMESPACE);
    let secret = secrets
        .get_opt(SECRET_NAME)
        .await
        .map_err(ApiError::kube(format!(
            "error downloading the secret {SECRET_NAME:?}"
        )))?;
    let Some(secret) = secret else {
        return Err(CopyError::Invalid(format!(
            "Secret {SECRET_NAME:?} was not found in the \"kube-system\" Namespace. This Secret might have expired. Please, run `k1s init phase upload-certs --upload-certs` on a control plane to generate a new one"
        )));
    };
    let data = secret.data.unwrap_or_default();
    let mut out = Vec::new();
    for f in FILES {
        let sealed = data.get(f).ok_or_else(|| {
            CopyError::Invalid(format!(
                "the Secret does not include the required certificate or key - name: {f}"
            ))
        })?;
        out.push((f.to_string(), decrypt(&key, &sealed.0)?));
    }
    // The external etcd's files are there only when the cluster has them; empty means the
    // uploading control plane had none.
    for f in [EXTERNAL_ETCD_CA, EXTERNAL_ETCD_CERT, EXTERNAL_ETCD_KEY] {
        match data.get(f) {
            Some(sealed) if !sealed.0.is_empty() => {
                out.push((f.to_string(), decrypt(&key, &sealed.0)?));
            }
            Some(_) => println!(
                "[download-certs] Not saving {f:?} to disk, since it is empty in the {SECRET_NAME:?} Secret"
            ),
            None => {}
        }
    }
    Ok(out)
}

/// Where each downloaded file goes: the shared ones into `cert_dir`, the external etcd ones
/// to `etcd_paths` (Secret key → path; one without a path is not written, with a note).
fn targets(
    cert_dir: &Path,
    files: &[(String, Vec<u8>)],
    etcd_paths: &[(&str, PathBuf)],
) -> Vec<(PathBuf, usize)> {
    let mut out = Vec::new();
    for (i, (f, _)) in files.iter().enumerate() {
        if FILES.contains(&f.as_str()) {
            out.push((cert_dir.join(f), i));
        } else {
            match etcd_paths
                .iter()
                .find(|(name, p)| name == f && !p.as_os_str().is_empty())
            {
                Some((_, p)) => out.push((p.clone(), i)),
                None => println!(
                    "[download-certs] Not saving {f:?}: no path for it (pass --etcd-cafile, --etcd-certfile and --etcd-keyfile)"
                ),
            }
        }
    }
    out
}

/// Writes downloaded files (keys 0600): the shared ones into `cert_dir`, the external etcd
/// ones to `etcd_paths`. An existing shared file is an error, as is an etcd file that exists
/// with other contents (the same contents, e.g. a control plane on the same machine, is kept);
/// on any error nothing is written.
pub fn write(
    cert_dir: &Path,
    files: &[(String, Vec<u8>)],
    etcd_paths: &[(&str, PathBuf)],
) -> Result<Vec<PathBuf>, CopyError> {
    let planned = targets(cert_dir, files, etcd_paths);
    let mut to_write = Vec::new();
    for (p, i) in planned {
        let (name, bytes) = &files[i];
        if p.exists() {
            let shared = FILES.contains(&name.as_str());
            if shared || std::fs::read(&p).ok().as_deref() != Some(bytes.as_slice()) {
                return Err(CopyError::Invalid(format!(
                    "{} already exists{}; run 'k1s reset' first",
                    p.display(),
                    if shared { "" } else { " with other contents" }
                )));
            }
            continue;
        }
        to_write.push((p, i));
    }
    let mut written = Vec::new();
    for (p, i) in to_write {
        let (name, bytes) = &files[i];
        if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| CopyError::Invalid(format!("{}: {e}", dir.display())))?;
        }
        let mode = if name.ends_with(".crt") { 0o644 } else { 0o600 };
        crate::fsutil::write_atomic(&p, bytes, mode)
            .map_err(|e| CopyError::Invalid(format!("{}: {e}", p.display())))?;
        written.push(p);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_data_opens_only_with_its_key() {
        let hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        let key = parse_key(hex).expect("key");
        let sealed = encrypt(&key, b"secret").expect("seal");
        assert_eq!(sealed.len(), NONCE_LEN + 6 + 16);
        assert_eq!(decrypt(&key, &sealed).expect("open"), b"secret");
        let mut other = key;
        other[0] ^= 1;
        let e = decrypt(&other, &sealed).expect_err("wrong key");
        assert!(
            e.to_string().contains("message authentication failed"),
            "{e}"
        );
        assert!(parse_key("abc").is_err());
        assert!(parse_key(&"zz".repeat(32)).is_err());
    }

    #[test]
    fn write_places_shared_and_etcd_files_and_checks_before_writing() {
        let tmp = tempfile::tempdir().expect("tmp");
        let pki = tmp.path().join("pki");
        let etcd_ca = tmp.path().join("etcd/ca.crt");
        let etcd_key = tmp.path().join("etcd/client.key");
        let files = vec![
            ("ca.crt".to_string(), b"ca".to_vec()),
            (EXTERNAL_ETCD_CA.to_string(), b"etcd-ca".to_vec()),
            (EXTERNAL_ETCD_KEY.to_string(), b"etcd-key".to_vec()),
        ];
        let paths = [
            (EXTERNAL_ETCD_CA, etcd_ca.clone()),
            (EXTERNAL_ETCD_KEY, etcd_key.clone()),
        ];
        // An etcd file that exists with other contents: refused, nothing written.
        std::fs::create_dir_all(etcd_ca.parent().expect("dir")).expect("mkdir");
        std::fs::write(&etcd_ca, b"other").expect("write");
        let e = write(&pki, &files, &paths).expect_err("differs");
        assert!(e.to_string().contains("with other contents"), "{e}");
        assert!(!pki.exists() && !etcd_key.exists());
        // The same contents are kept; the rest is written.
        std::fs::write(&etcd_ca, b"etcd-ca").expect("write");
        let written = write(&pki, &files, &paths).expect("write");
        assert_eq!(written, vec![pki.join("ca.crt"), etcd_key.clone()]);
        assert_eq!(std::fs::read(&etcd_key).expect("key"), b"etcd-key");
        // A shared file that exists is refused.
        let e = write(&pki, &files, &paths).expect_err("exists");
        assert!(e.to_string().contains("already exists"), "{e}");
    }
}

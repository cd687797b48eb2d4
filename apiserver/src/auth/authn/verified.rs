//! A verified service-account token and the checks that its service account and bound object
//! still exist (upstream's `Validate` in `pkg/serviceaccount/claims.go` and `legacy.go`).

use jiff::Timestamp;
use serde_json::Value;

use super::sa::{
    BoundKind, BoundObject, LEEWAY_SECONDS, LEGACY_TOKEN_INVALID_SINCE_LABEL, NodeInfo, digest,
};
use super::{TokenError, constant_time_eq};
use crate::auth::UserInfo;

/// The kinds of objects a verified token depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ObjectKind {
    ServiceAccount,
    Pod,
    Secret,
    Node,
}

impl ObjectKind {
    pub fn resource(self) -> &'static str {
        match self {
            ObjectKind::ServiceAccount => "serviceaccounts",
            ObjectKind::Pod => "pods",
            ObjectKind::Secret => "secrets",
            ObjectKind::Node => "nodes",
        }
    }
}

impl From<BoundKind> for ObjectKind {
    fn from(k: BoundKind) -> Self {
        match k {
            BoundKind::Pod => ObjectKind::Pod,
            BoundKind::Secret => ObjectKind::Secret,
            BoundKind::Node => ObjectKind::Node,
        }
    }
}

/// An object the caller must look up (core group, `namespace` `None` for nodes) and hand to
/// [`VerifiedToken::check_object`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectToCheck {
    pub kind: ObjectKind,
    pub namespace: Option<String>,
    pub name: String,
    /// The uid the token claims (empty for a legacy token's Secret).
    pub uid: String,
}

/// A token whose signature, issuer, audience and lifetime are good. It authenticates once every
/// object of [`VerifiedToken::objects_to_check`] passes [`VerifiedToken::check_object`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedToken {
    /// The user (name, uid, groups incl. `system:authenticated`, extra pod/node/credential-id).
    pub user: UserInfo,
    pub namespace: String,
    pub sa_name: String,
    pub sa_uid: String,
    pub bound: Option<BoundObject>,
    /// The node claim: the pod's node for pod-bound tokens, the bound node for node-bound ones.
    pub node: Option<NodeInfo>,
    /// The token's audiences that the request accepts (authenticator.Response.Audiences).
    pub audiences: Vec<String>,
    pub credential_id: Option<String>,
    /// A legacy (Secret-based) token: the Secret's name.
    pub legacy_secret: Option<String>,
    pub(super) legacy_token_digest: Option<Vec<u8>>,
    pub expires_at: Option<Timestamp>,
    /// Projected tokens with an extended lifetime: past this, upstream records a stale-token
    /// audit annotation (`authentication.k8s.io/stale-token`).
    pub warn_after: Option<Timestamp>,
}

impl VerifiedToken {
    /// The objects that must still exist with the claimed uid, in upstream's order: the
    /// service account, then the bound secret / pod / node (a pod-bound token's node is not
    /// checked). Legacy tokens: their Secret, then the service account.
    pub fn objects_to_check(&self) -> Vec<ObjectToCheck> {
        let ns = Some(self.namespace.clone());
        let sa = ObjectToCheck {
            kind: ObjectKind::ServiceAccount,
            namespace: ns.clone(),
            name: self.sa_name.clone(),
            uid: self.sa_uid.clone(),
        };
        if let Some(secret) = &self.legacy_secret {
            let secret = ObjectToCheck {
                kind: ObjectKind::Secret,
                namespace: ns,
                name: secret.clone(),
                uid: String::new(),
            };
            return vec![secret, sa];
        }
        let mut out = vec![sa];
        if let Some(b) = &self.bound {
            out.push(ObjectToCheck {
                kind: b.kind.into(),
                namespace: b.kind.is_namespaced().then(|| self.namespace.clone()),
                name: b.name.clone(),
                uid: b.uid.clone(),
            });
        }
        out
    }

    /// Checks one object of [`Self::objects_to_check`] against what the store holds now
    /// (`None`: not found), with upstream's messages. Objects deleted (deletionTimestamp) more
    /// than [`LEEWAY_SECONDS`] ago invalidate the token; legacy tokens also need the Secret's
    /// `data.token` to equal the token and no `kubernetes.io/legacy-token-invalid-since` label.
    pub fn check_object(
        &self,
        check: &ObjectToCheck,
        current: Option<&Value>,
        now: Timestamp,
    ) -> Result<(), TokenError> {
        if self.legacy_secret.is_some() {
            return self.check_legacy_object(check, current);
        }
        let cutoff = now.as_second() - LEEWAY_SECONDS;
        let deleted = |obj: &Value| deleted_before(obj, Some(cutoff));
        match check.kind {
            ObjectKind::ServiceAccount => {
                let obj = current.ok_or_else(|| TokenError::ServiceAccountNotFound {
                    name: check.name.clone(),
                })?;
                let uid = object_uid(obj);
                if uid != check.uid {
                    return Err(TokenError::ServiceAccountUidMismatch {
                        actual: uid.to_string(),
                        claim: check.uid.clone(),
                    });
                }
                if deleted(obj) {
                    return Err(TokenError::ServiceAccountDeleted {
                        namespace: self.namespace.clone(),
                        name: check.name.clone(),
                    });
                }
                Ok(())
            }
            kind => {
                let obj = current.ok_or(TokenError::Invalidated)?;
                let uid = object_uid(obj);
                if uid != check.uid {
                    return Err(TokenError::BoundObjectUidMismatch {
                        kind: match kind {
                            ObjectKind::Pod => "pod",
                            ObjectKind::Secret => "secret",
                            _ => "node",
                        },
                        actual: uid.to_string(),
                        claim: check.uid.clone(),
                    });
                }
                if deleted(obj) {
                    return Err(TokenError::Invalidated);
                }
                Ok(())
            }
        }
    }

    fn check_legacy_object(
        &self,
        check: &ObjectToCheck,
        current: Option<&Value>,
    ) -> Result<(), TokenError> {
        let legacy = |m: String| TokenError::Legacy(m);
        match check.kind {
            ObjectKind::Secret => {
                let secret = current.ok_or_else(|| legacy("Token has been invalidated".into()))?;
                if deleted_before(secret, None) {
                    return Err(legacy("Token has been invalidated".into()));
                }
                let stored = secret
                    .pointer("/data/token")
                    .and_then(Value::as_str)
                    .and_then(|b64| {
                        use base64::Engine as _;
                        base64::engine::general_purpose::STANDARD.decode(b64).ok()
                    })
                    .unwrap_or_default();
                let matches = self
                    .legacy_token_digest
                    .as_deref()
                    .is_some_and(|d| constant_time_eq(&digest(&stored), d));
                if !matches {
                    return Err(legacy("Token does not match server's copy".into()));
                }
                let invalid_since = secret
                    .pointer("/metadata/labels")
                    .and_then(|l| l.get(LEGACY_TOKEN_INVALID_SINCE_LABEL))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if !invalid_since.is_empty() {
                    let (ns, name, sa) = (&self.namespace, &check.name, &self.sa_name);
                    return Err(legacy(format!(
                        "the token in secret {ns}/{name} for service account {ns}/{sa} has been \
                         marked invalid. Use tokens from the TokenRequest API or manually created \
                         secret-based tokens, or remove the '{LEGACY_TOKEN_INVALID_SINCE_LABEL}' \
                         label from the secret to temporarily allow use of this token"
                    )));
                }
                Ok(())
            }
            ObjectKind::ServiceAccount => {
                let sa = current.ok_or_else(|| TokenError::ServiceAccountNotFound {
                    name: check.name.clone(),
                })?;
                if deleted_before(sa, None) {
                    return Err(legacy(format!(
                        "ServiceAccount {}/{} has been deleted",
                        self.namespace, check.name
                    )));
                }
                let uid = object_uid(sa);
                if uid != check.uid {
                    return Err(legacy(format!(
                        "ServiceAccount UID ({uid}) does not match claim ({})",
                        check.uid
                    )));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Runs every object check with a synchronous lookup; the first failure wins.
    pub fn check_objects(
        &self,
        mut lookup: impl FnMut(&ObjectToCheck) -> Option<Value>,
        now: Timestamp,
    ) -> Result<(), TokenError> {
        for check in self.objects_to_check() {
            let current = lookup(&check);
            self.check_object(&check, current.as_ref(), now)?;
        }
        Ok(())
    }
}

fn object_uid(obj: &Value) -> &str {
    obj.pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Whether `metadata.deletionTimestamp` is set and (with a cutoff) earlier than it. An
/// unparsable timestamp counts as long past.
fn deleted_before(obj: &Value, cutoff: Option<i64>) -> bool {
    let Some(ts) = obj
        .pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
    else {
        return false;
    };
    match cutoff {
        None => true,
        Some(cutoff) => ts
            .parse::<Timestamp>()
            .map(|t| t.as_second() < cutoff)
            .unwrap_or(true),
    }
}

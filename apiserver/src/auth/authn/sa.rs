//! Service-account tokens: RS256 (or ES256, by the key) JWTs with upstream's claims (`pkg/serviceaccount/claims.go`,
//! `jwt.go`, `legacy.go`), issued by [`TokenIssuer::issue`] and checked by
//! [`TokenIssuer::verify`] plus the object checks of [`VerifiedToken`] (`verified.rs`).

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value, json};

use super::TokenError;
use super::verified::VerifiedToken;
use crate::auth::UserInfo;
pub use k1s_kubeadm_lite::jws::LEGACY_ISSUER;
use k1s_kubeadm_lite::jws::{
    LEGACY_NAMESPACE_CLAIM, LEGACY_SA_NAME_CLAIM, LEGACY_SA_UID_CLAIM, LEGACY_SECRET_NAME_CLAIM,
    ParsedJws, PublicKey, SigningKey,
};

/// The issuer `k1s` uses unless told otherwise (kubeadm's default `--service-account-issuer`).
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// TokenRequest's default `spec.expirationSeconds`.
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest lifetime a TokenRequest may ask for (10 minutes).
pub const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest lifetime a TokenRequest may ask for (2^32 seconds).
pub const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;
/// The lifetime kubelet asks for on projected tokens; such pod-bound tokens get
/// [`EXPIRATION_EXTENSION_SECONDS`] and a `warnafter` claim when expiration extension is on.
pub const WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS: i64 = 60 * 60 + 7;
/// One year: the extended lifetime of projected tokens.
pub const EXPIRATION_EXTENSION_SECONDS: i64 = 24 * 365 * 60 * 60;
/// go-jose's default leeway for `exp` / `nbf` / `iat`, also the grace period for deleted objects.
pub const LEEWAY_SECONDS: i64 = 60;

/// `user.extra` keys of service-account users.
pub const POD_NAME_KEY: &str = "authentication.kubernetes.io/pod-name";
pub const POD_UID_KEY: &str = "authentication.kubernetes.io/pod-uid";
pub const NODE_NAME_KEY: &str = "authentication.kubernetes.io/node-name";
pub const NODE_UID_KEY: &str = "authentication.kubernetes.io/node-uid";
pub const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";
/// Audit annotation naming the credential a TokenRequest issued.
pub const ISSUED_CREDENTIAL_ID_AUDIT_ANNOTATION_KEY: &str =
    "authentication.kubernetes.io/issued-credential-id";
/// Label that marks a legacy token Secret as no longer accepted.
pub const LEGACY_TOKEN_INVALID_SINCE_LABEL: &str = "kubernetes.io/legacy-token-invalid-since";

const PRIVATE_CLAIMS_KEY: &str = "kubernetes.io";

/// `system:serviceaccount:<namespace>:<name>`.
pub fn make_username(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// `[system:serviceaccounts, system:serviceaccounts:<namespace>]`.
pub fn make_group_names(namespace: &str) -> Vec<String> {
    vec![
        "system:serviceaccounts".to_string(),
        format!("system:serviceaccounts:{namespace}"),
    ]
}

/// `JTI=<jti>`, the credential id of a token with a `jti`.
pub fn credential_id_for_jti(jti: &str) -> String {
    format!("JTI={jti}")
}

/// The kinds a token can be bound to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BoundKind {
    Pod,
    Secret,
    Node,
}

impl BoundKind {
    /// The Kind name (`Pod`).
    pub fn as_str(self) -> &'static str {
        match self {
            BoundKind::Pod => "Pod",
            BoundKind::Secret => "Secret",
            BoundKind::Node => "Node",
        }
    }

    /// The key under `kubernetes.io` in the claims (`pod`).
    pub fn claim_key(self) -> &'static str {
        match self {
            BoundKind::Pod => "pod",
            BoundKind::Secret => "secret",
            BoundKind::Node => "node",
        }
    }

    /// The resource (`pods`).
    pub fn resource(self) -> &'static str {
        match self {
            BoundKind::Pod => "pods",
            BoundKind::Secret => "secrets",
            BoundKind::Node => "nodes",
        }
    }

    /// Core-group Kind names only.
    pub fn from_kind(kind: &str) -> Option<Self> {
        match kind {
            "Pod" => Some(BoundKind::Pod),
            "Secret" => Some(BoundKind::Secret),
            "Node" => Some(BoundKind::Node),
            _ => None,
        }
    }

    pub fn is_namespaced(self) -> bool {
        !matches!(self, BoundKind::Node)
    }
}

/// The object a token is bound to: it stops working when that object goes away.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundObject {
    pub kind: BoundKind,
    pub name: String,
    pub uid: String,
}

/// The node a pod-bound token's pod runs on (recorded, not checked). `uid` is empty when the
/// Node object was not found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    pub name: String,
    pub uid: String,
}

/// What to put in a new token.
#[derive(Clone, Debug)]
pub struct TokenRequestInput {
    pub namespace: String,
    pub sa_name: String,
    pub sa_uid: String,
    /// Empty: the issuer's API audiences.
    pub audiences: Vec<String>,
    /// `None`: [`DEFAULT_EXPIRATION_SECONDS`]. Must lie in 600..=2^32; the issuer's maximum
    /// shortens it (with a warning).
    pub expiration_seconds: Option<i64>,
    pub bound: Option<BoundObject>,
    /// For pod-bound tokens: the pod's node.
    pub pod_node: Option<NodeInfo>,
    pub now: Timestamp,
}

/// A freshly signed token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IssuedToken {
    pub token: String,
    /// `now + expiration_seconds` (the requested lifetime, even when a projected token was
    /// extended): TokenRequest's `status.expirationTimestamp`.
    pub expiration_timestamp: Timestamp,
    /// The lifetime after the issuer's maximum was applied: TokenRequest's
    /// `spec.expirationSeconds` in the response.
    pub expiration_seconds: i64,
    /// `JTI=<uuid>`, for the `authentication.kubernetes.io/issued-credential-id` audit annotation.
    pub credential_id: String,
    /// Warnings for the response's `Warning` headers.
    pub warnings: Vec<String>,
}

/// Signs and verifies service-account tokens with the cluster's `sa.key` / `sa.pub`.
#[derive(Debug)]
pub struct TokenIssuer {
    signing: SigningKey,
    verification_keys: Vec<PublicKey>,
    issuer: String,
    accepted_issuers: Vec<String>,
    api_audiences: Vec<String>,
    max_expiration_seconds: Option<i64>,
    extend_expiration: bool,
}

impl TokenIssuer {
    /// `sa_private_key_pkcs8_der` and `sa_public_key_pem` as the PKI hands them out
    /// (`Pki::sa_private_key_pkcs8_der()`, `Pki::sa_public_key_pem()`); every key in the PEM
    /// verifies tokens, and the signing key's public half must be among them. An empty `issuer`
    /// means [`DEFAULT_ISSUER`]; empty `default_audiences` (upstream `--api-audiences`) means
    /// `[issuer]`, as kube-apiserver defaults them.
    pub fn new(
        sa_private_key_pkcs8_der: &[u8],
        sa_public_key_pem: &str,
        issuer: String,
        default_audiences: Vec<String>,
    ) -> Result<Self, TokenError> {
        let public_keys = PublicKey::all_from_pem(sa_public_key_pem)
            .map_err(|e| TokenError::Issue(format!("service account public key: {e}")))?;
        let hint = public_keys.first().and_then(PublicKey::ec_point);
        let signing = SigningKey::from_pkcs8(sa_private_key_pkcs8_der, hint)
            .map_err(|e| TokenError::Issue(format!("service account private key: {e}")))?;
        if !public_keys.contains(&signing.public) {
            return Err(TokenError::Issue(
                "the service account public key does not match the private key".into(),
            ));
        }
        let issuer = if issuer.is_empty() {
            DEFAULT_ISSUER.to_string()
        } else {
            issuer
        };
        let api_audiences = if default_audiences.is_empty() {
            vec![issuer.clone()]
        } else {
            default_audiences
        };
        Ok(TokenIssuer {
            signing,
            verification_keys: public_keys,
            accepted_issuers: vec![issuer.clone()],
            issuer,
            api_audiences,
            max_expiration_seconds: None,
            extend_expiration: true,
        })
    }

    /// Upstream `--service-account-max-token-expiration` (seconds; `None` or <= 0: no cap).
    pub fn with_max_expiration_seconds(mut self, max: Option<i64>) -> Self {
        self.max_expiration_seconds = max.filter(|m| *m > 0);
        self
    }

    /// Upstream `--service-account-extend-token-expiration` (default true).
    pub fn with_extend_expiration(mut self, extend: bool) -> Self {
        self.extend_expiration = extend;
        self
    }

    /// More accepted `iss` values (upstream's later `--service-account-issuer` flags).
    pub fn with_additional_issuers(mut self, issuers: Vec<String>) -> Self {
        for iss in issuers {
            if !self.accepted_issuers.contains(&iss) {
                self.accepted_issuers.push(iss);
            }
        }
        self
    }

    /// More keys that verify tokens (key rotation); all are published in the JWKS.
    pub fn add_verification_keys_pem(&mut self, pem: &str) -> Result<(), TokenError> {
        let keys = PublicKey::all_from_pem(pem)
            .map_err(|e| TokenError::Issue(format!("service account public key: {e}")))?;
        for k in keys {
            if !self.verification_keys.contains(&k) {
                self.verification_keys.push(k);
            }
        }
        Ok(())
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    pub fn api_audiences(&self) -> &[String] {
        &self.api_audiences
    }

    /// The signing key's id (the JWT `kid` header).
    pub fn key_id(&self) -> &str {
        &self.signing.public.kid
    }

    pub fn max_expiration_seconds(&self) -> Option<i64> {
        self.max_expiration_seconds
    }

    pub(crate) fn public_keys(&self) -> &[PublicKey] {
        &self.verification_keys
    }

    /// Issues a bound token as TokenRequest does: default and bounds on the lifetime, the
    /// issuer's maximum, the projected-token extension, then the signed JWT.
    pub fn issue(&self, input: TokenRequestInput) -> Result<IssuedToken, TokenError> {
        if input.namespace.is_empty() || input.sa_name.is_empty() {
            return Err(TokenError::Issue(
                "a token needs the service account's namespace and name".into(),
            ));
        }
        let requested = input
            .expiration_seconds
            .unwrap_or(DEFAULT_EXPIRATION_SECONDS);
        if let Some(msg) = expiration_seconds_problem(requested) {
            return Err(TokenError::Issue(format!(
                "spec.expirationSeconds: Invalid value: {requested}: {msg}"
            )));
        }
        let audiences = if input.audiences.is_empty() {
            self.api_audiences.clone()
        } else {
            input.audiences.clone()
        };
        let mut warnings = Vec::new();
        let mut expiration_seconds = requested;
        if let Some(max) = self.max_expiration_seconds
            && expiration_seconds > max
        {
            warnings.push(format!(
                "requested expiration of {expiration_seconds} seconds shortened to {max} seconds"
            ));
            expiration_seconds = max;
        }
        let pod_bound = matches!(&input.bound, Some(b) if b.kind == BoundKind::Pod);
        let (token_lifetime, warn_after) = if self.extend_expiration
            && pod_bound
            && expiration_seconds == WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS
            && audiences.iter().all(|a| self.api_audiences.contains(a))
        {
            (EXPIRATION_EXTENSION_SECONDS, Some(expiration_seconds))
        } else {
            (expiration_seconds, None)
        };

        let now_s = input.now.as_second();
        let jti = uuid::Uuid::new_v4().to_string();
        let mut k8s = Map::new();
        k8s.insert("namespace".into(), json!(input.namespace));
        k8s.insert(
            "serviceaccount".into(),
            name_uid(&input.sa_name, &input.sa_uid),
        );
        if let Some(bound) = &input.bound {
            k8s.insert(
                bound.kind.claim_key().into(),
                name_uid(&bound.name, &bound.uid),
            );
            if bound.kind == BoundKind::Pod
                && let Some(node) = &input.pod_node
            {
                k8s.insert("node".into(), name_uid(&node.name, &node.uid));
            }
        }
        if let Some(w) = warn_after {
            k8s.insert("warnafter".into(), json!(now_s + w));
        }
        let payload = json!({
            "aud": audiences,
            "exp": now_s + token_lifetime,
            "iat": now_s,
            "iss": self.issuer,
            "jti": jti,
            PRIVATE_CLAIMS_KEY: Value::Object(k8s),
            "nbf": now_s,
            "sub": make_username(&input.namespace, &input.sa_name),
        });
        let token = self.sign(&payload)?;
        let expiration_timestamp = input
            .now
            .checked_add(SignedDuration::from_secs(expiration_seconds))
            .map_err(|e| TokenError::Issue(format!("expiration out of range: {e}")))?;
        Ok(IssuedToken {
            token,
            expiration_timestamp,
            expiration_seconds,
            credential_id: credential_id_for_jti(&jti),
            warnings,
        })
    }

    /// A legacy, non-expiring token for a `kubernetes.io/service-account-token` Secret, as the
    /// upstream tokens controller writes into `data.token`.
    pub fn issue_legacy(
        &self,
        namespace: &str,
        sa_name: &str,
        sa_uid: &str,
        secret_name: &str,
    ) -> Result<String, TokenError> {
        self.signing
            .legacy_token(namespace, sa_name, sa_uid, secret_name)
            .map_err(TokenError::Issue)
    }

    pub(super) fn sign(&self, payload: &Value) -> Result<String, TokenError> {
        let header = json!({ "alg": self.signing.public.alg(), "kid": self.signing.public.kid });
        let header = serde_json::to_vec(&header).map_err(|e| TokenError::Issue(e.to_string()))?;
        let payload = serde_json::to_vec(payload).map_err(|e| TokenError::Issue(e.to_string()))?;
        self.signing
            .sign_compact(&header, &payload)
            .map_err(TokenError::Issue)
    }

    /// Verifies a token for the API server's own audiences.
    pub fn verify(&self, token: &str, now: Timestamp) -> Result<VerifiedToken, TokenError> {
        self.verify_for_audiences(token, None, now)
    }

    /// Verifies signature, issuer, audience (against `requested`, default the API audiences),
    /// lifetime (60 s leeway) and claim shapes. [`TokenError::Unrecognized`] means the token is
    /// not a JWT of an accepted issuer (the next authenticator may try it). The caller must
    /// still run the object checks ([`VerifiedToken::objects_to_check`]).
    pub fn verify_for_audiences(
        &self,
        token: &str,
        requested: Option<&[String]>,
        now: Timestamp,
    ) -> Result<VerifiedToken, TokenError> {
        let jws = ParsedJws::parse(token).ok_or(TokenError::Unrecognized)?;
        let iss = jws.payload.get("iss").and_then(Value::as_str).unwrap_or("");
        let legacy = iss == LEGACY_ISSUER;
        if !legacy && !self.accepted_issuers.iter().any(|i| i == iss) {
            return Err(TokenError::Unrecognized);
        }
        if !jws.verify(&self.verification_keys) {
            return Err(TokenError::InvalidSignature);
        }
        let claims = &jws.payload;
        let token_auds = audiences_claim(claims.get("aud"))?;
        let exp = numeric_date(claims.get("exp"))?;
        let nbf = numeric_date(claims.get("nbf"))?;
        let iat = numeric_date(claims.get("iat"))?;
        let sub = string_claim(claims, "sub")?;
        let jti = string_claim(claims, "jti")?;

        let token_auds = if token_auds.is_empty() {
            self.api_audiences.clone()
        } else {
            token_auds
        };
        let requested: Vec<String> = requested
            .map(<[String]>::to_vec)
            .unwrap_or_else(|| self.api_audiences.clone());
        let audiences: Vec<String> = token_auds
            .iter()
            .filter(|a| requested.contains(a))
            .cloned()
            .collect();
        if audiences.is_empty() && !self.api_audiences.is_empty() {
            return Err(TokenError::InvalidAudience {
                token: token_auds,
                target: requested,
            });
        }

        if legacy {
            return verify_legacy(claims, &sub, token, audiences);
        }

        let now_s = now.as_second();
        if nbf.is_some_and(|nbf| now_s + LEEWAY_SECONDS < nbf) {
            return Err(TokenError::NotValidYet);
        }
        if exp.is_some_and(|exp| now_s - LEEWAY_SECONDS > exp) {
            return Err(TokenError::Expired);
        }
        if iat.is_some_and(|iat| now_s + LEEWAY_SECONDS < iat) {
            return Err(TokenError::IssuedInFuture);
        }

        let private = PrivateClaims::parse(claims.get(PRIVATE_CLAIMS_KEY))?;
        let credential_id = (!jti.is_empty()).then(|| credential_id_for_jti(&jti));
        let (bound, node) = match (&private.pod, &private.secret, &private.node) {
            (Some(pod), _, node) => (Some(pod.bound(BoundKind::Pod)), node.clone()),
            (None, Some(secret), _) => (Some(secret.bound(BoundKind::Secret)), None),
            (None, None, Some(node)) => (Some(node.bound(BoundKind::Node)), Some(node.clone())),
            (None, None, None) => (None, None),
        };
        let mut user = service_account_user(&private.namespace, &private.sa.name, &private.sa.uid);
        if let Some(pod) = private
            .pod
            .as_ref()
            .filter(|p| !p.name.is_empty() && !p.uid.is_empty())
        {
            user.extra
                .insert(POD_NAME_KEY.into(), vec![pod.name.clone()]);
            user.extra.insert(POD_UID_KEY.into(), vec![pod.uid.clone()]);
        }
        if let Some(id) = &credential_id {
            user.extra
                .insert(CREDENTIAL_ID_KEY.into(), vec![id.clone()]);
        }
        if let Some(node) = node.as_ref().filter(|n| !n.name.is_empty()) {
            user.extra
                .insert(NODE_NAME_KEY.into(), vec![node.name.clone()]);
            if !node.uid.is_empty() {
                user.extra
                    .insert(NODE_UID_KEY.into(), vec![node.uid.clone()]);
            }
        }
        Ok(VerifiedToken {
            user,
            namespace: private.namespace,
            sa_name: private.sa.name,
            sa_uid: private.sa.uid,
            bound,
            node: node.map(|n| NodeInfo {
                name: n.name,
                uid: n.uid,
            }),
            audiences,
            credential_id,
            legacy_secret: None,
            legacy_token_digest: None,
            expires_at: exp.and_then(|s| Timestamp::from_second(s).ok()),
            warn_after: private
                .warn_after
                .and_then(|s| Timestamp::from_second(s).ok()),
        })
    }
}

/// Upstream's static TokenRequest validation of `spec.expirationSeconds`.
pub(crate) fn expiration_seconds_problem(seconds: i64) -> Option<&'static str> {
    if seconds < MIN_EXPIRATION_SECONDS {
        Some("may not specify a duration less than 10 minutes")
    } else if seconds > MAX_EXPIRATION_SECONDS {
        Some("may not specify a duration larger than 2^32 seconds")
    } else {
        None
    }
}

fn name_uid(name: &str, uid: &str) -> Value {
    let mut m = Map::new();
    if !name.is_empty() {
        m.insert("name".into(), json!(name));
    }
    if !uid.is_empty() {
        m.insert("uid".into(), json!(uid));
    }
    Value::Object(m)
}

fn service_account_user(namespace: &str, name: &str, uid: &str) -> UserInfo {
    let mut groups = make_group_names(namespace);
    groups.push("system:authenticated".into());
    UserInfo {
        name: make_username(namespace, name),
        uid: uid.to_string(),
        groups,
        extra: BTreeMap::new(),
    }
}

fn claims_error(detail: &str) -> TokenError {
    TokenError::InvalidClaims(format!(
        "service account token claims could not be validated: {detail}"
    ))
}

/// `aud` as go-jose reads it: a string or an array of strings; absent/null is empty.
fn audiences_claim(v: Option<&Value>) -> Result<Vec<String>, TokenError> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| claims_error("aud must be a string or an array of strings"))
            })
            .collect(),
        Some(_) => Err(claims_error("aud must be a string or an array of strings")),
    }
}

/// A NumericDate claim: a JSON number (seconds, fraction dropped); absent/null is `None`.
fn numeric_date(v: Option<&Value>) -> Result<Option<i64>, TokenError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.is_finite())
                    .map(|f| f.floor() as i64)
            })
            .map(Some)
            .ok_or_else(|| claims_error("a time claim is out of range")),
        Some(_) => Err(claims_error("time claims must be numbers")),
    }
}

fn string_claim(obj: &Value, key: &str) -> Result<String, TokenError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(claims_error(&format!("{key} must be a string"))),
    }
}

#[derive(Clone, Debug, Default)]
struct Ref {
    name: String,
    uid: String,
}

impl Ref {
    fn parse(v: Option<&Value>) -> Result<Option<Ref>, TokenError> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(obj @ Value::Object(_)) => Ok(Some(Ref {
                name: string_claim(obj, "name")?,
                uid: string_claim(obj, "uid")?,
            })),
            Some(_) => Err(claims_error("object references must be objects")),
        }
    }

    fn bound(&self, kind: BoundKind) -> BoundObject {
        BoundObject {
            kind,
            name: self.name.clone(),
            uid: self.uid.clone(),
        }
    }
}

/// The `kubernetes.io` claim of a bound token.
struct PrivateClaims {
    namespace: String,
    sa: Ref,
    pod: Option<Ref>,
    secret: Option<Ref>,
    node: Option<Ref>,
    warn_after: Option<i64>,
}

impl PrivateClaims {
    fn parse(v: Option<&Value>) -> Result<Self, TokenError> {
        let obj = match v {
            Some(obj @ Value::Object(_)) => obj,
            _ => return Err(claims_error("the kubernetes.io claim is missing")),
        };
        let claims = PrivateClaims {
            namespace: string_claim(obj, "namespace")?,
            sa: Ref::parse(obj.get("serviceaccount"))?.unwrap_or_default(),
            pod: Ref::parse(obj.get("pod"))?,
            secret: Ref::parse(obj.get("secret"))?,
            node: Ref::parse(obj.get("node"))?,
            warn_after: numeric_date(obj.get("warnafter"))?,
        };
        if claims.namespace.is_empty() || claims.sa.name.is_empty() {
            return Err(claims_error(
                "the namespace or service account name claim is missing",
            ));
        }
        if claims.secret.is_some() && (claims.pod.is_some() || claims.node.is_some()) {
            return Err(claims_error("token can only be bound to one object type"));
        }
        Ok(claims)
    }
}

/// `legacy.go`'s claim checks; the Secret and ServiceAccount lookups are object checks.
fn verify_legacy(
    claims: &Value,
    sub: &str,
    token: &str,
    audiences: Vec<String>,
) -> Result<VerifiedToken, TokenError> {
    let legacy = |m: &str| TokenError::Legacy(m.to_string());
    if sub.is_empty() {
        return Err(legacy("sub claim is missing"));
    }
    let claim = |key: &str, missing: &str| -> Result<String, TokenError> {
        match claims.get(key).and_then(Value::as_str) {
            Some(s) if !s.is_empty() => Ok(s.to_string()),
            _ => Err(legacy(missing)),
        }
    };
    let namespace = claim(LEGACY_NAMESPACE_CLAIM, "namespace claim is missing")?;
    let secret_name = claim(LEGACY_SECRET_NAME_CLAIM, "secretName claim is missing")?;
    let sa_name = claim(LEGACY_SA_NAME_CLAIM, "serviceAccountName claim is missing")?;
    let sa_uid = claim(LEGACY_SA_UID_CLAIM, "serviceAccountUID claim is missing")?;
    if sub != make_username(&namespace, &sa_name) {
        return Err(legacy("sub claim is invalid"));
    }
    Ok(VerifiedToken {
        user: service_account_user(&namespace, &sa_name, &sa_uid),
        namespace,
        sa_name,
        sa_uid,
        bound: None,
        node: None,
        audiences,
        credential_id: None,
        legacy_secret: Some(secret_name),
        legacy_token_digest: Some(digest(token.as_bytes())),
        expires_at: None,
        warn_after: None,
    })
}

pub(super) fn digest(data: &[u8]) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, data)
        .as_ref()
        .to_vec()
}

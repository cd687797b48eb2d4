//! Service-account issuer discovery: the `/.well-known/openid-configuration` document and the
//! `/openid/v1/jwks` key set, rendered once, byte for byte as upstream's
//! `pkg/serviceaccount/openidmetadata.go` marshals them.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;

use super::sa::TokenIssuer;

/// Where the discovery document is served.
pub const OPENID_CONFIG_PATH: &str = "/.well-known/openid-configuration";
/// Where the key set is served.
pub const JWKS_PATH: &str = "/openid/v1/jwks";
/// `Content-Type` of the discovery document.
pub const CONTENT_TYPE_CONFIG: &str = "application/json";
/// `Content-Type` of the key set.
pub const CONTENT_TYPE_JWKS: &str = "application/jwk-set+json";
/// `Cache-Control` of both (static keys: upstream's one-hour max age).
pub const CACHE_CONTROL: &str = "public, max-age=3600";

/// Why discovery cannot be served (upstream logs this and leaves the endpoints out).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OidcError {
    #[error("issuer URL must use https scheme, got: {0}")]
    IssuerNotHttps(String),
    #[error("issuer URL may not include a query, got: {0}")]
    IssuerHasQuery(String),
    #[error("issuer URL may not include a fragment, got: {0}")]
    IssuerHasFragment(String),
    #[error("jwksURI requires https scheme, parsed as: {0}")]
    JwksNotHttps(String),
    #[error("either the JWKS URI or the default external address, or both, must be set")]
    NoJwksUri,
    #[error("could not marshal issuer discovery JSON, error: {0}")]
    Marshal(String),
}

#[derive(Serialize)]
struct OpenIdMetadata<'a> {
    issuer: &'a str,
    jwks_uri: &'a str,
    response_types_supported: [&'static str; 1],
    subject_types_supported: [&'static str; 1],
    id_token_signing_alg_values_supported: Vec<&'static str>,
}

/// go-jose's JWK field order; RSA keys carry `n` and `e`, P-256 keys `crv`, `x` and `y`.
#[derive(Serialize)]
struct Jwk {
    #[serde(rename = "use")]
    use_: &'static str,
    kty: &'static str,
    kid: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    crv: Option<&'static str>,
    alg: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    n: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    e: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    x: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    y: Option<String>,
}

#[derive(Serialize)]
struct JwkSet {
    keys: Vec<Jwk>,
}

/// The two rendered discovery responses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OidcDocuments {
    config_json: Vec<u8>,
    keyset_json: Vec<u8>,
}

impl OidcDocuments {
    /// `jwks_uri`: upstream `--service-account-jwks-uri` (must be https); when `None`,
    /// `https://<external_address>/openid/v1/jwks` (external address: `host[:port]` clients reach
    /// the API server at). The issuer must be an https URL without query or fragment, else
    /// upstream does not serve discovery at all.
    pub fn new(
        issuer: &TokenIssuer,
        jwks_uri: Option<&str>,
        external_address: &str,
    ) -> Result<Self, OidcError> {
        let iss = issuer.issuer();
        let rest = iss
            .strip_prefix("https://")
            .ok_or_else(|| OidcError::IssuerNotHttps(iss.to_string()))?;
        if rest.contains('?') {
            return Err(OidcError::IssuerHasQuery(iss.to_string()));
        }
        if rest.contains('#') {
            return Err(OidcError::IssuerHasFragment(iss.to_string()));
        }
        let jwks_uri = match jwks_uri.filter(|u| !u.is_empty()) {
            Some(u) if u.starts_with("https://") => u.to_string(),
            Some(u) => return Err(OidcError::JwksNotHttps(u.to_string())),
            None if external_address.is_empty() => return Err(OidcError::NoJwksUri),
            None => format!("https://{external_address}{JWKS_PATH}"),
        };
        let b64 = |b: &[u8]| Some(URL_SAFE_NO_PAD.encode(b));
        let keys: Vec<Jwk> = issuer
            .public_keys()
            .iter()
            .map(|k| {
                let (n, e) = k.rsa_n_e().map_or((None, None), |(n, e)| (b64(n), b64(e)));
                let (x, y) = k.ec_xy().map_or((None, None), |(x, y)| (b64(x), b64(y)));
                Jwk {
                    use_: "sig",
                    kty: if n.is_some() { "RSA" } else { "EC" },
                    kid: k.kid.clone(),
                    crv: x.is_some().then_some("P-256"),
                    alg: k.alg(),
                    n,
                    e,
                    x,
                    y,
                }
            })
            .collect();
        // The algorithms of the keys in use, sorted and once each (upstream's string set).
        let mut algs: Vec<&'static str> = issuer.public_keys().iter().map(|k| k.alg()).collect();
        algs.sort_unstable();
        algs.dedup();
        let metadata = OpenIdMetadata {
            issuer: iss,
            jwks_uri: &jwks_uri,
            response_types_supported: ["id_token"],
            subject_types_supported: ["public"],
            id_token_signing_alg_values_supported: algs,
        };
        let config_json =
            serde_json::to_vec(&metadata).map_err(|e| OidcError::Marshal(e.to_string()))?;
        let keyset_json =
            serde_json::to_vec(&JwkSet { keys }).map_err(|e| OidcError::Marshal(e.to_string()))?;
        Ok(OidcDocuments {
            config_json,
            keyset_json,
        })
    }

    /// The body of `GET /.well-known/openid-configuration`.
    pub fn config_json(&self) -> &[u8] {
        &self.config_json
    }

    /// The body of `GET /openid/v1/jwks`.
    pub fn keyset_json(&self) -> &[u8] {
        &self.keyset_json
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::authn::keys::test_keys;
    use crate::auth::authn::sa::TokenRequestInput;
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
    use serde_json::Value;

    fn issuer() -> TokenIssuer {
        let (der, pem) = test_keys::generate();
        TokenIssuer::new(&der, &pem, String::new(), vec![]).expect("issuer")
    }

    #[test]
    fn discovery_document_matches_upstream_shape() {
        let issuer = issuer();
        let docs = OidcDocuments::new(&issuer, None, "10.0.0.1:6443").expect("docs");
        let text = std::str::from_utf8(docs.config_json()).expect("utf8");
        assert_eq!(
            text,
            "{\"issuer\":\"https://kubernetes.default.svc.cluster.local\",\
             \"jwks_uri\":\"https://10.0.0.1:6443/openid/v1/jwks\",\
             \"response_types_supported\":[\"id_token\"],\
             \"subject_types_supported\":[\"public\"],\
             \"id_token_signing_alg_values_supported\":[\"ES256\"]}"
        );
        let explicit = OidcDocuments::new(&issuer, Some("https://example.com/keys"), "")
            .expect("explicit jwks uri");
        let v: Value = serde_json::from_slice(explicit.config_json()).expect("json");
        assert_eq!(v["jwks_uri"], "https://example.com/keys");
    }

    #[test]
    fn bad_issuers_and_uris_are_refused() {
        let (der, pem) = test_keys::generate();
        let http = TokenIssuer::new(&der, &pem, "http://x".into(), vec![]).expect("issuer");
        assert_eq!(
            OidcDocuments::new(&http, None, "a:1")
                .expect_err("http issuer")
                .to_string(),
            "issuer URL must use https scheme, got: http://x"
        );
        let legacy_like =
            TokenIssuer::new(&der, &pem, "kubernetes/serviceaccount".into(), vec![]).expect("iss");
        assert!(OidcDocuments::new(&legacy_like, None, "a:1").is_err());
        let q = TokenIssuer::new(&der, &pem, "https://x/?a=b".into(), vec![]).expect("issuer");
        assert!(matches!(
            OidcDocuments::new(&q, None, "a:1"),
            Err(OidcError::IssuerHasQuery(_))
        ));
        let ok = issuer();
        assert_eq!(OidcDocuments::new(&ok, None, ""), Err(OidcError::NoJwksUri));
        assert!(matches!(
            OidcDocuments::new(&ok, Some("http://insecure/keys"), "a:1"),
            Err(OidcError::JwksNotHttps(_))
        ));
    }

    #[test]
    fn jwks_key_verifies_issued_tokens() {
        let issuer = issuer();
        let docs = OidcDocuments::new(&issuer, None, "localhost:6443").expect("docs");
        let set: Value = serde_json::from_slice(docs.keyset_json()).expect("json");
        let keys = set["keys"].as_array().expect("keys");
        assert_eq!(keys.len(), 1);
        let jwk = &keys[0];
        let raw = std::str::from_utf8(docs.keyset_json()).expect("utf8");
        assert!(
            raw.starts_with("{\"keys\":[{\"use\":\"sig\",\"kty\":\"EC\",\"kid\":"),
            "{raw}"
        );
        assert!(
            raw.contains("\",\"crv\":\"P-256\",\"alg\":\"ES256\",\"x\":"),
            "{raw}"
        );
        assert_eq!(jwk["kid"], issuer.key_id());
        assert_eq!(jwk["alg"], "ES256");
        assert_eq!(jwk["crv"], "P-256");

        // A relying party's view: rebuild the key from x / y and check a token's signature.
        let x = URL_SAFE_NO_PAD
            .decode(jwk["x"].as_str().expect("x"))
            .expect("x b64");
        let y = URL_SAFE_NO_PAD
            .decode(jwk["y"].as_str().expect("y"))
            .expect("y b64");
        assert_eq!((x.len(), y.len()), (32, 32));
        let mut point = vec![0x04];
        point.extend_from_slice(&x);
        point.extend_from_slice(&y);

        let issued = issuer
            .issue(TokenRequestInput {
                namespace: "default".into(),
                sa_name: "builder".into(),
                sa_uid: "u1".into(),
                audiences: vec![],
                expiration_seconds: None,
                bound: None,
                pod_node: None,
                now: jiff::Timestamp::now(),
            })
            .expect("issue");
        let (signing_input, sig) = issued.token.rsplit_once('.').expect("jws");
        let sig = URL_SAFE_NO_PAD.decode(sig).expect("sig b64");
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point)
            .verify(signing_input.as_bytes(), &sig)
            .expect("JWK verifies the token");
        let header: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(signing_input.split('.').next().expect("header"))
                .expect("header b64"),
        )
        .expect("header json");
        assert_eq!(header["kid"], jwk["kid"]);
    }

    #[test]
    fn an_rsa_key_signs_rs256_and_is_published_with_n_and_e() {
        // The key a new persistent PKI makes (kubeadm's RSA 2048 sa.key).
        let dir = tempfile::tempdir().expect("tempdir");
        let pki = k1s_kubeadm_lite::ensure_pki(dir.path(), &Default::default()).expect("pki");
        let issuer = TokenIssuer::new(
            pki.sa_private_key_pkcs8_der(),
            pki.sa_public_key_pem(),
            String::new(),
            vec![],
        )
        .expect("issuer");
        let docs = OidcDocuments::new(&issuer, None, "10.0.0.1:6443").expect("docs");
        let config: Value = serde_json::from_slice(docs.config_json()).expect("json");
        assert_eq!(
            config["id_token_signing_alg_values_supported"],
            serde_json::json!(["RS256"])
        );
        let raw = std::str::from_utf8(docs.keyset_json()).expect("utf8");
        assert!(
            raw.starts_with("{\"keys\":[{\"use\":\"sig\",\"kty\":\"RSA\",\"kid\":"),
            "{raw}"
        );
        let set: Value = serde_json::from_str(raw).expect("json");
        let jwk = &set["keys"][0];
        assert_eq!(
            (jwk["alg"].as_str(), jwk["e"].as_str()),
            (Some("RS256"), Some("AQAB"))
        );
        assert_eq!(jwk["kid"], issuer.key_id());
        assert!(jwk.get("crv").is_none() && jwk.get("x").is_none(), "{jwk}");

        let issued = issuer
            .issue(TokenRequestInput {
                namespace: "default".into(),
                sa_name: "builder".into(),
                sa_uid: "u1".into(),
                audiences: vec![],
                expiration_seconds: None,
                bound: None,
                pod_node: None,
                now: jiff::Timestamp::now(),
            })
            .expect("issue");
        // A relying party's view: the JWK's n and e verify the RS256 signature.
        let (signing_input, sig) = issued.token.rsplit_once('.').expect("jws");
        let b64 = |v: &Value| {
            URL_SAFE_NO_PAD
                .decode(v.as_str().expect("str"))
                .expect("b64")
        };
        let components = ring::signature::RsaPublicKeyComponents {
            n: b64(&jwk["n"]),
            e: b64(&jwk["e"]),
        };
        components
            .verify(
                &ring::signature::RSA_PKCS1_2048_8192_SHA256,
                signing_input.as_bytes(),
                &URL_SAFE_NO_PAD.decode(sig).expect("sig"),
            )
            .expect("JWK verifies the token");
        let header = &signing_input[..signing_input.find('.').expect("header")];
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).expect("b64")).expect("json");
        assert_eq!(header["alg"], "RS256");
        // And the issuer accepts its own token.
        issuer
            .verify(&issued.token, jiff::Timestamp::now())
            .expect("verifies");
    }
}

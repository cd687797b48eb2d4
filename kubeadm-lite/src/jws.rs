//! Key material for service-account tokens: RSA (RS256, what k1s and kubeadm generate) and ECDSA
//! P-256 (ES256) keys loaded from PKCS#8 / SPKI, upstream's key id, and compact JWS signing and
//! verification (a JWT is base64url JSON plus a signature), and the legacy Secret-based token
//! that both the API server and a standalone controller-manager sign.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _,
    RSA_PKCS1_2048_8192_SHA256, RSA_PKCS1_SHA256, RsaKeyPair, UnparsedPublicKey,
};
use rustls_pki_types::SubjectPublicKeyInfoDer;
use rustls_pki_types::pem::PemObject as _;

/// The DER prefix of a P-256 `SubjectPublicKeyInfo` (id-ecPublicKey, prime256v1, a 66-byte BIT
/// STRING); the 65-byte uncompressed point follows.
pub const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// The JWS algorithms of the two key types.
pub const ALG_ES256: &str = "ES256";
pub const ALG_RS256: &str = "RS256";

/// The DER `AlgorithmIdentifier` of rsaEncryption (OID 1.2.840.113549.1.1.1, NULL parameters).
const RSA_ALGORITHM_ID: [u8; 15] = [
    0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
];

/// The public half of a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// P-256: the uncompressed point `04 || x || y`.
    Ec(Vec<u8>),
    /// RSA: the DER `RSAPublicKey` (modulus and exponent).
    Rsa(Vec<u8>),
}

/// A public key that verifies tokens and is published in the JWKS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicKey {
    /// Upstream's key id: base64url (no padding) of SHA-256 of the DER `SubjectPublicKeyInfo`.
    pub kid: String,
    pub kind: KeyKind,
}

impl PublicKey {
    pub fn from_point(point: &[u8]) -> Result<Self, String> {
        if point.len() != 65 || point[0] != 0x04 {
            return Err("not an uncompressed P-256 point".into());
        }
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(point);
        Ok(PublicKey {
            kid: key_id(&spki),
            kind: KeyKind::Ec(point.to_vec()),
        })
    }

    /// An RSA key from its DER `RSAPublicKey`.
    pub fn from_rsa_public_key(der: &[u8]) -> Self {
        let mut bits = vec![0];
        bits.extend_from_slice(der);
        let mut spki = RSA_ALGORITHM_ID.to_vec();
        spki.extend(der_tlv_bytes(0x03, &bits));
        PublicKey {
            kid: key_id(&der_tlv_bytes(0x30, &spki)),
            kind: KeyKind::Rsa(der.to_vec()),
        }
    }

    pub fn from_spki_der(der: &[u8]) -> Result<Self, String> {
        if let Some(point) = der.strip_prefix(&P256_SPKI_PREFIX[..]) {
            return Self::from_point(point);
        }
        let rsa = der_tlv(der)
            .filter(|(tag, _, rest)| *tag == 0x30 && rest.is_empty())
            .and_then(|(_, body, _)| body.strip_prefix(&RSA_ALGORITHM_ID[..]))
            .and_then(der_tlv)
            .filter(|(tag, bits, _)| *tag == 0x03 && bits.first() == Some(&0))
            .map(|(_, bits, _)| bits[1..].to_vec());
        match rsa {
            Some(public) if rsa_modulus_and_exponent(&public).is_some() => {
                Ok(Self::from_rsa_public_key(&public))
            }
            _ => Err("only RSA and ECDSA P-256 public keys are supported".into()),
        }
    }

    /// Every `PUBLIC KEY` block of a PEM text.
    pub fn all_from_pem(pem: &str) -> Result<Vec<Self>, String> {
        let mut keys = Vec::new();
        for item in SubjectPublicKeyInfoDer::pem_slice_iter(pem.as_bytes()) {
            let der = item.map_err(|e| format!("not a PEM public key: {e}"))?;
            keys.push(Self::from_spki_der(der.as_ref())?);
        }
        if keys.is_empty() {
            return Err("no PUBLIC KEY block found".into());
        }
        Ok(keys)
    }

    /// The JWS algorithm this key signs with.
    pub fn alg(&self) -> &'static str {
        match self.kind {
            KeyKind::Ec(_) => ALG_ES256,
            KeyKind::Rsa(_) => ALG_RS256,
        }
    }

    /// The P-256 point, for an ECDSA key.
    pub fn ec_point(&self) -> Option<&[u8]> {
        match &self.kind {
            KeyKind::Ec(point) => Some(point),
            KeyKind::Rsa(_) => None,
        }
    }

    /// The affine coordinates (32 bytes each) of an ECDSA key.
    pub fn ec_xy(&self) -> Option<(&[u8], &[u8])> {
        self.ec_point().map(|p| (&p[1..33], &p[33..65]))
    }

    /// The modulus and public exponent (big-endian, no leading zeros) of an RSA key.
    pub fn rsa_n_e(&self) -> Option<(&[u8], &[u8])> {
        match &self.kind {
            KeyKind::Rsa(der) => rsa_modulus_and_exponent(der),
            KeyKind::Ec(_) => None,
        }
    }

    fn verify(&self, alg: &str, message: &[u8], signature: &[u8]) -> bool {
        match (&self.kind, alg) {
            (KeyKind::Ec(point), ALG_ES256) => {
                signature.len() == 64
                    && UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
                        .verify(message, signature)
                        .is_ok()
            }
            (KeyKind::Rsa(der), ALG_RS256) => {
                UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, der)
                    .verify(message, signature)
                    .is_ok()
            }
            _ => false,
        }
    }
}

/// `SEQUENCE { INTEGER n, INTEGER e }` of a DER `RSAPublicKey`, without sign padding.
fn rsa_modulus_and_exponent(der: &[u8]) -> Option<(&[u8], &[u8])> {
    let (tag, body, rest) = der_tlv(der)?;
    if tag != 0x30 || !rest.is_empty() {
        return None;
    }
    let (tag, n, rest) = der_tlv(body)?;
    let (tag2, e, _) = der_tlv(rest)?;
    if tag != 0x02 || tag2 != 0x02 {
        return None;
    }
    let strip = |v: &'_ [u8]| -> usize { v.iter().take_while(|b| **b == 0).count() };
    let (n, e) = (&n[strip(n)..], &e[strip(e)..]);
    (!n.is_empty() && !e.is_empty()).then_some((n, e))
}

/// One DER TLV with the given tag around `content` (short or long length form).
fn der_tlv_bytes(tag: u8, content: &[u8]) -> Vec<u8> {
    let len = content.len();
    let mut out = vec![tag];
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

/// base64url(sha256(der)), as upstream's `keyIDFromPublicKey`.
fn key_id(spki_der: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, spki_der))
}

/// The signing half: an RSA or ECDSA P-256 key pair and its public key.
pub struct SigningKey {
    pair: Pair,
    rng: SystemRandom,
    pub public: PublicKey,
}

enum Pair {
    Ec(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.public.kid)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// Loads a PKCS#8 RSA or P-256 private key. `public_hint` (the point from `sa.pub`) lets
    /// P-256 keys whose PKCS#8 omits the public key load too.
    pub fn from_pkcs8(der: &[u8], public_hint: Option<&[u8]>) -> Result<Self, String> {
        let rng = SystemRandom::new();
        if let Ok(pair) = RsaKeyPair::from_pkcs8(der) {
            let public = PublicKey::from_rsa_public_key(pair.public().as_ref());
            return Ok(SigningKey {
                pair: Pair::Rsa(pair),
                rng,
                public,
            });
        }
        let pair = match EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng) {
            Ok(pair) => pair,
            Err(first) => {
                let unsupported =
                    || format!("not a PKCS#8 RSA or ECDSA P-256 private key: {first}");
                let scalar = pkcs8_ec_private_scalar(der).ok_or_else(unsupported)?;
                let point = public_hint.ok_or_else(unsupported)?;
                EcdsaKeyPair::from_private_key_and_public_key(
                    &ECDSA_P256_SHA256_FIXED_SIGNING,
                    scalar,
                    point,
                    &rng,
                )
                .map_err(|e| format!("private and public key do not form a P-256 pair: {e}"))?
            }
        };
        let public = PublicKey::from_point(pair.public_key().as_ref())?;
        Ok(SigningKey {
            pair: Pair::Ec(pair),
            rng,
            public,
        })
    }

    /// Signs `header.payload` (both JSON) into a compact JWS.
    pub fn sign_compact(&self, header: &[u8], payload: &[u8]) -> Result<String, String> {
        let mut out = URL_SAFE_NO_PAD.encode(header);
        out.push('.');
        out.push_str(&URL_SAFE_NO_PAD.encode(payload));
        let failed = |_| "failed to generate token: signing failed".to_string();
        let sig = match &self.pair {
            Pair::Ec(pair) => pair
                .sign(&self.rng, out.as_bytes())
                .map_err(failed)?
                .as_ref()
                .to_vec(),
            Pair::Rsa(pair) => {
                let mut sig = vec![0; pair.public().modulus_len()];
                pair.sign(&RSA_PKCS1_SHA256, &self.rng, out.as_bytes(), &mut sig)
                    .map_err(failed)?;
                sig
            }
        };
        out.push('.');
        out.push_str(&URL_SAFE_NO_PAD.encode(sig));
        Ok(out)
    }
}

/// The `iss` of legacy, Secret-based tokens.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";
pub const LEGACY_NAMESPACE_CLAIM: &str = "kubernetes.io/serviceaccount/namespace";
pub const LEGACY_SECRET_NAME_CLAIM: &str = "kubernetes.io/serviceaccount/secret.name";
pub const LEGACY_SA_NAME_CLAIM: &str = "kubernetes.io/serviceaccount/service-account.name";
pub const LEGACY_SA_UID_CLAIM: &str = "kubernetes.io/serviceaccount/service-account.uid";

impl SigningKey {
    /// Loads a private key file's text: PKCS#8 `PRIVATE KEY`, or PKCS#1 `RSA PRIVATE KEY` as
    /// kubeadm writes `sa.key`.
    pub fn from_pem(text: &str) -> Result<Self, String> {
        let pkcs8 = crate::pki::pkcs1_to_pkcs8(text);
        let der = rustls_pki_types::PrivatePkcs8KeyDer::from_pem_slice(pkcs8.as_bytes())
            .map_err(|e| format!("no PKCS#8 or PKCS#1 RSA private key in the PEM: {e}"))?;
        Self::from_pkcs8(der.secret_pkcs8_der(), None)
    }

    /// The legacy token of a `kubernetes.io/service-account-token` Secret (upstream's
    /// `serviceaccount.LegacyClaims`): no expiry, no audience.
    pub fn legacy_token(
        &self,
        namespace: &str,
        sa_name: &str,
        sa_uid: &str,
        secret_name: &str,
    ) -> Result<String, String> {
        let header = serde_json::json!({ "alg": self.public.alg(), "kid": self.public.kid });
        let payload = serde_json::json!({
            "iss": LEGACY_ISSUER,
            LEGACY_NAMESPACE_CLAIM: namespace,
            LEGACY_SECRET_NAME_CLAIM: secret_name,
            LEGACY_SA_NAME_CLAIM: sa_name,
            LEGACY_SA_UID_CLAIM: sa_uid,
            "sub": format!("system:serviceaccount:{namespace}:{sa_name}"),
        });
        let encode = |v: &serde_json::Value| serde_json::to_vec(v).map_err(|e| e.to_string());
        self.sign_compact(&encode(&header)?, &encode(&payload)?)
    }
}

/// A compact JWS split and decoded, not yet verified.
pub struct ParsedJws<'a> {
    pub header: serde_json::Value,
    pub payload: serde_json::Value,
    signing_input: &'a str,
    signature: Vec<u8>,
}

impl<'a> ParsedJws<'a> {
    /// Splits `h.p.s` and decodes the header and payload as JSON objects; `None` when the text is
    /// not a compact JWS with JSON-object parts.
    pub fn parse(token: &'a str) -> Option<Self> {
        let mut parts = token.split('.');
        let (h, p, s) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let header: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(h).ok()?).ok()?;
        let payload: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).ok()?).ok()?;
        if !header.is_object() || !payload.is_object() {
            return None;
        }
        let signature = URL_SAFE_NO_PAD.decode(s).ok()?;
        Some(ParsedJws {
            header,
            payload,
            signing_input: &token[..h.len() + 1 + p.len()],
            signature,
        })
    }

    /// True when one of `keys` of the header's algorithm (RS256 or ES256) verifies the
    /// signature. Upstream tries every key regardless of `kid`.
    pub fn verify(&self, keys: &[PublicKey]) -> bool {
        let Some(alg) = self.header.get("alg").and_then(|a| a.as_str()) else {
            return false;
        };
        keys.iter()
            .any(|k| k.verify(alg, self.signing_input.as_bytes(), &self.signature))
    }
}

/// The 32-byte private scalar of a PKCS#8 v1 EC key:
/// `SEQ { INT 0, SEQ algid, OCTET STRING { SEQ { INT 1, OCTET STRING scalar, ... } } }`.
fn pkcs8_ec_private_scalar(der: &[u8]) -> Option<&[u8]> {
    let (tag, outer, _) = der_tlv(der)?;
    if tag != 0x30 {
        return None;
    }
    let (tag, _version, rest) = der_tlv(outer)?;
    if tag != 0x02 {
        return None;
    }
    let (tag, algid, rest) = der_tlv(rest)?;
    if tag != 0x30 || algid != &P256_SPKI_PREFIX[4..23] {
        return None;
    }
    let (tag, ec_key, _) = der_tlv(rest)?;
    if tag != 0x04 {
        return None;
    }
    let (tag, ec_seq, _) = der_tlv(ec_key)?;
    if tag != 0x30 {
        return None;
    }
    let (tag, _ver, rest) = der_tlv(ec_seq)?;
    if tag != 0x02 {
        return None;
    }
    let (tag, scalar, _) = der_tlv(rest)?;
    (tag == 0x04 && scalar.len() == 32).then_some(scalar)
}

/// One DER TLV: (tag, contents, rest). Short and long (up to 2 length bytes) forms.
fn der_tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = match first {
        n if n < 0x80 => (usize::from(n), rest),
        0x81 => {
            let (&n, rest) = rest.split_first()?;
            (usize::from(n), rest)
        }
        0x82 => {
            let (hi, rest) = rest.split_first()?;
            let (lo, rest) = rest.split_first()?;
            ((usize::from(*hi) << 8) | usize::from(*lo), rest)
        }
        _ => return None,
    };
    if rest.len() < len {
        return None;
    }
    let (contents, rest) = rest.split_at(len);
    Some((tag, contents, rest))
}

/// Fresh P-256 keys for the tests of the crates that verify tokens.
pub mod test_keys {

    use super::*;

    /// (PKCS#8 DER, SPKI PEM) of a new key.
    pub fn generate() -> (Vec<u8>, String) {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .expect("generate test key");
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .expect("load test key");
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(pair.public_key().as_ref());
        let b64 = base64::engine::general_purpose::STANDARD.encode(&spki);
        let mut pem = String::from("-----BEGIN PUBLIC KEY-----\n");
        for chunk in b64.as_bytes().chunks(64) {
            pem.push_str(std::str::from_utf8(chunk).expect("base64 is ASCII"));
            pem.push('\n');
        }
        pem.push_str("-----END PUBLIC KEY-----\n");
        (pkcs8.as_ref().to_vec(), pem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_then_verify_and_reject_others() {
        let (der, pem) = test_keys::generate();
        let hint = PublicKey::all_from_pem(&pem).expect("pem")[0].clone();
        let key = SigningKey::from_pkcs8(&der, None).expect("key");
        assert_eq!(key.public, hint);
        let jws = key
            .sign_compact(br#"{"alg":"ES256"}"#, br#"{"a":1}"#)
            .expect("sign");
        let parsed = ParsedJws::parse(&jws).expect("parse");
        assert!(parsed.verify(std::slice::from_ref(&key.public)));
        let (other_der, _) = test_keys::generate();
        let other = SigningKey::from_pkcs8(&other_der, None).expect("other");
        assert!(!parsed.verify(&[other.public]));
    }

    #[test]
    fn pkcs8_scalar_is_found() {
        let (der, _) = test_keys::generate();
        let scalar = pkcs8_ec_private_scalar(&der).expect("scalar");
        assert_eq!(scalar.len(), 32);
    }

    #[test]
    fn garbage_is_rejected_without_panicking() {
        assert!(SigningKey::from_pkcs8(b"", None).is_err());
        assert!(SigningKey::from_pkcs8(&[0x30, 0x82, 0xff], None).is_err());
        assert!(PublicKey::all_from_pem("not pem").is_err());
        assert!(PublicKey::from_spki_der(&[0x30]).is_err());
        for t in ["", ".", "..", "a.b.c", "e30.e30.", "e30.e30.e30.e30"] {
            if let Some(p) = ParsedJws::parse(t) {
                assert!(!p.verify(&[]));
            }
        }
    }
}

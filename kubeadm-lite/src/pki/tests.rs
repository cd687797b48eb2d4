//! Tests for PKI creation, reuse, serving-cert reissue, client certs and error handling.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use x509_parser::certificate::X509Certificate;
use x509_parser::public_key::PublicKey;

use super::certs::{self, LeafSpec};
use super::*;

const FILES: [&str; 8] = [
    "ca.crt",
    "ca.key",
    "apiserver.crt",
    "apiserver.key",
    "sa.key",
    "sa.pub",
    "front-proxy-ca.crt",
    "front-proxy-ca.key",
];
const SECRET_FILES: [&str; 5] = [
    "ca.key",
    "apiserver.key",
    "sa.key",
    "sa.pub",
    "front-proxy-ca.key",
];
const DAY: i64 = 24 * 60 * 60;

fn opts() -> PkiOptions {
    PkiOptions::for_server(&[], Some("192.168.1.10".parse().unwrap()))
}

/// Every file in `dir` with its bytes; catches stray temp files as well as changed content.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn pem_der(pem: &[u8]) -> Vec<u8> {
    x509_parser::pem::parse_x509_pem(pem).unwrap().1.contents
}

fn parse(der: &[u8]) -> X509Certificate<'_> {
    certs::parse_der(der).unwrap()
}

fn cn(cert: &X509Certificate<'_>) -> String {
    cert.subject()
        .iter_common_name()
        .next()
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}

fn assert_p256(cert: &X509Certificate<'_>) {
    match cert.public_key().parsed().unwrap() {
        PublicKey::EC(ec) => assert_eq!(ec.key_size(), 256),
        other => panic!("expected an EC key, got {other:?}"),
    }
}

fn openssl_available() -> bool {
    Command::new("openssl")
        .arg("version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Runs `openssl verify` when openssl is installed; a no-op otherwise.
fn openssl_verify(dir: &Path, ca_pem: &str, cert_pem: &str, purpose: &str) {
    if !openssl_available() {
        return;
    }
    let ca = dir.join("verify-ca.pem");
    let leaf = dir.join("verify-leaf.pem");
    fs::write(&ca, ca_pem).unwrap();
    fs::write(&leaf, cert_pem).unwrap();
    let out = Command::new("openssl")
        .args(["verify", "-purpose", purpose, "-CAfile"])
        .arg(&ca)
        .arg(&leaf)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl verify failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn first_run_creates_all_files_with_kubeadm_names_and_modes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("etc/pki");
    let pki = ensure_pki(&dir, &opts()).unwrap();

    assert_eq!(mode(&dir), 0o700);
    let names: HashSet<String> = snapshot(&dir).into_keys().collect();
    let expected: HashSet<String> = FILES.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        names, expected,
        "exactly kubeadm's files, no temp files left"
    );
    for f in FILES {
        let want = if SECRET_FILES.contains(&f) {
            0o600
        } else {
            0o644
        };
        assert_eq!(mode(&dir.join(f)), want, "mode of {f}");
    }
    assert_eq!(pki.written_files().len(), FILES.len());

    for key in ["ca.key", "apiserver.key", "sa.key", "front-proxy-ca.key"] {
        let text = fs::read_to_string(dir.join(key)).unwrap();
        assert!(
            text.starts_with("-----BEGIN PRIVATE KEY-----"),
            "{key} is PKCS#8"
        );
    }
    let sa_pub = fs::read_to_string(dir.join("sa.pub")).unwrap();
    assert!(sa_pub.starts_with("-----BEGIN PUBLIC KEY-----"));
    assert_eq!(sa_pub, pki.sa_public_key_pem());
    assert_eq!(
        fs::read_to_string(dir.join("sa.key")).unwrap(),
        pki.sa_private_key_pem()
    );

    let now = certs::now_unix();
    let ca_der = pem_der(&fs::read(dir.join("ca.crt")).unwrap());
    assert_eq!(ca_der, pki.ca_cert_der().as_ref());
    let ca = parse(&ca_der);
    assert_eq!(cn(&ca), "kubernetes");
    assert!(ca.is_ca());
    assert_p256(&ca);
    let ca_days = (certs::not_after_unix(&ca) - now) / DAY;
    assert!(
        (3649..=3650).contains(&ca_days),
        "CA lifetime {ca_days} days"
    );
    assert!(
        ca.validity().not_before.timestamp() <= now - 60,
        "backdated"
    );

    let fp_der = pem_der(&fs::read(dir.join("front-proxy-ca.crt")).unwrap());
    let fp = parse(&fp_der);
    assert_eq!(cn(&fp), "front-proxy-ca");
    assert!(fp.is_ca());

    let api_der = pem_der(&fs::read(dir.join("apiserver.crt")).unwrap());
    let api = parse(&api_der);
    assert_eq!(cn(&api), "kube-apiserver");
    assert!(!api.is_ca());
    assert_p256(&api);
    let eku = api.extended_key_usage().unwrap().unwrap().value;
    assert!(eku.server_auth && !eku.client_auth);
    let api_days = (certs::not_after_unix(&api) - now) / DAY;
    assert!(
        (364..=365).contains(&api_days),
        "leaf lifetime {api_days} days"
    );
    assert!(
        api.validity().not_before.timestamp() <= now - 60,
        "backdated"
    );
}

#[test]
fn second_run_reuses_everything_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pki");
    let first = ensure_pki(&dir, &opts()).unwrap();
    let before = snapshot(&dir);
    let second = ensure_pki(&dir, &opts()).unwrap();
    assert_eq!(snapshot(&dir), before);
    assert!(second.written_files().is_empty());
    assert_eq!(first.ca_cert_pem(), second.ca_cert_pem());
    assert_eq!(
        first.serving_cert_chain_der(),
        second.serving_cert_chain_der()
    );
    assert_eq!(
        first.serving_key_der().secret_der(),
        second.serving_key_der().secret_der()
    );
    assert_eq!(first.sa_private_key_pem(), second.sa_private_key_pem());
}

#[test]
fn new_san_reissues_only_the_serving_cert_from_the_same_ca() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pki");
    ensure_pki(&dir, &opts()).unwrap();
    let before = snapshot(&dir);

    let extended = PkiOptions::for_server(
        &["k1s.example.com".into(), "203.0.113.7".into()],
        Some("192.168.1.10".parse().unwrap()),
    );
    let pki = ensure_pki(&dir, &extended).unwrap();
    let after = snapshot(&dir);
    for f in FILES {
        let changed = before[f] != after[f];
        assert_eq!(
            changed,
            f.starts_with("apiserver."),
            "{f} changed: {changed}"
        );
    }
    assert_eq!(
        pki.written_files(),
        [dir.join("apiserver.key"), dir.join("apiserver.crt")]
    );

    let chain = pki.serving_cert_chain_der();
    let cert = parse(&chain[0]);
    let (dns, ips) = certs::san_sets(&cert);
    assert!(dns.contains("k1s.example.com"));
    assert!(ips.contains(&"203.0.113.7".parse().unwrap()));
    let ca = parse(pki.ca_cert_der());
    cert.verify_signature(Some(ca.public_key())).unwrap();

    // Stable again, and asking for fewer names than the cert has is no reason to reissue.
    let settled = snapshot(&dir);
    assert!(
        ensure_pki(&dir, &extended)
            .unwrap()
            .written_files()
            .is_empty()
    );
    assert!(
        ensure_pki(&dir, &opts())
            .unwrap()
            .written_files()
            .is_empty()
    );
    assert_eq!(snapshot(&dir), settled);
}

#[test]
fn serving_cert_covers_every_san_and_chains_to_the_ca() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pki");
    let opts = PkiOptions::for_server(
        &[
            "API.Example.com".into(),
            "10.0.0.5".into(),
            "fd00::5".into(),
        ],
        Some("192.168.1.10".parse().unwrap()),
    );
    let pki = ensure_pki(&dir, &opts).unwrap();
    let chain = pki.serving_cert_chain_der();
    assert_eq!(chain.len(), 2);
    assert_eq!(&chain[1], pki.ca_cert_der());
    let cert = parse(&chain[0]);

    let (dns, ips) = certs::san_sets(&cert);
    for name in &opts.dns_names {
        assert!(dns.contains(name), "missing DNS SAN {name}");
    }
    for ip in &opts.ip_addresses {
        assert!(ips.contains(ip), "missing IP SAN {ip}");
    }
    for name in [
        "localhost",
        "api.example.com",
        "kubernetes.default.svc.cluster.local",
    ] {
        assert!(dns.contains(name), "missing DNS SAN {name}");
    }
    for ip in ["127.0.0.1", "::1", "10.96.0.1", "192.168.1.10", "10.0.0.5"] {
        assert!(ips.contains(&ip.parse().unwrap()), "missing IP SAN {ip}");
    }

    let ca = parse(pki.ca_cert_der());
    assert_eq!(cert.issuer().as_raw(), ca.subject().as_raw());
    cert.verify_signature(Some(ca.public_key())).unwrap();
    // The check is meaningful: the front-proxy CA did not sign it.
    let fp_der = pem_der(pki.front_proxy_ca_cert_pem().as_bytes());
    let fp = parse(&fp_der);
    assert!(cert.verify_signature(Some(fp.public_key())).is_err());

    // The key handed to rustls is the cert's key.
    let key = KeyPair::try_from(&pki.serving_key_der()).unwrap();
    assert!(certs::key_matches(&cert, &key));

    openssl_verify(
        tmp.path(),
        pki.ca_cert_pem(),
        &fs::read_to_string(dir.join("apiserver.crt")).unwrap(),
        "sslserver",
    );
}

/// Replaces apiserver.crt/.key with a pair issued by `issuer` for `days` days.
fn plant_serving_cert(dir: &Path, issuer: &Issuer<'static, KeyPair>, days: u64) {
    let (der, key) = certs::issue_leaf(
        issuer,
        &LeafSpec {
            common_name: APISERVER_COMMON_NAME,
            organizations: &[],
            sans: opts().san_types().unwrap(),
            usage: ExtendedKeyUsagePurpose::ServerAuth,
            validity: Duration::from_secs(days * DAY as u64),
        },
    )
    .unwrap();
    fs::write(
        dir.join("apiserver.crt"),
        certs::pem_encode("CERTIFICATE", &der),
    )
    .unwrap();
    fs::write(dir.join("apiserver.key"), key.serialize_pem()).unwrap();
}

#[test]
fn serving_cert_near_expiry_is_reissued() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pki");
    let pki = ensure_pki(&dir, &opts()).unwrap();

    plant_serving_cert(&dir, &pki.ca_issuer, 60);
    assert!(
        ensure_pki(&dir, &opts())
            .unwrap()
            .written_files()
            .is_empty()
    );

    plant_serving_cert(&dir, &pki.ca_issuer, 10);
    let renewed = ensure_pki(&dir, &opts()).unwrap();
    assert_eq!(renewed.written_files().len(), 2);
    let chain = renewed.serving_cert_chain_der();
    let days = (certs::not_after_unix(&parse(&chain[0])) - certs::now_unix()) / DAY;
    assert!(days >= 364, "renewed for a year, got {days} days");
    assert_eq!(renewed.ca_cert_pem(), pki.ca_cert_pem());
}

#[test]
fn serving_cert_from_another_ca_or_with_a_foreign_key_is_reissued() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pki");
    let pki = ensure_pki(&dir, &opts()).unwrap();
    let other = ensure_pki(&tmp.path().join("other"), &opts()).unwrap();

    plant_serving_cert(&dir, &other.ca_issuer, 365);
    let fixed = ensure_pki(&dir, &opts()).unwrap();
    assert_eq!(fixed.written_files().len(), 2);
    let ca = parse(pki.ca_cert_der());
    let chain = fixed.serving_cert_chain_der();
    parse(&chain[0])
        .verify_signature(Some(ca.public_key()))
        .unwrap();

    // A key that does not belong to the cert.
    fs::copy(
        tmp.path().join("other/apiserver.key"),
        dir.join("apiserver.key"),
    )
    .unwrap();
    assert_eq!(ensure_pki(&dir, &opts()).unwrap().written_files().len(), 2);
}

#[test]
fn client_cert_carries_cn_and_groups_and_verifies_against_the_ca() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = ensure_pki(&tmp.path().join("pki"), &opts()).unwrap();
    let (cert_pem, key_pem) = pki
        .issue_client_cert(
            "alice",
            &["system:masters", "dev-team"],
            Duration::from_secs(3600),
        )
        .unwrap();
    assert!(key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
    let der = pem_der(cert_pem.as_bytes());
    assert_eq!(
        client_identity(&der).unwrap(),
        (
            "alice".to_string(),
            vec!["system:masters".to_string(), "dev-team".to_string()]
        )
    );

    let cert = parse(&der);
    let ca = parse(pki.ca_cert_der());
    assert_eq!(cert.issuer().as_raw(), ca.subject().as_raw());
    cert.verify_signature(Some(ca.public_key())).unwrap();
    let eku = cert.extended_key_usage().unwrap().unwrap().value;
    assert!(eku.client_auth && !eku.server_auth);
    let lifetime = certs::not_after_unix(&cert) - certs::now_unix();
    assert!((3500..=3600).contains(&lifetime), "lifetime {lifetime}s");
    let key = KeyPair::from_pem(&key_pem).unwrap();
    assert!(certs::key_matches(&cert, &key));
    openssl_verify(tmp.path(), pki.ca_cert_pem(), &cert_pem, "sslclient");

    // One group and no group take the same path through the subject encoding.
    let (one, _) = pki
        .issue_client_cert("bob", &["viewers"], Duration::from_secs(60))
        .unwrap();
    let one_der = pem_der(one.as_bytes());
    assert_eq!(
        client_identity(&one_der).unwrap(),
        ("bob".to_string(), vec!["viewers".to_string()])
    );
    parse(&one_der)
        .verify_signature(Some(ca.public_key()))
        .unwrap();
    let (none, _) = pki
        .issue_client_cert("system:kube-scheduler", &[], Duration::from_secs(60))
        .unwrap();
    assert_eq!(
        client_identity(&pem_der(none.as_bytes())).unwrap(),
        ("system:kube-scheduler".to_string(), vec![])
    );
}

#[test]
fn client_cert_requests_and_identities_are_validated() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = ensure_pki(&tmp.path().join("pki"), &opts()).unwrap();
    assert!(matches!(
        pki.issue_client_cert("", &[], Duration::from_secs(60)),
        Err(PkiError::InvalidRequest(_))
    ));
    assert!(matches!(
        pki.issue_client_cert("x", &[], Duration::ZERO),
        Err(PkiError::InvalidRequest(_))
    ));
    assert!(matches!(
        pki.issue_client_cert("x", &[], Duration::from_secs(u64::MAX)),
        Err(PkiError::InvalidRequest(_))
    ));
    assert!(matches!(
        client_identity(b"not a certificate"),
        Err(PkiError::ClientCert(_))
    ));
    // A certificate without a CN names no user.
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    let no_cn = params.self_signed(&certs::new_key().unwrap()).unwrap();
    assert!(matches!(
        client_identity(no_cn.der()),
        Err(PkiError::ClientCert(_))
    ));
}

#[test]
fn front_proxy_client_cert_is_signed_by_the_front_proxy_ca() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = ensure_pki(&tmp.path().join("pki"), &opts()).unwrap();
    let (fp_pem, _) = pki
        .issue_front_proxy_client_cert("front-proxy-client", Duration::from_secs(60))
        .unwrap();
    let fp_der = pem_der(fp_pem.as_bytes());
    let fp_ca_der = pem_der(pki.front_proxy_ca_cert_pem().as_bytes());
    let cert = parse(&fp_der);
    cert.verify_signature(Some(parse(&fp_ca_der).public_key()))
        .unwrap();
    assert!(
        cert.verify_signature(Some(parse(pki.ca_cert_der()).public_key()))
            .is_err()
    );
    assert_eq!(cn(&cert), "front-proxy-client");
}

#[test]
fn every_corrupt_file_is_an_error_naming_it_and_nothing_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("good");
    ensure_pki(&good, &opts()).unwrap();
    for (i, victim) in FILES.iter().enumerate() {
        let dir = tmp.path().join(format!("case{i}"));
        fs::create_dir(&dir).unwrap();
        for f in FILES {
            fs::copy(good.join(f), dir.join(f)).unwrap();
        }
        fs::write(dir.join(victim), "-----BEGIN CERTIFICATE-----\ngarbage\n").unwrap();
        // Without its serving cert a careless implementation would write a new one.
        if !victim.starts_with("apiserver.") {
            fs::remove_file(dir.join("apiserver.crt")).unwrap();
        }
        let before = snapshot(&dir);
        let err = ensure_pki(&dir, &opts()).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains(&dir.join(victim).display().to_string()),
            "error for corrupt {victim} should name it: {msg}"
        );
        assert_eq!(snapshot(&dir), before, "{victim}: nothing may change");
    }
}

#[test]
fn corrupt_ca_crt_gives_a_parse_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pki");
    ensure_pki(&dir, &opts()).unwrap();
    fs::write(dir.join("ca.crt"), b"\x00\x01 definitely not PEM").unwrap();
    let before = snapshot(&dir);
    match ensure_pki(&dir, &opts()) {
        Err(PkiError::Parse { path, .. }) => assert_eq!(path, dir.join("ca.crt")),
        other => panic!("expected a parse error for ca.crt, got {other:?}"),
    }
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn ca_cert_without_key_or_with_a_foreign_key_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    ensure_pki(&a, &opts()).unwrap();
    ensure_pki(&b, &opts()).unwrap();

    let lone = tmp.path().join("lone");
    fs::create_dir(&lone).unwrap();
    fs::copy(a.join("ca.crt"), lone.join("ca.crt")).unwrap();
    let err = ensure_pki(&lone, &opts()).unwrap_err();
    assert!(matches!(err, PkiError::MissingPair { .. }), "{err:?}");
    assert!(err.to_string().contains("ca.key"), "{err}");
    assert_eq!(
        snapshot(&lone).into_keys().collect::<Vec<_>>(),
        ["ca.crt"],
        "nothing else written"
    );

    fs::copy(b.join("ca.key"), a.join("ca.key")).unwrap();
    fs::remove_file(a.join("apiserver.crt")).unwrap();
    let before = snapshot(&a);
    let err = ensure_pki(&a, &opts()).unwrap_err();
    assert!(
        matches!(&err, PkiError::KeyMismatch { key, .. } if key == &a.join("ca.key")),
        "{err:?}"
    );
    assert_eq!(snapshot(&a), before);
}

#[test]
fn a_key_left_without_its_cert_by_a_crash_is_completed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pki");
    let first = ensure_pki(&dir, &opts()).unwrap();
    let ca_key = fs::read(dir.join("ca.key")).unwrap();
    fs::remove_file(dir.join("ca.crt")).unwrap();
    fs::remove_file(dir.join("sa.pub")).unwrap();

    let second = ensure_pki(&dir, &opts()).unwrap();
    assert_eq!(fs::read(dir.join("ca.key")).unwrap(), ca_key);
    let ca = parse(second.ca_cert_der());
    let key = KeyPair::from_pem(std::str::from_utf8(&ca_key).unwrap()).unwrap();
    assert!(certs::key_matches(&ca, &key));
    assert_eq!(second.sa_public_key_pem(), first.sa_public_key_pem());
    assert_eq!(
        fs::read_to_string(dir.join("sa.pub")).unwrap(),
        first.sa_public_key_pem()
    );
    assert_eq!(mode(&dir.join("sa.pub")), 0o600);
}

#[test]
fn sa_pub_without_sa_key_or_not_matching_it_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    ensure_pki(&a, &opts()).unwrap();
    ensure_pki(&b, &opts()).unwrap();

    fs::copy(b.join("sa.pub"), a.join("sa.pub")).unwrap();
    let err = ensure_pki(&a, &opts()).unwrap_err();
    assert!(matches!(err, PkiError::KeyMismatch { .. }), "{err:?}");

    fs::remove_file(a.join("sa.key")).unwrap();
    let before = snapshot(&a);
    let err = ensure_pki(&a, &opts()).unwrap_err();
    assert!(
        matches!(&err, PkiError::MissingPair { missing, .. } if missing == &a.join("sa.key")),
        "{err:?}"
    );
    assert_eq!(snapshot(&a), before);
}

#[test]
fn for_server_has_the_standard_names_once_each() {
    let opts = PkiOptions::for_server(
        &[
            "kubernetes".into(),
            "LOCALHOST".into(),
            "127.0.0.1".into(),
            " my.host.example ".into(),
            "10.0.0.1".into(),
            String::new(),
        ],
        Some("127.0.0.1".parse().unwrap()),
    );
    let mut want_dns = vec!["localhost".to_string()];
    if let Some(host) = local_hostname()
        && host != "localhost"
    {
        want_dns.push(host);
    }
    want_dns.extend(
        [
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
            "my.host.example",
        ]
        .map(String::from),
    );
    assert_eq!(opts.dns_names, want_dns);
    let want_ips: Vec<IpAddr> = ["127.0.0.1", "::1", "10.96.0.1", "10.0.0.1"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(opts.ip_addresses, want_ips);
}

#[test]
fn invalid_san_is_rejected_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pki");
    let opts = PkiOptions {
        dns_names: vec!["bücher.example".into()],
        ..Default::default()
    };
    let err = ensure_pki(&dir, &opts).unwrap_err();
    assert!(matches!(err, PkiError::InvalidSan { .. }), "{err:?}");
    assert!(!dir.exists());
}

#[test]
fn a_new_service_account_key_is_rsa_unless_ecdsa_is_asked_for() {
    use rsa::pkcs8::DecodePrivateKey as _;
    use rsa::traits::PublicKeyParts as _;
    let tmp = tempfile::tempdir().unwrap();
    let pki = ensure_pki(tmp.path(), &opts()).unwrap();
    let key = rsa::RsaPrivateKey::from_pkcs8_pem(pki.sa_private_key_pem()).unwrap();
    assert_eq!(key.size() * 8, 2048, "kubeadm's sa.key is RSA 2048");

    let tmp = tempfile::tempdir().unwrap();
    let mut ecdsa = opts();
    ecdsa.ecdsa_service_account_key = true;
    let pki = ensure_pki(tmp.path(), &ecdsa).unwrap();
    assert!(rsa::RsaPrivateKey::from_pkcs8_pem(pki.sa_private_key_pem()).is_err());
    // An existing key is used as it is, whatever is asked for a new one.
    let again = ensure_pki(tmp.path(), &opts()).unwrap();
    assert_eq!(again.sa_private_key_pem(), pki.sa_private_key_pem());
}

#[test]
fn a_kubeadm_pkcs1_service_account_key_is_honoured() {
    use rsa::pkcs1::EncodeRsaPrivateKey as _;
    use rsa::pkcs8::DecodePrivateKey as _;
    let tmp = tempfile::tempdir().unwrap();
    let first = ensure_pki(tmp.path(), &opts()).unwrap();
    // Rewrite sa.key as kubeadm writes it: PKCS#1 "RSA PRIVATE KEY".
    let key = rsa::RsaPrivateKey::from_pkcs8_pem(first.sa_private_key_pem()).unwrap();
    let pkcs1 = key.to_pkcs1_pem(rsa::pkcs8::LineEnding::LF).unwrap();
    assert!(pkcs1.starts_with("-----BEGIN RSA PRIVATE KEY-----"));
    fs::write(tmp.path().join("sa.key"), pkcs1.as_bytes()).unwrap();
    let second = ensure_pki(tmp.path(), &opts()).unwrap();
    assert_eq!(second.sa_public_key_pem(), first.sa_public_key_pem());
    assert_eq!(
        second.sa_private_key_pkcs8_der(),
        first.sa_private_key_pkcs8_der()
    );
    assert!(
        second.written_files().is_empty(),
        "{:?}",
        second.written_files()
    );
}

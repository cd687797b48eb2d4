//! Unit tests of the kubeadm configuration files: schema checks, mapping, migration.

use super::*;
use std::path::PathBuf;

fn opts() -> InitOptions {
    InitOptions {
        data_dir: PathBuf::from("/tmp/k1s"),
        cert_dir: PathBuf::from("/tmp/k1s/pki"),
        advertise_address: IpAddr::from([127, 0, 0, 1]),
        bind_port: 6443,
        cert_extra_sans: vec![],
        node_name: "host".into(),
        tokens: vec![TokenSpec::from_flags(
            "abcdef.0123456789abcdef",
            token::DEFAULT_TTL,
        )],
        service_subnet: "10.96.0.0/12".into(),
        pod_subnet: String::new(),
        dns_domain: "cluster.local".into(),
        skip_phases: vec![],
        cluster_name: "kubernetes".into(),
        control_plane_endpoint: None,
        taints: None,
        dry_run: false,
        certificate_key: None,
        etcd_external: None,
    }
}

const INIT: &str = r#"
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- token: "aaaaaa.bbbbbbbbbbbbbbbb"
  ttl: 1h0m0s
  description: first
- token: "cccccc.dddddddddddddddd"
  groups: ["system:bootstrappers:edge"]
localAPIEndpoint:
  advertiseAddress: 10.1.2.3
  bindPort: 7443
nodeRegistration:
  name: cp-1
  taints: []
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
clusterName: edge
controlPlaneEndpoint: cp.example:9443
certificatesDir: /srv/pki
apiServer:
  certSANs: [api.example]
networking:
  serviceSubnet: 10.200.0.0/16
  podSubnet: 10.244.0.0/16
  dnsDomain: edge.local
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
"#;

#[test]
fn init_file_maps_onto_options() {
    let loaded = load(INIT, false).expect("load");
    let mut o = opts();
    let warnings = apply_init(&loaded, &mut o).expect("apply");
    assert_eq!(o.tokens.len(), 2);
    assert_eq!(o.tokens[0].token, "aaaaaa.bbbbbbbbbbbbbbbb");
    assert_eq!(o.tokens[0].ttl, Duration::from_secs(3600));
    assert_eq!(o.tokens[1].groups, ["system:bootstrappers:edge"]);
    assert_eq!(o.advertise_address, IpAddr::from([10, 1, 2, 3]));
    assert_eq!(o.bind_port, 7443);
    assert_eq!(o.node_name, "cp-1");
    assert_eq!(o.taints.as_deref(), Some(&[][..]));
    assert_eq!(o.cluster_name, "edge");
    assert_eq!(o.cert_dir, PathBuf::from("/srv/pki"));
    assert_eq!(o.endpoint(), "cp.example:9443");
    assert_eq!(o.server_sans(), ["api.example", "cp.example"]);
    assert_eq!(o.service_subnet, "10.200.0.0/16");
    assert_eq!(o.dns_domain, "edge.local");
    assert!(
        warnings.iter().any(|w| w.contains("KubeletConfiguration")),
        "{warnings:?}"
    );
}

#[test]
fn unknown_fields_warn_or_fail_when_strict() {
    let text = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  nmae: x\nbogus: 1\n";
    let loaded = load(text, false).expect("lenient");
    let w = loaded.warnings.join("\n");
    assert!(w.contains("unknown field \"nodeRegistration.nmae\""), "{w}");
    assert!(w.contains("unknown field \"bogus\""), "{w}");
    let e = load(text, true).expect_err("strict");
    assert!(e.to_string().contains("strict decoding error"), "{e}");
}

#[test]
fn wrong_types_and_versions_are_errors() {
    let e = load(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n  bindPort: abc\n",
        false,
    )
    .expect_err("type");
    assert!(
        e.to_string()
            .contains("localAPIEndpoint.bindPort: expected an integer"),
        "{e}"
    );
    let e = load(
        "apiVersion: kubeadm.k8s.io/v1beta2\nkind: InitConfiguration\n",
        false,
    )
    .expect_err("old");
    assert!(e.to_string().contains("old API spec"), "{e}");
    let e = load("apiVersion: kubeadm.k8s.io/v1beta4\nkind: Bogus\n", false).expect_err("kind");
    assert!(e.to_string().contains("Kind:\"Bogus\""), "{e}");
    let e = load("kind: [", false).expect_err("yaml");
    assert!(e.to_string().contains("YAML"), "{e}");
    // A JoinConfiguration is no init file.
    let loaded = load(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ndiscovery: {}\n",
        false,
    )
    .expect("load");
    let e = apply_init(&loaded, &mut opts()).expect_err("kind");
    assert!(
        e.to_string()
            .contains("no InitConfiguration or ClusterConfiguration"),
        "{e}"
    );
}

#[test]
fn v1beta3_is_read_with_a_warning_and_migrated() {
    let text = "apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\napiServer:\n  timeoutForControlPlane: 4m0s\n  extraArgs:\n    b: \"2\"\n    a: \"1\"\n";
    let loaded = load(text, false).expect("load");
    assert!(
        loaded.warnings[0].contains("deprecated API spec"),
        "{:?}",
        loaded.warnings
    );
    let out = migrate(text).expect("migrate");
    assert!(!out.contains("v1beta3"), "{out}");
    assert!(
        out.contains("controlPlaneComponentHealthCheck: 4m0s"),
        "{out}"
    );
    assert!(
        out.find("name: a").expect("a") < out.find("name: b").expect("b"),
        "{out}"
    );
    // The result reads as v1beta4 without complaint.
    let again = load(&out, true).expect("strict");
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
}

#[test]
fn join_file_and_defaults_round_trip() {
    let loaded = load(&join_defaults("node"), true).expect("defaults");
    let j = apply_join(&loaded).expect("apply");
    assert_eq!(j.endpoint.as_deref(), Some("kube-apiserver:6443"));
    assert_eq!(j.token.as_deref(), Some("abcdef.0123456789abcdef"));
    assert!(j.unsafe_skip_ca_verification);
    assert_eq!(j.discovery_timeout, Some(Duration::from_secs(30)));
    let e = apply_join(&load(INIT, false).expect("init")).expect_err("kind");
    assert!(e.to_string().contains("no JoinConfiguration"), "{e}");
}

#[test]
fn mixed_arguments_are_refused() {
    let given = [
        "config".to_string(),
        "token".into(),
        "skip-phases".into(),
        "data-dir".into(),
    ];
    let e = check_mixed_args(&given, &INIT_FILE_FLAGS).expect_err("mixed");
    assert_eq!(
        e.to_string(),
        "can not mix '--config' with arguments [token]"
    );
    assert!(check_mixed_args(&given[1..], &INIT_FILE_FLAGS).is_ok());
    assert!(check_mixed_args(&[given[0].clone(), given[2].clone()], &INIT_FILE_FLAGS).is_ok());
}

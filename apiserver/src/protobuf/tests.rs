//! Wire-format tests of the protobuf codec: hand-built client bodies, framing, bad input.

use serde_json::{Value, json};

use super::schema::{self, schema};
use super::*;

/// A length-delimited field, by hand: key byte (`tag << 3 | 2`), length, bytes.
fn ld(tag: u8, bytes: &[u8]) -> Vec<u8> {
    assert!(bytes.len() < 128 && tag < 16);
    let mut out = vec![(tag << 3) | 2, bytes.len() as u8];
    out.extend_from_slice(bytes);
    out
}

/// A varint field with a one-byte value, by hand.
fn vi(tag: u8, v: u8) -> Vec<u8> {
    assert!(v < 128 && tag < 16);
    vec![tag << 3, v]
}

/// The body `kubectl create namespace foo` sends (kubectl 1.32+, client-go's gogo encoder):
/// every non-pointer field is written even when empty, pointers and empty lists are not.
fn kubectl_create_namespace_body() -> Vec<u8> {
    // ObjectMeta: 1 name "foo", 2 generateName, 3 namespace, 4 selfLink, 5 uid,
    // 6 resourceVersion (all ""), 7 generation 0, 8 creationTimestamp (zero Time: empty).
    let object_meta = [
        ld(1, b"foo"),
        ld(2, b""),
        ld(3, b""),
        ld(4, b""),
        ld(5, b""),
        ld(6, b""),
        vi(7, 0),
        ld(8, b""),
    ]
    .concat();
    // Namespace: 1 metadata, 2 spec (no finalizers: empty), 3 status {1 phase ""}.
    let namespace = [ld(1, &object_meta), ld(2, b""), ld(3, &ld(1, b""))].concat();
    // runtime.Unknown: 1 typeMeta {1 apiVersion "v1", 2 kind "Namespace"}, 2 raw,
    // 3 contentEncoding "", 4 contentType "".
    let type_meta = [ld(1, b"v1"), ld(2, b"Namespace")].concat();
    let unknown = [ld(1, &type_meta), ld(2, &namespace), ld(3, b""), ld(4, b"")].concat();
    [b"k8s\0".to_vec(), unknown].concat()
}

/// Bytes kubectl 1.32.4 sent (captured from `kubectl create namespace foo`, `kubectl create
/// configmap cm --from-literal=a=b -n default`, `kubectl create deployment web --image=nginx
/// --replicas=0` against a recording HTTP server).
const KUBECTL_NAMESPACE: &[u8] = b"k8s\0\x0a\x0f\x0a\x02v1\x12\x09Namespace\x12\x1b\x0a\x13\x0a\x03foo\
    \x12\x00\x1a\x00\x22\x00\x2a\x00\x32\x00\x38\x00\x42\x00\x12\x00\x1a\x02\x0a\x00\x1a\x00\x22\x00";
const KUBECTL_CONFIGMAP: &[u8] = b"k8s\0\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x23\x0a\x19\x0a\x02cm\
    \x12\x00\x1a\x07default\x22\x00\x2a\x00\x32\x00\x38\x00\x42\x00\x12\x06\x0a\x01a\x12\x01b\x1a\x00\x22\x00";
const KUBECTL_DEPLOYMENT: &[u8] = b"k8s\0\x0a\x15\x0a\x07apps/v1\x12\x0aDeployment\x12\xab\x01\
    \x0a\x1f\x0a\x03web\x12\x00\x1a\x00\x22\x00\x2a\x00\x32\x00\x38\x00\x42\x00\x5a\x0a\x0a\x03app\x12\x03web\
    \x12\x7a\x08\x00\x12\x0c\x0a\x0a\x0a\x03app\x12\x03web\x1a\x60\x0a\x1c\x0a\x00\x12\x00\x1a\x00\x22\x00\x2a\x00\
    \x32\x00\x38\x00\x42\x00\x5a\x0a\x0a\x03app\x12\x03web\x12\x40\x12\x22\x0a\x05nginx\x12\x05nginx\x2a\x00\
    \x42\x00\x6a\x00\x72\x00\x80\x01\x00\x88\x01\x00\x90\x01\x00\xa2\x01\x00\x1a\x00\x32\x00\x42\x00\x4a\x00\x52\x00\
    \x58\x00\x60\x00\x68\x00\x82\x01\x00\x8a\x01\x00\x9a\x01\x00\xc2\x01\x00\x22\x02\x0a\x00\x28\x00\x38\x00\x1a\x0c\
    \x08\x00\x10\x00\x18\x00\x20\x00\x28\x00\x38\x00\x1a\x00\x22\x00";

#[test]
fn decodes_kubectl_create_namespace() -> Result<(), ProtobufError> {
    let body = kubectl_create_namespace_body();
    assert_eq!(
        body, KUBECTL_NAMESPACE,
        "the hand-built bytes are what kubectl sends"
    );
    let obj = decode_object(&body)?;
    // Zero non-pointer `omitempty` fields are dropped, as Go's JSON encoder drops them; structs
    // stay: this is kubectl's own JSON body for the command (minus `creationTimestamp: null`).
    let want = json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "foo"},
        "spec": {},
        "status": {},
    });
    assert_eq!(obj, want);
    Ok(())
}

#[test]
fn decodes_kubectl_create_configmap_and_deployment() -> Result<(), ProtobufError> {
    let want = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "default"}, "data": {"a": "b"}});
    assert_eq!(decode_object(KUBECTL_CONFIGMAP)?, want);
    // `kubectl create deployment web --image=nginx --replicas=0 --dry-run=client -o json`,
    // minus the `creationTimestamp: null`s; the explicit `replicas: 0` (a pointer) stays.
    let want = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]}
            },
            "strategy": {}
        },
        "status": {}
    });
    assert_eq!(decode_object(KUBECTL_DEPLOYMENT)?, want);
    Ok(())
}

#[test]
fn encodes_the_envelope_as_go_does() -> Result<(), ProtobufError> {
    let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "foo"}});
    let body = encode_object(&obj)?;
    let raw = ld(1, &ld(1, b"foo"));
    let type_meta = [ld(1, b"v1"), ld(2, b"Namespace")].concat();
    let want = [
        b"k8s\0".to_vec(),
        ld(1, &type_meta),
        ld(2, &raw),
        ld(3, b""),
        ld(4, b""),
    ]
    .concat();
    assert_eq!(body, want);
    assert_eq!(decode_object(&body)?, obj);
    Ok(())
}

#[test]
fn every_truncation_is_an_error_or_a_valid_prefix() -> Result<(), ProtobufError> {
    let body = kubectl_create_namespace_body();
    // Cuts inside the prefix, typeMeta or raw must fail; a cut between whole fields of
    // runtime.Unknown is a valid (shorter) message.
    let type_meta_end = 4 + 2 + 0x0f;
    let raw_end = type_meta_end + 2 + 0x1b;
    for cut in 0..=body.len() {
        let result = decode_object(&body[..cut]);
        if [type_meta_end, raw_end, raw_end + 2, body.len()].contains(&cut) {
            assert!(result.is_ok(), "cut at {cut}: {result:?}");
        } else {
            assert!(result.is_err(), "cut at {cut} decoded: {result:?}");
        }
    }
    // The same for a big object, and the raw object alone (no panics, no successes in the
    // middle of a field).
    let pod = encode_object(&super::tests_kinds::pod())?;
    for cut in 0..pod.len() {
        let _ = decode_object(&pod[..cut]);
    }
    Ok(())
}

/// A small deterministic generator (no dependency): xorshift64.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn garbage_and_mutations_never_panic() -> Result<(), ProtobufError> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for len in 0..200 {
        let mut body = b"k8s\0".to_vec();
        body.extend((0..len).map(|_| rng.next() as u8));
        let _ = decode_object(&body);
        let _ = decode_watch_event(&body);
    }
    let pod = encode_object(&super::tests_kinds::pod())?;
    let crd = encode_object(&super::tests_kinds::crd())?;
    for base in [
        pod,
        crd,
        KUBECTL_NAMESPACE.to_vec(),
        KUBECTL_DEPLOYMENT.to_vec(),
    ] {
        for _ in 0..2000 {
            let mut body = base.clone();
            for _ in 0..1 + rng.next() % 4 {
                let i = 4 + (rng.next() as usize) % (body.len() - 4);
                body[i] = rng.next() as u8;
            }
            if let Ok(v) = decode_object(&body) {
                // Whatever decodes must encode again.
                let _ = encode_object(&v);
            }
        }
    }
    Ok(())
}

#[test]
fn errors_say_what_is_wrong() {
    let msg = |r: Result<Value, ProtobufError>| r.err().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(
        msg(decode_object(b"{\"kind\":\"Pod\"}")),
        "not a Kubernetes protobuf message: it does not start with the \"k8s\\0\" prefix"
    );
    assert_eq!(
        msg(decode_object(b"k8s\0\x0a\x05\x0a")),
        "truncated message"
    );
    let unknown = [
        b"k8s\0".to_vec(),
        ld(1, &[ld(1, b"apps/v1"), ld(2, b"Foo")].concat()),
    ]
    .concat();
    assert_eq!(msg(decode_object(&unknown)), "unknown kind apps/v1 Foo");
    // Pod field 1 (metadata) sent as a varint.
    let tm = [ld(1, b"v1"), ld(2, b"Pod")].concat();
    let bad = [b"k8s\0".to_vec(), ld(1, &tm), ld(2, &vi(1, 5))].concat();
    assert_eq!(
        msg(decode_object(&bad)),
        "field 1 of k8s.io.api.core.v1.Pod has wire type 0, expected 2"
    );
    let no_kind = [b"k8s\0".to_vec(), ld(1, &ld(1, b"v1"))].concat();
    assert_eq!(msg(decode_object(&no_kind)), "protobuf body has no kind");
    let gzip = [b"k8s\0".to_vec(), ld(1, &tm), ld(3, b"gzip")].concat();
    assert_eq!(
        msg(decode_object(&gzip)),
        "unsupported protobuf contentEncoding \"gzip\""
    );

    let enc = |v: Value| {
        encode_object(&v)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert_eq!(
        enc(json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": "3"}})),
        "spec.replicas: expected an integer, found a string"
    );
    assert_eq!(
        enc(
            json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"ports": [
            {"containerPort": 99_999_999_999u64}]}]}})
        ),
        "spec.containers[0].ports[0].containerPort: 99999999999 does not fit an int32"
    );
    assert_eq!(
        enc(json!({"apiVersion": "meta.k8s.io/v1", "kind": "Table", "rows": []})),
        "unknown kind meta.k8s.io/v1 Table"
    );
    assert_eq!(
        enc(json!({"apiVersion": "v1", "kind": "Secret", "data": {"a": "!!"}})),
        "data.a: invalid base64: Invalid symbol 33, offset 0."
    );
    assert_eq!(
        enc(json!({"kind": "Pod"})),
        "protobuf body has no apiVersion"
    );
}

#[test]
fn unknown_fields_are_skipped() -> Result<(), ProtobufError> {
    // Namespace with extra fields 9 (varint), 10 (fixed64), 11 (bytes), 12 (fixed32).
    let mut raw = ld(1, &ld(1, b"foo"));
    raw.extend([9 << 3, 0x96, 0x01]);
    raw.extend([(10 << 3) | 1, 1, 2, 3, 4, 5, 6, 7, 8]);
    raw.extend(ld(11, b"future"));
    raw.extend([(12 << 3) | 5, 1, 2, 3, 4]);
    let tm = [ld(1, b"v1"), ld(2, b"Namespace")].concat();
    let body = [b"k8s\0".to_vec(), ld(1, &tm), ld(2, &raw)].concat();
    let want = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "foo"}});
    assert_eq!(decode_object(&body)?, want);
    Ok(())
}

#[test]
fn repeated_int32_is_written_unpacked_and_read_either_way() -> Result<(), ProtobufError> {
    let s = schema()?;
    let Some(id) = s.by_name("k8s.io.api.batch.v1.PodFailurePolicyOnExitCodesRequirement") else {
        panic!("no PodFailurePolicyOnExitCodesRequirement");
    };
    let v = json!({"operator": "In", "values": [1, 2, 300]});
    let obj = v.as_object().cloned().unwrap_or_default();
    let mut buf = Vec::new();
    encode::fields(s, id, &obj, &mut buf, 0)?;
    // Upstream (proto2, gogo) writes one key per element: 18 01 18 02 18 ac 02.
    let want = [ld(2, b"In"), vec![0x18, 1, 0x18, 2, 0x18, 0xac, 0x02]].concat();
    assert_eq!(buf, want);
    assert_eq!(decode::message(s, id, &buf, 0)?, Some(v.clone()));
    let packed = [ld(2, b"In"), vec![0x1a, 4, 1, 2, 0xac, 0x02]].concat();
    assert_eq!(decode::message(s, id, &packed, 0)?, Some(v));
    Ok(())
}

#[test]
fn special_types_decode_to_their_json_forms() -> Result<(), ProtobufError> {
    let s = schema()?;
    let id = |n: &str| s.by_name(n).ok_or_else(|| ProtobufError::Schema(n.into()));
    let meta = "k8s.io.apimachinery.pkg.apis.meta.v1";
    let dec = |n: &str, b: &[u8]| decode::message(s, id(n)?, b, 0);
    // Duration {1 duration (ns)}.
    let d = |ns: &[u8]| dec(&format!("{meta}.Duration"), &[&[0x08], ns].concat());
    assert_eq!(d(&[0])?, Some(json!("0s")));
    assert_eq!(
        d(&[0x80, 0xc0, 0xe2, 0x85, 0xe3, 0x68])?,
        Some(json!("1h0m0s"))
    );
    assert_eq!(d(&[0x80, 0xc6, 0x86, 0x8f, 0x01])?, Some(json!("300ms")));
    // MicroTime {1 seconds, 2 nanos}: nanoseconds truncated to microseconds.
    // 1795254546 s, 123456789 ns.
    let mt = [
        vec![0x08, 0x92, 0xd2, 0x85, 0xd8, 0x06],
        vec![0x10, 0x95, 0x9a, 0xef, 0x3a],
    ]
    .concat();
    assert_eq!(
        dec(&format!("{meta}.MicroTime"), &mt)?,
        Some(json!("2026-11-21T09:49:06.123456Z"))
    );
    // Time drops the nanoseconds, as upstream does; an empty Time is absent (JSON null).
    assert_eq!(
        dec(&format!("{meta}.Time"), &mt)?,
        Some(json!("2026-11-21T09:49:06Z"))
    );
    assert_eq!(dec(&format!("{meta}.Time"), &[])?, None);
    // IntOrString {1 type, 2 intVal, 3 strVal}.
    let ios = "k8s.io.apimachinery.pkg.util.intstr.IntOrString";
    assert_eq!(
        dec(ios, &[vi(1, 0), vi(2, 80), ld(3, b"")].concat())?,
        Some(json!(80))
    );
    assert_eq!(
        dec(ios, &[vi(1, 1), vi(2, 0), ld(3, b"http")].concat())?,
        Some(json!("http"))
    );
    // RawExtension holding JSON, and holding a nested protobuf object.
    let raw = "k8s.io.apimachinery.pkg.runtime.RawExtension";
    assert_eq!(
        dec(raw, &ld(1, br#"{"a":[1,true]}"#))?,
        Some(json!({"a": [1, true]}))
    );
    let nested = encode_object(&json!({"apiVersion": "v1", "kind": "Namespace"}))?;
    assert_eq!(
        dec(raw, &[vec![0x0a, nested.len() as u8], nested].concat())?,
        Some(json!({"apiVersion": "v1", "kind": "Namespace"}))
    );
    assert!(dec(raw, &ld(1, b"{not json")).is_err());
    Ok(())
}

#[test]
fn watch_events_use_upstream_framing() -> Result<(), ProtobufError> {
    let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "foo"}});
    let frame = encode_watch_event("ADDED", &obj)?;
    let object = encode_object(&obj)?;
    // WatchEvent {1 type, 2 object: RawExtension {1 raw: the enveloped object}}, no prefix.
    let event = [ld(1, b"ADDED"), ld(2, &ld(1, &object))].concat();
    let want = [(event.len() as u32).to_be_bytes().to_vec(), event].concat();
    assert_eq!(frame, want);
    assert_eq!(decode_watch_event(&frame)?, ("ADDED".to_string(), obj));
    let status = json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": 410,
        "reason": "Expired", "message": "too old resource version"});
    let frame = encode_watch_event("ERROR", &status)?;
    assert_eq!(decode_watch_event(&frame)?, ("ERROR".to_string(), status));
    Ok(())
}

#[test]
fn deep_nesting_is_refused_not_a_stack_overflow() {
    // JSONSchemaProps nested 10 000 times through `not` (field 28), built inside out.
    let mut props: Vec<u8> = Vec::new();
    for _ in 0..10_000 {
        let mut outer = Vec::new();
        wire::put_bytes(&mut outer, 28, &props);
        props = outer;
    }
    let s = match schema() {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    let Some(id) =
        s.by_name("k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps")
    else {
        panic!("no JSONSchemaProps");
    };
    assert!(matches!(
        decode::message(s, id, &props, 0),
        Err(ProtobufError::TooDeep)
    ));
    let mut v = json!({});
    for _ in 0..500 {
        v = json!({"not": v});
    }
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "spec": {"versions": [{"schema": {"openAPIV3Schema": v}}]}});
    assert!(matches!(encode_object(&crd), Err(ProtobufError::TooDeep)));
}

#[test]
fn supports_built_in_kinds_only() {
    assert!(supports("v1", "Pod"));
    assert!(supports("v1", "PodList"));
    assert!(supports("apps/v1", "Deployment"));
    assert!(supports("v1", "Status"));
    assert!(supports("apps/v1", "DeleteOptions"));
    assert!(supports(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition"
    ));
    assert!(supports("apiregistration.k8s.io/v1", "APIService"));
    assert!(supports(
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview"
    ));
    assert!(!supports("example.com/v1", "Widget"));
    assert!(!supports("meta.k8s.io/v1", "Table"));
    assert!(!supports("v1", "Widget"));
}

#[test]
fn schema_load_and_pod_codec_cost() -> Result<(), ProtobufError> {
    // Not an assertion on time (benchmarks are benchmarks): printed for `--nocapture`.
    let start = std::time::Instant::now();
    let parsed = schema::Schema::parse(schema::SCHEMA_JSON).map_err(ProtobufError::Schema)?;
    let load = start.elapsed();
    assert_eq!(parsed.messages.len(), schema()?.messages.len());
    let pod = super::tests_kinds::pod();
    let n = 2000;
    let start = std::time::Instant::now();
    let mut bytes = 0;
    for _ in 0..n {
        let body = encode_object(&pod)?;
        bytes = body.len();
        let back = decode_object(&body)?;
        assert_eq!(back["kind"], "Pod");
    }
    let per = start.elapsed() / n;
    let json_len = serde_json::to_vec(&pod).map(|v| v.len()).unwrap_or(0);
    println!(
        "protobuf: schema parse {load:?} ({} KiB); \
         Pod encode+decode {per:?} ({bytes} bytes protobuf, {json_len} bytes JSON)",
        schema::SCHEMA_JSON.len() / 1024
    );
    Ok(())
}

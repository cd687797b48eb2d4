//! String-format checks shared by names, labels and selectors (DNS-1123/1035 names, qualified
//! names, label values), returning upstream's exact error strings (`k8s.io/apimachinery/pkg/util/validation`).

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
/// Maximum length of the name part of a qualified name.
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;

const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
/// Maximum length of a label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
/// Maximum length of a DNS-1123 label.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;

const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
/// Maximum length of a DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;

const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
/// Maximum length of a DNS-1035 label.
pub const DNS1035_LABEL_MAX_LENGTH: usize = 63;

/// Upstream's `MaxLenError`.
pub fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// Upstream's `EmptyError`.
pub fn empty_error() -> &'static str {
    "must be non-empty"
}

/// Upstream's `RegexError`, including its `'x',  or 'y'` spacing.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(example);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(fmt);
    out.push_str("')");
    out
}

fn matches_pattern(
    value: &str,
    edge: impl Fn(u8) -> bool,
    first: impl Fn(u8) -> bool,
    middle: impl Fn(u8) -> bool,
) -> bool {
    let b = value.as_bytes();
    match b {
        [] => false,
        [only] => first(*only) && edge(*only),
        [head, mid @ .., tail] => first(*head) && edge(*tail) && mid.iter().all(|c| middle(*c)),
    }
}

fn is_alnum(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn qualified_name_part_ok(name: &str) -> bool {
    matches_pattern(name, is_alnum, is_alnum, |c| {
        is_alnum(c) || c == b'-' || c == b'_' || c == b'.'
    })
}

fn dns1123_label_ok(value: &str) -> bool {
    matches_pattern(value, is_lower_alnum, is_lower_alnum, |c| {
        is_lower_alnum(c) || c == b'-'
    })
}

fn dns1123_subdomain_ok(value: &str) -> bool {
    value.split('.').all(dns1123_label_ok)
}

fn dns1035_label_ok(value: &str) -> bool {
    matches_pattern(
        value,
        is_lower_alnum,
        |c| c.is_ascii_lowercase(),
        |c| is_lower_alnum(c) || c == b'-',
    )
}

/// Upstream's `IsQualifiedName`: `[prefix/]name`, prefix a DNS-1123 subdomain, name at most 63
/// characters of `[-A-Za-z0-9_.]` starting and ending alphanumeric. Empty when valid.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {}", empty_error()));
            } else {
                for msg in is_dns1123_subdomain(prefix) {
                    errs.push(format!("prefix part {msg}"));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_ERR,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {}", empty_error()));
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_error(QUALIFIED_NAME_MAX_LENGTH)
        ));
    }
    if !qualified_name_part_ok(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Upstream's `IsValidLabelValue`: empty, or at most 63 characters of `[-A-Za-z0-9_.]`
/// starting and ending alphanumeric. Empty when valid.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !qualified_name_part_ok(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Upstream's `IsDNS1123Label`. Empty when valid.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !dns1123_label_ok(value) {
        if dns1123_subdomain_ok(value) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// Upstream's `IsDNS1123Subdomain`. Empty when valid.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !dns1123_subdomain_ok(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// Upstream's `IsDNS1035Label` (used for Service names). Empty when valid.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1035_LABEL_MAX_LENGTH));
    }
    if !dns1035_label_ok(value) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Upstream's `maskTrailingDash`: for a `generateName` prefix ending in `-`, the last two bytes
/// are replaced by `a` before validation (a suffix will be appended).
pub fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        let mut bytes = name.as_bytes()[..name.len() - 2].to_vec();
        bytes.push(b'a');
        String::from_utf8_lossy(&bytes).into_owned()
    } else {
        name.to_string()
    }
}

/// A name validation function: `(name, is_generate_name_prefix) -> error strings`.
pub type ValidateNameFn = fn(&str, bool) -> Vec<String>;

/// Names that must be DNS-1123 subdomains (most kinds).
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_dns1123_subdomain(&mask_trailing_dash(name))
    } else {
        is_dns1123_subdomain(name)
    }
}

/// Names that must be DNS-1123 labels (namespaces, ...).
pub fn name_is_dns_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_dns1123_label(&mask_trailing_dash(name))
    } else {
        is_dns1123_label(name)
    }
}

/// Names that must be DNS-1035 labels (services).
pub fn name_is_dns1035_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_dns1035_label(&mask_trailing_dash(name))
    } else {
        is_dns1035_label(name)
    }
}

/// Upstream's `IsValidPortNum`: 1 to 65535. Empty when valid.
pub fn is_valid_port_num(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        Vec::new()
    } else {
        vec!["must be between 1 and 65535, inclusive".to_string()]
    }
}

/// Upstream's `IsValidPortName` (IANA_SVC_NAME): at most 15 characters of `[-a-z0-9]`, at least
/// one letter, no `--`, no hyphen at either end. Empty when valid.
pub fn is_valid_port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push(max_len_error(15));
    }
    let charset = !port.is_empty()
        && port
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !charset {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    } else if !port.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens (-)".into());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen (-)".into());
    }
    errs
}

/// Upstream's ValidateLabelSelector on a `metav1.LabelSelector` JSON object: every label of
/// `matchLabels` and every requirement of `matchExpressions` (operator, values by operator,
/// key, values), each reported at its own field path under `path`.
pub fn validate_label_selector(selector: &serde_json::Value, path: &str) -> Vec<crate::FieldError> {
    use crate::FieldError;
    use serde_json::Value;
    let mut errs = Vec::new();
    let labels: Vec<(String, String)> = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect();
    errs.extend(crate::meta::validate_labels(
        &labels,
        &format!("{path}.matchLabels"),
    ));
    let requirements = selector.get("matchExpressions").and_then(Value::as_array);
    for (i, r) in requirements.into_iter().flatten().enumerate() {
        let rpath = format!("{path}.matchExpressions[{i}]");
        let values = r.get("values").and_then(Value::as_array);
        let count = values.map_or(0, Vec::len);
        match r
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "In" | "NotIn" if count == 0 => errs.push(FieldError::required(
                format!("{rpath}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if count > 0 => errs.push(FieldError::forbidden(
                format!("{rpath}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errs.push(FieldError::invalid(
                format!("{rpath}.operator"),
                other,
                "not a valid selector operator",
            )),
        }
        let key = r.get("key").and_then(Value::as_str).unwrap_or_default();
        for msg in is_qualified_name(key) {
            errs.push(FieldError::invalid(format!("{rpath}.key"), key, msg));
        }
        for (j, v) in values.into_iter().flatten().enumerate() {
            if let Some(v) = v.as_str() {
                for msg in is_valid_label_value(v) {
                    errs.push(FieldError::invalid(format!("{rpath}.values[{j}]"), v, msg));
                }
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns1123_subdomain() {
        assert!(is_dns1123_subdomain("example.com").is_empty());
        assert!(is_dns1123_subdomain("a").is_empty());
        assert!(is_dns1123_subdomain("a-b.c-d").is_empty());
        assert_eq!(
            is_dns1123_subdomain("Foo"),
            vec![
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(is_dns1123_subdomain("a..b").len(), 1);
        assert_eq!(is_dns1123_subdomain("-a").len(), 1);
        assert_eq!(is_dns1123_subdomain("").len(), 1);
        let long = "a".repeat(254);
        assert_eq!(
            is_dns1123_subdomain(&long),
            vec!["must be no more than 253 characters"]
        );
    }

    #[test]
    fn dns1123_label() {
        assert!(is_dns1123_label("default").is_empty());
        assert!(is_dns1123_label("0abc").is_empty());
        assert_eq!(is_dns1123_label("a.b"), vec!["must not contain dots"]);
        assert_eq!(
            is_dns1123_label("A"),
            vec![
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
        assert_eq!(is_dns1123_label(&"a".repeat(64)).len(), 1);
        assert_eq!(is_dns1123_label("a-").len(), 1);
    }

    #[test]
    fn dns1035_label() {
        assert!(is_dns1035_label("my-svc").is_empty());
        assert_eq!(
            is_dns1035_label("1abc"),
            vec![
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
    }

    #[test]
    fn qualified_names() {
        for ok in [
            "app",
            "app.kubernetes.io/name",
            "My_Name.x-1",
            "a",
            "example.com/A",
        ] {
            assert!(is_qualified_name(ok).is_empty(), "{ok}");
        }
        assert_eq!(
            is_qualified_name("a b"),
            vec![
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ]
        );
        assert_eq!(
            is_qualified_name("/a"),
            vec!["prefix part must be non-empty"]
        );
        let errs = is_qualified_name("a/");
        assert_eq!(errs.len(), 2);
        assert_eq!(errs[0], "name part must be non-empty");
        assert_eq!(is_qualified_name("a/b/c").len(), 1);
        assert!(is_qualified_name("a/b/c")[0].starts_with("a qualified name must consist"));
        assert!(is_qualified_name("a/b/c")[0].ends_with(
            "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ));
        assert_eq!(
            is_qualified_name(&"a".repeat(64)),
            vec!["name part must be no more than 63 characters"]
        );
        assert!(
            is_qualified_name("Example.com/a")[0].starts_with("prefix part a lowercase RFC 1123")
        );
    }

    #[test]
    fn label_values() {
        assert!(is_valid_label_value("").is_empty());
        assert!(is_valid_label_value("v1.2_x-y").is_empty());
        assert_eq!(is_valid_label_value("-a").len(), 1);
        assert_eq!(is_valid_label_value("a b").len(), 1);
        let long = "a".repeat(64);
        assert_eq!(
            is_valid_label_value(&long),
            vec!["must be no more than 63 characters"]
        );
        assert!(is_valid_label_value("a_")[0].starts_with("a valid label must be an empty string"));
    }

    #[test]
    fn generate_name_prefixes() {
        assert_eq!(mask_trailing_dash("foo-"), "foa");
        assert_eq!(mask_trailing_dash("-"), "-");
        assert_eq!(mask_trailing_dash("foo"), "foo");
        assert!(name_is_dns_subdomain("web-", true).is_empty());
        assert!(!name_is_dns_subdomain("web-", false).is_empty());
        assert!(name_is_dns_label("ns-", true).is_empty());
        assert!(name_is_dns1035_label("svc-", true).is_empty());
        assert!(!name_is_dns1035_label("1svc", false).is_empty());
        assert_eq!(mask_trailing_dash("é-"), "\u{fffd}a");
    }

    #[test]
    fn label_selectors_report_each_field_as_upstream() {
        let sel = serde_json::json!({
            "matchLabels": {"a b": "x", "ok": "bad value"},
            "matchExpressions": [
                {"key": "k", "operator": "In", "values": []},
                {"key": "j", "operator": "Exists", "values": ["v"]},
                {"key": "z", "operator": "Foo"},
                {"key": "-x", "operator": "NotIn", "values": ["a b"]},
            ]
        });
        let got: Vec<String> = validate_label_selector(&sel, "spec.selector")
            .iter()
            .map(|e| e.to_string())
            .collect();
        let expect = [
            "spec.selector.matchLabels: Invalid value: \"a b\": name part must consist of",
            "spec.selector.matchLabels: Invalid value: \"bad value\": a valid label must be",
            "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
            "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            "spec.selector.matchExpressions[2].operator: Invalid value: \"Foo\": not a valid selector operator",
            "spec.selector.matchExpressions[3].key: Invalid value: \"-x\": name part must consist of",
            "spec.selector.matchExpressions[3].values[0]: Invalid value: \"a b\": a valid label must be",
        ];
        assert_eq!(got.len(), expect.len(), "{got:#?}");
        for (g, e) in got.iter().zip(expect) {
            assert!(g.starts_with(e), "{g}\n  expected {e}");
        }
        assert!(
            validate_label_selector(&serde_json::json!({"matchLabels": {"app": "x"}}), "s")
                .is_empty()
        );
    }
}

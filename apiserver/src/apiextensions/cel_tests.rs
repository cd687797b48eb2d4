//! Tests of CRD validation rules: compilation errors, evaluation, messages and cost limits, with
//! upstream's wording as facts.

use super::*;

const P: &str = "spec.validation.openAPIV3Schema";

fn schema(spec_rules: Value, spec_props: Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": spec_rules,
                "properties": spec_props,
            },
        },
    })
}

fn compiled(s: &Value) -> Validator {
    let (v, errs) = compile(s, P);
    assert!(errs.is_empty(), "{errs:?}");
    v.expect("rules")
}

fn messages(errs: &[FieldError]) -> Vec<String> {
    errs.iter()
        .map(|e| format!("{} {:?} {}", e.field, e.error_type, e.detail))
        .collect()
}

fn xy() -> Value {
    json!({"x": {"type": "integer"}, "y": {"type": "integer"}})
}

#[test]
fn a_rule_on_a_missing_field_is_refused_with_the_position() {
    let s = schema(
        json!([{"rule": "self.z == 100"}]),
        json!({"x": {"type": "integer"}}),
    );
    let (_, errs) = compile(&s, P);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(
        errs[0].field,
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    );
    assert_eq!(
        errs[0].detail,
        "compilation failed: ERROR: <input>:1:5: undefined field 'z'\n | self.z == 100\n | ....^"
    );
}

#[test]
fn syntax_errors_undeclared_names_and_bad_options_are_refused() {
    let cases = [
        (
            json!({"rule": "self.x >"}),
            "x-kubernetes-validations[0].rule",
            "compilation failed: ERROR: <input>:1:",
        ),
        (
            json!({"rule": "foo == 1"}),
            "x-kubernetes-validations[0].rule",
            "undeclared reference to 'foo'",
        ),
        (
            json!({"rule": "self.x.frobnicate()"}),
            "x-kubernetes-validations[0].rule",
            "undeclared reference to 'frobnicate'",
        ),
        (
            json!({"rule": ""}),
            "x-kubernetes-validations[0].rule",
            "rule is not specified",
        ),
        (
            json!({"rule": "true", "reason": "Bogus"}),
            "x-kubernetes-validations[0].reason",
            "",
        ),
        (
            json!({"rule": "true", "fieldPath": ".nope"}),
            "x-kubernetes-validations[0].fieldPath",
            "fieldPath must be a valid path",
        ),
        (
            json!({"rule": "true", "messageExpression": "self.nope"}),
            "x-kubernetes-validations[0].messageExpression",
            "messageExpression compilation failed: ",
        ),
        (
            json!({"rule": "true", "message": "a\nb"}),
            "x-kubernetes-validations[0].message",
            "message must not contain line breaks",
        ),
        (
            json!({"rule": "self.x > 0", "optionalOldSelf": true}),
            "x-kubernetes-validations[0].optionalOldSelf",
            "may not be set if rule does not use oldSelf",
        ),
    ];
    for (rule, field, detail) in cases {
        let s = schema(json!([rule.clone()]), xy());
        let (_, errs) = compile(&s, P);
        assert_eq!(errs.len(), 1, "{rule}: {errs:?}");
        assert!(errs[0].field.ends_with(field), "{rule}: {}", errs[0].field);
        assert!(
            errs[0].detail.contains(detail),
            "{rule}: {}",
            errs[0].detail
        );
    }
}

#[test]
fn valid_rules_compile() {
    let rules = [
        "self.x + self.y > 0",
        "has(self.x) && self.x >= 0",
        "self.name.startsWith('a') && self.name.endsWith('z') && self.name.contains('m')",
        "self.name.matches('^[a-z]+$') && self.name.lowerAscii() == self.name",
        "self.tags.all(t, t.size() < 10) && self.tags.exists(t, t == 'a')",
        "self.tags.exists_one(t, t == 'a') && self.tags.map(t, t + '!').size() == self.tags.size()",
        "self.tags.filter(t, t != 'b').size() >= 0 && self.tags.isSorted()",
        "self.nums.sum() >= 0 && self.nums.min() <= self.nums.max()",
        "self.tags.indexOf('a') <= self.tags.lastIndexOf('a')",
        "self.name.split('-').size() > 0 && self.tags.join(',') != 'x'",
        "int(self.count) == 1 || string(self.x) == '1'",
        "self.labels.all(k, self.labels[k].size() < 64)",
        "!has(self.labels) || 'app' in self.labels",
        "self.name.trim().upperAscii() != ''",
        "math.greatest(1, 2) == 2",
    ];
    for rule in rules {
        let s = schema(
            json!([{"rule": rule}]),
            json!({
                "x": {"type": "integer"}, "y": {"type": "integer"},
                "name": {"type": "string", "maxLength": 64},
                "count": {"type": "string", "maxLength": 8},
                "tags": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10}},
                "nums": {"type": "array", "maxItems": 10, "items": {"type": "integer"}},
                "labels": {"type": "object", "maxProperties": 10, "additionalProperties": {"type": "string", "maxLength": 64}},
            }),
        );
        let (v, errs) = compile(&s, P);
        assert!(errs.is_empty(), "{rule}: {errs:?}");
        assert!(v.is_some());
    }
}

fn eval(s: &Value, obj: Value, old: Option<Value>) -> Vec<String> {
    messages(&compiled(s).validate(&obj, old.as_ref()))
}

#[test]
fn failing_rules_report_upstream_causes() {
    let s = schema(json!([{"rule": "self.x + self.y > 0"}]), xy());
    assert!(eval(&s, json!({"spec": {"x": 1, "y": 0}}), None).is_empty());
    assert_eq!(
        eval(&s, json!({"spec": {"x": 0, "y": 0}}), None),
        ["spec Invalid failed rule: self.x + self.y > 0"]
    );
    let errs = compiled(&s).validate(&json!({"spec": {"x": 0, "y": 0}}), None);
    assert_eq!(
        errs[0].bad_value,
        k1s_apimachinery::status::BadValue::Json(json!("object"))
    );
}

#[test]
fn message_message_expression_reason_and_field_path() {
    let s = schema(
        json!([
            {"rule": "self.replicas <= self.maxReplicas", "message": "replicas must be <= maxReplicas"},
            {"rule": "self.replicas >= 0", "messageExpression": "'replicas is ' + string(self.replicas) + ', must be >= 0'"},
            {"rule": "self.replicas != 7", "reason": "FieldValueForbidden", "fieldPath": ".replicas", "message": "seven is unlucky"},
            {"rule": "self.replicas != 5", "reason": "FieldValueRequired", "message": "five"},
            {"rule": "self.replicas != 3", "reason": "FieldValueDuplicate"},
        ]),
        json!({"replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}}),
    );
    assert_eq!(
        eval(&s, json!({"spec": {"replicas": 8, "maxReplicas": 4}}), None),
        ["spec Invalid replicas must be <= maxReplicas"]
    );
    assert_eq!(
        eval(
            &s,
            json!({"spec": {"replicas": -1, "maxReplicas": 4}}),
            None
        ),
        ["spec Invalid replicas is -1, must be >= 0"]
    );
    assert_eq!(
        eval(&s, json!({"spec": {"replicas": 7, "maxReplicas": 9}}), None),
        ["spec.replicas Forbidden seven is unlucky"]
    );
    assert_eq!(
        eval(&s, json!({"spec": {"replicas": 5, "maxReplicas": 9}}), None),
        ["spec Required five"]
    );
    assert_eq!(
        eval(&s, json!({"spec": {"replicas": 3, "maxReplicas": 9}}), None),
        ["spec Duplicate "]
    );
}

#[test]
fn transition_rules_run_on_update_only() {
    let s = schema(
        json!([{"rule": "self.replicas >= oldSelf.replicas", "message": "replicas may not decrease"}]),
        json!({"replicas": {"type": "integer"}}),
    );
    assert!(eval(&s, json!({"spec": {"replicas": 1}}), None).is_empty());
    assert!(
        eval(
            &s,
            json!({"spec": {"replicas": 3}}),
            Some(json!({"spec": {"replicas": 2}}))
        )
        .is_empty()
    );
    assert_eq!(
        eval(
            &s,
            json!({"spec": {"replicas": 1}}),
            Some(json!({"spec": {"replicas": 2}}))
        ),
        ["spec Invalid replicas may not decrease"]
    );
    // optionalOldSelf: runs on create too, with oldSelf an optional.
    let s = schema(
        json!([{"rule": "!oldSelf.hasValue() || self.replicas >= oldSelf.value().replicas", "optionalOldSelf": true, "message": "no decrease"}]),
        json!({"replicas": {"type": "integer"}}),
    );
    assert!(eval(&s, json!({"spec": {"replicas": 1}}), None).is_empty());
    assert_eq!(
        eval(
            &s,
            json!({"spec": {"replicas": 1}}),
            Some(json!({"spec": {"replicas": 2}}))
        ),
        ["spec Invalid no decrease"]
    );
}

#[test]
fn evaluation_errors_name_the_rule() {
    let s = schema(json!([{"rule": "self.x == 1"}]), xy());
    assert_eq!(
        eval(&s, json!({"spec": {"y": 1}}), None),
        ["spec Invalid no such key: x evaluating rule: self.x == 1"]
    );
    let s = schema(json!([{"rule": "self.x / self.y == 1"}]), xy());
    assert_eq!(
        eval(&s, json!({"spec": {"x": 1, "y": 0}}), None),
        ["spec Invalid division by zero evaluating rule: self.x / self.y == 1"]
    );
}

#[test]
fn root_rules_see_name_and_generate_name_only() {
    let s = json!({
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('ok')", "message": "bad name"}],
        "properties": {"spec": {"type": "object"}},
    });
    let v = compiled(&s);
    assert!(
        v.validate(
            &json!({"metadata": {"name": "ok-1", "namespace": "d"}}),
            None
        )
        .is_empty()
    );
    assert_eq!(
        messages(&v.validate(&json!({"metadata": {"name": "no"}}), None)),
        ["<nil> Invalid bad name"]
    );
    let (_, errs) = compile(
        &json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.metadata.namespace == 'x'"}]}),
        P,
    );
    assert!(
        errs[0].detail.contains("undefined field 'namespace'"),
        "{errs:?}"
    );
}

#[test]
fn nested_rules_use_item_and_key_paths() {
    let s = json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "items": {"type": "array", "maxItems": 5, "items": {
                "type": "object",
                "x-kubernetes-validations": [{"rule": "self.a < 10", "message": "small"}],
                "properties": {"a": {"type": "integer"}},
            }},
            "m": {"type": "object", "maxProperties": 5, "additionalProperties": {
                "type": "string", "maxLength": 10,
                "x-kubernetes-validations": [{"rule": "self != 'bad'"}],
            }},
        }}},
    });
    assert_eq!(
        eval(
            &s,
            json!({"spec": {"items": [{"a": 1}, {"a": 11}], "m": {"k": "bad"}}}),
            None
        ),
        [
            "spec.items[1] Invalid small",
            "spec.m[k] Invalid failed rule: self != 'bad'",
        ]
    );
}

#[test]
fn unchanged_values_ratchet() {
    let s = schema(json!([{"rule": "self.x > 0"}]), xy());
    let old = json!({"spec": {"x": 0, "y": 1}});
    assert!(eval(&s, old.clone(), Some(old.clone())).is_empty());
    assert_eq!(
        eval(&s, json!({"spec": {"x": 0, "y": 2}}), Some(old)),
        ["spec Invalid failed rule: self.x > 0"]
    );
}

#[test]
fn rules_over_unbounded_data_exceed_the_estimated_budget() {
    let s = schema(
        json!([{"rule": "self.a.all(x, self.b.all(y, x != y))"}]),
        json!({
            "a": {"type": "array", "items": {"type": "string"}},
            "b": {"type": "array", "items": {"type": "string"}},
        }),
    );
    let (_, errs) = compile(&s, P);
    // The rule, and the schema's total as upstream adds it.
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert_eq!(errs[1].field, P);
    assert_eq!(
        errs[0].error_type,
        k1s_apimachinery::status::FieldErrorType::Forbidden
    );
    assert!(
        errs[0].detail.starts_with("estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength"),
        "{}",
        errs[0].detail
    );
    // With maxItems the same rule is fine.
    let s = schema(
        json!([{"rule": "self.a.all(x, self.b.all(y, x != y))"}]),
        json!({
            "a": {"type": "array", "maxItems": 100, "items": {"type": "string", "maxLength": 10}},
            "b": {"type": "array", "maxItems": 100, "items": {"type": "string", "maxLength": 10}},
        }),
    );
    assert!(compile(&s, P).1.is_empty());
}

#[test]
fn evaluation_is_bounded_by_the_per_call_limit() {
    // Unknown fields are not estimated at creation; the data's size bounds each call.
    let s = json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
            "x-kubernetes-validations": [{"rule": "self.a.all(x, self.a.all(y, x + y >= 0))"}],
        }},
    });
    let v = compiled(&s);
    let small: Vec<i64> = (0..10).collect();
    assert!(v.validate(&json!({"spec": {"a": small}}), None).is_empty());
    let big: Vec<i64> = (0..2000).collect();
    let errs = messages(&v.validate(&json!({"spec": {"a": big}}), None));
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].contains("call cost exceeds limit for rule"),
        "{errs:?}"
    );
}

#[test]
fn field_paths_follow_the_schema() {
    let s = json!({"type": "object", "properties": {
        "a": {"type": "object", "properties": {"b": {"type": "string"}}},
        "m": {"type": "object", "additionalProperties": {"type": "string"}},
    }});
    assert_eq!(valid_field_path(".a.b", &s).as_deref(), Ok("a.b"));
    assert_eq!(valid_field_path(".m['x.y']", &s).as_deref(), Ok("m[x.y]"));
    assert!(valid_field_path(".a.c", &s).is_err());
    assert!(valid_field_path("a", &s).is_err());
}

// ---------------------------------------------------------------------------------------------
// Kubernetes' libraries (cel_k8s.rs)

/// Evaluates an expression of the libraries: its value, or its error's cause.
fn lib(text: &str) -> Result<Cel, String> {
    let e = compile_expression(text, &["object"], &[])?;
    let obj = json!({});
    let act = Activation::new(&[("object", &obj)]);
    let mut budget = ADMISSION_BUDGET;
    e.evaluate(&act, &mut budget).map_err(|e| match e {
        EvalError::Failed(m) => m
            .strip_prefix(&format!("expression '{text}' resulted in error: "))
            .unwrap_or(&m)
            .to_string(),
        EvalError::OutOfBudget => "out of budget".into(),
    })
}

fn is_true(text: &str) {
    assert_eq!(lib(text), Ok(Cel::Bool(true)), "{text}");
}

#[test]
fn quantity_library() {
    for t in [
        "quantity('1Gi').isGreaterThan(quantity('1G'))",
        "quantity('500m').isLessThan(quantity('1'))",
        "quantity('1000m') == quantity('1')",
        "quantity('1k').compareTo(quantity('1000')) == 0",
        "quantity('1').compareTo(quantity('2')) == -1",
        "quantity('-5').sign() == -1 && quantity('0').sign() == 0 && quantity('2k').sign() == 1",
        "quantity('2k').isInteger() && !quantity('500m').isInteger()",
        "quantity('2k').asInteger() == 2000",
        "quantity('1.5').asApproximateFloat() == 1.5",
        "quantity('1').add(quantity('500m')) == quantity('1500m')",
        "quantity('1').add(2) == quantity('3')",
        "quantity('1').sub(quantity('500m')) == quantity('0.5')",
        "quantity('10').sub(3).asInteger() == 7",
        "isQuantity('1Mi') && !isQuantity('1x') && !isQuantity('')",
    ] {
        is_true(t);
    }
    assert_eq!(
        lib("quantity('1x') == quantity('1')"),
        Err("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'".into())
    );
    assert_eq!(
        lib("quantity('500m').asInteger() == 0"),
        Err("cannot convert value to integer".into())
    );
    assert_eq!(
        lib("quantity('9223372036854775807').add(1).asInteger() == 0"),
        Err("cannot convert value to integer".into())
    );
    assert!(lib("quantity('1').isGreaterThan(1)").is_err());
}

#[test]
fn regex_library() {
    is_true("'abc 123'.find('[0-9]+') == '123'");
    is_true("'abc'.find('[0-9]+') == ''");
    is_true("'123 abc 456'.findAll('[0-9]+') == ['123', '456']");
    is_true("'123 abc 456'.findAll('[0-9]+', 1) == ['123']");
    is_true("'123 abc 456'.findAll('[0-9]+', -1) == ['123', '456']");
    is_true("'abc'.findAll('x').size() == 0");
    // A literal pattern is compiled with the rule, a computed one when it runs.
    let err = lib("'abc'.find('(') == ''").expect_err("an invalid regex fails");
    assert!(
        err.starts_with("program instantiation failed: error parsing regexp: "),
        "{err}"
    );
    let err = lib("'abc'.findAll('(' + 'a', 1) == []").expect_err("an invalid regex fails");
    assert!(
        err.starts_with("Illegal regex: error parsing regexp: "),
        "{err}"
    );
    let s = schema(
        json!([{"rule": "self.s.find('[') == ''"}]),
        json!({"s": {"type": "string", "maxLength": 8}}),
    );
    let (_, errs) = compile(&s, P);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0]
            .detail
            .starts_with("program instantiation failed: error parsing regexp: "),
        "{errs:?}"
    );
}

#[test]
fn sets_library() {
    is_true("sets.contains([1, 2, 3], [2, 3])");
    is_true("!sets.contains([1, 2], [3])");
    is_true("sets.contains([1, 2], [])");
    is_true("sets.contains([1], [1.0, 1u])");
    is_true("sets.equivalent([1, 2, 2], [2, 1])");
    is_true("!sets.equivalent([1, 2], [1])");
    is_true("sets.intersects(['a', 'b'], ['b', 'c'])");
    is_true("!sets.intersects(['a'], [])");
}

#[test]
fn url_library() {
    is_true("url('https://user@example.com:8443/a%20b?x=1&x=2&y=a+b#frag').getScheme() == 'https'");
    is_true("url('https://example.com:8443/p').getHost() == 'example.com:8443'");
    is_true("url('https://example.com:8443/p').getHostname() == 'example.com'");
    is_true("url('https://example.com:8443/p').getPort() == '8443'");
    is_true("url('https://[::1]:80/').getHostname() == '::1'");
    is_true("url('https://example.com').getPort() == ''");
    is_true("url('https://example.com/a%20b#f').getEscapedPath() == '/a%20b'");
    is_true("url('/path?k=v').getHost() == ''");
    is_true("url('https://e.com/?x=1&x=2&y=a+b').getQuery() == {'x': ['1', '2'], 'y': ['a b']}");
    is_true("!isURL('/a%é') && !isURL('/a%zz') && !isURL('/a%')");
    is_true("url('https://e.com/?a=%2B1&b=%+1').getQuery() == {'a': ['+1']}");
    is_true("isURL('https://example.com') && isURL('/abs') && !isURL('rel/path') && !isURL('')");
    assert_eq!(
        lib("url('example.com').getHost() == ''"),
        Err("URL parse error during conversion from string: parse \"example.com\": invalid URI for request".into())
    );
    assert_eq!(
        lib("url('https://e.com:x/').getHost() == ''"),
        Err("URL parse error during conversion from string: parse \"https://e.com:x/\": invalid port \":x\" after host".into())
    );
}

#[test]
fn ip_and_cidr_libraries() {
    is_true("ip('10.0.0.1').family() == 4 && ip('fe80::1').family() == 6");
    is_true("ip('127.0.0.1').isLoopback() && ip('::1').isLoopback()");
    is_true("ip('0.0.0.0').isUnspecified() && ip('::').isUnspecified()");
    is_true("ip('169.254.1.1').isLinkLocalUnicast() && ip('fe80::1').isLinkLocalUnicast()");
    is_true("ip('224.0.0.1').isLinkLocalMulticast() && ip('ff02::1').isLinkLocalMulticast()");
    is_true("ip('8.8.8.8').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast()");
    is_true("ip('10.0.0.1') == ip('10.0.0.1') && ip('10.0.0.1') != ip('10.0.0.2')");
    is_true("isIP('1.2.3.4') && isIP('::1') && !isIP('1.2.3') && !isIP('fe80::1%eth0')");
    is_true("ip.isCanonical('2001:db8::1') && !ip.isCanonical('2001:DB8::1')");
    is_true("cidr('10.0.0.0/8').containsIP(ip('10.1.2.3'))");
    is_true(
        "cidr('10.0.0.0/8').containsIP('10.1.2.3') && !cidr('10.0.0.0/8').containsIP('11.0.0.1')",
    );
    is_true("!cidr('10.0.0.0/8').containsIP('::1')");
    is_true(
        "cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16') && !cidr('10.1.0.0/16').containsCIDR('10.0.0.0/8')",
    );
    is_true("cidr('10.0.0.0/8').containsCIDR(cidr('10.0.0.0/8'))");
    is_true("cidr('10.1.2.3/8').prefixLength() == 8");
    is_true(
        "string(ip('2001:db8:0::1')) == '2001:db8::1' && string(cidr('10.1.2.3/8').masked()) == '10.0.0.0/8'",
    );
    is_true("string(1) == '1' && string('a') == 'a'");
    is_true("cidr('10.1.2.3/8').ip() == ip('10.1.2.3')");
    is_true("cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8')");
    is_true("cidr('2001:db8::1/32').masked() == cidr('2001:db8::/32')");
    is_true(
        "isCIDR('10.0.0.0/8') && !isCIDR('10.0.0.0') && !isCIDR('10.0.0.0/33') && !isCIDR('::ffff:1.2.3.4/96')",
    );
    assert_eq!(
        lib("ip('foo').family() == 4"),
        Err("IP Address \"foo\" parse error during conversion from string: ParseAddr(\"foo\"): unable to parse IP".into())
    );
    assert_eq!(
        lib("ip('::ffff:1.2.3.4').family() == 4"),
        Err("IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed".into())
    );
    assert_eq!(
        lib("ip('fe80::1%eth0').family() == 6"),
        Err("IP address \"fe80::1%eth0\" with zone value is not allowed".into())
    );
    assert_eq!(
        lib("cidr('10.0.0.0').prefixLength() == 8"),
        Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"10.0.0.0\"): no '/'".into())
    );
}

#[test]
fn library_rules_are_accepted_at_crd_creation_and_run() {
    let s = schema(
        json!([
            {"rule": "quantity(self.memory).isLessThan(quantity('1Gi'))", "message": "too much"},
            {"rule": "isCIDR(self.net) && cidr(self.net).containsIP(self.addr)"},
            {"rule": "url(self.endpoint).getScheme() == 'https'"},
            {"rule": "sets.contains(['a', 'b'], self.tags)"},
            {"rule": "self.memory.find('[A-Za-z]+') != 'k'"},
        ]),
        json!({
            "memory": {"type": "string", "maxLength": 32},
            "net": {"type": "string", "maxLength": 64},
            "addr": {"type": "string", "maxLength": 64},
            "endpoint": {"type": "string", "maxLength": 256},
            "tags": {"type": "array", "maxItems": 8, "items": {"type": "string", "maxLength": 8}},
        }),
    );
    let ok = json!({"spec": {"memory": "512Mi", "net": "10.0.0.0/8", "addr": "10.1.1.1",
        "endpoint": "https://e.com", "tags": ["a"]}});
    assert!(eval(&s, ok, None).is_empty());
    let bad = json!({"spec": {"memory": "2Gi", "net": "10.0.0.0/8", "addr": "11.1.1.1",
        "endpoint": "http://e.com", "tags": ["c"]}});
    assert_eq!(
        eval(&s, bad, None),
        [
            "spec Invalid too much",
            "spec Invalid failed rule: isCIDR(self.net) && cidr(self.net).containsIP(self.addr)",
            "spec Invalid failed rule: url(self.endpoint).getScheme() == 'https'",
            "spec Invalid failed rule: sets.contains(['a', 'b'], self.tags)",
        ]
    );
    let malformed = json!({"spec": {"memory": "lots", "net": "10.0.0.0/8", "addr": "10.1.1.1",
        "endpoint": "https://e.com", "tags": []}});
    assert_eq!(
        eval(&s, malformed, None),
        [
            "spec Invalid quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: too much"
        ]
    );
}

#[test]
fn format_library() {
    is_true("!format.dns1123Label().validate('my-name').hasValue()");
    is_true(
        "format.dns1123Label().validate('My_Name').value() == ['a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \\'-\\', and must start and end with an alphanumeric character (e.g. \\'my-name\\',  or \\'123-abc\\', regex used for validation is \\'[a-z0-9]([-a-z0-9]*[a-z0-9])?\\')']",
    );
    is_true("!format.dns1123LabelPrefix().validate('abc-').hasValue()");
    is_true("format.named('dns1123Subdomain').hasValue() && !format.named('nope').hasValue()");
    is_true(
        "format.named('uuid').value().validate('x').value() == ['does not match the UUID format']",
    );
    is_true("!format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()");
    is_true("format.uri().validate('x').value() == ['parse \"x\": invalid URI for request']");
    is_true(
        "!format.date().validate('2024-02-29').hasValue() && format.date().validate('2024-02-30').hasValue()",
    );
    is_true("format.byte().validate('!').value() == ['invalid base64']");
    is_true(
        "format.labelValue().validate('a b').hasValue() && !format.labelValue().validate('').hasValue()",
    );
    let err = lib("format.nope().validate('x').hasValue()").expect_err("unknown format");
    assert!(err.contains("undeclared reference to 'nope'"), "{err}");
    // Variables named like the namespaces still work.
    is_true("['10.0.0.1'].all(ip, ip.startsWith('10.'))");
    is_true("['abc'].all(format, format.size() == 3)");
    is_true("[[1]].all(sets, sets.size() == 1)");
    // The strings extension's format() still works beside the namespace.
    is_true("'%d-%s'.format([1, 'a']) == '1-a'");
}

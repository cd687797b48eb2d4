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

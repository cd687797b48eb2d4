//! Tests for label selector parsing, matching, printing and `metav1.LabelSelector` conversion.

use std::collections::BTreeMap;

use serde_json::json;

use super::*;

fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn parse(s: &str) -> LabelSelector {
    match LabelSelector::parse(s) {
        Ok(sel) => sel,
        Err(e) => panic!("{s:?} should parse: {e}"),
    }
}

fn parse_err(s: &str) -> String {
    match LabelSelector::parse(s) {
        Ok(sel) => panic!("{s:?} should not parse, got {sel}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn good_strings_round_trip_without_spaces() {
    for s in [
        "x=a,y=b,z=c",
        "",
        "x!=a,y=b",
        "x=",
        "x= ",
        "x=,z= ",
        "x= ,z= ",
        "!x",
        "x>1",
        "x>1,z<5",
    ] {
        assert_eq!(parse(s).to_string(), s.replace(' ', ""), "{s}");
    }
}

#[test]
fn bad_strings() {
    for s in [
        "x=a||y=b",
        "x==a==b",
        "!x=a",
        "x<a",
        "x,,y",
        ",x,y",
        "x nott in (y)",
    ] {
        assert!(LabelSelector::parse(s).is_err(), "{s}");
    }
    for s in [
        "a in (xyz),",
        "a in (xyz)b notin ()",
        "a in (xyz abc)",
        "a notin(",
        "a (",
        "(",
    ] {
        assert!(LabelSelector::parse(s).is_err(), "{s}");
    }
}

#[test]
fn parse_is_deterministic() {
    assert_eq!(parse("x=a,a=x").to_string(), parse("a=x,x=a").to_string());
    assert_eq!(parse("x=a,a=x").to_string(), "a=x,x=a");
}

#[test]
fn set_based_parsing() {
    let s = parse("x notin (abc,,def),bar,z in (),w");
    assert_eq!(s.to_string(), "bar,w,x notin (,abc,def),z in ()");
    let x = &s.requirements()[2];
    assert_eq!(x.key(), "x");
    assert_eq!(x.operator(), Operator::NotIn);
    assert_eq!(x.values(), ["", "abc", "def"]);
    assert_eq!(parse("x in (abc,)").requirements()[0].values(), ["", "abc"]);
    assert_eq!(parse("x in ()").requirements()[0].values(), [""]);
    assert_eq!(parse("x notin ( )").requirements()[0].values(), [""]);
    assert_eq!(parse("x notin (, a)").requirements()[0].values(), ["", "a"]);
    assert_eq!(
        parse("a in (x,y,notin, z,in)").requirements()[0].values(),
        ["in", "notin", "x", "y", "z"]
    );
    assert_eq!(
        parse("0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)").to_string(),
        "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)"
    );
    assert_eq!(parse("foo  in\t (abc)").to_string(), "foo in (abc)");
    assert_eq!(parse("x notin\n (abc)").to_string(), "x notin (abc)");
    assert_eq!(parse("\rx").to_string(), "x");
    assert_eq!(parse("a ").to_string(), "a");
    assert_eq!(parse("x in (b,a,b)").to_string(), "x in (a,b)");
    assert_eq!(parse("x==a").to_string(), "x==a");
    assert_eq!(parse("x=in").requirements()[0].values(), ["in"]);
    let s = parse("this-is-a-dns.domain.com/key-with-dash");
    assert_eq!(s.requirements()[0].operator(), Operator::Exists);
}

/// (selector, labels, expected match)
type MatchCase = (&'static str, &'static [(&'static str, &'static str)], bool);

#[test]
fn matching() {
    let cases: &[MatchCase] = &[
        ("", &[("x", "y")], true),
        ("x=y", &[("x", "y")], true),
        ("x==y", &[("x", "y")], true),
        ("x=y,z=w", &[("x", "y"), ("z", "w")], true),
        ("x!=y,z!=w", &[("x", "z"), ("z", "a")], true),
        ("notin=in", &[("notin", "in")], true),
        ("x", &[("x", "z")], true),
        ("!x", &[("y", "z")], true),
        ("x>1", &[("x", "2")], true),
        ("x<1", &[("x", "0")], true),
        ("x=z", &[], false),
        ("x=y", &[("x", "z")], false),
        ("x=y,z=w", &[("x", "w"), ("z", "w")], false),
        ("x!=y,z!=w", &[("x", "z"), ("z", "w")], false),
        ("x", &[("y", "z")], false),
        ("!x", &[("x", "z")], false),
        ("x>1", &[("x", "0")], false),
        ("x<1", &[("x", "2")], false),
        ("x>1", &[("x", "v2")], false),
        ("x>1", &[], false),
        ("x!=y", &[], true),
        ("x notin (a)", &[], true),
        ("x in (a,b)", &[("x", "b")], true),
        ("x in (a,b)", &[("x", "c")], false),
        ("x in ()", &[("x", "")], true),
        ("x in ()", &[("y", "baz")], false),
        ("x=", &[("x", "")], true),
        ("x,y in (a)", &[("x", "1"), ("y", "a")], true),
        ("foo=bar,baz=blah", &[("foo", "bar"), ("baz", "blah")], true),
        ("foo=blah", &[("foo", "bar"), ("baz", "blah")], false),
    ];
    for (sel, labels, want) in cases {
        let s = parse(sel);
        let labels = set(labels);
        assert_eq!(s.matches(&labels), *want, "{sel} vs {labels:?}");
        // The JSON form of the same labels matches the same way.
        let as_json = serde_json::to_value(&labels).unwrap_or_default();
        assert_eq!(s.matches_json(Some(&as_json)), *want, "{sel} (json)");
    }
}

#[test]
fn matching_other_label_sources() {
    let s = parse("app=web");
    let pairs: &[(&str, &str)] = &[("app", "web")];
    assert!(s.matches(pairs));
    let mut hm = std::collections::HashMap::new();
    hm.insert("app".to_string(), "web".to_string());
    assert!(s.matches(&hm));
    assert!(!s.matches_json(None));
    assert!(parse("!app").matches_json(None));
    assert!(!s.matches_json(Some(&json!({"app": 1}))));
    assert!(LabelSelector::everything().matches_json(Some(&json!("not an object"))));
}

#[test]
fn everything_and_nothing() {
    let all = LabelSelector::everything();
    assert!(all.is_empty());
    assert!(!all.is_nothing());
    assert!(all.matches(&set(&[("x", "y")])));
    assert!(all.matches(&set(&[])));
    assert_eq!(all.to_string(), "");
    assert!(parse("").is_empty());
    let none = LabelSelector::nothing();
    assert!(!none.is_empty());
    assert!(none.is_nothing());
    assert!(!none.matches(&set(&[])));
    assert!(!none.matches(&set(&[("x", "y")])));
    assert_eq!(none.to_string(), "");
}

#[test]
fn parse_error_messages() {
    assert_eq!(
        parse_err("x=a||y=b"),
        "unable to parse requirement: values[0][x]: Invalid value: \"a||y\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    );
    assert_eq!(
        parse_err("x==a==b"),
        "found '==', expected: ',' or 'end of string'"
    );
    assert_eq!(
        parse_err("!x=a"),
        "found '=', expected: ',' or 'end of string'"
    );
    assert_eq!(
        parse_err("x<a"),
        "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"
    );
    assert_eq!(
        parse_err("x,,y"),
        "found ',', expected: identifier after ','"
    );
    assert_eq!(
        parse_err(",x"),
        "found ',', expected: !, identifier, or 'end of string'"
    );
    assert_eq!(
        parse_err("x nott in (y)"),
        "unable to parse requirement: found 'nott', expected: in, notin, =, ==, !=, gt, lt"
    );
    assert_eq!(
        parse_err("a in (xyz abc)"),
        "unable to parse requirement: found 'abc', expected: ',' or ')'"
    );
    assert_eq!(
        parse_err("a notin("),
        "unable to parse requirement: found '', expected: ',', ')' or identifier"
    );
    assert_eq!(
        parse_err("a ("),
        "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"
    );
    assert_eq!(
        parse_err("("),
        "found '(', expected: !, identifier, or 'end of string'"
    );
    assert_eq!(
        parse_err("x in a"),
        "unable to parse requirement: found 'a' expected: '('"
    );
    assert_eq!(
        parse_err("!"),
        "unable to parse requirement: found '', expected: identifier"
    );
    assert_eq!(
        parse_err("x=)"),
        "unable to parse requirement: found ')', expected: identifier"
    );
    assert_eq!(
        parse_err("a b"),
        "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
    );
    assert!(
        parse_err("a@b=c").starts_with(
            "unable to parse requirement: <nil>: Invalid value: \"a@b\": name part must consist of alphanumeric characters"
        ),
        "{}",
        parse_err("a@b=c")
    );
    assert_eq!(
        parse_err(&format!("x={}", "a".repeat(64))),
        format!(
            "unable to parse requirement: values[0][x]: Invalid value: \"{}\": must be no more than 63 characters",
            "a".repeat(64)
        )
    );
}

#[test]
fn exact_match_introspection() {
    let s = parse("key=value,key2=value2,key3 in (a,b),key4 in (one)");
    assert_eq!(s.requires_exact_match("key"), Some("value"));
    assert_eq!(s.requires_exact_match("key2"), Some("value2"));
    assert_eq!(s.requires_exact_match("key3"), None);
    assert_eq!(s.requires_exact_match("key4"), Some("one"));
    assert_eq!(s.requires_exact_match("nope"), None);
    assert_eq!(parse("key!=value").requires_exact_match("key"), None);
    assert_eq!(
        parse("key==value").requires_exact_match("key"),
        Some("value")
    );
}

#[test]
fn requirement_constructor_errors() {
    let err = |k: &str, op, vals: &[&str]| {
        Requirement::new(k, op, vals.iter().map(|s| s.to_string()).collect())
            .err()
            .map(|e| e.to_string())
    };
    assert_eq!(err("x", Operator::In, &["a"]), None);
    assert_eq!(
        err("x", Operator::In, &[]),
        Some("values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty".into())
    );
    assert_eq!(
        err("x", Operator::Equals, &["a", "b"]),
        Some("values: Invalid value: []string{\"a\", \"b\"}: exact-match compatibility requires one single value".into())
    );
    assert_eq!(
        err("x", Operator::Exists, &["a"]),
        Some("values: Invalid value: []string{\"a\"}: values set must be empty for exists and does not exist".into())
    );
    assert_eq!(
        err("x", Operator::GreaterThan, &["1", "2"]),
        Some("values: Invalid value: []string{\"1\", \"2\"}: for 'Gt', 'Lt' operators, exactly one value is required".into())
    );
    let both = err("a b", Operator::In, &[]).unwrap_or_default();
    assert!(
        both.starts_with("[key: Invalid value: \"a b\": name part must consist"),
        "{both}"
    );
    assert!(both.ends_with("values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty]"), "{both}");
}

#[test]
fn from_json_label_selector() {
    let s = LabelSelector::from_json(&json!({
        "matchLabels": {"app": "web", "tier": "fe"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["prod", "staging"]},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "zone", "operator": "NotIn", "values": ["b"]},
            {"key": "team", "operator": "Exists"}
        ]
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        s.to_string(),
        "app=web,!canary,env in (prod,staging),team,tier=fe,zone notin (b)"
    );
    let good = set(&[
        ("app", "web"),
        ("tier", "fe"),
        ("env", "prod"),
        ("team", "x"),
    ]);
    assert!(s.matches(&good));
    let mut bad = good.clone();
    bad.insert("canary".into(), "1".into());
    assert!(!s.matches(&bad));
    assert_eq!(s.requires_exact_match("app"), Some("web"));

    // Empty selects everything; null selects nothing.
    let all = LabelSelector::from_json(&json!({})).unwrap_or_else(|e| panic!("{e}"));
    assert!(all.is_empty() && all.matches(&set(&[("a", "b")])));
    let all = LabelSelector::from_json(&json!({"matchLabels": {}, "matchExpressions": []}))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(all.is_empty());
    let none = LabelSelector::from_json(&json!(null)).unwrap_or_else(|e| panic!("{e}"));
    assert!(none.is_nothing() && !none.matches(&set(&[])));
    assert!(
        LabelSelector::from_json_opt(None)
            .unwrap_or_default()
            .is_nothing()
    );
}

#[test]
fn from_json_errors() {
    let err = |v: serde_json::Value| {
        LabelSelector::from_json(&v)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert_eq!(
        err(json!({"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]})),
        "\"Equals\" is not a valid label selector operator"
    );
    assert_eq!(
        err(json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})),
        "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
    );
    assert_eq!(
        err(json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]})),
        "values: Invalid value: []string{\"x\"}: values set must be empty for exists and does not exist"
    );
    assert!(
        err(json!({"matchLabels": {"a": "b c"}}))
            .starts_with("values[0][a]: Invalid value: \"b c\": a valid label must be")
    );
    assert!(err(json!({"matchLabels": {"-a": "b"}})).starts_with("key: Invalid value: \"-a\""));
    assert!(err(json!({"matchLabels": {"a": 1}})).contains("must be a string"));
    assert!(err(json!({"matchLabels": []})).contains("must be an object"));
    assert!(err(json!({"matchExpressions": {}})).contains("must be a list"));
    assert!(err(json!([1])).contains("expected an object"));
}

#[test]
fn from_map_and_add() {
    let s = LabelSelector::from_map(&set(&[("b", "2"), ("a", "1")]));
    assert_eq!(s.to_string(), "a=1,b=2");
    assert!(s.matches(&set(&[("a", "1"), ("b", "2"), ("c", "3")])));
    assert!(LabelSelector::from_map(&set(&[])).is_empty());
    let mut s = parse("b=1");
    s.add(Requirement::new("a", Operator::Exists, vec![]).unwrap_or_else(|e| panic!("{e}")));
    assert_eq!(s.to_string(), "a,b=1");
    let r: LabelSelector = "x in (a)".parse().unwrap_or_default();
    assert_eq!(r.to_string(), "x in (a)");
}

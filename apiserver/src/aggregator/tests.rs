//! Unit tests of the aggregator's pure parts: discovery from a backend's resource list, the
//! forwarded headers, the Available condition.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use serde_json::json;

use super::availability::{Outcome, set_available};
use super::proxy::forwarded_headers;
use crate::auth::UserInfo;

#[test]
fn a_backend_resource_list_becomes_discovery_entries_with_subresources() {
    let list = json!({
        "kind": "APIResourceList", "groupVersion": "wardle.example.com/v1alpha1",
        "resources": [
            { "name": "flunders", "singularName": "flunder", "namespaced": true,
              "kind": "Flunder", "verbs": ["get", "list", "watch", "create"],
              "shortNames": ["fl"], "categories": ["all"] },
            { "name": "flunders/status", "singularName": "", "namespaced": true,
              "kind": "Flunder", "verbs": ["get", "patch"] },
            { "name": "fischers", "singularName": "fischer", "namespaced": false,
              "kind": "Fischer", "verbs": ["get"] },
        ]
    });
    let r = super::resources_of("wardle.example.com", "v1alpha1", &list);
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].resource, "flunders");
    assert!(r[0].namespaced);
    assert_eq!(r[0].short_names, vec!["fl"]);
    assert_eq!(r[0].categories, vec!["all"]);
    assert_eq!(r[0].subresources.len(), 1);
    assert_eq!(r[0].subresources[0].name, "status");
    assert_eq!(r[0].subresources[0].version, "v1alpha1");
    assert!(!r[1].namespaced);
    // Garbage gives nothing rather than an error.
    assert!(super::resources_of("g", "v", &json!({"resources": 3})).is_empty());
}

#[test]
fn forwarded_headers_carry_the_user_and_drop_credentials() {
    let mut incoming = http::HeaderMap::new();
    incoming.insert("authorization", "Bearer secret".parse().unwrap());
    incoming.insert("impersonate-user", "eve".parse().unwrap());
    incoming.insert("x-remote-user", "mallory".parse().unwrap());
    incoming.insert("connection", "keep-alive, x-private".parse().unwrap());
    incoming.insert("x-private", "1".parse().unwrap());
    incoming.insert("accept", "application/json".parse().unwrap());
    let user = UserInfo {
        name: "alice".into(),
        uid: "u1".into(),
        groups: vec!["devs".into(), "system:authenticated".into()],
        extra: BTreeMap::from([("example.org/team".to_string(), vec!["a".to_string()])]),
    };
    let h = forwarded_headers(&incoming, false, &user);
    assert!(h.get("authorization").is_none());
    assert!(h.get("impersonate-user").is_none());
    assert!(h.get("connection").is_none());
    assert!(h.get("x-private").is_none());
    assert_eq!(h.get("accept").unwrap(), "application/json");
    let all = |n: &str| {
        h.get_all(n)
            .iter()
            .map(|v| v.to_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(all("x-remote-user"), vec!["alice"]);
    assert_eq!(all("x-remote-group"), vec!["devs", "system:authenticated"]);
    assert_eq!(all("x-remote-extra-example.org%2Fteam"), vec!["a"]);
}

#[test]
fn an_upgrade_keeps_its_upgrade_headers() {
    let mut incoming = http::HeaderMap::new();
    incoming.insert("connection", "Upgrade".parse().unwrap());
    incoming.insert("upgrade", "websocket".parse().unwrap());
    let h = forwarded_headers(&incoming, true, &UserInfo::new("bob", vec![]));
    assert_eq!(h.get("connection").unwrap(), "Upgrade");
    assert_eq!(h.get("upgrade").unwrap(), "websocket");
}

#[test]
fn the_available_condition_changes_only_when_its_outcome_does() {
    let mut obj = json!({ "metadata": { "name": "v1.x" } });
    let down = Outcome {
        status: "False",
        reason: "ServiceNotFound".into(),
        message: "service/api in \"ns\" is not present".into(),
    };
    assert!(set_available(&mut obj, &down));
    let first = obj["status"]["conditions"][0].clone();
    assert_eq!(first["reason"], "ServiceNotFound");
    assert!(!set_available(&mut obj, &down));
    let up = Outcome {
        status: "True",
        reason: "Passed".into(),
        message: "all checks passed".into(),
    };
    assert!(set_available(&mut obj, &up));
    let c = &obj["status"]["conditions"];
    assert_eq!(c.as_array().unwrap().len(), 1);
    assert_eq!(c[0]["status"], "True");
    assert_eq!(c[0]["message"], "all checks passed");
}

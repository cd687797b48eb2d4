//! API Priority and Fairness as far as k1s takes it: every request is classified by the
//! FlowSchemas as upstream's APF filter does (the matching schema of lowest
//! `matchingPrecedence`, then name, among those whose priority level exists) and answered with
//! upstream's `X-Kubernetes-PF-FlowSchema-UID` and `X-Kubernetes-PF-PriorityLevel-UID` headers;
//! and every FlowSchema's `Dangling` condition is kept current, as upstream's configuration
//! consumer keeps it. k1s does not queue by them: its max-in-flight limits are the only bound.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use http::HeaderValue;
use k1s_apimachinery::catalog::{self, ResourceInfo};
use k1s_apimachinery::{ApiError, meta};
use serde_json::{Value, json};

use crate::auth::{Attributes, UserInfo};
use crate::registry::informer::{self, Change};
use crate::registry::{Registry, Target, WriteOptions};

const GROUP: &str = "flowcontrol.apiserver.k8s.io";
pub const FLOW_SCHEMA_HEADER: &str = "x-kubernetes-pf-flowschema-uid";
pub const PRIORITY_LEVEL_HEADER: &str = "x-kubernetes-pf-prioritylevel-uid";

/// What the classification needs of the FlowSchemas and priority levels.
#[derive(Default)]
pub struct FlowControl {
    state: RwLock<State>,
    /// A FlowSchema or priority level was created, deleted, or changed its spec (generation)
    /// or auto-update annotation since the last producer round, which has nothing to do
    /// otherwise. Status writes (the `Dangling` conditions) do not count.
    changed: std::sync::atomic::AtomicBool,
    /// `(is a level, name)` → `[generation, auto-update annotation]` of every object seen.
    signatures: std::sync::Mutex<HashMap<(bool, String), Value>>,
}

#[derive(Default)]
struct State {
    /// FlowSchemas by name.
    schemas: HashMap<String, Arc<Value>>,
    /// Priority level UIDs by name.
    levels: HashMap<String, String>,
    /// Priority levels' nominal concurrency shares by name (Limited: default 30; Exempt: 0).
    shares: HashMap<String, f64>,
    /// Names of the schemas in classification order (precedence, then name).
    order: Vec<String>,
}

impl State {
    fn sort(&mut self) {
        let mut order: Vec<(i64, String)> = self
            .schemas
            .iter()
            .map(|(name, fs)| (precedence(fs), name.clone()))
            .collect();
        order.sort();
        self.order = order.into_iter().map(|(_, n)| n).collect();
    }
}

fn precedence(fs: &Value) -> i64 {
    fs.pointer("/spec/matchingPrecedence")
        .and_then(Value::as_i64)
        .unwrap_or(1000)
}

/// A priority level's nominal concurrency shares, with upstream's v1 defaults.
fn shares(level: &Value) -> f64 {
    match level.pointer("/spec/type").and_then(Value::as_str) {
        Some("Exempt") => level.pointer("/spec/exempt/nominalConcurrencyShares"),
        _ => level.pointer("/spec/limited/nominalConcurrencyShares"),
    }
    .and_then(Value::as_f64)
    .unwrap_or(
        if level.pointer("/spec/type").and_then(Value::as_str) == Some("Exempt") {
            0.0
        } else {
            30.0
        },
    )
}

fn level_name(fs: &Value) -> &str {
    fs.pointer("/spec/priorityLevelConfiguration/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The UIDs a request is answered with.
pub struct Classification {
    pub flow_schema_uid: String,
    pub priority_level_uid: String,
}

impl Classification {
    /// Adds upstream's two headers to a response.
    pub fn add_headers(&self, headers: &mut http::HeaderMap) {
        for (name, value) in [
            (FLOW_SCHEMA_HEADER, &self.flow_schema_uid),
            (PRIORITY_LEVEL_HEADER, &self.priority_level_uid),
        ] {
            if let Ok(v) = HeaderValue::from_str(value) {
                headers.insert(name, v);
            }
        }
    }
}

impl FlowControl {
    /// The schema and priority level a request falls in, `None` when none matches (only
    /// possible once the mandatory `catch-all` is deleted; the server restores it at start).
    pub fn classify(&self, attrs: &Attributes) -> Option<Classification> {
        let state = self.state.read().ok()?;
        state.order.iter().find_map(|name| {
            let fs = state.schemas.get(name)?;
            let level_uid = state.levels.get(level_name(fs))?;
            let rules = fs.pointer("/spec/rules").and_then(Value::as_array)?;
            rules
                .iter()
                .any(|r| rule_matches(r, attrs))
                .then(|| Classification {
                    flow_schema_uid: meta::uid(fs).unwrap_or_default().to_string(),
                    priority_level_uid: level_uid.clone(),
                })
        })
    }

    /// `apiserver_flowcontrol_nominal_limit_seats` of every priority level: its share of the
    /// server's concurrency limit, `ceil(limit × shares / Σ shares)`, as upstream's APF
    /// configuration controller computes it (k1s reports it; it does not queue by it).
    pub fn render_metrics(&self, server_concurrency: usize) -> String {
        let Ok(state) = self.state.read() else {
            return String::new();
        };
        let total: f64 = state.shares.values().sum();
        let mut levels: Vec<(&String, &f64)> = state.shares.iter().collect();
        levels.sort_by(|a, b| a.0.cmp(b.0));
        let mut out = String::from(
            "# HELP apiserver_flowcontrol_nominal_limit_seats [BETA] Nominal number of execution seats configured for each priority level\n\
             # TYPE apiserver_flowcontrol_nominal_limit_seats gauge\n",
        );
        for (name, shares) in levels {
            let seats = if total > 0.0 {
                (server_concurrency as f64 * shares / total).ceil()
            } else {
                0.0
            };
            out.push_str(&format!(
                "apiserver_flowcontrol_nominal_limit_seats{{priority_level=\"{name}\"}} {seats}\n"
            ));
        }
        out
    }

    fn with_state(&self, change: impl FnOnce(&mut State)) {
        if let Ok(mut state) = self.state.write() {
            change(&mut state);
            state.sort();
        }
    }
}

/// Upstream's matchesPolicyRule: a subject matches, then a resource rule (resource requests)
/// or a non-resource rule.
fn rule_matches(rule: &Value, attrs: &Attributes) -> bool {
    let list = |field: &str| {
        rule.get(field)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    if !list("subjects")
        .iter()
        .any(|s| subject_matches(s, &attrs.user))
    {
        return false;
    }
    if attrs.is_resource_request {
        list("resourceRules")
            .iter()
            .any(|r| resource_rule_matches(r, attrs))
    } else {
        list("nonResourceRules")
            .iter()
            .any(|r| non_resource_rule_matches(r, attrs))
    }
}

fn strings<'a>(v: &'a Value, field: &str) -> impl Iterator<Item = &'a str> {
    v.get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// Whether `wanted` is in the list, or the list holds `all`.
fn contains(v: &Value, field: &str, wanted: &str, all: &str) -> bool {
    strings(v, field).any(|s| s == wanted || s == all)
}

fn subject_matches(subject: &Value, user: &UserInfo) -> bool {
    let name_of = |field: &str, key: &str| subject.pointer(&format!("/{field}/{key}"))?.as_str();
    match subject.get("kind").and_then(Value::as_str) {
        Some("User") => name_of("user", "name").is_some_and(|n| n == "*" || n == user.name),
        Some("Group") => {
            name_of("group", "name").is_some_and(|n| n == "*" || user.groups.iter().any(|g| g == n))
        }
        Some("ServiceAccount") => {
            let (Some(ns), Some(name)) = (
                name_of("serviceAccount", "namespace"),
                name_of("serviceAccount", "name"),
            ) else {
                return false;
            };
            let Some(rest) = user.name.strip_prefix("system:serviceaccount:") else {
                return false;
            };
            let Some((user_ns, user_sa)) = rest.split_once(':') else {
                return false;
            };
            user_ns == ns && (name == "*" || user_sa == name)
        }
        _ => false,
    }
}

fn resource_rule_matches(rule: &Value, attrs: &Attributes) -> bool {
    let resource = if attrs.subresource.is_empty() {
        attrs.resource.clone()
    } else {
        format!("{}/{}", attrs.resource, attrs.subresource)
    };
    contains(rule, "verbs", &attrs.verb, "*")
        && contains(rule, "apiGroups", &attrs.api_group, "*")
        && contains(rule, "resources", &resource, "*")
        && if attrs.namespace.is_empty() {
            rule.get("clusterScope").and_then(Value::as_bool) == Some(true)
        } else {
            contains(rule, "namespaces", &attrs.namespace, "*")
        }
}

fn non_resource_rule_matches(rule: &Value, attrs: &Attributes) -> bool {
    contains(rule, "verbs", &attrs.verb, "*")
        && strings(rule, "nonResourceURLs").any(|pattern| {
            pattern == "*"
                || pattern == attrs.path
                || pattern
                    .strip_suffix('*')
                    .filter(|prefix| prefix.ends_with('/'))
                    .is_some_and(|prefix| attrs.path.starts_with(prefix))
        })
}

fn info(resource: &str) -> Result<&'static ResourceInfo, ApiError> {
    catalog::find(GROUP, "v1", resource)
        .ok_or_else(|| ApiError::internal(format!("{resource} missing from the catalog")))
}

/// How often the APF configuration is brought back to upstream's (as upstream's producer).
const PRODUCER_PERIOD: std::time::Duration = std::time::Duration::from_secs(60);

/// Loads the FlowSchemas and priority levels, brings every `Dangling` condition up to date
/// and follows both until shutdown; every `PRODUCER_PERIOD` restores the configuration objects
/// (`bootstrap_flowcontrol::ensure`).
pub async fn start(
    registry: &Registry,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> Result<Arc<FlowControl>, ApiError> {
    let fc = Arc::new(FlowControl::default());
    let (schemas, levels) = (info("flowschemas")?, info("prioritylevelconfigurations")?);
    // Both lists first: a schema looked at before the levels are known would seem dangling.
    for (resource, is_level) in [(levels, true), (schemas, false)] {
        let t = Target {
            info: resource,
            namespace: None,
        };
        let list = registry
            .list(t, &crate::registry::ListQuery::default())
            .await?;
        fc.apply(is_level, &Change::Listed(list.items));
    }
    let names: Vec<String> = fc.state.read().map(|s| s.order.clone()).unwrap_or_default();
    for name in names {
        fc.mark_dangling(registry, schemas, &name).await;
    }
    // The bootstrap round just ran over what was listed: nothing is new to the producer yet.
    fc.changed
        .store(false, std::sync::atomic::Ordering::Relaxed);
    for (resource, is_level) in [(levels, true), (schemas, false)] {
        let (fc, registry2) = (fc.clone(), registry.clone());
        tokio::spawn(informer::run(
            registry.clone(),
            resource,
            shutdown.clone(),
            move |change| {
                let checks = fc.apply(is_level, &change);
                let (fc, registry) = (fc.clone(), registry2.clone());
                async move {
                    for name in checks {
                        fc.mark_dangling(&registry, schemas, &name).await;
                    }
                }
            },
        ));
    }
    // The configuration producer's periodic round (the first ran at start, in bootstrap),
    // skipped while nobody changed the configuration: it would find nothing to do.
    let (registry, mut stop, producer) = (registry.clone(), shutdown, fc.clone());
    tokio::spawn(async move {
        let mut rounds = tokio::time::interval(PRODUCER_PERIOD);
        rounds.tick().await;
        loop {
            tokio::select! {
                _ = rounds.tick() => {
                    if !producer.changed.swap(false, std::sync::atomic::Ordering::Relaxed) {
                        continue;
                    }
                    if let Err(e) = crate::bootstrap_flowcontrol::ensure(&registry).await {
                        tracing::warn!(error = %e.message, "maintaining the APF configuration failed");
                    }
                }
                _ = stop.changed() => break,
            }
        }
    });
    Ok(fc)
}

impl FlowControl {
    /// Applies a change; returns the FlowSchemas whose `Dangling` condition may need a write.
    fn apply(&self, is_level: bool, change: &Change) -> Vec<String> {
        self.note_configuration_change(is_level, change);
        let mut checks = Vec::new();
        self.with_state(|state| {
            let name = |o: &Value| meta::name(o).unwrap_or_default().to_string();
            match (is_level, change) {
                (true, Change::Listed(items)) => {
                    state.levels = items
                        .iter()
                        .map(|o| (name(o), meta::uid(o).unwrap_or_default().to_string()))
                        .collect();
                    state.shares = items.iter().map(|o| (name(o), shares(o))).collect();
                }
                (true, Change::Upserted(o)) => {
                    state
                        .levels
                        .insert(name(o), meta::uid(o).unwrap_or_default().to_string());
                    state.shares.insert(name(o), shares(o));
                }
                (true, Change::Deleted(o)) => {
                    state.levels.remove(&name(o));
                    state.shares.remove(&name(o));
                }
                (false, Change::Listed(items)) => {
                    state.schemas = items
                        .iter()
                        .map(|o| (name(o), Arc::new(o.clone())))
                        .collect();
                }
                (false, Change::Upserted(o)) => {
                    state.schemas.insert(name(o), o.clone());
                    checks.push(name(o));
                }
                (false, Change::Deleted(o)) => {
                    state.schemas.remove(&name(o));
                }
            }
            if is_level || matches!(change, Change::Listed(_)) {
                checks = state.schemas.keys().cloned().collect();
            }
        });
        checks
    }

    /// Sets `changed` when `change` touches what the producer maintains.
    fn note_configuration_change(&self, is_level: bool, change: &Change) {
        let signature = |o: &Value| {
            json!([
                o.pointer("/metadata/generation"),
                crate::bootstrap_flowcontrol::annotation(o),
            ])
        };
        let key = |o: &Value| (is_level, meta::name(o).unwrap_or_default().to_string());
        let Ok(mut seen) = self.signatures.lock() else {
            return;
        };
        let changed = match change {
            Change::Upserted(o) => {
                let new = signature(o);
                seen.insert(key(o), new.clone()) != Some(new)
            }
            Change::Deleted(o) => seen.remove(&key(o)).is_some(),
            Change::Listed(items) => {
                let listed: HashMap<(bool, String), Value> =
                    items.iter().map(|o| (key(o), signature(o))).collect();
                let previous: HashMap<(bool, String), Value> = seen
                    .iter()
                    .filter(|((level, _), _)| *level == is_level)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                seen.retain(|(level, _), _| *level != is_level);
                seen.extend(listed.clone());
                previous != listed
            }
        };
        if changed {
            self.changed
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// The `Dangling` condition a schema should have now, if it differs from the one it has.
    fn wanted_condition(&self, name: &str) -> Option<Value> {
        let state = self.state.read().ok()?;
        let fs = state.schemas.get(name)?;
        let level = level_name(fs);
        let (status, reason, message) = if state.levels.contains_key(level) {
            (
                "False",
                "Found",
                format!(
                    "This FlowSchema references the PriorityLevelConfiguration object named {} and it exists",
                    crate::auth::authn::go_quote(level)
                ),
            )
        } else {
            (
                "True",
                "NotFound",
                format!(
                    "This FlowSchema references the PriorityLevelConfiguration object named {} but there is no such object",
                    crate::auth::authn::go_quote(level)
                ),
            )
        };
        let current = dangling_of(fs);
        let same = current.is_some_and(|c| {
            c.get("status").and_then(Value::as_str) == Some(status)
                && c.get("reason").and_then(Value::as_str) == Some(reason)
                && c.get("message").and_then(Value::as_str) == Some(message.as_str())
        });
        (!same).then(|| {
            json!({"type": "Dangling", "status": status, "reason": reason, "message": message,
                   "lastTransitionTime": crate::registry::now_rfc3339()})
        })
    }

    /// Writes the schema's `Dangling` condition through `/status` when it is out of date.
    async fn mark_dangling(&self, registry: &Registry, info: &'static ResourceInfo, name: &str) {
        let Some(wanted) = self.wanted_condition(name) else {
            return;
        };
        let t = Target {
            info,
            namespace: None,
        };
        let strategy = crate::strategies::for_resource(info);
        let result = registry
            .update(
                t,
                strategy,
                name,
                Some("status"),
                &WriteOptions::default(),
                |current| {
                    let mut new = current.clone();
                    let mut conditions: Vec<Value> = new
                        .pointer("/status/conditions")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    conditions
                        .retain(|c| c.get("type").and_then(Value::as_str) != Some("Dangling"));
                    conditions.push(wanted.clone());
                    if !new.get("status").is_some_and(Value::is_object) {
                        new["status"] = json!({});
                    }
                    new["status"]["conditions"] = Value::Array(conditions);
                    Ok(new)
                },
            )
            .await;
        match result {
            Ok(_) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                tracing::warn!(error = %e.message, flowschema = name, "setting the Dangling condition failed")
            }
        }
    }
}

fn dangling_of(fs: &Value) -> Option<&Value> {
    fs.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Dangling"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_spec_annotation_and_membership_changes_wake_the_producer() {
        let fc = FlowControl::default();
        let schema = |generation: i64, autoupdate: &str, dangling: &str| {
            Arc::new(json!({ "metadata": { "name": "s", "generation": generation,
                "annotations": { "apf.kubernetes.io/autoupdate-spec": autoupdate } },
                "status": { "conditions": [{ "type": "Dangling", "status": dangling }] } }))
        };
        let woke = |change: Change| {
            fc.apply(false, &change);
            fc.changed.swap(false, std::sync::atomic::Ordering::Relaxed)
        };
        assert!(woke(Change::Listed(vec![
            (*schema(1, "true", "False")).clone()
        ])));
        assert!(
            !woke(Change::Listed(vec![(*schema(1, "true", "False")).clone()])),
            "same relist"
        );
        assert!(
            !woke(Change::Upserted(schema(1, "true", "True"))),
            "status only"
        );
        assert!(woke(Change::Upserted(schema(2, "true", "True"))), "spec");
        assert!(
            woke(Change::Upserted(schema(2, "false", "True"))),
            "annotation"
        );
        assert!(woke(Change::Deleted(schema(2, "false", "True"))));
        assert!(
            woke(Change::Listed(vec![(*schema(2, "false", "True")).clone()])),
            "back"
        );
    }

    fn attrs(user: &str, groups: &[&str], verb: &str, resource: &str, ns: &str) -> Attributes {
        Attributes {
            user: UserInfo::new(user, groups.iter().map(|g| g.to_string()).collect()),
            verb: verb.into(),
            is_resource_request: !resource.is_empty(),
            namespace: ns.into(),
            resource: resource.into(),
            path: if resource.is_empty() {
                "/version".into()
            } else {
                String::new()
            },
            ..Default::default()
        }
    }

    fn fc() -> FlowControl {
        let fc = FlowControl::default();
        let schema = |name: &str, uid: &str, level: &str, precedence: i64, rule: Value| {
            Arc::new(json!({"metadata": {"name": name, "uid": uid},
                "spec": {"priorityLevelConfiguration": {"name": level},
                         "matchingPrecedence": precedence, "rules": [rule]}}))
        };
        fc.with_state(|s| {
            s.levels.insert("exempt".into(), "pl-exempt".into());
            s.levels.insert("catch-all".into(), "pl-catch".into());
            s.levels.insert("mine".into(), "pl-mine".into());
            for fs in [
                schema("exempt", "fs-exempt", "exempt", 1, json!({
                    "subjects": [{"kind": "Group", "group": {"name": "system:masters"}}],
                    "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]})),
                schema("mine", "fs-mine", "mine", 500, json!({
                    "subjects": [{"kind": "User", "user": {"name": "noxu"}},
                                 {"kind": "ServiceAccount", "serviceAccount": {"namespace": "ci", "name": "*"}}],
                    "resourceRules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"], "namespaces": ["team"]}],
                    "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/version", "/healthz/*"]}]})),
                schema("gone", "fs-gone", "missing", 2, json!({
                    "subjects": [{"kind": "Group", "group": {"name": "*"}}],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]})),
                schema("catch-all", "fs-catch", "catch-all", 10000, json!({
                    "subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
                    "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]})),
            ] {
                s.schemas.insert(meta::name(&fs).unwrap().to_string(), fs);
            }
        });
        fc
    }

    fn schema_of(fc: &FlowControl, a: &Attributes) -> String {
        fc.classify(a)
            .map(|c| c.flow_schema_uid)
            .unwrap_or_default()
    }

    #[test]
    fn requests_fall_in_the_matching_schema_of_lowest_precedence() {
        let fc = fc();
        let authed = ["system:authenticated"];
        assert_eq!(
            schema_of(&fc, &attrs("admin", &["system:masters"], "get", "", "")),
            "fs-exempt"
        );
        assert_eq!(
            schema_of(&fc, &attrs("noxu", &authed, "get", "", "")),
            "fs-mine"
        );
        assert_eq!(
            schema_of(&fc, &attrs("foo", &authed, "get", "", "")),
            "fs-catch"
        );
        // Subresources, namespaces and cluster scope.
        let mut log = attrs("noxu", &authed, "get", "pods", "team");
        log.subresource = "log".into();
        assert_eq!(schema_of(&fc, &log), "fs-mine");
        log.namespace = "other".into();
        assert_eq!(schema_of(&fc, &log), "fs-catch");
        let sa = attrs("system:serviceaccount:ci:builder", &authed, "get", "", "");
        assert_eq!(schema_of(&fc, &sa), "fs-mine");
        let mut sub = attrs("noxu", &authed, "get", "", "");
        sub.path = "/healthz/etcd".into();
        assert_eq!(schema_of(&fc, &sub), "fs-mine");
        sub.path = "/healthzz".into();
        assert_eq!(schema_of(&fc, &sub), "fs-catch");
        let c = fc.classify(&attrs("noxu", &authed, "get", "", "")).unwrap();
        assert_eq!(c.priority_level_uid, "pl-mine");
    }

    #[test]
    fn a_schema_without_its_priority_level_is_dangling() {
        let fc = fc();
        let wanted = fc.wanted_condition("gone").unwrap();
        assert_eq!(wanted["status"], "True");
        assert_eq!(wanted["reason"], "NotFound");
        assert_eq!(
            wanted["message"],
            "This FlowSchema references the PriorityLevelConfiguration object named \"missing\" but there is no such object"
        );
        let found = fc.wanted_condition("mine").unwrap();
        assert_eq!(
            (found["status"].as_str(), found["reason"].as_str()),
            (Some("False"), Some("Found"))
        );
        // Once the schema has it, nothing is written again.
        fc.with_state(|s| {
            let mut fs = (**s.schemas.get("mine").unwrap()).clone();
            fs["status"] = json!({"conditions": [found.clone()]});
            s.schemas.insert("mine".into(), Arc::new(fs));
        });
        assert!(fc.wanted_condition("mine").is_none());
    }
}

//! Pure helpers of the deployment controller, as upstream's `pkg/controller/deployment/util`:
//! surge/unavailable fenceposts, replica-set revisions and annotations, the pod-template hash,
//! proportional-scaling arithmetic, conditions and status.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

pub const REVISION: &str = "deployment.kubernetes.io/revision";
pub const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
pub const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
pub const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
const ROLLBACK_TO: &str = "deprecated.deployment.rollback.to";
/// Upstream's maxRevHistoryLengthInChars.
pub const MAX_REV_HISTORY_CHARS: usize = 2000;

pub const NEW_RS_REASON: &str = "NewReplicaSetCreated";
pub const FOUND_NEW_RS_REASON: &str = "FoundNewReplicaSet";
pub const RS_UPDATED_REASON: &str = "ReplicaSetUpdated";
pub const NEW_RS_AVAILABLE_REASON: &str = "NewReplicaSetAvailable";
pub const TIMED_OUT_REASON: &str = "ProgressDeadlineExceeded";
pub const PAUSED_REASON: &str = "DeploymentPaused";
pub const RESUMED_REASON: &str = "DeploymentResumed";
pub const FAILED_RS_CREATE_REASON: &str = "ReplicaSetCreateError";

pub fn replicas(d: &Deployment) -> i32 {
    d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

pub fn rs_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

pub fn set_rs_replicas(rs: &mut ReplicaSet, n: i32) {
    rs.spec.get_or_insert_with(Default::default).replicas = Some(n);
}

pub fn rs_status_replicas(rs: &ReplicaSet) -> i32 {
    rs.status.as_ref().map_or(0, |s| s.replicas)
}

pub fn rs_available(rs: &ReplicaSet) -> i32 {
    rs.status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or(0)
}

pub fn rs_ready(rs: &ReplicaSet) -> i32 {
    rs.status
        .as_ref()
        .and_then(|s| s.ready_replicas)
        .unwrap_or(0)
}

pub fn is_rolling(d: &Deployment) -> bool {
    strategy_type(d) != "Recreate"
}

pub fn strategy_type(d: &Deployment) -> &str {
    d.spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.type_.as_deref())
        .unwrap_or("RollingUpdate")
}

/// Upstream's GetScaledValueFromIntOrPercent.
pub fn scaled_value(v: &IntOrString, total: i32, round_up: bool) -> Result<i32, String> {
    match v {
        IntOrString::Int(i) => Ok(*i),
        IntOrString::String(s) => {
            let Some(pct) = s.strip_suffix('%') else {
                return Err(
                    "invalid value for IntOrString: invalid type: string is not a percentage"
                        .to_string(),
                );
            };
            let pct: i64 = pct
                .parse()
                .map_err(|_| format!("invalid value {s:?}: {pct:?} is not an integer"))?;
            let prod = pct * i64::from(total);
            let v = if round_up {
                (prod + 99).div_euclid(100)
            } else {
                prod.div_euclid(100)
            };
            Ok(i32::try_from(v).unwrap_or(i32::MAX))
        }
    }
}

/// Upstream's ResolveFenceposts: surge rounds up, unavailable down; both zero → unavailable 1.
pub fn resolve_fenceposts(
    max_surge: Option<&IntOrString>,
    max_unavailable: Option<&IntOrString>,
    desired: i32,
) -> Result<(i32, i32), String> {
    let zero = IntOrString::Int(0);
    let surge = scaled_value(max_surge.unwrap_or(&zero), desired, true)?;
    let unavailable = scaled_value(max_unavailable.unwrap_or(&zero), desired, false)?;
    if surge == 0 && unavailable == 0 {
        return Ok((0, 1));
    }
    Ok((surge, unavailable))
}

fn fenceposts(d: &Deployment) -> (i32, i32) {
    let ru = d
        .spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.rolling_update.as_ref());
    resolve_fenceposts(
        ru.and_then(|r| r.max_surge.as_ref()),
        ru.and_then(|r| r.max_unavailable.as_ref()),
        replicas(d),
    )
    .unwrap_or((0, 1))
}

/// Upstream's MaxSurge (0 for Recreate).
pub fn max_surge(d: &Deployment) -> i32 {
    if !is_rolling(d) {
        return 0;
    }
    fenceposts(d).0
}

/// Upstream's MaxUnavailable (0 for Recreate or zero replicas; at most the replicas).
pub fn max_unavailable(d: &Deployment) -> i32 {
    if !is_rolling(d) || replicas(d) == 0 {
        return 0;
    }
    fenceposts(d).1.min(replicas(d))
}

pub fn revision(rs: &ReplicaSet) -> i64 {
    rs.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(REVISION))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

pub fn max_revision(rss: &[ReplicaSet]) -> i64 {
    rss.iter().map(revision).max().unwrap_or(0)
}

fn annotation_i32(rs: &ReplicaSet, key: &str) -> Option<i32> {
    rs.metadata.annotations.as_ref()?.get(key)?.parse().ok()
}

pub fn desired_replicas_annotation(rs: &ReplicaSet) -> Option<i32> {
    annotation_i32(rs, DESIRED_REPLICAS)
}

fn skip_copy(k: &str) -> bool {
    matches!(
        k,
        LAST_APPLIED | REVISION | REVISION_HISTORY | DESIRED_REPLICAS | MAX_REPLICAS | ROLLBACK_TO
    )
}

/// Copies the deployment's annotations (but apply and revision bookkeeping) onto the RS.
fn copy_annotations(d: &Deployment, rs: &mut ReplicaSet) -> bool {
    let mut changed = false;
    let ann = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    for (k, v) in d.metadata.annotations.iter().flatten() {
        if skip_copy(k) || ann.get(k) == Some(v) {
            continue;
        }
        ann.insert(k.clone(), v.clone());
        changed = true;
    }
    changed
}

pub fn set_replicas_annotations(rs: &mut ReplicaSet, desired: i32, max: i32) -> bool {
    let ann = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let mut changed = false;
    for (k, v) in [(DESIRED_REPLICAS, desired), (MAX_REPLICAS, max)] {
        let v = v.to_string();
        if ann.get(k) != Some(&v) {
            ann.insert(k.into(), v);
            changed = true;
        }
    }
    changed
}

pub fn replicas_annotations_need_update(rs: &ReplicaSet, desired: i32, max: i32) -> bool {
    annotation_i32(rs, DESIRED_REPLICAS) != Some(desired)
        || annotation_i32(rs, MAX_REPLICAS) != Some(max)
}

/// Upstream's SetNewReplicaSetAnnotations: copies annotations, raises the revision to
/// `new_revision` (keeping the old one in `revision-history` when it had one: a rollback), and
/// for a replica set about to be created sets the replicas annotations.
pub fn set_new_rs_annotations(
    d: &Deployment,
    rs: &mut ReplicaSet,
    new_revision: i64,
    exists: bool,
) -> bool {
    let mut changed = copy_annotations(d, rs);
    let ann = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let old = ann.get(REVISION).cloned();
    let old_int = match old.as_deref() {
        None | Some("") => 0,
        Some(v) => match v.parse::<i64>() {
            Ok(n) => n,
            Err(_) => return false,
        },
    };
    if old_int < new_revision {
        ann.insert(REVISION.into(), new_revision.to_string());
        changed = true;
        if let Some(old) = old.filter(|o| !o.is_empty()) {
            let history = ann.get(REVISION_HISTORY).cloned().unwrap_or_default();
            if history.is_empty() {
                ann.insert(REVISION_HISTORY.into(), old);
            } else {
                let mut parts: Vec<&str> = history.split(',').collect();
                let mut total = history.len() + old.len() + 1;
                let mut start = 0;
                while total > MAX_REV_HISTORY_CHARS && start < parts.len() {
                    total -= parts[start].len() + 1;
                    start += 1;
                }
                if total <= MAX_REV_HISTORY_CHARS {
                    let mut kept: Vec<&str> = parts.split_off(start);
                    kept.push(&old);
                    ann.insert(REVISION_HISTORY.into(), kept.join(","));
                }
            }
        }
    }
    if !exists && set_replicas_annotations(rs, replicas(d), replicas(d) + max_surge(d)) {
        changed = true;
    }
    changed
}

/// Drops nulls, empty maps and empty lists (Go's semantic equality treats nil and empty alike).
fn normalize(v: &Value) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::Object(m) => {
            let out: serde_json::Map<String, Value> = m
                .iter()
                .filter_map(|(k, v)| normalize(v).map(|v| (k.clone(), v)))
                .collect();
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Value::Array(a) => {
            let out: Vec<Value> = a
                .iter()
                .map(|v| normalize(v).unwrap_or(Value::Null))
                .collect();
            (!out.is_empty()).then_some(Value::Array(out))
        }
        other => Some(other.clone()),
    }
}

fn template_without_hash(t: &PodTemplateSpec) -> Option<Value> {
    let mut t = t.clone();
    if let Some(labels) = t.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.remove(POD_TEMPLATE_HASH);
    }
    serde_json::to_value(&t).ok().as_ref().and_then(normalize)
}

/// Upstream's EqualIgnoreHash: the templates are equal but for the pod-template-hash label.
pub fn equal_ignore_hash(a: &PodTemplateSpec, b: &PodTemplateSpec) -> bool {
    template_without_hash(a) == template_without_hash(b)
}

/// Upstream's NewRSNewReplicas: how large the new replica set may be now.
pub fn new_rs_new_replicas(d: &Deployment, all: &[&ReplicaSet], new_rs: &ReplicaSet) -> i32 {
    if !is_rolling(d) {
        return replicas(d);
    }
    let current: i32 = all.iter().map(|r| rs_replicas(r)).sum();
    let max_total = replicas(d) + max_surge(d);
    if current >= max_total {
        return rs_replicas(new_rs);
    }
    let up = (max_total - current).min(replicas(d) - rs_replicas(new_rs));
    rs_replicas(new_rs) + up
}

/// Upstream's getReplicaSetFraction: the RS's share of a resize, from its `max-replicas`
/// annotation (the deployment's size when it was last scaled).
fn rs_fraction(rs: &ReplicaSet, d: &Deployment) -> i32 {
    if replicas(d) == 0 {
        return -rs_replicas(rs);
    }
    let max_now = replicas(d) + max_surge(d);
    let before = match annotation_i32(rs, MAX_REPLICAS) {
        Some(v) if v != 0 => v,
        _ => d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0),
    };
    if before == 0 {
        return 0;
    }
    let size = f64::from(rs_replicas(rs)) * f64::from(max_now) / f64::from(before);
    size.round() as i32 - rs_replicas(rs)
}

/// Upstream's GetProportion: the RS's share, capped at what is left to add or remove.
pub fn proportion(rs: &ReplicaSet, d: &Deployment, to_add: i32, added: i32) -> i32 {
    if rs_replicas(rs) == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = rs_fraction(rs, d);
    let allowed = to_add - added;
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

/// The new sizes of `active` replica sets (already sorted as upstream: by size, newer first
/// when growing, older first when shrinking) for a deployment resized mid-rollout.
pub fn proportional_sizes(d: &Deployment, active: &[&ReplicaSet]) -> Vec<i32> {
    let current: i32 = active.iter().map(|r| rs_replicas(r)).sum();
    let allowed = if replicas(d) > 0 {
        replicas(d) + max_surge(d)
    } else {
        0
    };
    let to_add = allowed - current;
    let mut added = 0;
    let mut sizes: Vec<i32> = Vec::with_capacity(active.len());
    for rs in active {
        if to_add != 0 {
            let p = proportion(rs, d, to_add, added);
            sizes.push(rs_replicas(rs) + p);
            added += p;
        } else {
            sizes.push(rs_replicas(rs));
        }
    }
    if to_add != 0
        && let Some(first) = sizes.first_mut()
    {
        *first = (*first + to_add - added).max(0);
    }
    sizes
}

pub fn now() -> Time {
    let t = jiff::Timestamp::now();
    Time(jiff::Timestamp::from_second(t.as_second()).unwrap_or(t))
}

pub fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> DeploymentCondition {
    let t = now();
    DeploymentCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_update_time: Some(t.clone()),
        last_transition_time: Some(t),
    }
}

pub fn get_condition<'a>(s: &'a DeploymentStatus, type_: &str) -> Option<&'a DeploymentCondition> {
    s.conditions.as_ref()?.iter().find(|c| c.type_ == type_)
}

/// Upstream's SetDeploymentCondition: same status and reason → nothing; same status → keep the
/// transition time.
pub fn set_condition(s: &mut DeploymentStatus, mut c: DeploymentCondition) {
    if let Some(cur) = get_condition(s, &c.type_) {
        if cur.status == c.status && cur.reason == c.reason {
            return;
        }
        if cur.status == c.status {
            c.last_transition_time = cur.last_transition_time.clone();
        }
    }
    let conds = s.conditions.get_or_insert_with(Vec::new);
    conds.retain(|x| x.type_ != c.type_);
    conds.push(c);
}

pub fn remove_condition(s: &mut DeploymentStatus, type_: &str) {
    if let Some(c) = s.conditions.as_mut() {
        c.retain(|x| x.type_ != type_);
        if c.is_empty() {
            s.conditions = None;
        }
    }
}

pub fn progress_deadline(d: &Deployment) -> Option<i32> {
    d.spec
        .as_ref()
        .and_then(|s| s.progress_deadline_seconds)
        .filter(|v| *v != i32::MAX)
}

fn nonzero(n: i32) -> Option<i32> {
    (n != 0).then_some(n)
}

/// Upstream's calculateStatus: counts over the replica sets and the `Available` condition.
pub fn calculate_status(
    d: &Deployment,
    all: &[&ReplicaSet],
    new_rs: Option<&ReplicaSet>,
) -> DeploymentStatus {
    let available: i32 = all.iter().map(|r| rs_available(r)).sum();
    let total: i32 = all.iter().map(|r| rs_replicas(r)).sum();
    let old = d.status.clone().unwrap_or_default();
    let mut s = DeploymentStatus {
        observed_generation: d.metadata.generation.filter(|g| *g != 0),
        replicas: nonzero(all.iter().map(|r| rs_status_replicas(r)).sum()),
        updated_replicas: nonzero(new_rs.map_or(0, rs_status_replicas)),
        ready_replicas: nonzero(all.iter().map(|r| rs_ready(r)).sum()),
        available_replicas: nonzero(available),
        unavailable_replicas: nonzero((total - available).max(0)),
        collision_count: old.collision_count,
        conditions: old.conditions.clone(),
        ..Default::default()
    };
    if available >= replicas(d) - max_unavailable(d) {
        set_condition(
            &mut s,
            new_condition(
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
            ),
        );
    } else {
        set_condition(
            &mut s,
            new_condition(
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            ),
        );
    }
    s
}

/// Upstream's DeploymentComplete.
pub fn deployment_complete(d: &Deployment, s: &DeploymentStatus) -> bool {
    let want = replicas(d);
    s.updated_replicas.unwrap_or(0) == want
        && s.replicas.unwrap_or(0) == want
        && s.available_replicas.unwrap_or(0) == want
        && s.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0)
}

/// Upstream's DeploymentProgressing: more updated, fewer old, more ready or more available.
pub fn deployment_progressing(d: &Deployment, s: &DeploymentStatus) -> bool {
    let old = d.status.clone().unwrap_or_default();
    let g = |v: Option<i32>| v.unwrap_or(0);
    let new_old = g(s.replicas) - g(s.updated_replicas);
    let old_old = g(old.replicas) - g(old.updated_replicas);
    g(s.updated_replicas) > g(old.updated_replicas)
        || new_old < old_old
        || g(s.ready_replicas) > g(old.ready_replicas)
        || g(s.available_replicas) > g(old.available_replicas)
}

/// Upstream's DeploymentTimedOut: no progress for progressDeadlineSeconds since the
/// Progressing condition was last updated.
pub fn deployment_timed_out(d: &Deployment, s: &DeploymentStatus, now: jiff::Timestamp) -> bool {
    let Some(deadline) = progress_deadline(d) else {
        return false;
    };
    let Some(c) = get_condition(s, "Progressing") else {
        return false;
    };
    match c.reason.as_deref() {
        Some(NEW_RS_AVAILABLE_REASON) => return false,
        Some(TIMED_OUT_REASON) => return true,
        _ => {}
    }
    let Some(from) = c.last_update_time.as_ref() else {
        return false;
    };
    from.0
        .checked_add(jiff::SignedDuration::from_secs(i64::from(deadline)))
        .is_ok_and(|t| t < now)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ios(s: &str) -> IntOrString {
        match s.parse::<i32>() {
            Ok(i) => IntOrString::Int(i),
            Err(_) => IntOrString::String(s.into()),
        }
    }

    #[test]
    fn fenceposts_as_upstream_table() {
        // (maxSurge, maxUnavailable, desired) → (surge, unavailable) or error.
        type Case = (
            Option<&'static str>,
            Option<&'static str>,
            i32,
            Option<(i32, i32)>,
        );
        let cases: &[Case] = &[
            (Some("0%"), Some("0%"), 0, Some((0, 1))),
            (Some("39%"), Some("39%"), 10, Some((4, 3))),
            (Some("oops"), Some("39%"), 10, None),
            (Some("55%"), Some("urg"), 10, None),
            (None, Some("39%"), 10, Some((0, 3))),
            (Some("39%"), None, 10, Some((4, 0))),
            (None, None, 10, Some((0, 1))),
            (Some("25%"), Some("25%"), 3, Some((1, 0))),
            (Some("25%"), Some("25%"), 4, Some((1, 1))),
            (Some("1"), Some("0"), 3, Some((1, 0))),
            (Some("0"), Some("0"), 3, Some((0, 1))),
            (Some("100%"), Some("100%"), 5, Some((5, 5))),
            (Some("1%"), Some("99%"), 1, Some((1, 0))),
        ];
        for (surge, unavailable, desired, want) in cases {
            let (s, u) = (surge.map(ios), unavailable.map(ios));
            let got = resolve_fenceposts(s.as_ref(), u.as_ref(), *desired).ok();
            assert_eq!(got, *want, "{surge:?} {unavailable:?} {desired}");
        }
    }

    fn deployment(replicas: i32, surge: &str, unavailable: &str) -> Deployment {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "ns", "generation": 1},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": ios(surge), "maxUnavailable": ios(unavailable)}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
        }))
        .expect("deployment")
    }

    fn rs(name: &str, replicas: i32, max_replicas: Option<i32>) -> ReplicaSet {
        let ann = max_replicas.map(|m| serde_json::json!({MAX_REPLICAS: m.to_string()}));
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "annotations": ann},
            "spec": {"replicas": replicas, "selector": {}},
        }))
        .expect("rs")
    }

    #[test]
    fn max_unavailable_is_capped_and_zero_for_zero_replicas() {
        assert_eq!(max_unavailable(&deployment(2, "0", "5")), 2);
        assert_eq!(max_unavailable(&deployment(0, "0", "5")), 0);
        assert_eq!(max_surge(&deployment(10, "25%", "25%")), 3);
        assert_eq!(max_unavailable(&deployment(10, "25%", "25%")), 2);
    }

    #[test]
    fn new_rs_grows_within_surge() {
        let d = deployment(10, "3", "2");
        let (old, new) = (rs("old", 10, None), rs("new", 0, None));
        assert_eq!(new_rs_new_replicas(&d, &[&old, &new], &new), 3);
        let (old, new) = (rs("old", 8, None), rs("new", 3, None));
        assert_eq!(new_rs_new_replicas(&d, &[&old, &new], &new), 5);
        let (old, new) = (rs("old", 10, None), rs("new", 3, None));
        assert_eq!(
            new_rs_new_replicas(&d, &[&old, &new], &new),
            3,
            "at max surge"
        );
    }

    #[test]
    fn proportional_scaling_as_upstream() {
        // Deployment 10 (surge 3) mid-rollout, scaled to 20 (surge 5): 13 → 25.
        let d = deployment(20, "25%", "25%");
        let new = rs("new", 5, Some(13));
        let old = rs("old", 8, Some(13));
        // Growing: larger first (old, 8), then new.
        let sizes = proportional_sizes(&d, &[&old, &new]);
        assert_eq!(sizes.iter().sum::<i32>(), 25);
        assert_eq!(sizes, vec![15, 10]);
        // Shrinking 20 → 5 (surge 2): 25 → 7, larger first.
        let d = deployment(5, "25%", "25%");
        let old = rs("old", 15, Some(25));
        let new = rs("new", 10, Some(25));
        let sizes = proportional_sizes(&d, &[&old, &new]);
        assert_eq!(sizes, vec![4, 3]);
        // Scaling to zero takes every replica set to zero.
        let d = deployment(0, "25%", "25%");
        assert_eq!(proportional_sizes(&d, &[&old, &new]), vec![0, 0]);
        // Leftovers go to the first (largest).
        let d = deployment(11, "0", "1");
        let a = rs("a", 5, Some(10));
        let b = rs("b", 5, Some(10));
        assert_eq!(proportional_sizes(&d, &[&a, &b]), vec![6, 5]);
    }

    #[test]
    fn equal_ignoring_hash_and_empty_maps() {
        let d = deployment(1, "1", "0");
        let t = d.spec.as_ref().expect("spec").template.clone();
        let mut with_hash = t.clone();
        with_hash
            .metadata
            .get_or_insert_with(Default::default)
            .labels
            .get_or_insert_with(Default::default)
            .insert(POD_TEMPLATE_HASH.into(), "abc".into());
        assert!(equal_ignore_hash(&t, &with_hash));
        let mut other = t.clone();
        if let Some(s) = other.spec.as_mut() {
            s.containers[0].image = Some("nginx:2".into());
        }
        assert!(!equal_ignore_hash(&t, &other));
    }

    #[test]
    fn revision_annotations_and_history() {
        let d = deployment(3, "1", "0");
        let mut r = rs("a", 0, None);
        assert!(set_new_rs_annotations(&d, &mut r, 1, false));
        let ann = r.metadata.annotations.clone().expect("annotations");
        assert_eq!(ann.get(REVISION).map(String::as_str), Some("1"));
        assert_eq!(ann.get(DESIRED_REPLICAS).map(String::as_str), Some("3"));
        assert_eq!(ann.get(MAX_REPLICAS).map(String::as_str), Some("4"));
        assert_eq!(ann.get(REVISION_HISTORY), None);
        // Rolled back to: the old revision goes into the history.
        assert!(set_new_rs_annotations(&d, &mut r, 3, true));
        assert!(set_new_rs_annotations(&d, &mut r, 5, true));
        let ann = r.metadata.annotations.clone().expect("annotations");
        assert_eq!(ann.get(REVISION).map(String::as_str), Some("5"));
        assert_eq!(ann.get(REVISION_HISTORY).map(String::as_str), Some("1,3"));
        assert!(
            !set_new_rs_annotations(&d, &mut r, 4, true),
            "never lowered"
        );
    }

    #[test]
    fn status_and_availability() {
        let d = deployment(3, "1", "0");
        let mut new = rs("new", 3, None);
        new.status = serde_json::from_value(
            serde_json::json!({"replicas": 3, "readyReplicas": 3, "availableReplicas": 2}),
        )
        .ok();
        let mut old = rs("old", 1, None);
        old.status = serde_json::from_value(
            serde_json::json!({"replicas": 1, "readyReplicas": 1, "availableReplicas": 1}),
        )
        .ok();
        let s = calculate_status(&d, &[&old, &new], Some(&new));
        assert_eq!(s.replicas, Some(4));
        assert_eq!(s.updated_replicas, Some(3));
        assert_eq!(s.ready_replicas, Some(4));
        assert_eq!(s.available_replicas, Some(3));
        assert_eq!(s.unavailable_replicas, Some(1));
        let c = get_condition(&s, "Available").expect("available");
        assert_eq!(
            (c.status.as_str(), c.reason.as_deref()),
            ("True", Some("MinimumReplicasAvailable"))
        );
        assert!(!deployment_complete(&d, &s));
        new.status =
            serde_json::from_value(serde_json::json!({"replicas": 3, "availableReplicas": 1})).ok();
        let s = calculate_status(&d, &[&new], Some(&new));
        let c = get_condition(&s, "Available").expect("available");
        assert_eq!(c.reason.as_deref(), Some("MinimumReplicasUnavailable"));
        assert_eq!(
            c.message.as_deref(),
            Some("Deployment does not have minimum availability.")
        );
    }
}

//! ClusterRole aggregation (upstream's clusterrole-aggregation controller): a ClusterRole with
//! `aggregationRule.clusterRoleSelectors` gets the union of the rules of the other ClusterRoles
//! whose labels match, computed here to a fixpoint so chains (view -> edit -> admin) settle at once.

use std::borrow::Borrow;
use std::collections::HashMap;

use k1s_apimachinery::selector::LabelSelector;
use serde_json::Value;

use super::rule::{PolicyRule, rules_of, rules_to_json};

struct Role<'a> {
    name: &'a str,
    labels: Option<&'a Value>,
    /// `Some` for an aggregated role whose selectors all parse.
    selectors: Option<Vec<LabelSelector>>,
}

fn name_of(obj: &Value) -> &str {
    obj.get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Selectors of an aggregated ClusterRole; `None` when it has no aggregationRule or one of its
/// selectors does not parse (upstream then leaves the role alone).
fn selectors_of(obj: &Value) -> Option<Vec<LabelSelector>> {
    let rule = obj.get("aggregationRule").filter(|r| r.is_object())?;
    let selectors = rule
        .get("clusterRoleSelectors")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    selectors
        .iter()
        .map(|s| LabelSelector::from_json(s).ok())
        .collect()
}

/// For every ClusterRole with an aggregationRule, its name and the rules it should have: the
/// union (first occurrence wins, roles visited by name per selector, itself skipped) of the
/// rules of the ClusterRoles its selectors match. Aggregated roles feeding other aggregated
/// roles are resolved to a fixpoint. Sorted by name.
pub fn aggregate<V: Borrow<Value>>(cluster_roles: &[V]) -> Vec<(String, Vec<PolicyRule>)> {
    let mut by_name: HashMap<&str, &Value> = HashMap::new();
    for obj in cluster_roles {
        let obj = obj.borrow();
        let name = name_of(obj);
        if !name.is_empty() {
            by_name.insert(name, obj);
        }
    }
    let mut roles: Vec<Role<'_>> = by_name
        .iter()
        .map(|(name, obj)| Role {
            name,
            labels: obj.get("metadata").and_then(|m| m.get("labels")),
            selectors: selectors_of(obj),
        })
        .collect();
    roles.sort_by(|a, b| a.name.cmp(b.name));
    let mut current: HashMap<&str, Vec<PolicyRule>> = by_name
        .iter()
        .map(|(name, obj)| (*name, rules_of(obj)))
        .collect();

    // Each pass can only propagate one more level; bound the passes so a cycle cannot spin.
    for _ in 0..=roles.len() {
        let mut changed = false;
        for role in &roles {
            let Some(selectors) = &role.selectors else {
                continue;
            };
            let mut rules: Vec<PolicyRule> = Vec::new();
            for selector in selectors {
                for other in &roles {
                    if other.name == role.name || !selector.matches_json(other.labels) {
                        continue;
                    }
                    for rule in current
                        .get(other.name)
                        .map(Vec::as_slice)
                        .unwrap_or_default()
                    {
                        if !rules.contains(rule) {
                            rules.push(rule.clone());
                        }
                    }
                }
            }
            if current.get(role.name) != Some(&rules) {
                current.insert(role.name, rules);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }

    roles
        .iter()
        .filter(|r| r.selectors.is_some())
        .map(|r| {
            let rules = current.remove(r.name).unwrap_or_default();
            (r.name.to_owned(), rules)
        })
        .collect()
}

/// The aggregated ClusterRoles whose stored rules differ from what [`aggregate`] computes, as
/// updated objects (the stored object with `rules` replaced), ready to be written back.
pub fn aggregation_updates<V: Borrow<Value>>(cluster_roles: &[V]) -> Vec<Value> {
    let wanted: HashMap<String, Vec<PolicyRule>> = aggregate(cluster_roles).into_iter().collect();
    let mut out = Vec::new();
    for obj in cluster_roles {
        let obj = obj.borrow();
        let Some(rules) = wanted.get(name_of(obj)) else {
            continue;
        };
        if rules_of(obj) != *rules {
            let mut updated = obj.clone();
            if let Some(map) = updated.as_object_mut() {
                map.insert("rules".into(), rules_to_json(rules));
            }
            out.push(updated);
        }
    }
    out
}

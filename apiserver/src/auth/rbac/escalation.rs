//! Privilege-escalation prevention for RBAC writes: upstream's `Covers` (policy comparator),
//! `CompactRules`, `ConfirmNoEscalation`, and the `escalate` / `bind` verb shortcuts the role and
//! binding storages apply before it.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use super::authorizer::{RbacAuthorizer, is_privileged};
use super::cache::{RoleRef, aggregate_errors};
use super::rule::{ALL, PolicyRule, go_quote, go_quote_list, rules_of};
use crate::auth::{Attributes, Decision, UserInfo};

/// Upstream `BreakdownRule`: one rule per (group, resource, verb[, name]) and per (url, verb).
pub fn breakdown_rule(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    let one = |s: &String| vec![s.clone()];
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                if rule.resource_names.is_empty() {
                    out.push(PolicyRule {
                        api_groups: one(group),
                        resources: one(resource),
                        verbs: one(verb),
                        ..Default::default()
                    });
                } else {
                    for name in &rule.resource_names {
                        out.push(PolicyRule {
                            api_groups: one(group),
                            resources: one(resource),
                            verbs: one(verb),
                            resource_names: one(name),
                            ..Default::default()
                        });
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                non_resource_urls: one(url),
                verbs: one(verb),
                ..Default::default()
            });
        }
    }
    out
}

fn has(set: &[String], e: &str) -> bool {
    set.iter().any(|s| s == e)
}

fn has_all(set: &[String], contains: &[String]) -> bool {
    contains.iter().all(|c| has(set, c))
}

fn resource_covers_all(set: &[String], covers: &[String]) -> bool {
    if has(set, ALL) || has_all(set, covers) {
        return true;
    }
    covers.iter().all(|path| {
        if has(set, path) {
            return true;
        }
        match path.split_once('/') {
            Some((_, sub)) => has(set, &format!("*/{sub}")),
            None => false,
        }
    })
}

fn non_resource_url_covers(owner: &str, sub: &str) -> bool {
    owner == sub || (owner.ends_with('*') && sub.starts_with(owner.trim_end_matches('*')))
}

fn non_resource_urls_cover_all(set: &[String], covers: &[String]) -> bool {
    covers
        .iter()
        .all(|path| set.iter().any(|owner| non_resource_url_covers(owner, path)))
}

/// Upstream `ruleCovers`: does `owner` cover `sub` (a broken-down rule)?
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, ALL) || has_all(&owner.api_groups, &sub.api_groups);
    let resources = resource_covers_all(&owner.resources, &sub.resources);
    let urls = non_resource_urls_cover_all(&owner.non_resource_urls, &sub.non_resource_urls);
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && urls && names
}

/// Upstream `Covers`: whether `owner` rules cover all of `servant`, and the broken-down servant
/// rules that are not covered.
pub fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let uncovered: Vec<PolicyRule> = servant
        .iter()
        .flat_map(breakdown_rule)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect();
    (uncovered.is_empty(), uncovered)
}

/// Upstream `CompactRules`: merges rules with one group, one resource, at most one name and
/// nothing else that differ only by verb.
pub fn compact_rules(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut compacted = Vec::new();
    let mut simple: Vec<PolicyRule> = Vec::new();
    let mut index: HashMap<(String, String, Option<String>), usize> = HashMap::new();
    for rule in rules {
        let is_simple = rule.resource_names.len() <= 1
            && rule.non_resource_urls.is_empty()
            && rule.api_groups.len() == 1
            && rule.resources.len() == 1;
        if !is_simple {
            compacted.push(rule);
            continue;
        }
        let key = (
            rule.api_groups[0].clone(),
            rule.resources[0].clone(),
            rule.resource_names.first().cloned(),
        );
        match index.get(&key) {
            Some(&i) => {
                let existing = &mut simple[i];
                for verb in rule.verbs {
                    if !existing.verbs.contains(&verb) {
                        existing.verbs.push(verb);
                    }
                }
            }
            None => {
                index.insert(key, simple.len());
                simple.push(rule);
            }
        }
    }
    compacted.extend(simple);
    compacted
}

/// Rules that can do everything: what setting an `aggregationRule` requires.
pub fn full_authority() -> Vec<PolicyRule> {
    let all = || vec![ALL.to_owned()];
    vec![
        PolicyRule {
            verbs: all(),
            api_groups: all(),
            resources: all(),
            ..Default::default()
        },
        PolicyRule {
            verbs: all(),
            non_resource_urls: all(),
            ..Default::default()
        },
    ]
}

/// The message ClusterRole writes get when the writer may not use an aggregationRule.
pub const AGGREGATION_RULE_FORBIDDEN: &str =
    "must have cluster-admin privileges to use the aggregationRule";

fn has_aggregation_rule(obj: &Value) -> bool {
    obj.get("aggregationRule")
        .and_then(|a| a.get("clusterRoleSelectors"))
        .and_then(Value::as_array)
        .is_some_and(|s| !s.is_empty())
}

/// Upstream `IsOnlyMutatingGCFields`: the update changes only ownerReferences / finalizers
/// (resourceVersion and managedFields are ignored too: they grant nothing).
fn only_mutates_gc_fields(new: &Value, old: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for f in [
                "ownerReferences",
                "finalizers",
                "resourceVersion",
                "managedFields",
            ] {
                meta.remove(f);
            }
        }
        v
    };
    strip(new) == strip(old)
}

impl RbacAuthorizer {
    /// Upstream `ConfirmNoEscalation`: `user` must already hold every permission in `rules`
    /// within `namespace` (empty: cluster-wide). The error is upstream's message; the caller
    /// wraps it in a Forbidden status for the object being written.
    pub fn confirm_no_escalation(
        &self,
        user: &UserInfo,
        namespace: &str,
        rules: &[PolicyRule],
    ) -> Result<(), String> {
        let (owner_rules, errors) = self.policy_rules_for(user, namespace);
        let (covered, missing) = covers(&owner_rules, rules);
        if covered {
            return Ok(());
        }
        let descriptions: BTreeSet<String> = compact_rules(missing)
            .iter()
            .map(PolicyRule::compact_string)
            .collect();
        let mut msg = format!(
            "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
            go_quote(&user.name),
            go_quote_list(&user.effective_groups()),
            descriptions.into_iter().collect::<Vec<_>>().join("\n")
        );
        if !errors.is_empty() {
            msg.push_str(&format!(
                "; resolution errors: [{}]",
                aggregate_errors(&errors)
            ));
        }
        Err(msg)
    }

    /// Upstream `RoleEscalationAuthorized`: may `user` `escalate` this role (`resource` is
    /// `roles` or `clusterroles`)?
    pub fn role_escalation_authorized(
        &self,
        user: &UserInfo,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> bool {
        if resource != "roles" && resource != "clusterroles" {
            return false;
        }
        let attrs = Attributes {
            user: user.clone(),
            verb: "escalate".into(),
            is_resource_request: true,
            namespace: namespace.into(),
            api_group: super::cache::RBAC_GROUP.into(),
            api_version: "*".into(),
            resource: resource.into(),
            name: name.into(),
            ..Default::default()
        };
        matches!(self.authorize(&attrs), Decision::Allow(_))
    }

    /// Upstream `BindingAuthorized`: may `user` `bind` the role a binding in
    /// `binding_namespace` (empty for a ClusterRoleBinding) refers to?
    pub fn binding_authorized(
        &self,
        user: &UserInfo,
        role_ref: &RoleRef,
        binding_namespace: &str,
    ) -> bool {
        let resource = match role_ref.kind.as_str() {
            "ClusterRole" => "clusterroles",
            "Role" => "roles",
            _ => return false,
        };
        let attrs = Attributes {
            user: user.clone(),
            verb: "bind".into(),
            is_resource_request: true,
            namespace: binding_namespace.into(),
            api_group: role_ref.api_group.clone(),
            resource: resource.into(),
            name: role_ref.name.clone(),
            ..Default::default()
        };
        matches!(self.authorize(&attrs), Decision::Allow(_))
    }

    /// The whole check the Role / ClusterRole storage makes on create (`old` = None) and
    /// update: system:masters or the `escalate` verb pass; otherwise the new rules must be
    /// held, and an aggregationRule (set now or before) needs full authority. `Err` is the
    /// Forbidden cause for `<resource> "<name>" is forbidden: <cause>`.
    pub fn check_role_write(
        &self,
        user: &UserInfo,
        resource: &str,
        namespace: &str,
        new: &Value,
        old: Option<&Value>,
    ) -> Result<(), String> {
        let name = new
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if is_privileged(user) || self.role_escalation_authorized(user, resource, namespace, name) {
            return Ok(());
        }
        if let Some(old) = old
            && only_mutates_gc_fields(new, old)
        {
            return Ok(());
        }
        self.confirm_no_escalation(user, namespace, &rules_of(new))?;
        let aggregated = resource == "clusterroles"
            && (has_aggregation_rule(new) || old.is_some_and(has_aggregation_rule));
        if aggregated
            && self
                .confirm_no_escalation(user, namespace, &full_authority())
                .is_err()
        {
            return Err(AGGREGATION_RULE_FORBIDDEN.into());
        }
        Ok(())
    }

    /// The whole check the RoleBinding / ClusterRoleBinding storage makes on create
    /// (`old` = None) and update: system:masters or the `bind` verb on the referenced role
    /// pass; otherwise the user must hold every permission of the referenced role in
    /// `namespace` (empty for a ClusterRoleBinding).
    pub fn check_binding_write(
        &self,
        user: &UserInfo,
        namespace: &str,
        new: &Value,
        old: Option<&Value>,
    ) -> Result<(), String> {
        if let Some(old) = old
            && only_mutates_gc_fields(new, old)
        {
            return Ok(());
        }
        let role_ref = RoleRef::from_json(new.get("roleRef"));
        if is_privileged(user) || self.binding_authorized(user, &role_ref, namespace) {
            return Ok(());
        }
        let rules = self.role_ref_rules(&role_ref, namespace)?;
        self.confirm_no_escalation(user, namespace, &rules)
    }

    /// The rules a roleRef grants in `namespace`, or the not-found error.
    pub fn role_ref_rules(
        &self,
        role_ref: &RoleRef,
        namespace: &str,
    ) -> Result<Vec<PolicyRule>, String> {
        self.cache()
            .read()
            .role_rules(role_ref, namespace)
            .map(|r| r.rules.clone())
    }
}

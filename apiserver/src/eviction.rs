//! The `pods/eviction` subresource as upstream's EvictionREST: a pod covered by a
//! PodDisruptionBudget is deleted only when the budget allows a disruption, which is then
//! charged to the budget (`disruptionsAllowed` down by one, the pod recorded in
//! `disruptedPods`) before the pod goes; otherwise 429 with the `DisruptionBudget` cause.

use k1s_apimachinery::catalog;
use k1s_apimachinery::selector::LabelSelector;
use k1s_apimachinery::status::{StatusCause, StatusDetails};
use k1s_apimachinery::{ApiError, meta};
use serde_json::Value;

use crate::context::ApiContext;
use crate::registry::{DefaultStrategy, DeleteOptions, ListQuery, Target, WriteOptions};

/// Evicts the pod `name` of `target` (the pods target) as `eviction` asks.
pub async fn evict(
    ctx: &ApiContext,
    target: Target<'_>,
    name: &str,
    eviction: &Value,
    write: &WriteOptions,
) -> Result<(), ApiError> {
    if let Some(n) = meta::name(eviction).filter(|n| !n.is_empty() && *n != name) {
        return Err(ApiError::bad_request(format!(
            "name in URL does not match name in Eviction object: {name} vs {n}"
        )));
    }
    let pod = ctx.registry.get(target, name).await?;
    let delete = DeleteOptions {
        dry_run: write.dry_run,
        precondition_uid: eviction
            .pointer("/deleteOptions/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string),
        grace_period_seconds: eviction
            .pointer("/deleteOptions/gracePeriodSeconds")
            .and_then(Value::as_i64),
        ..Default::default()
    };
    // Upstream's canIgnorePDB: finished, pending or already terminating pods go at once.
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    let terminating = pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null());
    if matches!(phase, Some("Succeeded" | "Failed" | "Pending")) || terminating {
        ctx.registry.delete(target, name, &delete).await?;
        return Ok(());
    }
    let pdb_info = catalog::find("policy", "v1", "poddisruptionbudgets")
        .ok_or_else(|| ApiError::internal("poddisruptionbudgets missing from the catalog"))?;
    let pdb_target = Target {
        info: pdb_info,
        namespace: target.namespace,
    };
    let empty = serde_json::Map::new();
    let labels = pod
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let label_map: std::collections::BTreeMap<String, String> = labels
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    let matching: Vec<Value> = ctx
        .registry
        .list(pdb_target, &ListQuery::default())
        .await?
        .items
        .into_iter()
        .filter(|pdb| {
            // An empty or missing selector matches no pod (policy/v1).
            pdb.pointer("/spec/selector")
                .filter(|s| s.as_object().is_some_and(|o| !o.is_empty()))
                .and_then(|s| LabelSelector::from_json(s).ok())
                .is_some_and(|s| s.matches(&label_map))
        })
        .collect();
    if matching.len() > 1 {
        return Err(ApiError::internal(
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        ));
    }
    let Some(pdb) = matching.into_iter().next() else {
        ctx.registry.delete(target, name, &delete).await?;
        return Ok(());
    };
    let pdb_name = meta::name(&pdb).unwrap_or_default().to_string();
    let ready = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
    if !ready {
        let policy = pdb
            .pointer("/spec/unhealthyPodEvictionPolicy")
            .and_then(Value::as_str)
            .unwrap_or("IfHealthyBudget");
        let healthy = int_at(&pdb, "/status/currentHealthy");
        let desired = int_at(&pdb, "/status/desiredHealthy");
        if policy == "AlwaysAllow" || healthy >= desired {
            ctx.registry.delete(target, name, &delete).await?;
            return Ok(());
        }
    }
    // Charge the budget, then delete: a conflict re-reads the budget and checks again.
    ctx.registry
        .update(
            pdb_target,
            &DefaultStrategy,
            &pdb_name,
            Some("status"),
            write,
            |current| {
                check_budget(current, &pdb_name)?;
                let mut next = current.clone();
                let allowed = int_at(current, "/status/disruptionsAllowed");
                next["status"]["disruptionsAllowed"] = Value::from(allowed - 1);
                if !next["status"]["disruptedPods"].is_object() {
                    next["status"]["disruptedPods"] = serde_json::json!({});
                }
                next["status"]["disruptedPods"][name] =
                    Value::String(crate::registry::now_rfc3339());
                Ok(next)
            },
        )
        .await?;
    ctx.registry.delete(target, name, &delete).await?;
    Ok(())
}

fn int_at(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// Upstream's checkAndDecrement refusals.
fn check_budget(pdb: &Value, pdb_name: &str) -> Result<(), ApiError> {
    let generation = int_at(pdb, "/metadata/generation");
    let observed = int_at(pdb, "/status/observedGeneration");
    if observed < generation {
        return Err(budget_refusal(
            429,
            "Cannot evict pod as it would violate the pod's disruption budget.",
            format!("The disruption budget {pdb_name} is still being processed by the server."),
        ));
    }
    let allowed = int_at(pdb, "/status/disruptionsAllowed");
    if allowed < 0 {
        return Err(ApiError::new(
            403,
            k1s_apimachinery::status::Reason::Forbidden,
            "pdb disruptions allowed is negative",
        ));
    }
    if allowed == 0 {
        return Err(budget_refusal(
            429,
            "Cannot evict pod as it would violate the pod's disruption budget.",
            format!(
                "The disruption budget {pdb_name} needs {} healthy pods and has {} currently",
                int_at(pdb, "/status/desiredHealthy"),
                int_at(pdb, "/status/currentHealthy")
            ),
        ));
    }
    Ok(())
}

fn budget_refusal(code: u16, message: &str, cause: String) -> ApiError {
    ApiError::new(
        code,
        k1s_apimachinery::status::Reason::TooManyRequests,
        message,
    )
    .with_details(StatusDetails {
        causes: vec![StatusCause {
            reason: "DisruptionBudget".into(),
            message: cause,
            field: String::new(),
        }],
        ..Default::default()
    })
}

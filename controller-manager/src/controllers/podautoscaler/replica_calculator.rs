//! The replica calculation of resource metrics (upstream `replica_calculator.go`): pods are
//! grouped into ready, unready (cpu only), missing metrics and ignored, then the usage ratio
//! against the target gives the replica count, with upstream's tolerance and its rules for
//! filling in missing and unready pods conservatively.

use std::collections::{BTreeMap, BTreeSet};

/// Upstream's default tolerance (`--horizontal-pod-autoscaler-tolerance`).
pub const TOLERANCE: f64 = 0.1;
/// `--horizontal-pod-autoscaler-cpu-initialization-period` (5 minutes).
pub const CPU_INITIALIZATION_PERIOD_SECS: i64 = 300;
/// `--horizontal-pod-autoscaler-initial-readiness-delay` (30 seconds).
pub const INITIAL_READINESS_DELAY_SECS: i64 = 30;

/// What the calculation reads of one pod.
#[derive(Debug, Clone, PartialEq)]
pub struct PodInfo {
    pub name: String,
    pub phase: String,
    pub deleting: bool,
    /// The Ready condition: (status is True, lastTransitionTime).
    pub ready: Option<(bool, jiff::Timestamp)>,
    pub start_time: Option<jiff::Timestamp>,
    /// Sum of the selected containers' requests in milli-units; `Err(container)` names the
    /// first container without one.
    pub request: Result<i64, String>,
}

/// One pod's sample from metrics.k8s.io (milli-units).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PodMetric {
    pub value: i64,
    pub timestamp: jiff::Timestamp,
    pub window_secs: i64,
}

#[derive(Debug, Default)]
struct Groups {
    ready: usize,
    unready: BTreeSet<String>,
    missing: BTreeSet<String>,
    ignored: BTreeSet<String>,
}

/// Upstream's `groupPods`.
fn group_pods(
    pods: &[PodInfo],
    metrics: &BTreeMap<String, PodMetric>,
    cpu: bool,
    now: jiff::Timestamp,
) -> Groups {
    let mut g = Groups::default();
    let secs = jiff::SignedDuration::from_secs;
    for pod in pods {
        if pod.deleting || pod.phase == "Failed" {
            g.ignored.insert(pod.name.clone());
            continue;
        }
        if pod.phase == "Pending" {
            g.unready.insert(pod.name.clone());
            continue;
        }
        let Some(metric) = metrics.get(&pod.name) else {
            g.missing.insert(pod.name.clone());
            continue;
        };
        if cpu {
            let unready = match (pod.ready, pod.start_time) {
                (Some((ready, transition)), Some(start)) => {
                    let in_init = start
                        .checked_add(secs(CPU_INITIALIZATION_PERIOD_SECS))
                        .is_ok_and(|t| t > now);
                    if in_init {
                        // Unready, or no full window of samples since it became ready.
                        !ready
                            || transition
                                .checked_add(secs(metric.window_secs))
                                .is_ok_and(|t| metric.timestamp < t)
                    } else {
                        // Unready and never ready since it started.
                        !ready
                            && start
                                .checked_add(secs(INITIAL_READINESS_DELAY_SECS))
                                .is_ok_and(|t| t > transition)
                    }
                }
                _ => true,
            };
            if unready {
                g.unready.insert(pod.name.clone());
                continue;
            }
        }
        g.ready += 1;
    }
    g
}

/// Upstream's `GetResourceUtilizationRatio`: (ratio, utilization %, average raw usage).
fn utilization_ratio(
    metrics: &BTreeMap<String, i64>,
    requests: &BTreeMap<String, i64>,
    target: i32,
) -> Result<(f64, i32, i64), String> {
    let (mut total, mut req_total, mut n) = (0i64, 0i64, 0i64);
    for (pod, value) in metrics {
        if let Some(r) = requests.get(pod) {
            total += value;
            req_total += r;
            n += 1;
        }
    }
    if req_total == 0 {
        return Err("no metrics returned matched known pods".into());
    }
    let utilization = i32::try_from(total.saturating_mul(100) / req_total).unwrap_or(i32::MAX);
    Ok((
        f64::from(utilization) / f64::from(target),
        utilization,
        total / n,
    ))
}

/// Upstream's `GetMetricUsageRatio`: (ratio, average usage).
fn usage_ratio(metrics: &BTreeMap<String, i64>, target: i64) -> (f64, i64) {
    let n = i64::try_from(metrics.len()).unwrap_or(i64::MAX).max(1);
    let avg = metrics.values().sum::<i64>() / n;
    (avg as f64 / target as f64, avg)
}

fn ceil_replicas(ratio: f64, n: usize) -> i32 {
    let v = (ratio * n as f64).ceil();
    if v >= f64::from(i32::MAX) {
        i32::MAX
    } else {
        v as i32
    }
}

/// What the calculation found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recommendation {
    pub replicas: i32,
    /// Utilization in percent of requests (Utilization targets only).
    pub utilization: Option<i32>,
    /// Average raw usage per pod in milli-units.
    pub raw: i64,
}

/// The target of a resource metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// Average utilization in percent of the pods' requests.
    Utilization(i32),
    /// Average usage per pod in milli-units.
    AverageValue(i64),
}

/// Upstream's `GetResourceReplicas` / `GetRawResourceReplicas` after the metrics are fetched.
pub fn resource_replicas(
    current: i32,
    target: Target,
    cpu: bool,
    pods: &[PodInfo],
    metrics: &BTreeMap<String, PodMetric>,
    now: jiff::Timestamp,
    tolerance: f64,
) -> Result<Recommendation, String> {
    if pods.is_empty() {
        return Err("no pods returned by selector while calculating replica count".into());
    }
    let groups = group_pods(pods, metrics, cpu, now);
    let mut values: BTreeMap<String, i64> = metrics
        .iter()
        .filter(|(p, _)| !groups.ignored.contains(*p) && !groups.unready.contains(*p))
        .map(|(p, m)| (p.clone(), m.value))
        .collect();
    // Metrics of pods the selector no longer matches are not counted either.
    values.retain(|p, _| pods.iter().any(|pod| &pod.name == p));
    if values.is_empty() {
        return Err("did not receive metrics for targeted pods (pods might be unready)".into());
    }
    let within = |r: f64| (1.0 - r).abs() <= tolerance;
    match target {
        Target::Utilization(target_util) => {
            let mut requests = BTreeMap::new();
            for p in pods {
                match &p.request {
                    Ok(r) => {
                        requests.insert(p.name.clone(), *r);
                    }
                    Err(msg) => return Err(msg.clone()),
                }
            }
            let (ratio, util, raw) = utilization_ratio(&values, &requests, target_util)?;
            let keep = Recommendation {
                replicas: current,
                utilization: Some(util),
                raw,
            };
            let scale_up_with_unready = !groups.unready.is_empty() && ratio > 1.0;
            if !scale_up_with_unready && groups.missing.is_empty() {
                if within(ratio) {
                    return Ok(keep);
                }
                return Ok(Recommendation {
                    replicas: ceil_replicas(ratio, groups.ready),
                    ..keep
                });
            }
            if !groups.missing.is_empty() {
                let fallback = i64::from(target_util.max(100));
                // A scale-down counts them at the target (at least their request), a scale-up
                // at zero; exactly on target leaves them out.
                for pod in &groups.missing {
                    if ratio < 1.0 {
                        let r = requests.get(pod).copied().unwrap_or(0);
                        values.insert(pod.clone(), r * fallback / 100);
                    } else if ratio > 1.0 {
                        values.insert(pod.clone(), 0);
                    }
                }
            }
            if scale_up_with_unready {
                for pod in &groups.unready {
                    values.insert(pod.clone(), 0);
                }
            }
            let (new_ratio, _, _) = utilization_ratio(&values, &requests, target_util)?;
            if within(new_ratio)
                || (ratio < 1.0 && new_ratio > 1.0)
                || (ratio > 1.0 && new_ratio < 1.0)
            {
                return Ok(keep);
            }
            let replicas = ceil_replicas(new_ratio, values.len());
            if (new_ratio < 1.0 && replicas > current) || (new_ratio > 1.0 && replicas < current) {
                return Ok(keep);
            }
            Ok(Recommendation { replicas, ..keep })
        }
        Target::AverageValue(target_value) => {
            let (ratio, avg) = usage_ratio(&values, target_value);
            let keep = Recommendation {
                replicas: current,
                utilization: None,
                raw: avg,
            };
            let scale_up_with_unready = !groups.unready.is_empty() && ratio > 1.0;
            if !scale_up_with_unready && groups.missing.is_empty() {
                if within(ratio) {
                    return Ok(keep);
                }
                return Ok(Recommendation {
                    replicas: ceil_replicas(ratio, groups.ready),
                    ..keep
                });
            }
            for pod in &groups.missing {
                if ratio < 1.0 {
                    values.insert(pod.clone(), target_value);
                } else if ratio > 1.0 {
                    values.insert(pod.clone(), 0);
                }
            }
            if scale_up_with_unready {
                for pod in &groups.unready {
                    values.insert(pod.clone(), 0);
                }
            }
            let (new_ratio, _) = usage_ratio(&values, target_value);
            if within(new_ratio)
                || (ratio < 1.0 && new_ratio > 1.0)
                || (ratio > 1.0 && new_ratio < 1.0)
            {
                return Ok(keep);
            }
            let replicas = ceil_replicas(new_ratio, values.len());
            if (new_ratio < 1.0 && replicas > current) || (new_ratio > 1.0 && replicas < current) {
                return Ok(keep);
            }
            Ok(Recommendation { replicas, ..keep })
        }
    }
}

#[cfg(test)]
mod tests;

//! The horizontal pod autoscaler (upstream `pkg/controller/podautoscaler/horizontal.go`):
//! every sync period each autoscaling/v2 HPA reads its target's `/scale`, computes a replica
//! count from resource metrics (metrics.k8s.io, cpu/memory, Utilization or AverageValue), bounds
//! it by stabilization, scaling policies (or the legacy scale-up limit when `behavior` is unset)
//! and min/max replicas, writes `/scale` and reports status, conditions and events as upstream.

mod replica_calculator;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::autoscaling::v2::{
    ContainerResourceMetricStatus, HPAScalingPolicy, HPAScalingRules, HorizontalPodAutoscaler,
    HorizontalPodAutoscalerCondition, HorizontalPodAutoscalerStatus, MetricSpec, MetricStatus,
    MetricValueStatus, ResourceMetricStatus,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use kube::core::GroupVersionKind;

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_not_found};
use crate::events::{EventRecorder, object_reference};
use crate::informer::{Delta, Store, key_of};
use replica_calculator::{PodInfo, PodMetric, TOLERANCE, Target, resource_replicas};

/// `--horizontal-pod-autoscaler-sync-period`.
pub const DEFAULT_SYNC_PERIOD: Duration = Duration::from_secs(15);
/// `--horizontal-pod-autoscaler-downscale-stabilization`.
pub const DEFAULT_DOWNSCALE_STABILIZATION: Duration = Duration::from_secs(300);
/// The legacy scale-up limit: max(2 * current, 4).
const SCALE_UP_LIMIT_FACTOR: f64 = 2.0;
const SCALE_UP_LIMIT_MINIMUM: f64 = 4.0;

#[derive(Debug, Clone, Copy)]
struct Recommendation {
    replicas: i32,
    at: jiff::Timestamp,
}

#[derive(Debug, Clone, Copy)]
struct ScaleEvent {
    change: i32,
    at: jiff::Timestamp,
    outdated: bool,
}

#[derive(Default)]
struct History {
    recommendations: HashMap<String, Vec<Recommendation>>,
    scale_up: HashMap<String, Vec<ScaleEvent>>,
    scale_down: HashMap<String, Vec<ScaleEvent>>,
}

struct Hpa {
    client: Client,
    hpas: Arc<Store<HorizontalPodAutoscaler>>,
    pods: Arc<Store<Pod>>,
    recorder: EventRecorder,
    sync_period: Duration,
    downscale_window: Duration,
    history: Mutex<History>,
}

pub fn start(ctx: ControllerContext) {
    let hpas = ctx.factory.informer::<HorizontalPodAutoscaler>();
    let pods = ctx.factory.informer::<Pod>();
    let queue = ctx.queue();
    {
        let queue = queue.clone();
        hpas.add_handler(move |d: &Delta<HorizontalPodAutoscaler>| match d {
            // Status writes (ours) do not need another pass; the sync period brings the next.
            Delta::Updated { old, new } if old.spec == new.spec => {}
            _ => queue.add(key_of(d.object().as_ref())),
        });
    }
    let reconciler = Arc::new(Hpa {
        client: ctx.client.clone(),
        hpas: hpas.store(),
        pods: pods.store(),
        recorder: ctx.recorder.clone(),
        sync_period: ctx.options.hpa_sync_period.unwrap_or(DEFAULT_SYNC_PERIOD),
        downscale_window: ctx
            .options
            .hpa_downscale_stabilization
            .unwrap_or(DEFAULT_DOWNSCALE_STABILIZATION),
        history: Mutex::default(),
    });
    let workers = ctx.workers("horizontal-pod-autoscaler", 5);
    ctx.run_workers(reconciler, queue, workers);
}

impl Reconciler for Hpa {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        let Some(hpa) = self.hpas.get(key) else {
            let mut h = self.history();
            h.recommendations.remove(key);
            h.scale_up.remove(key);
            h.scale_down.remove(key);
            return Ok(Action::Done);
        };
        if hpa.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }
        let result = self.reconcile_hpa(key, (*hpa).clone()).await;
        if let Err(e) = &result {
            tracing::debug!(hpa = key, error = %e, "horizontal pod autoscaler sync failed");
        }
        // Every HPA is looked at once per sync period, whatever happened.
        Ok(Action::RequeueAfter(self.sync_period))
    }
}

fn condition_set(
    hpa: &mut HorizontalPodAutoscaler,
    type_: &str,
    status: bool,
    reason: &str,
    message: String,
) {
    let status_s = if status { "True" } else { "False" };
    let conditions = hpa
        .status
        .get_or_insert_with(Default::default)
        .conditions
        .get_or_insert_with(Vec::new);
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(c) => {
            if c.status != status_s {
                c.last_transition_time = Some(Time(jiff::Timestamp::now()));
            }
            c.status = status_s.into();
            c.reason = Some(reason.into());
            c.message = Some(message);
        }
        None => conditions.push(HorizontalPodAutoscalerCondition {
            type_: type_.into(),
            status: status_s.into(),
            reason: Some(reason.into()),
            message: Some(message),
            last_transition_time: Some(Time(jiff::Timestamp::now())),
        }),
    }
}

/// The resource of a scale target's kind (upstream asks the REST mapper).
fn scale_resource(api_version: &str, kind: &str) -> Result<ApiResource, String> {
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let plural = match (group, kind) {
        ("apps", "Deployment") => "deployments",
        ("apps", "ReplicaSet") => "replicasets",
        ("apps", "StatefulSet") => "statefulsets",
        ("", "ReplicationController") => "replicationcontrollers",
        _ => {
            return Err(format!(
                "no matches for kind \"{kind}\" in group \"{group}\""
            ));
        }
    };
    Ok(ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, kind),
        plural,
    ))
}

/// A metric's outcome: its proposal or the condition that explains why there is none.
struct MetricOutcome {
    replicas: i32,
    name: String,
    status: MetricStatus,
}

struct MetricFailure {
    reason: &'static str,
    message: String,
    status: MetricStatus,
}

impl Hpa {
    fn history(&self) -> std::sync::MutexGuard<'_, History> {
        self.history.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn event(&self, hpa: &HorizontalPodAutoscaler, type_: &str, reason: &str, message: &str) {
        self.recorder
            .event(&object_reference(hpa), type_, reason, message);
    }

    async fn reconcile_hpa(
        &self,
        key: &str,
        mut hpa: HorizontalPodAutoscaler,
    ) -> Result<(), Error> {
        let original_status = hpa.status.clone();
        let ns = hpa.metadata.namespace.clone().unwrap_or_default();
        let spec = hpa.spec.clone().unwrap_or_default();
        let target_ref = &spec.scale_target_ref;
        let reference = format!("{}/{}", target_ref.kind, target_ref.name);
        let api_version = target_ref.api_version.clone().unwrap_or_default();
        let scale = match scale_resource(&api_version, &target_ref.kind) {
            Ok(ar) => {
                let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), &ns, &ar);
                api.get_scale(&target_ref.name)
                    .await
                    .map(|s| (api, s))
                    .map_err(|e| super::replicaset::error_message(&e))
            }
            Err(e) => Err(e),
        };
        let (scale_api, mut scale) = match scale {
            Ok(s) => s,
            Err(e) => {
                condition_set(
                    &mut hpa,
                    "AbleToScale",
                    false,
                    "FailedGetScale",
                    format!("the HPA controller was unable to get the target's current scale: {e}"),
                );
                self.event(&hpa, "Warning", "FailedGetScale", &e);
                self.update_status_if_needed(&original_status, &hpa).await?;
                return Err(Error::Other(format!(
                    "failed to query scale subresource for {reference}: {e}"
                )));
            }
        };
        condition_set(
            &mut hpa,
            "AbleToScale",
            true,
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale".into(),
        );
        let current = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
        let min_replicas = spec.min_replicas.unwrap_or(1);
        let max_replicas = spec.max_replicas;
        {
            // A fresh key starts from the current size, so a restart does not scale down at once.
            let mut h = self.history();
            h.recommendations.entry(key.to_string()).or_insert_with(|| {
                vec![Recommendation {
                    replicas: current,
                    at: jiff::Timestamp::now(),
                }]
            });
        }
        let mut metric_statuses = Vec::new();
        let mut desired = 0;
        let mut rescale_reason = String::new();
        let rescale;
        if current == 0 && min_replicas != 0 {
            rescale = false;
            condition_set(
                &mut hpa,
                "ScalingActive",
                false,
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero".into(),
            );
        } else if current > max_replicas {
            rescale_reason = "Current number of replicas above Spec.MaxReplicas".into();
            desired = max_replicas;
            rescale = desired != current;
        } else if current < min_replicas {
            rescale_reason = "Current number of replicas below Spec.MinReplicas".into();
            desired = min_replicas;
            rescale = desired != current;
        } else {
            let (proposal, metric_name, statuses, error) =
                self.replicas_for_metrics(&mut hpa, &scale, current).await;
            metric_statuses = statuses;
            let Some(proposal) = proposal else {
                let msg = error.unwrap_or_default();
                set_status(&mut hpa, current, None, metric_statuses, false);
                self.update_status_if_needed(&original_status, &hpa).await?;
                self.event(&hpa, "Warning", "FailedComputeMetricsReplicas", &msg);
                return Err(Error::Other(format!(
                    "failed to compute desired number of replicas based on listed metrics for {reference}: {msg}"
                )));
            };
            let mut rescale_metric = String::new();
            if proposal > desired {
                desired = proposal;
                rescale_metric = metric_name;
            }
            if desired > current {
                rescale_reason = format!("{rescale_metric} above target");
            }
            if desired < current {
                rescale_reason = "All metrics below target".into();
            }
            desired = match &spec.behavior {
                None => self.normalize(&mut hpa, key, current, desired, min_replicas, max_replicas),
                Some(_) => self.normalize_with_behaviors(
                    &mut hpa,
                    key,
                    current,
                    desired,
                    min_replicas,
                    max_replicas,
                ),
            };
            rescale = desired != current;
        }
        if rescale {
            scale.spec.get_or_insert_with(Default::default).replicas = Some(desired);
            if let Err(e) = scale_api
                .replace_scale(&target_ref.name, &PostParams::default(), &scale)
                .await
            {
                // Upstream's texts carry the API's message, not the client's wrapping.
                let e = super::replicaset::error_message(&e);
                self.event(
                    &hpa,
                    "Warning",
                    "FailedRescale",
                    &format!("New size: {desired}; reason: {rescale_reason}; error: {e}"),
                );
                condition_set(
                    &mut hpa,
                    "AbleToScale",
                    false,
                    "FailedUpdateScale",
                    format!("the HPA controller was unable to update the target scale: {e}"),
                );
                set_status(&mut hpa, current, None, metric_statuses, false);
                self.update_status_if_needed(&original_status, &hpa).await?;
                return Err(Error::Other(format!("failed to rescale {reference}: {e}")));
            }
            condition_set(
                &mut hpa,
                "AbleToScale",
                true,
                "SucceededRescale",
                format!("the HPA controller was able to update the target scale to {desired}"),
            );
            self.event(
                &hpa,
                "Normal",
                "SuccessfulRescale",
                &format!("New size: {desired}; reason: {rescale_reason}"),
            );
            self.store_scale_event(&spec.behavior, key, current, desired);
        } else {
            desired = current;
        }
        set_status(&mut hpa, current, Some(desired), metric_statuses, rescale);
        self.update_status_if_needed(&original_status, &hpa).await
    }

    async fn update_status_if_needed(
        &self,
        original: &Option<HorizontalPodAutoscalerStatus>,
        hpa: &HorizontalPodAutoscaler,
    ) -> Result<(), Error> {
        if original == &hpa.status {
            return Ok(());
        }
        let api: Api<HorizontalPodAutoscaler> = Api::namespaced(
            self.client.clone(),
            hpa.metadata.namespace.as_deref().unwrap_or_default(),
        );
        let name = hpa.metadata.name.clone().unwrap_or_default();
        match api.replace_status(&name, &PostParams::default(), hpa).await {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => {
                let message = super::replicaset::error_message(&e);
                self.event(hpa, "Warning", "FailedUpdateStatus", &message);
                Err(e.into())
            }
        }
    }

    /// Upstream's `computeReplicasForMetrics`: the largest proposal of the valid metrics.
    async fn replicas_for_metrics(
        &self,
        hpa: &mut HorizontalPodAutoscaler,
        scale: &Scale,
        current: i32,
    ) -> (Option<i32>, String, Vec<MetricStatus>, Option<String>) {
        let selector_s = scale
            .status
            .as_ref()
            .and_then(|s| s.selector.clone())
            .unwrap_or_default();
        if selector_s.is_empty() {
            let msg = "selector is required";
            self.event(hpa, "Warning", "SelectorRequired", msg);
            condition_set(
                hpa,
                "ScalingActive",
                false,
                "InvalidSelector",
                "the HPA target's scale is missing a selector".into(),
            );
            return (None, String::new(), Vec::new(), Some(msg.into()));
        }
        let selector = match k1s_apimachinery::selector::LabelSelector::parse(&selector_s) {
            Ok(s) => s,
            Err(e) => {
                let msg = format!(
                    "couldn't convert selector into a corresponding internal selector object: {e}"
                );
                self.event(hpa, "Warning", "InvalidSelector", &msg);
                condition_set(hpa, "ScalingActive", false, "InvalidSelector", msg.clone());
                return (None, String::new(), Vec::new(), Some(msg));
            }
        };
        let specs = match hpa.spec.as_ref().and_then(|s| s.metrics.clone()) {
            Some(m) if !m.is_empty() => m,
            // autoscaling/v2's default: 80% cpu utilization.
            _ => vec![default_metric()],
        };
        let ns = hpa.metadata.namespace.clone().unwrap_or_default();
        let pods: Vec<Arc<Pod>> = self
            .pods
            .list_namespace(&ns)
            .into_iter()
            .filter(|p| {
                let empty = BTreeMap::new();
                selector.matches(p.metadata.labels.as_ref().unwrap_or(&empty))
            })
            .collect();
        let mut statuses = Vec::new();
        let mut best: Option<(i32, String)> = None;
        let mut invalid = 0usize;
        let mut first_failure: Option<MetricFailure> = None;
        for spec in &specs {
            match self
                .replicas_for_metric(hpa, spec, current, &ns, &selector_s, &pods)
                .await
            {
                Ok(o) => {
                    statuses.push(o.status);
                    if best.as_ref().is_none_or(|(r, _)| o.replicas > *r) {
                        best = Some((o.replicas, o.name));
                    }
                }
                Err(f) => {
                    statuses.push(f.status.clone());
                    self.event(hpa, "Warning", f.reason, &f.message);
                    invalid += 1;
                    if first_failure.is_none() {
                        first_failure = Some(f);
                    }
                }
            }
        }
        let error = first_failure.as_ref().map(|f| {
            format!(
                "invalid metrics ({invalid} invalid out of {}), first error is: {}",
                specs.len(),
                f.message
            )
        });
        let (replicas, name) = best.clone().unwrap_or((0, String::new()));
        if invalid >= specs.len() || (invalid > 0 && replicas < current) {
            if let Some(f) = &first_failure {
                condition_set(
                    hpa,
                    "ScalingActive",
                    false,
                    f.reason,
                    format!(
                        "the HPA was unable to compute the replica count: {}",
                        f.message
                    ),
                );
            }
            return (None, String::new(), statuses, error);
        }
        condition_set(
            hpa,
            "ScalingActive",
            true,
            "ValidMetricFound",
            format!("the HPA was able to successfully calculate a replica count from {name}"),
        );
        (Some(replicas), name, statuses, error)
    }

    async fn replicas_for_metric(
        &self,
        hpa: &HorizontalPodAutoscaler,
        spec: &MetricSpec,
        current: i32,
        ns: &str,
        selector: &str,
        pods: &[Arc<Pod>],
    ) -> Result<MetricOutcome, MetricFailure> {
        let _ = hpa;
        let (resource, container, target) = match spec.type_.as_str() {
            "Resource" => match &spec.resource {
                Some(r) => (r.name.clone(), None, r.target.clone()),
                None => return Err(unknown_metric(spec)),
            },
            "ContainerResource" => match &spec.container_resource {
                Some(r) => (r.name.clone(), Some(r.container.clone()), r.target.clone()),
                None => return Err(unknown_metric(spec)),
            },
            "Pods" | "Object" | "External" => {
                let (reason, api) = match spec.type_.as_str() {
                    "Pods" => ("FailedGetPodsMetric", "custom.metrics.k8s.io"),
                    "Object" => ("FailedGetObjectMetric", "custom.metrics.k8s.io"),
                    _ => ("FailedGetExternalMetric", "external.metrics.k8s.io"),
                };
                return Err(MetricFailure {
                    reason,
                    message: format!(
                        "unable to get metric: the server could not find the requested resource ({api} is not served)"
                    ),
                    status: MetricStatus {
                        type_: String::new(),
                        ..Default::default()
                    },
                });
            }
            _ => return Err(unknown_metric(spec)),
        };
        let (reason, kind_word) = if container.is_some() {
            ("FailedGetContainerResourceMetric", "container resource")
        } else {
            ("FailedGetResourceMetric", "resource")
        };
        let fail = |message: String| MetricFailure {
            reason,
            message,
            status: MetricStatus {
                type_: String::new(),
                ..Default::default()
            },
        };
        let target_kind = match (target.average_utilization, &target.average_value) {
            (Some(u), _) if target.type_ == "Utilization" || target.average_value.is_none() => {
                Target::Utilization(u)
            }
            (_, Some(v)) => match parse_milli(&v.0) {
                Some(m) => Target::AverageValue(m),
                None => return Err(fail(format!("invalid average value {}", v.0))),
            },
            _ => {
                return Err(fail(format!(
                    "invalid {kind_word} metric source: neither a utilization target nor a value target was set"
                )));
            }
        };
        let metrics = match self
            .pod_metrics(ns, selector, &resource, container.as_deref())
            .await
        {
            Ok(m) => m,
            Err(e) => {
                let what = if matches!(target_kind, Target::Utilization(_)) {
                    "utilization"
                } else {
                    "usage"
                };
                return Err(fail(format!(
                    "failed to get {resource} {what}: unable to get metrics for resource {resource}: {e}"
                )));
            }
        };
        let infos: Vec<PodInfo> = pods
            .iter()
            .map(|p| pod_info(p, &resource, container.as_deref()))
            .collect();
        let rec = resource_replicas(
            current,
            target_kind,
            resource == "cpu",
            &infos,
            &metrics,
            jiff::Timestamp::now(),
            TOLERANCE,
        )
        .map_err(|e| {
            let what = if matches!(target_kind, Target::Utilization(_)) {
                "utilization"
            } else {
                "usage"
            };
            fail(format!("failed to get {resource} {what}: {e}"))
        })?;
        let current_value = MetricValueStatus {
            average_utilization: rec.utilization,
            average_value: Some(Quantity(format_milli(rec.raw))),
            value: None,
        };
        let status = match &container {
            None => MetricStatus {
                type_: "Resource".into(),
                resource: Some(ResourceMetricStatus {
                    name: resource.clone(),
                    current: current_value,
                }),
                ..Default::default()
            },
            Some(c) => MetricStatus {
                type_: "ContainerResource".into(),
                container_resource: Some(ContainerResourceMetricStatus {
                    name: resource.clone(),
                    container: c.clone(),
                    current: current_value,
                }),
                ..Default::default()
            },
        };
        let name = match (target_kind, &container) {
            (Target::Utilization(_), None) => {
                format!("{resource} resource utilization (percentage of request)")
            }
            (Target::AverageValue(_), None) => format!("{resource} resource"),
            (Target::Utilization(_), Some(c)) => {
                format!(
                    "{resource} container resource utilization (percentage of request) of container {c}"
                )
            }
            (Target::AverageValue(_), Some(c)) => {
                format!("{resource} container resource of container {c}")
            }
        };
        Ok(MetricOutcome {
            replicas: rec.replicas,
            name,
            status,
        })
    }

    /// PodMetrics of the selected pods from metrics.k8s.io; a pod missing a container's sample is left out.
    async fn pod_metrics(
        &self,
        ns: &str,
        selector: &str,
        resource: &str,
        container: Option<&str>,
    ) -> Result<BTreeMap<String, PodMetric>, String> {
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("metrics.k8s.io", "v1beta1", "PodMetrics"),
            "pods",
        );
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), ns, &ar);
        let list = api
            .list(&ListParams::default().labels(selector))
            .await
            .map_err(|e| format!("unable to fetch metrics from resource metrics API: {e}"))?;
        if list.items.is_empty() {
            return Err("no metrics returned from resource metrics API".into());
        }
        let mut out = BTreeMap::new();
        for item in &list.items {
            let Some(name) = item.metadata.name.clone() else {
                continue;
            };
            let timestamp = item.data["timestamp"]
                .as_str()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .unwrap_or_else(jiff::Timestamp::now);
            let window_secs = item.data["window"]
                .as_str()
                .and_then(parse_go_duration)
                .map(|d| i64::try_from(d.as_secs()).unwrap_or(0))
                .unwrap_or(0);
            let mut sum = 0i64;
            let mut missing = false;
            let mut found = false;
            for c in item.data["containers"].as_array().into_iter().flatten() {
                if container.is_some_and(|want| c["name"].as_str() != Some(want)) {
                    continue;
                }
                match c["usage"][resource].as_str().and_then(parse_milli) {
                    Some(v) => {
                        sum += v;
                        found = true;
                    }
                    None => missing = true,
                }
            }
            if !missing && found {
                out.insert(
                    name,
                    PodMetric {
                        value: sum,
                        timestamp,
                        window_secs,
                    },
                );
            }
        }
        Ok(out)
    }

    /// Upstream's `normalizeDesiredReplicas` (no `behavior`): downscale stabilization window,
    /// the legacy scale-up limit and min/max.
    fn normalize(
        &self,
        hpa: &mut HorizontalPodAutoscaler,
        key: &str,
        current: i32,
        prenormalized: i32,
        min: i32,
        max: i32,
    ) -> i32 {
        let now = jiff::Timestamp::now();
        let window = jiff::SignedDuration::try_from(self.downscale_window).unwrap_or_default();
        let stabilized = {
            let mut h = self.history();
            let recs = h.recommendations.entry(key.to_string()).or_default();
            stabilize(recs, prenormalized, now, window)
        };
        if stabilized != prenormalized {
            condition_set(
                hpa,
                "AbleToScale",
                true,
                "ScaleDownStabilized",
                "recent recommendations were higher than current one, applying the highest recent recommendation".into(),
            );
        } else {
            condition_set(
                hpa,
                "AbleToScale",
                true,
                "ReadyForNewScale",
                "recommended size matches current size".into(),
            );
        }
        let (desired, reason, message) = convert_with_rules(current, stabilized, min, max);
        condition_set(
            hpa,
            "ScalingLimited",
            desired != stabilized,
            reason,
            message.into(),
        );
        desired
    }

    /// Upstream's `normalizeDesiredReplicasWithBehaviors`.
    fn normalize_with_behaviors(
        &self,
        hpa: &mut HorizontalPodAutoscaler,
        key: &str,
        current: i32,
        prenormalized: i32,
        min: i32,
        max: i32,
    ) -> i32 {
        let behavior = hpa
            .spec
            .as_ref()
            .and_then(|s| s.behavior.clone())
            .unwrap_or_default();
        let up = scale_up_rules(behavior.scale_up);
        let down_window = i32::try_from(self.downscale_window.as_secs()).unwrap_or(300);
        let down = scale_down_rules(behavior.scale_down, down_window);
        let now = jiff::Timestamp::now();
        let (stabilized, reason, message) = {
            let mut h = self.history();
            let recs = h.recommendations.entry(key.to_string()).or_default();
            stabilize_with_behaviors(recs, current, prenormalized, &up, &down, now)
        };
        if stabilized != prenormalized {
            condition_set(hpa, "AbleToScale", true, reason, message.into());
        } else {
            condition_set(
                hpa,
                "AbleToScale",
                true,
                "ReadyForNewScale",
                "recommended size matches current size".into(),
            );
        }
        let (desired, reason, message) = {
            let h = self.history();
            let ups = h.scale_up.get(key).cloned().unwrap_or_default();
            let downs = h.scale_down.get(key).cloned().unwrap_or_default();
            convert_with_behavior_rate(current, stabilized, min, max, &up, &down, &ups, &downs, now)
        };
        condition_set(
            hpa,
            "ScalingLimited",
            desired != stabilized,
            reason,
            message.into(),
        );
        desired
    }

    /// Upstream's `storeScaleEvent` (only kept with `behavior`).
    fn store_scale_event(
        &self,
        behavior: &Option<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerBehavior>,
        key: &str,
        previous: i32,
        new: i32,
    ) {
        let Some(behavior) = behavior else {
            return;
        };
        let now = jiff::Timestamp::now();
        let mut h = self.history();
        let (events, rules) = if new > previous {
            (
                h.scale_up.entry(key.to_string()).or_default(),
                scale_up_rules(behavior.scale_up.clone()),
            )
        } else {
            (
                h.scale_down.entry(key.to_string()).or_default(),
                scale_down_rules(behavior.scale_down.clone(), 300),
            )
        };
        let longest = rules
            .policies
            .iter()
            .flatten()
            .map(|p| p.period_seconds)
            .max()
            .unwrap_or(0);
        let cutoff = now
            .checked_sub(jiff::SignedDuration::from_secs(i64::from(longest)))
            .unwrap_or(now);
        for e in events.iter_mut() {
            if e.at < cutoff {
                e.outdated = true;
            }
        }
        let event = ScaleEvent {
            change: (new - previous).abs(),
            at: now,
            outdated: false,
        };
        match events.iter_mut().find(|e| e.outdated) {
            Some(slot) => *slot = event,
            None => events.push(event),
        }
    }
}

fn unknown_metric(spec: &MetricSpec) -> MetricFailure {
    MetricFailure {
        reason: "InvalidMetricSourceType",
        message: format!("unknown metric source type \"{}\"", spec.type_),
        status: MetricStatus::default(),
    }
}

fn default_metric() -> MetricSpec {
    MetricSpec {
        type_: "Resource".into(),
        resource: Some(k8s_openapi::api::autoscaling::v2::ResourceMetricSource {
            name: "cpu".into(),
            target: k8s_openapi::api::autoscaling::v2::MetricTarget {
                type_: "Utilization".into(),
                average_utilization: Some(80),
                ..Default::default()
            },
        }),
        ..Default::default()
    }
}

/// Upstream's `setStatus`.
fn set_status(
    hpa: &mut HorizontalPodAutoscaler,
    current: i32,
    desired: Option<i32>,
    metrics: Vec<MetricStatus>,
    rescale: bool,
) {
    let status = hpa.status.get_or_insert_with(Default::default);
    status.current_replicas = Some(current);
    if let Some(d) = desired {
        status.desired_replicas = d;
    }
    // Failed metrics leave no entry (upstream reports them with an empty type, dropped on the wire).
    let metrics: Vec<MetricStatus> = metrics
        .into_iter()
        .filter(|m| !m.type_.is_empty())
        .collect();
    status.current_metrics = (!metrics.is_empty()).then_some(metrics);
    if rescale {
        status.last_scale_time = Some(Time(jiff::Timestamp::now()));
    }
}

fn pod_info(pod: &Pod, resource: &str, container: Option<&str>) -> PodInfo {
    let status = pod.status.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let ready = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Ready")
        .map(|c| {
            (
                c.status == "True",
                c.last_transition_time
                    .as_ref()
                    .map(|t| t.0)
                    .unwrap_or_else(jiff::Timestamp::now),
            )
        });
    let mut request = Ok(0i64);
    for c in pod.spec.iter().flat_map(|s| s.containers.iter()) {
        if container.is_some_and(|want| want != c.name) {
            continue;
        }
        let r = c
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get(resource))
            .and_then(|q| parse_milli(&q.0));
        match (r, &mut request) {
            (Some(v), Ok(sum)) => *sum += v,
            (None, Ok(_)) => {
                request = Err(format!(
                    "missing request for {resource} in container {} of Pod {name}",
                    c.name
                ));
            }
            _ => {}
        }
    }
    PodInfo {
        name,
        phase: status.phase.unwrap_or_default(),
        deleting: pod.metadata.deletion_timestamp.is_some(),
        ready,
        start_time: status.start_time.map(|t| t.0),
        request,
    }
}

/// Upstream's `stabilizeRecommendation`: the highest recommendation in the window.
fn stabilize(
    recs: &mut Vec<Recommendation>,
    prenormalized: i32,
    now: jiff::Timestamp,
    window: jiff::SignedDuration,
) -> i32 {
    let cutoff = now.checked_sub(window).unwrap_or(now);
    let mut max = prenormalized;
    let mut old = None;
    for (i, r) in recs.iter().enumerate() {
        if r.at < cutoff {
            old = Some(i);
        } else if r.replicas > max {
            max = r.replicas;
        }
    }
    let rec = Recommendation {
        replicas: prenormalized,
        at: now,
    };
    match old {
        Some(i) => recs[i] = rec,
        None => recs.push(rec),
    }
    max
}

/// Upstream's `convertDesiredReplicasWithRules` (legacy, no `behavior`).
fn convert_with_rules(
    current: i32,
    desired: i32,
    min: i32,
    max: i32,
) -> (i32, &'static str, &'static str) {
    let scale_up_limit =
        (SCALE_UP_LIMIT_FACTOR * f64::from(current)).max(SCALE_UP_LIMIT_MINIMUM) as i32;
    let (maximum, cond, reason) = if max > scale_up_limit {
        (
            scale_up_limit,
            "ScaleUpLimit",
            "the desired replica count is increasing faster than the maximum scale rate",
        )
    } else {
        (
            max,
            "TooManyReplicas",
            "the desired replica count is more than the maximum replica count",
        )
    };
    if desired < min {
        return (
            min,
            "TooFewReplicas",
            "the desired replica count is less than the minimum replica count",
        );
    }
    if desired > maximum {
        return (maximum, cond, reason);
    }
    (
        desired,
        "DesiredWithinRange",
        "the desired count is within the acceptable range",
    )
}

/// Upstream's `GenerateHPAScaleUpRules`: fills what `rules` leaves unset.
fn scale_up_rules(rules: Option<HPAScalingRules>) -> HPAScalingRules {
    let mut r = rules.unwrap_or_default();
    r.stabilization_window_seconds.get_or_insert(0);
    r.select_policy.get_or_insert_with(|| "Max".into());
    if r.policies.as_ref().is_none_or(Vec::is_empty) {
        r.policies = Some(vec![
            HPAScalingPolicy {
                type_: "Pods".into(),
                value: 4,
                period_seconds: 15,
            },
            HPAScalingPolicy {
                type_: "Percent".into(),
                value: 100,
                period_seconds: 15,
            },
        ]);
    }
    r
}

/// Upstream's `GenerateHPAScaleDownRules`, with the controller's window when unset.
fn scale_down_rules(rules: Option<HPAScalingRules>, window: i32) -> HPAScalingRules {
    let mut r = rules.unwrap_or_default();
    r.stabilization_window_seconds.get_or_insert(window);
    r.select_policy.get_or_insert_with(|| "Max".into());
    if r.policies.as_ref().is_none_or(Vec::is_empty) {
        r.policies = Some(vec![HPAScalingPolicy {
            type_: "Percent".into(),
            value: 100,
            period_seconds: 15,
        }]);
    }
    r
}

/// Upstream's `stabilizeRecommendationWithBehaviors`.
fn stabilize_with_behaviors(
    recs: &mut Vec<Recommendation>,
    current: i32,
    desired: i32,
    up: &HPAScalingRules,
    down: &HPAScalingRules,
    now: jiff::Timestamp,
) -> (i32, &'static str, &'static str) {
    let secs = |s: Option<i32>| jiff::SignedDuration::from_secs(i64::from(s.unwrap_or(0)));
    let up_cutoff = now
        .checked_sub(secs(up.stabilization_window_seconds))
        .unwrap_or(now);
    let down_cutoff = now
        .checked_sub(secs(down.stabilization_window_seconds))
        .unwrap_or(now);
    let (mut up_rec, mut down_rec) = (desired, desired);
    let mut old = None;
    for (i, r) in recs.iter().enumerate() {
        if r.at > up_cutoff {
            up_rec = up_rec.min(r.replicas);
        }
        if r.at > down_cutoff {
            down_rec = down_rec.max(r.replicas);
        }
        if r.at < up_cutoff && r.at < down_cutoff {
            old = Some(i);
        }
    }
    let recommendation = current.max(up_rec).min(down_rec);
    let rec = Recommendation {
        replicas: desired,
        at: now,
    };
    match old {
        Some(i) => recs[i] = rec,
        None => recs.push(rec),
    }
    if desired >= current {
        (
            recommendation,
            "ScaleUpStabilized",
            "recent recommendations were lower than current one, applying the lowest recent recommendation",
        )
    } else {
        (
            recommendation,
            "ScaleDownStabilized",
            "recent recommendations were higher than current one, applying the highest recent recommendation",
        )
    }
}

fn change_in_period(period: i32, events: &[ScaleEvent], now: jiff::Timestamp) -> i32 {
    let cutoff = now
        .checked_sub(jiff::SignedDuration::from_secs(i64::from(period)))
        .unwrap_or(now);
    events
        .iter()
        .filter(|e| e.at > cutoff && !e.outdated)
        .map(|e| e.change)
        .sum()
}

/// Upstream's `calculateScaleUpLimitWithScalingRules` / `calculateScaleDownLimitWithBehaviors`.
fn scale_limit(
    up_direction: bool,
    current: i32,
    ups: &[ScaleEvent],
    downs: &[ScaleEvent],
    rules: &HPAScalingRules,
    now: jiff::Timestamp,
) -> i32 {
    let select = rules.select_policy.as_deref().unwrap_or("Max");
    if select == "Disabled" {
        return current;
    }
    // "Min" picks the smallest change: the lowest limit up, the highest limit down.
    let pick_lowest = (select == "Min") == up_direction;
    let mut result: Option<i32> = None;
    for p in rules.policies.iter().flatten() {
        let start = current - change_in_period(p.period_seconds, ups, now)
            + change_in_period(p.period_seconds, downs, now);
        let proposed = match (p.type_.as_str(), up_direction) {
            ("Pods", true) => start + p.value,
            ("Pods", false) => start - p.value,
            ("Percent", true) => {
                (f64::from(start) * (1.0 + f64::from(p.value) / 100.0)).ceil() as i32
            }
            ("Percent", false) => (f64::from(start) * (1.0 - f64::from(p.value) / 100.0)) as i32,
            _ => continue,
        };
        result = Some(match result {
            None => proposed,
            Some(r) if pick_lowest => r.min(proposed),
            Some(r) => r.max(proposed),
        });
    }
    result.unwrap_or(if up_direction { i32::MIN } else { i32::MAX })
}

/// Upstream's `convertDesiredReplicasWithBehaviorRate`.
#[allow(clippy::too_many_arguments)]
fn convert_with_behavior_rate(
    current: i32,
    desired: i32,
    min: i32,
    max: i32,
    up: &HPAScalingRules,
    down: &HPAScalingRules,
    ups: &[ScaleEvent],
    downs: &[ScaleEvent],
    now: jiff::Timestamp,
) -> (i32, &'static str, &'static str) {
    if desired > current {
        let limit = scale_limit(true, current, ups, downs, up, now).max(current);
        let (maximum, reason, message) = if max > limit {
            (
                limit,
                "ScaleUpLimit",
                "the desired replica count is increasing faster than the maximum scale rate",
            )
        } else {
            (
                max,
                "TooManyReplicas",
                "the desired replica count is more than the maximum replica count",
            )
        };
        if desired > maximum {
            return (maximum, reason, message);
        }
    } else if desired < current {
        let limit = scale_limit(false, current, ups, downs, down, now).min(current);
        let (minimum, reason, message) = if min < limit {
            (
                limit,
                "ScaleDownLimit",
                "the desired replica count is decreasing faster than the maximum scale rate",
            )
        } else {
            (
                min,
                "TooFewReplicas",
                "the desired replica count is less than the minimum replica count",
            )
        };
        if desired < minimum {
            return (minimum, reason, message);
        }
    }
    (
        desired,
        "DesiredWithinRange",
        "the desired count is within the acceptable range",
    )
}

/// A quantity in milli-units, exactly (`250m` -> 250, `1` -> 1000, `1Ki` -> 1024000; fractions
/// of a milli-unit round up, as upstream's `MilliValue`).
pub fn parse_milli(s: &str) -> Option<i64> {
    let s = s.trim();
    let (negative, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
    let digits = format!("{int_part}{frac_part}");
    if digits.is_empty() || digits.len() > 30 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut mantissa: i128 = digits.parse().ok()?;
    // Milli-units: three decimal places up, minus the fraction's.
    let mut exp10 = 3 - i32::try_from(frac_part.len()).ok()?;
    let mut binary: u32 = 0;
    match suffix {
        "" => {}
        "n" => exp10 -= 9,
        "u" => exp10 -= 6,
        "m" => exp10 -= 3,
        "k" => exp10 += 3,
        "M" => exp10 += 6,
        "G" => exp10 += 9,
        "T" => exp10 += 12,
        "P" => exp10 += 15,
        "E" => exp10 += 18,
        "Ki" => binary = 1,
        "Mi" => binary = 2,
        "Gi" => binary = 3,
        "Ti" => binary = 4,
        "Pi" => binary = 5,
        "Ei" => binary = 6,
        e if e.starts_with(['e', 'E']) => exp10 += e[1..].parse::<i32>().ok()?,
        _ => return None,
    }
    mantissa = mantissa.checked_mul(1024i128.checked_pow(binary)?)?;
    if exp10 >= 0 {
        mantissa = mantissa.checked_mul(10i128.checked_pow(exp10.unsigned_abs())?)?;
    } else {
        let d = 10i128.checked_pow(exp10.unsigned_abs())?;
        mantissa = (mantissa + d - 1) / d;
    }
    i64::try_from(if negative { -mantissa } else { mantissa }).ok()
}

/// A milli-unit count as a canonical DecimalSI quantity (`resource.NewMilliQuantity`).
pub fn format_milli(milli: i64) -> String {
    if milli % 1000 != 0 {
        return format!("{milli}m");
    }
    let mut v = milli / 1000;
    let mut suffix = 0;
    const SUFFIXES: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    while v != 0 && v % 1000 == 0 && suffix < 6 {
        v /= 1000;
        suffix += 1;
    }
    format!("{v}{}", SUFFIXES[suffix])
}

/// A Go duration (`10s`, `1m30s`, `1.5s`, `500ms`).
pub fn parse_go_duration(s: &str) -> Option<Duration> {
    let mut total = 0f64;
    let mut rest = s;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let n = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let value: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let u = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..u] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += value * factor;
        rest = &rest[u..];
    }
    Some(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests;

//! autoscaling/v1 <-> v2 HorizontalPodAutoscalers, with upstream's round-trip annotations.
//!
//! autoscaling/v1 has room for one CPU utilization target only. As upstream's conversion does,
//! a v1 view keeps what it cannot show in annotations (the other metrics, the current metrics,
//! the behavior and the conditions), and a v1 write reads them back, so a v1 client's
//! read-modify-write loses nothing. The annotations hold JSON in the field order of upstream's
//! Go types (v1 types for metrics and conditions; the internal Go type, field names
//! capitalised, for the behavior), so the text matches byte for byte. Stored (v2) objects never
//! carry them.

use serde::Serialize;
use serde_json::{Map, Value, json};

/// The annotations upstream's DropRoundTripHorizontalPodAutoscalerAnnotations removes.
const METRIC_SPECS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const METRIC_STATUSES: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
const ROUND_TRIP: [&str; 4] = [METRIC_SPECS, METRIC_STATUSES, CONDITIONS, BEHAVIOR];

/// Removes the round-trip annotations (and an annotation map they leave empty).
pub fn drop_round_trip_annotations(obj: &mut Value) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) else {
        return;
    };
    let before = annotations.len();
    for key in ROUND_TRIP {
        annotations.remove(key);
    }
    if annotations.is_empty() && before > 0 {
        meta.remove("annotations");
    }
}

/// The stored v2 object as autoscaling/v1 shows it.
pub fn v2_to_v1(obj: &mut Value) {
    drop_round_trip_annotations(obj);
    let metrics = take_array(obj.get_mut("spec"), "metrics");
    let behavior = obj
        .get_mut("spec")
        .and_then(Value::as_object_mut)
        .and_then(|s| s.remove("behavior"))
        .filter(|b| !b.is_null());
    let current = take_array(obj.get_mut("status"), "currentMetrics");
    let conditions = take_array(obj.get_mut("status"), "conditions");

    let mut annotations = Vec::new();
    let other: Vec<V1MetricSpec> = metrics
        .iter()
        .filter(|m| !is_cpu_utilization_target(m))
        .map(|m| V1MetricSpec::from_v2(m, &SPEC_MEMBERS))
        .collect();
    if !other.is_empty() {
        annotations.push((METRIC_SPECS, go_json(&other)));
    }
    if !current.is_empty() {
        let statuses: Vec<V1MetricStatus> = current
            .iter()
            .map(|m| V1MetricStatus::from_v2(m, &STATUS_MEMBERS))
            .collect();
        annotations.push((METRIC_STATUSES, go_json(&statuses)));
    }
    if let Some(behavior) = &behavior {
        annotations.push((BEHAVIOR, go_json(&GoBehavior::from_v2(behavior))));
    }
    if !conditions.is_empty() {
        let conditions: Vec<V1Condition> = conditions.iter().map(V1Condition::from_v2).collect();
        annotations.push((CONDITIONS, go_json(&conditions)));
    }
    if !annotations.is_empty() {
        let meta = obj
            .as_object_mut()
            .map(|o| o.entry("metadata").or_insert_with(|| json!({})));
        if let Some(meta) = meta.and_then(Value::as_object_mut) {
            let map = meta.entry("annotations").or_insert_with(|| json!({}));
            if !map.is_object() {
                *map = json!({});
            }
            for (key, text) in annotations {
                map[key] = Value::String(text);
            }
        }
    }

    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        // The first CPU resource metric decides, whatever its target type.
        let cpu = metrics.iter().find(|m| is_resource(m, "cpu", "resource"));
        if let Some(target) = cpu.and_then(|m| m.pointer("/resource/target/averageUtilization")) {
            spec.insert("targetCPUUtilizationPercentage".into(), target.clone());
        }
    }
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        // The last CPU resource status with a utilization decides.
        let cpu = current
            .iter()
            .filter(|m| is_resource(m, "cpu", "resource"))
            .filter_map(|m| m.pointer("/resource/current/averageUtilization"))
            .next_back();
        if let Some(cpu) = cpu {
            status.insert("currentCPUUtilizationPercentage".into(), cpu.clone());
        }
        // Both counts are required in autoscaling/v1.
        status.entry("currentReplicas").or_insert(json!(0));
        status.entry("desiredReplicas").or_insert(json!(0));
    }
}

/// A v1 object as it is stored (v2): the round-trip annotations read back (one that does not
/// parse is ignored, as upstream), then removed.
pub fn v1_to_v2(obj: &mut Value) {
    let annotation = |key: &str| -> Option<Value> {
        let text = obj.pointer(&format!("/metadata/annotations/{}", key.replace('/', "~1")))?;
        serde_json::from_str(text.as_str()?).ok()
    };
    let other_metrics = annotation(METRIC_SPECS).and_then(|v| convert_all(&v, metric_spec_to_v2));
    let current_metrics =
        annotation(METRIC_STATUSES).and_then(|v| convert_all(&v, metric_status_to_v2));
    let behavior = annotation(BEHAVIOR).and_then(|v| behavior_to_v2(&v));
    let conditions = annotation(CONDITIONS).and_then(|v| convert_all(&v, condition_to_v2));
    drop_round_trip_annotations(obj);

    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        let mut metrics = other_metrics.unwrap_or_default();
        if let Some(target) = spec.remove("targetCPUUtilizationPercentage")
            && !target.is_null()
        {
            metrics.push(json!({ "type": "Resource", "resource": { "name": "cpu",
                "target": { "type": "Utilization", "averageUtilization": target } } }));
        }
        // autoscaling/v1's implicit target, made explicit as upstream's conversion does.
        if metrics.is_empty() {
            metrics.push(json!({ "type": "Resource", "resource": { "name": "cpu",
                "target": { "type": "Utilization", "averageUtilization": 80 } } }));
        }
        spec.insert("metrics".into(), Value::Array(metrics));
        if let Some(behavior) = behavior {
            spec.insert("behavior".into(), behavior);
        }
    }
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        if let Some(cpu) = status.remove("currentCPUUtilizationPercentage")
            && !cpu.is_null()
        {
            status.insert(
                "currentMetrics".into(),
                json!([{ "type": "Resource", "resource": { "name": "cpu",
                    "current": { "averageUtilization": cpu } } }]),
            );
        }
        // The annotation has more than the CPU figure: it wins (an empty list is omitted).
        for (field, list) in [
            ("currentMetrics", current_metrics),
            ("conditions", conditions),
        ] {
            match list {
                Some(list) if list.is_empty() => {
                    status.remove(field);
                }
                Some(list) => {
                    status.insert(field.into(), Value::Array(list));
                }
                None => {}
            }
        }
    }
}

fn take_array(parent: Option<&mut Value>, field: &str) -> Vec<Value> {
    match parent
        .and_then(Value::as_object_mut)
        .and_then(|o| o.remove(field))
    {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    }
}

/// A `type` plus a source named `source` for the resource `name`.
fn is_resource(metric: &Value, name: &str, source: &str) -> bool {
    let kind = if source == "resource" {
        "Resource"
    } else {
        "ContainerResource"
    };
    metric["type"] == kind && metric[source]["name"] == name
}

/// The metric autoscaling/v1 shows as `targetCPUUtilizationPercentage`.
fn is_cpu_utilization_target(metric: &Value) -> bool {
    is_resource(metric, "cpu", "resource")
        && metric
            .pointer("/resource/target/averageUtilization")
            .is_some_and(|u| !u.is_null())
}

fn go_json<T: Serialize>(value: &T) -> String {
    k1s_apimachinery::gofmt::json_marshal(value)
}

/// Converts each element of a JSON array; `None` when it is not an array or one element does
/// not have the v1 shape (Go's decoder refuses the whole annotation then).
fn convert_all(list: &Value, convert: fn(&Value) -> Option<Value>) -> Option<Vec<Value>> {
    list.as_array()?.iter().map(convert).collect()
}

fn text(v: &Value, field: &str) -> String {
    v[field].as_str().unwrap_or_default().to_string()
}

/// A present, non-null value.
fn given(v: &Value, field: &str) -> Option<Value> {
    v.get(field).filter(|x| !x.is_null()).cloned()
}

/// A non-pointer Go Quantity: its zero value prints as "0".
fn quantity_or_zero(v: &Value, pointer: &str) -> Value {
    v.pointer(pointer)
        .filter(|x| !x.is_null())
        .cloned()
        .unwrap_or_else(|| json!("0"))
}

// ---- autoscaling/v1 shapes, fields in the Go types' order ----

#[derive(Serialize)]
struct V1Reference {
    kind: String,
    name: String,
    #[serde(rename = "apiVersion", skip_serializing_if = "String::is_empty")]
    api_version: String,
}

impl V1Reference {
    fn from(v: &Value) -> Self {
        V1Reference {
            kind: text(v, "kind"),
            name: text(v, "name"),
            api_version: text(v, "apiVersion"),
        }
    }
}

/// metav1.LabelSelector: matchLabels before matchExpressions.
#[derive(Serialize)]
struct LabelSelector {
    #[serde(rename = "matchLabels", skip_serializing_if = "Option::is_none")]
    match_labels: Option<Value>,
    #[serde(rename = "matchExpressions", skip_serializing_if = "Option::is_none")]
    match_expressions: Option<Value>,
}

fn selector(v: Option<&Value>) -> Option<LabelSelector> {
    let v = v.filter(|s| s.is_object())?;
    let non_empty = |f: &str| given(v, f).filter(|x| x.as_object().is_none_or(|m| !m.is_empty()));
    Some(LabelSelector {
        match_labels: non_empty("matchLabels"),
        match_expressions: given(v, "matchExpressions")
            .filter(|x| x.as_array().is_some_and(|a| !a.is_empty())),
    })
}

/// autoscaling/v1's MetricSpec and MetricStatus share this shape: a type and one member per
/// source (`O`bject, `P`ods, `R`esource and containerResource, `E`xternal).
#[derive(Serialize)]
struct V1Metric<O, P, R, E> {
    #[serde(rename = "type")]
    kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    object: Option<O>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pods: Option<P>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resource: Option<R>,
    #[serde(rename = "containerResource", skip_serializing_if = "Option::is_none")]
    container_resource: Option<R>,
    #[serde(skip_serializing_if = "Option::is_none")]
    external: Option<E>,
}

/// How each source of a v2 metric becomes its v1 member.
struct V1Members<O, P, R, E> {
    object: fn(&Value) -> O,
    pods: fn(&Value) -> P,
    /// The source, and whether it is a containerResource.
    resource: fn(&Value, bool) -> R,
    external: fn(&Value) -> E,
}

impl<O, P, R, E> V1Metric<O, P, R, E> {
    fn from_v2(m: &Value, members: &V1Members<O, P, R, E>) -> Self {
        let source = |name: &str| m.get(name).filter(|s| s.is_object());
        V1Metric {
            kind: text(m, "type"),
            object: source("object").map(members.object),
            pods: source("pods").map(members.pods),
            resource: source("resource").map(|s| (members.resource)(s, false)),
            container_resource: source("containerResource").map(|s| (members.resource)(s, true)),
            external: source("external").map(members.external),
        }
    }
}

type V1MetricSpec = V1Metric<V1ObjectSource, V1PodsSource, V1ResourceSource, V1ExternalSource>;
type V1MetricStatus = V1Metric<V1ObjectStatus, V1PodsStatus, V1ResourceStatus, V1ExternalStatus>;

#[derive(Serialize)]
struct V1ObjectSource {
    target: V1Reference,
    #[serde(rename = "metricName")]
    metric_name: String,
    #[serde(rename = "targetValue")]
    target_value: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    selector: Option<LabelSelector>,
    #[serde(rename = "averageValue", skip_serializing_if = "Option::is_none")]
    average_value: Option<Value>,
}

#[derive(Serialize)]
struct V1PodsSource {
    #[serde(rename = "metricName")]
    metric_name: String,
    #[serde(rename = "targetAverageValue")]
    target_average_value: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    selector: Option<LabelSelector>,
}

/// ResourceMetricSource, and ContainerResourceMetricSource with `container`.
#[derive(Serialize)]
struct V1ResourceSource {
    name: String,
    #[serde(
        rename = "targetAverageUtilization",
        skip_serializing_if = "Option::is_none"
    )]
    target_average_utilization: Option<Value>,
    #[serde(rename = "targetAverageValue", skip_serializing_if = "Option::is_none")]
    target_average_value: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    container: Option<String>,
}

#[derive(Serialize)]
struct V1ExternalSource {
    #[serde(rename = "metricName")]
    metric_name: String,
    #[serde(rename = "metricSelector", skip_serializing_if = "Option::is_none")]
    metric_selector: Option<LabelSelector>,
    #[serde(rename = "targetValue", skip_serializing_if = "Option::is_none")]
    target_value: Option<Value>,
    #[serde(rename = "targetAverageValue", skip_serializing_if = "Option::is_none")]
    target_average_value: Option<Value>,
}

/// The v1 members of a metric's target (MetricSpec).
const SPEC_MEMBERS: V1Members<V1ObjectSource, V1PodsSource, V1ResourceSource, V1ExternalSource> =
    V1Members {
        object: |s| V1ObjectSource {
            target: V1Reference::from(&s["describedObject"]),
            metric_name: text(&s["metric"], "name"),
            target_value: quantity_or_zero(s, "/target/value"),
            selector: selector(s.pointer("/metric/selector")),
            average_value: s.pointer("/target/averageValue").cloned(),
        },
        pods: |s| V1PodsSource {
            metric_name: text(&s["metric"], "name"),
            target_average_value: quantity_or_zero(s, "/target/averageValue"),
            selector: selector(s.pointer("/metric/selector")),
        },
        resource: |s, container| V1ResourceSource {
            name: text(s, "name"),
            target_average_utilization: s.pointer("/target/averageUtilization").cloned(),
            target_average_value: s.pointer("/target/averageValue").cloned(),
            container: container.then(|| text(s, "container")),
        },
        external: |s| V1ExternalSource {
            metric_name: text(&s["metric"], "name"),
            metric_selector: selector(s.pointer("/metric/selector")),
            target_value: s.pointer("/target/value").cloned(),
            target_average_value: s.pointer("/target/averageValue").cloned(),
        },
    };

#[derive(Serialize)]
struct V1ObjectStatus {
    target: V1Reference,
    #[serde(rename = "metricName")]
    metric_name: String,
    #[serde(rename = "currentValue")]
    current_value: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    selector: Option<LabelSelector>,
    #[serde(rename = "averageValue", skip_serializing_if = "Option::is_none")]
    average_value: Option<Value>,
}

#[derive(Serialize)]
struct V1PodsStatus {
    #[serde(rename = "metricName")]
    metric_name: String,
    #[serde(rename = "currentAverageValue")]
    current_average_value: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    selector: Option<LabelSelector>,
}

#[derive(Serialize)]
struct V1ResourceStatus {
    name: String,
    #[serde(
        rename = "currentAverageUtilization",
        skip_serializing_if = "Option::is_none"
    )]
    current_average_utilization: Option<Value>,
    #[serde(rename = "currentAverageValue")]
    current_average_value: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    container: Option<String>,
}

#[derive(Serialize)]
struct V1ExternalStatus {
    #[serde(rename = "metricName")]
    metric_name: String,
    #[serde(rename = "metricSelector", skip_serializing_if = "Option::is_none")]
    metric_selector: Option<LabelSelector>,
    #[serde(rename = "currentValue")]
    current_value: Value,
    #[serde(
        rename = "currentAverageValue",
        skip_serializing_if = "Option::is_none"
    )]
    current_average_value: Option<Value>,
}

/// The v1 members of a metric's current value (MetricStatus).
const STATUS_MEMBERS: V1Members<V1ObjectStatus, V1PodsStatus, V1ResourceStatus, V1ExternalStatus> =
    V1Members {
        object: |s| V1ObjectStatus {
            target: V1Reference::from(&s["describedObject"]),
            metric_name: text(&s["metric"], "name"),
            current_value: quantity_or_zero(s, "/current/value"),
            selector: selector(s.pointer("/metric/selector")),
            average_value: s.pointer("/current/averageValue").cloned(),
        },
        pods: |s| V1PodsStatus {
            metric_name: text(&s["metric"], "name"),
            current_average_value: quantity_or_zero(s, "/current/averageValue"),
            selector: selector(s.pointer("/metric/selector")),
        },
        resource: |s, container| V1ResourceStatus {
            name: text(s, "name"),
            current_average_utilization: s.pointer("/current/averageUtilization").cloned(),
            current_average_value: quantity_or_zero(s, "/current/averageValue"),
            container: container.then(|| text(s, "container")),
        },
        external: |s| V1ExternalStatus {
            metric_name: text(&s["metric"], "name"),
            metric_selector: selector(s.pointer("/metric/selector")),
            current_value: quantity_or_zero(s, "/current/value"),
            current_average_value: s.pointer("/current/averageValue").cloned(),
        },
    };

#[derive(Serialize)]
struct V1Condition {
    #[serde(rename = "type")]
    kind: String,
    status: String,
    /// metav1.Time: a zero time encodes as null.
    #[serde(rename = "lastTransitionTime")]
    last_transition_time: Value,
    #[serde(skip_serializing_if = "String::is_empty")]
    reason: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    message: String,
}

impl V1Condition {
    fn from_v2(c: &Value) -> Self {
        V1Condition {
            kind: text(c, "type"),
            status: text(c, "status"),
            last_transition_time: given(c, "lastTransitionTime").unwrap_or(Value::Null),
            reason: text(c, "reason"),
            message: text(c, "message"),
        }
    }
}

/// The internal Go type of `spec.behavior`, which upstream marshals without JSON tags: Go field
/// names, and null for every unset pointer or slice.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct GoBehavior {
    scale_up: Option<GoRules>,
    scale_down: Option<GoRules>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct GoRules {
    stabilization_window_seconds: Option<Value>,
    select_policy: Option<Value>,
    policies: Option<Vec<GoPolicy>>,
    tolerance: Option<Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct GoPolicy {
    #[serde(rename = "Type")]
    kind: Value,
    value: Value,
    period_seconds: Value,
}

impl GoBehavior {
    fn from_v2(b: &Value) -> Self {
        let rules = |r: &Value| {
            r.is_object().then(|| GoRules {
                stabilization_window_seconds: given(r, "stabilizationWindowSeconds"),
                select_policy: given(r, "selectPolicy"),
                policies: r["policies"].as_array().map(|ps| {
                    ps.iter()
                        .map(|p| GoPolicy {
                            kind: given(p, "type").unwrap_or_else(|| json!("")),
                            value: given(p, "value").unwrap_or_else(|| json!(0)),
                            period_seconds: given(p, "periodSeconds").unwrap_or_else(|| json!(0)),
                        })
                        .collect()
                }),
                tolerance: given(r, "tolerance"),
            })
        };
        GoBehavior {
            scale_up: rules(&b["scaleUp"]),
            scale_down: rules(&b["scaleDown"]),
        }
    }
}

// ---- back to v2, as upstream's decoder reads the annotations ----

/// Go's decoder matches field names case-insensitively.
fn field<'a>(v: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    v.get(name)
        .or_else(|| {
            v.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, x)| x)
        })
        .filter(|x| !x.is_null())
}

/// A string field (absent is empty); `None` when it has another type.
fn string_field(v: &Map<String, Value>, name: &str) -> Option<String> {
    match field(v, name) {
        None => Some(String::new()),
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => None,
    }
}

/// An optional value of the given JSON kind; `Err` when it has another kind.
fn typed(v: &Map<String, Value>, name: &str, ok: fn(&Value) -> bool) -> Result<Option<Value>, ()> {
    match field(v, name) {
        None => Ok(None),
        Some(x) if ok(x) => Ok(Some(x.clone())),
        Some(_) => Err(()),
    }
}

fn is_quantity(v: &Value) -> bool {
    v.is_string() || v.is_number()
}

/// An optional quantity; a JSON number (which Go's Quantity also reads) kept as its string.
fn quantity(v: &Map<String, Value>, name: &str) -> Result<Option<Value>, ()> {
    Ok(typed(v, name, is_quantity)?.map(|q| match q {
        Value::Number(n) => Value::String(n.to_string()),
        other => other,
    }))
}

fn is_integer(v: &Value) -> bool {
    v.as_i64().is_some_and(|n| i32::try_from(n).is_ok())
}

/// Inserts `value` under `key` when it is set.
fn put(target: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        target.insert(key.into(), v);
    }
}

fn metric_identifier(name: String, selector: Option<Value>) -> Value {
    let mut id = Map::new();
    id.insert("name".into(), Value::String(name));
    put(&mut id, "selector", selector);
    Value::Object(id)
}

fn reference_to_v2(v: Option<&Value>) -> Option<Value> {
    let Some(v) = v else {
        return Some(json!({ "kind": "", "name": "" }));
    };
    let r = v.as_object()?;
    let mut out = Map::new();
    out.insert("kind".into(), Value::String(string_field(r, "kind")?));
    out.insert("name".into(), Value::String(string_field(r, "name")?));
    let api_version = string_field(r, "apiVersion")?;
    if !api_version.is_empty() {
        out.insert("apiVersion".into(), Value::String(api_version));
    }
    Some(Value::Object(out))
}

fn target(kind: &str, values: [(&str, Option<Value>); 3]) -> Value {
    let mut t = Map::new();
    t.insert("type".into(), json!(kind));
    for (k, v) in values {
        put(&mut t, k, v);
    }
    Value::Object(t)
}

/// autoscaling/v1 MetricSpec → v2, as upstream's Convert_v1_*MetricSource_To_autoscaling_*.
fn metric_spec_to_v2(m: &Value) -> Option<Value> {
    let m = m.as_object()?;
    let kind = string_field(m, "type")?;
    let source = |name: &str| field(m, name).map(Value::as_object);
    let mut out = Map::new();
    out.insert("type".into(), Value::String(kind));
    if let Some(s) = source("object") {
        let s = s?;
        let value = quantity(s, "targetValue").ok()?.unwrap_or(json!("0"));
        let average = quantity(s, "averageValue").ok()?;
        let kind = if average.is_some() {
            "AverageValue"
        } else {
            "Value"
        };
        out.insert(
            "object".into(),
            json!({
                "describedObject": reference_to_v2(field(s, "target"))?,
                "metric": metric_identifier(string_field(s, "metricName")?,
                    typed(s, "selector", Value::is_object).ok()?),
                "target": target(kind, [("value", Some(value)), ("averageValue", average),
                    ("averageUtilization", None)]),
            }),
        );
    }
    if let Some(s) = source("pods") {
        let s = s?;
        let average = quantity(s, "targetAverageValue")
            .ok()?
            .unwrap_or(json!("0"));
        out.insert(
            "pods".into(),
            json!({
                "metric": metric_identifier(string_field(s, "metricName")?,
                    typed(s, "selector", Value::is_object).ok()?),
                "target": target("AverageValue", [("averageValue", Some(average)),
                    ("value", None), ("averageUtilization", None)]),
            }),
        );
    }
    for name in ["resource", "containerResource"] {
        if let Some(s) = source(name) {
            let s = s?;
            let utilization = typed(s, "targetAverageUtilization", is_integer).ok()?;
            let average = quantity(s, "targetAverageValue").ok()?;
            let kind = if utilization.is_some() {
                "Utilization"
            } else {
                "AverageValue"
            };
            let mut r = Map::new();
            r.insert("name".into(), Value::String(string_field(s, "name")?));
            if name == "containerResource" {
                r.insert(
                    "container".into(),
                    Value::String(string_field(s, "container")?),
                );
            }
            r.insert(
                "target".into(),
                target(
                    kind,
                    [
                        ("averageValue", average),
                        ("averageUtilization", utilization),
                        ("value", None),
                    ],
                ),
            );
            out.insert(name.into(), Value::Object(r));
        }
    }
    if let Some(s) = source("external") {
        let s = s?;
        let value = quantity(s, "targetValue").ok()?;
        let average = quantity(s, "targetAverageValue").ok()?;
        let kind = if value.is_none() {
            "AverageValue"
        } else {
            "Value"
        };
        out.insert(
            "external".into(),
            json!({
                "metric": metric_identifier(string_field(s, "metricName")?,
                    typed(s, "metricSelector", Value::is_object).ok()?),
                "target": target(kind, [("value", value), ("averageValue", average),
                    ("averageUtilization", None)]),
            }),
        );
    }
    Some(Value::Object(out))
}

/// autoscaling/v1 MetricStatus → v2.
fn metric_status_to_v2(m: &Value) -> Option<Value> {
    let m = m.as_object()?;
    let kind = string_field(m, "type")?;
    let source = |name: &str| field(m, name).map(Value::as_object);
    let current = |values: [(&str, Option<Value>); 2]| {
        let mut c = Map::new();
        for (k, v) in values {
            put(&mut c, k, v);
        }
        Value::Object(c)
    };
    let mut out = Map::new();
    out.insert("type".into(), Value::String(kind));
    if let Some(s) = source("object") {
        let s = s?;
        let value = quantity(s, "currentValue").ok()?.unwrap_or(json!("0"));
        out.insert(
            "object".into(),
            json!({
                "describedObject": reference_to_v2(field(s, "target"))?,
                "metric": metric_identifier(string_field(s, "metricName")?,
                    typed(s, "selector", Value::is_object).ok()?),
                "current": current([("value", Some(value)),
                    ("averageValue", quantity(s, "averageValue").ok()?)]),
            }),
        );
    }
    if let Some(s) = source("pods") {
        let s = s?;
        let average = quantity(s, "currentAverageValue")
            .ok()?
            .unwrap_or(json!("0"));
        out.insert(
            "pods".into(),
            json!({
                "metric": metric_identifier(string_field(s, "metricName")?,
                    typed(s, "selector", Value::is_object).ok()?),
                "current": current([("averageValue", Some(average)), ("value", None)]),
            }),
        );
    }
    for name in ["resource", "containerResource"] {
        if let Some(s) = source(name) {
            let s = s?;
            let average = quantity(s, "currentAverageValue")
                .ok()?
                .unwrap_or(json!("0"));
            let utilization = typed(s, "currentAverageUtilization", is_integer).ok()?;
            let mut r = Map::new();
            r.insert("name".into(), Value::String(string_field(s, "name")?));
            if name == "containerResource" {
                r.insert(
                    "container".into(),
                    Value::String(string_field(s, "container")?),
                );
            }
            let mut c = Map::new();
            c.insert("averageValue".into(), average);
            put(&mut c, "averageUtilization", utilization);
            r.insert("current".into(), Value::Object(c));
            out.insert(name.into(), Value::Object(r));
        }
    }
    if let Some(s) = source("external") {
        let s = s?;
        let value = quantity(s, "currentValue").ok()?.unwrap_or(json!("0"));
        out.insert(
            "external".into(),
            json!({
                "metric": metric_identifier(string_field(s, "metricName")?,
                    typed(s, "metricSelector", Value::is_object).ok()?),
                "current": current([("value", Some(value)),
                    ("averageValue", quantity(s, "currentAverageValue").ok()?)]),
            }),
        );
    }
    Some(Value::Object(out))
}

fn condition_to_v2(c: &Value) -> Option<Value> {
    let c = c.as_object()?;
    let mut out = Map::new();
    for name in ["type", "status", "reason", "message"] {
        let v = string_field(c, name)?;
        if !v.is_empty() || matches!(name, "type" | "status") {
            out.insert(name.into(), Value::String(v));
        }
    }
    put(
        &mut out,
        "lastTransitionTime",
        typed(c, "lastTransitionTime", Value::is_string).ok()?,
    );
    Some(Value::Object(out))
}

/// The behavior annotation (internal Go type) → v2 `spec.behavior`; `None` when it does not
/// decode or sets neither direction (upstream then keeps no behavior).
fn behavior_to_v2(b: &Value) -> Option<Value> {
    let b = b.as_object()?;
    let rules = |name: &str| -> Option<Option<Value>> {
        let Some(r) = field(b, name) else {
            return Some(None);
        };
        let r = r.as_object()?;
        let mut out = Map::new();
        put(
            &mut out,
            "stabilizationWindowSeconds",
            typed(r, "StabilizationWindowSeconds", is_integer).ok()?,
        );
        put(
            &mut out,
            "selectPolicy",
            typed(r, "SelectPolicy", Value::is_string).ok()?,
        );
        put(&mut out, "tolerance", quantity(r, "Tolerance").ok()?);
        if let Some(policies) = field(r, "Policies") {
            let policies = policies
                .as_array()?
                .iter()
                .map(|p| {
                    let p = p.as_object()?;
                    let number =
                        |n: &str| typed(p, n, is_integer).ok().map(|v| v.unwrap_or(json!(0)));
                    Some(
                        json!({ "type": string_field(p, "Type")?, "value": number("Value")?,
                        "periodSeconds": number("PeriodSeconds")? }),
                    )
                })
                .collect::<Option<Vec<_>>>()?;
            out.insert("policies".into(), Value::Array(policies));
        }
        Some(Some(Value::Object(out)))
    };
    let (up, down) = (rules("ScaleUp")?, rules("ScaleDown")?);
    if up.is_none() && down.is_none() {
        return None;
    }
    let mut out = Map::new();
    put(&mut out, "scaleUp", up);
    put(&mut out, "scaleDown", down);
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2_hpa() -> Value {
        json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": { "name": "h", "annotations": { "team": "a" } },
            "spec": {
                "scaleTargetRef": { "apiVersion": "apps/v1", "kind": "Deployment", "name": "web" },
                "minReplicas": 1, "maxReplicas": 5,
                "metrics": [
                    { "type": "Resource", "resource": { "name": "memory",
                        "target": { "type": "AverageValue", "averageValue": "500Mi" } } },
                    { "type": "Resource", "resource": { "name": "cpu",
                        "target": { "type": "Utilization", "averageUtilization": 60 } } },
                    { "type": "Pods", "pods": { "metric": { "name": "qps",
                        "selector": { "matchLabels": { "a": "b" } } },
                        "target": { "type": "AverageValue", "averageValue": "1k" } } },
                ],
                "behavior": { "scaleDown": { "selectPolicy": "Max",
                    "policies": [{ "type": "Percent", "value": 100, "periodSeconds": 15 }] } },
            },
            "status": {
                "currentReplicas": 2, "desiredReplicas": 2,
                "currentMetrics": [{ "type": "Resource", "resource": { "name": "cpu",
                    "current": { "averageUtilization": 40, "averageValue": "200m" } } }],
                "conditions": [{ "type": "AbleToScale", "status": "True",
                    "lastTransitionTime": "2026-11-29T10:00:00Z",
                    "reason": "SucceededGetScale", "message": "ok" }],
            },
        })
    }

    #[test]
    fn v1_keeps_what_it_cannot_show_in_upstreams_annotations() {
        let mut hpa = v2_hpa();
        v2_to_v1(&mut hpa);
        let annotations = &hpa["metadata"]["annotations"];
        assert_eq!(annotations["team"], "a");
        assert_eq!(
            annotations[METRIC_SPECS],
            r#"[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"500Mi"}},{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"1k","selector":{"matchLabels":{"a":"b"}}}}]"#
        );
        assert_eq!(
            annotations[METRIC_STATUSES],
            r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":40,"currentAverageValue":"200m"}}]"#
        );
        assert_eq!(
            annotations[BEHAVIOR],
            r#"{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":null,"SelectPolicy":"Max","Policies":[{"Type":"Percent","Value":100,"PeriodSeconds":15}],"Tolerance":null}}"#
        );
        assert_eq!(
            annotations[CONDITIONS],
            r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2026-11-29T10:00:00Z","reason":"SucceededGetScale","message":"ok"}]"#
        );
        assert_eq!(hpa["spec"]["targetCPUUtilizationPercentage"], 60);
        assert_eq!(hpa["status"]["currentCPUUtilizationPercentage"], 40);
        assert!(hpa["spec"].get("metrics").is_none() && hpa["spec"].get("behavior").is_none());
        assert!(hpa["status"].get("conditions").is_none());
    }

    #[test]
    fn a_v1_round_trip_restores_the_v2_object() {
        let original = v2_hpa();
        let mut hpa = original.clone();
        v2_to_v1(&mut hpa);
        v1_to_v2(&mut hpa);
        // The CPU target comes back after the other metrics, as upstream's conversion puts it.
        let mut want = original.clone();
        let metrics = want["spec"]["metrics"].as_array_mut().expect("metrics");
        let cpu = metrics.remove(1);
        metrics.push(cpu);
        // v1 carries the current metrics in full: the annotation restores them as they were.
        assert_eq!(hpa["spec"], want["spec"]);
        assert_eq!(hpa["status"], want["status"]);
        assert_eq!(
            hpa["metadata"],
            json!({ "name": "h", "annotations": { "team": "a" } })
        );
    }

    #[test]
    fn a_v1_object_without_annotations_gets_the_implicit_cpu_target() {
        let mut hpa = json!({ "metadata": { "name": "h" }, "spec": { "maxReplicas": 3 } });
        v1_to_v2(&mut hpa);
        assert_eq!(
            hpa["spec"]["metrics"],
            json!([{ "type": "Resource", "resource": { "name": "cpu",
                "target": { "type": "Utilization", "averageUtilization": 80 } } }])
        );
    }

    #[test]
    fn annotations_that_do_not_decode_are_ignored_and_dropped() {
        let mut hpa = json!({
            "metadata": { "name": "h", "annotations": {
                METRIC_SPECS: "not json", BEHAVIOR: r#"{"ScaleUp":{"Policies":"x"}}"#,
                CONDITIONS: r#"[{"type":1}]"#, METRIC_STATUSES: "[]" } },
            "spec": { "maxReplicas": 3, "targetCPUUtilizationPercentage": 50 },
            "status": { "currentReplicas": 1, "desiredReplicas": 1 },
        });
        v1_to_v2(&mut hpa);
        assert!(hpa["metadata"].get("annotations").is_none(), "{hpa}");
        assert_eq!(hpa["spec"]["metrics"].as_array().map(Vec::len), Some(1));
        assert!(hpa["spec"].get("behavior").is_none());
        assert!(hpa["status"].get("conditions").is_none());
        assert!(hpa["status"].get("currentMetrics").is_none());
    }

    #[test]
    fn a_behavior_annotation_decodes_case_insensitively() {
        let b = json!({ "scaleup": { "stabilizationWindowSeconds": 30, "SelectPolicy": "Min",
            "Policies": [{ "Type": "Pods", "Value": 2, "PeriodSeconds": 60 }] }, "ScaleDown": null });
        assert_eq!(
            behavior_to_v2(&b),
            Some(
                json!({ "scaleUp": { "stabilizationWindowSeconds": 30, "selectPolicy": "Min",
                "policies": [{ "type": "Pods", "value": 2, "periodSeconds": 60 }] } })
            )
        );
        assert_eq!(behavior_to_v2(&json!({ "ScaleUp": null })), None);
    }
}

//! Event validation as upstream's pkg/apis/core/validation/events.go: the legacy rules every
//! Event passes, and the strict ones of writes through events.k8s.io/v1 (ValidateEventCreate
//! and ValidateEventUpdate). Objects arrive in their stored core/v1 form, so the paths are
//! upstream's internal field names (`message`, `count`, `firstTimestamp`, ...), as upstream
//! reports them.

use k1s_apimachinery::FieldError;
use k1s_apimachinery::gofmt::{quote, time_string};
use k1s_apimachinery::status::{BadValue, FieldErrorType};
use k1s_apimachinery::validation::{is_dns1123_subdomain, is_qualified_name};
use serde_json::Value;

use crate::registry::Strategy;

const REPORTING_INSTANCE_LIMIT: usize = 128;
const ACTION_LIMIT: usize = 128;
const REASON_LIMIT: usize = 128;
const NOTE_LIMIT: usize = 1024;

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A time field left at Go's zero value (absent, null or empty).
fn unset(v: &Value, pointer: &str) -> bool {
    v.pointer(pointer)
        .is_none_or(|t| t.is_null() || t.as_str() == Some(""))
}

/// legacyValidateEvent: namespaces agree, and an Event with an eventTime names its reporter,
/// action and reason within upstream's lengths.
pub fn legacy_event_errors(e: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ns = text(e, "/metadata/namespace");
    let involved_ns = text(e, "/involvedObject/namespace");
    let mismatch = || {
        FieldError::invalid(
            "involvedObject.namespace",
            involved_ns,
            "does not match event.namespace",
        )
    };
    if unset(e, "/eventTime") {
        let ok = if involved_ns.is_empty() {
            ns.is_empty() || ns == "default"
        } else {
            ns == involved_ns
        };
        if !ok {
            errs.push(mismatch());
        }
    } else {
        if involved_ns.is_empty() && ns != "default" && ns != "kube-system" {
            errs.push(mismatch());
        }
        let controller = text(e, "/reportingComponent");
        if controller.is_empty() {
            errs.push(FieldError::required("reportingController", ""));
        }
        for m in is_qualified_name(controller) {
            errs.push(FieldError::invalid("reportingController", controller, m));
        }
        let too_long = |path: &str, limit: usize| {
            FieldError::invalid(path, "", format!("can have at most {limit} characters"))
        };
        for (path, pointer, limit) in [
            (
                "reportingInstance",
                "/reportingInstance",
                REPORTING_INSTANCE_LIMIT,
            ),
            ("action", "/action", ACTION_LIMIT),
            ("reason", "/reason", REASON_LIMIT),
        ] {
            let value = text(e, pointer);
            if value.is_empty() {
                errs.push(FieldError::required(path, ""));
            }
            if value.len() > limit {
                errs.push(too_long(path, limit));
            }
        }
        if text(e, "/message").len() > NOTE_LIMIT {
            errs.push(too_long("message", NOTE_LIMIT));
        }
    }
    for m in is_dns1123_subdomain(ns) {
        errs.push(FieldError::invalid("namespace", ns, m));
    }
    errs
}

/// validateV1EventSeries.
fn series_errors(e: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if e.get("series").is_some_and(|s| !s.is_null()) {
        if e.pointer("/series/count")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            < 2
        {
            errs.push(FieldError::invalid(
                "series.count",
                "",
                "should be at least 2",
            ));
        }
        if unset(e, "/series/lastObservedTime") {
            errs.push(FieldError::required("series.lastObservedTime", ""));
        }
    }
    errs
}

/// ValidateEventCreate for events.k8s.io/v1: the legacy rules, a series of at least 2, an
/// eventTime, a known type, and none of the deprecated core fields.
pub fn strict_create_errors(e: &Value) -> Vec<FieldError> {
    let mut errs = legacy_event_errors(e);
    errs.extend(series_errors(e));
    if unset(e, "/eventTime") {
        errs.push(FieldError::required("eventTime", ""));
    }
    let ty = text(e, "/type");
    if ty != "Normal" && ty != "Warning" {
        errs.push(FieldError::invalid(
            "type",
            "",
            format!("has invalid value: {ty}"),
        ));
    }
    for field in ["firstTimestamp", "lastTimestamp"] {
        if !unset(e, &format!("/{field}")) {
            errs.push(FieldError::invalid(field, "", "needs to be unset"));
        }
    }
    if e.get("count").and_then(Value::as_i64).unwrap_or(0) != 0 {
        errs.push(FieldError::invalid("count", "", "needs to be unset"));
    }
    if !text(e, "/source/component").is_empty() || !text(e, "/source/host").is_empty() {
        errs.push(FieldError::invalid("source", "", "needs to be unset"));
    }
    errs
}

/// ValidateEventUpdate for events.k8s.io/v1: the legacy rules, a changed series valid, and
/// every other field fixed.
pub fn strict_update_errors(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = legacy_event_errors(new);
    if new.get("series") != old.get("series") {
        errs.extend(series_errors(new));
    }
    // Upstream's list, in its order (reason twice), by internal field name.
    for (path, key) in [
        ("involvedObject", "involvedObject"),
        ("reason", "reason"),
        ("message", "message"),
        ("source", "source"),
        ("firstTimestamp", "firstTimestamp"),
        ("lastTimestamp", "lastTimestamp"),
        ("count", "count"),
        ("reason", "reason"),
        ("type", "type"),
        ("eventTime", "eventTime"),
        ("action", "action"),
        ("related", "related"),
        ("reportingController", "reportingComponent"),
        ("reportingInstance", "reportingInstance"),
    ] {
        let value = |v: &Value| v.get(key).cloned().unwrap_or(Value::Null);
        if value(new) != value(old) {
            errs.push(FieldError::new(
                FieldErrorType::Invalid,
                path,
                go_value(key, new.get(key)),
                "field is immutable",
            ));
        }
    }
    errs
}

/// An internal Event field's value as upstream's field error prints it: structs with Go's
/// `%#v`, times with `time.Time.String` (UTC), a nil pointer as `null`, absent values as their
/// Go zero values.
fn go_value(key: &str, v: Option<&Value>) -> BadValue {
    let v = v.filter(|v| !v.is_null());
    let text = |field: &str| {
        quote(
            v.and_then(|v| v.get(field))
                .and_then(Value::as_str)
                .unwrap_or(""),
        )
    };
    let raw = match key {
        "related" if v.is_none() => "null".to_string(),
        "involvedObject" | "related" => format!(
            "core.ObjectReference{{Kind:{}, Namespace:{}, Name:{}, UID:{}, APIVersion:{}, \
             ResourceVersion:{}, FieldPath:{}}}",
            text("kind"),
            text("namespace"),
            text("name"),
            text("uid"),
            text("apiVersion"),
            text("resourceVersion"),
            text("fieldPath"),
        ),
        "source" => format!(
            "core.EventSource{{Component:{}, Host:{}}}",
            text("component"),
            text("host")
        ),
        "firstTimestamp" | "lastTimestamp" | "eventTime" => v
            .and_then(Value::as_str)
            .and_then(time_string)
            .unwrap_or_else(|| "0001-01-01 00:00:00 +0000 UTC".to_string()),
        "count" => return BadValue::Json(v.cloned().unwrap_or(Value::from(0))),
        _ => return BadValue::Json(v.cloned().unwrap_or(Value::String(String::new()))),
    };
    BadValue::Raw(raw)
}

/// Events written through events.k8s.io/v1: core's Event behaviour with the strict rules.
pub struct EventsV1;
impl Strategy for EventsV1 {
    fn default(&self, obj: &mut Value) {
        super::core::Events.default(obj);
    }
    fn selectable_fields(&self) -> &'static [&'static str] {
        super::core::Events.selectable_fields()
    }
    fn allow_create_on_update(&self) -> bool {
        super::core::Events.allow_create_on_update()
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        strict_create_errors(obj)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        strict_update_errors(new, old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn printed(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn legacy_rules_apply_to_core_events() {
        let ok = json!({"metadata": {"namespace": "default"}, "involvedObject": {"kind": "Node", "name": "n"},
            "eventTime": null, "reason": "x"});
        assert!(legacy_event_errors(&ok).is_empty());
        let bad = json!({"metadata": {"namespace": "a"}, "involvedObject": {"namespace": "b"}});
        assert_eq!(
            printed(&legacy_event_errors(&bad)),
            ["involvedObject.namespace: Invalid value: \"b\": does not match event.namespace"]
        );
        let new_style = json!({"metadata": {"namespace": "a"}, "involvedObject": {},
            "eventTime": "2026-11-28T10:00:00.000000Z", "reportingComponent": "a b",
            "reason": "r".repeat(129), "message": "m".repeat(1025)});
        assert_eq!(
            printed(&legacy_event_errors(&new_style)),
            [
                "involvedObject.namespace: Invalid value: \"\": does not match event.namespace",
                "reportingController: Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "reportingInstance: Required value",
                "action: Required value",
                "reason: Invalid value: \"\": can have at most 128 characters",
                "message: Invalid value: \"\": can have at most 1024 characters",
            ]
        );
    }

    #[test]
    fn strict_rules_for_events_k8s_io() {
        let e = json!({"metadata": {"namespace": "default"}, "involvedObject": {"namespace": "default"},
            "eventTime": null, "type": "Odd", "count": 3, "firstTimestamp": "2026-11-28T10:00:00Z",
            "source": {"component": "kubelet"}, "series": {"count": 1}});
        assert_eq!(
            printed(&strict_create_errors(&e)),
            [
                "series.count: Invalid value: \"\": should be at least 2",
                "series.lastObservedTime: Required value",
                "eventTime: Required value",
                "type: Invalid value: \"\": has invalid value: Odd",
                "firstTimestamp: Invalid value: \"\": needs to be unset",
                "count: Invalid value: \"\": needs to be unset",
                "source: Invalid value: \"\": needs to be unset",
            ]
        );
        let old = json!({"metadata": {"namespace": "default"}, "involvedObject": {"namespace": "default"},
            "eventTime": "2026-11-28T10:00:00.000000Z", "reportingComponent": "k1s/scheduler",
            "reportingInstance": "i", "action": "Binding", "reason": "Scheduled", "type": "Normal"});
        let mut new = old.clone();
        new["series"] = json!({"count": 2, "lastObservedTime": "2026-11-28T10:01:00.000000Z"});
        assert!(strict_update_errors(&new, &old).is_empty());
        new["reason"] = json!("Other");
        assert_eq!(
            printed(&strict_update_errors(&new, &old)),
            [
                "reason: Invalid value: \"Other\": field is immutable",
                "reason: Invalid value: \"Other\": field is immutable",
            ]
        );
        // Structs print as Go's %#v of the internal types, times as time.Time's String.
        let mut new = old.clone();
        new["involvedObject"] =
            json!({"kind": "Pod", "namespace": "default", "name": "p", "uid": "u1"});
        new["source"] = json!({"component": "kubelet"});
        new["eventTime"] = json!("2026-11-28T10:00:00.250000Z");
        new["related"] = json!({"kind": "Node", "name": "n"});
        new["firstTimestamp"] = json!("2026-11-28T09:00:00Z");
        new["count"] = json!(3);
        new.as_object_mut().map(|o| o.remove("action"));
        assert_eq!(
            printed(&strict_update_errors(&new, &old)),
            [
                "action: Required value",
                "involvedObject: Invalid value: core.ObjectReference{Kind:\"Pod\", Namespace:\"default\", \
                 Name:\"p\", UID:\"u1\", APIVersion:\"\", ResourceVersion:\"\", FieldPath:\"\"}: field is immutable",
                "source: Invalid value: core.EventSource{Component:\"kubelet\", Host:\"\"}: field is immutable",
                "firstTimestamp: Invalid value: 2026-11-28 09:00:00 +0000 UTC: field is immutable",
                "count: Invalid value: 3: field is immutable",
                "eventTime: Invalid value: 2026-11-28 10:00:00.25 +0000 UTC: field is immutable",
                "action: Invalid value: \"\": field is immutable",
                "related: Invalid value: core.ObjectReference{Kind:\"Node\", Namespace:\"\", Name:\"n\", \
                 UID:\"\", APIVersion:\"\", ResourceVersion:\"\", FieldPath:\"\"}: field is immutable",
            ]
        );
        let mut unrelated = new.clone();
        unrelated.as_object_mut().map(|o| o.remove("related"));
        let mut related = unrelated.clone();
        related["related"] = json!({"kind": "Node"});
        assert!(
            printed(&strict_update_errors(&unrelated, &related))
                .contains(&"related: Invalid value: null: field is immutable".to_string())
        );
    }
}

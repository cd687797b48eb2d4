//! Cell formatting shared by the printers: upstream's `HumanDuration`, timestamps, labels and
//! selectors, container lists, quantities, and tolerant JSON field access.

use jiff::Timestamp;
use k1s_apimachinery::selector::LabelSelector;
use serde_json::{Map, Value};

/// The value at `path` under `v`, if every step is an object holding the key (JSON `null`
/// counts as absent, as a nil pointer does upstream).
pub(super) fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for key in path {
        cur = cur.as_object()?.get(*key)?;
    }
    if cur.is_null() { None } else { Some(cur) }
}

/// The object at `path`, if present and an object (a non-nil struct pointer upstream).
pub(super) fn obj_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Map<String, Value>> {
    get(v, path).and_then(Value::as_object)
}

/// The string at `path`, or `""` (Go's zero value).
pub(super) fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    get(v, path).and_then(Value::as_str).unwrap_or("")
}

/// The string at `path` when present (a `*string` upstream).
pub(super) fn opt_str<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    get(v, path).and_then(Value::as_str)
}

/// The integer at `path`, or 0.
pub(super) fn int_at(v: &Value, path: &[&str]) -> i64 {
    get(v, path).and_then(as_int).unwrap_or(0)
}

/// The integer at `path` when present (a `*int32` upstream).
pub(super) fn opt_int(v: &Value, path: &[&str]) -> Option<i64> {
    get(v, path).and_then(as_int)
}

fn as_int(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_u64().map(|u| i64::try_from(u).unwrap_or(i64::MAX)))
        .or_else(|| v.as_f64().map(|f| f as i64))
}

/// The boolean at `path`, or false.
pub(super) fn bool_at(v: &Value, path: &[&str]) -> bool {
    get(v, path).and_then(Value::as_bool).unwrap_or(false)
}

/// The array at `path`, or an empty slice.
pub(super) fn arr_at<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    get(v, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The number of entries of the map (or list) at `path`.
pub(super) fn len_at(v: &Value, path: &[&str]) -> i64 {
    let n = match get(v, path) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    };
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `metadata.name`, or `""`.
pub(super) fn name(obj: &Value) -> &str {
    str_at(obj, &["metadata", "name"])
}

/// True when `metadata.deletionTimestamp` is set.
pub(super) fn deleting(obj: &Value) -> bool {
    get(obj, &["metadata", "deletionTimestamp"]).is_some()
}

/// The annotation `key`, if set.
pub(super) fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    get(obj, &["metadata", "annotations", key]).and_then(Value::as_str)
}

/// Parses an RFC 3339 timestamp (`metav1.Time` or `MicroTime`). Go's zero time
/// (`0001-01-01T00:00:00Z`) and anything unparseable count as unset.
pub(super) fn parse_time(v: Option<&Value>) -> Option<Timestamp> {
    let ts: Timestamp = v?.as_str()?.parse().ok()?;
    if ts.as_second() == GO_ZERO_TIME_SECONDS {
        return None;
    }
    Some(ts)
}

/// Unix seconds of Go's zero `time.Time` (0001-01-01T00:00:00Z).
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// `now - then` in nanoseconds, saturated to Go's `time.Duration` range.
pub(super) fn nanos_between(then: Timestamp, now: Timestamp) -> i64 {
    let d = now.as_nanosecond() - then.as_nanosecond();
    i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX })
}

/// Upstream's `translateTimestampSince`: `<unknown>` when unset, else `HumanDuration(now - t)`.
pub(super) fn since(v: Option<&Value>, now: Timestamp) -> String {
    parse_time(v).map_or_else(
        || "<unknown>".to_string(),
        |t| human_duration(nanos_between(t, now)),
    )
}

/// [`since`] on an already parsed time.
pub(super) fn since_ts(t: Timestamp, now: Timestamp) -> String {
    human_duration(nanos_between(t, now))
}

/// The AGE cell: time since `metadata.creationTimestamp`.
pub(super) fn age(obj: &Value, now: Timestamp) -> String {
    since(get(obj, &["metadata", "creationTimestamp"]), now)
}

/// `metadata.creationTimestamp` as the default table's `Created At` cell: RFC 3339 in UTC,
/// whole seconds, Go's zero time when unset.
pub(super) fn created_at(obj: &Value) -> String {
    match parse_time(get(obj, &["metadata", "creationTimestamp"])) {
        Some(t) => t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        None => "0001-01-01T00:00:00Z".to_string(),
    }
}

const SECOND: i64 = 1_000_000_000;
const MINUTE: i64 = 60 * SECOND;
const HOUR: i64 = 60 * MINUTE;

/// Upstream's `duration.HumanDuration`: a succinct duration with ~2-3 significant figures
/// (`45s`, `3m20s`, `25m`, `5h10m`, `2d3h`, `400d`, `3y45d`). Up to 2s in the future reads as
/// `0s`, further as `<invalid>`.
pub fn human_duration(nanos: i64) -> String {
    let seconds = nanos / SECOND;
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = nanos / MINUTE;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = nanos / HOUR;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// `labels.FormatLabels`: `k=v` pairs sorted by key, comma separated; `<none>` when empty.
pub(super) fn format_labels(map: Option<&Value>) -> String {
    let Some(map) = map.and_then(Value::as_object) else {
        return "<none>".to_string();
    };
    let mut pairs: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    if pairs.is_empty() {
        "<none>".to_string()
    } else {
        pairs.join(",")
    }
}

/// `metav1.LabelSelectorAsSelector(sel).String()`: `""` for a null or empty selector, `Err`
/// when the selector does not convert.
pub(super) fn selector_string(sel: Option<&Value>) -> Result<String, ()> {
    LabelSelector::from_json_opt(sel)
        .map(|s| s.to_string())
        .map_err(|_| ())
}

/// `metav1.FormatLabelSelector`: the selector string, `<none>` when empty, `<error>` when the
/// selector does not convert.
pub(super) fn format_label_selector(sel: Option<&Value>) -> String {
    match selector_string(sel) {
        Ok(s) if s.is_empty() => "<none>".to_string(),
        Ok(s) => s,
        Err(()) => "<error>".to_string(),
    }
}

/// Upstream's `layoutContainerCells`: container names and images, each comma separated.
pub(super) fn container_cells(containers: &[Value]) -> (String, String) {
    let names: Vec<&str> = containers.iter().map(|c| str_at(c, &["name"])).collect();
    let images: Vec<&str> = containers.iter().map(|c| str_at(c, &["image"])).collect();
    (names.join(","), images.join(","))
}

/// `intstr.IntOrString.String()`.
pub(super) fn int_or_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_i64().map_or_else(|| n.to_string(), |i| i.to_string()),
        other => other.to_string(),
    }
}

/// `resource.Quantity.String()` of a stored quantity (printed as stored); `"0"` when unset, as
/// the zero quantity prints.
pub(super) fn quantity(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "0".to_string(),
    }
}

/// Upstream's `printBool`: `True` / `False`.
pub(super) fn print_bool(b: bool) -> String {
    String::from(if b { "True" } else { "False" })
}

/// `helper.GetAccessModesAsString`: `RWO,ROX,RWX,RWOP` in that fixed order, deduplicated.
pub(super) fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| has(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// Upstream's `listWithMoreString`: `a,b,c + 2 more...`, or `<unset>` when empty.
pub(super) fn list_with_more(list: &[String], more: bool, count: usize, max: usize) -> String {
    let joined = list.join(",");
    if more {
        return format!("{joined} + {} more...", count.saturating_sub(max));
    }
    if joined.is_empty() {
        "<unset>".to_string()
    } else {
        joined
    }
}

/// `loadBalancerStatusStringer` as the server calls it (wide): the ingress IPs (else
/// hostnames), sorted and deduplicated, comma separated.
pub(super) fn load_balancer_status(status: Option<&Value>) -> String {
    let mut out: Vec<&str> = status
        .map(|s| arr_at(s, &["ingress"]))
        .unwrap_or_default()
        .iter()
        .filter_map(|ing| {
            let ip = str_at(ing, &["ip"]);
            let host = str_at(ing, &["hostname"]);
            if !ip.is_empty() {
                Some(ip)
            } else if !host.is_empty() {
                Some(host)
            } else {
                None
            }
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out.join(",")
}

/// Upstream's `hasJobCondition` shape: the first condition of `cond_type` decides whether it is
/// `True`.
pub(super) fn condition_true(conditions: &[Value], cond_type: &str) -> bool {
    conditions
        .iter()
        .find(|c| str_at(c, &["type"]) == cond_type)
        .is_some_and(|c| str_at(c, &["status"]) == "True")
}

/// Returns `s`, or `fallback` when `s` is empty.
pub(super) fn or(s: &str, fallback: &str) -> String {
    String::from(if s.is_empty() { fallback } else { s })
}

//! `fieldValidation=Strict|Warn|Ignore`: unknown fields (checked against the OpenAPI schema) and
//! duplicate fields in the request body, reported as upstream does (400 or `Warning` headers).

use std::fmt;

use k1s_apimachinery::ApiError;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Ignore,
    Warn,
    Strict,
}

/// The mode a request asked for; upstream's default is Warn.
pub fn mode(query: Option<&str>) -> Result<Mode, ApiError> {
    match query.unwrap_or("") {
        "" | "Warn" => Ok(Mode::Warn),
        "Strict" => Ok(Mode::Strict),
        "Ignore" => Ok(Mode::Ignore),
        other => Err(ApiError::bad_request(format!(
            "fieldValidation invalid value: {other}. Valid values are: Ignore, Warn, Strict"
        ))),
    }
}

/// Problems of a decoded body: unknown fields of `type_name` and duplicate keys in `json_body`.
/// Strict turns them into a 400; Warn returns them as warnings. Unknown fields are removed from
/// `obj` in every mode, as upstream's typed decoding drops them.
pub fn check(
    mode: Mode,
    type_name: Option<&str>,
    obj: &mut Value,
    json_body: Option<&[u8]>,
) -> Result<Vec<String>, ApiError> {
    let unknown = type_name
        .map(|t| crate::openapi::schemas().prune_unknown_fields(t, obj))
        .unwrap_or_default();
    report(mode, unknown, json_body)
}

/// [`check`] once the unknown fields are known (custom resources prune by their own schema).
/// Problems are listed in the order the body has them, as Go's strict decoder meets them.
pub fn report(
    mode: Mode,
    unknown: Vec<String>,
    json_body: Option<&[u8]>,
) -> Result<Vec<String>, ApiError> {
    if mode == Mode::Ignore {
        return Ok(Vec::new());
    }
    // Every key's position is needed only to order unknown fields among duplicates.
    let every_key = !unknown.is_empty();
    let keys = json_body
        .map(|b| keys_in_order(b, every_key))
        .unwrap_or_default();
    // (position in the body, problem); a path the body does not have (a YAML body) goes last.
    let mut problems: Vec<(usize, String)> = keys
        .iter()
        .enumerate()
        .filter(|(_, k)| k.duplicate)
        .map(|(i, k)| (i, format!("duplicate field \"{}\"", k.path)))
        .collect();
    problems.extend(unknown.iter().map(|path| {
        let at = keys
            .iter()
            .position(|k| &k.path == path)
            .unwrap_or(usize::MAX);
        (at, format!("unknown field \"{path}\""))
    }));
    problems.sort_by_key(|(at, _)| *at);
    let problems: Vec<String> = problems.into_iter().map(|(_, p)| p).collect();
    if mode == Mode::Strict && !problems.is_empty() {
        return Err(ApiError::bad_request(format!(
            "strict decoding error: {}",
            problems.join(", ")
        )));
    }
    Ok(problems)
}

/// Paths of keys that appear twice in one JSON object (serde_json keeps only the last).
pub fn duplicate_fields(body: &[u8]) -> Vec<String> {
    keys_in_order(body, false)
        .into_iter()
        .filter(|k| k.duplicate)
        .map(|k| k.path)
        .collect()
}

/// One key of a JSON body, in document order.
struct Key {
    path: String,
    /// The key appeared before in the same object.
    duplicate: bool,
}

/// The body's keys in document order: every key, or (`every` false) the duplicates only.
fn keys_in_order(body: &[u8], every: bool) -> Vec<Key> {
    let mut found = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(body);
    let _ = PathSeed {
        path: String::new(),
        found: &mut found,
        every,
    }
    .deserialize(&mut de);
    found
}

struct PathSeed<'a> {
    path: String,
    found: &'a mut Vec<Key>,
    every: bool,
}

impl<'de> DeserializeSeed<'de> for PathSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for PathSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                key.clone()
            } else {
                format!("{}.{key}", self.path)
            };
            let duplicate = !seen.insert(key);
            if duplicate || self.every {
                self.found.push(Key {
                    path: path.clone(),
                    duplicate,
                });
            }
            map.next_value_seed(PathSeed {
                path,
                found: self.found,
                every: self.every,
            })?;
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq
            .next_element_seed(PathSeed {
                path: format!("{}[{i}]", self.path),
                found: self.found,
                every: self.every,
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn finds_duplicate_keys_with_paths() {
        let body = br#"{"a":1,"spec":{"x":[{"n":1,"n":2}],"y":1,"y":2},"a":3}"#;
        assert_eq!(duplicate_fields(body), vec!["spec.x[0].n", "spec.y", "a"]);
        assert!(duplicate_fields(br#"{"a":{"a":1}}"#).is_empty());
    }

    #[test]
    fn problems_come_in_the_order_of_the_body() {
        // field_validation.go's typed-object test: the unknown field precedes the duplicate.
        let body = br#"{"spec":{"unknownField":"foo","replicas":2,"replicas":3,"other":1}}"#;
        let err = report(Mode::Strict, vec!["spec.unknownField".into()], Some(body)).unwrap_err();
        assert_eq!(
            err.message,
            "strict decoding error: unknown field \"spec.unknownField\", duplicate field \"spec.replicas\""
        );
        let body = br#"{"a":1,"a":2,"b":{"x":1}}"#;
        let warned = report(Mode::Warn, vec!["b.x".into()], Some(body)).unwrap();
        assert_eq!(
            warned,
            vec!["duplicate field \"a\"", "unknown field \"b.x\""]
        );
    }

    #[test]
    fn strict_rejects_warn_reports_and_unknown_fields_are_dropped() {
        let obj = serde_json::json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"bogus":1});
        let t = Some("io.k8s.api.core.v1.ConfigMap");
        let err = check(Mode::Strict, t, &mut obj.clone(), None).unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            "strict decoding error: unknown field \"bogus\""
        );
        let mut warned = obj.clone();
        let warnings = check(Mode::Warn, t, &mut warned, None).unwrap();
        assert_eq!(warnings, vec!["unknown field \"bogus\"".to_string()]);
        assert!(warned.get("bogus").is_none());
        let mut ignored = obj.clone();
        assert!(
            check(Mode::Ignore, t, &mut ignored, None)
                .unwrap()
                .is_empty()
        );
        assert!(ignored.get("bogus").is_none());
        assert_eq!(mode(Some("Nope")).unwrap_err().code, 400);
    }
}

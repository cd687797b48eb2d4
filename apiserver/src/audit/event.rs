//! The `audit.k8s.io/v1` Event and the per-request recorder that fills it as the request moves
//! on (upstream's `AuditContext`): what is kept depends on the level (Metadata: no bodies,
//! Request: the request object, RequestResponse: both), and omitted stages emit nothing.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::policy::{Level, RequestAuditConfig, Stage};
use crate::auth::UserInfo;

/// `authentication.k8s.io/v1` UserInfo as audit events carry it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EventUser {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl From<&UserInfo> for EventUser {
    fn from(u: &UserInfo) -> Self {
        EventUser {
            username: u.name.clone(),
            uid: u.uid.clone(),
            groups: u.effective_groups(),
            extra: u.extra.clone(),
        }
    }
}

/// The object a request is about.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// `responseStatus`: a `metav1.Status` with only the bounded fields (as upstream copies them).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ResponseStatus {
    pub metadata: serde_json::Map<String, Value>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(skip_serializing_if = "is_zero")]
    pub code: i32,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// One `audit.k8s.io/v1` Event, serialized with upstream's field order.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub kind: &'static str,
    pub api_version: &'static str,
    pub level: Level,
    #[serde(rename = "auditID")]
    pub audit_id: String,
    pub stage: Stage,
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    pub verb: String,
    pub user: EventUser,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impersonated_user: Option<EventUser>,
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectReference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_status: Option<ResponseStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_object: Option<Value>,
    pub request_received_timestamp: String,
    pub stage_timestamp: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// `metav1.MicroTime` format: `2006-01-02T15:04:05.000000Z`.
pub fn micro_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// What the filter chain knows about a request when auditing starts.
#[derive(Clone, Debug, Default)]
pub struct RequestMeta {
    /// Usually the `Audit-ID` header or a fresh UUID.
    pub audit_id: String,
    pub request_uri: String,
    pub verb: String,
    pub user: UserInfo,
    pub source_ips: Vec<String>,
    pub user_agent: String,
    pub object_ref: Option<ObjectReference>,
}

/// Upstream's annotation keys for the authorization decision.
pub const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
pub const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";

/// The audit record of one request. Created only when the level is above None.
#[derive(Clone, Debug)]
pub struct RequestAudit {
    config: RequestAuditConfig,
    event: Event,
}

impl RequestAudit {
    /// Starts auditing a request; `None` when the policy says level None.
    pub fn new(config: RequestAuditConfig, meta: RequestMeta) -> Option<Self> {
        Self::new_at(config, meta, jiff::Timestamp::now())
    }

    /// Like [`RequestAudit::new`] with an explicit receive time.
    pub fn new_at(
        config: RequestAuditConfig,
        meta: RequestMeta,
        received: jiff::Timestamp,
    ) -> Option<Self> {
        if config.level == Level::None {
            return None;
        }
        let received = micro_time(received);
        let event = Event {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level: config.level,
            audit_id: meta.audit_id,
            stage: Stage::RequestReceived,
            request_uri: meta.request_uri,
            verb: meta.verb,
            user: EventUser::from(&meta.user),
            impersonated_user: None,
            source_ips: meta.source_ips,
            user_agent: meta.user_agent,
            object_ref: meta.object_ref,
            response_status: None,
            request_object: None,
            response_object: None,
            request_received_timestamp: received.clone(),
            stage_timestamp: received,
            annotations: BTreeMap::new(),
        };
        Some(RequestAudit { config, event })
    }

    pub fn level(&self) -> Level {
        self.config.level
    }

    pub fn config(&self) -> &RequestAuditConfig {
        &self.config
    }

    pub fn set_impersonated_user(&mut self, user: &UserInfo) {
        self.event.impersonated_user = Some(EventUser::from(user));
    }

    pub fn set_object_ref(&mut self, object_ref: ObjectReference) {
        self.event.object_ref = Some(object_ref);
    }

    /// Fills `objectRef.uid`/`resourceVersion` (and the name, e.g. for generateName) from the
    /// object the request produced.
    pub fn complete_object_ref(&mut self, obj: &Value) {
        let Some(r) = self.event.object_ref.as_mut() else {
            return;
        };
        let meta = |k: &str| {
            obj.pointer(&format!("/metadata/{k}"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        if r.name.is_empty() {
            r.name = meta("name");
        }
        if r.uid.is_empty() {
            r.uid = meta("uid");
        }
        if r.resource_version.is_empty() {
            r.resource_version = meta("resourceVersion");
        }
    }

    pub fn add_annotation(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.event.annotations.insert(key.into(), value.into());
    }

    /// Records the authorization decision as upstream does (`allow`/`forbid` and the reason).
    pub fn set_authorization(&mut self, allowed: bool, reason: &str) {
        self.add_annotation(
            DECISION_ANNOTATION,
            if allowed { "allow" } else { "forbid" },
        );
        self.add_annotation(REASON_ANNOTATION, reason);
    }

    /// Keeps the decoded request body (Request level and above).
    pub fn set_request_object(&mut self, obj: &Value) {
        if self.config.level >= Level::Request {
            self.event.request_object = Some(self.strip(obj));
        }
    }

    /// Records the response: the code always; the fields of a `metav1.Status` body (when the
    /// response is one); the body itself at RequestResponse level.
    pub fn set_response(&mut self, code: u16, body: Option<&Value>) {
        let mut status = ResponseStatus {
            code: i32::from(code),
            ..Default::default()
        };
        if let Some(b) = body.filter(|b| b.get("kind").and_then(Value::as_str) == Some("Status")) {
            let s = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            status.status = s("status");
            status.message = s("message");
            status.reason = s("reason");
            status.details = b.get("details").filter(|d| !d.is_null()).cloned();
        }
        self.event.response_status = Some(status);
        if self.config.level >= Level::RequestResponse
            && let Some(b) = body
        {
            self.event.response_object = Some(self.strip(b));
        }
    }

    /// Removes `metadata.managedFields` (also of list items) when the policy asks.
    fn strip(&self, obj: &Value) -> Value {
        let mut obj = obj.clone();
        if self.config.omit_managed_fields {
            remove_managed_fields(&mut obj);
            if let Some(items) = obj.get_mut("items").and_then(Value::as_array_mut) {
                items.iter_mut().for_each(remove_managed_fields);
            }
        }
        obj
    }

    /// The event for `stage`, or `None` when the policy omits that stage.
    pub fn event(&self, stage: Stage) -> Option<Event> {
        self.event_at(stage, jiff::Timestamp::now())
    }

    pub fn event_at(&self, stage: Stage, now: jiff::Timestamp) -> Option<Event> {
        if self.config.omit_stages.contains(&stage) {
            return None;
        }
        let mut ev = self.event.clone();
        ev.stage = stage;
        ev.stage_timestamp = micro_time(now);
        if stage == Stage::RequestReceived {
            ev.response_status = None;
            ev.response_object = None;
        }
        Some(ev)
    }
}

fn remove_managed_fields(obj: &mut Value) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
}

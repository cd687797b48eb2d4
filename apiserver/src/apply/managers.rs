//! `metadata.managedFields` as a map from manager to owned field set: decoding, upstream's
//! entry order on encoding, and the cap on Update entries (`ancient-changes`).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::fieldpath::Set;

/// Upstream's cap on Update entries; older ones are merged per apiVersion.
pub const MAX_UPDATE_MANAGERS: usize = 10;
/// The manager the capped entries are merged into.
pub const ANCIENT_CHANGES: &str = "ancient-changes";

/// `Apply` or `Update`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Who owns a set, as upstream identifies an entry: the apiVersion counts only for Update
/// entries (an applier stays one entry across versions).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ManagerId {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    pub subresource: String,
}

impl ManagerId {
    pub fn new(manager: &str, operation: Operation, api_version: &str, subresource: &str) -> Self {
        ManagerId {
            manager: manager.to_string(),
            operation,
            api_version: match operation {
                Operation::Apply => String::new(),
                Operation::Update => api_version.to_string(),
            },
            subresource: subresource.to_string(),
        }
    }

    /// How conflicts name the manager: `"kubectl-edit" using apps/v1`, `"mgr"`, with
    /// ` with subresource "status"` when it wrote through one.
    pub fn describe(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == Operation::Update {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }
}

/// One entry: the owned set, the apiVersion it is expressed in, and when it last changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub set: Set,
    pub api_version: String,
    pub time: Option<String>,
}

/// Every manager's entry.
pub type Managed = BTreeMap<ManagerId, Entry>;

/// Reads `metadata.managedFields`; an entry upstream could not decode is an error.
pub fn decode(list: Option<&Value>) -> Result<Managed, String> {
    let mut out = Managed::new();
    let Some(list) = list else {
        return Ok(out);
    };
    let Value::Array(entries) = list else {
        return Err("managedFields must be a list".into());
    };
    for e in entries {
        let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
        let operation = match text("operation") {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            other => return Err(format!("invalid operation {other:?}")),
        };
        if text("fieldsType") != "FieldsV1" {
            return Err(format!("invalid fieldsType {:?}", text("fieldsType")));
        }
        let set = match e.get("fieldsV1") {
            Some(v) => Set::from_fields_v1(v)?,
            None => Set::new(),
        };
        let id = ManagerId::new(
            text("manager"),
            operation,
            text("apiVersion"),
            text("subresource"),
        );
        let time = e.get("time").and_then(Value::as_str).map(str::to_string);
        out.insert(
            id,
            Entry {
                set,
                api_version: text("apiVersion").to_string(),
                time,
            },
        );
    }
    Ok(out)
}

/// Writes the entries in upstream's order: Apply before Update, then by time, manager,
/// apiVersion and subresource.
pub fn encode(managed: &Managed) -> Value {
    let mut entries: Vec<(&ManagerId, &Entry)> = managed.iter().collect();
    entries.sort_by(|(a, ea), (b, eb)| {
        a.operation
            .cmp(&b.operation)
            .then_with(|| {
                let t = |e: &Entry| e.time.clone().unwrap_or_default();
                t(ea).cmp(&t(eb))
            })
            .then_with(|| a.manager.cmp(&b.manager))
            .then_with(|| ea.api_version.cmp(&eb.api_version))
            .then_with(|| a.subresource.cmp(&b.subresource))
    });
    Value::Array(
        entries
            .into_iter()
            .map(|(id, e)| {
                let mut m = Map::new();
                m.insert("manager".into(), json!(id.manager));
                m.insert("operation".into(), json!(id.operation.as_str()));
                m.insert("apiVersion".into(), json!(e.api_version));
                if let Some(t) = &e.time {
                    m.insert("time".into(), json!(t));
                }
                m.insert("fieldsType".into(), json!("FieldsV1"));
                m.insert("fieldsV1".into(), e.set.to_fields_v1());
                if !id.subresource.is_empty() {
                    m.insert("subresource".into(), json!(id.subresource));
                }
                Value::Object(m)
            })
            .collect(),
    )
}

/// Merges the oldest Update entries beyond [`MAX_UPDATE_MANAGERS`] into one
/// `ancient-changes` entry per apiVersion, as upstream's capManagersManager.
pub fn cap_updates(managed: &mut Managed) {
    let mut updaters: Vec<ManagerId> = managed
        .keys()
        .filter(|id| id.operation == Operation::Update)
        .cloned()
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort_by(|a, b| {
        let t = |id: &ManagerId| managed.get(id).and_then(|e| e.time.clone());
        t(a).cmp(&t(b)).then_with(|| a.cmp(b))
    });
    let mut first_of_version: BTreeMap<String, ManagerId> = BTreeMap::new();
    let mut length = updaters.len();
    for id in updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(entry) = managed.get(&id).cloned() else {
            continue;
        };
        let version = entry.api_version.clone();
        let bucket = ManagerId::new(ANCIENT_CHANGES, Operation::Update, &version, "");
        match first_of_version.get(&version) {
            Some(first) => {
                if !managed.contains_key(&bucket)
                    && let Some(f) = managed.remove(first)
                {
                    managed.insert(bucket.clone(), f);
                }
                if let Some(b) = managed.get_mut(&bucket) {
                    b.set = entry.set.union(&b.set);
                    b.time = entry.time.clone();
                }
                if id != bucket {
                    managed.remove(&id);
                }
                length -= 1;
            }
            None => {
                first_of_version.insert(version, id);
            }
        }
    }
}

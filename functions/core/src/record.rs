//! What a decision read, kept: every decision the policy takes, at every trust level and in a dry
//! run, is recorded with the parts of the Application the policy reads — the rows of the map
//! ([`crate::app_map`]) a rule reads or the step carries — and not the whole object. A record is
//! therefore small (at most [`MAX_RECORD_BYTES`]) and complete for the policy: the map's own tests
//! show that a row marked not relevant changes no decision, so the policy decides the same on
//! [`fields_read`] as on the object it came from (`functions/core/tests/record.rs` holds that on
//! the whole corpus). That is what lets the report say what each level would have done and
//! `medic replay` decide again with another policy.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::app_map::{self, MapRow, RowKind, Use};
use crate::decision::Decision;
use crate::incident::History;

/// The recorded mode in which a decision was performed, `switch::Mode::Act`'s name (a test in
/// switch.rs holds them together). Named here so that reading a record, as the report does,
/// needs no switch: the escalator port carries the report, and the switch's port its errors.
pub const MODE_ACT: &str = "act";

/// The most a decision's record keeps of the Application, as JSON: an app of a few hundred
/// resources fits; a larger one is cut ([`Fields::truncated`]) and not replayed.
pub const MAX_RECORD_BYTES: usize = 16 * 1024;

/// The parts of an Application the policy reads, and whether they had to be cut to fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fields {
    /// The Application as the policy reads it: the same JSON shape as Argo CD's, with only the
    /// fields, annotations and labels of rule and carried rows.
    pub app: Value,
    /// True when list items were dropped to keep the record under [`MAX_RECORD_BYTES`]: the
    /// record still counts in the report, but a replay cannot decide it again faithfully.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// True when the map row is read by a rule or carried by the step.
fn kept(row: &MapRow) -> bool {
    matches!(row.used, Use::Rule { .. } | Use::Carried(_))
}

/// True when the annotation `key` has a row a rule reads or the step carries (a row key ending
/// in `/` is a prefix: `link.argocd.argoproj.io/`).
fn annotation_kept(key: &str) -> bool {
    app_map::rows().filter(|r| r.kind == RowKind::Annotation).any(|r| {
        let matches = if r.key.ends_with('/') { key.starts_with(r.key) } else { key == r.key };
        matches && kept(r)
    })
}

/// True when some field row lies below `path` (`path.x` or `path[]...`).
fn rows_below(path: &str) -> bool {
    app_map::rows()
        .any(|r| r.kind == RowKind::Field && r.key.strip_prefix(path).is_some_and(|rest| rest.starts_with('.') || rest.starts_with("[]")))
}

/// `value` at the swagger path `path` with only what the map keeps; `None` when nothing is kept.
fn project(path: &str, value: &Value) -> Option<Value> {
    // A Kubernetes raw field (`fieldsV1`) is `fieldsV1.Raw` in the swagger and its JSON object
    // on the wire.
    let raw = format!("{path}.Raw");
    let row = app_map::row_for_field(path).or_else(|| app_map::row_for_field(&raw).filter(|r| r.key == raw));
    // A field the map has one row for and nothing below: a map-typed field (annotations, labels:
    // its keys are data, not paths), a list of strings (finalizers), a raw field. Kept or dropped
    // whole.
    if let Some(row) = row
        && (row.key == raw || (row.key == path && (value.is_object() || value.is_array()) && !rows_below(path)))
    {
        if !kept(row) {
            return None;
        }
        if let (Value::Object(map), "metadata.annotations") = (value, path) {
            let read: Map<String, Value> = map.iter().filter(|(k, _)| annotation_kept(k)).map(|(k, v)| (k.clone(), v.clone())).collect();
            return Some(Value::Object(read));
        }
        return Some(value.clone());
    }
    match value {
        Value::Object(map) => {
            let out: Map<String, Value> = map
                .iter()
                .filter_map(|(k, v)| {
                    let child = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                    project(&child, v).map(|v| (k.clone(), v))
                })
                .collect();
            // Empty and absent read the same (every field of the model defaults).
            if out.is_empty() && !row.is_some_and(kept) {
                return None;
            }
            Some(Value::Object(out))
        }
        Value::Array(items) => {
            let child = format!("{path}[]");
            let projected: Vec<Option<Value>> = items.iter().map(|v| project(&child, v)).collect();
            if projected.iter().all(Option::is_none) && !row.is_some_and(kept) {
                return None;
            }
            // An item with nothing kept stays as an empty one: rules read positions and counts
            // (the last history entry, how many resources fail).
            let out = projected.into_iter().zip(items).map(|(p, item)| p.unwrap_or_else(|| empty_like(item))).collect();
            Some(Value::Array(out))
        }
        _ => row.filter(|r| kept(r)).map(|_| value.clone()),
    }
}

/// An item with nothing in it, of `item`'s shape.
fn empty_like(item: &Value) -> Value {
    match item {
        Value::Object(_) => Value::Object(Map::new()),
        Value::Array(_) => Value::Array(Vec::new()),
        _ => Value::Null,
    }
}

/// The parts of `app` (an Application's JSON as Argo CD serves it) the policy reads: every field
/// under a row a rule reads or the step carries, the annotations such rows name, and the labels
/// (a scope's selector may name any). Fields the map does not know are dropped: the swagger test
/// holds every field Argo CD serves to a row, so an unknown one is not Argo CD's. Cut to
/// [`MAX_RECORD_BYTES`] by dropping the last items of the longest lists first.
pub fn fields_read(app: &Value) -> Fields {
    let mut kept = project("", app).unwrap_or_else(|| Value::Object(Map::new()));
    let mut truncated = false;
    while serde_json::to_vec(&kept).map_or(0, |b| b.len()) > MAX_RECORD_BYTES {
        if !drop_last_of_longest_list(&mut kept) {
            break;
        }
        truncated = true;
    }
    Fields { app: kept, truncated }
}

/// Removes the last item of the longest list in `value`; false when there is no list left to cut.
fn drop_last_of_longest_list(value: &mut Value) -> bool {
    /// The JSON pointer and length of the longest non-empty list at or under `value`.
    fn longest(value: &Value, at: &str, best: &mut Option<(usize, String)>) {
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    longest(v, &format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), best);
                }
            }
            Value::Array(items) => {
                if !items.is_empty() && best.as_ref().is_none_or(|(n, _)| items.len() > *n) {
                    *best = Some((items.len(), at.to_owned()));
                }
                for (i, v) in items.iter().enumerate() {
                    longest(v, &format!("{at}/{i}"), best);
                }
            }
            _ => {}
        }
    }
    let mut best = None;
    longest(value, "", &mut best);
    best.and_then(|(_, at)| value.pointer_mut(&at)).and_then(Value::as_array_mut).and_then(Vec::pop).is_some()
}

/// One decision as recorded: what was decided, on what, and at which level, at every level and
/// in a dry run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionRecord {
    /// The decision as the policy returned it (with the trust level it applied).
    pub decision: Decision,
    /// The app's Argo CD project.
    pub project: String,
    /// What prompted the look (`on-sync-failed`, `sweep`, ...).
    pub trigger: String,
    /// What the gate made of the stack's parameters and the switch when it was taken: `act`,
    /// `dry-run` or `off` (the names of `switch::Mode`; [`MODE_ACT`] is the one that performs).
    pub mode: String,
    /// The incident's history the policy decided on (the ladder's rungs tried so far).
    pub history: History,
    /// The parts of the Application the policy read.
    pub fields: Fields,
    /// The names of the map rows the decision's rule read (`field status.sync.status`), for people.
    pub rows: Vec<String>,
    /// The freeze that covered the app (`medic freeze`), which made its level `observe`: a replay
    /// applies it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frozen: Option<String>,
}

impl DecisionRecord {
    /// The record of `decision`, taken on `app` (its JSON as read) with `history`, on `trigger`,
    /// in `mode`.
    pub fn new(decision: &Decision, app: &Value, project: &str, trigger: &str, mode: &str, history: &History) -> Self {
        Self {
            decision: decision.clone(),
            project: project.to_owned(),
            trigger: trigger.to_owned(),
            mode: mode.to_owned(),
            history: history.clone(),
            fields: fields_read(app),
            rows: app_map::rows_read_by(&decision.rule).iter().map(|r| r.name()).collect(),
            frozen: None,
        }
    }

    /// The record of a decision a freeze covered (`why`: the freeze as it describes itself).
    pub fn frozen_by(self, why: Option<String>) -> Self {
        Self { frozen: why, ..self }
    }

    /// When the decision was taken.
    pub fn decided_at(&self) -> DateTime<Utc> {
        self.decision.decided_at
    }
}

/// How long a closed incident and a decision are kept unless the stack says otherwise
/// (`MEDIC_HISTORY_DAYS`): a week of history is what `medic report --since 7d` reads.
pub const DEFAULT_RETENTION: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

//! The `fields` query parameter of List (docs/argo-cd-behaviour.md §1.6).
//!
//! List does not filter JSON generically: Argo CD's list forwarder
//! (`pkg/apiclient/application/forwarder_overwrite.go`, `appFields`) knows a fixed whitelist and
//! builds each item from the Go object field by field. That has consequences a client can trip
//! over, reproduced here:
//!
//! - Only whitelisted names count, each spelled `items.<path>`; anything else is ignored, so an
//!   item can come back as `{}`.
//! - `-` before the whole list excludes: the item then holds every *whitelisted* field not
//!   listed, not the rest of the object (no `metadata.resourceVersion`, no `status.conditions`).
//! - A field is emitted with its Go zero value when absent (`""` for strings, `null` for nil
//!   maps, pointers and zero timestamps, `{}` for structs), except the few guarded by a nil check
//!   in Go (everything under `status.operationState`, `status.resources` when empty,
//!   `operation.sync`), which are left out.
//! - `items.status.operationState.operation.sync` returns the operation's **syncResult**.
//! - When both `spec` and a `spec.<x>` are asked for, Go's map order decides between the full
//!   spec and an error; the simulator always answers the full spec.

use serde_json::{Map, Value};

use crate::json::lookup;
use crate::release::{Release, release_of};

/// When Go's accessor returns a nil interface (field skipped) instead of a zero value.
#[derive(Clone, Copy)]
enum Guard {
    Always,
    OperationState,
    NonEmptyResources,
    Operation,
}

/// The JSON of a Go zero value.
#[derive(Clone, Copy)]
enum Zero {
    Null,
    EmptyString,
    EmptyObject,
}

struct AppField {
    /// Where it goes in the item (and, unless `source` says otherwise, where it comes from).
    path: &'static str,
    source: &'static str,
    guard: Guard,
    zero: Zero,
    /// The first Argo CD version whose whitelist knows it; older ones drop it without a word.
    since: Release,
}

/// The oldest version the simulator serves: every field without a `since` of its own.
const ALWAYS: Release = (0, 0, 0);
/// v3.2.0 added `status.sourceHydrator` (absent at v3.1.16, present at v3.2.0).
const V3_2: Release = (3, 2, 0);
/// v3.5.0 added the parts of `spec` and `status.sync.revision` (argo-cd 566c622599, #25451:
/// "reduce loaded application data on list operation"); at v3.4.7 they are unknown.
const V3_5: Release = (3, 5, 0);

const fn field(path: &'static str, guard: Guard, zero: Zero) -> AppField {
    AppField { path, source: path, guard, zero, since: ALWAYS }
}

const fn field_since(path: &'static str, guard: Guard, zero: Zero, since: Release) -> AppField {
    AppField { path, source: path, guard, zero, since }
}

/// The v3.5.1 whitelist, each entry with the version that added it (the whitelist at v2.14.21,
/// v3.1.16, v3.3.7 and v3.4.7 is the entries older than each). `spec` comes after its sub-fields
/// so the full spec wins (see above).
const APP_FIELDS: &[AppField] = &[
    field("metadata.name", Guard::Always, Zero::EmptyString),
    field("metadata.namespace", Guard::Always, Zero::EmptyString),
    field("metadata.annotations", Guard::Always, Zero::Null),
    field("metadata.labels", Guard::Always, Zero::Null),
    field("metadata.creationTimestamp", Guard::Always, Zero::Null),
    field("metadata.deletionTimestamp", Guard::Always, Zero::Null),
    field_since("spec.destination", Guard::Always, Zero::EmptyObject, V3_5),
    field_since("spec.project", Guard::Always, Zero::EmptyString, V3_5),
    field_since("spec.source", Guard::Always, Zero::Null, V3_5),
    field_since("spec.sources", Guard::Always, Zero::Null, V3_5),
    field_since("spec.sourceHydrator", Guard::Always, Zero::Null, V3_5),
    field_since("spec.syncPolicy", Guard::Always, Zero::Null, V3_5),
    field("spec", Guard::Always, Zero::EmptyObject),
    field_since("status.sourceHydrator", Guard::Always, Zero::EmptyObject, V3_2),
    field("status.summary", Guard::Always, Zero::EmptyObject),
    field("status.sync.status", Guard::Always, Zero::EmptyString),
    field_since("status.sync.revision", Guard::Always, Zero::EmptyString, V3_5),
    field("status.health", Guard::Always, Zero::EmptyObject),
    field("status.operationState.startedAt", Guard::OperationState, Zero::Null),
    field("status.operationState.finishedAt", Guard::OperationState, Zero::Null),
    field("status.operationState.phase", Guard::OperationState, Zero::EmptyString),
    AppField {
        path: "status.operationState.operation.sync",
        source: "status.operationState.syncResult",
        guard: Guard::OperationState,
        zero: Zero::Null,
        since: ALWAYS,
    },
    field("status.resources", Guard::NonEmptyResources, Zero::Null),
    field("operation.sync", Guard::Operation, Zero::Null),
];

/// A parsed `fields` parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldSelection {
    names: Vec<String>,
    exclude: bool,
    /// The Argo CD release served: its whitelist.
    release: Release,
}

impl FieldSelection {
    /// `None` when the parameter is absent or empty (no filtering). `version` is the Argo CD
    /// served (`SimConfig::version`): its whitelist applies.
    pub(crate) fn parse(raw: Option<&str>, version: &str) -> Option<Self> {
        let raw = raw.filter(|r| !r.is_empty())?;
        let (exclude, list) = match raw.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, raw),
        };
        Some(FieldSelection { names: list.split(',').map(str::to_string).collect(), exclude, release: release_of(version) })
    }

    fn wants(&self, path: &str) -> bool {
        let listed = self.names.iter().any(|n| n.strip_prefix("items.") == Some(path));
        listed != self.exclude
    }

    /// Builds the item Argo CD would send for `app`.
    pub(crate) fn apply(&self, app: &Value) -> Value {
        let mut item = Map::new();
        for f in APP_FIELDS.iter().filter(|f| f.since <= self.release && self.wants(f.path)) {
            let value = match guarded(app, f.guard) {
                false => continue,
                true => lookup(app, f.source).cloned().unwrap_or(match f.zero {
                    Zero::Null => Value::Null,
                    Zero::EmptyString => Value::String(String::new()),
                    Zero::EmptyObject => Value::Object(Map::new()),
                }),
            };
            insert(&mut item, f.path, value);
        }
        Value::Object(item)
    }
}

fn guarded(app: &Value, guard: Guard) -> bool {
    let present = |path| lookup(app, path).is_some_and(|v| !v.is_null());
    match guard {
        Guard::Always => true,
        Guard::OperationState => present("status.operationState"),
        Guard::Operation => present("operation"),
        Guard::NonEmptyResources => lookup(app, "status.resources").and_then(Value::as_array).is_some_and(|r| !r.is_empty()),
    }
}

/// Sets `path` in `item`, creating maps on the way and replacing whatever is in the way (the
/// full `spec` replacing an earlier `spec.<x>` map).
fn insert(item: &mut Map<String, Value>, path: &str, value: Value) {
    let mut parts = path.split('.').peekable();
    let mut current = item;
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            current.insert(part.to_string(), value);
            return;
        }
        let slot = current.entry(part.to_string()).or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        match slot {
            Value::Object(map) => current = map,
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn app() -> Value {
        json!({
            "metadata": {"name": "web", "namespace": "argocd", "resourceVersion": "7",
                         "labels": {"env": "prod"}},
            "spec": {"project": "p", "destination": {"namespace": "web"}},
            "status": {"sync": {"status": "Synced", "revision": "abc"},
                       "health": {"status": "Healthy"},
                       "operationState": {"phase": "Succeeded", "syncResult": {"revision": "abc"}}}
        })
    }

    #[test]
    fn only_whitelisted_fields_are_kept() {
        let sel = FieldSelection::parse(
            Some("items.metadata.name,items.status.sync.status,items.metadata.resourceVersion,metadata.labels"),
            "v3.5.1",
        )
        .expect("selection");
        assert_eq!(sel.apply(&app()), json!({"metadata": {"name": "web"}, "status": {"sync": {"status": "Synced"}}}));
    }

    #[test]
    fn absent_fields_come_back_as_go_zero_values_unless_guarded() {
        let sel = FieldSelection::parse(
            Some("items.metadata.annotations,items.status.summary,items.operation.sync,items.status.operationState.finishedAt"),
            "v3.5.1",
        )
        .expect("selection");
        assert_eq!(
            sel.apply(&app()),
            json!({"metadata": {"annotations": null}, "status": {"summary": {},
                   "operationState": {"finishedAt": null}}})
        );
    }

    #[test]
    fn the_operation_sync_key_returns_the_sync_result() {
        let sel = FieldSelection::parse(Some("items.status.operationState.operation.sync"), "v3.5.1").expect("selection");
        assert_eq!(sel.apply(&app()), json!({"status": {"operationState": {"operation": {"sync": {"revision": "abc"}}}}}));
    }

    #[test]
    fn exclusion_keeps_the_other_whitelisted_fields_only() {
        let sel = FieldSelection::parse(Some("-items.spec,items.status.health"), "v3.5.1").expect("selection");
        let item = sel.apply(&app());
        assert!(item["metadata"].get("resourceVersion").is_none());
        assert_eq!(item["metadata"]["name"], "web");
        assert!(item["status"].get("health").is_none());
        assert_eq!(item["spec"]["project"], "p", "spec.project is a separate whitelist entry");
        assert!(item["spec"].get("destination").is_some());
        assert_eq!(item["status"]["operationState"]["phase"], "Succeeded");
    }

    #[test]
    fn the_full_spec_wins_over_its_sub_fields() {
        let sel = FieldSelection::parse(Some("items.spec.project,items.spec"), "v3.5.1").expect("selection");
        assert_eq!(sel.apply(&app())["spec"], app()["spec"]);
    }

    /// Before v3.5.0 the whitelist knows only the whole `spec`: its parts asked for are dropped
    /// (at v3.4.7 and older an item asked for `items.spec.project` comes back without a spec),
    /// and `status.sync.revision` with them.
    #[test]
    fn before_3_5_the_parts_of_spec_are_unknown_and_dropped() {
        let parts = Some("items.metadata.name,items.spec.project,items.spec.destination,items.status.sync.revision");
        let new = FieldSelection::parse(parts, "v3.5.1+109ca7c").unwrap().apply(&app());
        assert_eq!(new["spec"]["project"], "p");
        assert_eq!(new["status"]["sync"]["revision"], "abc");
        for old in ["v3.4.7", "v3.3.8+abc", "v2.14.21"] {
            let item = FieldSelection::parse(parts, old).unwrap().apply(&app());
            assert_eq!(item, json!({"metadata": {"name": "web"}}), "{old}");
            let whole = FieldSelection::parse(Some("items.spec"), old).unwrap().apply(&app());
            assert_eq!(whole["spec"], app()["spec"], "{old}");
        }
    }
}

//! What Argo CD's application controller would do to an app: refreshes and the sync operation
//! lifecycle (docs/argo-cd-behaviour.md §3), applied to the raw JSON.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use crate::ids;
use crate::json::{lookup, object_at, str_at, timestamp};
use crate::outcomes::{InvalidTask, RefreshOutcome, SyncOutcome};
use crate::release::Behaviour;
use crate::sync_request::SyncRequest;

/// Argo CD's refresh annotation, removed by the controller once the refresh is done.
const REFRESH_ANNOTATION: &str = "argocd.argoproj.io/refresh";

/// Applies a refresh: `outcome`, or when the source cannot be compared (`comparison_error`), that
/// error. Returns whether the app was written (and so needs a new resourceVersion).
pub(crate) fn refresh(app: &mut Value, outcome: RefreshOutcome, comparison_error: Option<&str>, now: DateTime<Utc>) -> bool {
    match outcome {
        RefreshOutcome::Drop => false,
        _ if let Some(message) = comparison_error => {
            compare_failed(app, message, now);
            true
        }
        RefreshOutcome::Noop => {
            reconciled(app, now);
            true
        }
        RefreshOutcome::Heal => {
            reconciled(app, now);
            make_synced_and_healthy(app, now);
            true
        }
    }
}

/// A compare that could not load the target state, as every profile's controller records it
/// once past the repo error grace (a refresh asked for skips the grace; controller/state.go:698-712
/// and :1011/:1034 at v3.5.1, :539-553 and :848/:871 at v2.14.21):
/// - `status.sync.status` and every resource's status become Unknown;
/// - health is assessed from the live objects, which have not changed: status and its
///   `lastTransitionTime` stay (appcontroller.go:2249-2255 at v3.5.1 moves the time only when the
///   status changes);
/// - the ComparisonError condition keeps its `lastTransitionTime` when its message is the same
///   (`SetConditions`, types.go:3730 at v3.5.1, :3151 at v2.14.21), and gets now when it changed;
/// - `reconciledAt` moves, and the refresh annotation is removed.
pub(crate) fn compare_failed(app: &mut Value, message: &str, now: DateTime<Utc>) {
    reconciled(app, now);
    object_at(app, &["status", "sync"]).insert("status".into(), json!("Unknown"));
    let status = object_at(app, &["status"]);
    if let Some(Value::Array(resources)) = status.get_mut("resources") {
        for resource in resources.iter_mut().filter_map(Value::as_object_mut) {
            resource.insert("status".into(), json!("Unknown"));
        }
    }
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    if let Value::Array(conditions) = conditions {
        let same = |c: &Value| {
            c.get("type").and_then(Value::as_str) == Some("ComparisonError") && c.get("message").and_then(Value::as_str) == Some(message)
        };
        if !conditions.iter().any(same) {
            conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some("ComparisonError"));
            conditions.push(json!({"type": "ComparisonError", "message": message, "lastTransitionTime": timestamp(now)}));
        }
    }
}

fn reconciled(app: &mut Value, now: DateTime<Utc>) {
    object_at(app, &["status"]).insert("reconciledAt".into(), timestamp(now));
    let annotations = object_at(app, &["metadata", "annotations"]);
    annotations.remove(REFRESH_ANNOTATION);
    if annotations.is_empty() {
        object_at(app, &["metadata"]).remove("annotations");
    }
}

/// The state after a successful reconcile or sync: Synced, Healthy, no error conditions.
fn make_synced_and_healthy(app: &mut Value, now: DateTime<Utc>) {
    let status = object_at(app, &["status"]);
    if let Some(Value::Array(conditions)) = status.get_mut("conditions") {
        conditions.retain(|c| c.get("type").and_then(Value::as_str).is_none_or(|t| !t.ends_with("Error")));
        if conditions.is_empty() {
            status.remove("conditions");
        }
    }
    object_at(app, &["status", "sync"]).insert("status".into(), json!("Synced"));
    let health = object_at(app, &["status", "health"]);
    // lastTransitionTime only moves when the status changes (≥3.1).
    if health.get("status").and_then(Value::as_str) != Some("Healthy") {
        health.insert("status".into(), json!("Healthy"));
        health.insert("lastTransitionTime".into(), timestamp(now));
        health.remove("message");
    }
    if let Some(Value::Array(resources)) = object_at(app, &["status"]).get_mut("resources") {
        for resource in resources.iter_mut().filter_map(Value::as_object_mut) {
            if resource.get("hook").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            resource.insert("status".into(), json!("Synced"));
            resource.remove("requiresPruning");
            if let Some(Value::Object(health)) = resource.get_mut("health")
                && health.get("status").and_then(Value::as_str) != Some("Healthy")
            {
                health.insert("status".into(), json!("Healthy"));
                health.remove("message");
            }
        }
    }
}

/// Whether automated sync is on (`automated` present and not `enabled: false`).
pub(crate) fn is_automated(app: &Value) -> bool {
    lookup(app, "spec.syncPolicy.automated")
        .and_then(Value::as_object)
        .is_some_and(|a| a.get("enabled").and_then(Value::as_bool) != Some(false))
}

/// The target revision the sync request asks for, before resolution (`getAmbiguousRevision`).
pub(crate) fn target_revision(app: &Value) -> String {
    str_at(app, "spec.source.targetRevision")
        .or_else(|| str_at(app, "spec.sources.0.targetRevision"))
        .filter(|r| !r.is_empty())
        .unwrap_or("HEAD")
        .to_string()
}

fn is_commit_sha(revision: &str) -> bool {
    revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Resolves the revision the way repo-server would, without Git: a commit SHA stands for itself,
/// the target revision resolves to the app's last compared revision (what the branch points at
/// now), and any other branch or tag to a stable made-up commit of its own.
fn resolve_revision(app: &Value, requested: &str) -> String {
    if is_commit_sha(requested) {
        return requested.to_string();
    }
    let known = str_at(app, "status.sync.revision").filter(|r| !r.is_empty());
    if (requested.is_empty() || requested == target_revision(app))
        && let Some(known) = known
    {
        return known.to_string();
    }
    let ambiguous = if requested.is_empty() { target_revision(app) } else { requested.to_string() };
    let repo = str_at(app, "spec.source.repoURL").unwrap_or_default();
    ids::sha(&format!("{repo}@{ambiguous}"))
}

/// The top-level `operation` Argo CD's Sync handler writes.
pub(crate) fn build_operation(app: &Value, req: &SyncRequest, username: &str) -> Value {
    let mut sync = Map::new();
    let revision = resolve_revision(app, &req.revision);
    let multi_source = lookup(app, "spec.sources").and_then(Value::as_array).is_some_and(|s| !s.is_empty());
    if !multi_source {
        if let Some(source) = lookup(app, "spec.source") {
            sync.insert("source".into(), source.clone());
        }
    } else if let Some(sources) = lookup(app, "spec.sources") {
        sync.insert("sources".into(), sources.clone());
    }
    if !revision.is_empty() {
        sync.insert("revision".into(), json!(revision));
    }
    if req.prune {
        sync.insert("prune".into(), json!(true));
    }
    if req.dry_run {
        sync.insert("dryRun".into(), json!(true));
    }
    // The request's options replace the spec's; without them the spec's apply.
    let options: Vec<Value> = match &req.sync_options {
        Some(options) => options.items.iter().map(|o| json!(o)).collect(),
        None => lookup(app, "spec.syncPolicy.syncOptions").and_then(Value::as_array).cloned().unwrap_or_default(),
    };
    if !options.is_empty() {
        sync.insert("syncOptions".into(), Value::Array(options));
    }
    if let Some(strategy) = &req.strategy {
        sync.insert("syncStrategy".into(), serde_json::to_value(strategy).unwrap_or(Value::Null));
    }
    if !req.resources.is_empty() {
        sync.insert("resources".into(), serde_json::to_value(&req.resources).unwrap_or(Value::Null));
    }
    if let Some(manifests) = &req.manifests {
        sync.insert("manifests".into(), json!(manifests));
    }
    let mut operation = Map::new();
    operation.insert("sync".into(), Value::Object(sync));
    operation.insert("initiatedBy".into(), json!({"username": username}));
    if !req.infos.is_empty() {
        operation.insert("info".into(), serde_json::to_value(&req.infos).unwrap_or(Value::Null));
    }
    let retry = match &req.retry_strategy {
        Some(retry) => serde_json::to_value(retry).ok(),
        None => lookup(app, "spec.syncPolicy.retry").cloned(),
    };
    if let Some(retry) = retry.filter(|r| r.as_object().is_some_and(|o| !o.is_empty())) {
        operation.insert("retry".into(), retry);
    }
    Value::Object(operation)
}

/// The controller picks the operation up: a fresh `operationState` in phase Running.
pub(crate) fn begin_operation(app: &mut Value, now: DateTime<Utc>) {
    let operation = app.get("operation").cloned().unwrap_or(Value::Null);
    object_at(app, &["status"])
        .insert("operationState".into(), json!({"operation": operation, "phase": "Running", "message": "", "startedAt": timestamp(now)}));
}

/// What became of a sync attempt when it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// Still running (`Hang`): nothing was written.
    Running,
    /// The operation ended, Succeeded or Failed.
    Ended,
    /// The attempt failed and the operation's `retry` schedules another: the phase stays
    /// Running, `retryCount` is one more, and the message says when the retry is due.
    RetryScheduled,
}

/// Ends the running attempt per the app's scripted outcome, as the controller's
/// `processRequestedAppOperation` does (controller/appcontroller.go:1600-1680 at v3.5.1): a failed
/// attempt with retries left schedules the next one, due at `retry_at`.
pub(crate) fn finish_sync(
    app: &mut Value,
    outcome: &SyncOutcome,
    behaviour: Behaviour,
    now: DateTime<Utc>,
    retry_at: DateTime<Utc>,
) -> Attempt {
    let revision = str_at(app, "operation.sync.revision").or_else(|| str_at(app, "status.sync.revision")).unwrap_or_default().to_string();
    let succeeded = || ("Succeeded", "successfully synced (all tasks run)".to_string(), None);
    let (phase, message, failed_tasks) = match outcome {
        SyncOutcome::Hang => return Attempt::Running,
        SyncOutcome::Succeed => succeeded(),
        SyncOutcome::Fail { message } => ("Failed", message.clone(), None),
        SyncOutcome::FailRevision { revision: bad, message } if *bad == revision => ("Failed", message.clone(), None),
        SyncOutcome::FailRevision { .. } => succeeded(),
        SyncOutcome::InvalidTasks { tasks } => {
            ("Failed", invalid_tasks_message(tasks, behaviour), Some(tasks.iter().map(invalid_task_result).collect()))
        }
    };
    let dry_run = lookup(app, "operation.sync.dryRun").and_then(Value::as_bool) == Some(true);
    let mut sync_result = Map::new();
    sync_result.insert("revision".into(), json!(revision));
    if let Some(source) = lookup(app, "operation.sync.source") {
        sync_result.insert("source".into(), source.clone());
    }
    match failed_tasks {
        Some(tasks) => {
            sync_result.insert("resources".into(), Value::Array(tasks));
        }
        None if phase == "Succeeded" => {
            sync_result.insert("resources".into(), Value::Array(resource_results(app)));
        }
        None => {}
    }
    let retries = lookup(app, "status.operationState.retryCount").and_then(Value::as_i64).unwrap_or(0);
    let limit = lookup(app, "operation.retry.limit").and_then(Value::as_i64).unwrap_or(0);
    let terminating = str_at(app, "status.operationState.phase") == Some("Terminating");
    let retry = phase == "Failed" && !terminating && (limit < 0 || retries < limit);
    let started = lookup(app, "status.operationState.startedAt").cloned();
    let state = object_at(app, &["status", "operationState"]);
    state.insert("finishedAt".into(), timestamp(now));
    state.insert("syncResult".into(), Value::Object(sync_result));
    if retry {
        let attempt = retries + 1;
        let due = retry_at.format("%-I:%M%p");
        let message = match behaviour.names_the_retry() {
            true => format!("{message}. Retrying attempt #{attempt} at {due}."),
            false => format!("{message} due to application controller sync timeout. Retrying attempt #{attempt} at {due}."),
        };
        state.insert("phase".into(), json!("Running"));
        state.insert("message".into(), json!(message));
        state.insert("retryCount".into(), json!(attempt));
        return Attempt::RetryScheduled;
    }
    let message = match (phase, retries) {
        ("Failed", n) if n > 0 => format!("{message} (retried {n} times)."),
        _ => message,
    };
    state.insert("phase".into(), json!(phase));
    state.insert("message".into(), json!(message));
    if phase == "Succeeded" && !dry_run {
        make_synced_and_healthy(app, now);
        record_history(app, &revision, started, now);
    }
    // Completion is followed by a refresh of the app, which moves reconciledAt.
    object_at(app, &["status"]).insert("reconciledAt".into(), timestamp(now));
    remove_operation(app);
    Attempt::Ended
}

/// A deny window holds the running operation: it stays Running, and says so
/// (controller/sync.go:126 at v3.5.1, :180 at v2.14.21).
/// Returns whether the app changed.
pub(crate) fn hold_for_window(app: &mut Value) -> bool {
    const HELD: &str = "Sync operation blocked by sync window";
    let state = object_at(app, &["status", "operationState"]);
    let changed = state.get("message").and_then(Value::as_str) != Some(HELD);
    state.insert("message".into(), json!(HELD));
    changed
}

/// The retry a failed attempt scheduled starts (controller/appcontroller.go:1570-1580 at
/// v3.5.1): `finishedAt` cleared and, from 3.2, the message names the attempt; with
/// `retry.refresh` the revision is dropped, so the retry resolves the latest one.
pub(crate) fn begin_retry(app: &mut Value, behaviour: Behaviour) {
    let attempt = lookup(app, "status.operationState.retryCount").and_then(Value::as_i64).unwrap_or(0);
    let refresh = behaviour.retry_refresh() && lookup(app, "operation.retry.refresh").and_then(Value::as_bool) == Some(true);
    if refresh {
        for path in [&["operation", "sync"][..], &["status", "operationState", "operation", "sync"][..]] {
            let sync = object_at(app, path);
            sync.remove("revision");
            sync.remove("revisions");
        }
    }
    let state = object_at(app, &["status", "operationState"]);
    state.remove("finishedAt");
    if behaviour.names_the_retry() {
        let latest = if refresh { " with latest revisions" } else { "" };
        state.insert("message".into(), json!(format!("Retrying operation{latest}. Attempt #{attempt}")));
    }
}

/// `one or more synchronization tasks are not valid`, with the tasks' messages sorted and
/// de-duplicated from 3.5.0 (gitops-engine pkg/sync/sync_context.go:494-499 at v3.5.1).
fn invalid_tasks_message(tasks: &[InvalidTask], behaviour: Behaviour) -> String {
    let mut messages: Vec<&str> = tasks.iter().map(|t| t.message.as_str()).filter(|m| !m.is_empty()).collect();
    messages.sort_unstable();
    messages.dedup();
    match behaviour.lists_invalid_tasks() && !messages.is_empty() {
        true => format!("one or more synchronization tasks are not valid: {}", messages.join("; ")),
        false => "one or more synchronization tasks are not valid".to_string(),
    }
}

fn invalid_task_result(task: &InvalidTask) -> Value {
    json!({
        "group": task.group, "version": task.version, "kind": task.kind, "namespace": task.namespace, "name": task.name,
        "status": "SyncFailed", "message": task.message, "syncPhase": "Sync"
    })
}

fn resource_results(app: &Value) -> Vec<Value> {
    let resources = lookup(app, "status.resources").and_then(Value::as_array);
    resources
        .into_iter()
        .flatten()
        .filter(|r| r.get("hook").and_then(Value::as_bool) != Some(true))
        .map(|r| {
            let kind = r.get("kind").and_then(Value::as_str).unwrap_or_default();
            let name = r.get("name").and_then(Value::as_str).unwrap_or_default();
            let mut result = Map::new();
            for key in ["group", "version", "kind", "namespace", "name"] {
                let value = r.get(key).cloned().unwrap_or_else(|| json!(""));
                result.insert(key.into(), value);
            }
            result.insert("status".into(), json!("Synced"));
            result.insert("message".into(), json!(format!("{}/{name} unchanged", kind.to_lowercase())));
            result.insert("syncPhase".into(), json!("Sync"));
            Value::Object(result)
        })
        .collect()
}

fn record_history(app: &mut Value, revision: &str, started: Option<Value>, now: DateTime<Utc>) {
    let initiated_by = lookup(app, "status.operationState.operation.initiatedBy").cloned();
    let source = lookup(app, "spec.source").cloned();
    let status = object_at(app, &["status"]);
    let history = status.entry("history").or_insert_with(|| json!([]));
    if !history.is_array() {
        *history = json!([]);
    }
    if let Value::Array(entries) = history {
        let next_id = entries.iter().filter_map(|e| e.get("id").and_then(Value::as_i64)).max().unwrap_or(-1) + 1;
        let mut entry = Map::new();
        entry.insert("id".into(), json!(next_id));
        entry.insert("revision".into(), json!(revision));
        entry.insert("deployedAt".into(), timestamp(now));
        if let Some(started) = started {
            entry.insert("deployStartedAt".into(), started);
        }
        if let Some(source) = source {
            entry.insert("source".into(), source);
        }
        if let Some(initiated_by) = initiated_by {
            entry.insert("initiatedBy".into(), initiated_by);
        }
        entries.push(Value::Object(entry));
        // Argo CD keeps revisionHistoryLimit (default 10) entries.
        let excess = entries.len().saturating_sub(10);
        entries.drain(..excess);
    }
}

fn remove_operation(app: &mut Value) {
    if let Value::Object(map) = app {
        map.remove("operation");
    }
}

/// Whether Terminate has something to terminate: Argo CD needs both `operation` and
/// `status.operationState`.
pub(crate) fn has_operation(app: &Value) -> bool {
    app.get("operation").is_some_and(|o| !o.is_null()) && lookup(app, "status.operationState").is_some_and(|s| !s.is_null())
}

pub(crate) fn mark_terminating(app: &mut Value) {
    object_at(app, &["status", "operationState"]).insert("phase".into(), json!("Terminating"));
}

/// The controller finishes a termination: phase Failed, `Operation terminated`.
pub(crate) fn finish_termination(app: &mut Value, now: DateTime<Utc>) {
    let state = object_at(app, &["status", "operationState"]);
    state.insert("phase".into(), json!("Failed"));
    state.insert("message".into(), json!("Operation terminated"));
    state.insert("finishedAt".into(), timestamp(now));
    remove_operation(app);
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 1, 12, 0, 0).single().expect("time")
    }

    fn broken_app() -> Value {
        json!({
            "metadata": {"name": "web", "annotations": {REFRESH_ANNOTATION: "normal"}},
            "spec": {"source": {"repoURL": "r", "targetRevision": "main"},
                     "syncPolicy": {"automated": {"prune": false}, "syncOptions": ["CreateNamespace=true"]}},
            "status": {
                "sync": {"status": "OutOfSync", "revision": "0123456789012345678901234567890123456789"},
                "health": {"status": "Progressing", "lastTransitionTime": "2026-11-01T10:00:00Z"},
                "conditions": [{"type": "ComparisonError", "message": "x"},
                               {"type": "OrphanedResourceWarning", "message": "y"}],
                "reconciledAt": "2026-11-01T10:00:00Z"
            }
        })
    }

    #[test]
    fn heal_clears_errors_and_makes_the_app_synced_and_healthy() {
        let mut app = broken_app();
        assert!(refresh(&mut app, RefreshOutcome::Heal, None, now()));
        assert_eq!(app["status"]["sync"]["status"], "Synced");
        assert_eq!(app["status"]["health"], json!({"status": "Healthy", "lastTransitionTime": "2026-11-01T12:00:00Z"}));
        assert_eq!(app["status"]["conditions"], json!([{"type": "OrphanedResourceWarning", "message": "y"}]));
        assert_eq!(app["status"]["reconciledAt"], "2026-11-01T12:00:00Z");
        assert!(app["metadata"].get("annotations").is_none());
    }

    #[test]
    fn a_dropped_refresh_changes_nothing() {
        let mut app = broken_app();
        assert!(!refresh(&mut app, RefreshOutcome::Drop, None, now()));
        assert!(!refresh(&mut app, RefreshOutcome::Drop, Some("down"), now()), "a dropped refresh compares nothing");
        assert_eq!(app, broken_app());
    }

    #[test]
    fn a_failed_compare_keeps_health_and_the_condition_s_time_while_its_message_holds() {
        let mut app = broken_app();
        app["status"]["resources"] = json!([{"kind": "Deployment", "name": "web", "status": "Synced"}]);
        assert!(refresh(&mut app, RefreshOutcome::Heal, Some("x"), now()), "the error wins over the script");
        assert_eq!(app["status"]["sync"]["status"], "Unknown");
        assert_eq!(app["status"]["resources"][0]["status"], "Unknown");
        assert_eq!(app["status"]["health"], broken_app()["status"]["health"], "health is the live objects'");
        assert_eq!(app["status"]["reconciledAt"], "2026-11-01T12:00:00Z");
        let comparison =
            |app: &Value| app["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "ComparisonError").cloned();
        assert_eq!(comparison(&app), Some(json!({"type": "ComparisonError", "message": "x"})), "same message: its time kept");

        assert!(refresh(&mut app, RefreshOutcome::Noop, Some("y"), now()));
        assert_eq!(
            comparison(&app),
            Some(json!({"type": "ComparisonError", "message": "y", "lastTransitionTime": "2026-11-01T12:00:00Z"}))
        );
        assert_eq!(app["status"]["conditions"].as_array().map(Vec::len), Some(2), "the warning stays");
    }

    #[test]
    fn the_operation_falls_back_to_the_spec_options_and_resolves_the_revision() {
        let req = SyncRequest::default();
        let op = build_operation(&broken_app(), &req, "bot");
        assert_eq!(op["sync"]["revision"], "0123456789012345678901234567890123456789");
        assert_eq!(op["sync"]["syncOptions"], json!(["CreateNamespace=true"]));
        assert_eq!(op["initiatedBy"], json!({"username": "bot"}));
        assert!(op.get("info").is_none());

        let other = SyncRequest { revision: "release-1".into(), ..SyncRequest::default() };
        let op = build_operation(&broken_app(), &other, "bot");
        let resolved = op["sync"]["revision"].as_str().unwrap_or_default();
        assert!(is_commit_sha(resolved) && resolved != "0123456789012345678901234567890123456789");
    }
}

//! Classify: the stages that name one failure mode from the Application alone, in order.

use super::*;
use crate::cause::{CauseClass, cause_of};

/// The field managers the ApplicationSet controller writes Applications as. It sets its User-Agent
/// to `argocd-applicationset-controller/<version> (<platform>)`
/// (argo-cd `cmd/argocd-applicationset-controller/commands/applicationset_controller.go`) and the API
/// server names an Update's manager after the User-Agent's first segment; objects written before
/// that carry the legacy name.
pub(super) const APPSET_MANAGERS: &[&str] = &["argocd-applicationset-controller", "applicationset-controller"];

/// Names the failure mode of a full Application at `now`.
///
/// The stages run in order and the first that recognises something wins: a deletion; a prune
/// beyond the blast radius (before anything that could act, even a refresh, since a refresh can
/// start an automated sync that prunes); a stale status (what it says is old news, so refresh
/// before believing anything else); a hand edit of an ApplicationSet-generated app; the running
/// operation; the failed one; the conditions; a self-heal loop; health and sync.
pub fn classify(app: &Application, now: DateTime<Utc>, cfg: &PolicyConfig) -> Finding {
    classify_deletion(app, now, cfg)
        .map(|f| f.stage("deletion"))
        .or_else(|| classify_prune_risk(app, cfg).map(|f| f.stage("prune-risk")))
        .or_else(|| classify_stale_reconcile(app, now, cfg).map(|f| f.stage("stale-status")))
        .or_else(|| classify_appset_hand_edit(app, cfg).map(|f| f.stage("appset-hand-edit")))
        .or_else(|| classify_running_operation(app, now, cfg).map(|f| f.stage("running-operation")))
        .or_else(|| classify_failed_operation(app, cfg).map(|f| f.stage("failed-operation")))
        .or_else(|| classify_conditions(app, cfg).map(|f| f.stage("conditions")))
        .or_else(|| classify_self_heal_loop(app, cfg).map(|f| f.stage("self-heal-loop")))
        .or_else(|| classify_hydration(app).map(|f| f.stage("hydration")))
        .unwrap_or_else(|| classify_health_and_sync(app, now, cfg).stage("health-and-sync"))
}

pub(super) fn classify_deletion(app: &Application, now: DateTime<Utc>, cfg: &PolicyConfig) -> Option<Finding> {
    let deleting_since = app.metadata.deletion_timestamp?;
    let finding = if now - deleting_since > secs(cfg.deletion_timeout_secs) && !app.metadata.finalizers.is_empty() {
        Finding::new(
            FailureMode::DeletionStuck,
            format!(
                "deletion requested at {} is still blocked by finalizers {}",
                rfc3339(deleting_since),
                app.metadata.finalizers.join(", ")
            ),
        )
    } else {
        Finding::new(FailureMode::AppDeleting, format!("deletion requested at {}", rfc3339(deleting_since)))
    };
    Some(
        finding
            .began(Some(deleting_since))
            .with("metadata.deletionTimestamp", rfc3339(deleting_since))
            .with("metadata.finalizers", app.metadata.finalizers.join(",")),
    )
}

/// The managedFields entry of a hand edit to an ApplicationSet-generated app's spec, made after
/// the ApplicationSet controller last wrote it (so not yet reverted).
/// A spec field the ApplicationSet ignores (`ignoreApplicationDifferences`) is not reverted, so an
/// edit confined to such fields is not a conflict.
pub fn appset_hand_edit<'a>(app: &'a Application, cfg: &PolicyConfig) -> Option<&'a crate::app::ManagedFieldsEntry> {
    app.application_set()?;
    let fields = &app.metadata.managed_fields;
    let is_appset = |m: &crate::app::ManagedFieldsEntry| APPSET_MANAGERS.contains(&m.manager.as_str());
    let appset_last = fields.iter().filter(|m| is_appset(m)).filter_map(|m| m.time).max()?;
    fields
        .iter()
        .filter(|m| !is_appset(m) && m.fields_v1.get("f:spec").is_some())
        .filter(|m| m.time.is_some_and(|t| t > appset_last))
        .filter(|m| !edited_paths(&m.fields_v1).iter().all(|p| ignored_by_appset(p, &cfg.appset_ignored_fields)))
        .max_by_key(|m| m.time)
}

/// The JSON pointers of the fields a managedFields `fieldsV1` set holds, down to list items (whose
/// `k:`/`v:`/`i:` keys cannot be ignored one by one, as Argo CD's own docs note).
pub(super) fn edited_paths(fields: &serde_json::Value) -> Vec<String> {
    fn walk(node: &serde_json::Value, at: &str, out: &mut Vec<String>) {
        let children: Vec<_> = node.as_object().into_iter().flatten().filter(|(k, _)| k.starts_with("f:")).collect();
        if children.is_empty() {
            out.push(at.to_owned());
        }
        for (k, v) in children {
            walk(v, &format!("{at}/{}", &k[2..]), out);
        }
    }
    let mut out = Vec::new();
    walk(fields, "", &mut out);
    out.into_iter().filter(|p| p.starts_with("/spec")).collect()
}

pub(super) fn ignored_by_appset(path: &str, ignored: &[String]) -> bool {
    ignored.iter().any(|i| {
        let i = i.trim_end_matches('/');
        path == i || path.starts_with(&format!("{i}/"))
    })
}

pub(super) fn classify_appset_hand_edit(app: &Application, cfg: &PolicyConfig) -> Option<Finding> {
    let appset = app.application_set()?;
    let edit = appset_hand_edit(app, cfg)?;
    Some(
        Finding::new(
            FailureMode::AppSetHandEdit,
            format!(
                "`{}` changed spec at {} but ApplicationSet `{}` generates this app and will revert it",
                edit.manager,
                ts(&edit.time),
                appset.name
            ),
        )
        .began(edit.time)
        .with("metadata.ownerReferences[kind=ApplicationSet].name", appset.name.clone())
        .with("metadata.managedFields[].manager", edit.manager.clone()),
    )
}

/// When the episode an operation belongs to began, if Argo Medic started that operation: its own
/// syncs carry the incident's start in `operation.info`, so re-running a failed sync continues the
/// incident instead of opening a new one (which would restart the ladder and derive new keys).
pub(super) fn episode_start(state: &crate::app::OperationState) -> Option<DateTime<Utc>> {
    let op = state.operation.as_ref()?;
    let began = op.info.iter().find(|i| i.name == crate::app::INCIDENT_BEGAN_INFO_NAME)?;
    began.value.parse().ok()
}

/// `<group>/<Kind>/<name>` named by `waiting for healthy state of ...`, if any.
pub(super) fn waiting_for_healthy(message: &str) -> Option<(String, String, String)> {
    let rest = &message[message.find("waiting for healthy state of ")? + "waiting for healthy state of ".len()..];
    let token = rest.split_whitespace().next()?;
    let mut parts = token.splitn(3, '/');
    Some((parts.next()?.to_owned(), parts.next()?.to_owned(), parts.next()?.trim_end_matches(['.', ',']).to_owned()))
}

pub(super) fn classify_running_operation(app: &Application, now: DateTime<Utc>, cfg: &PolicyConfig) -> Option<Finding> {
    let state = app.status.operation_state.as_deref();
    let running = state.is_some_and(|s| s.phase == phase::RUNNING || s.phase == phase::TERMINATING);
    if app.operation.is_none() && !running {
        return None;
    }
    let message = state.map_or("", |s| s.message.as_str());
    let started = state.and_then(|s| s.started_at).filter(|_| running);
    let age = started.map(|t| now - t);
    let base = |mode, detail: String| {
        Finding::new(mode, detail)
            .began(state.and_then(episode_start).or(started))
            .with("status.operationState.phase", state.map_or("", |s| s.phase.as_str()))
            .with("status.operationState.startedAt", ts(&started))
            .with("status.operationState.message", message)
    };

    if FailureMode::SyncWindowBlocked.signalled_by(message) {
        return Some(base(FailureMode::SyncWindowBlocked, "the running sync is held by a sync window".into()));
    }
    let confirm: Vec<_> =
        app.status.resources.iter().filter(|r| r.requires_deletion_confirmation).map(|r| format!("{}/{}", r.kind, r.name)).collect();
    if !confirm.is_empty() {
        return Some(
            base(FailureMode::PruneConfirmPending, format!("{} resource(s) wait for a human to confirm their deletion", confirm.len()))
                .with("status.resources[requiresDeletionConfirmation]", confirm.join(", ")),
        );
    }
    let over = |limit: i64| age.is_some_and(|a| a > secs(limit));
    if let Some((group, kind, name)) = waiting_for_healthy(message).filter(|_| over(cfg.progressing_timeout_secs)) {
        let target = format!("{group}/{kind}/{name}");
        if !cfg.builtin_health_groups.contains(&group) {
            let f = base(
                FailureMode::CustomHealthNeverHealthy,
                format!("the operation has waited for custom resource {target} to become healthy since {}", ts(&started)),
            );
            // Past what the kind normally needs, the status is not lagging: the resource is stuck.
            return Some(match over(cfg.custom_health_bound(&group, &kind)) {
                true => f.futile_refresh().because("custom-health-past-bound"),
                false => f.because("custom-health"),
            });
        }
        // Pending PostSync hooks are not always listed in the result yet; any hook in the app
        // means a later phase is waiting on this health gate.
        if pending_post_sync_hooks(app) > 0 || app.has_hooks() {
            return Some(base(
                FailureMode::PostSyncBlockedByHealth,
                format!("PostSync hooks cannot run: {target} has not become healthy since {}", ts(&started)),
            ));
        }
    }
    // Retries of an attempt that failed for a cause that repeats fail the same way: tell a person
    // now, not at the operation timeout (`controller/appcontroller.go:1631` appends the retry).
    // Not when the next retry resolves a newer revision (`retry.refresh`, 3.2 and later): the
    // failure was the old commit's.
    if let Some(state) = state.filter(|s| s.phase == phase::RUNNING)
        && (state.retry_count.is_some_and(|n| n > 0) || state.message.contains(". Retrying attempt #"))
        && !next_retry_resolves_a_newer_revision(app, state, cfg)
    {
        let cause = cause_of(&state.message);
        let mode = match cause.class {
            CauseClass::Rejected => Some(FailureMode::ResourceRejected),
            CauseClass::Permission => Some(FailureMode::PermissionDenied),
            CauseClass::Configuration | CauseClass::Access => Some(FailureMode::SourceConfigError),
            _ => None,
        };
        if let Some(mode) = mode {
            return Some(
                base(mode, format!("every retry fails the same way: {}", cause.beneath))
                    .because("retries-of-a-repeating-failure")
                    .with("status.operationState.retryCount", state.retry_count.unwrap_or(0).to_string())
                    .with("cause", cause.class.as_str()),
            );
        }
    }
    if let Some(state) = state.filter(|s| s.phase == phase::RUNNING)
        && let Some(f) = retries_of_an_old_revision(app, state, cfg)
    {
        let (mode, rule, detail) = f;
        return Some(base(mode, detail).because(rule));
    }
    if over(cfg.operation_timeout_secs) {
        let minutes = age.map_or(0, |a| a.num_minutes());
        return Some(base(FailureMode::OperationRunningTooLong, format!("the operation has been running for {minutes} minutes")));
    }
    Some(base(FailureMode::OperationInProgress, "an operation is running".into()))
}

/// The running operation's retries resolve the latest revision (`retry.refresh` on Argo CD 3.2 and
/// later: controller/appcontroller.go:1575 at v3.5.1 drops the pinned revision before each retry),
/// and the revision it pinned is not the one the comparison holds now.
fn next_retry_resolves_a_newer_revision(app: &Application, state: &crate::app::OperationState, cfg: &PolicyConfig) -> bool {
    let Some(op) = state.operation.as_ref() else { return false };
    let refreshes = op.retry.as_ref().and_then(|r| r.refresh) == Some(true) && cfg.argocd_at_least(3, 2);
    let pinned = op.sync.as_ref().and_then(|s| crate::app::revision_of(&s.revision, &s.revisions));
    let target = app.revision();
    refreshes && pinned.is_some_and(|p| !target.is_empty() && p != target)
}

/// An automated operation retrying a revision that is no longer the target. Argo CD ≥3.2 with
/// `retry.refresh: true` drops the pinned revision before each retry and so picks up the new
/// commit (argo-cd `controller/appcontroller.go`, `Retry.Refresh`; argoproj/argo-cd#11494). Before
/// 3.2, or without the flag, every retry repeats the old revision; with `limit` < 0 it retries
/// forever and only a human (terminate) ends the loop. The version is assumed old when unknown.
pub(super) fn retries_of_an_old_revision(
    app: &Application,
    state: &crate::app::OperationState,
    cfg: &PolicyConfig,
) -> Option<(FailureMode, &'static str, String)> {
    let op = state.operation.as_ref()?;
    let retrying = state.retry_count.is_some_and(|n| n > 0) || state.message.starts_with("Retrying operation");
    // The single revisions, or a multi-source app's lists (the controller writes only those).
    let pinned = op.sync.as_ref().and_then(|s| crate::app::revision_of(&s.revision, &s.revisions))?;
    let target = Some(app.revision()).filter(|r| !r.is_empty() && app.status.sync.is_some())?;
    let (pinned, target) = (pinned.as_str(), target.as_str());
    if !retrying || pinned == target {
        return None;
    }
    let retry = op.retry.as_ref();
    let refreshes = retry.and_then(|r| r.refresh) == Some(true) && cfg.argocd_at_least(3, 2);
    let short = |r: &str| r.chars().take(10).collect::<String>();
    if refreshes {
        return Some((
            FailureMode::OperationInProgress,
            "retry-picks-latest-revision",
            format!(
                "retry {} of {} will sync the latest revision {} (retry.refresh)",
                state.retry_count.unwrap_or(0),
                short(pinned),
                short(target)
            ),
        ));
    }
    if retry.and_then(|r| r.limit).is_some_and(|l| l < 0) {
        // A known version before 3.2 has no `retry.refresh` to turn on: its API server drops the
        // field (types.go:1462 at v3.1.16), so its absence here says nothing of the spec in Git.
        let known_too_old = cfg.argocd_version.is_some() && !cfg.argocd_at_least(3, 2);
        let why = match (known_too_old, retry.and_then(|r| r.refresh)) {
            (true, _) | (false, Some(true)) => {
                format!("retry.refresh needs Argo CD 3.2 (this is {})", cfg.argocd_version.as_deref().unwrap_or("an unknown version"))
            }
            _ => "retry.refresh is off".to_owned(),
        };
        return Some((
            FailureMode::OperationRunningTooLong,
            "retries-pinned-to-old-revision",
            format!(
                "unlimited retries keep syncing {} although the target is now {}; {why}, so only terminating the operation lets the new revision sync",
                short(pinned),
                short(target)
            ),
        ));
    }
    None
}

pub(super) fn pending_post_sync_hooks(app: &Application) -> usize {
    app.result_resources()
        .iter()
        .filter(|r| r.hook_type == "PostSync" && !matches!(r.hook_phase.as_str(), "Succeeded" | "Failed" | "Error"))
        .count()
}

/// The first hook the last operation ran that failed.
pub fn failed_hook(app: &Application) -> Option<&ResourceResult> {
    app.result_resources().iter().find(|r| !r.hook_type.is_empty() && matches!(r.hook_phase.as_str(), "Failed" | "Error"))
}

pub(super) fn describe(r: &ResourceResult) -> String {
    let hook = if r.hook_type.is_empty() { String::new() } else { format!("{} hook ", r.hook_type) };
    format!("{hook}{}/{}", r.kind, r.name)
}

pub(super) fn is_transient(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    TRANSIENT_SIGNALS.iter().any(|s| lower.contains(s))
}

pub(super) fn classify_failed_operation(app: &Application, cfg: &PolicyConfig) -> Option<Finding> {
    let state = app.status.operation_state.as_ref()?;
    if !(state.phase == phase::FAILED || state.phase == phase::ERROR) {
        return None;
    }
    // Synced and Healthy after the failure: the workloads are fine, and only a hook that failed
    // (a migration, a smoke test) still makes it a failed deployment.
    let steady = app.sync_status() == sync_status::SYNCED && matches!(app.health_status(), health::HEALTHY | health::SUSPENDED);
    // A failure at an older revision is history: the app has moved on, judge its current state.
    // Only the result's own revision counts here (a failure with no result is judged current); a
    // multi-source app's is its revisions list.
    let op_revision = state.sync_result.as_ref().and_then(|r| crate::app::revision_of(&r.revision, &r.revisions));
    if op_revision.is_some_and(|r| r != app.revision()) {
        return None;
    }
    let message = state.message.as_str();
    let resources = app.result_resources();
    let finished = state.finished_at;
    let base = |mode, detail: String| {
        Finding::new(mode, detail)
            .began(episode_start(state).or(state.started_at))
            .with("status.operationState.phase", state.phase.clone())
            .with("status.operationState.message", message)
    };
    let with_resource = |f: Finding, i: usize, r: &ResourceResult| {
        f.with(format!("status.operationState.syncResult.resources[{i}]"), format!("{}: {}", describe(r), r.message))
    };
    let find = |pred: &dyn Fn(&ResourceResult) -> bool| resources.iter().enumerate().find(|(_, r)| pred(r));

    // A hook that could not even be created (a leftover from an earlier sync) is more specific
    // than a hook that ran and failed, and Argo CD marks both with hookPhase Failed.
    let after = if steady { " (the app is Synced and Healthy, but the deployment failed)" } else { "" };
    if let Some((i, hook)) = find(&|r| !r.hook_type.is_empty() && FailureMode::HookConflict.signalled_by(&r.message)) {
        return Some(with_resource(
            base(FailureMode::HookConflict, format!("{} could not be created: {}{after}", describe(hook), hook.message))
                .because("hook-conflict"),
            i,
            hook,
        ));
    }
    if let Some((i, hook)) = find(&|r| !r.hook_type.is_empty() && matches!(r.hook_phase.as_str(), "Failed" | "Error")) {
        let f = base(FailureMode::HookFailed, format!("{} failed{after}", describe(hook))).because("hook-failed");
        return Some(with_resource(f, i, hook));
    }
    if FailureMode::HookFailed.signalled_by(message) {
        return Some(base(FailureMode::HookFailed, format!("a hook failed{after}")).because("hook-failed-message"));
    }
    if steady {
        return None;
    }
    // Resource messages first (they name the resource), then the operation message.
    let texts: Vec<(Option<(usize, &ResourceResult)>, &str)> = resources
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.message.is_empty())
        .map(|(i, r)| (Some((i, r)), r.message.as_str()))
        .chain([(None, message)])
        .collect();
    let ordered = [
        FailureMode::OwnershipConflict,
        FailureMode::PermissionDenied,
        FailureMode::DeletionStuck,
        FailureMode::ApiNotServed,
        FailureMode::CrdNotEstablished,
        // A rejection fails every re-sync, whether or not an unreachable webhook beside it comes back.
        FailureMode::ResourceRejected,
        FailureMode::WebhookUnavailable,
        FailureMode::SyncWindowBlocked,
    ];
    let hit = ordered.iter().find_map(|mode| texts.iter().find(|(_, t)| mode.signalled_by(t)).map(|(r, _)| (*mode, *r)));
    let sync_error = app.condition("SyncError").filter(|c| FailureMode::AutoSyncRetriesExhausted.signalled_by(&c.message));
    let finding = match hit {
        Some((mode, resource)) => {
            let detail = match resource {
                Some((_, r)) => format!("{}: {}", describe(r), r.message),
                None => message.to_owned(),
            };
            let text = resource.map_or(message, |(_, r)| r.message.as_str());
            let served = match mode {
                FailureMode::CrdNotEstablished => kind_not_served(app, state, text, resource.map(|(_, r)| r), cfg),
                _ => None,
            };
            let mut f = match served {
                Some(why) => base(FailureMode::ApiNotServed, format!("{detail} ({why})")).because("kind-not-served").futile_refresh(),
                None => base(mode, detail).because(mode.id()),
            };
            if let Some((i, r)) = resource {
                f = with_resource(f, i, r);
            }
            match f.mode {
                // The CRD needs a moment to become established before a re-sync can work.
                FailureMode::CrdNotEstablished => f.because("crd-race").hold(finished.map(|t| later(t, cfg.settle_secs))),
                // Give the webhook's pods time to come up before re-syncing.
                FailureMode::WebhookUnavailable => f.hold(finished.map(|t| later(t, cfg.repo_error_grace_secs))),
                _ => f,
            }
        }
        // The sync could not compare (`controller/sync.go:164-170` puts the conditions in the
        // message). While the condition is there it is judged from it; once it has cleared, the
        // sync never ran, and the cause beneath says whether running it again can work.
        None if message.starts_with("ComparisonError") || message.starts_with("InvalidSpecError") => {
            if app.status.conditions.iter().any(|c| matches!(c.kind.as_str(), "ComparisonError" | "InvalidSpecError")) {
                return None;
            }
            let cause = cause_of(message);
            let f = if cause.class.passes() {
                base(FailureMode::SyncFailedTransient, format!("the sync could not compare the app ({}); that has passed", cause.beneath))
                    .because("comparison-passed")
            } else {
                base(FailureMode::SyncFailed, message.to_owned()).because("comparison-failed")
            };
            return Some(f.with("cause", cause.class.as_str()));
        }
        None if is_transient(message) || texts.iter().any(|(_, t)| is_transient(t)) => {
            let transient = texts.iter().map(|(_, t)| *t).find(|t| is_transient(t)).unwrap_or(message);
            match sync_error {
                Some(_) => {
                    base(FailureMode::AutoSyncRetriesExhausted, format!("automated sync gave up after a transient failure: {transient}"))
                        .because("transient-retries-exhausted")
                }
                None => base(FailureMode::SyncFailedTransient, transient.to_owned()).because("transient"),
            }
        }
        None => base(FailureMode::SyncFailed, message.to_owned()).because("unrecognised"),
    };
    Some(match sync_error {
        Some(c) => finding.with("status.conditions[type=SyncError].message", c.message.clone()),
        None => finding,
    })
}

/// Why a kind the API server did not know is not a CRD racing its resources, if it is not: a
/// built-in API version Kubernetes removed, or a kind whose CRD the app does not ship and that
/// `kind_not_found_retries` retries did not see appear. A CRD shipped in the same sync is a race.
pub(super) fn kind_not_served(
    app: &Application,
    state: &crate::app::OperationState,
    text: &str,
    resource: Option<&ResourceResult>,
    cfg: &PolicyConfig,
) -> Option<String> {
    let group_version = quoted_after(text, "in version \"");
    if let Some(gv) = group_version.filter(|gv| REMOVED_BUILTIN_APIS.contains(gv)) {
        return Some(format!("Kubernetes no longer serves {gv}"));
    }
    let group = resource
        .map(|r| r.group.clone())
        .or_else(|| group_version.map(|gv| gv.rsplit_once('/').map_or("", |(g, _)| g).to_owned()))
        .or_else(|| {
            let rest = &text[text.find("could not find ")? + "could not find ".len()..];
            rest.split_once('/').map(|(g, _)| g.to_owned())
        })
        .unwrap_or_default();
    if app.ships_crd_for(&group) {
        return None;
    }
    let retries = state.retry_count.unwrap_or(0);
    (retries >= cfg.kind_not_found_retries)
        .then(|| format!("the app does not ship the CRD of `{group}` and {retries} retries did not see it appear, so it is not installed"))
}

/// The text between `prefix` and the next `"`.
pub(super) fn quoted_after<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = &text[text.find(prefix)? + prefix.len()..];
    rest.split('"').next()
}

pub(super) fn classify_conditions(app: &Application, cfg: &PolicyConfig) -> Option<Finding> {
    for c in &app.status.conditions {
        let base = |mode, detail: String| {
            Finding::new(mode, detail)
                .began(c.last_transition_time)
                .with(format!("status.conditions[type={}].message", c.kind), c.message.clone())
        };
        let found = match c.kind.as_str() {
            // The error beneath the wrappers decides, never the wrapper: a cached generation error
            // over a render failure is a configuration error (a hard refresh renders the same
            // revision again), over a Git timeout it is what a hard refresh fixes.
            "ComparisonError" => {
                let cause = cause_of(&c.message);
                let base = |mode, detail: String| {
                    base(mode, detail)
                        .with("cause", cause.class.as_str())
                        .with("cause.beneath", cause.beneath.chars().take(300).collect::<String>())
                };
                // A promotion pending by design: the controller's own words, on an app whose spec
                // stages hydration on another branch.
                let staged = app.spec.source_hydrator.as_ref().is_some_and(|h| h.hydrate_to.is_some());
                if cause.awaiting_promotion && staged {
                    return Some(
                        base(FailureMode::AwaitingPromotion, "the hydrated path waits for a promotion to the sync branch".into())
                            .because("awaiting-promotion")
                            .with("spec.sourceHydrator.hydrateTo", "set"),
                    );
                }
                Some(match cause.class {
                    // Throttling by the source host is shared by every app on it and clears by
                    // itself; a hard refresh of a cached error would only ask the throttled host again.
                    CauseClass::RateLimited => base(FailureMode::SourceRateLimited, "the source host is rate-limiting Argo CD".into())
                        .because("source-rate-limited"),
                    CauseClass::Permission => base(FailureMode::PermissionDenied, c.message.clone()).because("cause-permission"),
                    // The catalogue's source-config-error: credentials and project restrictions are
                    // the source's configuration, fixed in a secret or the AppProject.
                    CauseClass::Access => base(FailureMode::SourceConfigError, c.message.clone()).because("cause-access"),
                    CauseClass::Transient | CauseClass::Unknown if cause.cached => {
                        base(FailureMode::CachedManifestError, "the repo-server keeps serving a cached manifest generation error".into())
                            .because(if cause.class == CauseClass::Transient { "cached-transient" } else { "cached-unknown" })
                    }
                    CauseClass::Transient => {
                        base(FailureMode::ComparisonErrorTransient, "Argo CD cannot reach Git or the repo-server".into())
                            .because("cause-transient")
                            .hold(c.last_transition_time.map(|t| later(t, cfg.repo_error_grace_secs)))
                    }
                    CauseClass::Configuration | CauseClass::KindNotFound | CauseClass::Rejected | CauseClass::Unknown => {
                        base(FailureMode::SourceConfigError, c.message.clone()).because(if cause.cached {
                            "cached-deterministic"
                        } else {
                            "cause-deterministic"
                        })
                    }
                })
            }
            "InvalidSpecError" => Some(base(FailureMode::SourceConfigError, c.message.clone())),
            // What Argo CD applies is not what Git says, silently: a resource given twice (the
            // last copy wins, controller/state.go:566) or of a kind excluded in the settings (never
            // applied, :759). A person hears it once; the incident resolves when the warning goes.
            "RepeatedResourceWarning" => Some(
                base(FailureMode::SourceConfigError, format!("the manifests give a resource more than once: {}", c.message))
                    .because("repeated-resource"),
            ),
            "ExcludedResourceWarning" => Some(
                base(FailureMode::SourceConfigError, format!("the manifests hold a resource Argo CD is set to exclude: {}", c.message))
                    .because("excluded-resource"),
            ),
            "SharedResourceWarning" => Some(
                base(FailureMode::OwnershipConflict, format!("another app claims a resource of this one: {}", c.message))
                    .because("shared-resource"),
            ),
            "SyncError" if FailureMode::PruneBlastRadius.signalled_by(&c.message) => {
                Some(base(FailureMode::PruneBlastRadius, "automated sync refused to delete every resource of the app".into()))
            }
            "SyncError" if FailureMode::AutoSyncRetriesExhausted.signalled_by(&c.message) => {
                Some(base(FailureMode::AutoSyncRetriesExhausted, "automated sync will not retry this revision".into()))
            }
            _ => None,
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

pub(super) fn classify_stale_reconcile(app: &Application, now: DateTime<Utc>, cfg: &PolicyConfig) -> Option<Finding> {
    if app.is_calm() {
        return None;
    }
    // A spec or project error: the controller reconciles the app but persists Unknown without
    // stamping reconciledAt (controller/appcontroller.go:1866-1881), so an old reconciledAt is not
    // an old status, and a refresh would change nothing (nor could it be seen to).
    if app.status.conditions.iter().any(|c| matches!(c.kind.as_str(), "InvalidSpecError" | "UnknownError")) {
        return None;
    }
    let reconciled = app.status.reconciled_at;
    let stale = reconciled.is_none_or(|t| now - t > secs(cfg.stale_reconcile_secs));
    // A refresh already requested (the API server set `argocd.argoproj.io/refresh`,
    // server/application/application.go:888) that the controller has not taken (it removes the
    // annotation when it compares, controller/appcontroller.go:2233): another request rewrites the
    // same annotation; the controller or its shard is not processing the app.
    let pending = app.refresh_pending();
    stale.then(|| {
        let minutes = reconciled.map_or_else(|| "never".to_owned(), |t| format!("{} minutes ago", (now - t).num_minutes()));
        let f = Finding::new(
            FailureMode::StaleReconcile,
            format!(
                "the app is {} / {} but Argo CD last reconciled it {minutes}{}",
                app.sync_status(),
                app.health_status(),
                if pending { ", and a refresh requested since is still waiting for the controller" } else { "" }
            ),
        )
        .began(reconciled)
        .with("status.reconciledAt", ts(&reconciled))
        .with("status.health.status", app.health_status())
        .with("status.sync.status", app.sync_status());
        match pending {
            true => f.futile_refresh().because("refresh-pending").with("metadata.annotations[argocd.argoproj.io/refresh]", "set"),
            false => f,
        }
    })
}

/// True when every resource that is not Synced only waits to be pruned (`requiresPruning`), the
/// test `autoSync` makes before it skips an app whose automated prune is off
/// (controller/appcontroller.go:2352-2364).
/// At least one resource must wait to be pruned: an app OutOfSync with every resource Synced is
/// another state (namespace metadata), left to the rules after this one.
pub(super) fn only_pruning_pending(app: &Application) -> bool {
    app.status.resources.iter().any(|r| r.requires_pruning)
        && app.status.resources.iter().all(|r| r.status == sync_status::SYNCED || r.requires_pruning)
}

/// Why pruning is beyond what Argo Medic may do alone, if it is.
pub fn prune_risk(app: &Application, cfg: &PolicyConfig) -> Option<String> {
    let pruning: Vec<_> = app.status.resources.iter().filter(|r| r.requires_pruning).collect();
    let protected: Vec<_> = pruning
        .iter()
        .filter(|r| cfg.protected_prune_kinds.iter().any(|k| k == &r.kind))
        .map(|r| format!("{}/{}", r.kind, r.name))
        .collect();
    if !protected.is_empty() {
        Some(format!("a sync would prune protected resources: {}", protected.join(", ")))
    } else if pruning.len() > cfg.max_prune {
        Some(format!("a sync would prune {} resources, more than the limit of {}", pruning.len(), cfg.max_prune))
    } else {
        None
    }
}

pub(super) fn classify_prune_risk(app: &Application, cfg: &PolicyConfig) -> Option<Finding> {
    // While an operation runs, it decides what is pruned (and Prune=confirm holds it for a human).
    let running = app.operation.is_some() || matches!(app.operation_phase(), phase::RUNNING | phase::TERMINATING);
    if app.sync_status() != sync_status::OUT_OF_SYNC || running {
        return None;
    }
    // Automated prune off and nothing but pruning pending: automated sync skips the app and Argo
    // Medic's sync would not prune (its plan follows automated.prune); no deletion is at risk.
    if app.auto_sync().is_some_and(|a| !a.prune) && only_pruning_pending(app) {
        return None;
    }
    let why = prune_risk(app, cfg)?;
    let pruning: Vec<_> = app.status.resources.iter().filter(|r| r.requires_pruning).map(|r| format!("{}/{}", r.kind, r.name)).collect();
    Some(
        Finding::new(FailureMode::PruneBlastRadius, why)
            .began(app.status.reconciled_at)
            .with("status.resources[requiresPruning]", pruning.join(", ")),
    )
}

/// A failed hydration (`status.sourceHydrator.currentOperation`, Argo CD ≥3.1): the app stays
/// Synced and Healthy at the last hydrated commit while the new dry commit never arrives. The
/// hydrator retries by itself every two minutes (`controller/hydrator/hydrator.go:650`), so what
/// passes is left to it; an error that repeats (a render failure, refused credentials) needs a
/// person.
pub(super) fn classify_hydration(app: &Application) -> Option<Finding> {
    let op = app.status.source_hydrator.as_ref()?.current_operation.as_ref().filter(|o| o.phase == "Failed")?;
    let cause = cause_of(&op.message);
    if cause.class.passes() || cause.class == CauseClass::Unknown {
        return None;
    }
    let mode = if cause.class == CauseClass::Permission { FailureMode::PermissionDenied } else { FailureMode::SourceConfigError };
    Some(
        Finding::new(mode, format!("the source hydrator fails, so new commits never reach the app: {}", op.message))
            .because("hydration-failed")
            .began(op.finished_at)
            .with("status.sourceHydrator.currentOperation.phase", op.phase.clone())
            .with("status.sourceHydrator.currentOperation.message", op.message.clone())
            .with("cause", cause.class.as_str()),
    )
}

/// Self-heal that keeps re-applying the same resources: another writer (an HPA, a mutating webhook,
/// an operator) changes them again each time. Argo CD backs self-heal off but never stops it.
pub(super) fn classify_self_heal_loop(app: &Application, cfg: &PolicyConfig) -> Option<Finding> {
    if app.sync_status() != sync_status::OUT_OF_SYNC || !app.auto_sync().is_some_and(|a| a.self_heal) {
        return None;
    }
    let state = app.status.operation_state.as_ref()?;
    let sync = state.operation.as_ref()?.sync.as_ref()?;
    // The count is carried only while automated sync re-syncs the same revision
    // (controller/appcontroller.go:2405-2410): after a new commit it says nothing.
    if !sync.revision.is_empty() && sync.revision != app.revision() {
        return None;
    }
    let attempts = sync.auto_heal_attempts_count?;
    (attempts >= cfg.self_heal_loop_attempts).then(|| {
        let resources: Vec<String> =
            state.sync_result.iter().flat_map(|r| r.resources.iter()).map(|r| format!("{}/{}", r.kind, r.name)).collect();
        Finding::new(
            FailureMode::OwnershipConflict,
            format!(
                "self-heal has re-applied {} {attempts} times in a row and the app is OutOfSync again: another writer changes it back",
                resources.join(", ")
            ),
        )
        .because("self-heal-loop")
        .began(state.started_at)
        .with("status.operationState.operation.sync.autoHealAttemptsCount", attempts.to_string())
        .with("status.sync.status", sync_status::OUT_OF_SYNC)
    })
}

pub(super) fn classify_health_and_sync(app: &Application, now: DateTime<Utc>, cfg: &PolicyConfig) -> Finding {
    let h = app.status.health.as_ref();
    let transition = h.and_then(|h| h.last_transition_time);
    let last_op = app.status.operation_state.as_ref();
    let finished = last_op.filter(|s| s.phase == phase::SUCCEEDED).and_then(|s| s.finished_at);
    let health_ev =
        |f: Finding| f.with("status.health.status", app.health_status()).with("status.health.lastTransitionTime", ts(&transition));
    match app.health_status() {
        health::DEGRADED => {
            return health_ev(Finding::new(FailureMode::HealthDegraded, "a resource of the app is Degraded").began(transition));
        }
        health::PROGRESSING => {
            let since = [transition, finished].into_iter().flatten().max();
            let timed_out = since.is_some_and(|t| now - t > secs(cfg.progressing_timeout_secs));
            let custom = app.status.resources.iter().find(|r| {
                !cfg.builtin_health_groups.contains(&r.group) && r.health.as_ref().is_some_and(|h| h.status == health::PROGRESSING)
            });
            let finding = match (timed_out, custom) {
                (false, _) => Finding::new(FailureMode::RolloutProgressing, "the app is rolling out"),
                (true, Some(r)) => {
                    let bound = cfg.custom_health_bound(&r.group, &r.kind);
                    let past = since.is_some_and(|t| now - t > secs(bound));
                    let f = Finding::new(
                        FailureMode::CustomHealthNeverHealthy,
                        format!(
                            "custom resource {}/{}/{} has reported Progressing since {}{}",
                            r.group,
                            r.kind,
                            r.name,
                            ts(&since),
                            if past { format!(", longer than the {} minutes its kind may take", bound / 60) } else { String::new() }
                        ),
                    )
                    .with(
                        format!("status.resources[{}/{}].health", r.kind, r.name),
                        r.health.as_ref().map_or(String::new(), |h| format!("{} {}", h.status, h.message).trim().to_owned()),
                    );
                    // Past the kind's bound a refresh cannot help: the resource is stuck, not its status.
                    if past { f.futile_refresh().because("custom-health-past-bound") } else { f.because("custom-health") }
                }
                (true, None) => Finding::new(
                    FailureMode::StaleProgressing,
                    format!("the app has been Progressing since {} although its last operation finished at {}", ts(&since), ts(&finished)),
                )
                .with("status.operationState.finishedAt", ts(&finished)),
            };
            return health_ev(finding.began(since));
        }
        _ => {}
    }
    match app.sync_status() {
        sync_status::UNKNOWN => {
            Finding::new(FailureMode::ComparisonErrorTransient, "Argo CD cannot compare the app with Git (sync status Unknown)")
                .began(app.status.reconciled_at)
                .hold(app.status.reconciled_at.map(|t| later(t, cfg.repo_error_grace_secs)))
                .with("status.sync.status", sync_status::UNKNOWN)
        }
        // Only extra resources to prune and automated prune off: automated sync skips the app for
        // good (controller/appcontroller.go:2352-2364), by the owner's choice.
        sync_status::OUT_OF_SYNC if app.auto_sync().is_some_and(|a| !a.prune) && only_pruning_pending(app) => {
            Finding::new(FailureMode::OutOfSyncManual, "OutOfSync only by extra resources, and automated prune is off: Argo CD leaves them")
                .because("prune-only-pending")
                .with("status.sync.status", sync_status::OUT_OF_SYNC)
                .with("spec.syncPolicy.automated.prune", "false")
        }
        sync_status::OUT_OF_SYNC if app.auto_sync().is_some() => {
            let since = finished.or(app.metadata.creation_timestamp);
            Finding::new(
                FailureMode::OutOfSyncAwaitingAutoSync,
                format!("OutOfSync with automated sync on; last sync finished at {}", ts(&finished)),
            )
            .began(since)
            .hold(since.map(|t| later(t, cfg.progressing_timeout_secs)))
            .with("status.sync.status", sync_status::OUT_OF_SYNC)
            .with("spec.syncPolicy.automated", "enabled")
        }
        sync_status::OUT_OF_SYNC => Finding::new(FailureMode::OutOfSyncManual, "OutOfSync; the app is synced by hand")
            .with("status.sync.status", sync_status::OUT_OF_SYNC),
        _ if app.health_status() == health::MISSING || app.health_status() == health::UNKNOWN => {
            Finding::new(FailureMode::ComparisonErrorTransient, format!("health is {}", app.health_status()))
                .began(transition)
                .hold(transition.map(|t| later(t, cfg.repo_error_grace_secs)))
                .with("status.health.status", app.health_status())
        }
        _ => Finding::new(FailureMode::Healthy, format!("{} and {}", app.sync_status(), app.health_status())),
    }
}

//! The decision policy: a pure function of the Application, the trigger, the incident's history,
//! the time and the configuration. It performs no I/O and reads no clock.
//!
//! Two steps. [`classify`] names the failure mode from the Application alone (with the evidence
//! and, for modes that are waited out first, how long). [`DecisionPolicy::decide`] then places
//! the app's incident on that mode's remediation ladder, using what was already done, and applies
//! the safety gates before any sync.

use chrono::{DateTime, Duration, SecondsFormat, SubsecRound, Utc};

use crate::app::{Application, HOOKS_IDEMPOTENT_KEY, ResourceResult, health, phase, sync_status};
use crate::catalogue::{FailureMode, RATE_LIMIT_SIGNALS, REMOVED_BUILTIN_APIS, Rung, TRANSIENT_SIGNALS};
use crate::config::PolicyConfig;
use crate::decision::{Action, Decision, Evidence, HumanAction, SyncPlan};
use crate::error::PolicyError;
use crate::incident::{History, IncidentKey, Outcome};
use crate::trigger::Trigger;

/// The field managers the ApplicationSet controller writes Applications as. It sets its User-Agent
/// to `argocd-applicationset-controller/<version> (<platform>)`
/// (argo-cd `cmd/argocd-applicationset-controller/commands/applicationset_controller.go`) and the API
/// server names an Update's manager after the User-Agent's first segment; objects written before
/// that carry the legacy name.
const APPSET_MANAGERS: &[&str] = &["argocd-applicationset-controller", "applicationset-controller"];

/// What the classifier found.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub mode: FailureMode,
    /// Specific detail for the reason, beyond the catalogue title.
    pub detail: String,
    pub evidence: Vec<Evidence>,
    /// When this episode of trouble began, as far as the Application shows.
    pub began_at: Option<DateTime<Utc>>,
    /// Do not climb the ladder before this moment (grace periods, back-offs).
    pub hold_until: Option<DateTime<Utc>>,
    /// The classifier rule that named the mode (`failed-operation/kind-not-served`), so a wrong
    /// decision can be traced to the rule that made it.
    pub rule: String,
    /// A refresh cannot help (the status is current and the trouble is real), so the ladder's
    /// refresh rung is skipped.
    pub refresh_futile: bool,
}

impl Finding {
    fn new(mode: FailureMode, detail: impl Into<String>) -> Self {
        Self {
            mode,
            detail: detail.into(),
            evidence: Vec::new(),
            began_at: None,
            hold_until: None,
            rule: String::new(),
            refresh_futile: false,
        }
    }
    /// Names the sub-rule within a classifier stage.
    fn because(mut self, rule: &str) -> Self {
        self.rule = rule.to_owned();
        self
    }
    /// Prefixes the classifier stage to the rule.
    fn stage(mut self, stage: &str) -> Self {
        self.rule = if self.rule.is_empty() { stage.to_owned() } else { format!("{stage}/{}", self.rule) };
        self
    }
    fn futile_refresh(mut self) -> Self {
        self.refresh_futile = true;
        self
    }
    fn began(mut self, at: Option<DateTime<Utc>>) -> Self {
        self.began_at = at;
        self
    }
    fn hold(mut self, until: Option<DateTime<Utc>>) -> Self {
        self.hold_until = until;
        self
    }
    fn with(mut self, field: impl Into<String>, value: impl Into<String>) -> Self {
        self.evidence.push(Evidence::new(field, value));
        self
    }
}

fn secs(s: i64) -> Duration {
    Duration::seconds(s)
}

/// `t` plus `s` seconds, or the end of time when that is past chrono's range. The Application's
/// timestamps are whatever the API returned: RFC 3339 parsing accepts years up to +262142, and
/// plain `+` panics when a grace period carries such a time past the range.
fn later(t: DateTime<Utc>, s: i64) -> DateTime<Utc> {
    t.checked_add_signed(secs(s)).unwrap_or(DateTime::<Utc>::MAX_UTC)
}

fn ts(t: &Option<DateTime<Utc>>) -> String {
    t.map_or_else(|| "absent".to_owned(), rfc3339)
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

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
        .unwrap_or_else(|| classify_health_and_sync(app, now, cfg).stage("health-and-sync"))
}

fn classify_deletion(app: &Application, now: DateTime<Utc>, cfg: &PolicyConfig) -> Option<Finding> {
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
fn edited_paths(fields: &serde_json::Value) -> Vec<String> {
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

fn ignored_by_appset(path: &str, ignored: &[String]) -> bool {
    ignored.iter().any(|i| {
        let i = i.trim_end_matches('/');
        path == i || path.starts_with(&format!("{i}/"))
    })
}

fn classify_appset_hand_edit(app: &Application, cfg: &PolicyConfig) -> Option<Finding> {
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
fn episode_start(state: &crate::app::OperationState) -> Option<DateTime<Utc>> {
    let op = state.operation.as_ref()?;
    let began = op.info.iter().find(|i| i.name == crate::app::INCIDENT_BEGAN_INFO_NAME)?;
    began.value.parse().ok()
}

/// `<group>/<Kind>/<name>` named by `waiting for healthy state of ...`, if any.
fn waiting_for_healthy(message: &str) -> Option<(String, String, String)> {
    let rest = &message[message.find("waiting for healthy state of ")? + "waiting for healthy state of ".len()..];
    let token = rest.split_whitespace().next()?;
    let mut parts = token.splitn(3, '/');
    Some((parts.next()?.to_owned(), parts.next()?.to_owned(), parts.next()?.trim_end_matches(['.', ',']).to_owned()))
}

fn classify_running_operation(app: &Application, now: DateTime<Utc>, cfg: &PolicyConfig) -> Option<Finding> {
    let state = app.status.operation_state.as_ref();
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
    if let Some(state) = state.filter(|s| s.phase == phase::RUNNING) {
        if let Some(f) = retries_of_an_old_revision(app, state, cfg) {
            let (mode, rule, detail) = f;
            return Some(base(mode, detail).because(rule));
        }
    }
    if over(cfg.operation_timeout_secs) {
        let minutes = age.map_or(0, |a| a.num_minutes());
        return Some(base(FailureMode::OperationRunningTooLong, format!("the operation has been running for {minutes} minutes")));
    }
    Some(base(FailureMode::OperationInProgress, "an operation is running".into()))
}

/// An automated operation retrying a revision that is no longer the target. Argo CD ≥3.2 with
/// `retry.refresh: true` drops the pinned revision before each retry and so picks up the new
/// commit (argo-cd `controller/appcontroller.go`, `Retry.Refresh`; argoproj/argo-cd#11494). Before
/// 3.2, or without the flag, every retry repeats the old revision; with `limit` < 0 it retries
/// forever and only a human (terminate) ends the loop. The version is assumed old when unknown.
fn retries_of_an_old_revision(
    app: &Application,
    state: &crate::app::OperationState,
    cfg: &PolicyConfig,
) -> Option<(FailureMode, &'static str, String)> {
    let op = state.operation.as_ref()?;
    let retrying = state.retry_count.is_some_and(|n| n > 0) || state.message.starts_with("Retrying operation");
    let pinned = op.sync.as_ref().map(|s| s.revision.as_str()).filter(|r| !r.is_empty())?;
    let target = app.status.sync.as_ref().map(|s| s.revision.as_str()).filter(|r| !r.is_empty())?;
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
        let why = match retry.and_then(|r| r.refresh) {
            Some(true) => {
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

fn pending_post_sync_hooks(app: &Application) -> usize {
    app.result_resources()
        .iter()
        .filter(|r| r.hook_type == "PostSync" && !matches!(r.hook_phase.as_str(), "Succeeded" | "Failed" | "Error"))
        .count()
}

/// The first hook the last operation ran that failed.
pub fn failed_hook(app: &Application) -> Option<&ResourceResult> {
    app.result_resources().iter().find(|r| !r.hook_type.is_empty() && matches!(r.hook_phase.as_str(), "Failed" | "Error"))
}

fn describe(r: &ResourceResult) -> String {
    let hook = if r.hook_type.is_empty() { String::new() } else { format!("{} hook ", r.hook_type) };
    format!("{hook}{}/{}", r.kind, r.name)
}

fn is_transient(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    TRANSIENT_SIGNALS.iter().any(|s| lower.contains(s))
}

fn classify_failed_operation(app: &Application, cfg: &PolicyConfig) -> Option<Finding> {
    let state = app.status.operation_state.as_ref()?;
    if !(state.phase == phase::FAILED || state.phase == phase::ERROR) {
        return None;
    }
    // Synced and Healthy after the failure: the workloads are fine, and only a hook that failed
    // (a migration, a smoke test) still makes it a failed deployment.
    let steady = app.sync_status() == sync_status::SYNCED && matches!(app.health_status(), health::HEALTHY | health::SUSPENDED);
    // A failure at an older revision is history: the app has moved on, judge its current state.
    let op_revision = state.sync_result.as_ref().map(|r| r.revision.as_str()).filter(|r| !r.is_empty());
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
        FailureMode::WebhookUnavailable,
        FailureMode::ResourceRejected,
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
        None if message.starts_with("ComparisonError") => return None, // judged from the condition itself
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
fn kind_not_served(
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
fn quoted_after<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = &text[text.find(prefix)? + prefix.len()..];
    rest.split('"').next()
}

fn is_rate_limited(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    RATE_LIMIT_SIGNALS.iter().any(|s| lower.contains(s))
}

fn classify_conditions(app: &Application, cfg: &PolicyConfig) -> Option<Finding> {
    for c in &app.status.conditions {
        let base = |mode, detail: String| {
            Finding::new(mode, detail)
                .began(c.last_transition_time)
                .with(format!("status.conditions[type={}].message", c.kind), c.message.clone())
        };
        let found = match c.kind.as_str() {
            // Throttling by the source host is shared by every app on it and clears by itself; a
            // hard refresh of a cached error would only ask the throttled host again.
            "ComparisonError" if is_rate_limited(&c.message) => {
                Some(base(FailureMode::SourceRateLimited, "the source host is rate-limiting Argo CD".into()).because("source-rate-limited"))
            }
            "ComparisonError" => Some(if FailureMode::CachedManifestError.signalled_by(&c.message) {
                base(FailureMode::CachedManifestError, "the repo-server keeps serving a cached manifest generation error".into())
            } else if FailureMode::PermissionDenied.signalled_by(&c.message) && !is_transient(&c.message) {
                base(FailureMode::PermissionDenied, c.message.clone())
            } else if FailureMode::ComparisonErrorTransient.signalled_by(&c.message) {
                base(FailureMode::ComparisonErrorTransient, "Argo CD cannot reach Git or the repo-server".into())
                    .hold(c.last_transition_time.map(|t| later(t, cfg.repo_error_grace_secs)))
            } else {
                base(FailureMode::SourceConfigError, c.message.clone())
            }),
            "InvalidSpecError" => Some(base(FailureMode::SourceConfigError, c.message.clone())),
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

fn classify_stale_reconcile(app: &Application, now: DateTime<Utc>, cfg: &PolicyConfig) -> Option<Finding> {
    if app.is_calm() {
        return None;
    }
    let reconciled = app.status.reconciled_at;
    let stale = reconciled.is_none_or(|t| now - t > secs(cfg.stale_reconcile_secs));
    stale.then(|| {
        let minutes = reconciled.map_or_else(|| "never".to_owned(), |t| format!("{} minutes ago", (now - t).num_minutes()));
        Finding::new(
            FailureMode::StaleReconcile,
            format!("the app is {} / {} but Argo CD last reconciled it {minutes}", app.sync_status(), app.health_status()),
        )
        .began(reconciled)
        .with("status.reconciledAt", ts(&reconciled))
        .with("status.health.status", app.health_status())
        .with("status.sync.status", app.sync_status())
    })
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

fn classify_prune_risk(app: &Application, cfg: &PolicyConfig) -> Option<Finding> {
    // While an operation runs, it decides what is pruned (and Prune=confirm holds it for a human).
    let running = app.operation.is_some() || matches!(app.operation_phase(), phase::RUNNING | phase::TERMINATING);
    if app.sync_status() != sync_status::OUT_OF_SYNC || running {
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

/// Self-heal that keeps re-applying the same resources: another writer (an HPA, a mutating webhook,
/// an operator) changes them again each time. Argo CD backs self-heal off but never stops it.
fn classify_self_heal_loop(app: &Application, cfg: &PolicyConfig) -> Option<Finding> {
    if app.sync_status() != sync_status::OUT_OF_SYNC || !app.auto_sync().is_some_and(|a| a.self_heal) {
        return None;
    }
    let state = app.status.operation_state.as_ref()?;
    let attempts = state.operation.as_ref()?.sync.as_ref()?.auto_heal_attempts_count?;
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

fn classify_health_and_sync(app: &Application, now: DateTime<Utc>, cfg: &PolicyConfig) -> Finding {
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

/// Why a sync must not be started automatically, or the exact sync that is on record to re-run.
pub fn sync_plan(app: &Application, cfg: &PolicyConfig) -> Result<SyncPlan, String> {
    if app.is_deleting() {
        return Err("the application is being deleted".into());
    }
    if let Some(edit) = appset_hand_edit(app, cfg) {
        return Err(format!(
            "`{}` edited this ApplicationSet-generated app by hand; syncing would deploy an edit the ApplicationSet reverts",
            edit.manager
        ));
    }
    if app.operation.is_some() {
        return Err("an operation is already running".into());
    }
    if let Some(hook) = failed_hook(app) {
        return Err(format!("{} failed in the last operation and a sync would run it again", describe(hook)));
    }
    if app.has_hooks() && !hooks_marked_idempotent(app, cfg) {
        return Err(format!(
            "the app has sync hooks and a sync re-runs every hook; they are not marked idempotent (`{HOOKS_IDEMPOTENT_KEY}`)"
        ));
    }
    if let Some(why) = prune_risk(app, cfg) {
        return Err(why);
    }
    if let Some(auto) = app.auto_sync() {
        let options = app.spec.sync_policy.as_ref().map(|p| p.sync_options.clone()).unwrap_or_default();
        // An empty revision means the target revision, which is what automated sync itself syncs
        // (Argo CD rejects an explicit other revision while auto-sync is on).
        return Ok(SyncPlan {
            revision: String::new(),
            prune: auto.prune,
            sync_options: options,
            intent: "the app's automated sync policy".into(),
        });
    }
    let state = app.status.operation_state.as_ref().filter(|s| s.phase == phase::FAILED || s.phase == phase::ERROR);
    let op = state.and_then(|s| s.operation.as_ref());
    let by = op.and_then(|o| o.initiated_by.as_ref()).filter(|i| !i.automated && !i.username.is_empty());
    let sync = op.and_then(|o| o.sync.as_ref());
    let result_revision = state.and_then(|s| s.sync_result.as_ref()).map(|r| r.revision.as_str()).unwrap_or_default();
    match (by, sync) {
        (Some(by), Some(sync)) if result_revision.is_empty() || result_revision == app.revision() => Ok(SyncPlan {
            revision: sync.revision.clone(),
            prune: sync.prune,
            sync_options: sync.sync_options.clone(),
            intent: format!("re-run of the sync `{}` started at {}", by.username, ts(&state.and_then(|s| s.started_at))),
        }),
        _ => Err(
            "nobody asked for a sync: automated sync is off and the last operation is not a failed sync a person started at this revision"
                .into(),
        ),
    }
}

/// True when the app's hooks may be re-run: the configuration or the app's annotation says so.
fn hooks_marked_idempotent(app: &Application, cfg: &PolicyConfig) -> bool {
    cfg.hooks_idempotent || app.metadata.annotations.get(HOOKS_IDEMPOTENT_KEY).is_some_and(|v| v == "true")
}

/// The decision policy with its configuration.
#[derive(Debug, Clone, Default)]
pub struct DecisionPolicy {
    pub config: PolicyConfig,
}

impl DecisionPolicy {
    pub fn new(config: PolicyConfig) -> Self {
        Self { config }
    }

    /// Decides one action for a full Application. Errors only when the input cannot be judged.
    pub fn decide(&self, app: &Application, trigger: &Trigger, history: &History, now: DateTime<Utc>) -> Result<Decision, PolicyError> {
        if let Some(why) = app.incompleteness() {
            return Err(PolicyError::IncompleteApplication { app: app.qualified_name(), why });
        }
        let cfg = &self.config;
        let name = app.qualified_name();
        let mut d = Decision::nothing(&name, now);
        d.evidence.push(Evidence::new("trigger", trigger.as_str()));
        if !cfg.in_scope(app) {
            d.failure_mode = FailureMode::OutOfScope;
            d.rule = "scope".into();
            d.reason = format!("project `{}` or labels are outside the configured scope", app.spec.project);
            // Argo Medic will do nothing more for it: an open incident ends here (its Slack
            // thread says why) instead of lingering.
            d.resolves_incident = history.incident.as_ref().is_some_and(|i| i.app == name);
            return Ok(d);
        }
        if app.opted_out() {
            d.failure_mode = FailureMode::OptedOut;
            d.rule = "opt-out".into();
            d.reason = format!("the app opted out with `{}`", crate::app::OPT_OUT_KEY);
            d.resolves_incident = history.incident.as_ref().is_some_and(|i| i.app == name);
            return Ok(d);
        }

        let finding = classify(app, now, cfg);
        let entry = finding.mode.entry();
        d.failure_mode = finding.mode;
        d.evidence.extend(finding.evidence.iter().cloned());
        let step = |mut d: Decision, step: &str| {
            d.rule = format!("{} → {step}", finding.rule);
            d
        };
        if !finding.mode.is_trouble() {
            // Only a calm app closes the incident: a failed operation or a warning condition
            // (shared resources) may still need the human who owns it.
            d.resolves_incident = app.is_calm() && history.incident.as_ref().is_some_and(|i| i.app == name);
            let label = if d.resolves_incident { "resolved" } else { "nothing-to-do" };
            d.reason =
                if d.resolves_incident { format!("{}; the open incident is resolved", finding.detail) } else { finding.detail.clone() };
            return Ok(step(d, label));
        }

        let incident = self.incident_for(app, &finding, history);
        let empty = History::default();
        let hist = if history.incident.as_ref() == Some(&incident) { history } else { &empty };
        d.incident = Some(incident.clone());
        let headline = format!("{}: {}", entry.title, finding.detail.trim_end_matches(['.', ' ']));

        if let Some(at) = hist.escalated_at() {
            d.reason = format!("{headline}. Escalated at {}; a human owns this incident now", rfc3339(at));
            return Ok(step(d, "escalated-earlier"));
        }
        // Argo CD refused the last rung for a reason that passes. Wait a bounded time, then try
        // it again under a fresh key; after `max_refusals` a human is told (below, once the
        // escalation is built). Without the bound such an incident would wait forever.
        let mut refusals_exhausted = None;
        if let Some(last) = hist.last() {
            if last.outcome.is_refusal() {
                let why = if last.outcome == Outcome::SyncWindowBlocked {
                    "a sync window refused the sync"
                } else {
                    "another operation was in progress"
                };
                let refused = hist.refusals(last.rung);
                let retry_at = later(last.at, cfg.refused_wait_secs);
                if refused >= cfg.max_refusals {
                    let since = hist.first_refusal(last.rung).map_or_else(|| rfc3339(last.at), rfc3339);
                    refusals_exhausted = Some(format!(
                        "{headline}. Escalating: Argo CD refused the {} {refused} times since {since} (last: {why})",
                        last.rung.as_str()
                    ));
                } else if now < retry_at {
                    let msg = format!("{headline}. Waiting: {why} at {}; trying again after {}", rfc3339(last.at), rfc3339(retry_at));
                    return Ok(step(self.wait(d, msg, (retry_at - now).num_seconds().max(1)), "refused-wait"));
                }
            }
            let settled = later(last.at, cfg.settle_secs);
            if now < settled {
                let msg = format!("{headline}. Waiting for the {} at {} to take effect", last.rung.as_str(), rfc3339(last.at));
                return Ok(step(self.wait(d, msg, (settled - now).num_seconds().max(1)), "settling"));
            }
        }
        if let Some(until) = finding.hold_until.filter(|u| now < *u) {
            let msg = format!("{headline}. Waiting until {} before acting: most such cases clear on their own", rfc3339(until));
            return Ok(step(self.wait(d, msg, (until - now).num_seconds().max(1)), "hold"));
        }

        let offer = human_offer(app, finding.mode, cfg, hist);
        let escalate = |mut d: Decision, why: String| {
            d.action = Action::Escalate;
            d.idempotency_key = Some(incident.key_for(Rung::Escalate));
            d.human_actions = offer.actions.clone();
            d.recommended = Some(offer.recommended);
            d.reason = why;
            d
        };
        if let Some(why) = refusals_exhausted {
            return Ok(step(escalate(d, why), "refusals-exhausted"));
        }
        if entry.ladder.is_empty() {
            // Nothing to do, but not for ever: past `max_wait_secs` since the episode began a
            // person is told (a sync window closed for hours is theirs to know about).
            if let Some(began) = finding.began_at.filter(|b| now - *b > secs(cfg.max_wait_secs)) {
                let msg = format!(
                    "{headline}. Escalating: waiting since {}, longer than the {}-minute bound, with nothing Argo Medic may do",
                    rfc3339(began),
                    cfg.max_wait_secs / 60
                );
                return Ok(step(escalate(d, msg), "wait-bound:escalate"));
            }
            return Ok(step(self.wait(d, format!("{headline}. Nothing to do but look again later"), cfg.recheck_secs), "no-ladder"));
        }
        if hist.actions_taken() >= cfg.max_actions_per_incident {
            let msg = format!("{headline}. {} actions did not resolve it; a human has to look", hist.actions_taken());
            return Ok(step(escalate(d, msg), "action-limit"));
        }
        let controller_refreshed = entry.controller_refresh_counts
            && matches!((app.status.reconciled_at, finding.began_at), (Some(r), Some(b)) if r > later(b, cfg.settle_secs));
        let skipped = |r: Rung| r == Rung::Refresh && (controller_refreshed || finding.refresh_futile);
        let next = entry.ladder.iter().copied().find(|r| !hist.has_taken(*r) && !skipped(*r));
        let rung = next.unwrap_or(Rung::Escalate);
        let tried: Vec<_> = hist.attempts.iter().map(|a| a.rung.as_str()).collect();
        let tried = if tried.is_empty() { String::new() } else { format!(" after {}", tried.join(", ")) };
        match rung {
            Rung::Escalate => {
                let because = if finding.refresh_futile && entry.ladder.first() == Some(&Rung::Refresh) {
                    "a refresh cannot fix it".to_owned()
                } else if controller_refreshed && entry.ladder.first() == Some(&Rung::Refresh) {
                    format!("Argo CD reconciled it at {} and the trouble remains", ts(&app.status.reconciled_at))
                } else if entry.ladder == [Rung::Escalate] {
                    "Argo Medic does not fix this automatically".to_owned()
                } else {
                    format!("the remediation ladder is used up{tried}")
                };
                Ok(step(escalate(d, format!("{headline}. Escalating: {because}")), "ladder:escalate"))
            }
            Rung::Sync => match sync_plan(app, cfg) {
                Ok(plan) => {
                    d.action = Action::Sync;
                    d.idempotency_key = Some(incident.key_for_attempt(Rung::Sync, attempt_of(hist, Rung::Sync)));
                    d.reason = format!("{headline}. Syncing once{tried}, as on record: {}", plan.intent);
                    d.sync = Some(plan);
                    Ok(step(d, "ladder:sync"))
                }
                Err(why) => {
                    let mut d = escalate(d, format!("{headline}. A sync might fix it but is not safe to start automatically: {why}"));
                    d.evidence.push(Evidence::new("sync_gate", why));
                    Ok(step(d, "sync-gate:escalate"))
                }
            },
            Rung::Refresh | Rung::HardRefresh => {
                let skip = if controller_refreshed && rung == Rung::HardRefresh && !hist.has_taken(Rung::Refresh) {
                    format!(" (Argo CD's own refresh at {} did not help)", ts(&app.status.reconciled_at))
                } else {
                    String::new()
                };
                d.action = rung.action();
                d.idempotency_key = Some(incident.key_for_attempt(rung, attempt_of(hist, rung)));
                d.reason = format!("{headline}. Requesting a {}{tried}{skip}", rung.as_str().replace('_', " "));
                Ok(step(d, &format!("ladder:{}", rung.as_str())))
            }
        }
    }

    fn wait(&self, mut d: Decision, reason: String, after: i64) -> Decision {
        d.action = Action::Wait;
        d.reason = reason;
        d.retry_after_secs = Some(after.min(self.config.recheck_secs.max(1)).max(1));
        d
    }

    /// The open incident continues while the app stays at its revision; otherwise a new one begins.
    fn incident_for(&self, app: &Application, finding: &Finding, history: &History) -> IncidentKey {
        let name = app.qualified_name();
        let revision = app.revision();
        if let Some(open) = history.incident.as_ref() {
            if open.instance == self.config.instance_id && open.app == name && open.revision == revision {
                return open.clone();
            }
        }
        IncidentKey {
            instance: self.config.instance_id.clone(),
            app: name,
            revision,
            began_at: finding.began_at.map(|t| t.trunc_subsecs(0)),
        }
    }
}

/// Which try of `rung` the next one is: one more than the times Argo CD refused it.
fn attempt_of(hist: &History, rung: Rung) -> u32 {
    u32::try_from(hist.refusals(rung)).unwrap_or(u32::MAX).saturating_add(1)
}

/// What an escalation offers a person, and which of it is recommended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HumanOffer {
    /// The buttons, in the order they are shown.
    pub actions: Vec<HumanAction>,
    /// One of `actions`: the button styled as the recommended one.
    pub recommended: HumanAction,
}

/// The buttons an escalation of `mode` offers for `app`, and the recommended one.
///
/// Sync is offered only when the catalogue's diagnosis allows it for the mode
/// ([`crate::CatalogueEntry::offers_sync`]) and nothing about the app forbids it: not while it is
/// being deleted or an operation runs, never after a hook failed (a sync re-runs every hook), with
/// a prune beyond the blast radius, or with a hand edit its ApplicationSet reverts. The
/// recommended button is the catalogue's ([`crate::CatalogueEntry::recommends`]) when it is
/// offered; a recommended sync is demoted to `Acknowledge` when a sync was already tried in the
/// incident (doing it again is not the remedy) or the app has hooks not marked idempotent (a
/// person must judge them first).
pub fn human_offer(app: &Application, mode: FailureMode, cfg: &PolicyConfig, history: &History) -> HumanOffer {
    let entry = mode.entry();
    let running = app.operation.is_some()
        || app.status.operation_state.as_ref().is_some_and(|s| s.phase == phase::RUNNING || s.phase == phase::TERMINATING);
    let deleting = app.is_deleting();
    let sync_forbidden = appset_hand_edit(app, cfg).is_some() || failed_hook(app).is_some() || prune_risk(app, cfg).is_some();
    let mut actions = Vec::new();
    if entry.offers_sync && !deleting && !running && !sync_forbidden {
        actions.push(HumanAction::Sync);
    }
    if !deleting {
        actions.push(HumanAction::HardRefresh);
    }
    if running {
        actions.push(HumanAction::TerminateOperation);
    }
    actions.extend([HumanAction::Snooze, HumanAction::Acknowledge]);
    let recommended = match entry.recommends {
        HumanAction::Sync if history.has_taken(Rung::Sync) || (app.has_hooks() && !hooks_marked_idempotent(app, cfg)) => {
            HumanAction::Acknowledge
        }
        a if actions.contains(&a) => a,
        _ => HumanAction::Acknowledge,
    };
    HumanOffer { actions, recommended }
}

/// Convenience wrapper: `DecisionPolicy::new(config.clone()).decide(...)`.
pub fn decide(
    app: &Application,
    trigger: &Trigger,
    history: &History,
    now: DateTime<Utc>,
    config: &PolicyConfig,
) -> Result<Decision, PolicyError> {
    DecisionPolicy::new(config.clone()).decide(app, trigger, history, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn managed_fields_become_json_pointers_and_ignored_prefixes_cover_their_children() {
        let fields = serde_json::json!({"f:metadata": {"f:labels": {}}, "f:spec": {".": {}, "f:syncPolicy": {"f:automated": {"f:selfHeal": {}}}, "f:source": {"f:targetRevision": {}}}});
        assert_eq!(edited_paths(&fields), ["/spec/source/targetRevision", "/spec/syncPolicy/automated/selfHeal"]);
        let ignored = ["/spec/syncPolicy".to_owned()];
        assert!(ignored_by_appset("/spec/syncPolicy/automated/selfHeal", &ignored));
        assert!(!ignored_by_appset("/spec/syncPolicyX", &ignored));
        assert!(!ignored_by_appset("/spec/source/targetRevision", &ignored));
    }

    /// Found while writing the `application_decide` fuzz target (`fuzz/`), confirmed with it: a
    /// timestamp at the end of chrono's range (`+262142-12-31T23:59:59Z`, which RFC 3339 parsing
    /// accepts) plus a grace period overflowed `DateTime + TimeDelta`, and `decide` panicked
    /// instead of deciding. The crashing inputs are fuzz/seeds/application_decide/regression-*.
    #[test]
    fn timestamps_at_the_end_of_time_do_not_panic() {
        fn push_to_the_end(v: &mut serde_json::Value) {
            match v {
                serde_json::Value::Object(map) => {
                    for (k, v) in map.iter_mut() {
                        if matches!(k.as_str(), "finishedAt" | "startedAt" | "lastTransitionTime" | "reconciledAt") && v.is_string() {
                            *v = "+262142-12-31T23:59:59Z".into();
                        } else {
                            push_to_the_end(v);
                        }
                    }
                }
                serde_json::Value::Array(items) => items.iter_mut().for_each(push_to_the_end),
                _ => {}
            }
        }
        let now: DateTime<Utc> = "2026-11-01T12:30:00Z".parse().unwrap();
        let trigger: Trigger = "on-sync-failed".parse().unwrap();
        for body in [
            include_str!("../../../events/apps/webhook-unavailable.json"),
            include_str!("../../../events/apps/crd-not-established.json"),
            include_str!("../../../events/apps/comparison-error-transient.json"),
            include_str!("../../../events/apps/stale-progressing.json"),
            include_str!("../../../events/apps/custom-health-progressing.json"),
        ] {
            let mut v: serde_json::Value = serde_json::from_str(body).unwrap();
            push_to_the_end(&mut v);
            let app: Application = serde_json::from_value(v).unwrap();
            let d = DecisionPolicy::default().decide(&app, &trigger, &History::default(), now).unwrap();
            assert!(d.retry_after_secs.is_none_or(|s| s > 0), "{d:?}");
        }
    }

    #[test]
    fn quoted_group_versions_are_read_from_kind_not_found_messages() {
        let m = "no matches for kind \"PodSecurityPolicy\" in version \"policy/v1beta1\"";
        assert_eq!(quoted_after(m, "in version \""), Some("policy/v1beta1"));
        assert_eq!(quoted_after("nothing here", "in version \""), None);
    }
}

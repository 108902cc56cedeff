//! The decision policy: a pure function of the Application, the trigger, the incident's history,
//! the time and the configuration. It performs no I/O and reads no clock.
//!
//! Two steps. [`classify()`] names the failure mode from the Application alone (with the evidence
//! and, for modes that are waited out first, how long). [`DecisionPolicy::decide`] then places
//! the app's incident on that mode's remediation ladder, using what was already done, and applies
//! the safety gates before any sync.

use chrono::{DateTime, Duration, SecondsFormat, SubsecRound, Utc};

use crate::app::{Application, HOOKS_IDEMPOTENT_KEY, ResourceResult, health, phase, sync_status};
use crate::catalogue::{FailureMode, REMOVED_BUILTIN_APIS, TRANSIENT_SIGNALS};
use crate::config::PolicyConfig;
use crate::decision::{Decision, Evidence, SyncPlan};
use crate::error::PolicyError;
use crate::incident::{History, Outcome};
use crate::keys::IncidentKey;
use crate::ladder::Rung;
use crate::ladder::{Action, HumanAction};
use crate::trigger::Trigger;

/// What the classifier found.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The failure mode found; `Healthy` when nothing is wrong.
    pub mode: FailureMode,
    /// Specific detail for the reason, beyond the catalogue title.
    pub detail: String,
    /// The fields the finding rests on, carried into the decision's evidence.
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

pub mod classify;
use classify::*;

/// Why a sync must not be started automatically, or the exact sync that is on record to re-run.
/// Why a sync to the target revision would move the app back, if it would: the comparison's
/// revision (`status.sync.revision(s)`, what auto-sync and a sync without a revision deploy:
/// `controller/appcontroller.go:2376` at v3.5.1) is one deployed before and replaced since
/// (`status.history`, `controller/state.go:1220`). argoproj/argo-cd#29716: auto-sync deployed
/// revisions that field still held, 3,401 commits old, and downgraded a self-managed Argo CD.
/// Not when the spec itself names that revision now: a person rolled back.
fn moves_back(app: &Application) -> Option<String> {
    use crate::app::revision_of;
    let sync = app.status.sync.as_ref()?;
    let target = revision_of(&sync.revision, &sync.revisions)?;
    let history = &app.status.history;
    let last = history.iter().max_by_key(|h| h.id)?;
    let deployed = revision_of(&last.revision, &last.revisions)?;
    if target == deployed {
        return None;
    }
    let earlier = history
        .iter()
        .filter(|h| h.id < last.id && revision_of(&h.revision, &h.revisions).as_deref() == Some(target.as_str()))
        .max_by_key(|h| h.id)?;
    let named: Vec<&str> = match &app.spec.source {
        Some(source) => vec![source.target_revision.as_str()],
        None => app.spec.sources.iter().map(|s| s.target_revision.as_str()).collect(),
    };
    if named.join(",") == target {
        return None;
    }
    let short = |r: &str| r.split(',').map(|p| p.chars().take(10).collect::<String>()).collect::<Vec<_>>().join(",");
    let at = |t: Option<chrono::DateTime<chrono::Utc>>| t.map_or_else(|| "an unknown time".to_owned(), rfc3339);
    Some(format!(
        "it would move the app back: Argo CD's target {} was deployed at {} (deployment {}) and replaced by {} at {} (deployment {}); a revision older than the last deployment is not synced automatically (argoproj/argo-cd#29716)",
        short(&target),
        at(earlier.deployed_at),
        earlier.id,
        short(&deployed),
        at(last.deployed_at),
        last.id
    ))
}

/// The sync Argo Medic may request for `app`: what its automated policy would sync, or a re-run of a person's failed
/// sync; otherwise why it must not sync.
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
    // With Prune=confirm a sync that prunes stops until a person confirms in Argo CD
    // (gitops-engine/pkg/sync/sync_context.go:458-460), and no one would be asked.
    let app_options = app.spec.sync_policy.as_ref().map(|p| p.sync_options.as_slice()).unwrap_or_default();
    if app_options.iter().any(|o| o.replace(' ', "").eq_ignore_ascii_case("Prune=confirm"))
        && app.status.resources.iter().any(|r| r.requires_pruning)
    {
        return Err(
            "the app syncs with Prune=confirm and a resource requires pruning: the sync would stop until a person confirms it in Argo CD"
                .into(),
        );
    }
    if let Some(auto) = app.auto_sync() {
        if let Some(why) = moves_back(app) {
            return Err(why);
        }
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
    // A sync that carries Argo Medic's own key is Argo Medic's, whatever account started it: not
    // one a person asked for.
    if op.is_some_and(|o| o.info.iter().any(|i| i.name == crate::app::IDEMPOTENCY_INFO_NAME)) {
        return Err("the failed sync was Argo Medic's own (its key is in operation.info), not one a person asked for".into());
    }
    // The re-run must be the sync the person asked for: a dry run changed nothing on purpose, and a
    // partial sync applied only what they chose (controller/sync.go:311, :313-319); Argo Medic
    // re-runs whole, real syncs only.
    if sync.is_some_and(|s| s.dry_run) {
        return Err("the failed sync was a dry run; re-running it would apply what the person only wanted to see".into());
    }
    if let Some(n) = sync.and_then(|s| s.resources.as_ref()).map(Vec::len).filter(|n| *n > 0) {
        return Err(format!(
            "the failed sync was a partial sync of {n} resource(s); re-running the whole app would apply what the person left out"
        ));
    }
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
    /// The thresholds and safety limits the policy judges by.
    pub config: PolicyConfig,
}

impl DecisionPolicy {
    /// A policy that judges by `config`.
    pub fn new(config: PolicyConfig) -> Self {
        Self { config }
    }

    /// Decides one action for a full Application, with the trust level that applies to it when it
    /// changes Argo CD (the actuator's gate holds or proposes it accordingly). Errors only when the
    /// input cannot be judged.
    pub fn decide(&self, app: &Application, trigger: &Trigger, history: &History, now: DateTime<Utc>) -> Result<Decision, PolicyError> {
        let mut d = self.decide_action(app, trigger, history, now)?;
        if let Some(rung) = Rung::of(d.action).filter(|r| *r != Rung::Escalate) {
            d.trust = Some(self.config.trust.applied(app, d.failure_mode, crate::actions::ActionKind::of_rung(rung)));
        }
        if d.incident.is_some() {
            d.route = self.config.routing.route_for(app);
        }
        Ok(d)
    }

    fn decide_action(&self, app: &Application, trigger: &Trigger, history: &History, now: DateTime<Utc>) -> Result<Decision, PolicyError> {
        if let Some(why) = app.incompleteness() {
            return Err(PolicyError::IncompleteApplication { app: app.id(), why });
        }
        let cfg = &self.config;
        let name = app.id();
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
        if app.reconcile_skipped() {
            d.failure_mode = FailureMode::OutOfScope;
            d.rule = "skip-reconcile".into();
            d.reason = format!(
                "Argo CD's controller skips this app (`{}`), so its status is not maintained and a refresh or sync would not be processed",
                crate::app::SKIP_RECONCILE_ANNOTATION
            );
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
        // The latest attempt, an unfinished claim included: a claim a live run still holds is
        // given its settle time too (one of a run that died is older than that by the time it is
        // redelivered, and its rung, not taken, is decided again and resumed).
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
        // A rung claimed and not recorded (its run died) is decided again, whatever this look
        // would choose instead: resumed under its key it is performed once (the actuator reads
        // Argo CD's state for it first); superseded, it would be lost. A recovery wave's refresh
        // claimed by a step that died was superseded by the next sweep look's escalation (its
        // trigger counts the controller's reconcile during the outage, the wave's does not).
        let pending = hist.pending().map(|a| a.rung).filter(|r| !hist.has_taken(*r));
        if pending.is_none() && hist.actions_taken() >= cfg.max_actions_per_incident {
            let msg = format!("{headline}. {} actions did not resolve it; a human has to look", hist.actions_taken());
            return Ok(step(escalate(d, msg), "action-limit"));
        }
        // In a recovery wave the controller's last reconcile happened while the shared cause was
        // still on: it proves nothing about now, and a refresh is what the wave is for (the
        // controller compares again only at its next reconciliation, docs/argo-cd-behaviour.md §3).
        let controller_refreshed = entry.controller_refresh_counts
            && trigger.as_str() != Trigger::RECOVERY
            && matches!((app.status.reconciled_at, finding.began_at), (Some(r), Some(b)) if r > later(b, cfg.settle_secs));
        // A futile refresh is futile hard too: both only ask the controller to compare again.
        let skipped = |r: Rung| match r {
            Rung::Refresh => controller_refreshed || finding.refresh_futile,
            Rung::HardRefresh => finding.refresh_futile,
            _ => false,
        };
        let next = entry.ladder.iter().copied().find(|r| !hist.has_taken(*r) && !skipped(*r));
        let rung = pending.or(next).unwrap_or(Rung::Escalate);
        let tried: Vec<_> = hist.attempts.iter().map(|a| a.rung.as_str()).collect();
        let tried = if tried.is_empty() { String::new() } else { format!(" after {}", tried.join(", ")) };
        match rung {
            Rung::Escalate => {
                let unknown = hist.attempts.iter().find(|a| a.outcome == Outcome::Unknown);
                let because = if let Some(a) = unknown {
                    format!(
                        "the {} claimed at {} may or may not have gone out (a run died before recording it; Argo CD no longer shows its key, and an operation started since), so it is not sent again",
                        a.rung.as_str(),
                        rfc3339(a.at)
                    )
                } else if finding.refresh_futile && entry.ladder.first() == Some(&Rung::Refresh) {
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
        let name = app.id();
        let revision = app.revision();
        if let Some(open) = history.incident.as_ref()
            && open.instance == self.config.instance_id
            && open.app == name
            && open.revision == revision
        {
            return open.clone();
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
    actions.extend([HumanAction::Snooze, HumanAction::Acknowledge, HumanAction::Freeze]);
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
            include_str!("../../../../events/apps/webhook-unavailable.json"),
            include_str!("../../../../events/apps/crd-not-established.json"),
            include_str!("../../../../events/apps/comparison-error-transient.json"),
            include_str!("../../../../events/apps/stale-progressing.json"),
            include_str!("../../../../events/apps/custom-health-progressing.json"),
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

    /// During an outage the controller's own reconciles keep failing, and the ladder counts them
    /// as the refresh rung: the app escalates. In a recovery wave those reconciles predate the
    /// recovery, so the wave refreshes instead of escalating every app of the cause.
    #[test]
    fn a_recovery_wave_refreshes_where_the_controllers_outage_reconciles_would_escalate() {
        let mut v: serde_json::Value =
            serde_json::from_str(include_str!("../../../../events/apps/comparison-error-transient.json")).unwrap();
        v["status"]["reconciledAt"] = "2026-11-01T13:00:00Z".into();
        let app: Application = serde_json::from_value(v).unwrap();
        let now: DateTime<Utc> = "2026-11-01T13:01:00Z".parse().unwrap();
        let policy = DecisionPolicy::default();
        let swept = policy.decide(&app, &Trigger::sweep(), &History::default(), now).unwrap();
        assert_eq!((swept.failure_mode, swept.action), (FailureMode::ComparisonErrorTransient, Action::Escalate), "{}", swept.reason);
        assert!(swept.reason.contains("Argo CD reconciled it at"), "{}", swept.reason);
        let wave = policy.decide(&app, &Trigger::recovery(), &History::default(), now).unwrap();
        assert_eq!(wave.action, Action::Refresh, "{}", wave.reason);
    }
}

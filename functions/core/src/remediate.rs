//! The per-app step: observe → decide → act → record, behind ports. `medic sweep`, the serverless
//! worker and the local pipeline all run this same code.
//!
//! Exactly-once comes from two records that survive crashes: the store's claim (written before any
//! call, keyed by the idempotency key) and, for syncs, the key Argo CD itself keeps in
//! `operation.info`. A claim released after a transient failure, or taken over after its holder
//! crashed, is therefore safe: the re-run re-reads the app and finds the key if the sync happened.

use std::time::Duration;

use chrono::SubsecRound;
use serde::Serialize;
use thiserror::Error;

use crate::app::{AppId, Application, ApplicationSyncRequest, IDEMPOTENCY_INFO_NAME, INCIDENT_BEGAN_INFO_NAME, Info, SyncOptions};
use crate::catalogue::{FailureMode, Rung};
use crate::decision::{Action, Decision};
use crate::error::PolicyError;
use crate::event::AppRef;
use crate::incident::{Attempt, DecisionNote, Outcome};
use crate::keys::IdempotencyKey;
use crate::policy::DecisionPolicy;
use crate::ports::{
    ArgoApi, ArgoError, Budget, BudgetKind, Claim, Clock, EscalationError, Escalator, IncidentStore, ListQuery, RefreshKind, StoreError,
};
use crate::switch::{Mode, Switch};
use crate::trigger::Trigger;

/// Name of the `infos` entry carrying the incident id on Argo Medic's syncs.
pub const INCIDENT_INFO_NAME: &str = "argo-medic.io/incident";
/// Name of the `infos` entry carrying the failure mode on Argo Medic's syncs.
pub const REASON_INFO_NAME: &str = "argo-medic.io/failure-mode";

/// What the step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepResult {
    /// Nothing needed doing.
    NoAction,
    /// The app is healthy again; its incident was closed.
    Resolved,
    /// `--dry-run`: decided, did nothing.
    DryRun,
    /// Refresh requested and verified (`reconciledAt` moved past the request).
    Refreshed,
    /// Refresh requested twice and `reconciledAt` did not move: Argo CD dropped it.
    RefreshUnverified,
    /// Sync operation started.
    Synced,
    /// The action was already taken for this incident (store record or `operation.info`).
    AlreadyDone,
    /// Handed to a human.
    Escalated,
    /// Waiting: the policy said so, or Argo CD was busy / in a sync window.
    Waiting,
    /// Not now: out of budget, or another worker holds the action.
    Deferred,
    /// The action failed for good (recorded; the ladder moves on next time).
    Failed,
}

/// One app's step, for reports and audit.
#[derive(Debug, Clone, Serialize)]
pub struct StepReport {
    pub app: AppId,
    pub failure_mode: Option<FailureMode>,
    pub action: Option<Action>,
    pub result: StepResult,
    pub detail: String,
    pub idempotency_key: Option<IdempotencyKey>,
    /// Argo CD calls this step made.
    pub argo_calls: u32,
    #[serde(skip)]
    pub decision: Option<Decision>,
    /// The incident closed within this step: a verified refresh read the app back out of
    /// trouble, so the policy's closing decision on that read (the one the next look would have
    /// made) was taken at once, saving that look. Callers report it (Slack) as a resolution.
    #[serde(skip)]
    pub resolution: Option<Decision>,
}

/// Why a step could not finish; the caller retries it later (the message stays on the queue).
#[derive(Debug, Error)]
pub enum StepError {
    #[error(transparent)]
    Argo(#[from] ArgoError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Escalation(#[from] EscalationError),
    #[error(transparent)]
    Policy(#[from] PolicyError),
}

/// The step's collaborators.
pub struct Remediator<'a, A, S, E, B, C, W> {
    pub argo: &'a A,
    pub store: &'a S,
    pub escalator: &'a E,
    pub budget: &'a B,
    pub clock: &'a C,
    pub policy: &'a DecisionPolicy,
    /// Decide, act on nothing (the stack's parameters, `--dry-run`).
    pub dry_run: bool,
    /// The instant switch, read right before acting: anything but `act` makes the step report
    /// [`StepResult::DryRun`] and record nothing.
    pub switch: &'a W,
    /// How long a claim may stay in progress before another run may take it over.
    pub claim_timeout: Duration,
}

impl<A: ArgoApi, S: IncidentStore, E: Escalator, B: Budget, C: Clock, W: Switch> Remediator<'_, A, S, E, B, C, W> {
    /// Runs the step for one app. `observed` is a full Application just read (saves a call);
    /// otherwise the app is read first, because a notification or a list item may be stale or
    /// partial.
    pub async fn run(&self, app_ref: &AppRef, trigger: &Trigger, observed: Option<Application>) -> Result<StepReport, StepError> {
        let mut calls = 0;
        let app = match observed.filter(|a| a.incompleteness().is_none()) {
            Some(app) => app,
            None => {
                calls += 1;
                match self.argo.get_app(app_ref, None).await {
                    Ok(app) => app,
                    Err(e @ (ArgoError::NotFound(_) | ArgoError::PermissionDenied(_))) => {
                        // A 404 means deleted *or* in another project, and without a project Argo
                        // CD answers 403 for an app that does not exist: only a list by name tells
                        // that it is gone, and only then does its incident end.
                        calls += 1;
                        let query = ListQuery {
                            name: app_ref.name.clone(),
                            app_namespace: app_ref.namespace.clone(),
                            fields: crate::sweep::LIST_FIELDS.iter().map(|f| f.to_string()).collect(),
                            ..ListQuery::default()
                        };
                        let listed = self.argo.list_apps(&query).await?;
                        if listed.iter().any(|a| a.metadata.name == app_ref.name) {
                            return Err(e.into());
                        }
                        let name = app_ref.id();
                        let now = self.clock.now();
                        self.store.close(&name, now).await?;
                        let gone = Decision::gone(&name, now);
                        let detail = gone.reason.clone();
                        return Ok(report(name, Some(&gone), StepResult::Resolved, detail, calls));
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        };
        let name = app.id();
        let history = self.store.history(&name).await?;
        let decision = self.policy.decide(&app, trigger, &history, self.clock.now())?;
        let mut out = report(name.clone(), Some(&decision), StepResult::NoAction, decision.reason.clone(), calls);
        if decision.resolves_incident {
            self.store.close(&name, decision.decided_at).await?;
            out.result = StepResult::Resolved;
            return Ok(out);
        }
        // Boxed: the step's future is part of every caller's (the worker's batch, serve's loop),
        // and in debug builds their sizes add up to more than a test thread's stack.
        // The switch is read only when there is something to do, right before doing it.
        let mode = if self.dry_run {
            Mode::DryRun
        } else if decision.idempotency_key.is_none() || decision.incident.is_none() {
            Mode::Act
        } else {
            self.switch.mode().await
        };
        let result = Box::pin(self.act(app_ref, &app, &decision, trigger, out, mode)).await;
        if let (true, Some(incident)) = (mode.acts(), &decision.incident) {
            // For operators only (`medic incidents show`); the policy never reads it, so a note
            // that could not be written must not fail the step.
            let note = DecisionNote::new(&decision, &app.spec.project, trigger.as_str());
            let _ = self.store.note_decision(&name, incident, &note).await;
        }
        result
    }

    /// Acts on `decision` (claim, act, record), given the report so far.
    async fn act(
        &self,
        app_ref: &AppRef,
        app: &Application,
        decision: &Decision,
        trigger: &Trigger,
        mut out: StepReport,
        mode: Mode,
    ) -> Result<StepReport, StepError> {
        let name = &out.app.clone();
        let (Some(key), Some(incident)) = (decision.idempotency_key.clone(), decision.incident.clone()) else {
            out.result = if decision.action == Action::Wait { StepResult::Waiting } else { StepResult::NoAction };
            return Ok(out);
        };
        if !mode.acts() {
            out.result = StepResult::DryRun;
            if !self.dry_run {
                out.detail = format!("{} (not acted on: the switch is {mode})", out.detail);
            }
            return Ok(out);
        }
        // Only rungs carry a key, so a decision with one names a rung.
        let Some(rung) = Rung::of(decision.action) else {
            out.result = StepResult::NoAction;
            return Ok(out);
        };
        if let Some(kind) = rung.budget() {
            if let Err(e) = self.budget.acquire(kind).await {
                out.result = StepResult::Deferred;
                out.detail = e.to_string();
                return Ok(out);
            }
        }
        let attempt = Attempt { rung, at: decision.decided_at, idempotency_key: Some(key.clone()), outcome: Outcome::Requested };
        match self.store.claim(name, &incident, &attempt, self.claim_timeout).await? {
            Claim::Granted => {}
            Claim::AlreadyDone(outcome) => {
                out.result = StepResult::AlreadyDone;
                out.detail = format!("{} already taken for this incident ({outcome:?})", rung.as_str());
                return Ok(out);
            }
            Claim::Held { until } => {
                out.result = StepResult::Deferred;
                out.detail = format!("another run holds the {} until {until}", rung.as_str());
                return Ok(out);
            }
        }
        let mut refreshed = None;
        let acted = match rung {
            Rung::Refresh | Rung::HardRefresh => self.refresh(app_ref, app, rung, &mut out, &mut refreshed).await,
            Rung::Sync => self.sync(app_ref, app, decision, &key, &mut out).await,
            Rung::Escalate => self.escalate(app, decision, &mut out).await,
        };
        match acted {
            Ok(outcome) => {
                self.store.complete(name, &key, outcome).await?;
                if let Some(after) = refreshed.filter(|_| outcome == Outcome::Succeeded) {
                    self.close_if_resolved(name, &after, decision, trigger, &mut out).await?;
                }
                Ok(out)
            }
            Err(e) if is_transient(&e) => {
                // Safe to retry later: a sync that did go through is found by its key in
                // operation.info on the next run.
                self.store.release(name, &key).await?;
                Err(e)
            }
            Err(e) => {
                self.store.complete(name, &key, Outcome::Failed).await?;
                out.result = StepResult::Failed;
                out.detail = e.to_string();
                Ok(out)
            }
        }
    }

    /// After a verified refresh: the app as Argo CD just compared it, decided on again with the
    /// incident's history. When that decision closes the incident it is closed now, instead of
    /// on the next look (which would read the app once more only to find it calm).
    async fn close_if_resolved(
        &self,
        name: &AppId,
        after: &Application,
        decision: &Decision,
        trigger: &Trigger,
        out: &mut StepReport,
    ) -> Result<(), StepError> {
        let history = self.store.history(name).await?;
        let Ok(next) = self.policy.decide(after, &Trigger::sweep(), &history, self.clock.now()) else { return Ok(()) };
        if let (true, Some(incident)) = (next.resolves_incident && history.incident == decision.incident, &decision.incident) {
            // The closed record keeps the note of the action that healed it, as a later close would.
            let _ = self.store.note_decision(name, incident, &DecisionNote::new(decision, &after.spec.project, trigger.as_str())).await;
            self.store.close(name, next.decided_at).await?;
            out.detail = format!("{}; the incident is closed", out.detail);
            out.resolution = Some(next);
        }
        Ok(())
    }

    async fn refresh(
        &self,
        app_ref: &AppRef,
        app: &Application,
        rung: Rung,
        out: &mut StepReport,
        refreshed: &mut Option<Application>,
    ) -> Result<Outcome, StepError> {
        let kind = rung.refresh().unwrap_or(RefreshKind::Normal);
        let mut verified = false;
        let mut healthy = false;
        // A refresh can be silently dropped (argoproj/argo-cd#28392): verify that reconciledAt
        // moved past the request, and re-request once, with a budget token of its own (one
        // token buys one refresh request; without one left, the refresh stays unverified).
        let budget = rung.budget().unwrap_or(BudgetKind::Refresh);
        for request in 0..2 {
            if request > 0 && self.budget.acquire(budget).await.is_err() {
                break;
            }
            // reconciledAt has whole seconds; compare at that precision.
            let requested_at = self.clock.now().trunc_subsecs(0);
            out.argo_calls += 1;
            let after = self.argo.get_app(app_ref, Some(kind)).await?;
            // Verified when reconciledAt moved past the app as read just before this step: both
            // times are Argo CD's, so a function clock off from the cluster's cannot make a
            // refresh look dropped (L4). Only an app read without reconciledAt falls back to the
            // function's clock.
            verified = match (after.status.reconciled_at, app.status.reconciled_at) {
                (Some(now), Some(before)) => now > before,
                (Some(now), None) => now >= requested_at,
                (None, _) => false,
            };
            healthy = after.is_synced_and_healthy();
            if verified {
                *refreshed = Some(after);
                break;
            }
        }
        out.result = if verified { StepResult::Refreshed } else { StepResult::RefreshUnverified };
        out.detail = match (verified, healthy) {
            (true, true) => format!("{} verified; the app is Synced and Healthy now", kind.as_str()),
            (true, false) => format!("{} verified; the app is still in trouble", kind.as_str()),
            (false, _) => format!("{} requested twice but status.reconciledAt did not move", kind.as_str()),
        };
        Ok(if verified { Outcome::Succeeded } else { Outcome::NoEffect })
    }

    async fn sync(
        &self,
        app_ref: &AppRef,
        app: &Application,
        decision: &Decision,
        key: &IdempotencyKey,
        out: &mut StepReport,
    ) -> Result<Outcome, StepError> {
        if app.recorded_idempotency_keys().any(|k| k == key.as_str()) {
            out.result = StepResult::AlreadyDone;
            out.detail = "Argo CD already records this sync's idempotency key in operation.info".into();
            return Ok(Outcome::Succeeded);
        }
        let plan = decision.sync.as_ref().expect("a sync decision carries its plan");
        let incident = decision.incident.as_ref();
        let request = sync_request(
            app,
            plan,
            key,
            &incident.map(|i| i.id()).unwrap_or_default(),
            incident.and_then(|i| i.began_at),
            decision.failure_mode,
        );
        out.argo_calls += 1;
        match self.argo.sync(app_ref, &request).await {
            Ok(_) => {
                out.result = StepResult::Synced;
                out.detail = format!("sync started ({})", plan.intent);
                Ok(Outcome::Succeeded)
            }
            Err(ArgoError::OperationInProgress) => {
                out.result = StepResult::Waiting;
                out.detail = "another operation is already in progress".into();
                Ok(Outcome::OperationInProgress)
            }
            Err(ArgoError::SyncWindowBlocked(m)) => {
                out.result = StepResult::Waiting;
                out.detail = format!("blocked by sync window: {m}");
                Ok(Outcome::SyncWindowBlocked)
            }
            Err(e @ (ArgoError::Transient(_) | ArgoError::CircuitOpen { .. })) => {
                // The answer was lost, not necessarily the sync: Argo CD may have started it.
                // Never send it again blindly; re-read the app and look for this sync's key.
                out.argo_calls += 1;
                match self.argo.get_app(app_ref, None).await {
                    Ok(now) if now.recorded_idempotency_keys().any(|k| k == key.as_str()) => {
                        out.result = StepResult::Synced;
                        out.detail = format!("sync started ({}); its answer was lost ({e}), Argo CD records its key", plan.intent);
                        Ok(Outcome::Succeeded)
                    }
                    // Not started as far as Argo CD shows: the claim is released and a later run
                    // (which reads the app first) tries again.
                    _ => Err(e.into()),
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn escalate(&self, app: &Application, decision: &Decision, out: &mut StepReport) -> Result<Outcome, StepError> {
        self.escalator.escalate(app, decision).await?;
        out.result = StepResult::Escalated;
        Ok(Outcome::Succeeded)
    }
}

/// The sync request for `plan`, the only place one is built: automatic syncs and a person's sync
/// from an escalation carry the same `infos`: the idempotency key (how a retry finds the sync it
/// already started), the incident, the failure mode, and when the incident began (how the
/// incident survives the operation the sync creates; without it a failed sync would open a new
/// incident, with a new ladder and a second Slack parent).
pub fn sync_request(
    app: &Application,
    plan: &crate::decision::SyncPlan,
    key: &IdempotencyKey,
    incident_id: &str,
    incident_began: Option<chrono::DateTime<chrono::Utc>>,
    failure_mode: crate::catalogue::FailureMode,
) -> ApplicationSyncRequest {
    let began = incident_began.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    ApplicationSyncRequest {
        name: app.metadata.name.clone(),
        revision: plan.revision.clone(),
        prune: plan.prune,
        sync_options: (!plan.sync_options.is_empty()).then(|| SyncOptions { items: plan.sync_options.clone() }),
        infos: [
            Info { name: IDEMPOTENCY_INFO_NAME.into(), value: key.to_string() },
            Info { name: INCIDENT_INFO_NAME.into(), value: incident_id.to_owned() },
            Info { name: REASON_INFO_NAME.into(), value: failure_mode.to_string() },
        ]
        .into_iter()
        .chain(began.map(|value| Info { name: INCIDENT_BEGAN_INFO_NAME.into(), value }))
        .collect(),
        project: app.spec.project.clone(),
        app_namespace: app.metadata.namespace.clone(),
        ..ApplicationSyncRequest::default()
    }
}

fn is_transient(e: &StepError) -> bool {
    match e {
        StepError::Argo(a) => a.is_retryable() || matches!(a, ArgoError::Unauthenticated(_)),
        StepError::Store(_) | StepError::Escalation(_) => true,
        StepError::Policy(_) => false,
    }
}

fn report(app: AppId, d: Option<&Decision>, result: StepResult, detail: String, calls: u32) -> StepReport {
    StepReport {
        app,
        failure_mode: d.map(|d| d.failure_mode),
        action: d.map(|d| d.action),
        result,
        detail,
        idempotency_key: d.and_then(|d| d.idempotency_key.clone()),
        argo_calls: calls,
        decision: d.cloned(),
        resolution: None,
    }
}

/// How one step of a fleet outage's recovery wave came out (`Err`: the step failed): what a
/// wave's batch verdict counts (`crate::fleet::batch_verdict`). The one reading of a step both
/// `medic sweep`'s batches and the workers' use.
pub fn wave_outcome<E>(step: &Result<StepReport, E>) -> crate::fleet::WaveOutcome {
    use crate::fleet::WaveOutcome;
    match step {
        Ok(r) if r.result == StepResult::Resolved || r.resolution.is_some() => WaveOutcome::Healed,
        Ok(r) if matches!(r.result, StepResult::Refreshed | StepResult::RefreshUnverified | StepResult::Failed | StepResult::Escalated) => {
            WaveOutcome::Failed
        }
        Ok(_) => WaveOutcome::Neither,
        Err(_) => WaveOutcome::Failed,
    }
}

//! The per-app step: observe → decide → act → record, behind ports. `medic sweep`, the serverless
//! worker and the local pipeline all run this same code. It acts only through the actuator
//! ([`medic_core::actuator`]), which holds the gate, the budgets, the claims and the calls.

use std::time::Duration;

use medic_core::actuator::{Actuator, Performed, Request, RungDone, log_event};
use medic_core::app::{AppId, Application};
use medic_core::decision::Decision;
use medic_core::event::AppRef;
use medic_core::gate::Gate;
use medic_core::incident::{DecisionNote, History, Outcome};
use medic_core::ladder::Action;
use medic_core::policy::DecisionPolicy;
use medic_core::ports::{ArgoApi, ArgoError, Budget, Clock, Escalator, IncidentStore, ListQuery, MarkerStore};
use medic_core::record::DecisionRecord;
use medic_core::switch::Switch;
use medic_core::timeline::{Arrival, EventKind, TimelineEvent};
use medic_core::trigger::Trigger;

use medic_core::step::{StepError, StepReport, StepResult, report};

/// How a step acts, apart from its collaborators: the stack's switches and the claims' timeout.
#[derive(Debug, Clone, Copy)]
pub struct StepConfig {
    /// Decide, act on nothing (the stack's parameters, `--dry-run`).
    pub dry_run: bool,
    /// Change nothing and post nothing (the stack's kill switch).
    pub kill_switch: bool,
    /// How long a claim may stay in progress before another run may take it over.
    pub claim_timeout: Duration,
}

/// The step's collaborators. Its calls that change Argo CD or post go through the actuator it
/// builds from them ([`Remediator::actuator`]). Built by the worker's work item from its own
/// collaborators, and elsewhere by the composition root (`medic_stack`'s `Adapters::step`).
pub struct Remediator<'a, A, S, D, E, B, C, W> {
    pub argo: &'a A,
    pub store: &'a S,
    /// Markers (a person's performed action, an alert told once).
    pub dedupe: &'a D,
    pub escalator: &'a E,
    pub budget: &'a B,
    pub clock: &'a C,
    pub policy: &'a DecisionPolicy,
    /// Decide, act on nothing (the stack's parameters, `--dry-run`).
    pub dry_run: bool,
    /// Change nothing and post nothing (the stack's kill switch).
    pub kill_switch: bool,
    /// The instant switch, read by the gate right before acting: anything but `act` makes the
    /// step report [`StepResult::DryRun`] and claim nothing (the decision is still recorded).
    pub switch: &'a W,
    /// How long a claim may stay in progress before another run may take it over.
    pub claim_timeout: Duration,
    /// The delivery this step answers (the worker's work item), the natural key of its
    /// timeline's `received` and decision events; `None` (`medic sweep`): the decision's time.
    pub arrival: Option<&'a Arrival>,
}

impl<'a, A, S, D, E, B, C, W> Remediator<'a, A, S, D, E, B, C, W> {
    /// The same step answering `arrival` (its timeline's `received` and decision events).
    pub fn with_arrival(self, arrival: &'a Arrival) -> Self {
        Self { arrival: Some(arrival), ..self }
    }
}

impl<A: ArgoApi, S: IncidentStore, D: MarkerStore, E: Escalator, B: Budget, C: Clock, W: Switch> Remediator<'_, A, S, D, E, B, C, W> {
    /// The one actuator, over this step's collaborators.
    pub fn actuator(&self) -> Actuator<'_, A, S, D, E, B, C, W> {
        Actuator {
            argo: self.argo,
            store: self.store,
            dedupe: self.dedupe,
            escalator: self.escalator,
            budget: self.budget,
            clock: self.clock,
            gate: Gate { dry_run: self.dry_run, kill_switch: self.kill_switch, switch: self.switch },
            claim_timeout: self.claim_timeout,
        }
    }

    /// Runs the step for one app. `observed` is a full Application just read (saves a call);
    /// otherwise the app is read first, because a notification or a list item may be stale or
    /// partial.
    pub async fn run(&self, app_ref: &AppRef, trigger: &Trigger, observed: Option<Application>) -> Result<StepReport, StepError> {
        let mut calls = 0;
        let app = match observed.filter(|a| a.incompleteness().is_none()) {
            Some(app) => app,
            None => {
                calls += 1;
                match self.argo.get_app(app_ref).await {
                    Ok(app) => app,
                    Err(e @ (ArgoError::NotFound(_) | ArgoError::PermissionDenied(_))) => {
                        // A 404 means deleted *or* in another project, and without a project Argo
                        // CD answers 403 for an app that does not exist: only a list by name tells
                        // that it is gone, and only then does its incident end.
                        calls += 1;
                        let query = ListQuery {
                            name: app_ref.name.clone(),
                            app_namespace: app_ref.namespace.clone(),
                            fields: medic_core::sweep::LIST_FIELDS.iter().map(|f| f.to_string()).collect(),
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
        let (history, settled) = self.settle_sends(&app, trigger).await?;
        let mut decision = self.policy.decide(&app, trigger, &history, self.clock.now())?;
        let frozen = self.apply_freezes(&app, &mut decision).await;
        // Boxed, as the rung below: in debug builds the step's future is on every caller's stack.
        Box::pin(self.record(&app, &decision, trigger, &history, frozen.clone())).await;
        let mut out = report(name.clone(), Some(&decision), StepResult::NoAction, decision.reason.clone(), calls);
        if let Some(settled) = settled {
            out.detail = format!("{settled}; {}", out.detail);
        }
        out.down_after = Some(medic_core::fleet::is_down(&app));
        Box::pin(self.log_decision(&decision, trigger, &history, frozen.as_deref())).await;
        if decision.resolves_incident {
            if let Some(incident) = &history.incident {
                self.log_resolved(incident, &decision).await;
            }
            self.store.close(&name, decision.decided_at).await?;
            return Ok(StepReport { result: StepResult::Resolved, ..out });
        }
        // Boxed: the step's future is part of every caller's (the worker's batch, serve's loop),
        // and in debug builds their sizes add up to more than a test thread's stack.
        let done = Box::pin(self.rung(app_ref, &app, &decision, trigger, &history, out)).await;
        if let (Ok((_, true)), Some(incident)) = (&done, &decision.incident) {
            // For operators only (`medic incidents show`); the policy never reads it, so a note
            // that could not be written must not fail the step.
            let note = DecisionNote::new(&decision, &app.spec.project, trigger.as_str());
            let _ = self.store.note_decision(&name, incident, &note).await;
        }
        done.map(|(report, _)| report)
    }

    /// The incident's timeline: the delivery received and what was decided on it (a wait, a
    /// freeze's hold, or a decision), with the rule and the trust level. Nothing for an app
    /// with no incident.
    async fn log_decision(&self, decision: &Decision, trigger: &Trigger, history: &History, frozen: Option<&str>) {
        let Some(incident) = decision.incident.as_ref().or(history.incident.as_ref()) else { return };
        let natural = match self.arrival {
            Some(d) => d.key.clone(),
            None => decision.decided_at.to_rfc3339(),
        };
        if let Some(d) = self.arrival {
            log_event(self.store, TimelineEvent::received(incident, d, trigger.as_str(), &decision.app)).await;
        }
        let level = decision.trust.as_ref().map(|t| t.level.as_str().to_owned());
        let (kind, what) = match (frozen, decision.action) {
            (Some(freeze), _) => (EventKind::Frozen, format!("{} held by {freeze}: {}", decision.action.as_str(), decision.reason)),
            (None, Action::Wait) => (EventKind::Waited, decision.reason.clone()),
            (None, action) => (EventKind::Decided, format!("{}: {}", action.as_str(), decision.reason)),
        };
        let event = TimelineEvent::new(incident, kind, &natural, decision.decided_at, what).decided_by(decision.rule.clone(), level);
        log_event(self.store, event).await;
    }

    /// The incident's `resolved` event, by the decision that closes it (once per incident).
    async fn log_resolved(&self, incident: &medic_core::keys::IncidentKey, closing: &Decision) {
        log_event(self.store, TimelineEvent::new(incident, EventKind::Resolved, "resolved", closing.decided_at, closing.reason.clone()))
            .await;
    }

    /// Records the decision with the parts of the app the policy read, whatever the level and
    /// the mode (a dry run too): the history `medic report` and `medic replay` read. The policy
    /// never reads it, so a record that could not be written must not fail the step.
    async fn record(&self, app: &Application, decision: &Decision, trigger: &Trigger, history: &History, frozen: Option<String>) {
        let (mode, _) = self.actuator().gate.mode().await;
        let json = match serde_json::to_value(app) {
            Ok(json) => json,
            Err(e) => {
                tracing::warn!(app = %decision.app, error = %e, "could not record the decision: the app does not serialise");
                return;
            }
        };
        let record = DecisionRecord::new(decision, &json, &app.spec.project, trigger.as_str(), mode.as_str(), history).frozen_by(frozen);
        if let Err(e) = self.store.record_decision(&record).await {
            tracing::warn!(app = %decision.app, error = %e, retryable = e.retryable(), "could not record the decision; the report will miss it");
        }
    }

    /// A freeze over the app ([`medic_core::freeze`]) makes the decision's action `observe` until it
    /// ends; the switch's cache reads the freezes with the mode (no read for a decision that
    /// changes nothing in Argo CD).
    /// Returns the freeze that covered the app, as it describes itself.
    async fn apply_freezes(&self, app: &Application, decision: &mut Decision) -> Option<String> {
        let applied = decision.trust.take()?;
        let before = applied.why.clone();
        let freezes = self.switch.freezes().await;
        let after = medic_core::freeze::with_freezes(applied, &freezes, app, self.clock.now());
        let frozen = (after.why != before).then(|| after.why.clone());
        decision.trust = Some(after);
        frozen
    }

    /// Judges the syncs of the open incident that Argo CD accepted and nobody has seen start
    /// ([`Outcome::awaits_start`]) on this read of the app, which costs no call: the recheck the
    /// sync scheduled is the read. Argo CD can accept a sync and never run it
    /// (argoproj/argo-cd#27133), and an accepted sync counted as done was a lost action.
    /// - An operation carrying the sync's key started: `Succeeded`.
    /// - The key waits in `operation` for the controller: still judged later.
    /// - Another operation started since: `Unknown` (ours may have run and been replaced).
    /// - No trace, [`SYNC_START_GRACE`] after it was sent: a first send is reopened in the history
    ///   returned, so this step decides it again and the actuator sends it once more under the same
    ///   key; a second send is `NoEffect`, and the ladder moves on to a person.
    ///
    /// Returns the history to decide on, and what was settled, for the report.
    async fn settle_sends(&self, app: &Application, trigger: &Trigger) -> Result<(History, Option<String>), StepError> {
        let name = app.id();
        let mut history = self.store.history(&name).await?;
        let now = self.clock.now();
        let mut notes = Vec::new();
        let awaiting: Vec<_> = history.attempts.iter().filter(|a| a.outcome.awaits_start()).cloned().collect();
        for attempt in awaiting {
            let Some(key) = attempt.idempotency_key.clone() else { continue };
            let settled = if app.operation_started_with(key.as_str()) {
                Some(Outcome::Succeeded)
            } else if app.operation_pending_with(key.as_str())
                || now - attempt.at < chrono::TimeDelta::from_std(SYNC_START_GRACE).unwrap_or_default()
            {
                None
            } else if app.operation_started_after(attempt.at).is_some() {
                notes.push(format!("the sync sent at {} was replaced by another operation before it was seen", attempt.at.to_rfc3339()));
                Some(Outcome::Unknown)
            } else if attempt.outcome == Outcome::Resent {
                notes.push(format!("Argo CD accepted the sync under key {key} twice and started it neither time (argoproj/argo-cd#27133)"));
                Some(Outcome::NoEffect)
            } else {
                // Decided again on the history with it reopened: the same sync under the same key
                // is resent by the actuator; anything else (the app healed, a wait) and it is no
                // longer what the app needs.
                let reopened = history.reopened(&key);
                let again = self.policy.decide(app, trigger, &reopened, now)?;
                if again.idempotency_key.as_ref() == Some(&key) {
                    notes.push(format!("Argo CD accepted the sync under key {key} at {} and never started it", attempt.at.to_rfc3339()));
                    history = reopened;
                    None
                } else if again.action == Action::Wait {
                    None
                } else {
                    notes.push(format!("the sync sent at {} left no trace and is no longer needed", attempt.at.to_rfc3339()));
                    Some(Outcome::NoEffect)
                }
            };
            if let Some(outcome) = settled {
                self.store.complete(&name, &key, outcome).await?;
                for a in history.attempts.iter_mut().filter(|a| a.idempotency_key.as_ref() == Some(&key)) {
                    a.outcome = outcome;
                }
            }
        }
        Ok((history, (!notes.is_empty()).then(|| notes.join("; "))))
    }

    /// The decision's rung through the actuator, then what its outcome asks of the step: an
    /// unknown outcome is told to a person at once, a verified refresh that healed the app closes
    /// its incident. Also returns whether the gate let the rung act (the note is kept only then).
    async fn rung(
        &self,
        app_ref: &AppRef,
        app: &Application,
        decision: &Decision,
        trigger: &Trigger,
        history: &History,
        out: StepReport,
    ) -> Result<(StepReport, bool), StepError> {
        // Boxed: a debug build's poll frame of `perform` is a quarter of a test thread's stack.
        let performed = Box::pin(self.actuator().perform(Request::Rung { app_ref, app, decision, history, report: Box::new(out) })).await?;
        let Performed::Rung(done) = performed else { unreachable!("a rung request is answered with a rung") };
        let RungDone { mut report, answer, outcome, refreshed } = *done;
        match (outcome, refreshed) {
            (Some(Outcome::Unknown | Outcome::Withheld), _) => {
                // Never sent again: the rung counts as taken, and the decision on the same read
                // with that record is the ladder's next rung (a person), told at once.
                let history = self.store.history(&report.app).await?;
                let next = self.policy.decide(app, trigger, &history, self.clock.now())?;
                if next.action == Action::Escalate && next.idempotency_key.is_some() {
                    let mut told = medic_core::step::report(
                        report.app.clone(),
                        Some(&next),
                        StepResult::NoAction,
                        next.reason.clone(),
                        report.argo_calls,
                    );
                    told.detail = format!("{}; {}", report.detail, told.detail);
                    // Boxed as the first rung's call is: its future is part of every caller's.
                    let next_rung = Request::Rung { app_ref, app, decision: &next, history: &history, report: Box::new(told) };
                    let performed = Box::pin(self.actuator().perform(next_rung)).await?;
                    let Performed::Rung(done) = performed else { unreachable!("a rung request is answered with a rung") };
                    return Ok((done.report, done.answer.acts()));
                }
            }
            (Some(Outcome::Succeeded), Some(after)) => {
                self.close_if_resolved(&report.app.clone(), &after, decision, trigger, &mut report).await?
            }
            _ => {}
        }
        // A proposal is the incident's escalation: its note is kept as an action's is.
        Ok((report, matches!(answer.verdict, medic_core::gate::Verdict::Act | medic_core::gate::Verdict::Propose)))
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
            self.log_resolved(incident, &next).await;
            self.store.close(name, next.decided_at).await?;
            out.detail = format!("{}; the incident is closed", out.detail);
            out.resolution = Some(next);
        }
        Ok(())
    }
}

/// How long after Argo CD accepted a sync an app read may still show no trace of it without the
/// sync counting as dropped: the API server answers reads from its informer cache, which may not
/// have the operation it just wrote yet.
pub const SYNC_START_GRACE: std::time::Duration = std::time::Duration::from_secs(15);

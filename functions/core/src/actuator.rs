//! The one actuator: every call that changes Argo CD and every Slack post goes through
//! [`Actuator::perform`], which runs gate → budget → claim (when keyed) → call → verify → outcome.
//!
//! The mutating methods of [`ArgoApi`] (refresh, sync, terminate) and the posting methods of
//! [`Escalator`] take a [`Permit`], and only this module issues one ([`crate::permit`]): no other
//! code in the product compiles a call to them.
//!
//! Exactly-once for the ladder comes from two records that survive crashes: the store's claim
//! (written before any call, keyed by the idempotency key) and, for syncs, the key Argo CD itself
//! keeps in `operation.info`. A claim whose holder may have made its call is never released: the
//! run that takes it over resumes it from Argo CD's state.

use std::time::Duration;

use chrono::{DateTime, SubsecRound, Utc};

use crate::actions::{ActionKind, Effect};
use crate::alerts::WhenUnsure;
use crate::app::{AppId, Application};
use crate::decision::{Decision, Evidence};
use crate::event::AppRef;
use crate::gate::{Answer, Caller, Gate, GateRequest, Verdict};
use crate::human_action::{HumanActionOutcome, HumanActionRequest, IncidentState};
use crate::incident::{Attempt, History, Outcome};
use crate::keys::IdempotencyKey;
use crate::ladder::Rung;
use crate::ladder::{BudgetKind, HumanAction, RefreshKind};
use crate::permit::Permit;
use crate::ports::{ArgoApi, ArgoError, Budget, BudgetExhausted, Claim, Clock, Escalator, IncidentStore, MarkerStore, Seen};
use crate::step::{StepError, StepReport, StepResult, sync_request};
use crate::switch::Switch;
use crate::timeline::{EventKind, TimelineEvent};
use crate::trust::TrustLevel;

/// How long a person's performed action is remembered, so a redelivery reports it instead of
/// performing it again: longer than a button lives.
pub const PERFORMED_MEMORY: Duration = Duration::from_secs(15 * 24 * 3600);

/// The actuator's collaborators, borrowed from whoever holds them (the worker, the sweeper,
/// `medic sweep`, `medic serve`).
pub struct Actuator<'a, A, S, D, E, B, C, W> {
    /// Argo CD: the calls that change it, and the reads that verify them.
    pub argo: &'a A,
    /// The incidents' histories: an action is claimed there before it is made, and completed
    /// after.
    pub store: &'a S,
    /// Once-only markers: alerts told once, persons' actions performed once.
    pub dedupe: &'a D,
    /// Where people are told: incidents, outages, buttons' outcomes.
    pub escalator: &'a E,
    /// The instance's budgets for the actions that load Argo CD.
    pub budget: &'a B,
    /// The time every claim, marker and record is stamped with.
    pub clock: &'a C,
    /// Dry run, kill switch, instant switch and trust level: the one gate.
    pub gate: Gate<'a, W>,
    /// How long a claim may stay in progress before another run may take it over.
    pub claim_timeout: Duration,
}

/// One action to perform.
pub enum Request<'r> {
    /// The ladder's rung for `decision` (the app as read, and the incident's history as read
    /// before deciding): keyed and claimed.
    Rung {
        /// The app as the event named it.
        app_ref: &'r AppRef,
        /// The app as read before deciding.
        app: &'r Application,
        /// The policy's decision, with its rung, incident and key.
        decision: &'r Decision,
        /// The incident's history as read before deciding.
        history: &'r History,
        /// The step's report so far, completed with what the rung did.
        report: Box<StepReport>,
    },
    /// A person's Slack button, pressed at `clicked_at` by `by`.
    Button {
        /// What the button stands for.
        request: &'r HumanActionRequest,
        /// When it was pressed: a snooze runs from then.
        clicked_at: DateTime<Utc>,
        /// How long a snooze holds the incident's escalations.
        snooze: Duration,
        /// Who pressed it (a Slack user id).
        by: &'r str,
    },
    /// A refresh asked for through the signed refresh endpoint.
    SignedRefresh {
        /// The app to refresh.
        app: &'r AppRef,
        /// Normal, or hard (the manifests regenerated).
        kind: RefreshKind,
    },
    /// A fleet outage's canary: refreshed, and hard-refreshed when Argo CD answers with a cached
    /// generation failure ([`crate::fleet::needs_hard_probe`]); held where `trust` is not `act`
    /// ([`crate::freeze::canary_level`]).
    Canary {
        /// The canary.
        app: &'r AppRef,
        /// The trust level of the canary's mode and project.
        trust: TrustLevel,
    },
    /// A button's outcome told in its thread.
    Reply {
        /// The button pressed.
        request: &'r HumanActionRequest,
        /// Who pressed it (a Slack user id).
        by: &'r str,
        /// How it turned out.
        outcome: &'r HumanActionOutcome,
    },
    /// The app is out of trouble: its open escalations are marked resolved.
    Resolve {
        /// The app.
        app: &'r AppId,
        /// The decision that found it out of trouble (its reason is told).
        decision: &'r Decision,
    },
    /// A fleet outage's parent, as it stands this sweep.
    Outage {
        /// The outage as this sweep sees it.
        view: &'r crate::fleet::OutageView,
    },
    /// Fleet outages told before and not in `current`, told over.
    OutagesEnded {
        /// The parent keys of the causes this sweep sees.
        current: &'r [String],
    },
    /// The weekly shadow report, made at `now`, posted to the deployment's channel.
    Report {
        /// The report over the week before `now`.
        report: &'r crate::report::Report,
        /// When it was made: the week it is told once for.
        now: DateTime<Utc>,
    },
    /// An alert of `kind` ([`ActionKind::ServiceAlert`], [`ActionKind::OutageOverdue`],
    /// [`ActionKind::OutageParent`]); with a marker, told at most once while the marker lives.
    Alert {
        /// Which alert it is: its row in the actions table (gate, budget).
        kind: ActionKind,
        /// What people read.
        text: &'r str,
        /// At most once while this marker lives; `None`: every time.
        once: Option<Once<'r>>,
    },
}

/// "At most once while this marker lives" for an alert.
#[derive(Debug, Clone, Copy)]
pub struct Once<'r> {
    /// The marker written when the alert is told.
    pub key: &'r crate::keys::Marker,
    /// How long the marker lives: the alert is told again after.
    pub ttl: Duration,
    /// What to do when the marker cannot be written: tell anyway, or stay silent.
    pub unsure: WhenUnsure,
}

/// The escalation that proposes `rung`'s action to a person: the action's button first and
/// recommended (a sync keeps its plan, so the button syncs what the ladder would have), the reason
/// saying it was proposed and why. `None` for a rung no person can press (none today).
fn proposal_of(decision: &Decision, rung: Rung) -> Option<Decision> {
    let button = match rung {
        Rung::Refresh => HumanAction::Refresh,
        Rung::HardRefresh => HumanAction::HardRefresh,
        Rung::Sync => HumanAction::Sync,
        Rung::Escalate => return None,
    };
    let incident = decision.incident.as_ref()?;
    let mut proposal = decision.clone();
    proposal.action = crate::ladder::Action::Escalate;
    proposal.idempotency_key = Some(incident.key_for(Rung::Escalate));
    proposal.human_actions.retain(|a| *a != button);
    proposal.human_actions.insert(0, button);
    for more in [HumanAction::Snooze, HumanAction::Acknowledge, HumanAction::Freeze] {
        if !proposal.human_actions.contains(&more) {
            proposal.human_actions.push(more);
        }
    }
    proposal.recommended = Some(button);
    let label = ActionKind::of_button(button).row().button.map_or(rung.as_str(), |b| b.label);
    let why = decision.trust.as_ref().map_or_else(|| "the trust level".to_owned(), |t| t.why.clone());
    proposal.reason = format!("Proposed: {label}. {} (trust level propose, set by {why}; press {label} to do it)", decision.reason);
    proposal.evidence.push(Evidence::new("trust", format!("propose ({why})")));
    Some(proposal)
}

/// How much older than the commit deployed last a target commit may be before a sync to it is
/// withheld: commits merged by rebase keep their author dates, so a newer merge can carry an older
/// date by days; a revision weeks older (argoproj/argo-cd#29716: 10 weeks) is a move back.
pub const OLDER_THAN_DEPLOYED_MARGIN: chrono::TimeDelta = chrono::TimeDelta::days(7);

/// A rung performed (or held by the gate).
#[derive(Debug)]
pub struct RungDone {
    /// The step's report, with what the rung did.
    pub report: StepReport,
    /// The gate's answer: acted, reported, silent or proposed, and why.
    pub answer: Answer,
    /// How the claimed action turned out, when one was claimed and completed.
    pub outcome: Option<Outcome>,
    /// The app as a verified refresh left it.
    pub refreshed: Option<Application>,
}

/// What [`Actuator::perform`] did.
#[derive(Debug)]
pub enum Performed {
    /// The ladder's rung, performed or held.
    Rung(Box<RungDone>),
    /// A person's button: how it turned out (refusals by Argo CD included, `performed: false`).
    Button(HumanActionOutcome),
    /// A refresh made: the app as Argo CD answered it.
    Refreshed(Box<Application>),
    /// Posted (for `OutagesEnded`: how many were told over; for a once-alert, 0 when it was told
    /// before).
    Posted(usize),
    /// The gate held it.
    Held(Answer),
    /// Out of budget for now.
    Deferred(BudgetExhausted),
}

impl<A, S, D, E, B, C, W> Actuator<'_, A, S, D, E, B, C, W>
where
    A: ArgoApi,
    S: IncidentStore,
    D: MarkerStore,
    E: Escalator,
    B: Budget,
    C: Clock,
    W: Switch,
{
    /// Performs `request`: gate → budget → claim when keyed → call → verify → outcome.
    pub async fn perform(&self, request: Request<'_>) -> Result<Performed, StepError> {
        let permit = Permit::issue();
        match request {
            Request::Rung { app_ref, app, decision, history, report } => {
                // Boxed, as every arm that calls Argo CD: the futures of one request kind must not add
                // their sizes to every caller's (debug builds overflowed a test thread's stack).
                Ok(Performed::Rung(Box::new(Box::pin(self.rung(&permit, app_ref, app, decision, history, *report)).await?)))
            }
            Request::Button { request, clicked_at, snooze, by } => Box::pin(self.button(&permit, request, clicked_at, snooze, by)).await,
            Request::SignedRefresh { app, kind } => {
                let kind_of = if kind == RefreshKind::Hard { ActionKind::HardRefresh } else { ActionKind::Refresh };
                let answer = self.check(kind_of, Caller::SignedRefresh, Some(&app.id()), app.project.as_deref()).await;
                if !answer.acts() {
                    return Ok(Performed::Held(answer));
                }
                if let Err(e) = self.budget.acquire(budget_of(kind)).await {
                    return Ok(Performed::Deferred(e));
                }
                Ok(Performed::Refreshed(Box::new(Box::pin(self.argo.refresh(&permit, app, kind)).await?)))
            }
            Request::Canary { app, trust } => Box::pin(self.canary(&permit, app, trust)).await,
            Request::Reply { request, by, outcome } => {
                let answer = self.check(ActionKind::Reply, Caller::Person, Some(&request.app.id()), request.app.project.as_deref()).await;
                if !answer.acts() {
                    return Ok(Performed::Held(answer));
                }
                Box::pin(self.escalator.record_human_action(&permit, request, by, outcome)).await?;
                Ok(Performed::Posted(1))
            }
            Request::Resolve { app, decision } => {
                let answer = self.check(ActionKind::Resolve, Caller::Ladder, Some(app), None).await;
                if !answer.acts() {
                    return Ok(Performed::Held(answer));
                }
                Box::pin(self.escalator.resolve(&permit, app, decision)).await?;
                Ok(Performed::Posted(1))
            }
            Request::Outage { view } => {
                let answer = self.check(ActionKind::OutageParent, Caller::Fleet, None, None).await;
                if !answer.acts() {
                    return Ok(Performed::Held(answer));
                }
                Box::pin(self.escalator.outage(&permit, view)).await?;
                Ok(Performed::Posted(1))
            }
            Request::OutagesEnded { current } => {
                let answer = self.check(ActionKind::OutageOver, Caller::Fleet, None, None).await;
                if !answer.acts() {
                    return Ok(Performed::Held(answer));
                }
                Ok(Performed::Posted(Box::pin(self.escalator.outages_ended(&permit, current)).await?))
            }
            Request::Report { report, now } => {
                let answer = self.check(ActionKind::WeeklyReport, Caller::Report, None, None).await;
                if !answer.acts() {
                    return Ok(Performed::Held(answer));
                }
                Box::pin(self.escalator.report(&permit, report, now)).await?;
                Ok(Performed::Posted(1))
            }
            Request::Alert { kind, text, once } => {
                let caller = if kind.effect() == Effect::ServiceAlert { Caller::Service } else { Caller::Fleet };
                let answer = self.check(kind, caller, None, None).await;
                if !answer.acts() {
                    return Ok(Performed::Held(answer));
                }
                let Some(once) = once else {
                    Box::pin(self.escalator.alert(&permit, text)).await?;
                    return Ok(Performed::Posted(1));
                };
                let tell = match self.dedupe.first_sighting(once.key, once.ttl).await {
                    Ok(Seen::New) => true,
                    Ok(Seen::Duplicate) => false,
                    Err(_) => once.unsure == WhenUnsure::Tell,
                };
                if !tell {
                    return Ok(Performed::Posted(0));
                }
                match Box::pin(self.escalator.alert(&permit, text)).await {
                    Ok(()) => Ok(Performed::Posted(1)),
                    Err(e) => {
                        // Not told: the marker goes, so the next attempt tells it (a failed post
                        // once silenced an overdue outage for a day).
                        self.dedupe.forget(once.key).await.ok();
                        Err(e.into())
                    }
                }
            }
        }
    }

    async fn check(&self, kind: ActionKind, caller: Caller, app: Option<&AppId>, project: Option<&str>) -> Answer {
        self.check_trusted(kind, caller, app, project, TrustLevel::Act).await
    }

    async fn check_trusted(
        &self,
        kind: ActionKind,
        caller: Caller,
        app: Option<&AppId>,
        project: Option<&str>,
        trust: TrustLevel,
    ) -> Answer {
        let approvable = self.escalator.takes_approvals();
        self.gate.check(&GateRequest { kind, caller, app, project, trust, approvable }).await
    }

    /// A canary probe: one refresh within the refresh budget; a hard one, within its budget, when
    /// the answer shows a cached generation failure. Held whole when the gate holds refreshes.
    async fn canary(&self, permit: &Permit, app: &AppRef, trust: TrustLevel) -> Result<Performed, StepError> {
        let id = app.id();
        // A proposal of a probe would ask a person to press Refresh on one app of an outage they
        // are told of as a whole: a probe is made at `act` only.
        let answer = self.check_trusted(ActionKind::Refresh, Caller::Canary, Some(&id), app.project.as_deref(), trust).await;
        if !answer.acts() {
            return Ok(Performed::Held(answer));
        }
        if let Err(e) = self.budget.acquire(BudgetKind::Refresh).await {
            return Ok(Performed::Deferred(e));
        }
        let read = self.argo.refresh(permit, app, RefreshKind::Normal).await?;
        if !crate::fleet::needs_hard_probe(&read) {
            return Ok(Performed::Refreshed(Box::new(read)));
        }
        let hard = self.check_trusted(ActionKind::HardRefresh, Caller::Canary, Some(&id), app.project.as_deref(), trust).await;
        if !hard.acts() || self.budget.acquire(BudgetKind::HardRefresh).await.is_err() {
            return Ok(Performed::Refreshed(Box::new(read)));
        }
        Ok(Performed::Refreshed(Box::new(self.argo.refresh(permit, app, RefreshKind::Hard).await?)))
    }

    /// The ladder's rung: gate, budget, claim, call, verify, record.
    async fn rung(
        &self,
        permit: &Permit,
        app_ref: &AppRef,
        app: &Application,
        decision: &Decision,
        history: &History,
        mut out: StepReport,
    ) -> Result<RungDone, StepError> {
        let name = &out.app.clone();
        let passes = Answer { verdict: Verdict::Act, mode: crate::switch::Mode::Act, why: "nothing to do" };
        let (Some(key), Some(incident)) = (decision.idempotency_key.clone(), decision.incident.clone()) else {
            out.result = if decision.action == crate::ladder::Action::Wait { StepResult::Waiting } else { StepResult::NoAction };
            return Ok(RungDone { report: out, answer: passes, outcome: None, refreshed: None });
        };
        // Only rungs carry a key, so a decision with one names a rung.
        let Some(rung) = Rung::of(decision.action) else {
            out.result = StepResult::NoAction;
            return Ok(RungDone { report: out, answer: passes, outcome: None, refreshed: None });
        };
        let trust = decision.trust.as_ref().map_or(TrustLevel::Act, |t| t.level);
        let answer = self.check_trusted(ActionKind::of_rung(rung), Caller::Ladder, Some(name), Some(&app.spec.project), trust).await;
        // Proposed: the incident is escalated instead, the rung's action its recommended button,
        // under the escalation's key (a later escalation of the incident is this one).
        let proposal = (answer.verdict == Verdict::Propose).then(|| proposal_of(decision, rung)).flatten();
        let (decision, key, rung) = match &proposal {
            Some(p) => (p, p.idempotency_key.clone().unwrap_or(key), Rung::Escalate),
            None => (decision, key, rung),
        };
        if !answer.acts() && proposal.is_none() {
            out.result = StepResult::DryRun;
            // A claim under this key that a dead run left unfinished is not ended by a hold:
            // the item must come back when the gate lets it act (an unperformed action is lost).
            out.claim_held_back = history.unfinished(&key).is_some();
            if !(self.gate.dry_run && answer.mode == crate::switch::Mode::DryRun && answer.why.contains("runs in dry-run")) {
                // What set a level that held it (a rule, an annotation, a freeze) says why.
                let set_by =
                    decision.trust.as_ref().filter(|t| t.level != TrustLevel::Act).map(|t| format!(": {}", t.why)).unwrap_or_default();
                out.detail = format!("{} (not acted on: {}{set_by})", out.detail, answer.why);
            }
            return Ok(RungDone { report: out, answer, outcome: None, refreshed: None });
        }
        let done = |report, outcome| RungDone { report, answer, outcome, refreshed: None };
        if let Some(kind) = rung.budget()
            && let Err(e) = self.budget.acquire(kind).await
        {
            out.result = StepResult::Deferred;
            out.detail = e.to_string();
            return Ok(done(out, None));
        }
        // A claim taken over keeps what its holder saw (`Reached`), so the next run still knows.
        let carried = history.unfinished(&key).map_or(Outcome::Requested, |a| a.outcome);
        let attempt = Attempt { rung, at: decision.decided_at, idempotency_key: Some(key.clone()), outcome: carried };
        let mut resend = false;
        match self.store.claim(name, &incident, &attempt, self.claim_timeout).await? {
            Claim::Granted => {
                let what = format!("{} claimed ({})", rung.as_str(), decision.rule);
                log_event(
                    self.store,
                    TimelineEvent::new(&incident, EventKind::Claimed, key.as_str(), self.clock.now(), what).keyed(key.as_str()),
                )
                .await;
            }
            // A sync Argo CD accepted and this read shows no trace of (the step reopened it in
            // the history it decided on): the record is ours, and it is sent once more under its
            // key. (A claim a dead run left is `Requested`, and granted above.)
            Claim::AlreadyDone(Outcome::Sent) if rung == Rung::Sync && history.unfinished(&key).is_some() => resend = true,
            Claim::AlreadyDone(outcome) => {
                out.result = StepResult::AlreadyDone;
                out.detail = format!("{} already taken for this incident ({outcome:?})", rung.as_str());
                return Ok(done(out, None));
            }
            Claim::Held { until } => {
                out.result = StepResult::Deferred;
                out.detail = format!("another run holds the {} until {until}", rung.as_str());
                return Ok(done(out, None));
            }
        }
        // An unfinished claim under this key, read before the claim was granted: a run that died
        // between claiming and recording. Its call may or may not have gone out; Argo CD's state
        // says which, and the action is resumed, never skipped and never blindly sent twice.
        let resumed = history.unfinished(&key).map(|a| a.at);
        // Whether a run saw this refresh reach Argo CD: only then is a compare since the claim
        // its answer. Otherwise nothing tells it from the periodic compare, a person's refresh or
        // the compare that recorded an outage as it began, and crediting one of those would lose
        // the action: the refresh is requested again (one more compare at worst).
        let reached = carried == Outcome::Reached;
        let mut refreshed = None;
        let acted = match (rung, resumed) {
            // reconciledAt has whole seconds: a compare in the claim's own second may precede it.
            (Rung::Refresh | Rung::HardRefresh, Some(claimed))
                if reached && app.status.reconciled_at.is_some_and(|r| r > claimed.trunc_subsecs(0)) =>
            {
                out.result = StepResult::Refreshed;
                out.detail = format!(
                    "resumed an unfinished {} claimed at {}: it reached Argo CD, whose controller compared the app at {} since, so it is not requested again",
                    rung.as_str(),
                    secs(claimed),
                    app.status.reconciled_at.map(secs).unwrap_or_default()
                );
                Ok(Outcome::Succeeded)
            }
            (Rung::Refresh | Rung::HardRefresh, Some(claimed)) if app.refresh_pending() => {
                // A request waits for the controller: the claim stays in progress, and a run
                // after it expires finds reconciledAt moved. When the pending refresh does this
                // rung's work, it is this claim's (or as good): the claim says it reached.
                if !reached && pending_covers(app, rung.refresh().unwrap_or(RefreshKind::Normal)) {
                    Box::pin(self.store.mark_reached(name, &key)).await?;
                }
                out.result = StepResult::Deferred;
                out.detail = format!(
                    "an unfinished {} claimed at {} is still pending in Argo CD (the refresh annotation is set); not requested again",
                    rung.as_str(),
                    secs(claimed)
                );
                return Ok(done(out, None));
            }
            (Rung::Refresh | Rung::HardRefresh, _) => {
                Box::pin(self.refresh(permit, app_ref, app, rung, &key, &mut out, &mut refreshed)).await
            }
            (Rung::Sync, _) => self.sync(permit, app_ref, app, decision, &key, resumed, resend, &mut out).await,
            (Rung::Escalate, _) => self.escalate(permit, app, decision, resumed, &mut out).await,
        };
        match acted {
            Ok(outcome) => {
                // Told before the claim is completed: a run that dies in between tells it again
                // when it is resumed, as the same events and the same reply (each once).
                Box::pin(self.log_acted(permit, &incident, rung, &key, outcome, &out.detail)).await;
                self.store.complete(name, &key, outcome).await?;
                Ok(RungDone { report: out, answer, outcome: Some(outcome), refreshed: refreshed.filter(|_| outcome == Outcome::Succeeded) })
            }
            Err(e @ StepError::Argo(ArgoError::Transient(_))) if rung != Rung::Escalate => {
                // The call may have gone out (a 5xx or a timeout after Argo CD took it): the claim
                // is never released, since a release would let the next run send it blindly. It
                // stays unfinished, and the run that takes it over resumes it from Argo CD's state
                // (the key in operation.info, an operation started since, reconciledAt).
                Err(e)
            }
            Err(e) if is_transient(&e) => {
                // Nothing went out (rate limited, the breaker open, the token rejected) or only a
                // post failed, which the escalator never repeats: safe to retry from scratch.
                self.store.release(name, &key).await?;
                Err(e)
            }
            Err(e) => {
                Box::pin(self.log_acted(permit, &incident, rung, &key, Outcome::Failed, &e.to_string())).await;
                self.store.complete(name, &key, Outcome::Failed).await?;
                out.result = StepResult::Failed;
                out.detail = e.to_string();
                Ok(RungDone { report: out, answer, outcome: Some(Outcome::Failed), refreshed: None })
            }
        }
    }

    /// The timeline's record of a rung taken: `acted` with its outcome, and `verified` when
    /// Argo CD showed its effect; at the escalation, the new thread is told what came before it
    /// when anything was done or waited for ([`crate::timeline::acted_before`]).
    async fn log_acted(
        &self,
        permit: &Permit,
        incident: &crate::keys::IncidentKey,
        rung: Rung,
        key: &IdempotencyKey,
        outcome: Outcome,
        detail: &str,
    ) {
        let now = self.clock.now();
        let what = format!("{} {}: {detail}", rung.as_str(), outcome.as_str());
        let mut events = vec![TimelineEvent::new(incident, EventKind::Acted, key.as_str(), now, what).keyed(key.as_str())];
        if outcome == Outcome::Succeeded && rung != Rung::Escalate {
            let what = format!("{} verified in Argo CD", rung.as_str());
            events.push(TimelineEvent::new(incident, EventKind::Verified, key.as_str(), now, what).keyed(key.as_str()));
        }
        for event in events {
            log_event(self.store, event).await;
        }
        // The thread is new: it is told what came before it. Later events need no reply of
        // their own: a person's click and the resolution have theirs, and the looks in between
        // change nothing (`medic incidents show` has every one).
        // A timeline that could not be read: the thread goes without it.
        if rung == Rung::Escalate
            && outcome == Outcome::Succeeded
            && let Ok(before) = Box::pin(self.store.timeline(&incident.app, &incident.id())).await
            && crate::timeline::acted_before(&before, key.as_str())
        {
            Box::pin(self.tell_in_thread(permit, incident, key, &before)).await;
        }
    }

    /// Tells `events` in the incident's thread, through the gate (an answer in a thread people
    /// have: not when the switch is off), once per incident and `key`. Best effort: the timeline
    /// keeps the events, and the action they tell of is done whether or not the reply is posted.
    async fn tell_in_thread(&self, permit: &Permit, incident: &crate::keys::IncidentKey, key: &IdempotencyKey, events: &[TimelineEvent]) {
        let answer = self.check(ActionKind::TimelineReply, Caller::Ladder, Some(&incident.app), None).await;
        if !answer.acts() || events.is_empty() {
            return;
        }
        let incident_id = incident.id();
        let reply_key = crate::keys::timeline_reply_key(&incident_id, key.as_str());
        let reply = crate::timeline::ThreadReply { app: &incident.app, incident_id: &incident_id, key: &reply_key, events };
        let _ = Box::pin(self.escalator.tell_timeline(permit, &reply)).await;
    }

    #[allow(clippy::too_many_arguments)]
    async fn refresh(
        &self,
        permit: &Permit,
        app_ref: &AppRef,
        app: &Application,
        rung: Rung,
        key: &IdempotencyKey,
        out: &mut StepReport,
        refreshed: &mut Option<Application>,
    ) -> Result<Outcome, StepError> {
        let kind = rung.refresh().unwrap_or(RefreshKind::Normal);
        let mut verified = false;
        let mut healthy = false;
        let mut answer_lost = None;
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
            let after = match Box::pin(self.argo.refresh(permit, app_ref, kind)).await {
                Ok(after) => after,
                Err(ArgoError::Transient(lost)) => {
                    // The answer was lost, not necessarily the refresh: the API server sets the
                    // refresh annotation before it waits for the controller's compare
                    // (server/application/application.go:827 and :875-893 at v3.5.1, :750 at
                    // v2.14.21), and a gateway or the client gives up first when the compare
                    // (a hard refresh's manifest generation) is slow. Re-read before anything.
                    out.argo_calls += 1;
                    match Box::pin(self.argo.get_app(app_ref)).await {
                        Ok(now) if now.refresh_pending() && pending_covers(&now, kind) => {
                            // Argo CD has it: the claim stays in progress and says so, and the
                            // run that resumes it credits the controller's compare.
                            Box::pin(self.store.mark_reached(&out.app, key)).await?;
                            return Err(ArgoError::Transient(format!(
                                "{lost}; Argo CD has the {} (the refresh annotation is set) and its controller has not compared the app yet",
                                kind.as_str()
                            ))
                            .into());
                        }
                        // Compared since (verified below), or no trace of it (lost on the way,
                        // or dropped: asked once more below, as a dropped refresh is).
                        Ok(now) => {
                            answer_lost = Some(lost);
                            now
                        }
                        Err(_) => return Err(ArgoError::Transient(lost).into()),
                    }
                }
                Err(e) => return Err(e.into()),
            };
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
            out.down_after = Some(crate::fleet::is_down(&after));
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
        if let Some(lost) = answer_lost {
            out.detail = format!("{} (an answer was lost: {lost}; the app re-read)", out.detail);
        }
        Ok(if verified { Outcome::Succeeded } else { Outcome::NoEffect })
    }

    #[allow(clippy::too_many_arguments)]
    async fn sync(
        &self,
        permit: &Permit,
        app_ref: &AppRef,
        app: &Application,
        decision: &Decision,
        key: &IdempotencyKey,
        resumed: Option<DateTime<Utc>>,
        resend: bool,
        out: &mut StepReport,
    ) -> Result<Outcome, StepError> {
        if app.recorded_idempotency_keys().any(|k| k == key.as_str()) {
            out.result = StepResult::AlreadyDone;
            out.detail = "Argo CD already records this sync's idempotency key in operation.info".into();
            return Ok(if app.operation_started_with(key.as_str()) { Outcome::Succeeded } else { Outcome::Sent });
        }
        // A resumed claim whose key is gone: when an operation started after the claim, Argo CD
        // may have run ours and replaced it (`status.history` keeps no `info`). Sending again
        // could sync twice; the outcome is unknown and a person is told, with that evidence.
        if let Some((claimed, started)) = resumed.and_then(|c| app.operation_started_after(c).map(|s| (c, s))) {
            out.result = StepResult::Failed;
            out.detail = format!(
                "an unfinished sync claimed at {} is not on record in Argo CD, but an operation started at {} since: its outcome is unknown, so it is not sent again",
                secs(claimed),
                secs(started)
            );
            return Ok(Outcome::Unknown);
        }
        let plan = decision.sync.as_ref().expect("a sync decision carries its plan");
        // The target revision (no revision sent) is what Argo CD's comparison holds, which can be
        // far older than what is deployed (argoproj/argo-cd#29716): the commits' dates decide,
        // on the sync's own budget token. A resend was judged so the first time.
        if plan.revision.is_empty()
            && !resend
            && let Some(back) = self.older_than_deployed(app_ref, app, out).await
        {
            out.result = StepResult::Failed;
            out.detail = back;
            return Ok(Outcome::Withheld);
        }
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
        match self.argo.sync(permit, app_ref, &request).await {
            // Accepted is not started: Argo CD can accept a sync and never run it
            // (argoproj/argo-cd#27133). The app's next read, the recheck the step schedules,
            // tells which; no call is spent on it here.
            Ok(answer) if answer.operation_started_with(key.as_str()) => {
                out.result = StepResult::Synced;
                out.detail = format!("sync started ({})", plan.intent);
                Ok(Outcome::Succeeded)
            }
            Ok(_) => {
                out.result = StepResult::Synced;
                out.detail = if resend {
                    format!("sync sent again under the same key ({}): Argo CD accepted the first and never started it", plan.intent)
                } else {
                    format!("sync accepted ({}); the next look checks that it started", plan.intent)
                };
                Ok(if resend { Outcome::Resent } else { Outcome::Sent })
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
                match self.argo.get_app(app_ref).await {
                    Ok(now) if now.recorded_idempotency_keys().any(|k| k == key.as_str()) => {
                        out.result = StepResult::Synced;
                        out.detail = format!("sync started ({}); its answer was lost ({e}), Argo CD records its key", plan.intent);
                        Ok(if now.operation_started_with(key.as_str()) { Outcome::Succeeded } else { Outcome::Sent })
                    }
                    // Not on record as far as Argo CD shows: the claim stays unfinished (a
                    // transient error) and the run that resumes it looks again.
                    _ => Err(ArgoError::Transient(e.to_string()).into()),
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Why a sync to the target would move the app back, by the commits' dates: for each source
    /// whose target revision differs from the one deployed last ([`Application::revision_changes`];
    /// Git commits only, a chart version has no commit), the two revisions' metadata, two reads;
    /// the target more than [`OLDER_THAN_DEPLOYED_MARGIN`] older says so. Unreadable metadata
    /// says nothing, and the sync goes as it would have.
    async fn older_than_deployed(&self, app_ref: &AppRef, app: &Application, out: &mut StepReport) -> Option<String> {
        let commit = |r: &str| r.len() == 40 && r.bytes().all(|b| b.is_ascii_hexdigit());
        for (index, target, deployed) in app.revision_changes().into_iter().filter(|(_, t, d)| commit(t) && commit(d)) {
            out.argo_calls += 2;
            let older = self.argo.revision_metadata(app_ref, &target, index).await;
            let newer = self.argo.revision_metadata(app_ref, &deployed, index).await;
            let (Ok(Some(older)), Ok(Some(newer))) = (older, newer) else { continue };
            let (Some(then), Some(now)) = (older.date, newer.date) else { continue };
            if then + OLDER_THAN_DEPLOYED_MARGIN < now {
                let source = index.map(|i| format!(" of source {}", i + 1)).unwrap_or_default();
                return Some(format!(
                    "not sent: it would move the app back: Argo CD's target revision{source} {} is a commit of {}, {} days older than {} ({}), deployed last (argoproj/argo-cd#29716)",
                    &target[..10],
                    secs(then),
                    (now - then).num_days(),
                    &deployed[..10],
                    secs(now)
                ));
            }
        }
        None
    }

    async fn escalate(
        &self,
        permit: &Permit,
        app: &Application,
        decision: &Decision,
        resumed: Option<DateTime<Utc>>,
        out: &mut StepReport,
    ) -> Result<Outcome, StepError> {
        // Delivered at least once: a run that died after telling and before recording tells
        // again, under the same incident key, and says so (a thread or a pager can fold it).
        match resumed {
            Some(claimed) => {
                let mut repeat = decision.clone();
                repeat.evidence.push(Evidence::new(
                    "delivery",
                    format!(
                        "repeat of incident {}: an earlier run claimed this escalation at {} and may have told it",
                        decision.incident.as_ref().map(|i| i.id()).unwrap_or_default(),
                        secs(claimed)
                    ),
                ));
                self.escalator.escalate(permit, app, &repeat).await?;
            }
            None => self.escalator.escalate(permit, app, decision).await?,
        }
        out.result = StepResult::Escalated;
        Ok(Outcome::Succeeded)
    }

    /// A person's button, performed once: the button's id names a stored request (app, incident,
    /// sync plan, idempotency key). An action that changes Argo CD is remembered by its key once
    /// performed, so a redelivery (its reply failed, or the worker died before replying) reports
    /// it instead of performing it again.
    async fn button(
        &self,
        permit: &Permit,
        request: &HumanActionRequest,
        clicked_at: DateTime<Utc>,
        snooze: Duration,
        by: &str,
    ) -> Result<Performed, StepError> {
        let kind = ActionKind::of_button(request.action);
        let id = request.app.id();
        let what = format!("{} pressed", kind.row().button.map_or(kind.as_str(), |b| b.label));
        let click = TimelineEvent::of(&id, &request.incident_id, EventKind::Clicked, request.idempotency_key.as_str(), clicked_at, what);
        log_event(self.store, click.by(by).keyed(request.idempotency_key.as_str())).await;
        let answer = self.check(kind, Caller::Person, Some(&id), request.app.project.as_deref()).await;
        if !answer.acts() {
            return Ok(Performed::Held(answer));
        }
        let done = |state: IncidentState, summary: String| {
            Performed::Button(HumanActionOutcome { performed: true, state: Some(state), summary, snoozed_until: None })
        };
        let refused =
            |summary: String| Performed::Button(HumanActionOutcome { performed: false, state: None, summary, snoozed_until: None });
        let app = &request.app;
        let keyed = kind.effect() == Effect::ChangesArgo;
        let marker = crate::keys::performed_marker(&request.idempotency_key);
        if keyed && self.dedupe.marked(std::slice::from_ref(&marker)).await?.contains(&marker) {
            return Ok(done(
                IncidentState::Remediating,
                format!("the {} was already performed for this click; not repeated", kind.row().button.map_or(kind.as_str(), |b| b.label)),
            ));
        }
        let performed = match request.action {
            HumanAction::Freeze => {
                // Under the click's time, so a redelivered click writes the same freeze.
                let length = chrono::TimeDelta::hours(crate::freeze::BUTTON_FREEZE_HOURS);
                let reason = format!("frozen from Slack on incident {}", request.incident_id);
                let freeze = crate::freeze::Freeze::new(crate::freeze::FreezeScope::App(app.id()), clicked_at, length, &reason, by);
                return Ok(match self.gate.switch.freeze(&freeze).await {
                    Ok(()) => done(
                        IncidentState::Investigating,
                        format!(
                            "{}: Argo Medic takes no automatic action on {} until {}, then resumes by itself (Argo CD's own auto-sync is not stopped)",
                            kind.row().done,
                            app.id(),
                            secs(freeze.until)
                        ),
                    ),
                    Err(e) => refused(format!("not frozen: {e}")),
                });
            }
            HumanAction::Acknowledge => {
                return Ok(done(IncidentState::Investigating, format!("{}; the incident is being looked at", kind.row().done)));
            }
            HumanAction::Snooze => {
                let until = self.clock.now() + chrono::Duration::from_std(snooze).unwrap_or_default();
                return Ok(Performed::Button(HumanActionOutcome {
                    performed: true,
                    state: None,
                    summary: format!(
                        "{}: new incidents of this app are not posted until {}",
                        kind.row().done,
                        crate::human_action::rfc3339(until)
                    ),
                    snoozed_until: Some(until),
                }));
            }
            HumanAction::Refresh | HumanAction::HardRefresh => {
                let (budget, refresh) = match request.action {
                    HumanAction::Refresh => (BudgetKind::Refresh, RefreshKind::Normal),
                    _ => (BudgetKind::HardRefresh, RefreshKind::Hard),
                };
                if let Err(e) = self.budget.acquire(budget).await {
                    return Ok(Performed::Deferred(e));
                }
                match self.argo.refresh(permit, app, refresh).await {
                    Ok(after) => done(
                        IncidentState::Remediating,
                        format!(
                            "{}; the app is now {} / {}",
                            kind.row().done,
                            or_dash(after.sync_status()),
                            or_dash(after.health_status())
                        ),
                    ),
                    Err(ArgoError::NotFound(_)) => return Ok(refused("not performed: the app no longer exists".into())),
                    Err(ArgoError::PermissionDenied(m)) => return Ok(refused(format!("Argo CD refused it: {m}"))),
                    Err(e) => return Err(e.into()),
                }
            }
            HumanAction::TerminateOperation => {
                // Only the operation the person saw: one that started after the click (auto-sync
                // began another while the click waited or was redelivered) is left running.
                let current = match self.argo.get_app(app).await {
                    Ok(a) => a,
                    Err(ArgoError::NotFound(_)) => return Ok(refused("nothing to terminate: the app no longer exists".into())),
                    Err(e) => return Err(e.into()),
                };
                let running = matches!(current.operation_phase(), crate::app::phase::RUNNING | crate::app::phase::TERMINATING)
                    || current.operation.is_some();
                if !running {
                    return Ok(refused("nothing to terminate: no operation is running now".into()));
                }
                if let Some(started) = current.status.operation_state.as_ref().and_then(|s| s.started_at).filter(|s| *s > clicked_at) {
                    return Ok(refused(format!(
                        "not terminated: the operation running now started at {}, after the click; press again if it should stop too",
                        secs(started)
                    )));
                }
                match self.argo.terminate_operation(permit, app).await {
                    Ok(()) => done(IncidentState::Remediating, kind.row().done.into()),
                    Err(ArgoError::NotFound(m)) => return Ok(refused(format!("nothing to terminate: {m}"))),
                    Err(ArgoError::PermissionDenied(m)) => return Ok(refused(format!("Argo CD refused it: {m}"))),
                    Err(e) => return Err(e.into()),
                }
            }
            HumanAction::Sync => {
                let current = match self.argo.get_app(app).await {
                    Ok(a) => a,
                    Err(ArgoError::NotFound(_)) => return Ok(refused("not performed: the app no longer exists".into())),
                    Err(e) => return Err(e.into()),
                };
                if current.recorded_idempotency_keys().any(|k| k == request.idempotency_key.as_str()) {
                    return Ok(done(IncidentState::Remediating, "the sync was already started (Argo CD records its key)".into()));
                }
                let Some(plan) = request.sync.clone() else {
                    return Ok(refused("not performed: this button carries no sync plan".into()));
                };
                if let Err(e) = self.budget.acquire(BudgetKind::Sync).await {
                    return Ok(Performed::Deferred(e));
                }
                let sync = sync_request(
                    &current,
                    &plan,
                    &request.idempotency_key,
                    &request.incident_id,
                    request.incident_began,
                    request.failure_mode,
                );
                let revision = if plan.revision.is_empty() { "the target revision".to_owned() } else { plan.revision.clone() };
                match self.argo.sync(permit, app, &sync).await {
                    Ok(_) => done(IncidentState::Remediating, format!("{} to {revision}, prune {}", kind.row().done, plan.prune)),
                    Err(ArgoError::OperationInProgress) => {
                        return Ok(refused("not started: another operation is already in progress".into()));
                    }
                    Err(ArgoError::SyncWindowBlocked(m)) => return Ok(refused(format!("not started: blocked by a sync window ({m})"))),
                    Err(ArgoError::PermissionDenied(m)) => return Ok(refused(format!("Argo CD refused it: {m}"))),
                    Err(ArgoError::Invalid(m)) => return Ok(refused(format!("Argo CD rejected the sync: {m}"))),
                    Err(e) => return Err(e.into()),
                }
            }
        };
        // Remembered before the reply is posted: a reply that fails (or a worker killed before
        // it) brings the click back, and the redelivery must report, not act again.
        // A marker that could not be written leaves the state checks above (the sync's key, the
        // operation's start) as the guard against acting twice.
        self.dedupe.mark(&marker, PERFORMED_MEMORY).await.ok();
        Ok(self.told_of_freeze(performed, request).await)
    }

    /// A person's button works in a frozen scope (it is the person's decision); its reply says the
    /// scope is frozen, so nobody takes the silence that follows for Argo Medic at work.
    async fn told_of_freeze(&self, performed: Performed, request: &HumanActionRequest) -> Performed {
        let Performed::Button(mut outcome) = performed else { return performed };
        let (id, project, now) = (request.app.id(), request.app.project.as_deref(), self.clock.now());
        let freezes = self.gate.switch.freezes().await;
        if let Some(freeze) = freezes.iter().filter(|f| f.active(now) && f.scope.covers_ref(&id, project)).max_by_key(|f| f.until) {
            outcome.summary =
                format!("{}. Note: {}; Argo Medic takes no automatic action there until then", outcome.summary, freeze.describe());
        }
        Performed::Button(outcome)
    }
}

/// Appends `event` to its incident's timeline. Best effort: the timeline is for people and the
/// policy never reads it, so an event that could not be written fails nothing. The store's
/// adapter writes a new event's audit log line and logs one it could not write
/// (`medic_adapters::audit::audit_event`), so the audit log and the timeline say the same.
pub async fn log_event<S: IncidentStore>(store: &S, event: TimelineEvent) {
    let _ = Box::pin(store.append_event(&event)).await;
}

/// Whether the refresh Argo CD holds in the app's refresh annotation does the work of a refresh
/// of `kind`: a hard one does a normal one's too (the values are `RefreshTypeNormal` and
/// `RefreshTypeHard`, pkg/apis/application/v1alpha1/types.go:544-545 at v3.5.1).
fn pending_covers(app: &Application, kind: RefreshKind) -> bool {
    match app.metadata.annotations.get(crate::app::REFRESH_ANNOTATION).map(String::as_str) {
        Some("hard") => true,
        Some(_) => kind == RefreshKind::Normal,
        None => false,
    }
}

/// The budget a refresh of `kind` takes a token from.
fn budget_of(kind: RefreshKind) -> BudgetKind {
    match kind {
        RefreshKind::Normal => BudgetKind::Refresh,
        RefreshKind::Hard => BudgetKind::HardRefresh,
    }
}

fn is_transient(e: &StepError) -> bool {
    match e {
        StepError::Argo(a) => a.is_retryable() || matches!(a, ArgoError::Unauthenticated(_)),
        StepError::Store(_) | StepError::Escalation(_) => true,
        StepError::Policy(_) => false,
    }
}

fn secs(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() { "–" } else { s }
}

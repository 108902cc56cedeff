//! One work item, as the worker function handles each message of its batches: the delivery's
//! lease on the item's dedupe key, the app's lock, the route (a look at the app, a person's
//! button, a signed refresh), a fleet outage's hold and its recovery wave's tally, and requeues.
//!
//! Exactly-once per incident and rung comes from the incident store's claims and, for syncs, the
//! key Argo CD keeps in `operation.info`; so whatever the queue redelivers, nothing is done
//! twice. A `wait` (and a budget deferral, and a busy app) is re-enqueued as a new item with a
//! delay of at most 15 minutes, chained, instead of being left on the queue: that would spend
//! receive counts and send a healthy wait to the dead-letter queue.

use std::time::{Duration, Instant};

use medic_core::AppId;
use medic_core::actions::ActionKind;
use medic_core::actuator::{Actuator, Once, Performed, Request, log_event};
use medic_core::alerts::{self, WhenUnsure};
use medic_core::event::{Request as ItemRequest, WorkItem, WorkKind};
use medic_core::gate::{Gate, Verdict};
use medic_core::human_action::HumanActionOutcome;
use medic_core::ladder::HumanAction;
use medic_core::ports::{
    AppLock, ArgoApi, ArgoError, Begun, Clock, DeliveryLeases, Escalator, IncidentStore, MarkerStore, Telemetry, WorkQueue,
};
use medic_core::step::{StepError, StepResult};
use medic_core::switch::Switch;
use medic_core::timeline::{Arrival, EventKind, TimelineEvent};
use medic_core::{DecisionPolicy, FailureMode, Trigger};
use tracing::Instrument;

use crate::remediate::Remediator;
use crate::{ActuatorOf, Ports};

/// Worker settings.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Decide and report, act on nothing.
    pub dry_run: bool,
    /// Act on nothing, immediately, whatever else is configured.
    pub kill_switch: bool,
    /// How long a handled dedupe key is remembered.
    pub dedupe_ttl: Duration,
    /// How long a delivery holds a work item before another delivery may take it over.
    pub dedupe_lease: Duration,
    /// How long an app lock lasts if its holder dies (the function timeout).
    pub lock_ttl: Duration,
    /// How long an action claim blocks others if its holder dies.
    pub claim_timeout: Duration,
    /// Most re-enqueues of one item by waits; after that the sweeper's re-check takes over.
    pub max_rechecks: u32,
    /// Delay before retrying an app another worker holds.
    pub busy_delay: Duration,
    /// How long a snooze from Slack lasts.
    pub snooze: Duration,
    /// The key `requested` items are signed with by the functions that authenticated their
    /// person (ingest, slack-actions). Without it no requested item is acted on.
    pub work_item_key: Option<medic_core::event::WorkItemKey>,
    /// Receives of one message before SQS moves it to the dead-letter queue (the queue's
    /// `maxReceiveCount`): on the last one a person's click that still fails is answered in its
    /// thread instead of vanishing into the DLQ.
    pub max_receive_count: u32,
    /// When a recovery wave pauses itself (`medic_core::fleet::batch_verdict`).
    pub fleet: medic_core::fleet::FleetRules,
    /// How long a wave that paused itself holds the rest of its items, and keeps the sweeper from
    /// releasing it again (two sweep windows: the cause is seen again, the canaries probed).
    pub relapse_hold: Duration,
    /// How soon an item comes back when the gate held a rung that a dead run had claimed
    /// (`StepReport::claim_held_back`): the instant switch's own delay, so the claim is resumed
    /// within one more of it after `act`.
    pub held_claim_delay: Duration,
}

/// How long a notification's marker lives: the hour it was set in and the next, the two hours
/// the sweeper reads.
pub const NOTIFIED_MEMORY: Duration = Duration::from_secs(2 * 3600);

/// Lambda's default worker timeout (template.yaml's `WorkerTimeout`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

impl Default for WorkerConfig {
    fn default() -> Self {
        Self::for_timeout(DEFAULT_TIMEOUT)
    }
}

impl WorkerConfig {
    /// Settings for a worker whose invocations Lambda stops after `timeout`. Every lease comes
    /// from it, in one place: a dedupe lease or app lock outlasts any invocation (so it is never
    /// taken over while its holder may still act) and ends long before the queue's visibility
    /// timeout (at least 6 × `timeout`) offers the message again; a claim outlasts the lease.
    pub fn for_timeout(timeout: Duration) -> Self {
        // Every lease outlasts the invocation and ends well before the queue's visibility, so a
        // redelivery finds a dead holder's lease over (`Timeouts`).
        let t = medic_core::timeouts::Timeouts::of(timeout);
        let lease = t.lease;
        Self {
            dry_run: false,
            kill_switch: false,
            dedupe_ttl: Duration::from_secs(3600).max(lease),
            dedupe_lease: lease,
            lock_ttl: lease,
            claim_timeout: t.claim,
            max_rechecks: 96,
            busy_delay: Duration::from_secs(30),
            snooze: Duration::from_secs(4 * 3600),
            work_item_key: None,
            max_receive_count: 5,
            fleet: medic_core::fleet::FleetRules::default(),
            relapse_hold: Duration::from_secs(2 * 900),
            held_claim_delay: medic_core::switch::TAKES_EFFECT_WITHIN,
        }
    }
}

/// Asks Argo CD for its version; `None` when it cannot say.
pub type VersionProbe = Box<dyn Fn() -> futures::future::BoxFuture<'static, Option<String>> + Send + Sync>;

/// The decision policy, with the Argo CD version its version-dependent rules read
/// (`PolicyConfig::argocd_version`) learned on first use when it is not configured.
pub struct WorkerPolicy {
    base: DecisionPolicy,
    probe: Option<VersionProbe>,
    learned: tokio::sync::OnceCell<DecisionPolicy>,
}

impl WorkerPolicy {
    /// How long the first step waits for the version: an Argo CD that is down would otherwise
    /// hold it for the client's whole retry budget. Unanswered, the version stays unknown for
    /// the container's life and those rules assume the oldest behaviour.
    pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

    /// A policy used as it is.
    pub fn fixed(policy: DecisionPolicy) -> Self {
        Self { base: policy, probe: None, learned: tokio::sync::OnceCell::new() }
    }

    /// A policy whose Argo CD version `probe` tells, asked once, when the first step needs it.
    pub fn learning(
        policy: DecisionPolicy,
        probe: impl Fn() -> futures::future::BoxFuture<'static, Option<String>> + Send + Sync + 'static,
    ) -> Self {
        Self { base: policy, probe: Some(Box::new(probe)), learned: tokio::sync::OnceCell::new() }
    }

    /// The policy as configured, for what the version does not change (the scope).
    pub fn base(&self) -> &DecisionPolicy {
        &self.base
    }

    /// The policy to decide with; the first call of a learning policy asks for the version
    /// (concurrent callers wait for that one answer).
    pub async fn get(&self) -> &DecisionPolicy {
        let Some(probe) = &self.probe else { return &self.base };
        self.learned
            .get_or_init(|| async {
                let version = tokio::time::timeout(Self::PROBE_TIMEOUT, probe()).await.ok().flatten().filter(|v| !v.is_empty());
                let mut config = self.base.config.clone();
                config.argocd_version = version;
                DecisionPolicy::new(config)
            })
            .await
    }
}

impl From<DecisionPolicy> for WorkerPolicy {
    fn from(policy: DecisionPolicy) -> Self {
        Self::fixed(policy)
    }
}

/// The worker's collaborators, built once per container (by a composition root).
pub struct Work<P: Ports> {
    pub config: WorkerConfig,
    pub argo: P::Argo,
    pub store: P::Incidents,
    pub dedupe: P::Markers,
    pub lock: P::Lock,
    pub queue: P::Queue,
    pub escalator: P::Escalator,
    pub budget: P::Budget,
    pub clock: P::Clock,
    pub policy: WorkerPolicy,
    pub metrics: P::Telemetry,
    /// The instant switch (`medic switch`), read right before every call that changes Argo CD
    /// and every Slack post; the configuration's `dry_run` and `kill_switch` still apply.
    pub switch: P::Switch,
}

/// One delivery of a work item, as the queue handed it over.
#[derive(Debug, Clone, Copy)]
pub struct Delivery<'a> {
    /// The queue's id of the message.
    pub message_id: &'a str,
    /// How many times the queue has delivered it (SQS's `ApproximateReceiveCount`), as text.
    pub receives: &'a str,
    /// The work item, as JSON.
    pub body: &'a [u8],
}

/// Why one message failed (it stays on the queue and is retried, then goes to the DLQ).
#[derive(Debug, thiserror::Error)]
pub enum MessageError {
    /// The message cannot be handled as it is (it does not parse, or names what it cannot be):
    /// retrying changes nothing, and the queue ends it in the DLQ.
    #[error("poison message: {0}")]
    Poison(String),
    /// Not handled this time: another delivery holds it, or a call it needed failed (`cause`).
    /// The queue offers it again; `retryable` says whether the failure can pass (a store that
    /// did not answer) or will come back as it is (a record that does not parse).
    #[error("retry later: {what}")]
    Retry {
        what: String,
        retryable: bool,
        #[source]
        cause: Option<medic_core::ports::Cause>,
    },
}

impl MessageError {
    /// Not now, for a reason that passes (another delivery holds the item).
    pub fn later(what: impl Into<String>) -> Self {
        Self::Retry { what: what.into(), retryable: true, cause: None }
    }

    /// Whether a redelivery can succeed where this one failed.
    pub fn retryable(&self) -> bool {
        matches!(self, Self::Retry { retryable: true, .. })
    }

    fn failed(error: impl std::error::Error + Send + Sync + 'static, retryable: bool) -> Self {
        Self::Retry { what: error.to_string(), retryable, cause: Some(medic_core::ports::Cause::new(error)) }
    }
}

impl From<medic_core::ports::StoreError> for MessageError {
    fn from(e: medic_core::ports::StoreError) -> Self {
        let retryable = e.retryable();
        Self::failed(e, retryable)
    }
}

impl From<medic_core::ports::QueueError> for MessageError {
    fn from(e: medic_core::ports::QueueError) -> Self {
        let retryable = e.retryable();
        Self::failed(e, retryable)
    }
}

impl From<medic_core::ports::EscalationError> for MessageError {
    fn from(e: medic_core::ports::EscalationError) -> Self {
        let retryable = e.retryable();
        Self::failed(e, retryable)
    }
}

impl From<ArgoError> for MessageError {
    fn from(e: ArgoError) -> Self {
        let retryable = e.is_retryable();
        Self::failed(e, retryable)
    }
}

impl From<StepError> for MessageError {
    fn from(e: StepError) -> Self {
        let retryable = match &e {
            StepError::Argo(e) => e.is_retryable(),
            StepError::Store(e) => e.retryable(),
            StepError::Escalation(e) => e.retryable(),
            StepError::Policy(_) => false,
        };
        Self::failed(e, retryable)
    }
}

/// What happened to one message that did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// The step ran; its result.
    Stepped(StepResult),
    /// The same news was already handled.
    Duplicate,
    /// Re-enqueued to look again later.
    Requeued { delay_secs: u64, why: String },
    /// A requested refresh was done.
    RequestedDone,
    /// A `requested` item not signed by a function that authenticates people: refused.
    Refused,
    /// The app is covered by a fleet outage's cause (`medic_core::fleet`, key named): the sweep
    /// handles it with the cause's canaries and recovery wave.
    HeldByFleet(String),
}

/// Whether a fleet outage's cause holds an app back, and the app as just read when it does not
/// (the step then uses that read instead of reading again).
enum FleetHold {
    Held(String),
    Free(Option<Box<medic_core::Application>>),
}

/// How soon an app is looked at again after a person's action on it.
const HUMAN_ACTION_RECHECK: Duration = Duration::from_secs(60);

impl<P: Ports> Work<P> {
    /// The same work with its settings changed by `change` (a harness or a test's variant of a
    /// built worker).
    pub fn with_config(mut self, change: impl FnOnce(&mut WorkerConfig)) -> Self {
        change(&mut self.config);
        self
    }

    /// The same work deciding with `policy`.
    pub fn with_policy(self, policy: WorkerPolicy) -> Self {
        Self { policy, ..self }
    }

    /// Handles one delivery of a work item: parse (a poison item fails), then the delivery's lease
    /// on its dedupe key, the app's lock, the route (a look, a person's button, a signed refresh),
    /// and the lease's end.
    pub async fn handle(&self, delivery: Delivery<'_>) -> Result<Handled, MessageError> {
        let Delivery { message_id, receives, body } = delivery;
        let item = WorkItem::parse(body, self.clock.now()).map_err(|e| MessageError::Poison(e.to_string()))?;
        let item = self.fleet_privileges_checked(item);
        let app = item.app.id();
        let span = tracing::info_span!("work", message_id = %message_id, app = %app, kind = ?item.kind, dedupe_key = %item.dedupe_key, incident = tracing::field::Empty);
        async {
            let lag = self.clock.now().signed_duration_since(item.enqueued_at).num_milliseconds().max(0);
            self.metrics.millis("QueueLag", None, lag as f64);
            // One delivery of this message: the same across SDK retries within it, new on a
            // redelivery, so a killed invocation's record is recognised as someone else's.
            let owner = format!("{message_id}#{receives}");
            match self
                .dedupe
                .begin(&medic_core::keys::delivery_marker(&item.dedupe_key), &owner, self.config.dedupe_lease)
                .await
                .map_err(MessageError::from)?
            {
                Begun::Owned => {}
                Begun::Done => {
                    self.metrics.count("DuplicateMessages", None, 1.0);
                    tracing::info!("already handled; dropped");
                    return Ok(Handled::Duplicate);
                }
                Begun::InProgress { until } => {
                    // Never dropped: the queue offers it again, and once the holder's lease has
                    // run out (it was killed) this delivery takes over.
                    return Err(MessageError::later(format!("another delivery is handling it until {until}")));
                }
            }
            if item.kind == WorkKind::Notification {
                // For the sweeper's MissedNotifications: this app was reported. Best effort: a
                // marker that could not be written only makes the metric count one app too many.
                let marker = medic_core::keys::notified_marker(&app, self.clock.now());
                if let Err(e) = self.dedupe.first_sighting(&marker, NOTIFIED_MEMORY).await {
                    tracing::warn!(error = %e, "could not mark the app as notified");
                }
            }
            let result = match self.locked(&item, &app, message_id).await {
                // The last receive of a person's click that still fails: answered in its thread
                // rather than left unanswered in the DLQ (nobody re-offers a request from there).
                Err(e @ MessageError::Retry { .. }) if receives.parse::<u32>().is_ok_and(|n| n >= self.config.max_receive_count) => {
                    self.answer_failed_click(&item, receives, &e.to_string()).await.unwrap_or(Err(e))
                }
                other => other,
            };
            // Done, or given up so a redelivery is handled at once rather than after the lease.
            if let Err(e) =
                self.dedupe.end(&medic_core::keys::delivery_marker(&item.dedupe_key), &owner, result.is_ok(), self.config.dedupe_ttl).await
            {
                tracing::warn!(error = %e, "could not record the end of handling; its lease expires by itself");
            }
            result
        }
        .instrument(span)
        .await
    }

    /// On a click's last receive: tells its thread the action could not be confirmed, so the
    /// person is not left waiting. `None` when the item is no click (or its button is unknown),
    /// or nothing may be posted: the message then goes to the DLQ as before. Only reached by the
    /// delivery that holds the item (no other delivery is performing it), and the report is
    /// careful: an earlier, killed delivery may have started the action.
    async fn answer_failed_click(&self, item: &WorkItem, receives: &str, why: &str) -> Option<Result<Handled, MessageError>> {
        let Some(ItemRequest::Button(id)) = item.request() else { return None };
        if item.kind != WorkKind::Requested {
            return None;
        }
        let request = self.escalator.human_action(id).await.ok()??;
        let by = item.requested_by.clone().unwrap_or_else(|| "unknown".into());
        let outcome = HumanActionOutcome {
            performed: false,
            state: None,
            summary: format!("could not be confirmed after {receives} tries ({why}); check the app before clicking again"),
            snoozed_until: None,
        };
        let reported = self.actuator().perform(Request::Reply { request: &request, by: &by, outcome: &outcome }).await;
        if let Ok(Performed::Held(answer)) = &reported {
            tracing::info!(action_id = id, mode = %answer.mode, "a click failed on its last receive; not answered: {}", answer.why);
            return None;
        }
        tracing::warn!(audit = true, action_id = id, requested_by = %by, error = why, answered = reported.is_ok(), "a click failed on its last receive");
        self.metrics.count("ClicksGivenUp", None, 1.0);
        Some(reported.map(|_| Handled::RequestedDone).map_err(MessageError::from))
    }

    async fn locked(&self, item: &WorkItem, app: &AppId, owner: &str) -> Result<Handled, MessageError> {
        let locked = self.lock.try_lock(app, owner, self.config.lock_ttl).await.map_err(MessageError::from)?;
        if !locked {
            return self.requeue(item, self.config.busy_delay, "another worker is acting on this app").await;
        }
        let result = match item.kind {
            // Boxed: their debug-build poll frames are large, and they nest.
            WorkKind::Requested => Box::pin(self.requested(item)).await,
            _ => Box::pin(self.step(item)).await,
        };
        self.lock.unlock(app, owner).await.ok();
        result
    }

    /// An automatic item (a notification, a recheck, a sweep item or a wave item; first delivery
    /// or not) of an app Argo CD cannot compare, while the sweeper holds a cause of one of the
    /// app's scopes (its source hosts, its cluster, Argo CD itself), or while the recovery wave of
    /// one is stepped and the item is not its step: left to the cause, so a Git outage does not
    /// turn into one ladder per app. Before, only a notification's first delivery
    /// was held, so the rechecks of apps notified before the sweeper's first hold each climbed
    /// their own ladder during the outage (H1). A person's button and a signed refresh
    /// (`Requested`) are never held. The read is the one the step would make, and its failure is
    /// the step's (retried, or for a 404/403 left to the step's own read and list); a store that
    /// cannot be read is no hold.
    ///
    /// An item that names the app's scopes (`WorkItem::scopes`, from its notification: Argo CD
    /// could not compare it when it was sent; carried through every requeue) is checked before
    /// the read, so during an outage a held app costs Argo CD nothing.
    async fn fleet_hold(&self, item: &WorkItem) -> Result<FleetHold, ArgoError> {
        if item.kind == WorkKind::Requested {
            return Ok(FleetHold::Free(None));
        }
        let instance = medic_core::fleet::CauseScope::Instance.key();
        let mut checked: Vec<String> = Vec::new();
        if !item.scopes.is_empty() {
            checked = item.scopes.iter().cloned().chain(std::iter::once(instance.clone())).collect();
            if let Some(key) = self.held_scope(checked.clone(), item).await {
                return Ok(FleetHold::Held(key));
            }
        }
        // Not held by what the event named (or it named nothing): the app as it is now decides,
        // on the scopes not asked about already.
        let app = self.argo.get_app(&item.app).await?;
        if !medic_core::fleet::is_down(&app) {
            return Ok(FleetHold::Free(Some(Box::new(app))));
        }
        let keys: Vec<String> = medic_core::fleet::scopes_of(&app)
            .into_iter()
            .map(|s| s.key())
            .chain(std::iter::once(instance))
            .filter(|k| !checked.contains(k))
            .collect();
        if keys.is_empty() {
            return Ok(FleetHold::Free(Some(Box::new(app))));
        }
        Ok(match self.held_scope(keys, item).await {
            Some(key) => FleetHold::Held(key),
            None => FleetHold::Free(Some(Box::new(app))),
        })
    }

    /// Whether the app has an action claimed and not yet performed (a run died between its claim
    /// and its record, perhaps before the hold began). A hold ends the item, and with it the
    /// claim's only way back: so a held app with such a claim is stepped until the claim is
    /// completed (the step resumes it, or defers while a live run holds it). Read once per item
    /// (`known` keeps the answer: a paused wave item may meet the fleet hold next); a store that
    /// cannot be read retries the item, as the step would.
    async fn claim_pending(&self, item: &WorkItem, known: &mut Option<medic_core::incident::History>) -> Result<bool, MessageError> {
        let history = match known {
            Some(history) => history,
            None => known.insert(self.store.history(&item.app.id()).await.map_err(MessageError::from)?),
        };
        let pending = history.pending();
        if let Some(a) = pending {
            tracing::info!(rung = a.rung.as_str(), claimed_at = %a.at, "held, but an action claimed before the hold is resumed first");
        }
        Ok(pending.is_some())
    }

    /// The timeline of an item the worker ends without a look (a fleet outage holds it): the
    /// delivery received, and the wait for the outage, for an app with an open incident
    /// (`history`, read to find a pending claim). Best effort, like every timeline event.
    async fn log_held(&self, arrival: &Arrival, history: Option<&medic_core::incident::History>, item: &WorkItem, why: &str) {
        let Some(incident) = history.and_then(|h| h.incident.as_ref()) else { return };
        log_event(&self.store, TimelineEvent::received(incident, arrival, item.trigger.as_str(), &item.app.id())).await;
        log_event(&self.store, TimelineEvent::new(incident, EventKind::Waited, &arrival.key, self.clock.now(), why.to_owned())).await;
    }

    /// The first of the scope `keys` a fleet outage holds (its marker), with one `BatchGetItem`;
    /// a store that cannot be read holds nothing. An item that is no step of a recovery wave is
    /// also held by a wave of the scope being stepped (`keys::fleet_recovering_marker`): the wave
    /// refreshes the app in its turn, and a look before it would judge the app by its reconcile
    /// during the outage and escalate it.
    async fn held_scope(&self, keys: Vec<String>, item: &WorkItem) -> Option<String> {
        let markers: Vec<(&String, medic_core::keys::Marker)> = keys
            .iter()
            .flat_map(|k| {
                let recovering = item.wave.is_none().then(|| medic_core::keys::fleet_recovering_marker(k));
                std::iter::once(medic_core::keys::fleet_hold_marker(k)).chain(recovering).map(move |m| (k, m))
            })
            .collect();
        let asked: Vec<medic_core::keys::Marker> = markers.iter().map(|(_, m)| m.clone()).collect();
        let held = self.dedupe.marked(&asked).await.ok()?;
        markers.into_iter().find(|(_, m)| held.contains(m)).map(|(key, _)| key.clone())
    }

    /// Why the rest of a recovery wave waits: its cause's wave paused itself, or a person paused
    /// it (the markers of its outage, [`medic_core::keys::wave_pause_markers`]). A store that
    /// cannot be read pauses nothing (the wave goes on, as without the check).
    async fn wave_paused(&self, slot: &medic_core::ladder::WaveSlot) -> Option<&'static str> {
        let [relapse, pause] = medic_core::keys::wave_pause_markers(slot);
        let marked = self.dedupe.marked(&[relapse.clone(), pause.clone()]).await.ok()?;
        if marked.contains(&relapse) {
            Some("most of a released batch failed again")
        } else if marked.contains(&pause) {
            Some("a person paused it")
        } else {
            None
        }
    }

    /// Records how a wave item came out, and when that completes its batch with most of it failed
    /// again, pauses the rest of the wave (the relapse marker; the sweeper holds the cause again
    /// and probes its canaries). Any worker may complete a batch, so each reads the batch's
    /// outcomes after writing its own (the read is eventually consistent: two last writers that
    /// both miss the other's outcome leave the batch unjudged, and the wave goes on as it did
    /// before this check).
    async fn tally_wave(&self, slot: &medic_core::ladder::WaveSlot, outcome: medic_core::ladder::WaveOutcome) {
        use medic_core::ladder::WaveOutcome;
        const KEPT: Duration = Duration::from_secs(24 * 3600);
        // A wait, a deferral or a failed step is tallied when the item really steps: tallied
        // now, it closed its batch with too few outcomes to judge (M3).
        if outcome == WaveOutcome::Neither {
            return;
        }
        if let Err(e) = self.dedupe.mark(&medic_core::keys::wave_outcome_marker(slot, slot.index, outcome), KEPT).await {
            tracing::warn!(cause = %slot.scope, error = %e, "could not record the wave step's outcome; its batch will not be judged");
            return;
        }
        const OUTCOMES: [WaveOutcome; 3] = [WaveOutcome::Healed, WaveOutcome::Failed, WaveOutcome::Neither];
        // Per item of the batch, the marker of each outcome it may have.
        let markers: Vec<[medic_core::keys::Marker; 3]> =
            slot.batch(self.config.fleet.wave_batch).map(|i| OUTCOMES.map(|o| medic_core::keys::wave_outcome_marker(slot, i, o))).collect();
        let Ok(marked) = self.dedupe.marked(&markers.concat()).await else { return };
        let recorded: Vec<Vec<WaveOutcome>> =
            markers.iter().map(|m| OUTCOMES.into_iter().zip(m).filter(|(_, k)| marked.contains(*k)).map(|(o, _)| o).collect()).collect();
        if medic_core::fleet::batch_verdict(&self.config.fleet, &recorded) == Some(true) {
            let [relapse, _] = medic_core::keys::wave_pause_markers(slot);
            // Conditional, so the workers that see the batch complete together count it once
            // (the sweeper forgets the marker when it releases a wave).
            match self.dedupe.first_sighting(&relapse, self.config.relapse_hold).await {
                Ok(medic_core::ports::Seen::Duplicate) => {}
                Ok(medic_core::ports::Seen::New) => {
                    self.metrics.count("WavesPaused", None, 1.0);
                    tracing::warn!(cause = %slot.scope, wave = %slot.wave, batch = ?slot.batch(self.config.fleet.wave_batch), "most of a recovery wave's batch failed again: the rest of the wave is paused");
                }
                Err(e) => tracing::warn!(cause = %slot.scope, error = %e, "could not pause the recovery wave"),
            }
        }
    }

    async fn step(&self, item: &WorkItem) -> Result<Handled, MessageError> {
        // A wait's recheck keeps the item's key: its count makes each look its own delivery.
        let arrival = Arrival { key: format!("{}#{}", item.dedupe_key, item.rechecks), received_at: item.enqueued_at };
        let remediator = Remediator {
            arrival: Some(&arrival),
            argo: &self.argo,
            store: &self.store,
            escalator: &self.escalator,
            budget: &self.budget,
            clock: &self.clock,
            dedupe: &self.dedupe,
            policy: self.policy.get().await,
            dry_run: self.config.dry_run,
            kill_switch: self.config.kill_switch,
            switch: &self.switch,
            claim_timeout: self.config.claim_timeout,
        };
        let started = Instant::now();
        let mut pending = None;
        if let Some(slot) = &item.wave
            && let Some(why) = self.wave_paused(slot).await
            && !self.claim_pending(item, &mut pending).await?
        {
            self.metrics.count("HeldByFleetOutage", None, 1.0);
            tracing::info!(app = %item.app.id(), cause = %slot.scope, why, "recovery wave paused: the app waits for the sweep to release it again");
            let waited = format!("held: the recovery wave of {} is paused ({why}); the sweep releases it again", slot.scope);
            self.log_held(&arrival, pending.as_ref(), item, &waited).await;
            return Ok(Handled::HeldByFleet(slot.scope.clone()));
        }
        let stepped = match self.fleet_hold(item).await {
            Ok(FleetHold::Held(cause)) if !self.claim_pending(item, &mut pending).await? => {
                self.metrics.count("HeldByFleetOutage", None, 1.0);
                tracing::info!(app = %item.app.id(), cause, "left to its fleet outage: the sweep probes the canaries and releases the wave");
                let waited = format!("held by the fleet outage of {cause}: the sweep probes its canaries and releases a recovery wave");
                self.log_held(&arrival, pending.as_ref(), item, &waited).await;
                return Ok(Handled::HeldByFleet(cause));
            }
            Ok(FleetHold::Free(app)) => Box::pin(remediator.run(&item.app, &item.trigger, app.map(|a| *a))).await,
            // Held, but an action claimed before the hold is still to be performed: the step
            // resumes it (its claim, its key), and the hold applies from the next decision on.
            Ok(FleetHold::Held(_)) => Box::pin(remediator.run(&item.app, &item.trigger, None)).await,
            // Deleted, or moved to another project: the step's own read and list tell which.
            Err(ArgoError::NotFound(_) | ArgoError::PermissionDenied(_)) => remediator.run(&item.app, &item.trigger, None).await,
            Err(e) => Err(StepError::Argo(e)),
        };
        if let Some(slot) = &item.wave {
            self.tally_wave(slot, medic_core::step::wave_outcome(&stepped)).await;
        }
        let report = match stepped {
            Ok(report) => report,
            Err(StepError::Argo(e @ ArgoError::Unauthenticated(_))) => {
                self.metrics.count("ArgoUnauthenticated", None, 1.0);
                self.alert_unauthenticated(&e).await;
                return Err(MessageError::from(e));
            }
            Err(e) => {
                if let StepError::Argo(a) = &e {
                    self.metrics.count("ArgoErrors", Some(("Kind", a.kind())), 1.0);
                }
                if let StepError::Escalation(_) = &e {
                    self.metrics.count("EscalationErrors", Some(("Step", "escalate")), 1.0);
                }
                return Err(MessageError::from(e));
            }
        };
        let result_name = serde_json::to_value(report.result).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        // One metric a step; what it decided and how it ended are properties of its line, for
        // Logs Insights: as dimensions each value was one more billed metric (docs/cost.md).
        let trigger = item.trigger.as_str();
        let mut breakdown = vec![("Result", result_name.as_str()), ("Trigger", trigger)];
        if let Some(d) = &report.decision {
            tracing::Span::current().record("incident", d.incident.as_ref().map(|i| i.id()).unwrap_or_default());
            breakdown.extend([("Action", d.action.as_str()), ("FailureMode", d.failure_mode.id())]);
        }
        self.metrics.millis_with("StepLatency", &breakdown, started.elapsed().as_millis() as f64);
        if report.result == StepResult::Deferred {
            self.metrics.count("StepsDeferred", None, 1.0);
        }
        if matches!(
            report.result,
            StepResult::Refreshed
                | StepResult::RefreshUnverified
                | StepResult::Synced
                | StepResult::Escalated
                | StepResult::Failed
                | StepResult::AlreadyDone
        ) {
            // The audit record: who (Argo Medic, on which trigger), what, why, key, result.
            tracing::info!(
                audit = true,
                app = %report.app,
                trigger = %item.trigger,
                action = report.action.map(|a| a.as_str()).unwrap_or("none"),
                failure_mode = report.failure_mode.map(|m| m.id()).unwrap_or(""),
                idempotency_key = report.idempotency_key.as_ref().map(|k| k.as_str()).unwrap_or(""),
                result = %result_name,
                detail = %report.detail,
                "action taken"
            );
        }
        // The app is out of trouble: its escalations (if any) are marked resolved. Also on a
        // healthy look after the incident was closed, so a resolution whose report failed is
        // reported on the next look (the escalator does nothing when nothing is open).
        // The same when its incident ended otherwise (out of scope, opted out, deleted).
        // A verified refresh that closed the incident within the step brings its own resolution.
        let resolution = report.resolution.as_ref().map(|d| (d, true));
        let looked = report.decision.as_ref().map(|d| (d, matches!(report.result, StepResult::Resolved | StepResult::NoAction)));
        if let Some((d, _)) =
            resolution.or(looked).filter(|(d, at_rest)| *at_rest && (d.failure_mode == FailureMode::Healthy || d.resolves_incident))
            && let Err(e) = self.actuator().perform(Request::Resolve { app: &report.app, decision: d }).await
        {
            self.metrics.count("EscalationErrors", Some(("Step", "resolve")), 1.0);
            return Err(MessageError::from(e));
        }
        match report.result {
            StepResult::Waiting | StepResult::Deferred => {
                let after = report.decision.as_ref().and_then(|d| d.retry_after_secs).unwrap_or(60).max(1);
                self.requeue(item, Duration::from_secs(after as u64), &report.detail).await
            }
            StepResult::DryRun if report.claim_held_back => {
                self.requeue(item, self.config.held_claim_delay, "the gate holds an action a run that died had claimed").await
            }
            result => Ok(Handled::Stepped(result)),
        }
    }

    /// A person or pipeline asked for something: a refresh (signed refresh endpoint) done
    /// directly within the budget, or the action behind a Slack button (by its opaque id).
    async fn requested(&self, item: &WorkItem) -> Result<Handled, MessageError> {
        // Only ingest and slack-actions check who asks (signatures, the allow-list); anyone else
        // who may send to the queue (the awssqs route) must not be able to ask in someone's name.
        if !self.config.work_item_key.as_ref().is_some_and(|k| k.verifies(item)) {
            self.metrics.count("RefusedRequests", None, 1.0);
            tracing::warn!(
                audit = true,
                requested_action = ?item.requested_action,
                requested_by = ?item.requested_by,
                signed = item.signature.is_some(),
                "requested item refused: not signed by ingest or slack-actions; nothing done"
            );
            return Ok(Handled::Refused);
        }
        let kind = match item.request() {
            Some(ItemRequest::Refresh(kind)) => kind,
            Some(ItemRequest::Button(id)) => return self.human_action(item, id).await,
            None => return Err(MessageError::Poison(format!("unsupported requested action {:?}", item.requested_action))),
        };
        // A refresh someone asks for honours the same scope and opt-out as everything Argo Medic
        // does (L1): read the app first (a read, not a refresh, so no budget), then refresh.
        match self.argo.get_app(&item.app).await {
            Ok(app) if app.opted_out() || !self.policy.base().config.in_scope(&app) => {
                self.metrics.count("RefusedRequests", None, 1.0);
                let why = if app.opted_out() { "the app opted out" } else { "the app is out of this deployment's scope" };
                tracing::warn!(
                    audit = true,
                    app = %app.id(),
                    action = kind.as_str(),
                    requested_by = ?item.requested_by,
                    "requested refresh refused: {why}; nothing done"
                );
                return Ok(Handled::Refused);
            }
            Ok(_) => {}
            Err(ArgoError::NotFound(m)) => {
                tracing::warn!(error = %m, "requested refresh of an app that does not exist");
                return Ok(Handled::RequestedDone);
            }
            Err(e) => return Err(MessageError::from(e)),
        }
        match self.actuator().perform(Request::SignedRefresh { app: &item.app, kind }).await {
            Ok(Performed::Held(answer)) if answer.mode == medic_core::switch::Mode::Off => {
                tracing::info!(audit = true, action = kind.as_str(), requested_by = ?item.requested_by, mode = %answer.mode, performed = false, "requested refresh held while the switch is off: {}", answer.why);
                self.hold_request(item).await
            }
            Ok(Performed::Held(answer)) => {
                tracing::info!(audit = true, action = kind.as_str(), requested_by = ?item.requested_by, mode = %answer.mode, performed = false, "requested refresh not performed: {}", answer.why);
                Ok(Handled::RequestedDone)
            }
            Ok(Performed::Deferred(e)) => self.requeue(item, e.retry_after, &e.to_string()).await,
            Ok(_) => {
                tracing::info!(audit = true, action = kind.as_str(), requested_by = ?item.requested_by, "requested refresh done");
                Ok(Handled::RequestedDone)
            }
            Err(StepError::Argo(ArgoError::NotFound(m))) => {
                tracing::warn!(error = %m, "requested refresh of an app that does not exist");
                Ok(Handled::RequestedDone)
            }
            Err(e) => Err(MessageError::from(e)),
        }
    }

    /// The action behind a Slack button, performed once: the button's id names a stored request
    /// (app, incident, sync plan, idempotency key); the outcome is reported in the incident's
    /// thread. A sync carries the request's idempotency key in Argo CD's `infos`, so a redelivered
    /// message finds the sync it already started instead of starting another.
    async fn human_action(&self, item: &WorkItem, id: &str) -> Result<Handled, MessageError> {
        let by = item.requested_by.clone().unwrap_or_else(|| "unknown".into());
        let Some(request) = self.escalator.human_action(id).await.map_err(MessageError::from)? else {
            tracing::warn!(action_id = id, requested_by = %by, "a button whose action is unknown or expired; nothing done");
            return Ok(Handled::RequestedDone);
        };
        if request.app.name != item.app.name || request.app.namespace != item.app.namespace {
            return Err(MessageError::Poison(format!("action {id} is for {}, not this app", request.app.id())));
        }
        let action = request.action.as_str();
        let performed = self
            .actuator()
            .perform(Request::Button { request: &request, clicked_at: item.enqueued_at, snooze: self.config.snooze, by: &by })
            .await;
        let outcome = match performed {
            Ok(Performed::Button(outcome)) => outcome,
            Ok(Performed::Held(answer)) if answer.verdict == Verdict::Silent => {
                // Nothing changes in Argo CD and nothing is posted while the switch is off; the
                // person's click is in the log, and comes back until it can be performed (or, in
                // dry-run, answered): a click taken and never answered is a lost request.
                tracing::info!(audit = true, action, requested_by = %by, incident = %request.incident_id, performed = false, mode = %answer.mode, "human action held while the switch is off: {}", answer.why);
                return self.hold_request(item).await;
            }
            Ok(Performed::Held(answer)) => {
                HumanActionOutcome { performed: false, state: None, summary: format!("not performed: {}", answer.why), snoozed_until: None }
            }
            Ok(Performed::Deferred(e)) => return self.requeue(item, e.retry_after, &e.to_string()).await,
            Ok(other) => return Err(MessageError::Poison(format!("a button answered with {other:?}"))),
            Err(StepError::Argo(e @ ArgoError::RateLimited { retry_after })) => {
                return self.requeue(item, retry_after.unwrap_or(Duration::from_secs(30)), &e.to_string()).await;
            }
            // Argo CD busy or failing: the message is retried (a sync that went through is found
            // by its key in operation.info on the retry; a performed action by its marker).
            Err(e) => return Err(MessageError::from(e)),
        };
        match self.actuator().perform(Request::Reply { request: &request, by: &by, outcome: &outcome }).await {
            Ok(_) => {}
            Err(e) => return Err(MessageError::from(e)),
        }
        tracing::info!(
            audit = true,
            app = %request.app.id(),
            action,
            requested_by = %by,
            incident = %request.incident_id,
            idempotency_key = %request.idempotency_key,
            performed = outcome.performed,
            summary = %outcome.summary,
            "human action handled"
        );
        self.metrics.count("HumanActions", Some(("Action", action)), 1.0);
        if outcome.performed
            && matches!(
                request.action,
                HumanAction::Sync | HumanAction::Refresh | HumanAction::HardRefresh | HumanAction::TerminateOperation
            )
        {
            // Look at the app again soon, so its recovery (or not) shows in the thread.
            let trigger = Trigger::slack_action();
            let recheck = WorkItem::for_app(WorkKind::Recheck, item.app.clone(), trigger, id, self.clock.now());
            if let Err(e) = self.queue.enqueue(&recheck, HUMAN_ACTION_RECHECK).await {
                tracing::warn!(error = %e, "could not enqueue the recheck after a human action; the sweeper will look");
            }
        }
        Ok(Handled::RequestedDone)
    }

    /// A person's request (a click, a signed refresh) the switch holds (`off`): it comes back after
    /// the switch's own delay while it lasts, so it is performed within one more delay after
    /// `act` (answered in `dry-run`). After ten delays it comes back ten times less often, so a
    /// long stop costs little; the recheck chain bounds the whole hold
    /// (`max_rechecks`: 10 × 30 s + 86 × 300 s, about seven hours, in production).
    async fn hold_request(&self, item: &WorkItem) -> Result<Handled, MessageError> {
        let delay = if item.rechecks < 10 { self.config.held_claim_delay } else { self.config.held_claim_delay * 10 };
        self.requeue(item, delay, "the switch is off: a person's request waits for it").await
    }

    /// An item's wave slot and recovery trigger are honoured only under the work-item key's
    /// signature (L12): anyone who may send to the queue could otherwise feed a wave's relapse
    /// count or start a ladder at its refresh. An unsigned one is not refused, only made a plain
    /// look (`sweep`, no slot): the app is still looked at, by its own ladder. That is also what
    /// becomes of the previous release's unsigned wave items in flight during an upgrade.
    fn fleet_privileges_checked(&self, item: WorkItem) -> WorkItem {
        if !item.fleet_privileged() || self.config.work_item_key.as_ref().is_some_and(|k| k.verifies(&item)) {
            return item;
        }
        self.metrics.count("RefusedFleetSlots", None, 1.0);
        tracing::warn!(
            audit = true,
            app = %item.app.id(),
            trigger = %item.trigger,
            wave = ?item.wave,
            "a wave slot or recovery trigger not signed by the sweeper: ignored, the app is looked at as by a sweep"
        );
        let trigger = if item.trigger.as_str() == medic_core::Trigger::RECOVERY { medic_core::Trigger::sweep() } else { item.trigger };
        WorkItem { wave: None, trigger, signature: None, ..item }
    }

    /// Looks again later with a new message (a fresh dedupe key), never by holding this one.
    async fn requeue(&self, item: &WorkItem, delay: Duration, why: &str) -> Result<Handled, MessageError> {
        if item.rechecks >= self.config.max_rechecks {
            tracing::warn!(rechecks = item.rechecks, "recheck chain ended; the sweeper will look again");
            return Ok(Handled::Stepped(StepResult::Waiting));
        }
        let delay = delay.min(Duration::from_secs(900));
        let mut next = WorkItem::for_app(
            WorkKind::Recheck,
            item.app.clone(),
            item.trigger.clone(),
            &medic_core::keys::recheck_dedupe_key(&item.dedupe_key, item.rechecks + 1),
            self.clock.now(),
        );
        next.rechecks = item.rechecks + 1;
        next.requested_action = item.requested_action.clone();
        next.requested_by = item.requested_by.clone();
        // The item's place in its recovery wave and the scopes its notification named go with
        // it: a deferred wave item still waits for a pause, and a held scope still holds (H1).
        next.wave = item.wave.clone();
        next.scopes = item.scopes.clone();
        if item.kind == WorkKind::Requested {
            next.kind = WorkKind::Requested;
            // A person's request keeps the time it was made: a button judges "since the click"
            // by it (an operation started after it), however often the request waited.
            next.enqueued_at = item.enqueued_at;
        }
        if next.kind == WorkKind::Requested || next.fleet_privileged() {
            // Verified before it was deferred; signed again since its fields changed.
            if let Some(key) = &self.config.work_item_key {
                key.sign(&mut next);
            }
        }
        self.queue.enqueue(&next, delay).await.map_err(MessageError::from)?;
        tracing::info!(delay_secs = delay.as_secs(), why, "re-enqueued");
        Ok(Handled::Requeued { delay_secs: delay.as_secs(), why: why.to_owned() })
    }

    /// What follows a batch: tells a human, once an hour across containers, that the switch
    /// cannot be read and the worker fails closed. Posted whatever the switch says: it is about
    /// the switch itself.
    pub async fn after_batch(&self) {
        let Some(problem) = self.switch.take_alert() else { return };
        self.metrics.count("SwitchUnreadable", None, 1.0);
        tracing::error!(service_alert = true, problem = %problem, "the switch cannot be read; failing closed");
        let key = medic_core::keys::hourly_alert_marker("switch", self.clock.now());
        // The marker lives in the same table the switch does: when it cannot be written either,
        // this container tells anyway (once, the switch hands its alert out once).
        let once = Once { key: &key, ttl: Duration::from_secs(3600), unsure: WhenUnsure::Tell };
        let _ = self.actuator().perform(Request::Alert { kind: ActionKind::ServiceAlert, text: &problem, once: Some(once) }).await;
    }

    /// One alert per hour about a rejected token, however many messages hit it: a service alert,
    /// told in every mode (it says why Argo Medic cannot work).
    async fn alert_unauthenticated(&self, e: &ArgoError) {
        let key = medic_core::keys::hourly_alert_marker("unauthenticated", self.clock.now());
        let once = Once { key: &key, ttl: Duration::from_secs(3600), unsure: WhenUnsure::Skip };
        let text = alerts::unauthenticated(e);
        tracing::error!(service_alert = true, "{text}");
        let _ = self.actuator().perform(Request::Alert { kind: ActionKind::ServiceAlert, text: &text, once: Some(once) }).await;
    }

    /// The one actuator over this worker's collaborators.
    fn actuator(&self) -> ActuatorOf<'_, P> {
        Actuator {
            argo: &self.argo,
            store: &self.store,
            dedupe: &self.dedupe,
            escalator: &self.escalator,
            budget: &self.budget,
            clock: &self.clock,
            gate: Gate { dry_run: self.config.dry_run, kill_switch: self.config.kill_switch, switch: &self.switch },
            claim_timeout: self.config.claim_timeout,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures::future::join_all;
    use medic_core::PolicyConfig;

    use super::*;

    /// A failed message keeps what failed as its cause, and whether a redelivery can pass.
    #[test]
    fn a_message_error_keeps_its_cause_and_whether_it_can_pass() {
        use medic_core::ports::StoreError;
        let busy = MessageError::from(StoreError::unavailable("GetItem: ThrottlingException"));
        assert!(busy.retryable());
        assert_eq!(busy.to_string(), "retry later: incident store: GetItem: ThrottlingException");
        assert!(std::error::Error::source(&busy).is_some());
        let broken = MessageError::from(StoreError::invalid("item x: `at` is not a time"));
        assert!(!broken.retryable(), "a record that does not parse comes back as it is");
        let argo = MessageError::from(StepError::Argo(ArgoError::Transient("503".into())));
        assert!(argo.retryable());
        assert!(!MessageError::from(StepError::Argo(ArgoError::PermissionDenied("no".into()))).retryable());
        assert!(MessageError::later("another delivery is handling it").retryable());
        assert!(!MessageError::Poison("not a work item".into()).retryable());
    }

    fn counting(answer: Option<&'static str>, delay: Duration) -> (Arc<AtomicUsize>, WorkerPolicy) {
        let asked = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&asked);
        let policy = WorkerPolicy::learning(DecisionPolicy::new(PolicyConfig::default()), move || {
            count.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                tokio::time::sleep(delay).await;
                answer.map(str::to_owned)
            })
        });
        (asked, policy)
    }

    #[tokio::test]
    async fn a_learning_policy_asks_once_on_first_use_however_many_steps_wait() {
        let (asked, policy) = counting(Some("v3.2.1+8d0dde1"), Duration::from_millis(50));
        assert_eq!(asked.load(Ordering::SeqCst), 0, "built without asking");
        let got = join_all((0..8).map(|_| policy.get())).await;
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        assert!(got.iter().all(|p| p.config.argocd_version.as_deref() == Some("v3.2.1+8d0dde1")));
        assert!(policy.get().await.config.argocd_at_least(3, 2), "{:?}", policy.get().await.config.argocd_version);
        assert_eq!(policy.base().config.argocd_version, None, "the configured policy is kept as it was");
    }

    #[tokio::test]
    async fn an_unanswered_probe_leaves_the_version_unknown_after_its_timeout_and_is_not_asked_again() {
        let (asked, policy) = counting(Some("v3.2.1"), WorkerPolicy::PROBE_TIMEOUT + Duration::from_secs(5));
        let started = Instant::now();
        assert_eq!(policy.get().await.config.argocd_version, None);
        let waited = started.elapsed();
        assert!(waited >= WorkerPolicy::PROBE_TIMEOUT && waited < WorkerPolicy::PROBE_TIMEOUT + Duration::from_secs(2), "{waited:?}");
        assert_eq!(policy.get().await.config.argocd_version, None);
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        let (_, empty) = counting(Some(""), Duration::ZERO);
        assert_eq!(empty.get().await.config.argocd_version, None, "an empty version is no version");
    }

    #[tokio::test]
    async fn a_fixed_policy_never_asks() {
        let config = PolicyConfig { argocd_version: Some("v2.14.3".into()), ..PolicyConfig::default() };
        let policy = WorkerPolicy::from(DecisionPolicy::new(config));
        assert_eq!(policy.get().await.config.argocd_version.as_deref(), Some("v2.14.3"));
    }
}

//! In-memory twins of the store and escalator ports, and the system clock. Used by the local
//! pipeline and by tests; they keep the same contracts as the durable adapters.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use medic_core::AppId;
use medic_core::Application;
use medic_core::decision::Decision;
use medic_core::incident::{Attempt, History, Outcome};
use medic_core::keys::IdempotencyKey;
use medic_core::keys::IncidentKey;
use medic_core::permit::Permit;
use medic_core::ports::{Claim, Clock, EscalationError, HumanActions, IncidentChannel, IncidentStore, OutageBoard, StoreError};
use medic_core::timeline::TimelineEvent;

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// The clock a store reads: the wall clock, unless a test gives it its own (`with_clock`), so
/// tests on the twins can pin time as they do the handlers'.
#[derive(Clone)]
pub struct SharedClock(std::sync::Arc<dyn Clock>);

impl std::fmt::Debug for SharedClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedClock({})", self.0.now())
    }
}

impl Default for SharedClock {
    fn default() -> Self {
        Self(std::sync::Arc::new(SystemClock))
    }
}

impl SharedClock {
    pub fn new(clock: impl Clock + 'static) -> Self {
        Self(std::sync::Arc::new(clock))
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.0.now()
    }
}

#[derive(Debug, Clone)]
struct Record {
    app: AppId,
    incident: IncidentKey,
    attempt: Attempt,
    done: bool,
    /// Set when the incident closes (`ACTION_RETENTION` later), cleared when it opens again.
    expires_at: Option<DateTime<Utc>>,
}

impl Record {
    fn expired(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }
}

/// One incident's timeline: events by id, each with its expiry.
type Timeline = std::collections::BTreeMap<String, (TimelineEvent, Option<DateTime<Utc>>)>;

#[derive(Default)]
struct Inner {
    open: HashMap<AppId, IncidentKey>,
    records: HashMap<IdempotencyKey, Record>,
    /// Decisions by time and app, kept [`medic_core::record::DEFAULT_RETENTION`].
    decisions: std::collections::BTreeMap<(DateTime<Utc>, AppId), medic_core::record::DecisionRecord>,
    /// Timelines, by incident then event id, with their expiry: `ACTION_RETENTION` after the
    /// event, moved to that long after the close when the incident closes.
    events: HashMap<String, Timeline>,
}

/// Incidents and idempotency records in a map.
#[derive(Default)]
pub struct MemoryIncidentStore {
    inner: Mutex<Inner>,
    clock: SharedClock,
}

impl MemoryIncidentStore {
    /// A twin that reads `clock` instead of the wall clock.
    pub fn with_clock(clock: impl Clock + 'static) -> Self {
        Self { clock: SharedClock::new(clock), ..Self::default() }
    }
}

impl MemoryIncidentStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl IncidentStore for MemoryIncidentStore {
    async fn history(&self, app: &AppId) -> Result<History, StoreError> {
        let inner = self.lock();
        let Some(incident) = inner.open.get(app).cloned() else { return Ok(History::default()) };
        let now = self.clock.now();
        let mut attempts: Vec<Attempt> = inner
            .records
            .values()
            .filter(|r| r.app == *app && r.incident == incident && !r.expired(now))
            .map(|r| r.attempt.clone())
            .collect();
        attempts.sort_by_key(|a| a.at);
        Ok(History { incident: Some(incident), attempts })
    }

    async fn claim(&self, app: &AppId, incident: &IncidentKey, attempt: &Attempt, in_progress_for: Duration) -> Result<Claim, StoreError> {
        let key = attempt
            .idempotency_key
            .clone()
            .ok_or_else(|| StoreError::invalid("an attempt without an idempotency key cannot be claimed"))?;
        let mut inner = self.lock();
        if let Some(existing) = inner.records.get(&key).filter(|r| !r.expired(attempt.at)) {
            if existing.done {
                return Ok(Claim::AlreadyDone(existing.attempt.outcome));
            }
            let until = existing.attempt.at + chrono::Duration::from_std(in_progress_for).unwrap_or_default();
            if attempt.at < until {
                return Ok(Claim::Held { until });
            }
        }
        if inner.open.insert(app.to_owned(), incident.clone()).as_ref() != Some(incident) {
            // Opening (again): the incident's earlier actions are kept for its life.
            for r in inner.records.values_mut().filter(|r| r.app == *app && &r.incident == incident && !r.expired(attempt.at)) {
                r.expires_at = None;
            }
        }
        inner.records.insert(
            key,
            Record {
                app: app.to_owned(),
                incident: incident.clone(),
                attempt: Attempt { outcome: attempt.outcome.while_claimed(), ..attempt.clone() },
                done: false,
                expires_at: None,
            },
        );
        Ok(Claim::Granted)
    }

    async fn complete(&self, _app: &AppId, key: &IdempotencyKey, outcome: Outcome) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let record = inner.records.get_mut(key).ok_or_else(|| StoreError::invalid(format!("no claim for {key}")))?;
        record.attempt.outcome = outcome;
        record.done = true;
        Ok(())
    }

    async fn mark_reached(&self, _app: &AppId, key: &IdempotencyKey) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let record = inner.records.get_mut(key).filter(|r| !r.done);
        let record = record.ok_or_else(|| StoreError::invalid(format!("no claim in progress for {key}")))?;
        record.attempt.outcome = Outcome::Reached;
        Ok(())
    }

    async fn release(&self, _app: &AppId, key: &IdempotencyKey) -> Result<(), StoreError> {
        self.lock().records.retain(|k, r| k != key || r.done);
        Ok(())
    }

    async fn close(&self, app: &AppId, at: DateTime<Utc>) -> Result<(), StoreError> {
        let mut inner = self.lock();
        if let Some(incident) = inner.open.remove(app) {
            let expires = at + chrono::Duration::from_std(medic_core::incident::ACTION_RETENTION).unwrap_or_default();
            for r in inner.records.values_mut().filter(|r| r.app == *app && r.incident == incident) {
                r.expires_at = Some(expires);
            }
            for (_, expiry) in inner.events.entry(incident.id()).or_default().values_mut() {
                *expiry = (*expiry).max(Some(expires));
            }
        }
        // Expired records go, as TTL deletes them in DynamoDB.
        inner.records.retain(|_, r| !r.expired(at));
        for events in inner.events.values_mut() {
            events.retain(|_, (_, expiry)| expiry.is_none_or(|e| e > at));
        }
        Ok(())
    }

    async fn open_incidents(&self) -> Result<Vec<AppId>, StoreError> {
        let mut apps: Vec<AppId> = self.lock().open.keys().cloned().collect();
        apps.sort();
        Ok(apps)
    }

    /// Kept nowhere: notes are for `medic incidents`, which reads SQLite or DynamoDB, never this.
    async fn note_decision(
        &self,
        _app: &AppId,
        _incident: &IncidentKey,
        _note: &medic_core::incident::DecisionNote,
    ) -> Result<(), StoreError> {
        Ok(())
    }

    async fn record_decision(&self, record: &medic_core::record::DecisionRecord) -> Result<(), StoreError> {
        let oldest = self.clock.now() - chrono::Duration::from_std(medic_core::record::DEFAULT_RETENTION).unwrap_or_default();
        let mut inner = self.lock();
        inner.decisions.retain(|(at, _), _| *at >= oldest);
        inner.decisions.entry((record.decided_at(), record.decision.app.clone())).or_insert_with(|| record.clone());
        Ok(())
    }

    async fn append_event(&self, event: &TimelineEvent) -> Result<bool, StoreError> {
        let written = {
            let mut inner = self.lock();
            let expiry = event.at + chrono::Duration::from_std(medic_core::incident::ACTION_RETENTION).unwrap_or_default();
            match inner.events.entry(event.incident_id.clone()).or_default().entry(event.id.clone()) {
                std::collections::btree_map::Entry::Occupied(_) => Ok(false),
                std::collections::btree_map::Entry::Vacant(slot) => {
                    slot.insert((event.clone(), Some(expiry)));
                    Ok(true)
                }
            }
        };
        crate::audit::audit_event(event, &written);
        written
    }

    async fn timeline(&self, app: &AppId, incident_id: &str) -> Result<Vec<TimelineEvent>, StoreError> {
        let inner = self.lock();
        let mut events: Vec<TimelineEvent> =
            inner.events.get(incident_id).into_iter().flat_map(|e| e.values()).map(|(e, _)| e.clone()).filter(|e| e.app == *app).collect();
        events.sort_by_key(|e| (e.at, e.kind));
        Ok(events)
    }
}

impl MemoryIncidentStore {
    /// The decisions recorded and still kept, oldest first (what `IncidentLedger::decisions`
    /// answers for the stores that have a ledger).
    pub fn decisions(&self) -> Vec<medic_core::record::DecisionRecord> {
        self.lock().decisions.values().cloned().collect()
    }
}

/// An escalator that logs what it was asked to escalate, and remembers it unless built with
/// [`LogEscalator::forgetful`] (a long-lived function must not grow without bound).
#[derive(Default)]
pub struct LogEscalator {
    sent: Mutex<Vec<(AppId, Decision)>>,
    alerts: Mutex<Vec<String>>,
    outages: Mutex<Vec<medic_core::fleet::OutageView>>,
    reports: Mutex<Vec<medic_core::report::Report>>,
    forgetful: bool,
    /// The escalation is shown by the caller's own report (`medic sweep`'s row): logged at info,
    /// not as a warning that repeats the row.
    reported: bool,
}

impl LogEscalator {
    /// Logs only; keeps nothing in memory.
    pub fn forgetful() -> Self {
        Self { forgetful: true, ..Self::default() }
    }

    /// For a caller whose report shows every escalation already (the newcomer review: a sweep's
    /// WARN lines, one per escalated row, looked like errors and repeated the table).
    pub fn reported() -> Self {
        Self { reported: true, ..Self::default() }
    }

    pub fn escalations(&self) -> Vec<(AppId, Decision)> {
        self.sent.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn alerts(&self) -> Vec<String> {
        self.alerts.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Every outage view told, in order (one per cause per sweep).
    pub fn outages(&self) -> Vec<medic_core::fleet::OutageView> {
        self.outages.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Every weekly report told, in order.
    pub fn reports(&self) -> Vec<medic_core::report::Report> {
        self.reports.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl IncidentChannel for LogEscalator {
    /// Log lines have no buttons: nobody can approve a proposal.
    fn takes_approvals(&self) -> bool {
        false
    }

    async fn escalate(&self, _: &Permit, app: &Application, decision: &Decision) -> Result<(), EscalationError> {
        let key = decision.idempotency_key.as_ref().map(ToString::to_string).unwrap_or_default();
        if self.reported {
            tracing::info!(app = %app.id(), failure_mode = %decision.failure_mode, key, reason = %decision.reason, "escalation");
        } else {
            tracing::warn!(app = %app.id(), failure_mode = %decision.failure_mode, key, reason = %decision.reason, "escalation");
        }
        if !self.forgetful {
            self.sent.lock().unwrap_or_else(|e| e.into_inner()).push((app.id(), decision.clone()));
        }
        Ok(())
    }

    async fn alert(&self, _: &Permit, summary: &str) -> Result<(), EscalationError> {
        tracing::error!(summary, "service alert");
        if !self.forgetful {
            self.alerts.lock().unwrap_or_else(|e| e.into_inner()).push(summary.to_owned());
        }
        Ok(())
    }

    async fn resolve(&self, _: &Permit, app: &AppId, decision: &Decision) -> Result<(), EscalationError> {
        tracing::info!(app = %app, reason = %decision.reason, "resolved");
        Ok(())
    }

    /// Nothing: the audit log already has a line per event ([`crate::audit::audit_event`]).
    async fn tell_timeline(&self, _: &Permit, _: &medic_core::timeline::ThreadReply<'_>) -> Result<(), EscalationError> {
        Ok(())
    }

    /// One log line per row of trouble: the log has no week to be told once in, and a retried
    /// run logging the report again costs nothing.
    async fn report(&self, _: &Permit, report: &medic_core::report::Report, now: DateTime<Utc>) -> Result<(), EscalationError> {
        tracing::info!(decisions = report.decisions, rows = report.rows.len(), since = %report.since, %now, "weekly shadow report");
        for row in &report.rows {
            tracing::info!(failure_mode = %row.failure_mode, project = %row.project, decisions = row.decisions, apps = row.apps, would_change = row.would_change, would_escalate = row.would_escalate, next = ?row.next, "weekly shadow report row");
        }
        if !self.forgetful {
            self.reports.lock().unwrap_or_else(|e| e.into_inner()).push(report.clone());
        }
        Ok(())
    }
}

impl OutageBoard for LogEscalator {
    async fn outage(&self, _: &Permit, view: &medic_core::fleet::OutageView) -> Result<(), EscalationError> {
        tracing::error!(cause = %view.scope, covered = view.covered, listed = view.listed, state = ?view.state, released = view.released, eta_secs = view.eta_secs, overdue = view.overdue, "fleet outage");
        if !self.forgetful {
            self.outages.lock().unwrap_or_else(|e| e.into_inner()).push(view.clone());
        }
        Ok(())
    }

    /// Remembers nothing when forgetful (the functions' log), so nothing is told as over there.
    async fn outages_ended(&self, _: &Permit, current: &[String]) -> Result<usize, EscalationError> {
        let mut outages = self.outages.lock().unwrap_or_else(|e| e.into_inner());
        let mut last: std::collections::BTreeMap<String, medic_core::fleet::OutageView> = Default::default();
        for view in outages.iter() {
            last.insert(view.key(), view.clone());
        }
        let ended: Vec<medic_core::fleet::OutageView> = last
            .into_iter()
            .filter(|(key, view)| !current.contains(key) && view.state != medic_core::fleet::WaveState::Recovered)
            .map(|(_, view)| view.recovered())
            .collect();
        for view in &ended {
            tracing::warn!(cause = %view.scope, covered = view.covered, "fleet outage over");
        }
        outages.extend(ended.iter().cloned());
        Ok(ended.len())
    }
}

impl HumanActions for LogEscalator {
    /// A log line offers no buttons, so no id stands for anything.
    async fn human_action(&self, _id: &str) -> Result<Option<medic_core::human_action::HumanActionRequest>, EscalationError> {
        Ok(None)
    }

    async fn record_human_action(
        &self,
        _: &Permit,
        request: &medic_core::human_action::HumanActionRequest,
        by: &str,
        outcome: &medic_core::human_action::HumanActionOutcome,
    ) -> Result<(), EscalationError> {
        tracing::info!(app = %request.app.id(), by, summary = %outcome.summary, "human action");
        Ok(())
    }
}

/// A sighting's first time and its expiry.
type Sighting = (DateTime<Utc>, DateTime<Utc>);

/// Dedupe records in a map, with expiry, and work items' in-progress leases.
#[derive(Default)]
pub struct MemoryDedupe {
    seen: Mutex<HashMap<String, DateTime<Utc>>>,
    clock: SharedClock,
    sightings: Mutex<HashMap<String, Sighting>>,
    /// Work items being handled: key → (owner, lease end).
    leases: Mutex<HashMap<String, (String, DateTime<Utc>)>>,
}

impl MemoryDedupe {
    /// A twin that reads `clock` instead of the wall clock.
    pub fn with_clock(clock: impl Clock + 'static) -> Self {
        Self { clock: SharedClock::new(clock), ..Self::default() }
    }
}

fn after(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

impl medic_core::ports::MarkerStore for MemoryDedupe {
    async fn first_sighting(&self, marker: &medic_core::keys::Marker, ttl: Duration) -> Result<medic_core::ports::Seen, StoreError> {
        let dedupe_key = marker.as_str();
        let now = self.clock.now();
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        match seen.get(dedupe_key) {
            Some(expires) if *expires > now => Ok(medic_core::ports::Seen::Duplicate),
            _ => {
                seen.insert(dedupe_key.to_owned(), now + chrono::Duration::from_std(ttl).unwrap_or_default());
                Ok(medic_core::ports::Seen::New)
            }
        }
    }

    async fn forget(&self, marker: &medic_core::keys::Marker) -> Result<(), StoreError> {
        let dedupe_key = marker.as_str();
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).remove(dedupe_key);
        self.sightings.lock().unwrap_or_else(|e| e.into_inner()).remove(dedupe_key);
        Ok(())
    }

    async fn sighted(&self, marker: &medic_core::keys::Marker, ttl: Duration) -> Result<DateTime<Utc>, StoreError> {
        let key = marker.as_str();
        let now = self.clock.now();
        let mut sightings = self.sightings.lock().unwrap_or_else(|e| e.into_inner());
        let first = match sightings.get(key) {
            Some((first, expires)) if *expires > now => *first,
            _ => now,
        };
        sightings.insert(key.to_owned(), (first, now + after(ttl)));
        Ok(first)
    }

    async fn mark(&self, marker: &medic_core::keys::Marker, ttl: Duration) -> Result<(), StoreError> {
        let dedupe_key = marker.as_str();
        let until = self.clock.now() + chrono::Duration::from_std(ttl).unwrap_or_default();
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).insert(dedupe_key.to_owned(), until);
        Ok(())
    }

    async fn marked(&self, keys: &[medic_core::keys::Marker]) -> Result<std::collections::BTreeSet<medic_core::keys::Marker>, StoreError> {
        let now = self.clock.now();
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        Ok(keys.iter().filter(|k| seen.get(k.as_str()).is_some_and(|expires| *expires > now)).cloned().collect())
    }
}

impl medic_core::ports::DeliveryLeases for MemoryDedupe {
    async fn begin(&self, marker: &medic_core::keys::Marker, owner: &str, lease: Duration) -> Result<medic_core::ports::Begun, StoreError> {
        let dedupe_key = marker.as_str();
        use medic_core::ports::Begun;
        let now = self.clock.now();
        // One lock order everywhere: leases, then seen.
        let mut leases = self.leases.lock().unwrap_or_else(|e| e.into_inner());
        if self.seen.lock().unwrap_or_else(|e| e.into_inner()).get(dedupe_key).is_some_and(|expires| *expires > now) {
            return Ok(Begun::Done);
        }
        match leases.get(dedupe_key) {
            Some((holder, until)) if holder != owner && *until > now => Ok(Begun::InProgress { until: *until }),
            _ => {
                leases.insert(dedupe_key.to_owned(), (owner.to_owned(), now + after(lease)));
                Ok(Begun::Owned)
            }
        }
    }

    async fn end(&self, marker: &medic_core::keys::Marker, owner: &str, handled: bool, ttl: Duration) -> Result<(), StoreError> {
        let dedupe_key = marker.as_str();
        let mut leases = self.leases.lock().unwrap_or_else(|e| e.into_inner());
        if leases.get(dedupe_key).is_some_and(|(holder, _)| holder != owner) {
            return Ok(());
        }
        leases.remove(dedupe_key);
        if handled {
            self.seen.lock().unwrap_or_else(|e| e.into_inner()).insert(dedupe_key.to_owned(), self.clock.now() + after(ttl));
        }
        Ok(())
    }
}

/// Per-app locks in a map, with expiry.
#[derive(Default)]
pub struct MemoryLock {
    held: Mutex<HashMap<AppId, (String, DateTime<Utc>)>>,
    clock: SharedClock,
}

impl MemoryLock {
    /// A twin that reads `clock` instead of the wall clock.
    pub fn with_clock(clock: impl Clock + 'static) -> Self {
        Self { clock: SharedClock::new(clock), ..Self::default() }
    }
}

impl medic_core::ports::AppLock for MemoryLock {
    async fn try_lock(&self, app: &AppId, owner: &str, ttl: Duration) -> Result<bool, StoreError> {
        let now = self.clock.now();
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        match held.get(app) {
            Some((holder, until)) if holder != owner && *until > now => Ok(false),
            _ => {
                held.insert(app.to_owned(), (owner.to_owned(), now + chrono::Duration::from_std(ttl).unwrap_or_default()));
                Ok(true)
            }
        }
    }

    async fn unlock(&self, app: &AppId, owner: &str) -> Result<(), StoreError> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.get(app).is_some_and(|(holder, _)| holder == owner) {
            held.remove(app);
        }
        Ok(())
    }
}

/// A work queue in memory: items become visible after their delay. Used by `medic serve`.
#[derive(Default)]
pub struct MemoryQueue {
    items: Mutex<Vec<(DateTime<Utc>, medic_core::event::WorkItem)>>,
    clock: SharedClock,
}

impl MemoryQueue {
    /// A twin that reads `clock` instead of the wall clock.
    pub fn with_clock(clock: impl Clock + 'static) -> Self {
        Self { clock: SharedClock::new(clock), ..Self::default() }
    }
}

impl MemoryQueue {
    /// Every item on the queue, ready or delayed, in the order queued (for inspection: what a
    /// requeue carried).
    pub fn items(&self) -> Vec<medic_core::event::WorkItem> {
        self.items.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(_, item)| item.clone()).collect()
    }

    /// Takes up to `max` items whose delay has passed.
    pub fn take_ready(&self, max: usize) -> Vec<medic_core::event::WorkItem> {
        let now = self.clock.now();
        let mut items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        items.sort_by_key(|(at, _)| *at);
        let ready = items.iter().take_while(|(at, _)| *at <= now).count().min(max);
        items.drain(..ready).map(|(_, item)| item).collect()
    }

    pub fn len(&self) -> usize {
        self.items.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl medic_core::ports::WorkQueue for MemoryQueue {
    async fn enqueue(&self, item: &medic_core::event::WorkItem, delay: Duration) -> Result<(), medic_core::ports::QueueError> {
        if delay > Duration::from_secs(900) {
            return Err(medic_core::ports::QueueError::invalid(format!("delay {}s exceeds the 900 s SQS allows", delay.as_secs())));
        }
        let at = self.clock.now() + chrono::Duration::from_std(delay).unwrap_or_default();
        self.items.lock().unwrap_or_else(|e| e.into_inner()).push((at, item.clone()));
        Ok(())
    }

    async fn enqueue_batch(&self, items: &[medic_core::event::WorkItem]) -> Result<(), medic_core::ports::QueueError> {
        let now = self.clock.now();
        self.items.lock().unwrap_or_else(|e| e.into_inner()).extend(items.iter().map(|i| (now, i.clone())));
        Ok(())
    }
}

/// The shared token buckets in this process: the twin of the state table's (`medic serve`, the
/// storm benchmark's workers, tests).
#[derive(Default)]
pub struct MemoryBuckets {
    buckets: Mutex<HashMap<medic_core::ladder::BudgetKind, medic_core::budget::BucketState>>,
}

impl medic_core::ports::BucketStore for MemoryBuckets {
    async fn read_bucket(&self, kind: medic_core::ladder::BudgetKind) -> Result<Option<medic_core::budget::BucketState>, StoreError> {
        Ok(self.buckets.lock().expect("bucket lock").get(&kind).copied())
    }

    async fn replace_bucket(
        &self,
        kind: medic_core::ladder::BudgetKind,
        read: Option<&medic_core::budget::BucketState>,
        next: &medic_core::budget::BucketState,
    ) -> Result<bool, StoreError> {
        let mut buckets = self.buckets.lock().expect("bucket lock");
        if buckets.get(&kind).map(|b| b.version) != read.map(|r| r.version) {
            return Ok(false);
        }
        buckets.insert(kind, *next);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use medic_core::keys::Marker;
    use std::sync::Arc;

    use medic_core::ports::{AppLock, DedupeStore, WorkQueue};

    use super::*;
    use crate::switch::ManualClock;

    /// The twins read the clock they are given, so a test moves time past a TTL, a lease or a
    /// delay instead of waiting for it.
    #[tokio::test]
    async fn the_twins_read_the_clock_they_are_given() {
        let clock = Arc::new(ManualClock::new("2026-12-07T12:00:00Z".parse().unwrap()));
        let dedupe = MemoryDedupe::with_clock(Arc::clone(&clock));
        dedupe.mark(&Marker::for_tests("k"), Duration::from_secs(3600)).await.unwrap();
        assert!(dedupe.marked(&[Marker::for_tests("k")]).await.unwrap().contains(&Marker::for_tests("k")));
        clock.advance(Duration::from_secs(7200));
        assert!(dedupe.marked(&[Marker::for_tests("k")]).await.unwrap().is_empty(), "past its TTL on the given clock");

        let lock = MemoryLock::with_clock(Arc::clone(&clock));
        let app = AppId::new("argocd", "web");
        assert!(lock.try_lock(&app, "a", Duration::from_secs(60)).await.unwrap());
        assert!(!lock.try_lock(&app, "b", Duration::from_secs(60)).await.unwrap());
        clock.advance(Duration::from_secs(61));
        assert!(lock.try_lock(&app, "b", Duration::from_secs(60)).await.unwrap(), "a dead holder's lock ran out");

        let queue = MemoryQueue::with_clock(Arc::clone(&clock));
        let app = medic_core::event::AppRef { name: "web".into(), namespace: "argocd".into(), project: None };
        let item =
            medic_core::event::WorkItem::for_app(medic_core::event::WorkKind::Recheck, app, medic_core::Trigger::sweep(), "w", clock.now());
        queue.enqueue(&item, Duration::from_secs(60)).await.unwrap();
        assert!(queue.take_ready(10).is_empty());
        clock.advance(Duration::from_secs(61));
        assert_eq!(queue.take_ready(10).len(), 1);
    }
}

//! In-memory twins of the store and escalator ports, and the system clock. Used by the local
//! pipeline and by tests; they keep the same contracts as the durable adapters.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use medic_core::Application;
use medic_core::decision::Decision;
use medic_core::idempotency::IdempotencyKey;
use medic_core::incident::{Attempt, History, IncidentKey, Outcome};
use medic_core::ports::{Claim, Clock, EscalationError, Escalator, IncidentStore, StoreError};

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

#[derive(Debug, Clone)]
struct Record {
    app: String,
    incident: IncidentKey,
    attempt: Attempt,
    done: bool,
}

#[derive(Default)]
struct Inner {
    open: HashMap<String, IncidentKey>,
    records: HashMap<IdempotencyKey, Record>,
}

/// Incidents and idempotency records in a map.
#[derive(Default)]
pub struct MemoryIncidentStore {
    inner: Mutex<Inner>,
}

impl MemoryIncidentStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl IncidentStore for MemoryIncidentStore {
    async fn history(&self, app: &str) -> Result<History, StoreError> {
        let inner = self.lock();
        let Some(incident) = inner.open.get(app).cloned() else { return Ok(History::default()) };
        let mut attempts: Vec<Attempt> =
            inner.records.values().filter(|r| r.app == app && r.incident == incident).map(|r| r.attempt.clone()).collect();
        attempts.sort_by_key(|a| a.at);
        Ok(History { incident: Some(incident), attempts })
    }

    async fn claim(&self, app: &str, incident: &IncidentKey, attempt: &Attempt, in_progress_for: Duration) -> Result<Claim, StoreError> {
        let key =
            attempt.idempotency_key.clone().ok_or_else(|| StoreError("an attempt without an idempotency key cannot be claimed".into()))?;
        let mut inner = self.lock();
        if let Some(existing) = inner.records.get(&key) {
            if existing.done {
                return Ok(Claim::AlreadyDone(existing.attempt.outcome));
            }
            let until = existing.attempt.at + chrono::Duration::from_std(in_progress_for).unwrap_or_default();
            if attempt.at < until {
                return Ok(Claim::Held { until });
            }
        }
        inner.open.insert(app.to_owned(), incident.clone());
        inner.records.insert(key, Record { app: app.to_owned(), incident: incident.clone(), attempt: attempt.clone(), done: false });
        Ok(Claim::Granted)
    }

    async fn complete(&self, _app: &str, key: &IdempotencyKey, outcome: Outcome) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let record = inner.records.get_mut(key).ok_or_else(|| StoreError(format!("no claim for {key}")))?;
        record.attempt.outcome = outcome;
        record.done = true;
        Ok(())
    }

    async fn release(&self, _app: &str, key: &IdempotencyKey) -> Result<(), StoreError> {
        self.lock().records.retain(|k, r| k != key || r.done);
        Ok(())
    }

    async fn close(&self, app: &str, _at: DateTime<Utc>) -> Result<(), StoreError> {
        self.lock().open.remove(app);
        Ok(())
    }

    async fn open_incidents(&self) -> Result<Vec<String>, StoreError> {
        let mut apps: Vec<String> = self.lock().open.keys().cloned().collect();
        apps.sort();
        Ok(apps)
    }
}

/// An escalator that logs and remembers what it was asked to escalate (no Slack yet).
#[derive(Default)]
pub struct LogEscalator {
    sent: Mutex<Vec<(String, Decision)>>,
    alerts: Mutex<Vec<String>>,
}

impl LogEscalator {
    pub fn escalations(&self) -> Vec<(String, Decision)> {
        self.sent.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn alerts(&self) -> Vec<String> {
        self.alerts.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Escalator for LogEscalator {
    async fn escalate(&self, app: &Application, decision: &Decision) -> Result<(), EscalationError> {
        let key = decision.idempotency_key.as_ref().map(ToString::to_string).unwrap_or_default();
        tracing::info!(app = %app.qualified_name(), failure_mode = %decision.failure_mode, key, reason = %decision.reason, "escalation");
        self.sent.lock().unwrap_or_else(|e| e.into_inner()).push((app.qualified_name(), decision.clone()));
        Ok(())
    }

    async fn alert(&self, summary: &str) -> Result<(), EscalationError> {
        tracing::error!(summary, "service alert");
        self.alerts.lock().unwrap_or_else(|e| e.into_inner()).push(summary.to_owned());
        Ok(())
    }
}

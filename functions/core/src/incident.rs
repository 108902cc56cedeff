//! Incidents: one episode of trouble for one app, and what Argo Medic already did about it.
//!
//! An incident opens when the app leaves Synced+Healthy or an operation fails, and closes when the
//! app is Synced+Healthy again. It is identified by the Argo CD instance, the app, the revision and
//! the moment the episode began, so the same episode seen twice (a redelivered notification, the
//! sweeper and a webhook racing) maps to the same incident, and a new episode to a new one.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use crate::catalogue::Rung;
use crate::idempotency::{IdempotencyKey, digest};

/// The identity of one incident.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IncidentKey {
    /// The Argo CD instance id from the configuration.
    pub instance: String,
    /// `namespace/name`.
    pub app: String,
    /// The revision the app was at when the episode began.
    pub revision: String,
    /// When the episode began: the failed operation's start, or the health/sync transition.
    /// `None` when the Application carries no timestamp for it.
    pub began_at: Option<DateTime<Utc>>,
}

impl IncidentKey {
    /// A short stable id, `inc-` and 20 hex digits of SHA-256 over the four parts.
    pub fn id(&self) -> String {
        let began = self.began_at.map_or_else(|| "-".to_owned(), |t| t.to_rfc3339_opts(SecondsFormat::Secs, true));
        format!("inc-{}", &digest(&["argo-medic/incident/v1", &self.instance, &self.app, &self.revision, &began])[..20])
    }

    /// The idempotency key of taking `rung` in this incident.
    pub fn key_for(&self, rung: Rung) -> IdempotencyKey {
        IdempotencyKey::derive(self, rung)
    }

    /// The idempotency key of the `attempt`-th try of `rung` in this incident (1 for the first):
    /// a rung Argo CD refused (another operation running, a sync window) is tried again under a
    /// fresh key, since its first key is on record as done.
    pub fn key_for_attempt(&self, rung: Rung, attempt: u32) -> IdempotencyKey {
        IdempotencyKey::derive_attempt(self, rung, attempt)
    }
}

/// How an attempted action turned out, as the actor recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Requested; its effect has not been judged yet.
    #[default]
    Requested,
    /// Verified to have taken effect (refresh moved reconciledAt, sync operation started).
    Succeeded,
    /// Taken, but nothing changed.
    NoEffect,
    /// Argo CD refused or the call failed for good.
    Failed,
    /// Argo CD refused the sync: `cannot sync: blocked by sync window`.
    SyncWindowBlocked,
    /// Argo CD refused the sync: `another operation is already in progress`.
    OperationInProgress,
}

impl Outcome {
    /// Argo CD refused the action for a reason that passes (another operation, a sync window):
    /// the rung was not taken and may be tried again later.
    pub fn is_refusal(self) -> bool {
        matches!(self, Outcome::SyncWindowBlocked | Outcome::OperationInProgress)
    }
}

/// One rung taken in an incident.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    pub rung: Rung,
    pub at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<IdempotencyKey>,
    #[serde(default)]
    pub outcome: Outcome,
}

/// What Argo Medic already did about the app's open incident.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct History {
    /// The open incident, if any.
    pub incident: Option<IncidentKey>,
    /// Rungs taken in that incident, oldest first.
    pub attempts: Vec<Attempt>,
}

impl History {
    pub fn has_taken(&self, rung: Rung) -> bool {
        self.attempts.iter().any(|a| a.rung == rung && !a.outcome.is_refusal())
    }

    /// How often Argo CD refused `rung` in this incident (another operation, a sync window).
    pub fn refusals(&self, rung: Rung) -> usize {
        self.attempts.iter().filter(|a| a.rung == rung && a.outcome.is_refusal()).count()
    }

    /// When Argo CD first refused `rung` in this incident.
    pub fn first_refusal(&self, rung: Rung) -> Option<DateTime<Utc>> {
        self.attempts.iter().filter(|a| a.rung == rung && a.outcome.is_refusal()).map(|a| a.at).min()
    }

    pub fn last(&self) -> Option<&Attempt> {
        self.attempts.iter().max_by_key(|a| a.at)
    }

    /// Actions that called Argo CD (refresh, hard refresh, sync) in this incident.
    pub fn actions_taken(&self) -> usize {
        self.attempts.iter().filter(|a| a.rung != Rung::Escalate && !a.outcome.is_refusal()).count()
    }

    /// When a human was told. Only a completed escalation counts: a claim still in progress
    /// (outcome `Requested`) may belong to a worker that died before posting, and counting it
    /// would silence the incident for good; its claim expires and the escalation runs again
    /// (posting is safe to repeat: the escalator never tells twice).
    pub fn escalated_at(&self) -> Option<DateTime<Utc>> {
        self.attempts.iter().filter(|a| a.rung == Rung::Escalate && a.outcome != Outcome::Requested).map(|a| a.at).min()
    }
}

//! Incidents: one episode of trouble for one app, and what Argo Medic already did about it.
//!
//! An incident opens when the app leaves Synced+Healthy or an operation fails, and closes when the
//! app is Synced+Healthy again. It is identified by the Argo CD instance, the app, the revision and
//! the moment the episode began, so the same episode seen twice (a redelivered notification, the
//! sweeper and a webhook racing) maps to the same incident, and a new episode to a new one.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::app::AppId;
use crate::keys::IdempotencyKey;
use crate::keys::IncidentKey;
use crate::ladder::Rung;

/// How long an incident's action records are kept once it has closed. While it is open they
/// are kept, however long it lasts: they are its ladder, and losing them would start it again
/// (a second escalation, a second Slack parent). Every `IncidentStore` keeps this rule, and
/// treats an expired record as absent even where its deletion lags (DynamoDB's TTL).
pub const ACTION_RETENTION: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// How an attempted action turned out, as the actor recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Requested; its effect has not been judged yet.
    #[default]
    Requested,
    /// A refresh seen to reach Argo CD (its answer was lost; the API server had set the refresh
    /// annotation, and the controller had not yet taken it), still in progress: the run that
    /// resumes it credits the controller's next compare to it. A claim still `Requested` cannot
    /// be: nothing in Argo CD says which refresh a compare answered (the periodic one, a person's,
    /// a compare as an outage began), so that refresh is requested again.
    Reached,
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
    /// A run that took over an unfinished claim could not tell whether the call went out: the key
    /// is gone from Argo CD, but it shows a deployment started after the claim. Never sent again:
    /// the rung counts as taken and the ladder moves on to a person, with that evidence.
    Unknown,
    /// A sync Argo CD accepted, not yet seen started: the app's next read judges it (an operation
    /// carrying its key started: `Succeeded`; no trace of it: sent once more under the same key).
    /// Argo CD can accept a sync and never run it (argoproj/argo-cd#27133).
    Sent,
    /// A sync sent a second time under the same key after the first left no trace; judged on the
    /// next read too. No trace again: `NoEffect`, and the ladder moves on to a person.
    Resent,
    /// Not sent: Argo Medic found the sync would move the app to a revision older than the one
    /// deployed last (the commits' dates). The rung counts as taken and a person is told at once.
    Withheld,
}

impl Outcome {
    /// True once the actor recorded how the action turned out. A claim still `Requested` may
    /// belong to a run that died before its call: it is resumed, never counted as taken.
    pub fn is_complete(self) -> bool {
        !matches!(self, Outcome::Requested | Outcome::Reached)
    }

    /// The outcome's name, as it is stored (`succeeded`, `no_effect`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Requested => "requested",
            Outcome::Reached => "reached",
            Outcome::Succeeded => "succeeded",
            Outcome::NoEffect => "no_effect",
            Outcome::Failed => "failed",
            Outcome::SyncWindowBlocked => "sync_window_blocked",
            Outcome::OperationInProgress => "operation_in_progress",
            Outcome::Unknown => "unknown",
            Outcome::Sent => "sent",
            Outcome::Resent => "resent",
            Outcome::Withheld => "withheld",
        }
    }

    /// The outcome a claim in progress is stored with: [`Outcome::Reached`] when a run that
    /// takes over such a claim carries it over, otherwise [`Outcome::Requested`].
    pub fn while_claimed(self) -> Outcome {
        if self.is_complete() { Outcome::Requested } else { self }
    }

    /// A sync accepted and not yet seen started ([`Outcome::Sent`], [`Outcome::Resent`]).
    pub fn awaits_start(self) -> bool {
        matches!(self, Outcome::Sent | Outcome::Resent)
    }

    /// Argo CD refused the action for a reason that passes (another operation, a sync window):
    /// the rung was not taken and may be tried again later.
    pub fn is_refusal(self) -> bool {
        matches!(self, Outcome::SyncWindowBlocked | Outcome::OperationInProgress)
    }
}

/// One rung taken in an incident.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// The rung taken: refresh, hard refresh, sync or escalate.
    pub rung: Rung,
    /// When the decision to take it was made; the claim is dated by it.
    pub at: DateTime<Utc>,
    /// The key the rung was claimed under (a sync carries it in Argo CD's `infos`); `None` when the stored key does not parse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<IdempotencyKey>,
    /// How it turned out; `Requested` while the claim is still in progress.
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
    /// True when `rung` was taken in this incident: completed, and not refused. A claim still in
    /// progress is not taken: its holder may have died before its call, and counting it would
    /// skip the rung for good (the ladder would move on to escalate an action never sent). The
    /// step resumes it instead ([`History::unfinished`]).
    pub fn has_taken(&self, rung: Rung) -> bool {
        self.attempts.iter().any(|a| a.rung == rung && a.outcome.is_complete() && !a.outcome.is_refusal())
    }

    /// The claim under `key` still in progress (outcome `Requested`), if any: a run that took it
    /// and has not recorded how it turned out, perhaps because it died.
    pub fn unfinished(&self, key: &IdempotencyKey) -> Option<&Attempt> {
        self.attempts.iter().find(|a| a.idempotency_key.as_ref() == Some(key) && !a.outcome.is_complete())
    }

    /// A claim still in progress under any key: an action chosen and claimed whose outcome is
    /// not recorded. Whoever ends an item of the app without stepping it (a fleet hold) must not
    /// end this too: unperformed, it is a lost action.
    pub fn pending(&self) -> Option<&Attempt> {
        self.attempts.iter().find(|a| !a.outcome.is_complete())
    }

    /// How often Argo CD refused `rung` in this incident (another operation, a sync window).
    pub fn refusals(&self, rung: Rung) -> usize {
        self.attempts.iter().filter(|a| a.rung == rung && a.outcome.is_refusal()).count()
    }

    /// When Argo CD first refused `rung` in this incident.
    pub fn first_refusal(&self, rung: Rung) -> Option<DateTime<Utc>> {
        self.attempts.iter().filter(|a| a.rung == rung && a.outcome.is_refusal()).map(|a| a.at).min()
    }

    /// This history with the attempt under `key` unfinished again: a sync accepted and dropped
    /// is decided again and resumed under its key, as the claim of a run that died would be.
    pub fn reopened(&self, key: &IdempotencyKey) -> History {
        let mut view = self.clone();
        for a in view.attempts.iter_mut().filter(|a| a.idempotency_key.as_ref() == Some(key)) {
            a.outcome = Outcome::Requested;
        }
        view
    }

    /// The latest attempt of the incident, by time.
    pub fn last(&self) -> Option<&Attempt> {
        self.attempts.iter().max_by_key(|a| a.at)
    }

    /// Actions that called Argo CD (refresh, hard refresh, sync) in this incident.
    pub fn actions_taken(&self) -> usize {
        self.attempts.iter().filter(|a| a.rung != Rung::Escalate && a.outcome.is_complete() && !a.outcome.is_refusal()).count()
    }

    /// When a human was told. Only a completed escalation counts: a claim still in progress
    /// (outcome `Requested`) may belong to a worker that died before posting, and counting it
    /// would silence the incident for good; its claim expires and the escalation runs again
    /// (posting is safe to repeat: the escalator never tells twice).
    pub fn escalated_at(&self) -> Option<DateTime<Utc>> {
        self.attempts.iter().filter(|a| a.rung == Rung::Escalate && a.outcome.is_complete()).map(|a| a.at).min()
    }
}

/// Most evidence lines a [`DecisionNote`] keeps, and the longest value of each (characters): a
/// note lives on the incident's item, which DynamoDB caps at 400 KB.
pub const NOTE_MAX_EVIDENCE: usize = 20;
/// The longest evidence value (and reason) a note keeps, in characters; a longer one is cut and ends in `…`.
pub const NOTE_MAX_VALUE_CHARS: usize = 500;

/// The last decision taken in an open incident, as the stores keep it for operators
/// (`medic incidents show`): what was decided, why, on which evidence, and when to look again.
///
/// Every field has a default and the names are plain strings (not the catalogue's enums), so a
/// note written by any version reads in any other, and records written before notes existed read
/// as "no note".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DecisionNote {
    /// `refresh`, `hard_refresh`, `sync`, `escalate`, `wait`, `none`.
    pub action: String,
    /// The failure mode's id (`hook-failed`).
    pub failure_mode: String,
    /// The app's Argo CD project.
    pub project: String,
    /// The decision's reason, cut to `NOTE_MAX_VALUE_CHARS`.
    pub reason: String,
    /// The decision's evidence: at most `NOTE_MAX_EVIDENCE` lines, each value cut to `NOTE_MAX_VALUE_CHARS`.
    pub evidence: Vec<crate::decision::Evidence>,
    /// For a wait: seconds after `decided_at` when the app is looked at again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_secs: Option<i64>,
    /// What prompted the look (`on-sync-failed`, `sweep`, `slack-action`, ...).
    pub trigger: String,
    /// When the decision was taken.
    pub decided_at: Option<DateTime<Utc>>,
    /// For an action that changes Argo CD: the trust level that applied and what set it
    /// (`propose: trust rule 2 of the policy`); empty otherwise, and in notes written before
    /// levels existed.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub trust: String,
}

impl DecisionNote {
    /// The note of `decision`, made about an app of `project` on `trigger`; evidence is cut to
    /// [`NOTE_MAX_EVIDENCE`] lines of at most [`NOTE_MAX_VALUE_CHARS`] characters.
    pub fn new(decision: &crate::decision::Decision, project: &str, trigger: &str) -> Self {
        let cut = |s: &str| {
            if s.chars().count() <= NOTE_MAX_VALUE_CHARS {
                s.to_owned()
            } else {
                let mut t: String = s.chars().take(NOTE_MAX_VALUE_CHARS - 1).collect();
                t.push('…');
                t
            }
        };
        Self {
            action: decision.action.as_str().to_owned(),
            failure_mode: decision.failure_mode.id().to_owned(),
            project: project.to_owned(),
            reason: cut(&decision.reason),
            evidence: decision
                .evidence
                .iter()
                .take(NOTE_MAX_EVIDENCE)
                .map(|e| crate::decision::Evidence::new(e.field.clone(), cut(&e.value)))
                .collect(),
            retry_after_secs: decision.retry_after_secs,
            trigger: trigger.to_owned(),
            decided_at: Some(decision.decided_at),
            trust: decision.trust.as_ref().map(|t| format!("{}: {}", t.level, t.why)).unwrap_or_default(),
        }
    }
}

/// One incident as a store keeps it, open or recently closed: what `medic incidents` lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncidentRecord {
    /// `namespace/name`.
    pub app: AppId,
    /// The incident's identity: instance, app, revision and when the episode began.
    pub incident: IncidentKey,
    /// When the store opened it (the first claimed action).
    pub opened_at: DateTime<Utc>,
    /// When it closed (the app was Synced and Healthy again, or gone); `None` while open.
    pub closed_at: Option<DateTime<Utc>>,
    /// Rungs claimed in it, oldest first (in progress ones have outcome `requested`).
    pub attempts: Vec<Attempt>,
    /// The last decision noted on it; `None` for incidents written before notes were kept.
    pub last_decision: Option<DecisionNote>,
}

#[cfg(test)]
mod tests {
    use super::Outcome;

    /// The timeline and the CLI name an outcome by `as_str`; the stores by its serde name.
    #[test]
    fn an_outcome_s_name_is_its_stored_name() {
        let all = [
            Outcome::Requested,
            Outcome::Reached,
            Outcome::Succeeded,
            Outcome::NoEffect,
            Outcome::Failed,
            Outcome::SyncWindowBlocked,
            Outcome::OperationInProgress,
            Outcome::Unknown,
            Outcome::Sent,
            Outcome::Resent,
            Outcome::Withheld,
        ];
        for o in all {
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str(), "{o:?}");
        }
        assert!(!Outcome::Reached.is_complete() && Outcome::Reached.while_claimed() == Outcome::Reached);
        assert_eq!(Outcome::Succeeded.while_claimed(), Outcome::Requested);
    }
}

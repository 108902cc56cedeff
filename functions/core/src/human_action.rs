//! A person's action on an incident, as the actuator performs it and the escalator offers and
//! records it: what a button stands for ([`HumanActionRequest`]), how it turned out
//! ([`HumanActionOutcome`]) and the incident's state it moves to ([`IncidentState`]). The Slack
//! messages that show them are the Slack crate's.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use crate::catalogue::FailureMode;
use crate::decision::SyncPlan;
use crate::event::AppRef;
use crate::keys::IdempotencyKey;
use crate::ladder::HumanAction;

/// How far an incident has come, as its parent message shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IncidentState {
    /// Someone acknowledged it and is looking.
    Investigating,
    /// An action a person asked for is under way.
    Remediating,
    /// Argo Medic cannot or must not fix it: a person has to.
    NeedsHuman,
    /// The app is Synced and Healthy again.
    Resolved,
}

impl IncidentState {
    /// The state as the parent message shows it (`Needs a human`).
    pub fn label(self) -> &'static str {
        match self {
            IncidentState::Investigating => "Investigating",
            IncidentState::Remediating => "Remediating",
            IncidentState::NeedsHuman => "Needs a human",
            IncidentState::Resolved => "Resolved",
        }
    }
}

/// The idempotency key of performing the action behind button `action_id` (derived, like every
/// key, in [`IdempotencyKey::for_human_action`]).
pub fn human_action_key(action_id: &str) -> IdempotencyKey {
    IdempotencyKey::for_human_action(action_id)
}

/// What a button stands for, stored under its id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HumanActionRequest {
    /// The button's opaque id.
    pub id: String,
    /// What the button asks for.
    pub action: HumanAction,
    /// The incident the button was offered on.
    pub incident_id: String,
    /// The app of that incident.
    pub app: AppRef,
    /// The failure mode the escalation diagnosed.
    pub failure_mode: FailureMode,
    /// For `sync`: exactly what is requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync: Option<SyncPlan>,
    /// Carried by the sync in Argo CD's `infos`.
    pub idempotency_key: IdempotencyKey,
    /// When the escalation offered the button.
    pub offered_at: DateTime<Utc>,
    /// When the incident's episode began (the decision's `incident.began_at`, which the escalation
    /// shows); absent on buttons offered by earlier releases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incident_began: Option<DateTime<Utc>>,
}

/// How a human action turned out, for the incident's thread and state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HumanActionOutcome {
    /// The action took effect (its button is spent and new buttons are issued).
    pub performed: bool,
    /// The state the incident moves to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<IncidentState>,
    /// One or two sentences for the thread (plain text; escaped when rendered).
    pub summary: String,
    /// For snooze: until when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snoozed_until: Option<DateTime<Utc>>,
}

/// RFC 3339 (seconds) for texts.
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

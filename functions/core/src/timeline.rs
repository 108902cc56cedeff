//! One timeline per incident: an append-only list of what happened to it, for an operator and
//! an auditor (`medic incidents show APP`; the audit log carries the same events). Each event's
//! id is derived from what it records ([`crate::keys::timeline_event_id`]): the notification or
//! look that led to a decision (its delivery's dedupe key), the action claimed, taken and
//! verified (its idempotency key), a person's click (the button). Written again, by a redelivery
//! after a crash or by the run that took a claim over, an event is the same record, so each
//! appears once. The policy never reads the timeline.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::app::AppId;
use crate::keys::IncidentKey;

/// What an event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A notification or a look (sweep, recheck, wave, request) reached the worker.
    Received,
    /// The policy decided: the rule, the action and the trust level it was taken at.
    Decided,
    /// The policy decided to wait and look again.
    Waited,
    /// A freeze held the decision's action.
    Frozen,
    /// An action was claimed under its idempotency key.
    Claimed,
    /// The claimed action was taken, with how it turned out.
    Acted,
    /// Argo CD showed the action's effect (a refresh's compare, a sync's operation).
    Verified,
    /// A person pressed a button.
    Clicked,
    /// The incident ended: Synced and Healthy again, or the app is gone.
    Resolved,
}

impl EventKind {
    /// The kind's name, as the audit log and `-o json` write it.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Received => "received",
            EventKind::Decided => "decided",
            EventKind::Waited => "waited",
            EventKind::Frozen => "frozen",
            EventKind::Claimed => "claimed",
            EventKind::Acted => "acted",
            EventKind::Verified => "verified",
            EventKind::Clicked => "clicked",
            EventKind::Resolved => "resolved",
        }
    }
}

/// One event of an incident's timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineEvent {
    /// Derived from the incident, the kind and what the event records: the same event written
    /// twice is one record.
    pub id: String,
    /// The app (`namespace/name`).
    pub app: AppId,
    /// The incident it belongs to ([`IncidentKey::id`]).
    pub incident_id: String,
    /// When it happened.
    pub at: DateTime<Utc>,
    /// What it records.
    pub kind: EventKind,
    /// One line saying what happened.
    pub what: String,
    /// The person (a Slack user id) who clicked, for a click.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub who: Option<String>,
    /// The action's idempotency key, for a claim, an action and its verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The rule that decided, for a decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The trust level the decision was taken at, for a decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
}

impl TimelineEvent {
    /// An event of `incident`, identified by `natural`: the key of what it records.
    pub fn new(incident: &IncidentKey, kind: EventKind, natural: &str, at: DateTime<Utc>, what: impl Into<String>) -> Self {
        Self::of(&incident.app, &incident.id(), kind, natural, at, what)
    }

    /// An event of the app's incident `incident_id` ([`IncidentKey::id`]; a button carries it).
    pub fn of(app: &AppId, incident_id: &str, kind: EventKind, natural: &str, at: DateTime<Utc>, what: impl Into<String>) -> Self {
        TimelineEvent {
            id: crate::keys::timeline_event_id(incident_id, kind.as_str(), natural),
            app: app.clone(),
            incident_id: incident_id.to_owned(),
            at,
            kind,
            what: what.into(),
            who: None,
            key: None,
            rule: None,
            level: None,
        }
    }

    /// The `received` event of the delivery `arrival`: the item's trigger for `app`, at the time
    /// the item was made (the step's and the held item's alike).
    pub fn received(incident: &IncidentKey, arrival: &Arrival, trigger: &str, app: &AppId) -> Self {
        Self::new(incident, EventKind::Received, &arrival.key, arrival.received_at, format!("{trigger} for {app}"))
    }

    /// The same event naming the person who acted.
    pub fn by(self, who: impl Into<String>) -> Self {
        TimelineEvent { who: Some(who.into()), ..self }
    }

    /// The same event naming the action's idempotency key.
    pub fn keyed(self, key: impl Into<String>) -> Self {
        TimelineEvent { key: Some(key.into()), ..self }
    }

    /// The same event naming the rule and the trust level of its decision.
    pub fn decided_by(self, rule: impl Into<String>, level: Option<String>) -> Self {
        TimelineEvent { rule: Some(rule.into()), level, ..self }
    }
}

/// The delivery a step answers: its dedupe key (the natural key of its `received` and decision
/// events) and when it was enqueued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrival {
    /// The work item's dedupe key.
    pub key: String,
    /// When the item was made (a notification received, a look enqueued).
    pub received_at: DateTime<Utc>,
}

/// Timeline events told as one compact reply in the incident's Slack thread: at the escalation,
/// what came before it (the thread is new then), once under `key`
/// ([`crate::keys::timeline_reply_key`] of the escalation's key). Later events get no reply of
/// their own: a click and the resolution have theirs, and the looks between change nothing.
#[derive(Debug, Clone, Copy)]
pub struct ThreadReply<'a> {
    /// The app.
    pub app: &'a AppId,
    /// The incident whose thread it is ([`IncidentKey::id`]).
    pub incident_id: &'a str,
    /// The reply's once-key.
    pub key: &'a str,
    /// The events, oldest first.
    pub events: &'a [TimelineEvent],
}

/// Whether `events` hold something done or waited for before the escalation under `key`: an
/// action under another key, a wait, a freeze's hold or a person's click. Only then is there more
/// to tell in the new thread than its parent says; an incident escalated on its first look has
/// its look, its decision and the escalation alone.
pub fn acted_before(events: &[TimelineEvent], key: &str) -> bool {
    events.iter().any(|e| match e.kind {
        EventKind::Acted | EventKind::Verified | EventKind::Claimed => e.key.as_deref() != Some(key),
        EventKind::Waited | EventKind::Frozen | EventKind::Clicked => true,
        EventKind::Received | EventKind::Decided | EventKind::Resolved => false,
    })
}

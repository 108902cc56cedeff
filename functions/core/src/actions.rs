//! Every kind of action Argo Medic takes, as one table: one row per kind, in the shape of the
//! failure-mode catalogue. A row says what the action is called on the wire, which ladder rung or
//! Slack button it is (with the button's label, style and confirmation), which budget it spends,
//! what it changes (Argo CD, a Slack thread, or nothing), and how the actuator verifies it. The
//! gate ([`crate::gate`]) answers from the row's [`Effect`]; button labels, Slack verbs and audit
//! names read the row. Adding a kind is one row here and its call in [`crate::actuator`].

use serde::{Deserialize, Serialize};

use crate::ladder::{BudgetKind, HumanAction, Rung};

/// What an action changes, which is what the gate decides on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// A call that changes Argo CD (refresh, hard refresh, sync, terminate).
    ChangesArgo,
    /// A post that tells people of trouble they have not been told of (a new escalation, an
    /// outage parent, an overdue outage).
    OpensThread,
    /// A post that answers in a thread people already have (a button's reply, a resolution, an
    /// outage told over).
    AnswersThread,
    /// An alert about Argo Medic itself (the switch unreadable and failing closed, the token
    /// rejected): the one post no mode holds back, since it says why Argo Medic cannot work.
    ServiceAlert,
    /// Nothing outside Argo Medic's own records (acknowledge, snooze).
    RecordsOnly,
    /// A post of what Argo Medic recorded and would have done (the weekly shadow report): told in
    /// a dry run too, which is when a team reads it most; silent when the switch is off.
    Reports,
}

/// A Slack button: its label, style and whether Slack asks to confirm the press.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Button {
    /// The button's text in Slack (`Hard refresh`, `Freeze 4h`).
    pub label: &'static str,
    /// `danger` for a button that stops something midway; `None` leaves the style to the
    /// recommendation (the recommended button is `primary`).
    pub style: Option<&'static str>,
    /// The confirmation dialog's title, when the press is confirmed first.
    pub confirm: Option<&'static str>,
}

/// One kind of action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// A normal refresh: Argo CD compares the app with its source again.
    Refresh,
    /// A hard refresh: a refresh whose manifests are generated afresh, past the repo-server's cache.
    HardRefresh,
    /// A sync operation started through Argo CD's API, carrying its idempotency key in `infos`.
    Sync,
    /// Ending the app's running operation; a person's button only, never a rung.
    TerminateOperation,
    /// Handing the incident to people: its parent message in Slack.
    Escalate,
    /// A person's "Acknowledge": someone has taken the incident, which becomes Investigating.
    Acknowledge,
    /// A person's "Snooze": new incidents of the app are muted for 4 hours.
    Snooze,
    /// A button's outcome told in its thread.
    Reply,
    /// An app out of trouble: its open escalations marked resolved.
    Resolve,
    /// A fleet outage's parent message, posted once and rewritten each sweep.
    OutageParent,
    /// Fleet outages no longer seen, told over.
    OutageOver,
    /// A fleet outage past its time bound, escalated.
    OutageOverdue,
    /// A freeze about to end, told once before it does.
    FreezeReminder,
    /// A person's "Freeze 4h": the app frozen from its thread.
    Freeze,
    /// An alert about Argo Medic itself.
    ServiceAlert,
    /// The weekly shadow report ([`crate::report`]) posted to the deployment's channel.
    WeeklyReport,
    /// Timeline events told in the incident's thread ([`crate::timeline::ThreadReply`]).
    TimelineReply,
}

/// A row of [`ACTIONS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActionRow {
    /// The kind this row describes; every kind has exactly one row.
    pub kind: ActionKind,
    /// The name in logs, metrics and the audit (`hard_refresh`).
    pub wire: &'static str,
    /// The ladder rung it is, if the policy may choose it.
    pub rung: Option<Rung>,
    /// The Slack button it is, if a person may press it.
    pub button: Option<Button>,
    /// The budget a token is taken from before the call.
    pub budget: Option<BudgetKind>,
    /// What the action changes: all the gate decides on.
    pub effect: Effect,
    /// How the actuator knows it took effect.
    pub verified_by: &'static str,
    /// What the thread is told once it is done (a button's reply begins with it).
    pub done: &'static str,
}

/// Every action kind, one row each.
pub const ACTIONS: [ActionRow; 17] = [
    ActionRow {
        kind: ActionKind::Refresh,
        wire: "refresh",
        rung: Some(Rung::Refresh),
        // Offered only as a proposal (trust level `propose`): an escalation's own buttons do not
        // include it, since the ladder refreshes before it escalates.
        button: Some(Button { label: "Refresh", style: None, confirm: None }),
        budget: Some(BudgetKind::Refresh),
        effect: Effect::ChangesArgo,
        done: "refresh verified",
        verified_by: "status.reconciledAt moved past the app as read before (one re-request)",
    },
    ActionRow {
        kind: ActionKind::HardRefresh,
        wire: "hard_refresh",
        rung: Some(Rung::HardRefresh),
        button: Some(Button { label: "Hard refresh", style: None, confirm: Some("Hard refresh?") }),
        budget: Some(BudgetKind::HardRefresh),
        effect: Effect::ChangesArgo,
        done: "hard refresh done",
        verified_by: "status.reconciledAt moved past the app as read before (one re-request)",
    },
    ActionRow {
        kind: ActionKind::Sync,
        wire: "sync",
        rung: Some(Rung::Sync),
        button: Some(Button { label: "Sync", style: None, confirm: Some("Sync this app?") }),
        budget: Some(BudgetKind::Sync),
        effect: Effect::ChangesArgo,
        done: "sync started",
        verified_by: "Argo CD accepted it; its idempotency key in operation.info (looked for after a lost answer or a crash)",
    },
    ActionRow {
        kind: ActionKind::TerminateOperation,
        wire: "terminate_operation",
        rung: None,
        button: Some(Button { label: "Terminate operation", style: Some("danger"), confirm: Some("Terminate the running operation?") }),
        budget: None,
        effect: Effect::ChangesArgo,
        done: "the running operation was asked to terminate",
        verified_by: "Argo CD accepted it; only an operation started before the click is terminated",
    },
    ActionRow {
        kind: ActionKind::Escalate,
        wire: "escalate",
        rung: Some(Rung::Escalate),
        button: None,
        budget: None,
        effect: Effect::OpensThread,
        done: "escalated",
        verified_by: "the escalator's record of the thread (never a second parent)",
    },
    ActionRow {
        kind: ActionKind::Acknowledge,
        wire: "acknowledge",
        rung: None,
        button: Some(Button { label: "Acknowledge", style: None, confirm: None }),
        budget: None,
        effect: Effect::RecordsOnly,
        done: "acknowledged",
        verified_by: "the incident's state in the escalator's record",
    },
    ActionRow {
        kind: ActionKind::Snooze,
        wire: "snooze",
        rung: None,
        button: Some(Button { label: "Snooze", style: None, confirm: None }),
        budget: None,
        effect: Effect::RecordsOnly,
        done: "snoozed",
        verified_by: "the snooze in the escalator's record",
    },
    ActionRow {
        kind: ActionKind::Reply,
        wire: "reply",
        rung: None,
        button: None,
        budget: None,
        effect: Effect::AnswersThread,
        done: "answered",
        verified_by: "the escalator's record of the reply (idempotent per button)",
    },
    ActionRow {
        kind: ActionKind::Resolve,
        wire: "resolve",
        rung: None,
        button: None,
        budget: None,
        effect: Effect::AnswersThread,
        done: "resolved",
        verified_by: "the escalator's record (idempotent; nothing when nothing is open)",
    },
    ActionRow {
        kind: ActionKind::OutageParent,
        wire: "outage",
        rung: None,
        button: None,
        budget: None,
        effect: Effect::OpensThread,
        done: "told",
        verified_by: "the escalator's record of the parent per cause and start",
    },
    ActionRow {
        kind: ActionKind::OutageOver,
        wire: "outage_over",
        rung: None,
        button: None,
        budget: None,
        effect: Effect::AnswersThread,
        done: "told over",
        verified_by: "the escalator's record of the parent's last view",
    },
    ActionRow {
        kind: ActionKind::Freeze,
        wire: "freeze",
        rung: None,
        button: Some(Button { label: "Freeze 4h", style: None, confirm: Some("Freeze this app for 4 hours?") }),
        budget: None,
        effect: Effect::RecordsOnly,
        done: "frozen",
        verified_by: "the freeze written where the switch is kept, under the click's time (a redelivery writes the same one)",
    },
    ActionRow {
        kind: ActionKind::FreezeReminder,
        wire: "freeze_reminder",
        rung: None,
        button: None,
        budget: None,
        effect: Effect::OpensThread,
        done: "reminded",
        verified_by: "a marker per freeze, written once the reminder is told",
    },
    ActionRow {
        kind: ActionKind::OutageOverdue,
        wire: "outage_overdue",
        rung: None,
        button: None,
        budget: None,
        effect: Effect::OpensThread,
        done: "escalated",
        verified_by: "a marker per cause and start, written once the alert is told",
    },
    ActionRow {
        kind: ActionKind::ServiceAlert,
        wire: "service_alert",
        rung: None,
        button: None,
        budget: None,
        effect: Effect::ServiceAlert,
        done: "alerted",
        verified_by: "a marker per alert and hour, written once the alert is told",
    },
    ActionRow {
        kind: ActionKind::WeeklyReport,
        wire: "weekly_report",
        rung: None,
        button: None,
        budget: None,
        effect: Effect::Reports,
        done: "reported",
        verified_by: "the escalator's record of the week's message (one per instance and ISO week)",
    },
    ActionRow {
        kind: ActionKind::TimelineReply,
        wire: "timeline_reply",
        rung: None,
        button: None,
        budget: None,
        effect: Effect::AnswersThread,
        done: "told in the thread",
        verified_by: "the escalator's record of the reply, one per incident and escalation or action key",
    },
];

impl ActionKind {
    /// This kind's row.
    pub fn row(self) -> &'static ActionRow {
        ACTIONS.iter().find(|r| r.kind == self).expect("every action kind has a row in ACTIONS")
    }

    /// The kind's name in logs, metrics and the audit (its row's `wire`).
    pub fn as_str(self) -> &'static str {
        self.row().wire
    }

    /// What this kind changes (its row's `effect`), for the gate.
    pub fn effect(self) -> Effect {
        self.row().effect
    }

    /// The kind a ladder rung is.
    pub fn of_rung(rung: Rung) -> ActionKind {
        ACTIONS.iter().find(|r| r.rung == Some(rung)).map(|r| r.kind).expect("every rung has a row in ACTIONS")
    }

    /// The kind a Slack button is.
    pub fn of_button(action: HumanAction) -> ActionKind {
        match action {
            HumanAction::Sync => ActionKind::Sync,
            HumanAction::Refresh => ActionKind::Refresh,
            HumanAction::HardRefresh => ActionKind::HardRefresh,
            HumanAction::TerminateOperation => ActionKind::TerminateOperation,
            HumanAction::Snooze => ActionKind::Snooze,
            HumanAction::Acknowledge => ActionKind::Acknowledge,
            HumanAction::Freeze => ActionKind::Freeze,
        }
    }
}

impl HumanAction {
    /// The button as the actions table describes it.
    pub fn button(self) -> Button {
        ActionKind::of_button(self).row().button.expect("every human action is a button in ACTIONS")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_one_row_every_rung_and_button_a_kind() {
        for (i, row) in ACTIONS.iter().enumerate() {
            assert_eq!(ACTIONS.iter().filter(|r| r.kind == row.kind).count(), 1, "{:?}", row.kind);
            assert_eq!(row.kind.row(), row, "row {i}");
            assert_eq!(ACTIONS.iter().filter(|r| r.wire == row.wire).count(), 1, "{}", row.wire);
        }
        for rung in [Rung::Refresh, Rung::HardRefresh, Rung::Sync, Rung::Escalate] {
            assert_eq!(ActionKind::of_rung(rung).row().rung, Some(rung));
            assert_eq!(ActionKind::of_rung(rung).row().budget, rung.budget(), "the ladder and the table agree on {rung:?}'s budget");
        }
        for a in HumanAction::ALL {
            assert_eq!(ActionKind::of_button(a).as_str(), a.as_str(), "a button's wire name is its action's");
            assert!(!a.button().label.is_empty());
        }
        assert!(ACTIONS.iter().filter(|r| r.effect == Effect::ChangesArgo).all(|r| r.kind != ActionKind::Escalate));
    }
}

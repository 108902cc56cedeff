//! What the policy decides: one action, with the failure mode, the reason and the evidence.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::app::AppId;
use crate::catalogue::FailureMode;
use crate::keys::IdempotencyKey;
use crate::keys::IncidentKey;
use crate::ladder::{Action, HumanAction};

/// A fact the decision rests on: which field said what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// JSON path into the Application (or `history`, `trigger`).
    pub field: String,
    /// What the field said, as text.
    pub value: String,
}

impl Evidence {
    /// A fact: `field` said `value`.
    pub fn new(field: impl Into<String>, value: impl Into<String>) -> Self {
        Self { field: field.into(), value: value.into() }
    }
}

/// The exact sync Argo Medic would request: it re-runs the operation that is on record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncPlan {
    /// The revision to sync; the one that failed, never a newer one nobody asked for.
    pub revision: String,
    /// Whether the sync may delete resources the source no longer renders: the automated policy's `prune`, or the failed sync's.
    pub prune: bool,
    /// The sync options to send (`ServerSideApply=true`, …): the app's own for an automated app, else the failed sync's.
    pub sync_options: Vec<String>,
    /// Why a sync is wanted at all: automated sync policy, or the operator who started the failed
    /// operation.
    pub intent: String,
}

/// The policy's answer for one app at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// `namespace/name` of the app.
    pub app: AppId,
    /// The one thing to do now.
    pub action: Action,
    /// What is wrong with the app, as the catalogue names it (`Healthy` when nothing is).
    pub failure_mode: FailureMode,
    /// The rule that decided: the classifier rule that named the mode, then the step of the ladder
    /// or the gate that chose the action (`failed-operation/hook-failed → ladder:escalate`), so a
    /// wrong decision can be traced to the rule that made it.
    #[serde(default)]
    pub rule: String,
    /// One or two sentences a human can act on.
    pub reason: String,
    /// The facts the decision rests on: which field said what.
    pub evidence: Vec<Evidence>,
    /// For `wait`: when to look again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_secs: Option<i64>,
    /// The incident this decision belongs to; `None` when the app is not in trouble.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incident: Option<IncidentKey>,
    /// The key that makes this action happen at most once; `None` when there is no incident.
    pub idempotency_key: Option<IdempotencyKey>,
    /// For `sync`: what exactly to request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<SyncPlan>,
    /// For `escalate`: the actions a human may take from the escalation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub human_actions: Vec<HumanAction>,
    /// For `escalate`: the one of `human_actions` the catalogue's diagnosis recommends (the
    /// escalation styles it as the recommended button), judged on this app and incident.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommended: Option<HumanAction>,
    /// For an action that changes Argo CD: how far Argo Medic may go with it here, and why
    /// ([`crate::trust`]): `act` performs it, `propose` offers it to a person, `observe` records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<crate::trust::AppliedTrust>,
    /// Where the incident is told, when not in the deployment's channel ([`crate::route`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<crate::route::Route>,
    /// True when this observation closes an open incident (the app is Synced and Healthy again).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resolves_incident: bool,
    /// When the decision was taken.
    pub decided_at: DateTime<Utc>,
}

impl Decision {
    /// The decision for an app that no longer exists in Argo CD (a read answered 404, or 403
    /// without a project, and a list by name confirmed it is gone): its incident ends.
    pub fn gone(app: &AppId, now: DateTime<Utc>) -> Self {
        Decision {
            failure_mode: FailureMode::OutOfScope,
            rule: "gone".into(),
            reason: "the app no longer exists in Argo CD (a list by name confirms it)".into(),
            resolves_incident: true,
            ..Self::nothing(app, now)
        }
    }

    /// Nothing to do for `app` (yet): the decision every other one starts from.
    pub fn nothing(app: &AppId, now: DateTime<Utc>) -> Self {
        Decision {
            app: app.to_owned(),
            action: Action::None,
            failure_mode: FailureMode::Healthy,
            rule: String::new(),
            reason: String::new(),
            evidence: Vec::new(),
            retry_after_secs: None,
            incident: None,
            idempotency_key: None,
            sync: None,
            human_actions: Vec::new(),
            recommended: None,
            trust: None,
            route: None,
            resolves_incident: false,
            decided_at: now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A decision is kept as JSON (a decision record) and read back: every field it leaves out
    /// when empty reads back empty. `human_actions` and `resolves_incident` did not (a record
    /// of a decision with no buttons could not be read).
    #[test]
    fn a_decision_round_trips_through_json_whatever_it_leaves_out() {
        let at = "2026-12-01T10:00:00Z".parse().unwrap();
        for decision in [Decision::nothing(&AppId::new("argocd", "a"), at), Decision::gone(&AppId::new("argocd", "a"), at)] {
            let json = serde_json::to_string(&decision).unwrap();
            assert_eq!(serde_json::from_str::<Decision>(&json).unwrap(), decision, "{json}");
        }
    }
}

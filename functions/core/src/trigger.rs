//! What made Argo Medic look at an app: a notification trigger, the sweeper, or a person.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::InvalidTrigger;

/// The name of what prompted a decision. Notification triggers keep their argocd-notifications
/// names (`on-sync-failed`, ...); Argo Medic's own sources are `sweep`, `manual`,
/// `fleet-recovery`, `slack-action` and `requested-refresh`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Trigger(String);

impl Trigger {
    /// A look no notification prompted: the sweeper's, and the follow-up looks Argo Medic makes by itself.
    pub const SWEEP: &'static str = "sweep";
    /// A look asked for by hand: `medic decide`'s default trigger.
    pub const MANUAL: &'static str = "manual";
    /// The recovery wave of a fleet outage ([`crate::fleet`]): a canary showed the shared cause is
    /// over, and the app is looked at to be compared again.
    pub const RECOVERY: &'static str = "fleet-recovery";
    /// A person's Slack button (the look that follows an action a person performed).
    pub const SLACK_ACTION: &'static str = "slack-action";
    /// A refresh asked for through ingest's signed refresh endpoint.
    pub const REQUESTED_REFRESH: &'static str = "requested-refresh";
    /// The triggers Argo Medic's argocd-notifications templates name (the `trigger` field of
    /// infra/argocd-notifications/argocd-notifications-cm.yaml; tests/template.rs holds them
    /// together). Ingest refuses any other: a template that drifted or a sender that is not ours.
    pub const NOTIFICATIONS: [&'static str; 7] = [
        "on-sync-failed",
        "on-health-degraded",
        "on-sync-status-unknown",
        "on-sync-running",
        "on-stale-progressing",
        "on-deleted",
        "on-deployed",
    ];

    /// True for one of [`Trigger::NOTIFICATIONS`].
    pub fn is_notification(&self) -> bool {
        Self::NOTIFICATIONS.contains(&self.0.as_str())
    }

    /// A look asked for by hand (`Trigger::MANUAL`).
    pub fn manual() -> Self {
        Self(Self::MANUAL.to_owned())
    }

    /// A look no notification prompted (`Trigger::SWEEP`).
    pub fn sweep() -> Self {
        Self(Self::SWEEP.to_owned())
    }

    /// A look in a fleet outage's recovery wave (`Trigger::RECOVERY`).
    pub fn recovery() -> Self {
        Self(Self::RECOVERY.to_owned())
    }

    /// The look after a person's Slack button (`Trigger::SLACK_ACTION`).
    pub fn slack_action() -> Self {
        Self(Self::SLACK_ACTION.to_owned())
    }

    /// A refresh asked for through the signed refresh endpoint (`Trigger::REQUESTED_REFRESH`).
    pub fn requested_refresh() -> Self {
        Self(Self::REQUESTED_REFRESH.to_owned())
    }

    /// The trigger's name, as the wire, the keys and the logs carry it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Trigger {
    type Err = InvalidTrigger;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let ok =
            !s.is_empty() && s.len() <= 63 && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
        if ok { Ok(Self(s.to_owned())) } else { Err(InvalidTrigger(s.to_owned())) }
    }
}

impl TryFrom<String> for Trigger {
    type Error = InvalidTrigger;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<Trigger> for String {
    fn from(t: Trigger) -> Self {
        t.0
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_names_are_validated() {
        assert_eq!("on-sync-failed".parse::<Trigger>().unwrap().as_str(), "on-sync-failed");
        assert!("".parse::<Trigger>().is_err());
        assert!("On Sync".parse::<Trigger>().is_err());
        assert!("x".repeat(64).parse::<Trigger>().is_err());
    }

    /// The constructors of Argo Medic's own triggers skip `from_str`: each constant must be a name
    /// `from_str` accepts, or a work item carrying it would not read back.
    #[test]
    fn argo_medic_s_own_triggers_are_valid_names() {
        for (made, name) in [
            (Trigger::sweep(), Trigger::SWEEP),
            (Trigger::manual(), Trigger::MANUAL),
            (Trigger::recovery(), Trigger::RECOVERY),
            (Trigger::slack_action(), Trigger::SLACK_ACTION),
            (Trigger::requested_refresh(), Trigger::REQUESTED_REFRESH),
        ] {
            assert_eq!(name.parse::<Trigger>().ok().as_ref(), Some(&made), "{name}");
            assert!(!made.is_notification(), "{name}");
        }
    }
}

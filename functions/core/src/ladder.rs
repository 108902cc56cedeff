//! The remediation ladder's vocabulary, in one place: what the policy may decide ([`Action`]),
//! the rungs an incident climbs ([`Rung`]), which budget and which refresh each rung takes
//! ([`BudgetKind`], [`RefreshKind`]), and what a person may press ([`HumanAction`]). One name
//! table each; nothing here depends on the rest of the core.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The one thing Argo Medic does about an app now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Nothing to do.
    None,
    /// `GET /api/v1/applications/{name}?refresh=normal`.
    Refresh,
    /// `GET /api/v1/applications/{name}?refresh=hard`.
    HardRefresh,
    /// `POST /api/v1/applications/{name}/sync` with the plan in [`crate::decision::Decision::sync`].
    Sync,
    /// Hand the incident to a human.
    Escalate,
    /// Look again after [`crate::decision::Decision::retry_after_secs`].
    Wait,
}

impl Action {
    /// The action's name as serde writes it (`hard_refresh`), also in logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::None => "none",
            Action::Refresh => "refresh",
            Action::HardRefresh => "hard_refresh",
            Action::Sync => "sync",
            Action::Escalate => "escalate",
            Action::Wait => "wait",
        }
    }

    /// True for the actions that call Argo CD to change something.
    pub fn mutates_argo(self) -> bool {
        matches!(self, Action::Refresh | Action::HardRefresh | Action::Sync)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A step of the remediation ladder. An incident climbs its mode's ladder one rung at a time and
/// never takes the same rung twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rung {
    /// Ask Argo CD to compare the app with its source again (a normal refresh).
    Refresh,
    /// A refresh that regenerates the manifests, past the repo-server's cache and a cached generation error.
    HardRefresh,
    /// Start a sync of the app (a `SyncPlan`).
    Sync,
    /// Hand the incident to people in Slack.
    Escalate,
}

impl Rung {
    /// The action that takes this rung.
    pub fn action(self) -> Action {
        match self {
            Rung::Refresh => Action::Refresh,
            Rung::HardRefresh => Action::HardRefresh,
            Rung::Sync => Action::Sync,
            Rung::Escalate => Action::Escalate,
        }
    }

    /// The rung's name as serde writes it; the same as its action's.
    pub fn as_str(self) -> &'static str {
        match self {
            Rung::Refresh => "refresh",
            Rung::HardRefresh => "hard_refresh",
            Rung::Sync => "sync",
            Rung::Escalate => "escalate",
        }
    }
}

impl Rung {
    /// The rung an action climbs; `None` for the actions that are no rung (`none`, `wait`).
    pub fn of(action: Action) -> Option<Rung> {
        match action {
            Action::Refresh => Some(Rung::Refresh),
            Action::HardRefresh => Some(Rung::HardRefresh),
            Action::Sync => Some(Rung::Sync),
            Action::Escalate => Some(Rung::Escalate),
            Action::None | Action::Wait => None,
        }
    }

    /// The budget taking this rung draws from; an escalation draws from none.
    pub fn budget(self) -> Option<BudgetKind> {
        match self {
            Rung::Refresh => Some(BudgetKind::Refresh),
            Rung::HardRefresh => Some(BudgetKind::HardRefresh),
            Rung::Sync => Some(BudgetKind::Sync),
            Rung::Escalate => None,
        }
    }

    /// The refresh this rung requests, if it is one.
    pub fn refresh(self) -> Option<RefreshKind> {
        match self {
            Rung::Refresh => Some(RefreshKind::Normal),
            Rung::HardRefresh => Some(RefreshKind::Hard),
            Rung::Sync | Rung::Escalate => None,
        }
    }
}

/// Normal or hard refresh (`?refresh=normal|hard`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefreshKind {
    /// `?refresh=normal`: compare again; manifests of an unchanged revision may come from the repo-server's cache.
    Normal,
    /// `?refresh=hard`: compare again with manifests generated afresh, bypassing the cache.
    Hard,
}

impl RefreshKind {
    /// The value of the `refresh` query parameter: `normal` or `hard`.
    pub fn as_str(self) -> &'static str {
        match self {
            RefreshKind::Normal => "normal",
            RefreshKind::Hard => "hard",
        }
    }
}

/// Which budget an action draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BudgetKind {
    /// Normal refreshes: `MEDIC_REFRESH_PER_MINUTE` per instance (default 300).
    Refresh,
    /// Hard refreshes, the repo-server's heaviest work: `MEDIC_HARD_REFRESH_PER_MINUTE` (default 10).
    HardRefresh,
    /// Syncs: `MEDIC_SYNC_PER_MINUTE` (default 30).
    Sync,
}

impl BudgetKind {
    /// Its name in stored keys and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetKind::Refresh => "refresh",
            BudgetKind::HardRefresh => "hard_refresh",
            BudgetKind::Sync => "sync",
        }
    }
}

/// What a person may do to a fleet outage's recovery wave from its Slack parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FleetControl {
    /// Hold the wave back, even after a canary healed (the cause is not really over).
    Pause,
    /// Release the wave now, without waiting for a canary (the cause is known to be fixed).
    Release,
}

impl FleetControl {
    /// The serde name, also part of the button's id and of its marker.
    pub fn as_str(self) -> &'static str {
        match self {
            FleetControl::Pause => "pause",
            FleetControl::Release => "release",
        }
    }
}

/// Buttons a human may press on an escalation for this mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HumanAction {
    /// Start the sync the escalation describes (its `SyncPlan`); not offered where the diagnosis says not to sync.
    Sync,
    /// Ask Argo CD to compare again; offered only when a trust level proposes a refresh.
    Refresh,
    /// Ask Argo CD for a hard refresh, regenerating the manifests past the repo-server's cache.
    HardRefresh,
    /// End the operation that was running when the button was pressed (never a later one).
    TerminateOperation,
    /// Mute new incidents of the app for 4 hours.
    Snooze,
    /// Say that a person has taken the incident; it becomes Investigating.
    Acknowledge,
    /// Freeze the app for [`crate::freeze::BUTTON_FREEZE_HOURS`] hours: Argo Medic takes no
    /// automatic action on it until then.
    Freeze,
}

impl HumanAction {
    /// Every button, in the order an escalation shows them.
    pub const ALL: [HumanAction; 7] = [
        HumanAction::Sync,
        HumanAction::Refresh,
        HumanAction::HardRefresh,
        HumanAction::TerminateOperation,
        HumanAction::Snooze,
        HumanAction::Acknowledge,
        HumanAction::Freeze,
    ];

    /// The serde name (`hard_refresh`, ...), also part of a button's id.
    pub fn as_str(self) -> &'static str {
        match self {
            HumanAction::Sync => "sync",
            HumanAction::Refresh => "refresh",
            HumanAction::HardRefresh => "hard_refresh",
            HumanAction::TerminateOperation => "terminate_operation",
            HumanAction::Snooze => "snooze",
            HumanAction::Acknowledge => "acknowledge",
            HumanAction::Freeze => "freeze",
        }
    }
}

/// An item's place in a released recovery wave: the cause (`crate::fleet::CauseScope::key`), the
/// outage it belongs to (`since`: the sweeper's first sighting of it, which keys its pause and
/// relapse markers; empty on items of the release before outages had one), the wave (the sweep
/// window that released it: a wave released again after a pause is another wave), its index in
/// wave order and the wave's length.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WaveSlot {
    /// The outage's cause, as `CauseScope::key` writes it (`repo:git.example.com`).
    pub scope: String,
    /// The outage's start, the sweeper's first sighting of it, which keys its pause and relapse markers; empty on older items.
    #[serde(default)]
    pub since: String,
    /// The wave: the sweep window that released it; a wave released again after a pause is another wave.
    pub wave: String,
    /// The item's place in wave order, from 0.
    pub index: u32,
    /// How many items the wave holds.
    pub len: u32,
}

impl WaveSlot {
    /// The indices of the slot's batch of `batch` items (the last batch may be shorter). Never
    /// overflows, whatever a message says its index and length are (L12).
    pub fn batch(&self, batch: usize) -> std::ops::Range<u32> {
        let size = u32::try_from(batch.max(1)).unwrap_or(u32::MAX);
        let start = (self.index / size) * size;
        start..(start.saturating_add(size)).min(self.len.max(self.index.saturating_add(1)))
    }
}

/// How one app of a wave came out of its step: what `crate::fleet::should_pause` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum WaveOutcome {
    /// Calm after the step (its incident resolved).
    Healed,
    /// Acted on and still not calm, or the step failed: the cause may be back.
    Failed,
    /// Neither (a wait, a deferral, nothing to do): not counted.
    Neither,
}

impl WaveOutcome {
    /// The outcome's name in logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Healed => "healed",
            Self::Failed => "failed",
            Self::Neither => "neither",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rung_is_its_action_and_back_and_names_agree_with_serde() {
        for rung in [Rung::Refresh, Rung::HardRefresh, Rung::Sync, Rung::Escalate] {
            assert_eq!(Rung::of(rung.action()), Some(rung));
            assert_eq!(rung.as_str(), rung.action().as_str());
            assert_eq!(serde_json::to_value(rung).unwrap(), rung.as_str());
            assert_eq!(rung.budget().is_some(), rung.action().mutates_argo());
        }
        assert_eq!(Rung::of(Action::None), None);
        assert_eq!(Rung::of(Action::Wait), None);
        for a in HumanAction::ALL {
            assert_eq!(serde_json::to_value(a).unwrap(), a.as_str());
        }
    }
}

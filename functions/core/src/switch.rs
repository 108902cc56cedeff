//! The instant switch: whether Argo Medic may act right now, flipped by an operator without a
//! stack update (`medic switch off`), and read by the per-app step and the worker immediately
//! before every call that changes Argo CD and every Slack post.
//!
//! The stack's parameters (`MEDIC_DRY_RUN`, `MEDIC_KILL_SWITCH`) stay the default: the switch can
//! only make Argo Medic more careful than they say, never less ([`Mode::strictest`]).

use std::fmt;
use std::future::Future;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::freeze::Freeze;
use crate::ports::StoreError;

/// How soon every function sees a flip of the switch: how long a container keeps the value it
/// read (the promise docs/operations.md makes for `medic switch`).
pub const TAKES_EFFECT_WITHIN: std::time::Duration = std::time::Duration::from_secs(30);

/// What Argo Medic may do, from the most to the least permissive (the order is the strictness).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Act: refresh, hard refresh, sync, terminate, post to Slack.
    #[default]
    Act,
    /// Decide and log; change nothing in Argo CD and open no escalation (replies to buttons and
    /// resolutions are still posted).
    DryRun,
    /// Change nothing in Argo CD and post nothing to Slack.
    Off,
}

impl Mode {
    /// The mode the stack's parameters give.
    pub fn from_flags(dry_run: bool, kill_switch: bool) -> Mode {
        match (dry_run, kill_switch) {
            (_, true) => Mode::Off,
            (true, false) => Mode::DryRun,
            (false, false) => Mode::Act,
        }
    }

    /// The stricter of two modes.
    pub fn strictest(self, other: Mode) -> Mode {
        self.max(other)
    }

    /// True when calls that change Argo CD may be made.
    pub fn acts(self) -> bool {
        self == Mode::Act
    }

    /// True when Slack may be posted to.
    pub fn posts(self) -> bool {
        self != Mode::Off
    }

    /// The mode's name as `medic switch` takes it and the audit shows it: `act`, `dry-run` or `off`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Act => "act",
            Mode::DryRun => "dry-run",
            Mode::Off => "off",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Not `act`, `dry-run` or `off`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a switch mode (act, dry-run, which is observe everywhere, or off)")]
pub struct UnknownMode(pub String);

impl FromStr for Mode {
    type Err = UnknownMode;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "act" => Ok(Mode::Act),
            // `observe` is the trust level dry-run is for every scope at once: one concept.
            "dry-run" | "dry_run" | "dryrun" | "observe" => Ok(Mode::DryRun),
            "off" => Ok(Mode::Off),
            other => Err(UnknownMode(other.to_owned())),
        }
    }
}

/// The switch as the step reads it: the current mode, from a value recent enough, failing closed
/// when it cannot be known.
pub trait Switch: Send + Sync {
    /// The mode now, from a value read recently enough; `Off` (fail closed) when it cannot be known.
    fn mode(&self) -> impl Future<Output = Mode> + Send;
    /// A problem with the switch itself to tell a human about, returned once (for example: it has
    /// been unreadable long enough that Argo Medic fails closed). No default: a wrapper that forgot
    /// to forward it would swallow the alert.
    fn take_alert(&self) -> Option<String>;
    /// The freezes set now ([`crate::freeze`]), read with the mode (and as fresh): ended ones
    /// may be among them, and are ignored by whoever reads them.
    fn freezes(&self) -> impl Future<Output = Vec<Freeze>> + Send;
    /// Sets `freeze` where the switch is kept (a person's "Freeze 4h"); it holds from the next read.
    fn freeze(&self, freeze: &Freeze) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// A switch that never moves (the stack's parameters alone; tests; `medic sweep`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FixedSwitch(pub Mode);

impl Switch for FixedSwitch {
    fn mode(&self) -> impl Future<Output = Mode> + Send {
        std::future::ready(self.0)
    }
    /// A fixed switch cannot fail.
    fn take_alert(&self) -> Option<String> {
        None
    }
    /// Nothing is frozen where nothing can be set.
    fn freezes(&self) -> impl Future<Output = Vec<Freeze>> + Send {
        std::future::ready(Vec::new())
    }
    fn freeze(&self, _: &Freeze) -> impl Future<Output = Result<(), StoreError>> + Send {
        std::future::ready(Err(StoreError::invalid("a freeze needs the stack's switch table; this switch is fixed")))
    }
}

impl<T: Switch> Switch for std::sync::Arc<T> {
    fn mode(&self) -> impl Future<Output = Mode> + Send {
        (**self).mode()
    }
    fn take_alert(&self) -> Option<String> {
        (**self).take_alert()
    }
    fn freezes(&self) -> impl Future<Output = Vec<Freeze>> + Send {
        (**self).freezes()
    }
    fn freeze(&self, freeze: &Freeze) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).freeze(freeze)
    }
}

/// Where the switch is kept (the state table on AWS, memory in tests). `None`: never set, which
/// means [`Mode::Act`] (the stack's parameters alone decide).
pub trait SwitchStore: Send + Sync {
    /// The mode as kept; `None` when it was never set.
    fn read_mode(&self) -> impl Future<Output = Result<Option<Mode>, StoreError>> + Send;
    /// Sets the mode; `by` (who flipped it) is kept for the audit.
    fn write_mode(&self, mode: Mode, by: &str) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Every freeze kept (ended ones too, until the store lets them go).
    fn read_freezes(&self) -> impl Future<Output = Result<Vec<Freeze>, StoreError>> + Send;
    /// Keeps `freeze`, replacing one with the same id (a redelivered click writes the same freeze).
    fn write_freeze(&self, freeze: &Freeze) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Lifts the freeze `id` before its time; false when there was none.
    fn lift_freeze(&self, id: &str) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

impl<T: SwitchStore> SwitchStore for std::sync::Arc<T> {
    fn read_mode(&self) -> impl Future<Output = Result<Option<Mode>, StoreError>> + Send {
        (**self).read_mode()
    }
    fn write_mode(&self, mode: Mode, by: &str) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).write_mode(mode, by)
    }
    fn read_freezes(&self) -> impl Future<Output = Result<Vec<Freeze>, StoreError>> + Send {
        (**self).read_freezes()
    }
    fn write_freeze(&self, freeze: &Freeze) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).write_freeze(freeze)
    }
    fn lift_freeze(&self, id: &str) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).lift_freeze(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_strictest_mode_wins_and_names_round_trip() {
        assert_eq!(Mode::Act.as_str(), crate::record::MODE_ACT, "a record in mode act was performed");
        assert_eq!(Mode::Act.strictest(Mode::Off), Mode::Off);
        assert_eq!(Mode::DryRun.strictest(Mode::Act), Mode::DryRun);
        assert_eq!(Mode::Off.strictest(Mode::DryRun), Mode::Off);
        assert_eq!(Mode::from_flags(true, true), Mode::Off);
        assert_eq!(Mode::from_flags(true, false), Mode::DryRun);
        assert_eq!(Mode::from_flags(false, false), Mode::Act);
        for m in [Mode::Act, Mode::DryRun, Mode::Off] {
            assert_eq!(m.as_str().parse::<Mode>(), Ok(m));
            assert_eq!(serde_json::to_value(m).unwrap(), serde_json::json!(m.as_str()));
        }
        assert!("stop".parse::<Mode>().is_err());
        assert_eq!("observe".parse::<Mode>(), Ok(Mode::DryRun), "the trust level's name");
        assert!(Mode::Act.acts() && !Mode::DryRun.acts() && !Mode::Off.acts());
        assert!(Mode::DryRun.posts() && !Mode::Off.posts());
    }
}

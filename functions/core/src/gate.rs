//! The one gate every action passes before the actuator makes its call: the stack's parameters
//! (`MEDIC_DRY_RUN`, `MEDIC_KILL_SWITCH`) and the instant switch (`medic switch`) make one mode,
//! the strictest of them, and the mode with the action's [`Effect`] makes one verdict.
//!
//! The modes mean one thing everywhere (docs/operations.md, "What each mode does"):
//! - `act`: everything.
//! - `dry-run` (`MEDIC_DRY_RUN=true`, or the switch at `dry-run`): decide and record what would
//!   have been done; no call changes Argo CD and no new thread is opened; threads people already
//!   have are still answered (a button's reply says it was not performed, a resolution is told).
//! - `off` (`MEDIC_KILL_SWITCH=true`, or the switch at `off`): nothing changes in Argo CD and
//!   nothing is posted, not even a reply.
//!
//! In every mode a service alert about Argo Medic itself goes out, logged as such.
//!
//! The request carries the trust level of the action's scope ([`crate::trust`]), so no path to
//! Argo CD passes the gate with a looser one: where the mode would act, an action that changes
//! Argo CD is acted on at `act`, proposed to a person at `propose` (observed when no person can
//! approve it: no Slack), and reported as dry-run reports it at `observe`. `dry-run` is `observe`
//! for everything; a level never loosens the mode.

use std::fmt;

use serde::Serialize;

use crate::actions::{ActionKind, Effect};
use crate::app::AppId;
use crate::switch::{Mode, Switch};
use crate::trust::TrustLevel;

/// Who asks for an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Caller {
    /// The remediation ladder, on a decision of the policy.
    Ladder,
    /// A person's Slack button.
    Person,
    /// The signed refresh endpoint (a person or a pipeline that holds the refresh key).
    SignedRefresh,
    /// A fleet outage's canary probe (the sweeper or `medic sweep`).
    Canary,
    /// A fleet outage's own posts (its parent, over, overdue).
    Fleet,
    /// Argo Medic about itself.
    Service,
    /// The weekly shadow report (the sweeper, on its report schedule).
    Report,
}

/// What the gate is asked about.
#[derive(Debug, Clone, Copy)]
pub struct GateRequest<'r> {
    /// The kind of action, whose effect the verdict turns on.
    pub kind: ActionKind,
    /// Who asks for it.
    pub caller: Caller,
    /// The app the action is about; `None` for one about no single app (an outage post, a service alert).
    pub app: Option<&'r AppId>,
    /// The app's AppProject, when known.
    pub project: Option<&'r str>,
    /// The trust level of the action's scope (`act` where none applies: a person's button, an
    /// alert).
    pub trust: TrustLevel,
    /// Whether a person can approve a proposal (the escalator takes button presses).
    pub approvable: bool,
}

/// The gate's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Make the call.
    Act,
    /// Do not make it; say what would have been done where the caller reports (the step's
    /// result, the audit line, the reply to a person's click).
    Report,
    /// Do not make it and post nothing about it; only the audit line says it was held.
    Silent,
    /// Do not make it: offer it to a person, in the incident's thread, with a button that makes it.
    Propose,
}

impl Verdict {
    /// The verdict's name in the audit line and the logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Act => "act",
            Verdict::Report => "report",
            Verdict::Silent => "silent",
            Verdict::Propose => "propose",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The verdict for an action of `kind` in `mode`: the whole rule, as a table.
pub fn verdict(mode: Mode, kind: ActionKind) -> Verdict {
    match (mode, kind.effect()) {
        (_, Effect::ServiceAlert) => Verdict::Act,
        (Mode::Act, _) => Verdict::Act,
        (Mode::DryRun, Effect::AnswersThread | Effect::RecordsOnly | Effect::Reports) => Verdict::Act,
        (Mode::DryRun, Effect::ChangesArgo | Effect::OpensThread) => Verdict::Report,
        (Mode::Off, _) => Verdict::Silent,
    }
}

/// The verdict for an action of `kind` in `mode` at trust level `trust`: the mode's verdict, and
/// where that acts on an action that changes Argo CD, the level's.
pub fn trusted_verdict(mode: Mode, kind: ActionKind, trust: TrustLevel, approvable: bool) -> Verdict {
    let by_mode = verdict(mode, kind);
    if by_mode != Verdict::Act || kind.effect() != Effect::ChangesArgo {
        return by_mode;
    }
    match trust {
        TrustLevel::Act => Verdict::Act,
        TrustLevel::Propose if approvable => Verdict::Propose,
        TrustLevel::Propose | TrustLevel::Observe => Verdict::Report,
    }
}

/// The gate's answer with its reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// What to do with the action: act, report, stay silent or propose it.
    pub verdict: Verdict,
    /// The mode it was judged in: the strictest of the stack's parameters and the switch.
    pub mode: Mode,
    /// Why the mode is what it is, for the step's detail and the reply to a person.
    pub why: &'static str,
}

impl Answer {
    /// True when the call may be made.
    pub fn acts(&self) -> bool {
        self.verdict == Verdict::Act
    }
}

/// The stack's parameters and the instant switch.
pub struct Gate<'a, W> {
    /// `MEDIC_DRY_RUN`: the stack runs in dry-run mode.
    pub dry_run: bool,
    /// `MEDIC_KILL_SWITCH`: the stack is off.
    pub kill_switch: bool,
    /// The instant switch (`medic switch`), read only when the stack's own mode is not already off.
    pub switch: &'a W,
}

impl<W: Switch> Gate<'_, W> {
    /// The mode now: the stack's, made stricter by the switch (read only when it can matter).
    pub async fn mode(&self) -> (Mode, &'static str) {
        let stack = Mode::from_flags(self.dry_run, self.kill_switch);
        let why_stack = if self.kill_switch { "the kill switch is on" } else { "Argo Medic runs in dry-run mode" };
        if stack == Mode::Off {
            return (stack, why_stack);
        }
        let switch = self.switch.mode().await;
        match stack.strictest(switch) {
            Mode::Act => (Mode::Act, "Argo Medic acts"),
            m if m == stack => (m, why_stack),
            Mode::DryRun => (Mode::DryRun, "Argo Medic is switched to dry-run"),
            Mode::Off => (Mode::Off, "the switch is off"),
        }
    }

    /// The verdict on `request`. A service alert never reads the switch: it goes out whatever it says.
    pub async fn check(&self, request: &GateRequest<'_>) -> Answer {
        if request.kind.effect() == Effect::ServiceAlert {
            return Answer { verdict: Verdict::Act, mode: Mode::Act, why: "a service alert about Argo Medic itself" };
        }
        let (mode, why) = self.mode().await;
        let verdict = trusted_verdict(mode, request.kind, request.trust, request.approvable);
        let why = match (verdict, request.trust) {
            (Verdict::Report, TrustLevel::Observe) if mode == Mode::Act => "the trust level here is observe",
            (Verdict::Report, TrustLevel::Propose) if mode == Mode::Act => {
                "the trust level here is propose, and without Slack nobody can approve a proposal: observed"
            }
            (Verdict::Propose, _) => "the trust level here is propose: offered to a person",
            _ => why,
        };
        Answer { verdict, mode, why }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actions::ACTIONS;
    use crate::switch::FixedSwitch;

    #[test]
    fn one_meaning_of_each_mode() {
        for row in ACTIONS {
            assert_eq!(verdict(Mode::Act, row.kind), Verdict::Act, "{:?}", row.kind);
            let dry = verdict(Mode::DryRun, row.kind);
            let off = verdict(Mode::Off, row.kind);
            match row.effect {
                Effect::ServiceAlert => assert_eq!((dry, off), (Verdict::Act, Verdict::Act)),
                Effect::ChangesArgo | Effect::OpensThread => assert_eq!((dry, off), (Verdict::Report, Verdict::Silent)),
                Effect::AnswersThread | Effect::RecordsOnly | Effect::Reports => {
                    assert_eq!((dry, off), (Verdict::Act, Verdict::Silent))
                }
            }
        }
    }

    #[test]
    fn a_trust_level_only_ever_holds_back_what_the_mode_would_act_on() {
        let levels = [TrustLevel::Act, TrustLevel::Propose, TrustLevel::Observe];
        for row in ACTIONS {
            for mode in [Mode::Act, Mode::DryRun, Mode::Off] {
                for trust in levels {
                    for approvable in [true, false] {
                        let by_mode = verdict(mode, row.kind);
                        let got = trusted_verdict(mode, row.kind, trust, approvable);
                        let expected = match (by_mode, row.effect, trust, approvable) {
                            (Verdict::Act, Effect::ChangesArgo, TrustLevel::Propose, true) => Verdict::Propose,
                            (Verdict::Act, Effect::ChangesArgo, TrustLevel::Propose | TrustLevel::Observe, _) => Verdict::Report,
                            _ => by_mode,
                        };
                        assert_eq!(got, expected, "{:?} {mode} {trust} {approvable}", row.kind);
                    }
                }
            }
        }
        // Escalations reach people at every level.
        assert_eq!(trusted_verdict(Mode::Act, ActionKind::Escalate, TrustLevel::Observe, false), Verdict::Act);
    }

    fn mode_of(dry_run: bool, kill_switch: bool, switch: Mode) -> Mode {
        let gate = Gate { dry_run, kill_switch, switch: &FixedSwitch(switch) };
        futures_lite_block_on(gate.mode()).0
    }

    /// The gate's futures are ready at once on a fixed switch.
    fn futures_lite_block_on<F: std::future::Future>(f: F) -> F::Output {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut f = std::pin::pin!(f);
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => panic!("a fixed switch answers at once"),
        }
    }

    #[test]
    fn the_switch_only_makes_the_stack_stricter_and_the_kill_switch_is_off() {
        for switch in [Mode::Act, Mode::DryRun, Mode::Off] {
            assert_eq!(mode_of(false, false, switch), switch);
            assert_eq!(mode_of(true, false, switch), Mode::DryRun.strictest(switch));
            assert_eq!(mode_of(false, true, switch), Mode::Off);
            assert_eq!(mode_of(true, true, switch), Mode::Off);
        }
    }
}

//! Replay (`medic replay`): the recorded decisions ([`crate::record`]) decided again by a policy,
//! the current one or a candidate, and the differences: the way to judge a policy change on the
//! fleet's own history before it is deployed.
//!
//! A record holds what the policy read (the map's rule and carried rows of the Application), the
//! trigger, the incident's history and the time, so deciding again at the record's time is the
//! policy's answer then. A freeze that covered the app is re-applied (the record names it); a
//! record cut to its size bound is not replayed (counted apart).

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::app::{AppId, Application};
use crate::decision::Decision;
use crate::ladder::Action;
use crate::policy::DecisionPolicy;
use crate::record::DecisionRecord;
use crate::trigger::Trigger;
use crate::trust::{AppliedTrust, TrustLevel};

/// What a decision comes to, for comparing two of them: what it names, what it does, at which
/// level, by which rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outline {
    /// The failure mode's id.
    pub failure_mode: String,
    /// The action.
    pub action: Action,
    /// The trust level applied, for an action that has one.
    pub level: Option<TrustLevel>,
    /// The rule that decided.
    pub rule: String,
}

impl Outline {
    /// The outline of `decision`.
    pub fn of(decision: &Decision) -> Self {
        Self {
            failure_mode: decision.failure_mode.id().to_owned(),
            action: decision.action,
            level: decision.trust.as_ref().map(|t| t.level),
            rule: decision.rule.clone(),
        }
    }
}

/// One recorded decision the policy now takes otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// The app.
    pub app: AppId,
    /// When the decision was taken (and is taken again).
    pub decided_at: DateTime<Utc>,
    /// The app's project.
    pub project: String,
    /// As recorded.
    pub recorded: Outline,
    /// As the replaying policy decides.
    pub replayed: Outline,
    /// The replayed decision's reason.
    pub reason: String,
}

/// What a replay found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Replay {
    /// Records read.
    pub decisions: usize,
    /// Records decided again.
    pub replayed: usize,
    /// Records cut to their size bound, not decided again.
    pub truncated: usize,
    /// Records whose app or trigger no longer reads (a field or trigger of a future release),
    /// or that the policy refused: not decided again.
    pub unreadable: usize,
    /// The decisions taken otherwise, in time order.
    pub differences: Vec<Difference>,
}

/// The record's decision taken again by `policy`: `None` when the record cannot be decided again.
pub fn decide_again(record: &DecisionRecord, policy: &DecisionPolicy) -> Option<Decision> {
    let mut app = record.fields.app.clone();
    crate::app::strip_nulls(&mut app);
    let app: Application = serde_json::from_value(app).ok()?;
    let trigger: Trigger = record.trigger.parse().ok()?;
    let mut decision = policy.decide(&app, &trigger, &record.history, record.decided_at()).ok()?;
    // The freeze that covered the app then covers it in the replay.
    if let (Some(why), Some(trust)) = (&record.frozen, decision.trust.as_mut()) {
        *trust = AppliedTrust { level: trust.level.strictest(TrustLevel::Observe), why: why.clone() };
    }
    Some(decision)
}

/// Every record of `records` decided again by `policy`, oldest first.
pub fn replay(records: &[DecisionRecord], policy: &DecisionPolicy) -> Replay {
    let mut out = Replay { decisions: records.len(), ..Replay::default() };
    let mut sorted: Vec<&DecisionRecord> = records.iter().collect();
    sorted.sort_by_key(|r| (r.decided_at(), r.decision.app.clone()));
    for record in sorted {
        if record.fields.truncated {
            out.truncated += 1;
            continue;
        }
        let Some(again) = decide_again(record, policy) else {
            out.unreadable += 1;
            continue;
        };
        out.replayed += 1;
        let (recorded, replayed) = (Outline::of(&record.decision), Outline::of(&again));
        if recorded != replayed {
            out.differences.push(Difference {
                app: record.decision.app.clone(),
                decided_at: record.decided_at(),
                project: record.project.clone(),
                recorded,
                replayed,
                reason: again.reason,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PolicyConfig;
    use crate::incident::History;

    /// A freeze made the recorded decision `observe`: the replay applies it again, so the same
    /// policy decides the same; a record that does not name its freeze replays at `act`.
    #[test]
    fn a_freeze_that_covered_the_app_covers_it_in_the_replay() {
        let app = serde_json::json!({
            "metadata": {"name": "a", "namespace": "argocd", "resourceVersion": "1"},
            "spec": {"project": "payments"},
            "status": {
                "sync": {"status": "Synced", "revision": "ec99b81"},
                "health": {"status": "Progressing", "lastTransitionTime": "2026-12-01T08:55:00Z"},
                "reconciledAt": "2026-12-01T09:00:00Z"
            }
        });
        let policy = DecisionPolicy::new(PolicyConfig::default());
        let model: Application = serde_json::from_value(app.clone()).unwrap();
        let mut decision = policy.decide(&model, &Trigger::sweep(), &History::default(), "2026-12-01T10:00:00Z".parse().unwrap()).unwrap();
        assert!(decision.action.mutates_argo(), "a stale status is refreshed: {decision:?}");
        let frozen = "frozen: project payments until 2026-12-02T00:00:00Z".to_owned();
        decision.trust = Some(AppliedTrust { level: TrustLevel::Observe, why: frozen.clone() });
        let record = |frozen: Option<String>| {
            DecisionRecord::new(&decision, &app, "payments", "sweep", "act", &History::default()).frozen_by(frozen)
        };
        let named = replay(&[record(Some(frozen))], &policy);
        assert_eq!((named.replayed, named.differences.len()), (1, 0), "{named:?}");
        let unnamed = replay(&[record(None)], &policy);
        assert_eq!(unnamed.differences.len(), 1);
        assert_eq!(
            (unnamed.differences[0].recorded.level, unnamed.differences[0].replayed.level),
            (Some(TrustLevel::Observe), Some(TrustLevel::Act))
        );
    }
}

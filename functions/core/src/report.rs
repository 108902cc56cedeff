//! The shadow report (`medic report`): from the decisions recorded ([`crate::record`]), per
//! failure mode and project, how many decisions there were, what each trust level would have done
//! with them, and what happened next — the evidence a team reads before it raises a level.
//!
//! What happened next is read from the same app's later records, never from messages:
//! - **Argo Medic acted**: the decision was taken at `act` in mode `act` and changes Argo CD or
//!   tells a person (it was performed);
//! - **a person acted**: a later record shows an operation started after the decision by a user
//!   (`status.operationState.operation.initiatedBy.username`), neither Argo CD's automated sync
//!   (`initiatedBy.automated`) nor Argo Medic's own (its idempotency key in `operation.info`);
//! - **healed by itself**: a later record finds the app healthy within the settle time, and
//!   nobody acted; **healed later**: the same, after the settle time;
//! - **still broken**: later records find it in trouble, none healthy;
//! - **not seen since**: no later record. In a dry run and at `observe` no incident opens, so the
//!   sweeper does not look at an app again once it is calm, and its healing leaves no record.
//!
//! What the records leave open (not seen since, or still broken), the app as Argo CD shows it
//! when the report is made settles, when it is given ([`report_with_now`]): a deployment a person
//! started since (`status.history[].initiatedBy`, or the operation's), calm now (healed when
//! `status.health.lastTransitionTime` says), or still in trouble.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::app::{AppId, Application, IDEMPOTENCY_INFO_NAME, OperationInitiator};
use crate::catalogue::FailureMode;
use crate::ladder::Action;
use crate::record::DecisionRecord;
use crate::trust::TrustLevel;

/// What happened after a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Next {
    /// Argo Medic performed the decision's action.
    ArgoMedicActed,
    /// A person started an operation on the app after the decision.
    PersonActed,
    /// The app was healthy again within the settle time, and nobody acted.
    HealedByItself,
    /// The app was healthy again after the settle time, and nobody acted.
    HealedLater,
    /// Later records find the app in trouble, none healthy.
    StillBroken,
    /// No later record of the app.
    NotSeenSince,
}

impl Next {
    /// Every outcome, in the report's column order.
    pub const ALL: [Next; 6] =
        [Next::ArgoMedicActed, Next::PersonActed, Next::HealedByItself, Next::HealedLater, Next::StillBroken, Next::NotSeenSince];

    /// The outcome's name in the table and the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Next::ArgoMedicActed => "argo_medic_acted",
            Next::PersonActed => "person_acted",
            Next::HealedByItself => "healed_by_itself",
            Next::HealedLater => "healed_later",
            Next::StillBroken => "still_broken",
            Next::NotSeenSince => "not_seen_since",
        }
    }
}

/// The decisions of one failure mode in one project.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReportRow {
    /// The failure mode's id (`sync-failed-transient`).
    pub failure_mode: String,
    /// The apps' Argo CD project.
    pub project: String,
    /// How many decisions were taken.
    pub decisions: usize,
    /// How many apps they were about.
    pub apps: usize,
    /// The trust level each decision applied (`act`, `propose`, `observe`; `-` for a decision
    /// that neither changes Argo CD nor tells a person), by count.
    pub levels: BTreeMap<String, usize>,
    /// At `act`, the decisions that would change Argo CD (refresh, hard refresh, sync); at
    /// `propose` each is offered to a person instead; at `observe` each is only recorded.
    pub would_change: usize,
    /// The decisions that hand the app to a person, at every level but `observe`.
    pub would_escalate: usize,
    /// The decisions that wait, or do nothing.
    pub would_wait: usize,
    /// What happened next, by count of decisions.
    pub next: BTreeMap<Next, usize>,
}

/// The report over the decisions recorded in a time span.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The earliest decision counted.
    pub since: DateTime<Utc>,
    /// Every decision read, trouble or not.
    pub decisions: usize,
    /// One row per failure mode and project with trouble, in mode then project order.
    pub rows: Vec<ReportRow>,
}

/// True for a failure mode that is no trouble: its decisions are evidence of an outcome, not
/// rows of the report.
fn calm(mode: FailureMode) -> bool {
    matches!(mode, FailureMode::Healthy | FailureMode::OutOfScope | FailureMode::OptedOut)
}

/// True when the decision was performed: taken in mode `act` at level `act` (or with no level,
/// which only an action that neither changes Argo CD nor tells a person has).
fn performed(r: &DecisionRecord) -> bool {
    let acts = r.decision.action.mutates_argo() || r.decision.action == Action::Escalate;
    let level = r.decision.trust.as_ref().map_or(TrustLevel::Act, |t| t.level);
    acts && r.mode == crate::record::MODE_ACT && level == TrustLevel::Act
}

/// The Application a record read, as the model holds it.
fn modelled(r: &DecisionRecord) -> Option<Application> {
    let mut app = r.fields.app.clone();
    crate::app::strip_nulls(&mut app);
    serde_json::from_value(app).ok()
}

/// The operation `app` runs or last ran, when it carries Argo Medic's idempotency key.
fn ours(app: &Application) -> Option<&crate::app::Operation> {
    app.status.operation_state.as_ref()?.operation.as_deref().filter(|o| o.info.iter().any(|i| i.name == IDEMPOTENCY_INFO_NAME))
}

/// The users Argo Medic's own operations ran as: those of the operations that carry its key in
/// the records (a history entry keeps who started it, not the key).
fn medic_users(records: &[DecisionRecord]) -> BTreeSet<String> {
    records
        .iter()
        .filter_map(modelled)
        .filter_map(|app| ours(&app).and_then(|o| o.initiated_by.as_ref()).map(|i| i.username.clone()))
        .filter(|u| !u.is_empty())
        .collect()
}

/// True when `app` shows a deployment or an operation a person started after `at`
/// (`status.history[].initiatedBy`, `status.operationState`): a user named, not Argo CD's
/// automated sync, and neither an operation carrying Argo Medic's key nor one of `medic`, the
/// users its own operations ran as.
fn person_acted_since(app: &Application, at: DateTime<Utc>, medic: &BTreeSet<String>) -> bool {
    let by_person = |i: &OperationInitiator| !i.automated && !i.username.is_empty() && !medic.contains(&i.username);
    let deployed = app
        .status
        .history
        .iter()
        .any(|h| h.deploy_started_at.or(h.deployed_at).is_some_and(|t| t > at) && h.initiated_by.as_ref().is_some_and(by_person));
    let operated = app.status.operation_state.as_ref().is_some_and(|s| {
        let operation = s.operation.as_deref();
        s.started_at.is_some_and(|t| t > at)
            && ours(app).is_none()
            && operation.and_then(|o| o.initiated_by.as_ref()).is_some_and(by_person)
    });
    deployed || operated
}

/// What the app as Argo CD shows it now says happened after `d`: a person deployed it since, it
/// is calm (healed, timed by `status.health.lastTransitionTime`), or it is still in trouble.
fn next_from_now(d: &DecisionRecord, now: &Application, settle: Duration, medic: &BTreeSet<String>) -> Next {
    let at = d.decided_at();
    if person_acted_since(now, at, medic) {
        return Next::PersonActed;
    }
    if now.is_calm() {
        let healed = now.status.health.as_ref().and_then(|h| h.last_transition_time).filter(|t| *t > at).unwrap_or(at);
        return if healed - at <= settle { Next::HealedByItself } else { Next::HealedLater };
    }
    Next::StillBroken
}

/// What happened after `d`, from `later`: the same app's records after it, oldest first
/// (`medic`: the users Argo Medic's own operations ran as).
pub fn next_of(d: &DecisionRecord, later: &[&DecisionRecord], settle: Duration, medic: &BTreeSet<String>) -> Next {
    if performed(d) {
        return Next::ArgoMedicActed;
    }
    let at = d.decided_at();
    for r in later {
        if modelled(r).is_some_and(|app| person_acted_since(&app, at, medic)) {
            return Next::PersonActed;
        }
        if performed(r) && r.decision.action != Action::Escalate {
            // A later decision changed Argo CD before the app healed: not by itself.
            return Next::ArgoMedicActed;
        }
        if r.decision.failure_mode == FailureMode::Healthy {
            return if r.decided_at() - at <= settle { Next::HealedByItself } else { Next::HealedLater };
        }
    }
    if later.is_empty() { Next::NotSeenSince } else { Next::StillBroken }
}

/// The report over `records` (any order), with `settle` the time a healing counts as "by itself".
pub fn report(records: &[DecisionRecord], since: DateTime<Utc>, settle: Duration) -> Report {
    report_with_now(records, since, settle, &BTreeMap::new())
}

/// [`report`], with the apps as Argo CD shows them now (`now`, by app): what an app's later
/// records do not tell (no later record, or only trouble), its state now does. In a dry run and
/// at `observe` no incident opens, so a calm app is not looked at again and leaves no record of
/// its healing; its state now shows it.
pub fn report_with_now(records: &[DecisionRecord], since: DateTime<Utc>, settle: Duration, now: &BTreeMap<AppId, Application>) -> Report {
    let medic = medic_users(records);
    let mut by_app: BTreeMap<&str, Vec<&DecisionRecord>> = BTreeMap::new();
    for r in records {
        by_app.entry(r.decision.app.as_str()).or_default().push(r);
    }
    let mut rows: BTreeMap<(String, String), (ReportRow, std::collections::BTreeSet<&str>)> = BTreeMap::new();
    for (app, mut history) in by_app {
        history.sort_by_key(|r| r.decided_at());
        for (i, d) in history.iter().enumerate() {
            if calm(d.decision.failure_mode) {
                continue;
            }
            let key = (d.decision.failure_mode.id().to_owned(), d.project.clone());
            let (row, apps) = rows.entry(key.clone()).or_insert_with(|| {
                (ReportRow { failure_mode: key.0.clone(), project: key.1.clone(), ..ReportRow::default() }, Default::default())
            });
            row.decisions += 1;
            apps.insert(app);
            let level = d.decision.trust.as_ref().map_or("-", |t| t.level.as_str());
            *row.levels.entry(level.to_owned()).or_insert(0) += 1;
            match d.decision.action {
                a if a.mutates_argo() => row.would_change += 1,
                Action::Escalate => row.would_escalate += 1,
                _ => row.would_wait += 1,
            }
            let mut next = next_of(d, &history[i + 1..], settle, &medic);
            if let (Next::NotSeenSince | Next::StillBroken, Some(app)) = (next, now.get(&d.decision.app)) {
                next = next_from_now(d, app, settle, &medic);
            }
            *row.next.entry(next).or_insert(0) += 1;
        }
    }
    Report {
        since,
        decisions: records.len(),
        rows: rows
            .into_values()
            .map(|(mut row, apps)| {
                row.apps = apps.len();
                row
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::decision::Decision;

    /// The recorded modes (`switch::Mode`'s names; the report reads records, not the switch).
    const ACT: &str = crate::record::MODE_ACT;
    const DRY_RUN: &str = "dry-run";
    use crate::incident::History;
    use crate::trust::AppliedTrust;

    fn t(minutes: i64) -> DateTime<Utc> {
        "2026-12-01T10:00:00Z".parse::<DateTime<Utc>>().unwrap() + Duration::minutes(minutes)
    }

    /// A decision about `app` at minute `at`: `mode` of failure, `action` at `level`, in stack
    /// mode `stack`, on an app whose operation is `operation` (JSON, or null).
    fn rec(
        app: &str,
        at: i64,
        mode: FailureMode,
        action: Action,
        level: Option<TrustLevel>,
        stack: &str,
        operation: Value,
    ) -> DecisionRecord {
        let decision = Decision {
            failure_mode: mode,
            action,
            trust: level.map(|level| AppliedTrust { level, why: "the policy's default trust level".into() }),
            ..Decision::nothing(&AppId::new("argocd", app), t(at))
        };
        let app_json = json!({
            "metadata": {"name": app, "namespace": "argocd"},
            "spec": {"project": "payments"},
            "status": {"operationState": operation}
        });
        DecisionRecord::new(&decision, &app_json, "payments", "sweep", stack, &History::default())
    }

    fn healthy(app: &str, at: i64) -> DecisionRecord {
        rec(app, at, FailureMode::Healthy, Action::None, None, DRY_RUN, Value::Null)
    }

    const SETTLE: Duration = Duration::minutes(10);

    #[test]
    fn what_happened_next_is_read_from_the_app_s_later_records() {
        let stuck = |app: &str, at: i64, stack: &str, level: TrustLevel| {
            rec(app, at, FailureMode::StaleReconcile, Action::Refresh, Some(level), stack, Value::Null)
        };
        let person = json!({
            "operation": {"initiatedBy": {"username": "alice"}},
            "startedAt": t(3).to_rfc3339(), "phase": "Running"
        });
        let auto = json!({"operation": {"initiatedBy": {"automated": true}}, "startedAt": t(3).to_rfc3339()});
        let ours = json!({
            "operation": {"initiatedBy": {"username": "argo-medic"}, "info": [{"name": IDEMPOTENCY_INFO_NAME, "value": "am1-x"}]},
            "startedAt": t(3).to_rfc3339()
        });
        let cases: Vec<(&str, Vec<DecisionRecord>, Next)> = vec![
            ("acted", vec![stuck("a", 0, ACT, TrustLevel::Act)], Next::ArgoMedicActed),
            ("healed within settle", vec![stuck("a", 0, DRY_RUN, TrustLevel::Act), healthy("a", 8)], Next::HealedByItself),
            ("observe, healed after", vec![stuck("a", 0, ACT, TrustLevel::Observe), healthy("a", 45)], Next::HealedLater),
            (
                "a person synced",
                vec![
                    stuck("a", 0, ACT, TrustLevel::Propose),
                    rec("a", 5, FailureMode::StaleReconcile, Action::Wait, None, ACT, person),
                    healthy("a", 7),
                ],
                Next::PersonActed,
            ),
            (
                "auto-sync is not a person",
                vec![
                    stuck("a", 0, DRY_RUN, TrustLevel::Act),
                    rec("a", 5, FailureMode::StaleReconcile, Action::Wait, None, DRY_RUN, auto),
                    healthy("a", 7),
                ],
                Next::HealedByItself,
            ),
            (
                "Argo Medic's own sync is not a person",
                vec![stuck("a", 0, DRY_RUN, TrustLevel::Act), rec("a", 5, FailureMode::StaleReconcile, Action::Wait, None, DRY_RUN, ours)],
                Next::StillBroken,
            ),
            ("no later look", vec![stuck("a", 0, DRY_RUN, TrustLevel::Act)], Next::NotSeenSince),
            (
                "never healthy again",
                vec![stuck("a", 0, DRY_RUN, TrustLevel::Act), stuck("a", 20, DRY_RUN, TrustLevel::Act)],
                Next::StillBroken,
            ),
        ];
        for (what, records, expected) in cases {
            let later: Vec<&DecisionRecord> = records[1..].iter().collect();
            assert_eq!(next_of(&records[0], &later, SETTLE, &BTreeSet::new()), expected, "{what}");
        }
    }

    #[test]
    fn one_row_per_mode_and_project_counting_decisions_levels_and_outcomes() {
        let records = vec![
            rec("a", 0, FailureMode::StaleReconcile, Action::Refresh, Some(TrustLevel::Observe), ACT, Value::Null),
            healthy("a", 5),
            rec("b", 0, FailureMode::StaleReconcile, Action::Refresh, Some(TrustLevel::Observe), ACT, Value::Null),
            rec("b", 30, FailureMode::StaleReconcile, Action::Escalate, Some(TrustLevel::Observe), ACT, Value::Null),
            rec("c", 1, FailureMode::HookFailed, Action::Escalate, None, ACT, Value::Null),
        ];
        let r = report(&records, t(0), SETTLE);
        assert_eq!(r.decisions, 5, "the healthy decision is read, not a row");
        let rows: Vec<(&str, usize, usize, usize, usize)> =
            r.rows.iter().map(|w| (w.failure_mode.as_str(), w.decisions, w.apps, w.would_change, w.would_escalate)).collect();
        assert_eq!(rows, [("hook-failed", 1, 1, 0, 1), ("stale-reconcile", 3, 2, 2, 1)]);
        let stale = &r.rows[1];
        assert_eq!(stale.levels, BTreeMap::from([("observe".to_owned(), 3)]));
        assert_eq!(stale.next, BTreeMap::from([(Next::HealedByItself, 1), (Next::StillBroken, 1), (Next::NotSeenSince, 1)]));
        assert_eq!(r.rows[0].next, BTreeMap::from([(Next::ArgoMedicActed, 1)]), "an escalation at act was told");
    }
}

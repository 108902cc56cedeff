//! Liveness of the ladder: whatever Argo CD answers and wherever a worker dies, an incident either
//! gets a new action or reaches a human within a bound; it never waits forever.

use chrono::{DateTime, Duration, Utc};
use medic_core::{Action, Application, Attempt, DecisionPolicy, History, IncidentKey, Outcome, PolicyConfig, Rung, Trigger};

fn sample(name: &str) -> Application {
    let path = format!("{}/../../events/apps/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("sample app")).expect("sample app parses")
}

/// The app as observed at `now`: Argo CD reconciles every few minutes, so a status that a test
/// moves minutes ahead would otherwise look stale (and stale status is refreshed before anything).
fn observed(app: &Application, now: DateTime<Utc>) -> Application {
    let mut app = app.clone();
    app.status.reconciled_at = Some(now - Duration::minutes(2));
    app
}

fn captured() -> DateTime<Utc> {
    "2026-11-01T12:30:00Z".parse().unwrap()
}

fn policy() -> DecisionPolicy {
    DecisionPolicy::new(PolicyConfig::default())
}

fn trigger() -> Trigger {
    "on-sync-failed".parse().unwrap()
}

/// The incident the policy opens for `app` now, with the given attempts.
fn history(app: &Application, attempts: Vec<Attempt>) -> (IncidentKey, History) {
    let first = policy().decide(app, &trigger(), &History::default(), captured()).unwrap();
    let incident = first.incident.expect("the sample is in trouble");
    (incident.clone(), History { incident: Some(incident), attempts })
}

fn attempt(rung: Rung, at: DateTime<Utc>, key: Option<medic_core::IdempotencyKey>, outcome: Outcome) -> Attempt {
    Attempt { rung, at, idempotency_key: key, outcome }
}

#[test]
fn a_refused_sync_is_tried_again_under_a_fresh_key_after_the_bounded_wait_then_escalated() {
    let app = sample("sync-failed-transient.json");
    let cfg = PolicyConfig::default();
    let first = policy().decide(&app, &trigger(), &History::default(), captured()).unwrap();
    assert_eq!(first.action, Action::Sync, "{}", first.reason);
    let mut keys = vec![first.idempotency_key.clone().unwrap()];
    let (_, mut hist) = history(&app, vec![]);
    let mut now = captured();
    for refusal in [Outcome::OperationInProgress, Outcome::SyncWindowBlocked, Outcome::OperationInProgress] {
        hist.attempts.push(attempt(Rung::Sync, now, keys.last().cloned(), refusal));
        // Within the bound: wait, and say until when.
        let soon = policy().decide(&observed(&app, now + Duration::minutes(1)), &trigger(), &hist, now + Duration::minutes(1)).unwrap();
        assert_eq!(soon.action, Action::Wait, "{}", soon.reason);
        assert!(soon.retry_after_secs.unwrap() >= 1);
        now += Duration::seconds(cfg.refused_wait_secs);
        let later = policy().decide(&observed(&app, now), &trigger(), &hist, now).unwrap();
        if hist.refusals(Rung::Sync) < cfg.max_refusals {
            assert_eq!(later.action, Action::Sync, "{}", later.reason);
            let key = later.idempotency_key.clone().unwrap();
            assert!(!keys.contains(&key), "a retried rung must not reuse a key on record");
            keys.push(key);
        } else {
            assert_eq!(later.action, Action::Escalate, "{}", later.reason);
            assert!(later.reason.contains("refused the sync 3 times"), "{}", later.reason);
        }
    }
    // The whole episode took (max_refusals) waits: a documented bound, not forever.
    assert_eq!(now - captured(), Duration::seconds(cfg.refused_wait_secs * cfg.max_refusals as i64));
}

#[test]
fn an_escalation_whose_worker_died_before_telling_anyone_runs_again() {
    let app = sample("hook-failed.json");
    let first = policy().decide(&app, &trigger(), &History::default(), captured()).unwrap();
    assert_eq!(first.action, Action::Escalate, "{}", first.reason);
    let key = first.idempotency_key.clone();
    // An in-progress claim (outcome `requested`): the worker was killed inside the Slack post.
    let (_, crashed) = history(&app, vec![attempt(Rung::Escalate, captured(), key.clone(), Outcome::Requested)]);
    let later = captured() + Duration::minutes(15);
    let again = policy().decide(&observed(&app, later), &trigger(), &crashed, later).unwrap();
    assert_eq!(again.action, Action::Escalate, "{}", again.reason);
    assert_eq!(again.idempotency_key, key, "the same key, so the store lets it take over the expired claim");
    // Once the escalation completed, a human owns it.
    let (_, done) = history(&app, vec![attempt(Rung::Escalate, captured(), key, Outcome::Succeeded)]);
    let owned = policy().decide(&observed(&app, later), &trigger(), &done, later).unwrap();
    assert_eq!(owned.action, Action::None, "{}", owned.reason);
    assert!(owned.reason.contains("a human owns this incident"), "{}", owned.reason);
}

#[test]
fn an_app_that_opts_out_or_leaves_the_scope_ends_its_open_incident() {
    let app = sample("hook-failed.json");
    let (_, open) = history(&app, vec![]);
    let mut opted = app.clone();
    opted.metadata.annotations.insert(medic_core::app::OPT_OUT_KEY.into(), "true".into());
    let d = policy().decide(&opted, &trigger(), &open, captured()).unwrap();
    assert!(d.resolves_incident && d.action == Action::None, "{}", d.reason);
    let elsewhere = DecisionPolicy::new(PolicyConfig { projects: vec!["another-project".into()], ..PolicyConfig::default() });
    let d = elsewhere.decide(&app, &trigger(), &open, captured()).unwrap();
    assert!(d.resolves_incident && d.action == Action::None, "{}", d.reason);
    // Without an open incident there is nothing to end.
    let d = policy().decide(&opted, &trigger(), &History::default(), captured()).unwrap();
    assert!(!d.resolves_incident);
}

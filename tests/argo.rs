//! The Argo CD client and the per-app step over real HTTP against the simulator: every error
//! variant, backoff under 429/5xx, the breaker, refresh verification, the infos-key idempotency
//! (including a crash between the sync call and recording it), and the swagger check of every
//! request sent and response received.

use std::time::{Duration, Instant};

use medic_adapters::argocd::HttpArgoClient;
use medic_adapters::breaker::BreakerSettings;
use medic_adapters::memory::MemoryIncidentStore;
use medic_core::app::{ApplicationSyncRequest, IDEMPOTENCY_INFO_NAME, Info};
use medic_core::incident::Outcome;
use medic_core::permit::Permit;
use medic_core::ports::{ArgoApi, ArgoError, IncidentStore, ListQuery};
use medic_core::step::{StepError, StepResult};
use medic_core::sweep::LIST_FIELDS;
use medic_core::{Action, PolicyConfig, Trigger};
use medic_sim::{ArgoSim, Fault, FaultKind, Outcomes, Policy, RefreshOutcome, SimConfig, SyncOutcome, SyncWindowRule, TokenGrant};

use crate::support::{DiesAt, Dying, LosesCompletion, Parts, TestClock, app, client, default_token, settings, sim_with_samples};

fn sync_request(name: &str, project: &str) -> ApplicationSyncRequest {
    ApplicationSyncRequest { name: name.into(), project: project.into(), app_namespace: "argocd".into(), ..Default::default() }
}

/// Every request our client sent, and every answer the simulator gave, conform to Argo CD's spec
/// (skipped, and counted in `make test`'s summary, on a machine without the spec).
fn assert_spec_conformance(sim: &ArgoSim) {
    let test = std::thread::current().name().unwrap_or("argo").to_owned();
    let Some(spec) = medic_sim::swagger::reference_spec(&format!("{test} (swagger conformance)")) else { return };
    let requests = sim.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        let mut problems = spec.check_request(r);
        problems.extend(spec.check_response(r));
        assert!(problems.is_empty(), "{} {} -> {}: {problems:?}", r.method, r.path, r.status);
        if r.method != "GET" {
            assert_eq!(r.content_type.as_deref(), Some("application/json"), "{} {}", r.method, r.path);
        }
        assert!(r.authorization.as_deref().is_some_and(|a| a.starts_with("Bearer ")), "{} {}", r.method, r.path);
    }
}

#[tokio::test]
async fn reads_lists_and_syncs_as_argo_cd_expects() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = client(&sim);
    assert_eq!(c.version_info().await.unwrap().version, crate::support::served_profile().unwrap_or_else(|| SimConfig::default().version));
    c.version_info().await.unwrap();
    assert_eq!(sim.counts().version, 1, "the version is read once");

    let full = c.get_app(&app("checkout", "payments")).await.unwrap();
    assert_eq!(full.id(), "argocd/checkout");
    assert!(full.incompleteness().is_none());

    let query =
        ListQuery { projects: vec!["platform".into()], fields: LIST_FIELDS.iter().map(|f| f.to_string()).collect(), ..Default::default() };
    let masked = c.list_apps(&query).await.unwrap();
    assert!(masked.len() >= 3 && masked.iter().all(|a| a.spec.project == "platform"));
    assert!(masked.iter().all(|a| a.incompleteness().is_some()), "masked items lack resourceVersion, so the policy refuses them");
    let selected = c.list_apps(&ListQuery { selector: "team=platform,env=prod".into(), ..Default::default() }).await.unwrap();
    assert_eq!(selected.len(), masked.len());

    let mut req = sync_request("observability", "platform");
    req.infos = vec![Info { name: IDEMPOTENCY_INFO_NAME.into(), value: "am1-0123456789abcdef0123456789abcdef".into() }];
    let synced = c.sync(medic_core::permit::Permit::for_tests(), &app("observability", "platform"), &req).await.unwrap();
    assert!(synced.recorded_idempotency_keys().any(|k| k == "am1-0123456789abcdef0123456789abcdef"));
    assert_spec_conformance(&sim);
}

/// `medic freeze list`'s read of Argo CD's own sync windows: every project the token may `get`
/// that has windows, each window with whether Argo CD says it is active; Argo Medic's own token
/// (no access to projects) sees none, and says so by counting no visible project.
#[tokio::test]
async fn the_sync_windows_of_projects_are_read_with_which_are_active() {
    use medic_adapters::argocd::{ProjectSyncWindows, SyncWindow};
    let mut config = SimConfig {
        sync_windows: vec![
            SyncWindowRule::deny("payments"),
            SyncWindowRule { project: "payments".into(), manual_sync: true, sync_overrun: false, active: false },
            SyncWindowRule { project: "platform".into(), manual_sync: true, sync_overrun: false, active: false },
        ],
        ..SimConfig::default()
    };
    config.tokens.push(TokenGrant::for_subject("alice"));
    config.policies.push(Policy::projects("alice", "get", "*"));
    let sim = sim_with_samples(config).await;
    let operator = HttpArgoClient::new(settings(&sim, &TokenGrant::for_subject("alice").token)).unwrap();
    let found = operator.project_sync_windows().await.unwrap();
    assert!(found.visible_projects >= 3, "{found:?}");
    let window = |schedule: &str, duration: &str, manual_sync| SyncWindow {
        kind: "deny".into(),
        schedule: schedule.into(),
        duration: duration.into(),
        applications: vec!["*".into()],
        manual_sync,
        ..SyncWindow::default()
    };
    assert_eq!(
        found.projects,
        [
            ProjectSyncWindows {
                project: "payments".into(),
                windows: vec![(window("* * * * *", "24h", false), true), (window("0 22 * * *", "8h", true), false)],
            },
            ProjectSyncWindows { project: "platform".into(), windows: vec![(window("0 22 * * *", "8h", true), false)] },
        ]
    );
    let own = client(&sim).project_sync_windows().await.unwrap();
    assert_eq!((own.visible_projects, own.projects.len()), (0, 0));
    assert_spec_conformance(&sim);
}

#[tokio::test]
async fn each_argo_cd_error_maps_to_its_variant() {
    let config = SimConfig {
        sync_windows: vec![SyncWindowRule { project: "platform".into(), manual_sync: false, sync_overrun: false, active: true }],
        tokens: vec![
            TokenGrant { token: default_token(), subject: "argo-medic".into(), expired: false },
            TokenGrant { expired: true, ..TokenGrant::for_subject("old") },
        ],
        policies: vec![
            Policy::new("argo-medic", "get", "*"),
            Policy::new("argo-medic", "sync", "payments"),
            Policy::new("argo-medic", "sync", "platform"),
            Policy::new("old", "get", "*"),
        ],
        ..SimConfig::default()
    };
    let sim = sim_with_samples(config).await;
    let c = client(&sim);
    let err = |r: Result<medic_core::Application, ArgoError>| r.expect_err("an error");

    assert!(matches!(err(c.get_app(&app("nope", "payments")).await), ArgoError::NotFound(m) if m.contains("\"nope\" not found")));
    let hidden = medic_core::event::AppRef { name: "nope".into(), namespace: "argocd".into(), project: None };
    assert_eq!(err(c.get_app(&hidden).await), ArgoError::PermissionDenied("permission denied".into()));
    assert!(
        matches!(err(c.sync(medic_core::permit::Permit::for_tests(), &app("sandbox-42", "sandbox"), &sync_request("sandbox-42", "sandbox")).await), ArgoError::PermissionDenied(m) if m.contains("applications, sync, sandbox/sandbox-42"))
    );
    assert!(matches!(
        err(c
            .sync(medic_core::permit::Permit::for_tests(), &app("observability", "platform"), &sync_request("observability", "platform"))
            .await),
        ArgoError::SyncWindowBlocked(_)
    ));
    assert_eq!(
        err(c
            .sync(medic_core::permit::Permit::for_tests(), &app("ledger-reports", "payments"), &sync_request("ledger-reports", "payments"))
            .await),
        ArgoError::OperationInProgress
    );
    let mut deleting = SimConfig::default();
    deleting.policies.clear();
    drop(deleting);
    assert!(
        matches!(c.list_apps(&ListQuery { selector: "env in (".into(), ..Default::default() }).await, Err(ArgoError::Invalid(m)) if m.contains("error parsing the selector"))
    );

    let before = sim.requests().len();
    let bad = HttpArgoClient::new(settings(&sim, "not-a-jwt")).unwrap();
    assert!(matches!(bad.get_app(&app("checkout", "payments")).await, Err(ArgoError::Unauthenticated(m)) if m == "no session information"));
    assert_eq!(sim.requests().len(), before + 1, "a rejected token is not retried");
    let expired = HttpArgoClient::new(settings(&sim, &TokenGrant::for_subject("old").token)).unwrap();
    assert!(
        matches!(expired.get_app(&app("checkout", "payments")).await, Err(ArgoError::Unauthenticated(m)) if m.contains("token is expired"))
    );
    assert_spec_conformance(&sim);
}

#[tokio::test]
async fn a_deleting_app_refuses_a_sync() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = client(&sim);
    assert_eq!(
        c.sync(medic_core::permit::Permit::for_tests(), &app("sandbox-42", "sandbox"), &sync_request("sandbox-42", "sandbox"))
            .await
            .unwrap_err(),
        ArgoError::AppDeleting
    );
}

#[tokio::test]
async fn throttling_and_outages_are_retried_with_backoff_and_retry_after_is_honoured() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = client(&sim);
    sim.inject(Fault {
        path_contains: Some("/checkout".into()),
        method: None,
        kind: FaultKind::Status { code: 429, retry_after_secs: Some(1) },
        times: 1,
    });
    sim.inject(Fault {
        path_contains: Some("/checkout".into()),
        method: None,
        kind: FaultKind::Status { code: 503, retry_after_secs: None },
        times: 1,
    });
    sim.inject(Fault { path_contains: Some("/checkout".into()), method: None, kind: FaultKind::Drop, times: 1 });
    let started = Instant::now();
    let got = c.get_app(&app("checkout", "payments")).await.expect("succeeds after three failures");
    assert_eq!(got.metadata.name, "checkout");
    assert!(started.elapsed() >= Duration::from_secs(1), "waited out Retry-After: {:?}", started.elapsed());
    let statuses: Vec<u16> = sim.requests().iter().filter(|r| r.path.ends_with("/checkout")).map(|r| r.status).collect();
    assert_eq!(statuses.len(), 4, "{statuses:?}");
    assert_eq!(&statuses[..2], &[429, 503]);
    assert_eq!(statuses[3], 200);

    // A Retry-After beyond what the caller may wait is not slept through in-process.
    sim.inject(Fault { path_contains: None, method: None, kind: FaultKind::Status { code: 429, retry_after_secs: Some(120) }, times: 1 });
    let err = c.get_app(&app("checkout", "payments")).await.unwrap_err();
    assert_eq!(err, ArgoError::RateLimited { retry_after: Some(Duration::from_secs(120)) });

    // An outage that outlasts the retries surfaces as Transient, never as success or silence.
    sim.inject(Fault { path_contains: None, method: None, kind: FaultKind::Status { code: 503, retry_after_secs: None }, times: 100 });
    let before = sim.requests().len();
    assert!(matches!(c.get_app(&app("checkout", "payments")).await, Err(ArgoError::Transient(m)) if m.contains("503")));
    assert_eq!(sim.requests().len() - before, 4, "max_attempts bounds the retries");
}

#[tokio::test]
async fn slow_answers_time_out_and_are_retried() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = client(&sim);
    sim.inject(Fault { path_contains: Some("/checkout".into()), method: None, kind: FaultKind::Latency(Duration::from_secs(3)), times: 1 });
    let started = Instant::now();
    assert!(c.get_app(&app("checkout", "payments")).await.is_ok());
    let elapsed = started.elapsed();
    // At least the 2 s request timeout, but less than the 3 s the slow answer takes: the client
    // gave up on the slow attempt and retried rather than waiting it out.
    assert!(elapsed >= Duration::from_secs(2) && elapsed < Duration::from_secs(3), "{elapsed:?}");
}

#[tokio::test]
async fn the_breaker_stops_calling_a_failing_argo_cd_then_ramps_back() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let mut s = settings(&sim, &default_token());
    s.max_attempts = 1;
    let c = HttpArgoClient::with_breaker(
        s,
        BreakerSettings { failure_threshold: 3, open_for: Duration::from_millis(500), max_open_for: Duration::from_secs(2), ramp_steps: 2 },
    )
    .unwrap();
    sim.inject(Fault { path_contains: None, method: None, kind: FaultKind::Status { code: 502, retry_after_secs: None }, times: 3 });
    for _ in 0..3 {
        assert!(matches!(c.get_app(&app("checkout", "payments")).await, Err(ArgoError::Transient(_))));
    }
    let before = sim.requests().len();
    assert!(matches!(c.get_app(&app("checkout", "payments")).await, Err(ArgoError::CircuitOpen { .. })));
    assert_eq!(sim.requests().len(), before, "an open breaker makes no call");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(c.get_app(&app("checkout", "payments")).await.is_ok(), "a probe passes after the open period");
    assert!(c.get_app(&app("checkout", "payments")).await.is_ok());
    assert_eq!(c.breaker().state(), medic_adapters::breaker::BreakerState::Closed);
}

/// No settle time: the tests act again as soon as the simulated operation has finished.
fn test_policy() -> PolicyConfig {
    PolicyConfig { instance_id: "test".into(), settle_secs: 0, ..PolicyConfig::default() }
}

#[tokio::test]
async fn a_sync_carries_its_key_and_a_crash_before_recording_never_syncs_twice() {
    let sim = sim_with_samples(SimConfig::default()).await;
    // The re-sync fails again, so the app is back in the same failure with our key on record.
    sim.set_outcomes("observability", Outcomes { sync: SyncOutcome::Fail { message: "one or more synchronization tasks are not valid: no matches for kind \"ServiceMonitor\" in version \"monitoring.coreos.com/v1\"".into() }, ..Default::default() });
    let c = client(&sim);
    let inner = std::sync::Arc::new(MemoryIncidentStore::default());
    let crashing = Parts::new(LosesCompletion(std::sync::Arc::clone(&inner)), test_policy());
    let target = app("observability", "platform");

    let first = crashing.step(&c, false, Duration::ZERO).run(&target, &Trigger::manual(), None).await;
    assert!(matches!(first, Err(StepError::Store(_))), "{first:?}");
    assert_eq!(sim.counts().sync, 1);
    let key = sim.app("argocd", "observability").unwrap()["operation"]["info"]
        .as_array()
        .and_then(|infos| infos.iter().find(|i| i["name"] == IDEMPOTENCY_INFO_NAME))
        .map(|i| i["value"].as_str().unwrap().to_owned())
        .expect("the sync carries its idempotency key in infos");
    tokio::time::sleep(Duration::from_millis(400)).await; // the operation runs and fails again

    // Rerun with the same (crashed) store: the unfinished claim it left is resumed, and Argo
    // CD's operation.info holds its key, so it is completed without a second sync; the next
    // look, with the sync on record, moves on to a person.
    let survivor = Parts::new(std::sync::Arc::clone(&inner), test_policy());
    let again = survivor.step(&c, false, Duration::ZERO).run(&target, &Trigger::manual(), None).await.unwrap();
    assert_eq!((again.action, again.result), (Some(Action::Sync), StepResult::AlreadyDone), "{}", again.detail);
    assert_eq!(again.idempotency_key.as_ref().map(|k| k.to_string()), Some(key.clone()));
    let then = survivor.step(&c, false, Duration::ZERO).run(&target, &Trigger::manual(), None).await.unwrap();
    assert_eq!((then.action, then.result), (Some(Action::Escalate), StepResult::Escalated), "{}", then.detail);
    // Rerun with the state lost entirely: the policy would sync, but Argo CD's operation.info
    // already holds the key, so the step records it as done and does not call sync.
    let fresh = Parts::new(MemoryIncidentStore::default(), test_policy());
    let lost = fresh.step(&c, false, Duration::ZERO).run(&target, &Trigger::manual(), None).await.unwrap();
    assert_eq!(lost.action, Some(Action::Sync));
    assert_eq!(lost.result, StepResult::AlreadyDone, "{}", lost.detail);
    assert_eq!(lost.idempotency_key.as_ref().map(|k| k.to_string()), Some(key));
    assert_eq!(sim.counts().sync, 1, "exactly one sync reached Argo CD");
    assert_spec_conformance(&sim);
}

/// A clock `ahead` of the wall clock (the function's clock is off; Argo CD's is right).
struct SkewedClock(chrono::TimeDelta);

impl medic_core::ports::Clock for SkewedClock {
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        chrono::Utc::now() + self.0
    }
}

/// L4: refresh verification compared Argo CD's reconciledAt with the function's clock, so a
/// function clock a few seconds ahead of the cluster's read every refresh as dropped: two
/// refresh requests, "unverified", and the ladder moved on early. It now compares reconciledAt
/// with the app as read just before (both Argo CD's clock).
#[tokio::test]
async fn a_refresh_is_verified_on_argo_cd_s_clock_whatever_the_function_s_clock_says() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = client(&sim);
    let parts = Parts::new(MemoryIncidentStore::default(), test_policy());
    for (skew, app_name) in [(chrono::TimeDelta::seconds(90), "inventory"), (chrono::TimeDelta::seconds(-90), "pricing")] {
        let clock = SkewedClock(skew);
        let step = parts.step_with_clock(&c, &clock, false, Duration::from_secs(600));
        let before = sim.counts().refresh;
        let report = step.run(&app(app_name, "payments"), &Trigger::sweep(), None).await.unwrap();
        assert_eq!(
            (report.action, report.result),
            (Some(Action::Refresh), StepResult::Refreshed),
            "function clock {skew}: {}",
            report.detail
        );
        assert_eq!(sim.counts().refresh - before, 1, "function clock {skew}: one refresh request, not a second");
    }
}

#[tokio::test]
async fn a_refresh_is_verified_by_reconciled_at_and_a_dropped_one_is_requested_once_more() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = client(&sim);
    let parts = Parts::new(MemoryIncidentStore::default(), test_policy());
    let step = parts.step(&c, false, Duration::from_secs(600));

    // inventory: stale status, and the refresh heals it.
    let healed = step.run(&app("inventory", "payments"), &Trigger::sweep(), None).await.unwrap();
    assert_eq!((healed.action, healed.result), (Some(Action::Refresh), StepResult::Refreshed), "{}", healed.detail);
    assert!(healed.detail.contains("Synced and Healthy now"), "{}", healed.detail);
    assert_eq!(healed.argo_calls, 2, "one read, one refresh");
    assert_eq!(sim.counts().refresh, 1);

    // pricing: the refresh is dropped by Argo CD; the step asks once more, then reports it.
    sim.set_outcomes("pricing", Outcomes { refresh: RefreshOutcome::Drop, ..Default::default() });
    let dropped = step.run(&app("pricing", "payments"), &Trigger::sweep(), None).await.unwrap();
    assert_eq!(dropped.result, StepResult::RefreshUnverified, "{}", dropped.detail);
    assert_eq!(dropped.argo_calls, 3, "one read and two refreshes: never more than three calls");
    assert_eq!(sim.counts().refresh, 3);
    let history = parts.store.history(&medic_core::AppId::new("argocd", "pricing")).await.unwrap();
    assert_eq!(history.attempts.iter().map(|a| a.outcome).collect::<Vec<_>>(), vec![Outcome::NoEffect]);

    // The same step again: the refresh is on record, so the ladder moves to escalation.
    let next = step.run(&app("pricing", "payments"), &Trigger::sweep(), None).await.unwrap();
    assert_eq!((next.action, next.result), (Some(Action::Escalate), StepResult::Escalated), "{}", next.detail);
    assert_eq!(parts.escalator.escalations().len(), 1);
    assert_eq!(sim.counts().refresh, 3, "no further refresh");
    assert_spec_conformance(&sim);
}

#[tokio::test]
async fn dry_run_decides_but_calls_nothing_that_changes_argo_cd() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = client(&sim);
    let parts = Parts::new(MemoryIncidentStore::default(), test_policy());
    let step = parts.step(&c, true, Duration::from_secs(600));
    for (name, project) in [("inventory", "payments"), ("observability", "platform"), ("accounts", "payments")] {
        let r = step.run(&app(name, project), &Trigger::sweep(), None).await.unwrap();
        assert_eq!(r.result, StepResult::DryRun, "{name}");
        assert!(r.action.is_some_and(|a| a != Action::None && a != Action::Wait), "{name}");
    }
    let counts = sim.counts();
    assert_eq!((counts.refresh, counts.hard_refresh, counts.sync, counts.terminate), (0, 0, 0, 0));
    assert!(parts.escalator.escalations().is_empty());
    assert!(parts.store.open_incidents().await.unwrap().is_empty(), "a dry run records nothing");
}

#[tokio::test]
async fn a_sync_refused_because_another_operation_runs_is_a_wait_not_a_failure() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = client(&sim);
    let parts = Parts::new(MemoryIncidentStore::default(), test_policy());
    let step = parts.step(&c, false, Duration::from_secs(600));
    // A person starts a sync between our read and our sync: Argo CD answers 400 "another
    // operation is already in progress".
    let observed = c.get_app(&app("payouts", "payments")).await.unwrap();
    c.sync(medic_core::permit::Permit::for_tests(), &app("payouts", "payments"), &sync_request("payouts", "payments")).await.unwrap();
    sim.set_outcomes("payouts", Outcomes { sync: SyncOutcome::Hang, ..Default::default() });
    let r = step.run(&app("payouts", "payments"), &Trigger::sweep(), Some(observed)).await.unwrap();
    assert_eq!((r.action, r.result), (Some(Action::Sync), StepResult::Waiting), "{}", r.detail);
    let history = parts.store.history(&medic_core::AppId::new("argocd", "payouts")).await.unwrap();
    assert_eq!(history.attempts[0].outcome, Outcome::OperationInProgress);
    let next = step.run(&app("payouts", "payments"), &Trigger::sweep(), None).await.unwrap();
    assert_eq!(next.action, Some(Action::Wait), "{}", next.detail);
}

#[tokio::test]
async fn a_sync_whose_answer_is_lost_is_never_sent_again_the_re_read_finds_its_key() {
    // argocd-server starts the sync, then the answer is lost: a proxy's 504, or a dropped
    // connection. Before the fix the client sent the POST again (a second sync re-runs hooks).
    for lost in [FaultKind::AppliedThenStatus { code: 504 }, FaultKind::AppliedThenDrop] {
        let sim = sim_with_samples(SimConfig::default()).await;
        let c = client(&sim);
        let parts = Parts::new(MemoryIncidentStore::default(), test_policy());
        sim.inject(Fault { path_contains: Some("/payouts/sync".into()), method: Some("POST".into()), kind: lost.clone(), times: 1 });
        let r = parts.step(&c, false, Duration::from_secs(600)).run(&app("payouts", "payments"), &Trigger::sweep(), None).await.unwrap();
        assert_eq!((r.action, r.result), (Some(Action::Sync), StepResult::Synced), "{lost:?}: {}", r.detail);
        assert!(r.detail.contains("answer was lost"), "{}", r.detail);
        let posts = sim.arrivals().iter().filter(|(m, p)| m == "POST" && p.contains("/sync")).count();
        assert_eq!(posts, 1, "{lost:?}: one POST /sync, however its answer went");
        let history = parts.store.history(&medic_core::AppId::new("argocd", "payouts")).await.unwrap();
        assert_eq!(history.attempts.iter().map(|a| a.outcome).collect::<Vec<_>>(), vec![Outcome::Succeeded]);
    }
}

/// A hard refresh Argo CD did, whose answer was lost (a 504): the re-read shows the compare, and
/// the refresh is verified in the same run, as a sync whose answer was lost is. One budget
/// token, one request.
#[tokio::test]
async fn a_refresh_whose_answer_is_lost_is_not_requested_again_one_token_one_request() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = client(&sim);
    let parts = Parts::new(MemoryIncidentStore::default(), test_policy());
    // fraud-scoring's first rung is a hard refresh; Argo CD does it, the answer is a 504.
    sim.set_outcomes("fraud-scoring", Outcomes { hard_refresh: RefreshOutcome::Noop, ..Default::default() });
    sim.inject(Fault {
        path_contains: Some("refresh=hard".into()),
        method: Some("GET".into()),
        kind: FaultKind::AppliedThenStatus { code: 504 },
        times: 1,
    });
    let r = parts.step(&c, false, Duration::from_secs(600)).run(&app("fraud-scoring", "payments"), &Trigger::sweep(), None).await.unwrap();
    assert_eq!((r.action, r.result), (Some(Action::HardRefresh), StepResult::Refreshed), "{}", r.detail);
    assert!(r.detail.contains("answer was lost"), "{}", r.detail);
    let hard = sim.arrivals().iter().filter(|(_, p)| p.contains("refresh=hard")).count();
    assert_eq!(hard, 1, "one hard refresh request for one budget token: {}", r.detail);
    let history = parts.store.history(&medic_core::AppId::new("argocd", "fraud-scoring")).await.unwrap();
    assert_eq!(history.attempts.iter().map(|a| a.outcome).collect::<Vec<_>>(), vec![Outcome::Succeeded]);
}

/// A hard refresh whose answer was lost while Argo CD's controller had not compared yet (the API
/// server sets the refresh annotation, then waits for the compare; a gateway gives up first): the
/// claim stays in progress marked `Reached`, and the run that resumes it after the compare credits
/// it, asking for nothing more.
#[tokio::test]
async fn a_refresh_lost_while_argo_cd_holds_it_pending_is_credited_once_compared_not_sent_twice() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = client(&sim);
    let parts = Parts::new(MemoryIncidentStore::default(), test_policy());
    let target = app("fraud-scoring", "payments");
    // The request reaches the API server, which sets the annotation; the gateway answers 504.
    // (Set here before the step, since the simulator answers at once: the step's own request
    // rewrites the same value, and its re-read finds it set.)
    let mut pending = sim.app("argocd", "fraud-scoring").unwrap();
    pending["metadata"]["annotations"]["argocd.argoproj.io/refresh"] = "hard".into();
    sim.insert_app(pending);
    sim.inject(Fault {
        path_contains: Some("refresh=hard".into()),
        method: Some("GET".into()),
        kind: FaultKind::Status { code: 504, retry_after_secs: None },
        times: 1,
    });
    let r = parts.step(&c, false, Duration::from_secs(600)).run(&target, &Trigger::sweep(), None).await;
    assert!(matches!(r, Err(StepError::Argo(ArgoError::Transient(ref m))) if m.contains("has not compared the app yet")), "{r:?}");
    let history = parts.store.history(&medic_core::AppId::new("argocd", "fraud-scoring")).await.unwrap();
    assert_eq!(history.attempts.iter().map(|a| a.outcome).collect::<Vec<_>>(), vec![Outcome::Reached]);

    // A retry while the annotation is still set waits (the claim stays reached).
    let waiting = parts.step(&c, false, Duration::ZERO).run(&target, &Trigger::sweep(), None).await.unwrap();
    assert_eq!(waiting.result, StepResult::Deferred, "{}", waiting.detail);
    // The controller compares: the annotation goes, reconciledAt moves.
    tokio::time::sleep(Duration::from_millis(1100)).await; // Argo CD's times have whole seconds
    let mut compared = sim.app("argocd", "fraud-scoring").unwrap();
    compared["metadata"]["annotations"].as_object_mut().unwrap().remove("argocd.argoproj.io/refresh");
    compared["status"]["reconciledAt"] = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true).into();
    sim.insert_app(compared);
    let again = parts.step(&c, false, Duration::ZERO).run(&target, &Trigger::sweep(), None).await.unwrap();
    assert_eq!((again.action, again.result), (Some(Action::HardRefresh), StepResult::Refreshed), "{}", again.detail);
    let hard = sim.arrivals().iter().filter(|(_, p)| p.contains("refresh=hard")).count();
    assert_eq!(hard, 1, "the hard refresh Argo CD had was not asked for again: {}", again.detail);
}

/// The key Argo CD records on the app's operation (pending or last), if any.
fn recorded_key(sim: &ArgoSim, name: &str) -> Option<String> {
    let app = sim.app("argocd", name)?;
    let infos = app["operation"]["info"].as_array().or_else(|| app["status"]["operationState"]["operation"]["info"].as_array())?.clone();
    infos.iter().find(|i| i["name"] == IDEMPOTENCY_INFO_NAME).and_then(|i| i["value"].as_str()).map(str::to_owned)
}

/// A run killed between its claim and its call: the step's future is dropped at the call.
async fn killed_at<A: ArgoApi, S: IncidentStore>(
    parts: &Parts<S>,
    argo: &A,
    at: DiesAt,
    target: &medic_core::event::AppRef,
    trigger: Trigger,
) {
    let dying = Dying(argo, at);
    let step = parts.step(&dying, false, Duration::ZERO);
    let run = tokio::time::timeout(Duration::from_secs(2), step.run(target, &trigger, None)).await;
    assert!(run.is_err(), "the run died at its {at:?} call: {run:?}");
}

/// Issue 21: a claim interrupted by a crash was counted as taken (`History::has_taken` read an
/// unfinished `Requested` claim as done), so the redelivery escalated "the remediation ladder is
/// used up after sync" for a sync that never went out. Fails on 0a3f9d5.
#[tokio::test]
async fn a_sync_claim_left_by_a_run_killed_before_its_call_is_resumed_and_sent_once_under_its_key() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = client(&sim);
    let parts = Parts::new(MemoryIncidentStore::default(), test_policy());
    let target = app("observability", "platform");
    killed_at(&parts, &c, DiesAt::Sync, &target, Trigger::manual()).await;
    assert_eq!(sim.counts().sync, 0, "the killed run never reached Argo CD");
    let claimed = parts.store.history(&medic_core::AppId::new("argocd", "observability")).await.unwrap().attempts;
    assert_eq!(claimed.iter().map(|a| (a.rung, a.outcome)).collect::<Vec<_>>(), vec![(medic_core::Rung::Sync, Outcome::Requested)]);

    // The redelivery, once the claim has expired.
    let again = parts.step(&c, false, Duration::ZERO).run(&target, &Trigger::manual(), None).await.unwrap();
    assert_eq!((again.action, again.result), (Some(Action::Sync), StepResult::Synced), "{}", again.detail);
    assert_eq!(sim.counts().sync, 1, "the sync reached Argo CD exactly once");
    assert_eq!(recorded_key(&sim, "observability"), claimed[0].idempotency_key.as_ref().map(|k| k.to_string()), "under the claim's key");
    assert!(parts.escalator.escalations().is_empty(), "no \"ladder used up\" escalation");
    assert_spec_conformance(&sim);
}

/// The same for a hard refresh: resumed, requested once, not skipped to the next rung.
#[tokio::test]
async fn a_hard_refresh_claim_left_by_a_run_killed_before_its_call_is_resumed_and_requested_once() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = client(&sim);
    let parts = Parts::new(MemoryIncidentStore::default(), test_policy());
    let target = app("fraud-scoring", "payments");
    killed_at(&parts, &c, DiesAt::HardRefresh, &target, Trigger::sweep()).await;
    assert_eq!(sim.counts().hard_refresh, 0);
    let again = parts.step(&c, false, Duration::ZERO).run(&target, &Trigger::sweep(), None).await.unwrap();
    assert_eq!((again.action, again.result), (Some(Action::HardRefresh), StepResult::Refreshed), "{}", again.detail);
    assert_eq!(sim.counts().hard_refresh, 1);
    assert!(parts.escalator.escalations().is_empty());
}

/// Chaos (stop 44's dry run, seed 1): a hard refresh claimed by a run killed before its call, the
/// app then compared by something else (here a person's normal refresh; in the chaos run the
/// controller's compare as a Git outage began). The resuming run credited that compare to the
/// hard refresh (`reconciledAt` moved since the claim) and never requested it: a lost action.
/// Nothing in Argo CD shows which refresh a compare answered, so a resumed refresh is credited
/// only when a run saw it reach Argo CD. Fails on e3bc574 (no hard refresh requested).
#[tokio::test]
async fn a_hard_refresh_claim_left_by_a_killed_run_is_not_credited_with_another_compare() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = client(&sim);
    let parts = Parts::new(MemoryIncidentStore::default(), test_policy());
    let target = app("fraud-scoring", "payments");
    sim.set_outcomes("fraud-scoring", Outcomes { refresh: RefreshOutcome::Noop, hard_refresh: RefreshOutcome::Noop, ..Default::default() });
    killed_at(&parts, &c, DiesAt::HardRefresh, &target, Trigger::sweep()).await;
    assert_eq!(sim.counts().hard_refresh, 0);
    tokio::time::sleep(Duration::from_millis(1100)).await; // Argo CD's times have whole seconds
    c.refresh(Permit::for_tests(), &target, medic_core::ladder::RefreshKind::Normal)
        .await
        .expect("a person's normal refresh moves reconciledAt");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let again = parts.step(&c, false, Duration::ZERO).run(&target, &Trigger::sweep(), None).await.unwrap();
    assert_eq!((again.action, again.result), (Some(Action::HardRefresh), StepResult::Refreshed), "{}", again.detail);
    assert_eq!(sim.counts().hard_refresh, 1, "the claimed hard refresh reached Argo CD: {}", again.detail);
}

/// A resumed sync whose key Argo CD no longer shows, while an operation started after the claim
/// (a person's sync, auto-sync): whether ours ran is unknown, so it is never sent again; the claim
/// completes as unknown and a person is told why.
#[tokio::test]
async fn a_resumed_sync_whose_key_is_gone_after_another_operation_is_not_sent_again_and_is_escalated() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = client(&sim);
    let parts = Parts::new(MemoryIncidentStore::default(), test_policy());
    let target = app("observability", "platform");
    killed_at(&parts, &c, DiesAt::Sync, &target, Trigger::manual()).await;
    // The person's sync fails as the app's did, so the app stays in the same trouble.
    sim.set_outcomes("observability", Outcomes { sync: SyncOutcome::Fail { message: "one or more synchronization tasks are not valid: no matches for kind \"ServiceMonitor\" in version \"monitoring.coreos.com/v1\"".into() }, ..Default::default() });
    tokio::time::sleep(Duration::from_millis(1100)).await; // Argo CD's times have whole seconds
    c.sync(medic_core::permit::Permit::for_tests(), &target, &sync_request("observability", "platform"))
        .await
        .expect("a person syncs by hand");
    tokio::time::sleep(Duration::from_millis(400)).await;
    let again = parts.step(&c, false, Duration::ZERO).run(&target, &Trigger::manual(), None).await.unwrap();
    assert_eq!((again.action, again.result), (Some(Action::Escalate), StepResult::Escalated), "{}", again.detail);
    assert!(again.detail.contains("may or may not have gone out"), "{}", again.detail);
    assert_eq!(sim.counts().sync, 1, "only the person's sync");
    let history = parts.store.history(&medic_core::AppId::new("argocd", "observability")).await.unwrap();
    assert!(history.attempts.iter().any(|a| a.rung == medic_core::Rung::Sync && a.outcome == Outcome::Unknown), "{history:?}");
    assert_eq!(parts.escalator.escalations().len(), 1);
}

/// L4 (reliability review of 0a3f9d5): after a sync whose answer was lost and whose re-read
/// failed too, the claim was released; when another operation then replaced ours in Argo CD (a
/// person's sync, auto-sync), the retry found no key and synced again. The claim now stays
/// unfinished and the retry resumes it: the key is gone but an operation started since, so the
/// outcome is unknown and a person is told. Fails on 0a3f9d5 (a second sync).
#[tokio::test]
async fn a_sync_whose_answer_and_re_read_were_lost_is_not_sent_again_after_another_operation() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = client(&sim);
    let parts = Parts::new(MemoryIncidentStore::default(), test_policy());
    let target = app("payouts", "payments");
    // Every sync fails again as the sample's did (a transient apply error), so the app stays in
    // the trouble a sync is the ladder's answer to.
    let fails = SyncOutcome::Fail {
        message: "one or more objects failed to apply, reason: Put \"https://10.0.0.1:443/apis/apps/v1/namespaces/payouts/deployments/payouts?fieldManager=argocd-controller\": net/http: TLS handshake timeout".into(),
    };
    sim.set_outcomes("payouts", Outcomes { sync: fails, ..Default::default() });
    let read = c.get_app(&target).await.unwrap();
    // Argo CD starts the sync and the answer is lost; the re-read that looks for its key fails.
    sim.inject(Fault {
        path_contains: Some("/payouts/sync".into()),
        method: Some("POST".into()),
        kind: FaultKind::AppliedThenStatus { code: 504 },
        times: 1,
    });
    sim.inject(Fault {
        path_contains: Some("/applications/payouts".into()),
        method: Some("GET".into()),
        kind: FaultKind::Status { code: 503, retry_after_secs: None },
        times: 4,
    });
    let first = parts.step(&c, false, Duration::ZERO).run(&target, &Trigger::sweep(), Some(read)).await;
    assert!(matches!(first, Err(StepError::Argo(ArgoError::Transient(_)))), "{first:?}");
    let ours = |sim: &ArgoSim| {
        sim.requests()
            .iter()
            .filter(|r| r.path.ends_with("/sync") && r.body.as_ref().is_some_and(|b| b.to_string().contains(IDEMPOTENCY_INFO_NAME)))
            .count()
    };
    assert_eq!(ours(&sim), 1);
    tokio::time::sleep(Duration::from_millis(1100)).await; // our operation ends; times have whole seconds
    c.sync(Permit::for_tests(), &target, &sync_request("payouts", "payments")).await.expect("a person syncs by hand");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(recorded_key(&sim, "payouts"), None, "the person's operation replaced ours");

    let retry = parts.step(&c, false, Duration::ZERO).run(&target, &Trigger::sweep(), None).await.unwrap();
    assert_eq!(ours(&sim), 1, "no second sync of ours: {}", retry.detail);
    assert_eq!((retry.action, retry.result), (Some(Action::Escalate), StepResult::Escalated), "{}", retry.detail);
    assert!(retry.detail.contains("may or may not have gone out"), "{}", retry.detail);
}

/// The syncs the simulator received for `name`, and the idempotency key each carried.
fn sync_keys(sim: &ArgoSim, name: &str) -> Vec<String> {
    sim.requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with(&format!("/applications/{name}/sync")))
        .filter_map(|r| r.body.as_ref())
        .map(|b| {
            b["infos"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|i| i["name"] == IDEMPOTENCY_INFO_NAME)
                .map(|i| i["value"].to_string())
                .unwrap_or_default()
        })
        .collect()
}

/// Waits (real time) until the app's last operation has ended in the simulator.
async fn operation_ended(c: &HttpArgoClient, name: &str, project: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = c.get_app(&app(name, project)).await.unwrap();
        if now.operation.is_none() && now.status.operation_state.as_ref().is_some_and(|s| s.phase != "Running") {
            return;
        }
        assert!(Instant::now() < deadline, "the operation of {name} did not end");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Issue 24: Argo CD can accept a sync (200, the operation in the answer) and never run it
/// (argoproj/argo-cd#27133); counted as done on the answer, the sync was a lost action. It is
/// judged on the app's next read instead, which costs no call: with no trace of it, the step
/// sends it once more under the same key; seen started, it counts. Nothing is lost, and no sync
/// is sent a third time.
#[tokio::test]
async fn an_accepted_sync_that_never_starts_is_sent_once_more_under_its_key_and_then_counts() {
    let sim = sim_with_samples(SimConfig::default()).await;
    sim.set_outcomes("observability", Outcomes { lost_syncs: 1, ..Default::default() });
    let c = client(&sim);
    let parts = Parts::new(MemoryIncidentStore::default(), test_policy());
    let clock = TestClock::now_real();
    let step = parts.step_with_clock(&c, clock.as_ref(), false, Duration::from_secs(600));
    let target = app("observability", "platform");
    let name = medic_core::AppId::new("argocd", "observability");

    let first = step.run(&target, &Trigger::sweep(), None).await.unwrap();
    assert_eq!((first.action, first.result), (Some(Action::Sync), StepResult::Synced), "{}", first.detail);
    let outcomes = |h: medic_core::incident::History| h.attempts.iter().map(|a| a.outcome).collect::<Vec<_>>();
    assert_eq!(outcomes(parts.store.history(&name).await.unwrap()), [Outcome::Sent], "accepted is not started");

    // The recheck, past the grace: Argo CD shows no trace of the sync.
    clock.advance(chrono::TimeDelta::seconds(30));
    let second = step.run(&target, &Trigger::sweep(), None).await.unwrap();
    assert_eq!((second.action, second.result), (Some(Action::Sync), StepResult::Synced), "{}", second.detail);
    assert!(second.detail.contains("never started it"), "{}", second.detail);
    let keys = sync_keys(&sim, "observability");
    assert_eq!(keys.len(), 2, "sent once more");
    assert_eq!(keys[0], keys[1], "under the same key");
    assert_eq!(outcomes(parts.store.history(&name).await.unwrap()), [Outcome::Resent]);

    // This one ran: the next read sees it, and it counts.
    operation_ended(&c, "observability", "platform").await;
    clock.advance(chrono::TimeDelta::seconds(30));
    let third = step.run(&target, &Trigger::sweep(), None).await.unwrap();
    assert_ne!(third.result, StepResult::Escalated, "{}", third.detail);
    assert_eq!(sync_keys(&sim, "observability").len(), 2, "never a third send");
    assert!(parts.escalator.escalations().is_empty());
    let history = parts.store.history(&name).await.unwrap();
    assert!(history.attempts.is_empty() || outcomes(history.clone()) == [Outcome::Succeeded], "{history:?}");
    assert_spec_conformance(&sim);
}

/// Issue 24: a sync Argo CD accepts twice and starts neither time is not sent a third time: the
/// ladder moves on to a person, and the escalation says why.
#[tokio::test]
async fn a_sync_dropped_twice_is_escalated_not_sent_again() {
    let sim = sim_with_samples(SimConfig::default()).await;
    sim.set_outcomes("observability", Outcomes { lost_syncs: 2, ..Default::default() });
    let c = client(&sim);
    let parts = Parts::new(MemoryIncidentStore::default(), test_policy());
    let clock = TestClock::now_real();
    let step = parts.step_with_clock(&c, clock.as_ref(), false, Duration::from_secs(600));
    let target = app("observability", "platform");
    for _ in 0..2 {
        let r = step.run(&target, &Trigger::sweep(), None).await.unwrap();
        assert_eq!(r.result, StepResult::Synced, "{}", r.detail);
        clock.advance(chrono::TimeDelta::seconds(30));
    }
    let third = step.run(&target, &Trigger::sweep(), None).await.unwrap();
    assert_eq!((third.action, third.result), (Some(Action::Escalate), StepResult::Escalated), "{}", third.detail);
    assert!(third.detail.contains("twice and started it neither time"), "{}", third.detail);
    assert_eq!(sync_keys(&sim, "observability").len(), 2);
    assert_eq!(parts.escalator.escalations().len(), 1);
}

/// Issue 24: List's `fields` whitelist knew the parts of `spec` only from Argo CD 3.5.0
/// (argo-cd 566c622599, #25451); before, `items.spec.project` and `items.spec.source` are dropped
/// without a word, and a sweep's items came back with no project, no sources and no destination
/// (no fleet outage could be grouped by its Git host or cluster). The client sends the mask the
/// version it read honours: on every profile the listed items keep what the sweep reads.
#[tokio::test]
async fn the_list_mask_keeps_project_sources_and_destination_on_every_argo_cd_profile() {
    for version in medic_sim::PROFILE_VERSIONS {
        // Started here, not by `sim_with_samples`: this test names each version itself.
        let sim = ArgoSim::start(SimConfig { version: (*version).to_owned(), ..SimConfig::default() }).await.unwrap();
        sim.load_samples(&crate::support::events_dir(), chrono::Utc::now()).unwrap();
        let c = client(&sim);
        let query = ListQuery { fields: LIST_FIELDS.iter().map(|f| f.to_string()).collect(), ..Default::default() };
        let items = c.list_apps(&query).await.unwrap();
        assert!(items.len() > 20, "{version}");
        for item in &items {
            assert!(!item.spec.project.is_empty(), "{version}: {} lost its project", item.metadata.name);
            assert!(
                !item.spec.destination.server.is_empty() || !item.spec.destination.name.is_empty(),
                "{version}: {}",
                item.metadata.name
            );
            assert!(item.spec.source.is_some() || !item.spec.sources.is_empty(), "{version}: {} lost its sources", item.metadata.name);
            assert!(item.incompleteness().is_some(), "{version}: still a masked item");
        }
        let sent = sim.requests().into_iter().find(|r| r.path == "/api/v1/applications").expect("a list");
        let fields = sent.query.iter().find(|(k, _)| k == "fields").map(|(_, v)| v.clone()).unwrap_or_default();
        assert_eq!(fields.contains("items.spec.project"), version.starts_with("v3.5"), "{version}: {fields}");
        assert_spec_conformance(&sim);
    }
}

/// Issue 24: argoproj/argo-cd#29716 — auto-sync synced the revision the comparison still held,
/// 3,401 commits old. When the target revision is not one `status.history` holds, the commits'
/// dates tell: two reads of revision metadata before the sync, and a target weeks older than the
/// commit deployed last is not sent; a person is told at once, with both revisions. A target
/// newer than the deployed one is synced as before.
#[tokio::test]
async fn a_sync_to_a_commit_weeks_older_than_the_deployed_one_is_withheld_and_escalated() {
    let target = "1111111111111111111111111111111111111111";
    let deployed = "2222222222222222222222222222222222222222";
    for (older, expect_sync) in [(true, false), (false, true)] {
        let sim = sim_with_samples(SimConfig::default()).await;
        // observability's sync failed because its CRD raced; the comparison holds `target`, and the
        // last deployment was `deployed`.
        let mut observed = sim.app("argocd", "observability").unwrap();
        observed["status"]["sync"]["revision"] = target.into();
        observed["status"]["history"][0]["revision"] = deployed.into();
        sim.insert_app(observed);
        let now = chrono::Utc::now();
        let (target_at, deployed_at) = if older {
            (now - chrono::TimeDelta::days(70), now - chrono::TimeDelta::hours(2))
        } else {
            (now - chrono::TimeDelta::hours(1), now - chrono::TimeDelta::days(3))
        };
        sim.set_revision_metadata(target, target_at, "the comparison's revision");
        sim.set_revision_metadata(deployed, deployed_at, "the revision deployed last");
        let c = client(&sim);
        let parts = Parts::new(MemoryIncidentStore::default(), test_policy());
        let step = parts.step(&c, false, Duration::from_secs(600));
        let r = step.run(&app("observability", "platform"), &Trigger::sweep(), None).await.unwrap();
        let reads = sim.requests().iter().filter(|q| q.path.contains("/revisions/") && q.path.ends_with("/metadata")).count();
        assert_eq!(reads, 2, "one read of each revision");
        if expect_sync {
            assert_eq!(r.result, StepResult::Synced, "{}", r.detail);
            assert_eq!(sync_keys(&sim, "observability").len(), 1);
        } else {
            assert_eq!((r.action, r.result), (Some(Action::Escalate), StepResult::Escalated), "{}", r.detail);
            assert!(
                r.detail.contains("not sent: it would move the app back")
                    && r.detail.contains("1111111111")
                    && r.detail.contains("2222222222"),
                "{}",
                r.detail
            );
            assert!(sync_keys(&sim, "observability").is_empty(), "no sync sent");
            assert_eq!(parts.escalator.escalations().len(), 1);
            let history = parts.store.history(&medic_core::AppId::new("argocd", "observability")).await.unwrap();
            assert!(history.attempts.iter().any(|a| a.outcome == Outcome::Withheld), "{history:?}");
        }
        assert_spec_conformance(&sim);
    }
}

/// The policy configuration as a function runs it: the version read from Argo CD (`GET
/// /api/version`, as the worker's `WorkerPolicy` and `medic` do) decides the version's rules.
async fn policy_for(c: &HttpArgoClient) -> PolicyConfig {
    let version = c.version_info().await.expect("Argo CD says its version").version;
    PolicyConfig { argocd_version: Some(version), ..test_policy() }
}

/// Waits (real time) until the app's running operation has scheduled a retry.
async fn retrying(c: &HttpArgoClient, name: &str, project: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = c.get_app(&app(name, project)).await.unwrap();
        if now.status.operation_state.as_ref().is_some_and(|s| s.phase == "Running" && s.retry_count.unwrap_or(0) > 0) {
            return;
        }
        assert!(Instant::now() < deadline, "{name} never retried");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Issue 24: a sync of a bad commit retries forever (`retry.limit: -1`) although Git has moved on.
/// From Argo CD 3.2 `retry.refresh` makes each retry resolve the latest revision, and the served
/// simulator gets past the bad commit: Argo Medic waits, whatever failed. Before 3.2 Argo CD has no
/// such field (the API server drops it) and every retry repeats the bad commit: a person is told
/// at once, with the reason that holds on that version. A rejection repeats, and says so; any other
/// cause is a loop on an old revision, never "retry.refresh is off" of a spec that sets it.
#[tokio::test]
async fn a_retry_loop_on_an_old_revision_waits_where_argo_cd_refreshes_it_and_is_escalated_where_it_cannot() {
    let bad = "badbadbadbadbadbadbadbadbadbadbadbadbad0";
    let rejected = "one or more objects failed to apply, reason: Deployment.apps \"catalog\" is invalid: spec.template.spec.containers[0].image: Required value";
    let unhealthy = "one or more synchronization tasks completed unsuccessfully, reason: Job catalog-smoke-test failed";
    for (message, escalated_as) in [(rejected, "every retry fails the same way"), (unhealthy, "retry.refresh needs Argo CD 3.2")] {
        let sim = sim_with_samples(SimConfig::default()).await;
        let mut catalog = sim.app("argocd", "catalog").expect("a sample app");
        catalog["spec"]["syncPolicy"] = serde_json::json!({"retry": {"limit": -1, "refresh": true}});
        let latest = catalog["status"]["sync"]["revision"].as_str().expect("the compared revision").to_owned();
        sim.insert_app(catalog);
        let fails = SyncOutcome::FailRevision { revision: bad.into(), message: message.into() };
        sim.set_outcomes("catalog", Outcomes { sync: fails, ..Default::default() });
        let c = client(&sim);
        let policy = policy_for(&c).await;
        let refreshes = policy.argocd_at_least(3, 2);

        // Argo CD syncs the bad commit (as auto-sync pins the revision it compared) and retries.
        let pinned = ApplicationSyncRequest { revision: bad.into(), ..sync_request("catalog", "payments") };
        c.sync(medic_core::permit::Permit::for_tests(), &app("catalog", "payments"), &pinned).await.expect("the sync is accepted");
        retrying(&c, "catalog", "payments").await;

        let parts = Parts::new(MemoryIncidentStore::default(), policy);
        let step = parts.step(&c, false, Duration::from_secs(600));
        let r = step.run(&app("catalog", "payments"), &Trigger::sweep(), None).await.unwrap();
        assert_eq!(sync_keys(&sim, "catalog").iter().filter(|k| !k.is_empty()).count(), 0, "Argo Medic sends no sync of its own");
        if refreshes {
            assert_ne!(r.result, StepResult::Escalated, "{}", r.detail);
            operation_ended(&c, "catalog", "payments").await;
            let done = c.get_app(&app("catalog", "payments")).await.unwrap();
            let state = done.status.operation_state.expect("the operation's state");
            let synced = state.sync_result.map(|s| s.revision);
            assert_eq!((state.phase.as_str(), synced), ("Succeeded", Some(latest)), "the retry synced the fix");
            assert!(parts.escalator.escalations().is_empty());
        } else {
            assert_eq!((r.action, r.result), (Some(Action::Escalate), StepResult::Escalated), "{}", r.detail);
            assert!(r.detail.contains(escalated_as), "{}", r.detail);
            assert_eq!(parts.escalator.escalations().len(), 1);
        }
        assert_spec_conformance(&sim);
    }
}

/// Issue 24: a custom resource racing its CRD fails the sync with `one or more synchronization
/// tasks are not valid`: bare before Argo CD 3.5, followed by the tasks' messages from 3.5. The
/// cause is read from the failed resources of the result, so every profile gets the same
/// decision.
#[tokio::test]
async fn a_custom_resource_racing_its_crd_is_told_by_its_resources_on_every_profile() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let missing = "The Kubernetes API could not find monitoring.coreos.com/ServiceMonitor for requested resource observability/api-metrics. Make sure the \"ServiceMonitor\" CRD is installed on the destination cluster.";
    let task = medic_sim::InvalidTask {
        group: "monitoring.coreos.com".into(),
        version: "v1".into(),
        kind: "ServiceMonitor".into(),
        namespace: "observability".into(),
        name: "api-metrics".into(),
        message: missing.into(),
    };
    sim.set_outcomes("observability", Outcomes { sync: SyncOutcome::InvalidTasks { tasks: vec![task] }, ..Default::default() });
    let c = client(&sim);
    let policy = policy_for(&c).await;
    let lists_tasks = policy.argocd_at_least(3, 5);
    c.sync(medic_core::permit::Permit::for_tests(), &app("observability", "platform"), &sync_request("observability", "platform"))
        .await
        .expect("the sync is accepted");
    operation_ended(&c, "observability", "platform").await;
    let failed = c.get_app(&app("observability", "platform")).await.unwrap();
    let message = failed.status.operation_state.as_ref().map(|s| s.message.clone()).unwrap_or_default();
    assert_eq!(message.contains(missing), lists_tasks, "{message}");

    let decided =
        medic_core::DecisionPolicy::new(policy).decide(&failed, &Trigger::sweep(), &Default::default(), chrono::Utc::now()).unwrap();
    assert_eq!(decided.failure_mode, medic_core::FailureMode::CrdNotEstablished, "{}: {}", decided.rule, decided.reason);
    assert_eq!(decided.action, Action::Sync, "{}: {}", decided.rule, decided.reason);
}

/// Issue 24: while Git cannot be read, a refresh moves `reconciledAt` but leaves health and the
/// ComparisonError's `lastTransitionTime` as they were while its message holds (the same on
/// every profile: `SetConditions`, and health assessed from the live objects). Argo Medic's
/// refresh, and the escalation that follows it, belong to the one incident the first look opened.
#[tokio::test]
async fn a_comparison_error_that_outlives_a_refresh_stays_one_incident_on_every_profile() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let mut stored = sim.app("argocd", "payments-worker").expect("a sample app");
    let message = stored["status"]["conditions"][0]["message"].as_str().expect("its ComparisonError").to_owned();
    // Down for two hours, last compared half an hour ago: Argo Medic refreshes before it tells anyone.
    let ago = |minutes| (chrono::Utc::now() - chrono::TimeDelta::minutes(minutes)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    stored["status"]["conditions"][0]["lastTransitionTime"] = ago(120).into();
    stored["status"]["reconciledAt"] = ago(30).into();
    sim.insert_app(stored);
    sim.set_outcomes("payments-worker", Outcomes { comparison_error: Some(message), ..Default::default() });
    let c = client(&sim);
    let policy = policy_for(&c).await;
    let target = app("payments-worker", "payments");
    let before = c.get_app(&target).await.unwrap();
    let first = medic_core::DecisionPolicy::new(policy.clone())
        .decide(&before, &Trigger::sweep(), &Default::default(), chrono::Utc::now())
        .unwrap();
    assert_eq!(first.action, Action::Refresh, "{}: {}", first.rule, first.reason);

    let parts = Parts::new(MemoryIncidentStore::default(), policy);
    let clock = TestClock::now_real();
    let step = parts.step_with_clock(&c, clock.as_ref(), false, Duration::from_secs(600));
    let r = step.run(&target, &Trigger::sweep(), None).await.unwrap();
    assert_eq!((r.action, r.result), (Some(Action::Refresh), StepResult::Refreshed), "{}", r.detail);
    clock.advance(chrono::TimeDelta::seconds(60));
    let r = step.run(&target, &Trigger::sweep(), None).await.unwrap();
    assert_eq!((r.action, r.result), (Some(Action::Escalate), StepResult::Escalated), "{}", r.detail);
    let after = c.get_app(&target).await.unwrap();
    assert_ne!(after.status.reconciled_at, before.status.reconciled_at, "the refresh was done");
    let condition = |app: &medic_core::Application| app.condition("ComparisonError").map(|c| c.last_transition_time);
    assert_eq!(condition(&after), condition(&before), "the same error keeps its time");
    assert_eq!((after.health_status(), after.sync_status()), ("Healthy", "Unknown"));
    let history = parts.store.history(&medic_core::AppId::new("argocd", "payments-worker")).await.unwrap();
    assert_eq!(history.incident, first.incident, "the refresh and the escalation are one incident's");
    let rungs: Vec<_> = history.attempts.iter().map(|a| a.rung.as_str()).collect();
    assert_eq!(rungs, ["refresh", "escalate"], "{history:?}");
}

/// Issue 24: Argo CD v3.3.7 (and v3.1.14, v3.2.9) skipped the informer's resync (#25290, reverted
/// for #27344): an app nothing else touches is never compared again. On the other profiles the
/// resync heals the stale app before Argo Medic looks, and Argo Medic does nothing; on v3.3.7 the
/// app is still stale, and Argo Medic's refresh is what heals it.
#[tokio::test]
async fn a_stale_app_is_refreshed_by_argo_medic_where_the_controller_s_resync_does_not_compare_it() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let target = app("inventory", "payments");
    let c = client(&sim);
    let compared = sim.resync();
    let skips_resync = c.version_info().await.unwrap().version.starts_with("v3.3.7");
    assert_eq!(compared.is_empty(), skips_resync, "{compared:?}");
    let parts = Parts::new(MemoryIncidentStore::default(), policy_for(&c).await);
    let r = parts.step(&c, false, Duration::from_secs(600)).run(&target, &Trigger::sweep(), None).await.unwrap();
    let refreshes = sim.requests().iter().filter(|q| q.query.iter().any(|(k, _)| k == "refresh")).count();
    if skips_resync {
        assert_eq!((r.action, r.result), (Some(Action::Refresh), StepResult::Refreshed), "{}", r.detail);
        assert_eq!(refreshes, 1);
    } else {
        assert_eq!(refreshes, 0, "the controller's resync already healed it: {}", r.detail);
    }
    assert!(c.get_app(&target).await.unwrap().is_calm(), "healed on every profile");
}

//! `medic sweep` against the simulator: one pass acts on what needs it within the call budget,
//! a second pass makes no mutating call, a dry run changes nothing, a fleet-wide outage raises one
//! alert instead of hundreds of actions, a rejected token stops the sweep with one alert, and the
//! incident of an app deleted between sweeps ends.

use std::time::Duration;

use chrono::Utc;
use medic::store::SqliteIncidentStore;
use medic::sweep::{SweepOptions, sweep};
use medic_core::PolicyConfig;
use medic_core::ports::IncidentStore;
use medic_core::remediate::StepResult;
use medic_sim::{ArgoSim, SimConfig, synthetic_fleet};

use crate::support::{Parts, client, sim_with_samples};

fn mutating(sim: &ArgoSim) -> usize {
    let c = sim.counts();
    c.refresh + c.hard_refresh + c.sync + c.terminate
}

#[tokio::test]
async fn a_sweep_acts_once_and_a_second_sweep_repeats_no_action() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = client(&sim);
    let parts = Parts::new(SqliteIncidentStore::in_memory().unwrap(), PolicyConfig::default());
    let r = parts.step(&c, false, Duration::from_secs(600));

    let first = sweep(&r, &SweepOptions::default(), |_, _| {}).await.unwrap();
    assert_eq!(first.listed, 33);
    assert!(first.errors.is_empty(), "{:?}", first.errors);
    let result = |app: &str| first.reports.iter().find(|r| r.app == format!("argocd/{app}")).map(|r| r.result);
    assert_eq!(result("inventory"), Some(StepResult::Refreshed));
    assert_eq!(result("fraud-scoring"), Some(StepResult::Refreshed), "cached manifest error: hard refresh");
    assert_eq!(result("observability"), Some(StepResult::Synced));
    assert_eq!(result("accounts"), Some(StepResult::Escalated), "hook failed");
    assert_eq!(result("checkout"), None, "calm apps are not even read");
    assert_eq!(sim.counts().hard_refresh, 1);
    let acted = mutating(&sim);
    assert!(acted >= 5, "{acted}");
    let escalated = parts.escalator.escalations().len();

    let second = sweep(&r, &SweepOptions::default(), |_, _| {}).await.unwrap();
    assert_eq!(mutating(&sim), acted, "the second sweep makes no mutating call");
    assert_eq!(parts.escalator.escalations().len(), escalated, "and escalates nothing twice");
    assert!(second.reports.iter().all(|r| !matches!(r.result, StepResult::Refreshed | StepResult::Synced | StepResult::Escalated)));
}

/// One sweep plan for the CLI and the sweeper function: before, only the function looked at open
/// incidents of apps the list no longer shows, so `medic sweep` kept a deleted app's incident open
/// for ever.
#[tokio::test]
async fn a_sweep_ends_the_incident_of_an_app_deleted_since_the_last_sweep() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = client(&sim);
    let parts = Parts::new(SqliteIncidentStore::in_memory().unwrap(), PolicyConfig::default());
    let r = parts.step(&c, false, Duration::from_secs(600));
    sweep(&r, &SweepOptions::default(), |_, _| {}).await.unwrap();
    let open = || async { parts.store.open_incidents().await.unwrap() };
    assert!(
        open().await.contains(&medic_core::AppId::new("argocd", "accounts")),
        "the hook failure opened an incident: {:?}",
        open().await
    );

    assert!(sim.remove_app("argocd", "accounts"));
    let second = sweep(&r, &SweepOptions::default(), |_, _| {}).await.unwrap();
    assert_eq!(second.listed, 32);
    let accounts = second.reports.iter().find(|r| r.app == "argocd/accounts").expect("the unlisted app is looked at");
    assert_eq!(accounts.result, StepResult::Resolved, "{}", accounts.detail);
    assert!(!open().await.contains(&medic_core::AppId::new("argocd", "accounts")));
    let third = sweep(&r, &SweepOptions::default(), |_, _| {}).await.unwrap();
    assert!(third.reports.iter().all(|r| r.app != "argocd/accounts"), "a closed incident is not looked at again");
}

#[tokio::test]
async fn a_fleet_wide_outage_raises_one_alert_and_no_per_app_action() {
    let sim = ArgoSim::start(SimConfig::default()).await.unwrap();
    for (mut app, outcomes) in synthetic_fleet(40, 0, Utc::now()) {
        let name = app["metadata"]["name"].as_str().unwrap().to_owned();
        if name.as_str() < "app-00021" {
            app["status"]["sync"]["status"] = "Unknown".into();
            app["status"]["conditions"] = serde_json::json!([{"type": "ComparisonError", "message": "rpc error: code = Unavailable desc = connection refused", "lastTransitionTime": Utc::now().to_rfc3339()}]);
        }
        sim.insert_app(app);
        sim.set_outcomes(&name, outcomes);
    }
    let c = client(&sim);
    let parts = Parts::new(SqliteIncidentStore::in_memory().unwrap(), PolicyConfig::default());
    let r = parts.step(&c, false, Duration::from_secs(600));
    let summary = sweep(&r, &SweepOptions::default(), |_, _| {}).await.unwrap();
    assert_eq!(summary.outage.as_deref(), Some("20 of 40 apps Unknown"));
    assert_eq!(parts.escalator.alerts().len(), 1, "{:?}", parts.escalator.alerts());
    assert!(parts.escalator.escalations().is_empty());
    assert_eq!(mutating(&sim), 0);
    assert_eq!(sim.counts().get, 0, "Unknown apps are not even read during an outage");
}

#[tokio::test]
async fn a_rejected_token_stops_the_sweep_with_one_alert() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = medic_adapters::argocd::HttpArgoClient::new(crate::support::settings(&sim, "a.b.c")).unwrap();
    let parts = Parts::new(SqliteIncidentStore::in_memory().unwrap(), PolicyConfig::default());
    let r = parts.step(&c, false, Duration::from_secs(600));
    let err = sweep(&r, &SweepOptions::default(), |_, _| {}).await.unwrap_err();
    assert!(err.to_string().contains("token"), "{err}");
    assert_eq!(parts.escalator.alerts().len(), 1);
    assert!(parts.escalator.alerts()[0].contains("Mint a new token"));
    assert_eq!(sim.requests().len(), 1, "one list call, not retried");
}

/// Storm economy (issue 10): 2,000 apps, 500 stale after an outage, the CLI's default budgets.
/// Before, the first sweep deferred apps it had read ("budget exhausted; retry after 1s", the 5 s
/// wait under contention) and the next sweep read them again, and every healed app was read in
/// full once more only to close its incident: 3 calls per stale app over two sweeps. Now a sweep
/// paces (waits for its token) and a verified refresh that reads the app healed closes the
/// incident at once. Runs at the production refresh rate (300 a minute): about 95 s.
#[tokio::test]
async fn a_sweep_paces_heals_every_stale_app_in_one_pass_and_closes_without_reading_again() {
    use medic_adapters::budget::{BudgetRates, LocalBudget};
    let sim = ArgoSim::start(SimConfig::default()).await.unwrap();
    for (app, outcomes) in synthetic_fleet(2000, 500, Utc::now()) {
        let name = app["metadata"]["name"].as_str().unwrap().to_owned();
        sim.insert_app(app);
        sim.set_outcomes(&name, outcomes);
    }
    let c = client(&sim);
    // The CLI's budgets: the default rates, and a sweep waits for its token (see BudgetArgs).
    let budget = LocalBudget::new(BudgetRates { max_wait: Duration::from_secs(600), ..BudgetRates::default() });
    let parts = Parts { budget, ..Parts::new(SqliteIncidentStore::in_memory().unwrap(), PolicyConfig::default()) };
    let r = parts.step(&c, false, Duration::from_secs(600));

    let first = sweep(&r, &SweepOptions::default(), |_, _| {}).await.unwrap();
    assert_eq!((first.listed, first.candidates), (2000, 500), "{:?}", first.errors);
    assert_eq!(first.count(StepResult::Deferred), 0, "nothing deferred");
    assert_eq!(first.count(StepResult::Refreshed), 500, "every stale app refreshed and verified in the first pass");
    assert!(first.reports.iter().all(|r| r.detail.ends_with("the incident is closed")), "closed on the refresh's own read");
    let after_first = sim.counts();

    let second = sweep(&r, &SweepOptions::default(), |_, _| {}).await.unwrap();
    assert_eq!(second.candidates, 0, "nothing left to look at: {:?}", second.reports.first());
    assert_eq!(mutating(&sim), 500, "the second sweep makes no mutating call");
    let c = sim.counts();
    assert_eq!((c.get, c.refresh), (after_first.get, after_first.refresh), "and reads no app");
    let calls = c.list + c.get + c.refresh + c.hard_refresh + c.sync + c.version;
    let per_app = calls as f64 / 500.0;
    eprintln!("storm economy: {calls} Argo CD calls over two sweeps, {per_app:.3} per stale app ({} s)", first.elapsed_ms / 1000);
    assert!(per_app <= 2.05, "{per_app:.3} calls per stale app ({c:?})");
}

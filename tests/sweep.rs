//! `medic sweep` against the simulator: one pass acts on what needs it within the call budget,
//! a second pass makes no mutating call, a dry run changes nothing, an outage shared by many apps
//! is one cause (canaries during it, one wave after) instead of hundreds of actions, a rejected
//! token stops the sweep with one alert, and the incident of an app deleted between sweeps ends.

use std::time::Duration;

use chrono::Utc;
use medic::store::SqliteIncidentStore;
use medic::sweep::{SweepOptions, sweep};
use medic_core::PolicyConfig;
use medic_core::fleet::{OutageView, WaveState};
use medic_core::ports::IncidentStore;
use medic_core::step::StepResult;
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

    let first = sweep(&r, &SweepOptions::default(), &(), &|| false).await.unwrap();
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

    let second = sweep(&r, &SweepOptions::default(), &(), &|| false).await.unwrap();
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
    sweep(&r, &SweepOptions::default(), &(), &|| false).await.unwrap();
    let open = || async { parts.store.open_incidents().await.unwrap() };
    assert!(
        open().await.contains(&medic_core::AppId::new("argocd", "accounts")),
        "the hook failure opened an incident: {:?}",
        open().await
    );

    assert!(sim.remove_app("argocd", "accounts"));
    let second = sweep(&r, &SweepOptions::default(), &(), &|| false).await.unwrap();
    assert_eq!(second.listed, 32);
    let accounts = second.reports.iter().find(|r| r.app == "argocd/accounts").expect("the unlisted app is looked at");
    assert_eq!(accounts.result, StepResult::Resolved, "{}", accounts.detail);
    assert!(!open().await.contains(&medic_core::AppId::new("argocd", "accounts")));
    let third = sweep(&r, &SweepOptions::default(), &(), &|| false).await.unwrap();
    assert!(third.reports.iter().all(|r| r.app != "argocd/accounts"), "a closed incident is not looked at again");
}

/// A fleet-wide failure spread over every source and cluster (list items from an old Argo CD
/// without `spec`): Argo CD itself is the cause; one alert, and no per-app action but the canaries.
#[tokio::test]
async fn a_fleet_wide_outage_raises_one_alert_and_probes_only_the_canaries() {
    let sim = ArgoSim::start(SimConfig::default()).await.unwrap();
    for (mut app, outcomes) in synthetic_fleet(40, 0, Utc::now()) {
        let name = app["metadata"]["name"].as_str().unwrap().to_owned();
        if name.as_str() < "app-00021" {
            down(&mut app, "rpc error: code = Unavailable desc = connection refused");
        }
        sim.insert_app(app);
        sim.set_outcomes(&name, outcomes);
    }
    let c = client(&sim);
    let parts = Parts::new(SqliteIncidentStore::in_memory().unwrap(), PolicyConfig::default());
    let r = parts.step(&c, false, Duration::from_secs(600));
    let summary = sweep(&r, &SweepOptions::default(), &(), &|| false).await.unwrap();
    let o = &summary.outages;
    assert_eq!(o.len(), 1, "{o:?}");
    assert_eq!((o[0].cause.as_str(), o[0].apps, o[0].probed, o[0].healed, o[0].released), ("repo:git.example.com", 20, 3, 0, 0));
    assert_eq!(parts.escalator.alerts().len(), 1, "{:?}", parts.escalator.alerts());
    assert!(parts.escalator.escalations().is_empty());
    assert_eq!(mutating(&sim), 3, "three canary refreshes, nothing else");
    assert_eq!(sim.counts().get, 0, "held-back apps are not even read");
}

/// Marks a synthetic app as Argo CD shows it when its source cannot be fetched: sync status and
/// health Unknown, a ComparisonError with `message` (since an hour: past the grace period).
fn down(app: &mut serde_json::Value, message: &str) {
    let since = (Utc::now() - chrono::TimeDelta::hours(1)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    app["status"]["sync"]["status"] = "Unknown".into();
    app["status"]["health"] = serde_json::json!({"status": "Unknown", "lastTransitionTime": since});
    app["status"]["conditions"] = serde_json::json!([{"type": "ComparisonError", "message": message, "lastTransitionTime": since}]);
}

/// Storm economy (issue 10): one Git host of many is unreachable for 2,000 of 2,400 apps, while
/// 5 % of the fleet fails for reasons of its own on another host. During the outage a sweep
/// raises one fleet alert, refreshes three canaries and nothing else of the 2,000; the unrelated
/// apps keep their own handling. When Git is back the canaries heal and the other 1,997 are
/// refreshed as one wave (two calls each: the read and the verified refresh that closes), and no
/// app of the shared cause is escalated on its own.
#[tokio::test]
async fn a_git_host_outage_is_one_cause_probed_by_canaries_then_released_as_one_wave() {
    const DOWN: &str = "https://git.down.example.com/platform/deployments.git";
    // Argo CD's message when the repo-server cannot reach Git (reposerver, `git ls-remote`).
    let unreachable = format!(
        "rpc error: code = Unknown desc = failed to list refs: Get \"{DOWN}/info/refs?service=git-upload-pack\": dial tcp 10.20.30.40:443: connect: connection refused"
    );
    let sim = ArgoSim::start(SimConfig::default()).await.unwrap();
    let mut noise = Vec::new();
    for (i, (mut app, outcomes)) in synthetic_fleet(2400, 0, Utc::now()).into_iter().enumerate() {
        let name = app["metadata"]["name"].as_str().unwrap().to_owned();
        if i < 2000 {
            app["spec"]["source"]["repoURL"] = DOWN.into();
            down(&mut app, &unreachable);
        } else {
            app["spec"]["source"]["repoURL"] = "https://github.com/example/platform.git".into();
            if i % 20 == 0 {
                // Noise: 5 % of the fleet really failing (Degraded), on a host that works.
                app["status"]["health"] = serde_json::json!({"status": "Degraded", "message": "Deployment has minimum availability false", "lastTransitionTime": Utc::now().to_rfc3339()});
                noise.push(name.clone());
            }
        }
        sim.insert_app(app);
        sim.set_outcomes(&name, outcomes);
    }
    let c = client(&sim);
    let parts = Parts::new(SqliteIncidentStore::in_memory().unwrap(), PolicyConfig::default());
    let r = parts.step(&c, false, Duration::from_secs(600));
    let touched = |sim: &ArgoSim| -> std::collections::BTreeSet<String> {
        sim.requests()
            .iter()
            .filter_map(|q| q.path.strip_prefix("/api/v1/applications/"))
            .filter(|n| n < &"app-02001")
            .map(str::to_owned)
            .collect()
    };

    let during = sweep(&r, &SweepOptions::default(), &(), &|| false).await.unwrap();
    let o = &during.outages;
    assert_eq!(o.len(), 1, "one cause: {o:?}");
    assert_eq!((o[0].cause.as_str(), o[0].apps, o[0].of), ("repo:git.down.example.com", 2000, 2000));
    assert_eq!((o[0].probed, o[0].healed, o[0].released), (3, 0, 0), "canaries probed, no wave while Git is down");
    assert_eq!(touched(&sim).len(), 3, "of the 2,000, only the canaries are called");
    assert_eq!(parts.escalator.alerts().len(), 1);
    assert!(
        parts.escalator.alerts()[0].contains("2000 of 2000 apps of source host git.down.example.com"),
        "{}",
        parts.escalator.alerts()[0]
    );
    let escalated: Vec<String> = parts.escalator.escalations().iter().map(|(a, _)| a.name().to_owned()).collect();
    assert!(escalated.iter().all(|n| noise.contains(n)), "only unrelated apps are escalated, on their own: {escalated:?}");
    assert_eq!(escalated.len(), noise.len(), "every unrelated failure keeps its own handling");

    // Git is back: a refresh now makes Argo CD compare every app of the host again.
    for i in 0..2000 {
        sim.set_outcomes(
            &format!("app-{:05}", i + 1),
            medic_sim::Outcomes { refresh: medic_sim::RefreshOutcome::Heal, ..Default::default() },
        );
    }
    sim.clear_requests();
    let after = sweep(&r, &SweepOptions::default(), &(), &|| false).await.unwrap();
    let o = &after.outages;
    let sample: Vec<String> = after
        .reports
        .iter()
        .filter(|r| r.app.name() < "app-02001")
        .take(5)
        .map(|r| format!("{}: {:?} {}", r.app, r.result, r.detail))
        .collect();
    assert_eq!((o[0].probed, o[0].healed, o[0].released, o[0].paused), (3, 3, 1997, false), "{o:?} {sample:#?}");
    assert!(after.errors.is_empty(), "{:?}", after.errors);
    let covered: Vec<_> = after.reports.iter().filter(|r| r.app.name() < "app-02001").collect();
    assert_eq!(covered.len(), 2000);
    let healed =
        (1..=2000).filter(|i| sim.app("argocd", &format!("app-{i:05}")).is_some_and(|a| a["status"]["sync"]["status"] == "Synced")).count();
    assert_eq!(healed, 2000, "every app of the cause is compared again");
    let resolved = covered.iter().filter(|r| r.resolution.is_some()).count();
    assert_eq!(resolved, 1997, "the wave's refreshes closed their incidents on their own read; the canaries had none");
    let calls = sim.requests().iter().filter(|q| q.path.strip_prefix("/api/v1/applications/").is_some_and(|n| n < "app-02001")).count();
    assert!(calls <= 2 * 2000, "{calls} calls for 2,000 apps: at most a read and a refresh each");
    let escalated: Vec<String> = parts.escalator.escalations().iter().map(|(a, _)| a.name().to_owned()).collect();
    assert!(escalated.iter().all(|n| noise.contains(n)), "no app of the shared cause is escalated: {escalated:?}");
    assert_eq!(parts.escalator.alerts().len(), 1, "the overdue outage is escalated once, not once per sweep");
    let states = |told: Vec<OutageView>| told.iter().map(|v| (v.state, v.released)).collect::<Vec<_>>();
    assert_eq!(
        states(parts.escalator.outages()),
        [(WaveState::Held, 0), (WaveState::Released, 1997)],
        "one parent, told each sweep while the cause shows in the list"
    );

    let quiet = sweep(&r, &SweepOptions::default(), &(), &|| false).await.unwrap();
    assert!(quiet.outages.is_empty(), "the cause is gone from the list");
    assert_eq!(states(parts.escalator.outages()).last(), Some(&(WaveState::Recovered, 1997)), "and its parent is told over");
}

#[tokio::test]
async fn a_rejected_token_stops_the_sweep_with_one_alert() {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = medic_adapters::argocd::HttpArgoClient::new(crate::support::settings(&sim, "a.b.c")).unwrap();
    let parts = Parts::new(SqliteIncidentStore::in_memory().unwrap(), PolicyConfig::default());
    let r = parts.step(&c, false, Duration::from_secs(600));
    let err = sweep(&r, &SweepOptions::default(), &(), &|| false).await.unwrap_err();
    assert!(err.to_string().contains("token"), "{err}");
    assert_eq!(parts.escalator.alerts().len(), 1);
    assert!(parts.escalator.alerts()[0].contains("Mint a new token"));
    let lists = sim.requests().iter().filter(|q| q.path == "/api/v1/applications").count();
    assert_eq!(lists, 1, "one list call, not retried");
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
    let parts = Parts::new(SqliteIncidentStore::in_memory().unwrap(), PolicyConfig::default()).with_budget(budget);
    let r = parts.step(&c, false, Duration::from_secs(600));

    let first = sweep(&r, &SweepOptions::default(), &(), &|| false).await.unwrap();
    assert_eq!((first.listed, first.candidates), (2000, 500), "{:?}", first.errors);
    assert_eq!(first.count(StepResult::Deferred), 0, "nothing deferred");
    assert_eq!(first.count(StepResult::Refreshed), 500, "every stale app refreshed and verified in the first pass");
    assert!(first.reports.iter().all(|r| r.detail.ends_with("the incident is closed")), "closed on the refresh's own read");
    let after_first = sim.counts();

    let second = sweep(&r, &SweepOptions::default(), &(), &|| false).await.unwrap();
    assert_eq!(second.candidates, 0, "nothing left to look at: {:?}", second.reports.first());
    assert_eq!(mutating(&sim), 500, "the second sweep makes no mutating call");
    let c = sim.counts();
    assert_eq!((c.get, c.refresh), (after_first.get, after_first.refresh), "and reads no app");
    let calls = c.list + c.get + c.refresh + c.hard_refresh + c.sync + c.version;
    let per_app = calls as f64 / 500.0;
    eprintln!("storm economy: {calls} Argo CD calls over two sweeps, {per_app:.3} per stale app ({} s)", first.elapsed_ms / 1000);
    assert!(per_app <= 2.05, "{per_app:.3} calls per stale app ({c:?})");
}

/// Who turns the outage state machine in [`one_outage_state_machine_for_the_sweeper_and_medic_sweep`].
enum Sweeper {
    /// The sweeper function's sweep, over the in-memory twins: a wave is enqueued.
    Function(
        Box<
            medic_service::sweep::Sweep<
                medic_stack::twins::MemoryPorts<medic_adapters::argocd::HttpArgoClient, medic_adapters::budget::LocalBudget>,
            >,
        >,
    ),
    /// `medic sweep`: a wave is stepped inline.
    Cli(Box<Parts<SqliteIncidentStore>>, medic_adapters::argocd::HttpArgoClient),
}

impl Sweeper {
    async fn pass(&self) {
        match self {
            Sweeper::Function(sweep) => drop(sweep.run().await.unwrap()),
            Sweeper::Cli(parts, c) => {
                drop(sweep(&parts.step(c, false, Duration::from_secs(600)), &SweepOptions::default(), &(), &|| false).await.unwrap())
            }
        }
    }

    fn escalator(&self) -> &medic_adapters::memory::LogEscalator {
        match self {
            Sweeper::Function(sweep) => &sweep.escalator,
            Sweeper::Cli(parts, _) => &parts.escalator,
        }
    }

    fn dedupe(&self) -> &medic_adapters::memory::MemoryDedupe {
        match self {
            Sweeper::Function(sweep) => &sweep.dedupe,
            Sweeper::Cli(parts, _) => &parts.dedupe,
        }
    }
}

/// Issue 28: `medic sweep` had outage rules of its own (an alert every sweep, no hold, no buttons,
/// no relapse). Both now turn one state machine (`medic_service::outage`), and this one script
/// runs on both: an outage past its time bound is held and escalated once over two sweeps; a
/// person's pause holds the wave though the canaries healed; without it the wave is released
/// (enqueued by the sweeper, stepped by `medic sweep`); once the apps compare again the parent is
/// told over. Only the wave's dispatch may differ.
#[tokio::test]
async fn one_outage_state_machine_for_the_sweeper_and_medic_sweep() {
    use medic_core::ports::DedupeStore;
    let mut turns = Vec::new();
    for cli in [false, true] {
        let sim = crate::support::outage_fleet(30, 20, "git.down.example.com", 120, None, |_, _| None).await;
        let sweeper = if cli {
            Sweeper::Cli(Box::new(Parts::new(SqliteIncidentStore::in_memory().unwrap(), PolicyConfig::default())), client(&sim))
        } else {
            let adapters = medic_stack::twins::MemoryState::default().adapters(client(&sim), crate::support::generous_budget(), "test");
            Sweeper::Function(Box::new(adapters.sweep(medic_service::sweep::SweeperConfig::default())))
        };
        let told = |s: &Sweeper| s.escalator().outages().last().cloned().expect("a parent is told");
        let turn = |v: &OutageView| (v.state, v.overdue, v.by_person, v.released);

        sweeper.pass().await;
        sweeper.pass().await;
        let held = told(&sweeper);
        assert_eq!(sweeper.escalator().outages().len(), 2, "cli {cli}: one parent told per sweep");
        assert_eq!(turn(&held), (WaveState::Held, true, false, 0), "cli {cli}: held, past its bound");
        assert_eq!(sweeper.escalator().alerts().len(), 1, "cli {cli}: escalated once for the outage: {:?}", sweeper.escalator().alerts());
        assert_eq!(mutating(&sim), 6, "cli {cli}: three canary refreshes a sweep, nothing else");

        // Git is back, but a person paused the wave.
        for i in 1..=20 {
            sim.set_outcomes(
                &format!("app-{i:05}"),
                medic_sim::Outcomes { refresh: medic_sim::RefreshOutcome::Heal, ..Default::default() },
            );
        }
        let since = held.since.clone().unwrap();
        let scope = held.scope.clone();
        let pause = medic_core::keys::fleet_control_marker(&scope, &since, medic_core::ladder::FleetControl::Pause);
        sweeper.dedupe().mark(&pause, Duration::from_secs(3600)).await.unwrap();
        sweeper.pass().await;
        let paused = told(&sweeper);
        assert_eq!((turn(&paused), paused.healed), ((WaveState::Paused, false, true, 0), 3), "cli {cli}");
        assert_eq!(paused.since, held.since, "cli {cli}: the same outage");

        // The pause lifted: the canaries decide, and the wave goes.
        sweeper.dedupe().forget(&pause).await.unwrap();
        sweeper.pass().await;
        let released = told(&sweeper);
        assert_eq!(turn(&released).0, WaveState::Released, "cli {cli}");
        assert!(released.released > 0, "cli {cli}: {released:?}");
        match &sweeper {
            Sweeper::Function(sweep) => assert_eq!(
                sweep.queue.items().iter().filter(|item| item.wave.is_some()).count(),
                released.released,
                "the wave is enqueued for the workers"
            ),
            Sweeper::Cli(..) => assert!(
                (1..=20).all(|i| sim.app("argocd", &format!("app-{i:05}")).unwrap()["status"]["sync"]["status"] != "Unknown"),
                "the wave is stepped inline"
            ),
        }

        // Every app compares again (the workers stepped the sweeper's wave): the parent is over.
        for i in 1..=20 {
            let mut app = sim.app("argocd", &format!("app-{i:05}")).unwrap();
            app["status"]["sync"]["status"] = "Synced".into();
            app["status"]["conditions"] = serde_json::json!([]);
            sim.insert_app(app);
        }
        sweeper.pass().await;
        assert_eq!(told(&sweeper).state, WaveState::Recovered, "cli {cli}: told over");
        turns.push(sweeper.escalator().outages().iter().map(|v| (v.state, v.overdue, v.by_person)).collect::<Vec<_>>());
    }
    assert_eq!(turns[0], turns[1], "the sweeper and medic sweep turn the outage alike");
}

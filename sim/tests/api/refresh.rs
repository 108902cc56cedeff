//! `GET /api/v1/applications/{name}?refresh=...` applies the app's scripted refresh outcome.

use chrono::{DateTime, Duration, Utc};
use medic_sim::{Outcomes, RefreshOutcome, SimConfig};

use crate::support::{Api, broken_app};

fn reconciled_at(app: &serde_json::Value) -> DateTime<Utc> {
    app["status"]["reconciledAt"].as_str().and_then(|s| s.parse().ok()).expect("reconciledAt")
}

async fn sim_with(outcomes: Outcomes) -> Api {
    let api = Api::with_apps(SimConfig::default(), vec![broken_app("web", "team-a")]).await;
    api.sim.set_outcomes("web", outcomes);
    api
}

#[tokio::test]
async fn a_noop_refresh_moves_reconciled_at_and_nothing_else() {
    let api = sim_with(Outcomes::default()).await;
    let before = broken_app("web", "team-a");
    let answer = api.get("/api/v1/applications/web?refresh=normal").await;
    assert_eq!(answer.status, 200);
    assert!(Utc::now() - reconciled_at(&answer.body) < Duration::seconds(5));
    assert_ne!(answer.body["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"]);
    assert_eq!(answer.body["status"]["health"], before["status"]["health"]);
    assert_eq!(answer.body["status"]["conditions"], before["status"]["conditions"]);
    assert_eq!(answer.body["status"]["sync"], before["status"]["sync"]);
    assert_eq!(answer.body, api.app("web"), "the refresh was stored");
    let counts = api.sim.counts();
    assert_eq!((counts.refresh, counts.hard_refresh, counts.get), (1, 0, 0));
}

#[tokio::test]
async fn a_healing_refresh_makes_the_app_synced_and_healthy() {
    let api = sim_with(Outcomes { refresh: RefreshOutcome::Heal, ..Outcomes::default() }).await;
    let answer = api.get("/api/v1/applications/web?refresh=normal").await;
    assert_eq!(answer.status, 200);
    let status = &answer.body["status"];
    assert_eq!(status["sync"]["status"], "Synced");
    assert_eq!(status["health"]["status"], "Healthy");
    let transition: DateTime<Utc> = status["health"]["lastTransitionTime"].as_str().and_then(|s| s.parse().ok()).expect("time");
    assert!(Utc::now() - transition < Duration::seconds(5));
    assert!(status.get("conditions").is_none(), "the ComparisonError is gone: {status}");
    assert!(Utc::now() - reconciled_at(&answer.body) < Duration::seconds(5));
}

#[tokio::test]
async fn a_dropped_hard_refresh_returns_the_app_unchanged() {
    let api = sim_with(Outcomes { refresh: RefreshOutcome::Heal, hard_refresh: RefreshOutcome::Drop, ..Outcomes::default() }).await;
    let answer = api.get("/api/v1/applications/web?refresh=hard").await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body, broken_app("web", "team-a"));
    assert_eq!(reconciled_at(&api.app("web")), reconciled_at(&broken_app("web", "team-a")));
    let counts = api.sim.counts();
    assert_eq!((counts.refresh, counts.hard_refresh, counts.get), (0, 1, 0));
}

#[tokio::test]
async fn any_refresh_value_other_than_hard_is_a_normal_refresh_and_none_is_a_plain_get() {
    let api = sim_with(Outcomes { hard_refresh: RefreshOutcome::Heal, ..Outcomes::default() }).await;
    let plain = api.get("/api/v1/applications/web").await;
    assert_eq!(plain.body, broken_app("web", "team-a"), "a plain get changes nothing");
    let odd = api.get("/api/v1/applications/web?refresh=true").await;
    assert_eq!(odd.body["status"]["health"]["status"], "Progressing", "normal outcome (noop), not hard (heal)");
    assert!(Utc::now() - reconciled_at(&odd.body) < Duration::seconds(5));
    let hard = api.get("/api/v1/applications/web?refresh=hard").await;
    assert_eq!(hard.body["status"]["health"]["status"], "Healthy");
    let counts = api.sim.counts();
    assert_eq!((counts.get, counts.refresh, counts.hard_refresh), (1, 1, 1));
}

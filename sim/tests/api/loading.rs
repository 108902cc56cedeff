//! Root path, loading sample apps with rebased timestamps, the synthetic fleet, the request log.

use std::path::PathBuf;

use chrono::{DateTime, Duration, TimeZone, Utc};
use medic_sim::{ArgoSim, Outcomes, Rebase, RefreshOutcome, SimConfig, SyncOutcome, synthetic_fleet};
use serde_json::{Value, json};

use crate::support::{Api, app};

/// A fresh directory under the system temp dir, removed at the end of the test.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "medic-sim-{tag}-{}-{}",
            std::process::id(),
            Utc::now().timestamp_nanos_opt().unwrap_or_default()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    fn write(&self, name: &str, value: &Value) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, serde_json::to_string_pretty(value).expect("json")).expect("write");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn every_path_is_served_under_the_root_path_and_nothing_outside_it() {
    let config = SimConfig { root_path: "/argocd/".into(), ..SimConfig::default() };
    let api = Api::with_apps(config, vec![app("web", "team-a")]).await;
    assert_eq!(api.url("/api/version"), format!("{}/argocd/api/version", api.sim.base_url()));
    assert_eq!(api.get("/api/v1/applications/web").await.status, 200);
    let sync = api.sync("web", json!({})).await;
    assert_eq!(sync.status, 200);

    let outside = api.send(api.http.get(format!("{}/api/v1/applications/web", api.sim.base_url())).bearer_auth(&api.token)).await;
    assert_eq!(outside.status, 404);
    let logged = api.sim.requests();
    assert_eq!(logged[0].path, "/api/v1/applications/web", "logged without the root path");
    assert_eq!(logged[1].path, "/api/v1/applications/web/sync");
    assert_eq!(api.sim.counts().get, 1, "the request outside the root path is no API call");
}

#[tokio::test]
async fn load_dir_rebases_every_timestamp_and_load_outcomes_scripts_the_apps() {
    let dir = TempDir::new("load");
    let mut stale = app("web", "team-a");
    stale["status"]["reconciledAt"] = json!("2026-11-01T10:30:00Z");
    stale["status"]["operationState"]["startedAt"] = json!("2026-11-01T10:29:00.250Z");
    dir.write("web.json", &stale);
    dir.write("list.json", &json!({"items": [app("api", "team-b"), app("db", "team-c")]}));
    std::fs::write(dir.0.join("notes.txt"), "not an app").expect("write");
    let outcomes = dir.write("outcomes.json", &json!({"web": {"refresh": "heal"}, "db": {"sync": {"fail": {"message": "boom"}}}}));
    let apps = TempDir::new("apps");
    for entry in std::fs::read_dir(&dir.0).expect("dir").flatten() {
        if entry.path() != outcomes && entry.path().extension().is_some_and(|e| e == "json") {
            std::fs::copy(entry.path(), apps.0.join(entry.file_name())).expect("copy");
        }
    }

    let sim = ArgoSim::start(SimConfig::default()).await.expect("start");
    let captured_at = Utc.with_ymd_and_hms(2026, 11, 1, 12, 30, 0).single().expect("time");
    let now = Utc::now();
    let loaded = sim.load_dir(&apps.0, Some(Rebase { captured_at, now })).expect("load");
    assert_eq!(loaded, 3);
    let web = sim.app("argocd", "web").expect("web");
    let reconciled: DateTime<Utc> = web["status"]["reconciledAt"].as_str().and_then(|s| s.parse().ok()).expect("time");
    // Captured 2 h before capture time, so 2 h before now (whole seconds, as written).
    let behind = now - reconciled - Duration::hours(2);
    assert!(behind >= Duration::zero() && behind < Duration::seconds(1), "{behind}");
    let started = web["status"]["operationState"]["startedAt"].as_str().expect("startedAt");
    assert!(started.ends_with('Z') && started.len() == "2026-11-01T10:29:00.250Z".len(), "precision kept: {started}");
    let created: DateTime<Utc> = web["metadata"]["creationTimestamp"].as_str().and_then(|s| s.parse().ok()).expect("time");
    let expected = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().expect("time") + (now - captured_at);
    assert!((expected - created).num_milliseconds().abs() < 1000, "{created} vs {expected}");
    assert!(sim.app("argocd", "db").is_some());

    assert_eq!(sim.load_outcomes(&outcomes).expect("outcomes"), 2);
    let broken = TempDir::new("broken");
    broken.write("x.json", &json!({"spec": {}}));
    assert!(sim.load_dir(&broken.0, None).is_err(), "an app without a name is refused");
    sim.shutdown().await;
}

#[tokio::test]
async fn the_synthetic_fleet_has_the_documented_shape_and_its_stale_apps_heal_on_refresh() {
    let now = Utc::now();
    let fleet = synthetic_fleet(25, 5, now);
    assert_eq!(fleet.len(), 25);
    let api = Api::start(SimConfig::default()).await;
    for (app, outcomes) in &fleet {
        let name = app["metadata"]["name"].as_str().expect("name").to_string();
        api.sim.insert_app(app.clone());
        api.sim.set_outcomes(&name, outcomes.clone());
    }
    assert_eq!(fleet[0].0["metadata"]["name"], "app-00001");
    assert_eq!(fleet[24].0["metadata"]["name"], "app-00025");
    let projects: std::collections::BTreeSet<&str> = fleet.iter().filter_map(|(a, _)| a["spec"]["project"].as_str()).collect();
    assert_eq!(projects.into_iter().collect::<Vec<_>>(), ["team-a", "team-b", "team-c", "team-d", "team-e"]);
    for (app, outcomes) in &fleet {
        assert_eq!(app["metadata"]["namespace"], "argocd");
        assert!(matches!(app["metadata"]["labels"]["env"].as_str(), Some("prod" | "staging")));
        assert!(app["spec"]["syncPolicy"]["automated"].is_object());
        assert!(app["metadata"]["resourceVersion"].is_string(), "a full object");
        let reconciled: DateTime<Utc> = app["status"]["reconciledAt"].as_str().and_then(|s| s.parse().ok()).expect("reconciledAt");
        let finished: DateTime<Utc> =
            app["status"]["operationState"]["finishedAt"].as_str().and_then(|s| s.parse().ok()).expect("finishedAt");
        assert_eq!(app["status"]["operationState"]["phase"], "Succeeded");
        if outcomes.refresh == RefreshOutcome::Heal {
            assert_eq!(app["status"]["health"]["status"], "Progressing");
            assert!((now - reconciled - Duration::hours(2)).num_seconds().abs() <= 1);
            assert!((now - finished - Duration::hours(2)).num_seconds().abs() <= 1);
        } else {
            assert_eq!(*outcomes, Outcomes::default());
            assert_eq!(app["status"]["health"]["status"], "Healthy");
            assert_eq!(app["status"]["sync"]["status"], "Synced");
            assert!((now - reconciled - Duration::minutes(1)).num_seconds().abs() <= 1);
        }
        assert_eq!(outcomes.sync, SyncOutcome::Succeed);
    }
    let stale: Vec<&str> =
        fleet.iter().filter(|(_, o)| o.refresh == RefreshOutcome::Heal).filter_map(|(a, _)| a["metadata"]["name"].as_str()).collect();
    assert_eq!(stale.len(), 5);

    let listed = api.get("/api/v1/applications?selector=env%3Dprod").await;
    let prod = fleet.iter().filter(|(a, _)| a["metadata"]["labels"]["env"] == "prod").count();
    assert_eq!(listed.body["items"].as_array().map(Vec::len), Some(prod));
    let healed = api.get(&format!("/api/v1/applications/{}?refresh=normal", stale[0])).await;
    assert_eq!(healed.body["status"]["health"]["status"], "Healthy");
}

#[tokio::test]
async fn every_request_is_logged_with_its_body_and_response_and_clear_requests_starts_over() {
    let api = Api::with_apps(SimConfig::default(), vec![app("web", "team-a")]).await;
    api.get("/api/v1/applications?projects=team-a&projects=team-b").await;
    api.sync("web", json!({"prune": true, "infos": [{"name": "k", "value": "v"}]})).await;
    let logged = api.sim.requests();
    assert_eq!(logged.len(), 2);
    assert_eq!(logged[0].method, "GET");
    assert_eq!(logged[0].query, [("projects".to_string(), "team-a".to_string()), ("projects".to_string(), "team-b".to_string())]);
    assert_eq!(logged[0].body, None);
    assert_eq!(logged[0].authorization, Some(format!("Bearer {}", api.token)));
    assert_eq!(logged[0].response["items"][0]["metadata"]["name"], "web");
    assert_eq!(logged[1].content_type.as_deref(), Some("application/json"));
    assert_eq!(logged[1].body, Some(json!({"prune": true, "infos": [{"name": "k", "value": "v"}]})));
    assert_eq!(serde_json::from_str::<Value>(&logged[1].raw_body).ok(), logged[1].body);
    assert_eq!(logged[1].status, 200);
    assert_eq!(logged[1].response["operation"]["info"][0]["value"], "v");
    assert!(logged[0].at <= logged[1].at);
    let counts = api.sim.counts();
    assert_eq!((counts.list, counts.sync, counts.rejected), (1, 1, 0));

    api.sim.clear_requests();
    assert!(api.sim.requests().is_empty());
    assert_eq!(api.sim.counts(), medic_sim::CallCounts::default());
}

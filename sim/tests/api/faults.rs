//! Injected faults: error statuses, latency and dropped connections.

use std::time::{Duration, Instant};

use medic_sim::{Fault, FaultKind, SimConfig};
use serde_json::json;

use crate::support::{Api, app, error_body};

fn fault(path: Option<&str>, method: Option<&str>, kind: FaultKind, times: usize) -> Fault {
    Fault { path_contains: path.map(str::to_string), method: method.map(str::to_string), kind, times }
}

#[tokio::test]
async fn a_status_fault_answers_like_the_gateway_with_retry_after_then_runs_out() {
    let api = Api::with_apps(SimConfig::default(), vec![app("web", "team-a")]).await;
    api.sim.inject(fault(Some("/applications/web"), Some("get"), FaultKind::Status { code: 429, retry_after_secs: Some(7) }, 2));
    api.sim.inject(fault(None, None, FaultKind::Status { code: 503, retry_after_secs: None }, 1));

    for _ in 0..2 {
        let throttled = api.get("/api/v1/applications/web").await;
        assert_eq!(throttled.status, 429);
        assert_eq!(throttled.retry_after.as_deref(), Some("7"));
        assert_eq!(throttled.body, error_body(8, "the server has received too many requests and has asked us to try again later"));
    }
    let unavailable = api.get("/api/v1/applications/web").await;
    assert_eq!(unavailable.status, 503);
    assert_eq!(unavailable.retry_after, None);
    assert_eq!(unavailable.body, error_body(14, "the server is currently unable to handle the request"));
    let fine = api.get("/api/v1/applications/web").await;
    assert_eq!(fine.status, 200);

    let counts = api.sim.counts();
    assert_eq!((counts.get, counts.rejected), (4, 3), "faulted requests are counted and logged");
    assert_eq!(api.sim.requests().iter().map(|r| r.status).collect::<Vec<_>>(), [429, 429, 503, 200]);
}

#[tokio::test]
async fn a_fault_for_one_method_and_path_leaves_other_requests_alone() {
    let api = Api::with_apps(SimConfig::default(), vec![app("web", "team-a")]).await;
    api.sim.inject(fault(Some("/sync"), Some("POST"), FaultKind::Status { code: 502, retry_after_secs: None }, 1));
    assert_eq!(api.get("/api/v1/applications/web").await.status, 200);
    assert_eq!(api.get("/api/v1/applications").await.status, 200);
    let faulted = api.sync("web", json!({})).await;
    assert_eq!(faulted.status, 502);
    assert_eq!(faulted.body["code"], 14);
    assert!(api.app("web").get("operation").is_none(), "a faulted sync never reached the handler");
    assert_eq!(api.sync("web", json!({})).await.status, 200);
}

#[tokio::test]
async fn a_latency_fault_delays_the_answer_then_handles_it_normally() {
    let api = Api::with_apps(SimConfig::default(), vec![app("web", "team-a")]).await;
    api.sim.inject(fault(Some("refresh=normal"), None, FaultKind::Latency(Duration::from_millis(300)), 1));
    let started = Instant::now();
    let slow = api.get("/api/v1/applications/web?refresh=normal").await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(slow.status, 200);
    assert_eq!(api.sim.counts().refresh, 1);
    let started = Instant::now();
    api.get("/api/v1/applications/web?refresh=normal").await;
    assert!(started.elapsed() < Duration::from_millis(300), "the fault was used up");
}

#[tokio::test]
async fn a_drop_fault_is_a_connection_error_for_the_client() {
    let api = Api::with_apps(SimConfig::default(), vec![app("web", "team-a")]).await;
    api.sim.inject(fault(Some("/api/v1/applications/web"), None, FaultKind::Drop, 1));
    let started = Instant::now();
    let result = api.http.get(api.url("/api/v1/applications/web")).bearer_auth(&api.token).send().await;
    let error = result.expect_err("no HTTP response at all");
    assert!(!error.is_timeout(), "the connection was closed, not left hanging: {error:?}");
    assert!(error.status().is_none());
    assert!(started.elapsed() < Duration::from_secs(5));

    let logged = api.sim.requests();
    assert_eq!(logged.len(), 1);
    assert_eq!(logged[0].status, 0);
    assert_eq!(logged[0].response, serde_json::Value::Null);
    assert_eq!(api.sim.counts().get, 1);
    assert_eq!(api.get("/api/v1/applications/web").await.status, 200, "the next request is answered");
}

//! The ingest handler on the in-memory twins: the HTTP contract of `/v1/events` without moto or
//! Python (`cargo test -p ingest`). The same handler over SQS is in tests/pipeline.rs.

use std::path::PathBuf;

use medic_adapters::memory::MemoryQueue;
use medic_adapters::memory::SystemClock;
use medic_adapters::telemetry::Metrics;
use medic_core::app::{Application, ApplicationSyncRequest};
use medic_core::event::{AppRef, WorkKind};
use medic_core::ladder::RefreshKind;
use medic_core::ports::{ArgoApi, ArgoError, ListQuery};
use medic_ingest::{Ingest, IngestConfig, WebhookSecrets};

const SECRET: &str = "ingest-handler-test-secret";
const PREVIOUS: &str = "ingest-handler-test-previous-secret";

/// The webhook path never calls Argo CD: every call fails the test.
struct NoArgo;

impl ArgoApi for NoArgo {
    async fn get_app(&self, app: &AppRef) -> Result<Application, ArgoError> {
        panic!("the webhook path read {app:?} from Argo CD")
    }
    async fn refresh(&self, _: &medic_core::permit::Permit, app: &AppRef, _: RefreshKind) -> Result<Application, ArgoError> {
        panic!("the webhook path refreshed {app:?}")
    }
    async fn list_apps(&self, _: &ListQuery) -> Result<Vec<Application>, ArgoError> {
        panic!("the webhook path listed apps")
    }
    async fn sync(&self, _: &medic_core::permit::Permit, app: &AppRef, _: &ApplicationSyncRequest) -> Result<Application, ArgoError> {
        panic!("the webhook path synced {app:?}")
    }
    async fn terminate_operation(&self, _: &medic_core::permit::Permit, app: &AppRef) -> Result<(), ArgoError> {
        panic!("the webhook path terminated {app:?}'s operation")
    }
    async fn credential_expiry(&self) -> Result<Option<chrono::DateTime<chrono::Utc>>, String> {
        Ok(None)
    }
    async fn revision_metadata(
        &self,
        _: &AppRef,
        _: &str,
        _: Option<usize>,
    ) -> Result<Option<medic_core::app::RevisionMetadata>, ArgoError> {
        Ok(None)
    }
    async fn version(&self) -> Result<String, ArgoError> {
        Ok("v3.5.1".into())
    }
}

fn events_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test")).join("../../events")
}

type TwinIngest = Ingest<std::sync::Arc<MemoryQueue>, NoArgo, SystemClock, Metrics>;

fn ingest() -> TwinIngest {
    Ingest::new(
        medic_stack::twins::MemoryState::default().intake(NoArgo, IngestConfig::default()),
        WebhookSecrets::new(SECRET, Some(PREVIOUS.into())),
    )
}

fn sample(name: &str) -> String {
    std::fs::read_to_string(events_dir().join("webhook").join(name)).unwrap()
}

/// A Function URL request for `path` with this method, body and headers, in the shape Lambda
/// delivers it (the recorded sample, its parts replaced).
fn request(method: &str, path: &str, body: &str, headers: &[(&str, &str)]) -> lambda_http::Request {
    let mut event: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(events_dir().join("lambda/ingest/webhook-sync-failed.json")).unwrap()).unwrap();
    event["body"] = body.into();
    event["rawPath"] = path.into();
    event["requestContext"]["http"]["method"] = method.into();
    event["requestContext"]["http"]["path"] = path.into();
    event["headers"] = headers.iter().map(|(k, v)| (k.to_string(), serde_json::Value::from(*v))).collect::<serde_json::Map<_, _>>().into();
    lambda_http::request::from_str(&event.to_string()).unwrap()
}

fn webhook(body: &str, headers: &[(&str, &str)]) -> lambda_http::Request {
    request("POST", "/v1/events", body, headers)
}

#[tokio::test]
async fn a_notification_with_the_secret_is_accepted_and_enqueued_once_as_a_notification() {
    let ingest = ingest();
    let bearer = format!("Bearer {SECRET}");
    let response = ingest
        .handle(webhook(&sample("stale-progressing.json"), &[("content-type", "application/json"), ("authorization", &bearer)]))
        .await;
    assert_eq!(response.status(), 202, "{:?}", response.body());
    let answer: serde_json::Value = serde_json::from_slice(response.body().as_ref()).unwrap();
    let items = ingest.queue.take_ready(10);
    assert_eq!(items.len(), 1);
    assert_eq!((items[0].app.namespace.as_str(), items[0].app.name.as_str()), ("argocd", "pricing"));
    assert_eq!(items[0].kind, WorkKind::Notification);
    assert_eq!(answer["dedupeKey"], items[0].dedupe_key.as_str(), "the caller is told the key the worker dedupes by");
    // The previous secret still works during a rotation.
    let rotated = ingest
        .handle(webhook(
            &sample("stale-progressing.json"),
            &[("content-type", "application/json"), ("authorization", &format!("Bearer {PREVIOUS}"))],
        ))
        .await;
    assert_eq!(rotated.status(), 202);
    // HTTP authentication schemes are case-insensitive (RFC 9110 §11.1): a proxy or client that
    // writes `bearer` is not refused. Fails on 4b8d4db (401).
    for scheme in ["bearer", "BEARER", "Bearer  "] {
        let auth = format!("{scheme} {SECRET}");
        let response =
            ingest.handle(webhook(&sample("hook-failed.json"), &[("content-type", "application/json"), ("authorization", &auth)])).await;
        assert_eq!(response.status(), 202, "{scheme:?}");
    }
    for wrong in ["Basic dXNlcjpwYXNz".to_owned(), "Bearer".to_owned(), format!("Bearer{SECRET}")] {
        let response =
            ingest.handle(webhook(&sample("hook-failed.json"), &[("content-type", "application/json"), ("authorization", &wrong)])).await;
        assert_eq!(response.status(), 401, "{wrong:?}");
    }
}

#[tokio::test]
async fn a_rejected_request_gets_its_status_and_reason_is_counted_and_is_never_enqueued() {
    let ingest = ingest();
    let body = sample("hook-failed.json");
    let bearer = format!("Bearer {SECRET}");
    let json = ("content-type", "application/json");
    let auth = ("authorization", bearer.as_str());
    let cases: Vec<(lambda_http::Request, u16, &str)> = vec![
        (webhook(&body, &[json]), 401, "unauthenticated"),
        (webhook(&body, &[json, ("authorization", "Bearer wrong-secret")]), 403, "forbidden"),
        (webhook(&body, &[("content-type", "text/plain"), auth]), 415, "content_type"),
        (webhook(&format!(r#"{{"pad":"{}"}}"#, "x".repeat(70_000)), &[json, auth]), 413, "oversized"),
        (webhook("{not json", &[json, auth]), 400, "malformed"),
        (webhook(&body.replace("\"accounts\"", "\"Accounts!\""), &[json, auth]), 400, "malformed"),
        (webhook(&body.replace("\"schemaVersion\": 1", "\"schemaVersion\": 7"), &[json, auth]), 400, "unsupported_version"),
        // A trigger no template of Argo Medic's sends. Fails on 4b8d4db (202).
        (webhook(&body.replace("\"on-sync-failed\"", "\"on-bogus\""), &[json, auth]), 400, "unknown_trigger"),
        (request("GET", "/v1/events", "", &[auth]), 405, "method"),
        (request("POST", "/v2/events", &body, &[json, auth]), 404, "path"),
        // Signed refreshes are off without a refresh secret: the route does not exist.
        (request("POST", "/v1/refresh", "{}", &[json]), 404, "path"),
    ];
    for (request, status, reason) in cases {
        let response = ingest.handle(request).await;
        assert_eq!(response.status(), status, "{reason}: {:?}", response.body());
        assert_eq!(response.headers()["content-type"], "application/json", "{reason}");
        let answer: serde_json::Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        assert_eq!(answer["reason"], reason);
        assert!(!answer["error"].as_str().unwrap().is_empty(), "{reason}: the caller is told why");
        assert!(ingest.metrics.get("WebhookRejected", ("Reason", reason)) >= 1.0, "{reason} counted");
        if status == 401 {
            assert_eq!(response.headers()["www-authenticate"], "Bearer", "a 401 names its scheme");
        }
    }
    assert!(ingest.queue.is_empty(), "nothing rejected reaches the queue");
}

//! Ingest as `main` builds it (`LambdaIngest::from_env`) reads the Argo CD token only when a
//! signed refresh names its apps by selector: the webhook path never asks Secrets Manager for it
//! (the client's token is read on first use: `TokenSource::deferred`, whose own test shows it is
//! read once and a failed read is not kept).
//! Secrets Manager here refuses every read and records it (an SDK interceptor), so a read shows
//! and nothing waits on a network.

use std::sync::{Arc, Mutex};

use aws_sdk_secretsmanager::config::interceptors::BeforeSerializationInterceptorContextRef;
use aws_sdk_secretsmanager::config::{ConfigBag, Intercept};
use aws_sdk_secretsmanager::error::BoxError;
use aws_sdk_secretsmanager::operation::get_secret_value::GetSecretValueInput;
use chrono::Utc;
use medic_adapters::argocd::HttpArgoClient;
use medic_adapters::config::Settings;
use medic_adapters::lambda_env::LambdaEnv;
use medic_adapters::memory::MemoryQueue;
use medic_adapters::memory::SystemClock;
use medic_adapters::telemetry::Metrics;
use medic_ingest::{Ingest, LambdaIngest, SIGNATURE_HEADER, WebhookSecrets};

const ARGO_TOKEN_ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:argocd-token-AbCdEf";
const WEBHOOK_SECRET: &str = "lazy-argo-test-webhook-secret";
const REFRESH_SECRET: &str = "lazy-argo-test-refresh-secret";

/// Records the secret id of every `GetSecretValue` and refuses it.
#[derive(Debug, Clone, Default)]
struct RefusingSecrets(Arc<Mutex<Vec<String>>>);

impl RefusingSecrets {
    fn reads(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl Intercept for RefusingSecrets {
    fn name(&self) -> &'static str {
        "RefusingSecrets"
    }

    fn read_before_execution(&self, context: &BeforeSerializationInterceptorContextRef<'_>, _: &mut ConfigBag) -> Result<(), BoxError> {
        if let Some(input) = context.input().downcast_ref::<GetSecretValueInput>() {
            self.0.lock().unwrap().push(input.secret_id().unwrap_or_default().to_owned());
            return Err("this test's Secrets Manager refuses every read".into());
        }
        Ok(())
    }
}

fn settings(name: &str) -> Option<String> {
    let value = match name {
        "MEDIC_INSTANCE_ID" => "lazy",
        "QUEUE_URL" => "http://127.0.0.1:1/000000000000/work",
        "TABLE_NAME" => "state",
        // Nothing listens there: a call that got past the interceptor would fail too.
        "AWS_ENDPOINT_URL" => "http://127.0.0.1:1",
        "ARGOCD_SERVER" => "http://127.0.0.1:1",
        "ARGOCD_AUTH_TOKEN_SECRET_ARN" => ARGO_TOKEN_ARN,
        "MEDIC_WEBHOOK_SECRET" => WEBHOOK_SECRET,
        "MEDIC_REFRESH_SECRET" => REFRESH_SECRET,
        "MEDIC_WORK_ITEM_KEY" => "lazy-argo-test-work-item-key-long-enough",
        _ => return None,
    };
    Some(value.to_owned())
}

/// Ingest from `from_env`, on an in-memory queue.
async fn ingest(secrets: &RefusingSecrets) -> Ingest<MemoryQueue, HttpArgoClient, SystemClock, Metrics> {
    let env = LambdaEnv::from_settings(Settings::from_fn(settings)).await.unwrap().with_interceptor(secrets.clone());
    let built = LambdaIngest::from_env(&env).await.expect("ingest starts without reading the Argo CD token");
    // The function's own intake, its queue in memory instead of SQS.
    built.map_intake(|lambda| lambda.with_queue(MemoryQueue::default()))
}

fn request(path: &str, body: String, headers: &[(&str, String)]) -> lambda_http::Request {
    let mut builder = lambda_http::http::Request::builder()
        .method("POST")
        .uri(format!("https://ingest.lambda-url.us-east-1.on.aws{path}"))
        .header("content-type", "application/json");
    for (name, value) in headers {
        builder = builder.header(*name, value);
    }
    builder.body(lambda_http::Body::from(body)).unwrap()
}

fn events_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test"))
        .join("../../events")
}

fn signed_refresh(target: serde_json::Value) -> lambda_http::Request {
    let mut body = serde_json::json!({"requestedAt": Utc::now().to_rfc3339(), "requestedBy": "alice@example.com"});
    body.as_object_mut().unwrap().extend(target.as_object().unwrap().clone());
    let body = body.to_string();
    let signature = WebhookSecrets::new(REFRESH_SECRET, None).sign(body.as_bytes());
    request("/v1/refresh", body, &[(SIGNATURE_HEADER, signature)])
}

#[tokio::test]
async fn the_webhook_path_never_reads_the_argo_cd_token_a_refresh_by_selector_reads_it_when_it_needs_it() {
    let secrets = RefusingSecrets::default();
    let ingest = ingest(&secrets).await;
    assert!(secrets.reads().is_empty(), "start-up read {:?}", secrets.reads());

    let body = std::fs::read_to_string(events_dir().join("webhook/stale-progressing.json")).unwrap();
    let response = ingest.handle(request("/v1/events", body, &[("authorization", format!("Bearer {WEBHOOK_SECRET}"))])).await;
    assert_eq!(response.status(), 202, "{:?}", response.body());
    assert_eq!(ingest.queue.take_ready(10).len(), 1);
    // A refresh naming its apps does not call Argo CD either.
    let by_name = ingest.handle(signed_refresh(serde_json::json!({"apps": [{"name": "pricing", "namespace": "argocd"}]}))).await;
    assert_eq!(by_name.status(), 202, "{:?}", by_name.body());
    assert_eq!(ingest.queue.take_ready(10).len(), 1);
    assert!(secrets.reads().is_empty(), "the webhook and by-name paths read {:?}", secrets.reads());
    assert!(!ingest.argo.token_source().is_ready());

    // A refresh by selector lists apps: now the token is read. Its secret cannot be read here, so
    // the caller is told to retry (503), and the next request tries again.
    for attempt in 1..=2 {
        let by_selector = ingest.handle(signed_refresh(serde_json::json!({"selector": "team=payments"}))).await;
        assert_eq!(by_selector.status(), 503, "{:?}", by_selector.body());
        let answer: serde_json::Value = serde_json::from_slice(by_selector.body().as_ref()).unwrap();
        assert_eq!(answer["reason"], "argo_list_failed");
        assert_eq!(secrets.reads(), vec![ARGO_TOKEN_ARN.to_owned(); attempt], "one read per attempt, of the Argo CD token only");
    }
    assert!(!ingest.argo.token_source().is_ready(), "a failed read is not kept");
    assert!(ingest.queue.is_empty());
}

#[tokio::test]
async fn a_deployment_without_an_argo_cd_server_still_fails_at_start() {
    fn no_server(name: &str) -> Option<String> {
        if name == "ARGOCD_SERVER" { None } else { settings(name) }
    }
    let env = LambdaEnv::from_settings(Settings::from_fn(no_server)).await.unwrap();
    let err = LambdaIngest::from_env(&env).await.err().map(|e| e.to_string());
    assert_eq!(err.as_deref(), Some("environment variable `ARGOCD_SERVER` is required"));
}

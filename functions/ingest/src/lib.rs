//! The ingest function: the front door for argocd-notifications webhooks and signed refresh
//! requests. It authenticates the caller, caps and validates the body, normalises it into a work
//! item and answers 202 only once the item is on the queue. Nothing it rejects reaches the queue,
//! and every rejection is counted (`WebhookRejected` by `Reason`), because argocd-notifications
//! never resends a notification we refuse.
//!
//! Routes:
//! - `POST /v1/events`: a notification (schema v1). `Authorization: Bearer <shared secret>`.
//! - `POST /v1/refresh`: "refresh these apps", by name or label selector, capped, like Flux's
//!   receivers. Signed: `X-Argo-Medic-Signature: sha256=<hex HMAC-SHA256 of the body>` with the
//!   refresh secret, and `requestedAt` no older than five minutes. The refresh secret is not the
//!   webhook secret: that one sits in `argocd-notifications-secret`, readable by whoever can read
//!   the notifications controller's secrets, who must not thereby be able to order refreshes.
//!   Without a refresh secret the route answers 404.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use chrono::{DateTime, Utc};
use lambda_http::http::{Method, StatusCode, header};
use lambda_http::{Body, Request, Response};
use medic_adapters::telemetry::Metrics;
use medic_core::Trigger;
use medic_core::app::{Application, ApplicationSyncRequest};
use medic_core::event::{AppRef, EventError, NotificationEvent, WorkItem, WorkKind};
use medic_core::ports::{ArgoApi, ArgoError, ListQuery, Permit, RefreshKind, WorkQueue};
use medic_core::sweep::LIST_FIELDS;
use serde::Deserialize;
use serde_json::json;

/// The header carrying a signed request's HMAC.
pub const SIGNATURE_HEADER: &str = "x-argo-medic-signature";

pub use medic_adapters::edge::SecretFormatError;
use medic_adapters::edge::{self, Rejection, RotatingSecret};

/// The shared secret, and the previous one while a rotation is under way.
pub struct WebhookSecrets(RotatingSecret);

impl WebhookSecrets {
    pub fn new(current: impl Into<String>, previous: Option<String>) -> Self {
        Self(RotatingSecret::new(current, previous))
    }

    /// Reads the Secrets Manager value: the secret, or `{"current": "...", "previous": "..."}`.
    pub fn from_json(text: &str) -> Result<Self, SecretFormatError> {
        RotatingSecret::parse(text, "the webhook secret").map(Self)
    }

    /// True when `presented` equals one of the secrets (constant time, every secret checked).
    pub fn matches(&self, presented: &[u8]) -> bool {
        self.0.matches(presented)
    }

    /// True when `signature_hex` is the HMAC-SHA256 of `body` under one of the secrets.
    pub fn verify_hmac(&self, body: &[u8], signature_hex: &str) -> bool {
        hex::decode(signature_hex.trim()).is_ok_and(|tag| self.0.verifies(&[body], &tag))
    }

    /// The signature header value a client sends for `body` (used by tests and the docs).
    pub fn sign(&self, body: &[u8]) -> String {
        format!("sha256={}", self.0.sign_hex(&[body]))
    }
}

/// Limits.
#[derive(Debug, Clone)]
pub struct IngestConfig {
    /// Largest body accepted.
    pub max_body_bytes: usize,
    /// Most apps one refresh request may touch.
    pub max_refresh_apps: usize,
    /// How old a signed request may be.
    pub signature_max_age: Duration,
    /// Signs the work items of refreshes people request, so the worker knows they passed here.
    pub work_item_key: Option<medic_core::event::WorkItemKey>,
}

impl Default for IngestConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: medic_core::event::MAX_EVENT_BYTES,
            max_refresh_apps: 50,
            signature_max_age: Duration::from_secs(300),
            work_item_key: None,
        }
    }
}

/// The function's collaborators, built once at start-up.
pub struct Ingest<Q, A> {
    pub config: IngestConfig,
    /// Bearer tokens of `POST /v1/events`.
    pub secrets: WebhookSecrets,
    /// HMAC keys of `POST /v1/refresh`; `None` turns the route off.
    pub refresh_secrets: Option<WebhookSecrets>,
    pub queue: Q,
    pub argo: A,
    pub metrics: Metrics,
}

/// Ingest as the Lambda runs it, built from the environment.
pub type LambdaIngest = Ingest<medic_adapters::sqs::SqsWorkQueue, LazyArgo<medic_adapters::argocd::HttpArgoClient>>;

/// Builds an Argo CD client; its error is the reason, for the caller's answer.
type BuildArgo<A> = Box<dyn Fn() -> Pin<Box<dyn Future<Output = Result<A, String>> + Send>> + Send + Sync>;

/// An Argo CD client made on first use. Only a signed refresh that names its apps by selector
/// calls Argo CD, so the webhook path, almost every invocation, neither reads the Argo CD token
/// (a Secrets Manager round trip of the cold start) nor builds the client. A failed build is not
/// kept: the next call tries again, and this one fails as unavailable (503, the caller retries).
pub struct LazyArgo<A> {
    client: tokio::sync::OnceCell<A>,
    build: BuildArgo<A>,
}

impl<A> LazyArgo<A> {
    pub fn new<F, Fut>(build: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<A, String>> + Send + 'static,
    {
        Self { client: tokio::sync::OnceCell::new(), build: Box::new(move || Box::pin(build())) }
    }

    /// True once the client has been built.
    pub fn is_built(&self) -> bool {
        self.client.initialized()
    }

    async fn client(&self) -> Result<&A, ArgoError> {
        self.client
            .get_or_try_init(|| (self.build)())
            .await
            .map_err(|e| ArgoError::Transient(format!("the Argo CD client could not be made: {e}")))
    }
}

impl<A: ArgoApi> ArgoApi for LazyArgo<A> {
    async fn get_app(&self, app: &AppRef) -> Result<Application, ArgoError> {
        self.client().await?.get_app(app).await
    }
    async fn list_apps(&self, query: &ListQuery) -> Result<Vec<Application>, ArgoError> {
        self.client().await?.list_apps(query).await
    }
    async fn refresh(&self, permit: &Permit, app: &AppRef, kind: RefreshKind) -> Result<Application, ArgoError> {
        self.client().await?.refresh(permit, app, kind).await
    }
    async fn sync(&self, permit: &Permit, app: &AppRef, request: &ApplicationSyncRequest) -> Result<Application, ArgoError> {
        self.client().await?.sync(permit, app, request).await
    }
    async fn terminate_operation(&self, permit: &Permit, app: &AppRef) -> Result<(), ArgoError> {
        self.client().await?.terminate_operation(permit, app).await
    }
    async fn credential_expiry(&self) -> Result<Option<chrono::DateTime<chrono::Utc>>, String> {
        self.client().await.map_err(|e| e.to_string())?.credential_expiry().await
    }
}

/// Why ingest could not start.
#[derive(Debug, thiserror::Error)]
pub enum IngestInitError {
    #[error(transparent)]
    Env(#[from] medic_adapters::lambda_env::EnvError),
    #[error(transparent)]
    Secret(#[from] SecretFormatError),
}

impl LambdaIngest {
    /// Builds ingest from the function's settings (what `main` runs; tests build it the same way).
    pub async fn from_env(env: &medic_adapters::lambda_env::LambdaEnv) -> Result<Self, IngestInitError> {
        // The secrets at once: each is a Secrets Manager round trip of the cold start. Not the
        // Argo CD token: only a refresh by selector needs it, and reads it then (`LazyArgo`);
        // its server is required now, so a deployment without one still fails at start.
        if env.argocd()?.server.is_empty() {
            return Err(medic_adapters::lambda_env::EnvError::Missing(medic_adapters::settings::ARGOCD_SERVER.name).into());
        }
        let (work_item_key, webhook_secret, refresh_secret) =
            tokio::try_join!(env.work_item_key(), env.webhook_secret(), env.refresh_secret())?;
        let argo_env = env.clone();
        let argo = LazyArgo::new(move || {
            let env = argo_env.clone();
            async move { env.argo_client().await.map_err(|e| e.to_string()) }
        });
        Ok(Ingest {
            config: IngestConfig { max_body_bytes: env.max_body_bytes()?, work_item_key: Some(work_item_key), ..IngestConfig::default() },
            secrets: WebhookSecrets::from_json(&webhook_secret)?,
            refresh_secrets: refresh_secret.map(|s| WebhookSecrets::from_json(&s)).transpose()?,
            queue: env.queue(),
            argo,
            metrics: Metrics::new(&env.instance_id),
        })
    }
}

fn reject(status: StatusCode, reason: &'static str, message: impl Into<String>) -> Rejection {
    Rejection::new(status, reason, message)
}

fn respond(status: StatusCode, body: serde_json::Value) -> Response<Body> {
    edge::json_response(status, &body).map(Body::from)
}

/// A signed "refresh these apps" request.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RefreshRequest {
    #[serde(default)]
    apps: Vec<AppRef>,
    #[serde(default)]
    selector: Option<String>,
    #[serde(default)]
    projects: Vec<String>,
    #[serde(default)]
    hard: bool,
    requested_at: DateTime<Utc>,
    requested_by: String,
}

impl<Q: WorkQueue, A: ArgoApi> Ingest<Q, A> {
    /// Handles one HTTP request.
    pub async fn handle(&self, req: Request) -> Response<Body> {
        let path = req.uri().path().trim_end_matches('/').to_owned();
        let result = match (req.method(), path.as_str()) {
            (&Method::POST, "/v1/events") => self.event(&req).await,
            (&Method::POST, "/v1/refresh") => self.refresh(&req).await,
            (_, "/v1/events" | "/v1/refresh") => Err(reject(StatusCode::METHOD_NOT_ALLOWED, "method", "use POST")),
            _ => Err(reject(StatusCode::NOT_FOUND, "path", format!("no such endpoint `{path}`; use POST /v1/events or /v1/refresh"))),
        };
        match result {
            Ok(response) => response,
            Err(r) => {
                self.metrics.count("WebhookRejected", Some(("Reason", r.reason)), 1.0);
                tracing::warn!(status = r.status.as_u16(), reason = r.reason, message = %r.message, path = %path, "request rejected");
                r.response(Some("Bearer")).map(Body::from)
            }
        }
    }

    /// Content type and size checks shared by both routes.
    fn body<'r>(&self, req: &'r Request) -> Result<&'r [u8], Rejection> {
        edge::checked_body(req.headers(), req.body().as_ref(), "application/json", self.config.max_body_bytes)
    }

    async fn event(&self, req: &Request) -> Result<Response<Body>, Rejection> {
        let auth = req.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes());
        let Some(token) = auth.and_then(edge::bearer_token) else {
            return Err(reject(StatusCode::UNAUTHORIZED, "unauthenticated", "missing `Authorization: Bearer <secret>`"));
        };
        if !self.secrets.matches(token) {
            return Err(reject(StatusCode::FORBIDDEN, "forbidden", "the bearer secret does not match"));
        }
        let body = self.body(req)?;
        let event = NotificationEvent::parse(body).map_err(|e| match e {
            EventError::TooLarge(_) => reject(StatusCode::PAYLOAD_TOO_LARGE, "oversized", e.to_string()),
            EventError::UnsupportedVersion(_) => reject(StatusCode::BAD_REQUEST, "unsupported_version", e.to_string()),
            _ => reject(StatusCode::BAD_REQUEST, "malformed", e.to_string()),
        })?;
        if !event.trigger.is_notification() {
            // Accepted, it was a notification the worker reads like a sweep's look: a template
            // out of step with this release would go unnoticed (newcomer review, row 30).
            return Err(reject(
                StatusCode::BAD_REQUEST,
                "unknown_trigger",
                format!("unknown trigger `{}`; Argo Medic's templates send one of {}", event.trigger, Trigger::NOTIFICATIONS.join(", ")),
            ));
        }
        let item = event.into_work(Utc::now());
        self.queue.enqueue(&item, Duration::ZERO).await.map_err(|e| {
            tracing::error!(error = %e, "enqueue failed");
            // 503 makes argocd-notifications retry (it retries 5xx, not 4xx).
            reject(StatusCode::SERVICE_UNAVAILABLE, "enqueue_failed", "the work queue is unavailable; retry later")
        })?;
        self.metrics.count_with("WebhookAccepted", &[("Trigger", item.trigger.as_str())], 1.0);
        tracing::info!(app = %item.app.id(), trigger = %item.trigger, dedupe_key = %item.dedupe_key, "notification enqueued");
        Ok(respond(StatusCode::ACCEPTED, json!({"accepted": true, "dedupeKey": item.dedupe_key})))
    }

    async fn refresh(&self, req: &Request) -> Result<Response<Body>, Rejection> {
        let Some(secrets) = &self.refresh_secrets else {
            return Err(reject(
                StatusCode::NOT_FOUND,
                "path",
                "signed refreshes are off: this deployment has no refresh secret (RefreshSecretArn)",
            ));
        };
        let body = self.body(req)?;
        let Some(signature) = req.headers().get(SIGNATURE_HEADER).and_then(|v| v.to_str().ok()) else {
            return Err(reject(StatusCode::UNAUTHORIZED, "unauthenticated", format!("missing `{SIGNATURE_HEADER}: sha256=<hmac>`")));
        };
        let hex = signature.strip_prefix("sha256=").unwrap_or("");
        if !secrets.verify_hmac(body, hex) {
            return Err(reject(StatusCode::FORBIDDEN, "forbidden", "the signature does not match the body"));
        }
        let request: RefreshRequest = serde_json::from_slice(body)
            .map_err(|e| reject(StatusCode::BAD_REQUEST, "malformed", format!("invalid refresh request: {e}")))?;
        let now = Utc::now();
        let age = now.signed_duration_since(request.requested_at);
        let max_age = chrono::Duration::from_std(self.config.signature_max_age).unwrap_or_default();
        if age > max_age || age < -chrono::Duration::minutes(1) {
            return Err(reject(
                StatusCode::FORBIDDEN,
                "stale",
                format!("requestedAt {} is outside the {} s window", request.requested_at, self.config.signature_max_age.as_secs()),
            ));
        }
        if request.requested_by.trim().is_empty() || request.requested_by.len() > 128 {
            return Err(reject(StatusCode::BAD_REQUEST, "malformed", "`requestedBy` must name the caller (1-128 characters)"));
        }
        let apps = self.resolve(&request).await?;
        let action = WorkItem::refresh_request(if request.hard { RefreshKind::Hard } else { RefreshKind::Normal });
        let window = request.requested_at.to_rfc3339();
        let trigger = Trigger::requested_refresh();
        for app in &apps {
            let mut item = WorkItem::for_app(WorkKind::Requested, app.clone(), trigger.clone(), &window, now);
            item.requested_action = Some(action.to_owned());
            item.requested_by = Some(request.requested_by.clone());
            if let Some(key) = &self.config.work_item_key {
                key.sign(&mut item);
            }
            self.queue.enqueue(&item, Duration::ZERO).await.map_err(|e| {
                tracing::error!(error = %e, "enqueue failed");
                reject(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "enqueue_failed",
                    "the work queue is unavailable; retry later (already queued apps are deduplicated)",
                )
            })?;
        }
        let names: Vec<String> = apps.iter().map(|a| a.id().to_string()).collect();
        tracing::info!(requested_by = %request.requested_by, action, apps = ?names, "refresh requested");
        Ok(respond(StatusCode::ACCEPTED, json!({"accepted": names.len(), "action": action, "apps": names})))
    }

    /// The apps a refresh request names, directly or by selector, within the cap.
    async fn resolve(&self, request: &RefreshRequest) -> Result<Vec<AppRef>, Rejection> {
        let max = self.config.max_refresh_apps;
        let by_name = !request.apps.is_empty();
        let by_selector = request.selector.as_deref().is_some_and(|s| !s.trim().is_empty()) || !request.projects.is_empty();
        let apps = match (by_name, by_selector) {
            (true, false) => request.apps.clone(),
            (false, true) => {
                let query = ListQuery {
                    projects: request.projects.clone(),
                    selector: request.selector.clone().unwrap_or_default(),
                    fields: LIST_FIELDS.iter().map(|f| f.to_string()).collect(),
                    ..ListQuery::default()
                };
                let listed = self.argo.list_apps(&query).await.map_err(|e| {
                    let status = if e.is_retryable() { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::BAD_REQUEST };
                    reject(status, "argo_list_failed", format!("listing apps: {e}"))
                })?;
                listed
                    .into_iter()
                    .map(|a| AppRef {
                        name: a.metadata.name,
                        namespace: a.metadata.namespace,
                        project: Some(a.spec.project).filter(|p| !p.is_empty()),
                    })
                    .collect()
            }
            _ => {
                return Err(reject(
                    StatusCode::BAD_REQUEST,
                    "malformed",
                    "name the apps with either `apps` or `selector`/`projects`, not both or neither",
                ));
            }
        };
        if apps.len() > max {
            return Err(reject(
                StatusCode::BAD_REQUEST,
                "too_many_apps",
                format!("the request touches {} apps; one call may touch at most {max}", apps.len()),
            ));
        }
        for app in &apps {
            app.validate().map_err(|e| reject(StatusCode::BAD_REQUEST, "malformed", e.to_string()))?;
        }
        Ok(apps)
    }
}

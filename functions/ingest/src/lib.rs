//! The ingest function: the front door for argocd-notifications webhooks and signed refresh
//! requests. It authenticates the caller and caps and checks the body; what it then accepts is
//! the application's ([`medic_service::intake`]), which answers only once the item is on the
//! queue. Nothing it rejects reaches the queue, and every rejection is counted
//! (`WebhookRejected` by `Reason`), because argocd-notifications never resends a notification we
//! refuse.
//!
//! Routes:
//! - `POST /v1/events`: a notification (schema v1). `Authorization: Bearer <shared secret>`.
//! - `POST /v1/refresh`: "refresh these apps", by name or label selector, capped, like Flux's
//!   receivers. Signed: `X-Argo-Medic-Signature: sha256=<hex HMAC-SHA256 of the body>` with the
//!   refresh secret, and `requestedAt` no older than five minutes. The refresh secret is not the
//!   webhook secret: that one sits in `argocd-notifications-secret`, readable by whoever can read
//!   the notifications controller's secrets, who must not thereby be able to order refreshes.
//!   Without a refresh secret the route answers 404.

use lambda_http::http::{Method, StatusCode, header};
use lambda_http::{Body, Request, Response};
use medic_adapters::edge::{self, Rejection};
pub use medic_adapters::edge::{SecretFormatError, WebhookSecrets};
use medic_core::ports::{ArgoApi, Clock, Telemetry, WorkQueue};
pub use medic_service::intake::{IngestConfig, Intake};
use medic_service::intake::{Refusal, Refused};
use serde_json::json;

/// The header carrying a signed request's HMAC.
pub const SIGNATURE_HEADER: &str = "x-argo-medic-signature";

/// The ingest function's handler: who may call, and what becomes of the answer. Its
/// collaborators are its intake's, built by a composition root (`medic_stack`); the handler adds
/// only the secrets callers present.
pub struct Ingest<Q, A, C, T> {
    /// Bearer tokens of `POST /v1/events`.
    secrets: WebhookSecrets,
    /// HMAC keys of `POST /v1/refresh`; `None` turns the route off.
    refresh_secrets: Option<WebhookSecrets>,
    intake: Intake<Q, A, C, T>,
}

impl<Q, A, C, T> Ingest<Q, A, C, T> {
    /// Ingest over `intake`, taking `secrets` as the bearer tokens of `POST /v1/events`. The
    /// refresh route stays off until [`Ingest::with_refresh_secrets`] gives it keys.
    pub fn new(intake: Intake<Q, A, C, T>, secrets: WebhookSecrets) -> Self {
        Self { secrets, refresh_secrets: None, intake }
    }

    /// The same ingest with `refresh` as the HMAC keys of `POST /v1/refresh` (`None`: no route).
    pub fn with_refresh_secrets(self, refresh: Option<WebhookSecrets>) -> Self {
        Self { refresh_secrets: refresh, ..self }
    }

    /// The same ingest and secrets over the intake `rewire` makes of this one's (one collaborator
    /// swapped: [`Intake::with_queue`], [`Intake::with_metrics`]).
    pub fn map_intake<Q2, A2, C2, T2>(self, rewire: impl FnOnce(Intake<Q, A, C, T>) -> Intake<Q2, A2, C2, T2>) -> Ingest<Q2, A2, C2, T2> {
        Ingest { secrets: self.secrets, refresh_secrets: self.refresh_secrets, intake: rewire(self.intake) }
    }
}

/// The handler is its intake plus who may call: its collaborators are the intake's.
impl<Q, A, C, T> std::ops::Deref for Ingest<Q, A, C, T> {
    type Target = Intake<Q, A, C, T>;
    fn deref(&self) -> &Intake<Q, A, C, T> {
        &self.intake
    }
}

/// Ingest as the Lambda runs it.
pub type LambdaIngest = Ingest<
    medic_adapters::sqs::SqsWorkQueue,
    medic_adapters::argocd::HttpArgoClient,
    medic_adapters::memory::SystemClock,
    medic_adapters::telemetry::Metrics,
>;

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
        // The secrets at once: each is a Secrets Manager round trip of the cold start.
        let (intake, webhook_secret, refresh_secret) =
            tokio::try_join!(medic_stack::lambda::intake(env), env.webhook_secret(), env.refresh_secret())?;
        let refresh = refresh_secret.map(|s| WebhookSecrets::from_json(&s)).transpose()?;
        Ok(Ingest::new(intake, WebhookSecrets::from_json(&webhook_secret)?).with_refresh_secrets(refresh))
    }
}

fn reject(status: StatusCode, reason: &'static str, message: impl Into<String>) -> Rejection {
    Rejection::new(status, reason, message)
}

/// The HTTP answer to a refusal of the application's, and the reason it is counted under.
fn rejection(r: Refusal) -> Rejection {
    let (status, reason) = match r.kind {
        Refused::TooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "oversized"),
        Refused::UnsupportedVersion => (StatusCode::BAD_REQUEST, "unsupported_version"),
        Refused::Malformed => (StatusCode::BAD_REQUEST, "malformed"),
        Refused::UnknownTrigger => (StatusCode::BAD_REQUEST, "unknown_trigger"),
        Refused::Stale => (StatusCode::FORBIDDEN, "stale"),
        Refused::TooManyApps => (StatusCode::BAD_REQUEST, "too_many_apps"),
        Refused::ArgoList { retryable: true } => (StatusCode::SERVICE_UNAVAILABLE, "argo_list_failed"),
        Refused::ArgoList { retryable: false } => (StatusCode::BAD_REQUEST, "argo_list_failed"),
        // 503 makes argocd-notifications retry (it retries 5xx, not 4xx).
        Refused::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "enqueue_failed"),
    };
    reject(status, reason, r.message)
}

fn respond(status: StatusCode, body: serde_json::Value) -> Response<Body> {
    edge::json_response(status, &body).map(Body::from)
}

impl<Q: WorkQueue, A: ArgoApi, C: Clock, T: Telemetry> Ingest<Q, A, C, T> {
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
                self.intake.metrics.count("WebhookRejected", Some(("Reason", r.reason)), 1.0);
                tracing::warn!(status = r.status.as_u16(), reason = r.reason, message = %r.message, path = %path, "request rejected");
                r.response(Some("Bearer")).map(Body::from)
            }
        }
    }

    /// Content type and size checks shared by both routes.
    fn body<'r>(&self, req: &'r Request) -> Result<&'r [u8], Rejection> {
        edge::checked_body(req.headers(), req.body().as_ref(), "application/json", self.intake.config.max_body_bytes)
    }

    async fn event(&self, req: &Request) -> Result<Response<Body>, Rejection> {
        let auth = req.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes());
        let Some(token) = auth.and_then(edge::bearer_token) else {
            return Err(reject(StatusCode::UNAUTHORIZED, "unauthenticated", "missing `Authorization: Bearer <secret>`"));
        };
        if !self.secrets.matches(token) {
            return Err(reject(StatusCode::FORBIDDEN, "forbidden", "the bearer secret does not match"));
        }
        let dedupe_key = self.intake.notification(self.body(req)?).await.map_err(rejection)?;
        Ok(respond(StatusCode::ACCEPTED, json!({"accepted": true, "dedupeKey": dedupe_key})))
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
        let accepted = self.intake.refresh(body).await.map_err(rejection)?;
        Ok(respond(StatusCode::ACCEPTED, json!({"accepted": accepted.apps.len(), "action": accepted.action, "apps": accepted.apps})))
    }
}

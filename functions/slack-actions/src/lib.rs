//! The slack-actions function: Slack's interactivity Request URL (a Function URL). It checks the
//! request's method, media type and size; what the click then means (the signature, its freshness
//! and replay, the button, the allow-list, one work item per button) is
//! [`medic_slack::interaction`]'s. Every refusal gets its status and a JSON `{"error", "reason"}` and
//! is counted (`SlackActionRejected` by `Reason`); Slack shows the clicker that the action failed.

use lambda_http::http::{Method, StatusCode};
use lambda_http::{Body, Request, Response};
use medic_adapters::edge::{self, Rejection};
use medic_adapters::memory::SystemClock;
use medic_adapters::telemetry::Metrics;
use medic_core::ports::{Clock, DedupeStore, EscalationStore, WorkQueue};
use medic_slack::interaction::Interaction;
pub use medic_slack::interaction::{
    ActionsConfig, AllowList, AllowListError, SIGNATURE_HEADER, SecretFormatError, SigningSecret, TIMESTAMP_HEADER, work_item,
};

/// The function's collaborators, built once at start-up.
pub struct SlackActions<Q, D, S, C = SystemClock> {
    pub config: ActionsConfig,
    pub secret: SigningSecret,
    pub allow: AllowList,
    pub queue: Q,
    /// Replays and claims (conditional writes with expiry).
    pub dedupe: D,
    /// Where the buttons' actions are stored.
    pub actions: S,
    /// What "now" is for a request's freshness and its work item.
    pub clock: C,
    pub metrics: Metrics,
}

/// slack-actions as the Lambda runs it, built from the environment.
pub type LambdaSlackActions =
    SlackActions<medic_adapters::sqs::SqsWorkQueue, medic_adapters::dynamodb::DynamoDbStore, medic_slack::DynamoDbEscalationStore>;

/// Why slack-actions could not start.
#[derive(Debug, thiserror::Error)]
pub enum ActionsInitError {
    #[error(transparent)]
    Env(#[from] medic_adapters::lambda_env::EnvError),
    #[error(transparent)]
    Secret(#[from] SecretFormatError),
    #[error(transparent)]
    AllowList(#[from] AllowListError),
}

impl LambdaSlackActions {
    /// Builds slack-actions from the function's settings (what `main` runs; tests build it the same way).
    pub async fn from_env(env: &medic_adapters::lambda_env::LambdaEnv) -> Result<Self, ActionsInitError> {
        // The secrets at once: each is a Secrets Manager round trip of the cold start.
        let (work_item_key, signing_secret) = tokio::try_join!(env.work_item_key(), env.slack_signing_secret())?;
        Ok(SlackActions {
            config: ActionsConfig { work_item_key: Some(work_item_key), ..ActionsConfig::default() },
            secret: SigningSecret::from_secret(&signing_secret)?,
            allow: AllowList::from_json(&env.slack_allowed_users())?,
            queue: env.queue(),
            dedupe: env.store()?,
            actions: medic_stack::lambda::escalation_store(env)?,
            clock: SystemClock,
            metrics: Metrics::new(&env.instance_id),
        })
    }
}

impl<Q: WorkQueue, D: DedupeStore, S: EscalationStore, C: Clock> SlackActions<Q, D, S, C> {
    /// Handles one HTTP request.
    pub async fn handle(&self, req: Request) -> Response<Body> {
        match self.accept(&req).await {
            Ok(answer) => edge::json_response(StatusCode::OK, &answer).map(Body::from),
            Err(r) => {
                self.metrics.count("SlackActionRejected", Some(("Reason", r.reason)), 1.0);
                tracing::warn!(status = r.status.as_u16(), reason = r.reason, message = %r.message, "Slack action rejected");
                r.response(None).map(Body::from)
            }
        }
    }

    async fn accept(&self, req: &Request) -> Result<serde_json::Value, Rejection> {
        if req.method() != Method::POST {
            return Err(Rejection::new(StatusCode::METHOD_NOT_ALLOWED, "method", "use POST"));
        }
        let body = edge::checked_body(req.headers(), req.body().as_ref(), "application/x-www-form-urlencoded", self.config.max_body_bytes)?;
        let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).map(str::trim);
        let interaction = Interaction {
            config: &self.config,
            secret: &self.secret,
            allow: &self.allow,
            queue: &self.queue,
            dedupe: &self.dedupe,
            actions: &self.actions,
            clock: &self.clock,
            metrics: &self.metrics,
        };
        interaction.accept(header(TIMESTAMP_HEADER), header(SIGNATURE_HEADER), body).await
    }
}

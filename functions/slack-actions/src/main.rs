//! Lambda entry point: wiring only.

use std::sync::Arc;

use lambda_http::{Error, run, service_fn};
use medic_adapters::lambda_env::LambdaEnv;
use medic_adapters::telemetry::Metrics;
use medic_slack_actions::{ActionsConfig, AllowList, SigningSecret, SlackActions};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::tracing::init_default_subscriber();
    let env = LambdaEnv::load().await?;
    let actions = Arc::new(SlackActions {
        config: ActionsConfig::default(),
        secret: SigningSecret::from_secret(&env.slack_signing_secret().await?)?,
        // An empty allow-list refuses every click: acting is opt-in per project.
        allow: AllowList::from_json(env.slack_allowed_users.as_deref().unwrap_or("{}"))?,
        queue: env.queue(),
        dedupe: env.store(),
        actions: env.escalation_store(),
        metrics: Metrics::new(&env.instance_id),
    });
    run(service_fn(move |req| {
        let actions = Arc::clone(&actions);
        async move { Ok::<_, Error>(actions.handle(req).await) }
    }))
    .await
}

//! Lambda entry point: wiring only.

use std::sync::Arc;

use lambda_http::{Error, run, service_fn};
use medic_adapters::lambda_env::LambdaEnv;
use medic_ingest::{Ingest, IngestConfig};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::tracing::init_default_subscriber();
    let env = LambdaEnv::load().await?;
    let ingest = Arc::new(Ingest {
        config: IngestConfig { max_body_bytes: env.max_body_bytes, ..IngestConfig::default() },
        secrets: medic_ingest::WebhookSecrets::from_json(&env.webhook_secret().await?)?,
        queue: env.queue(),
        argo: env.argo_client().await?,
        metrics: medic_adapters::telemetry::Metrics::new(&env.instance_id),
    });
    run(service_fn(move |req| {
        let ingest = Arc::clone(&ingest);
        async move { Ok::<_, Error>(ingest.handle(req).await) }
    }))
    .await
}

//! Lambda entry point: wiring only. The scheduled event's payload is not needed, so any JSON is
//! accepted (EventBridge rules and EventBridge Scheduler send different shapes).

use std::sync::Arc;
use std::time::Duration;

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use medic_adapters::lambda_env::LambdaEnv;
use medic_adapters::memory::SystemClock;
use medic_adapters::telemetry::Metrics;
use medic_sweeper::{Sweeper, SweeperConfig};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let env = LambdaEnv::load().await?;
    let sweeper = Arc::new(Sweeper {
        config: SweeperConfig {
            projects: env.policy.projects.clone(),
            selector: env.policy.selector.clone(),
            recheck_interval: Duration::from_secs(env.recheck_secs),
            ..SweeperConfig::default()
        },
        argo: env.argo_client().await?,
        store: env.store(),
        dedupe: env.store(),
        queue: env.queue(),
        escalator: env.escalator().await?,
        clock: SystemClock,
        metrics: Metrics::new(&env.instance_id),
    });
    run(service_fn(move |_: LambdaEvent<serde_json::Value>| {
        let sweeper = Arc::clone(&sweeper);
        async move { sweeper.run().await.map_err(Error::from) }
    }))
    .await
}

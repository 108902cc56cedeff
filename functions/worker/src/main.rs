//! Lambda entry point: wiring only.

use std::sync::Arc;

use aws_lambda_events::event::sqs::SqsEvent;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use medic_adapters::lambda_env::LambdaEnv;
use medic_adapters::memory::SystemClock;
use medic_adapters::telemetry::Metrics;
use medic_core::DecisionPolicy;
use medic_worker::{Worker, WorkerConfig};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let env = LambdaEnv::load().await?;
    let argo = env.argo_client().await?;
    // Rules that differ between Argo CD versions read it from the policy; when the call fails the
    // version stays unknown and those rules assume the oldest behaviour.
    let mut policy = env.policy.clone();
    if policy.argocd_version.is_none() {
        policy.argocd_version = argo.version().await.ok().map(|v| v.version).filter(|v| !v.is_empty());
    }
    let worker = Arc::new(Worker {
        config: WorkerConfig { dry_run: env.dry_run, kill_switch: env.kill_switch, ..WorkerConfig::default() },
        argo,
        store: env.store(),
        dedupe: env.store(),
        lock: env.store(),
        queue: env.queue(),
        escalator: env.escalator().await?,
        budget: env.worker_budget(),
        clock: SystemClock,
        policy: DecisionPolicy::new(policy),
        metrics: Metrics::new(&env.instance_id),
    });
    run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let worker = Arc::clone(&worker);
        async move { worker.handle_batch(event.payload).await.map_err(Error::from) }
    }))
    .await
}

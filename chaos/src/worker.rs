//! The worker process: the Lambda worker exactly as `medic_stack::lambda` builds it from its
//! environment, with failpoints around its ports, fed SQS batches on stdin by the harness's event
//! source (one JSON line per invocation) and answering each with its `SqsBatchResponse` on stdout.
//! Logs go to stderr, where the harness also reads the failpoints' `CHAOS-PAUSED` lines.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use medic_adapters::lambda_env::LambdaEnv;
use medic_adapters::telemetry::Metrics;
use medic_worker::Worker;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::failpoints::{self, Failpoint};

/// One invocation, as the harness sends it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Invocation {
    /// The boundary armed for this batch (the process stops there and is killed).
    pub arm: Option<String>,
    pub event: SqsEvent,
}

/// The time scale of the run, for the worker's own waits that no setting reaches.
pub const SCALE_VAR: &str = "MEDIC_CHAOS_SCALE";

/// The worker's waits that `medic_stack::lambda::worker_parts` takes from code, not from settings, divided
/// by the run's scale like every other timing: the retry after "another worker is acting on this
/// app" (30 s), how long a handled item is remembered (1 h) and a snooze (4 h).
fn scaled(mut config: medic_worker::WorkerConfig, scale: u32) -> medic_worker::WorkerConfig {
    let s = |d: std::time::Duration| (d / scale.max(1)).max(std::time::Duration::from_secs(1));
    config.busy_delay = s(config.busy_delay);
    config.dedupe_ttl = s(config.dedupe_ttl).max(config.dedupe_lease);
    config.snooze = s(config.snooze);
    config
}

/// The line a worker prints once it is initialised (Lambda's first `/next`).
pub const READY: &str = "CHAOS-READY";

pub async fn run() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("MEDIC_CHAOS_LOG").unwrap_or_else(|_| "error".into()))
        .init();
    let env = LambdaEnv::load(medic_adapters::settings::Reader::Worker).await?;
    let (adapters, config, policy) = medic_stack::lambda::worker_parts(&env).await?;
    let scale = std::env::var(SCALE_VAR).ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let escalator = medic_stack::lambda::escalator_with(&env, Failpoint(medic_stack::lambda::escalation_store(&env)?)).await?;
    let worker = Worker::from(
        adapters
            .map_argo(Failpoint)
            .map_store(Failpoint)
            .map_dedupe(Failpoint)
            .with_escalator(escalator)
            // EMF lines go to stdout on Lambda; here stdout is the invocation channel.
            .with_metrics(Metrics::quiet(&env.instance_id))
            .work(scaled(config, scale), policy),
    );
    let mut out = tokio::io::stdout();
    out.write_all(format!("{READY}\n").as_bytes()).await?;
    out.flush().await?;
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines.next_line().await? {
        let invocation: Invocation = serde_json::from_str(&line)?;
        failpoints::arm(invocation.arm);
        let ids: Vec<String> = invocation.event.records.iter().filter_map(|r| r.message_id.clone()).collect();
        let response = worker.handle_batch(invocation.event).await.unwrap_or_else(|_| {
            // The whole invocation failed: every message is retried, as Lambda does.
            let mut all = SqsBatchResponse::default();
            for id in ids {
                all.add_failure(id);
            }
            all
        });
        failpoints::arm(None);
        out.write_all(format!("{}\n", serde_json::to_string(&response)?).as_bytes()).await?;
        out.flush().await?;
    }
    Ok(())
}

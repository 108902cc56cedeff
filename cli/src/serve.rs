//! `medic serve`: the serverless pipeline in one process. The same ingest, worker and sweeper
//! handlers as on Lambda, on the embedded adapters of the same ports: an in-memory queue (with
//! delays, redelivery and a dead-letter list standing in for SQS), in-memory dedupe and locks,
//! and the SQLite incident store; against a real Argo CD or the simulator.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use medic_adapters::argocd::HttpArgoClient;
use medic_adapters::budget::{BudgetRates, LocalBudget};
use medic_adapters::memory::{MemoryDedupe, MemoryLock, MemoryQueue, SystemClock};
use medic_adapters::slack::{AnyEscalator, MemoryEscalationStore};
use medic_adapters::telemetry::Metrics;
use medic_core::event::WorkItem;
use medic_core::ports::WorkQueue;
use medic_core::{DecisionPolicy, PolicyConfig};
use medic_ingest::{Ingest, IngestConfig, WebhookSecrets};
use medic_sweeper::{Sweeper, SweeperConfig};
use medic_worker::{Worker, WorkerConfig};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::store::SqliteIncidentStore;

/// How many times a message is delivered before it is dead-lettered, as `maxReceiveCount`.
const MAX_RECEIVES: u32 = 5;
/// How long a failed message stays invisible before redelivery, as the visibility timeout.
const REDELIVER_AFTER: Duration = Duration::from_secs(5);

pub struct ServeOptions {
    pub listen: SocketAddr,
    pub webhook_secret: String,
    pub sweep_every: Duration,
    pub dry_run: bool,
    pub policy: PolicyConfig,
    pub rates: BudgetRates,
    pub store: SqliteIncidentStore,
    /// Slack (real or simulated) or the log.
    pub escalator: Arc<LocalEscalator>,
}

/// The escalator `medic serve` uses: Slack when configured, else log lines.
pub type LocalEscalator = AnyEscalator<MemoryEscalationStore>;

type LocalIngest = Ingest<Arc<MemoryQueue>, Arc<HttpArgoClient>>;
type LocalWorker = Worker<
    Arc<HttpArgoClient>,
    Arc<SqliteIncidentStore>,
    Arc<MemoryDedupe>,
    MemoryLock,
    Arc<MemoryQueue>,
    Arc<LocalEscalator>,
    LocalBudget,
    SystemClock,
>;

/// A running local pipeline.
pub struct Served {
    pub addr: SocketAddr,
    pub queue: Arc<MemoryQueue>,
    pub escalator: Arc<LocalEscalator>,
    pub dead_letters: Arc<std::sync::Mutex<Vec<WorkItem>>>,
    pub handled: Arc<AtomicUsize>,
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Served {
    /// Stops the server and the loops.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

/// Starts ingest (HTTP on `listen`), the worker loop and the sweeper loop.
pub async fn start(argo: HttpArgoClient, opts: ServeOptions) -> Result<Served> {
    let argo = Arc::new(argo);
    let queue = Arc::new(MemoryQueue::default());
    let dedupe = Arc::new(MemoryDedupe::default());
    let escalator = Arc::clone(&opts.escalator);
    let store = Arc::new(opts.store);
    let instance = opts.policy.instance_id.clone();
    // Requested items travel only through this process's in-memory queue, which nothing outside
    // it can write to; they are signed all the same, so the worker runs exactly as deployed.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    let work_item_key = medic_core::event::WorkItemKey::new(&format!("medic-serve-work-items-{}-{nanos}", std::process::id()));
    let ingest: Arc<LocalIngest> = Arc::new(Ingest {
        config: IngestConfig { work_item_key: work_item_key.clone(), ..IngestConfig::default() },
        secrets: WebhookSecrets::new(opts.webhook_secret.clone(), None),
        queue: Arc::clone(&queue),
        argo: Arc::clone(&argo),
        metrics: Metrics::quiet(&instance),
    });
    let worker: Arc<LocalWorker> = Arc::new(Worker {
        config: WorkerConfig { dry_run: opts.dry_run, work_item_key: work_item_key.clone(), ..WorkerConfig::default() },
        argo: Arc::clone(&argo),
        store: Arc::clone(&store),
        dedupe: Arc::clone(&dedupe),
        lock: MemoryLock::default(),
        queue: Arc::clone(&queue),
        escalator: Arc::clone(&escalator),
        budget: LocalBudget::new(opts.rates),
        clock: SystemClock,
        policy: DecisionPolicy::new(opts.policy.clone()),
        metrics: Metrics::quiet(&instance),
    });
    let sweeper = Arc::new(Sweeper {
        config: SweeperConfig {
            projects: opts.policy.projects.clone(),
            selector: opts.policy.selector.clone(),
            ..SweeperConfig::default()
        },
        argo: Arc::clone(&argo),
        store: Arc::clone(&store),
        dedupe: Arc::clone(&dedupe),
        queue: Arc::clone(&queue),
        escalator: Arc::clone(&escalator),
        clock: SystemClock,
        metrics: Metrics::quiet(&instance),
    });

    let listener = TcpListener::bind(opts.listen).await.with_context(|| format!("listening on {}", opts.listen))?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = watch::channel(false);
    let dead_letters = Arc::new(std::sync::Mutex::new(Vec::new()));
    let handled = Arc::new(AtomicUsize::new(0));
    let tasks = vec![
        tokio::spawn(http_loop(listener, ingest, stopped.clone())),
        tokio::spawn(worker_loop(worker, Arc::clone(&queue), Arc::clone(&dead_letters), Arc::clone(&handled), stopped.clone())),
        tokio::spawn(sweep_loop(sweeper, opts.sweep_every, stopped)),
    ];
    Ok(Served { addr, queue, escalator, dead_letters, handled, stop, tasks })
}

async fn http_loop(listener: TcpListener, ingest: Arc<LocalIngest>, mut stopped: watch::Receiver<bool>) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stopped.changed() => return,
        };
        let Ok((stream, _)) = accepted else { continue };
        let ingest = Arc::clone(&ingest);
        tokio::spawn(async move {
            let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let ingest = Arc::clone(&ingest);
                async move { Ok::<_, Infallible>(handle_http(&ingest, req).await) }
            });
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

/// Turns a plain HTTP request into what the Lambda handler takes, and back.
async fn handle_http(ingest: &LocalIngest, req: hyper::Request<hyper::body::Incoming>) -> hyper::Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let bytes = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return hyper::Response::builder()
                .status(400)
                .body(Full::new(Bytes::from_static(b"unreadable body")))
                .expect("static response");
        }
    };
    let request = lambda_http::http::Request::from_parts(parts, lambda_http::Body::from(bytes.to_vec()));
    let response = ingest.handle(request).await;
    let (parts, body) = response.into_parts();
    hyper::Response::from_parts(parts, Full::new(Bytes::copy_from_slice(body.as_ref())))
}

/// The event source mapping: batches of up to 10 ready items, failed ones redelivered after the
/// visibility timeout, dead-lettered after `MAX_RECEIVES`.
async fn worker_loop(
    worker: Arc<LocalWorker>,
    queue: Arc<MemoryQueue>,
    dead: Arc<std::sync::Mutex<Vec<WorkItem>>>,
    handled: Arc<AtomicUsize>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut receives: HashMap<String, u32> = HashMap::new();
    let mut next_id = 0u64;
    loop {
        let batch = queue.take_ready(10);
        if batch.is_empty() {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(100)) => continue,
                _ = stopped.changed() => return,
            }
        }
        let mut event = SqsEvent::default();
        let mut by_id = HashMap::new();
        for item in batch {
            next_id += 1;
            let id = format!("local-{next_id}");
            let count = receives.entry(item.dedupe_key.clone()).or_default();
            *count += 1;
            let mut record = SqsMessage::default();
            record.message_id = Some(id.clone());
            record.body = serde_json::to_string(&item).ok();
            record.attributes.insert("ApproximateReceiveCount".into(), count.to_string());
            event.records.push(record);
            by_id.insert(id, item);
        }
        let response = match worker.handle_batch(event).await {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(error = %e, "batch failed");
                continue;
            }
        };
        let failed: Vec<String> = response.batch_item_failures.into_iter().map(|f| f.item_identifier).collect();
        for (id, item) in by_id {
            if !failed.contains(&id) {
                handled.fetch_add(1, Ordering::Relaxed);
                receives.remove(&item.dedupe_key);
                continue;
            }
            if receives.get(&item.dedupe_key).copied().unwrap_or(0) >= MAX_RECEIVES {
                tracing::error!(app = %format!("{}/{}", item.app.namespace, item.app.name), "message dead-lettered after {MAX_RECEIVES} receives");
                receives.remove(&item.dedupe_key);
                dead.lock().unwrap_or_else(|e| e.into_inner()).push(item);
            } else {
                let _ = queue.enqueue(&item, REDELIVER_AFTER).await;
            }
        }
    }
}

async fn sweep_loop<A, S, D, Q, E, C>(sweeper: Arc<Sweeper<A, S, D, Q, E, C>>, every: Duration, mut stopped: watch::Receiver<bool>)
where
    A: medic_core::ports::ArgoApi,
    S: medic_core::ports::IncidentStore,
    D: medic_core::ports::DedupeStore,
    Q: WorkQueue,
    E: medic_core::ports::Escalator,
    C: medic_core::ports::Clock,
{
    loop {
        match sweeper.run().await {
            Ok(run) => tracing::info!(listed = run.listed, enqueued = run.enqueued, "sweep"),
            Err(e) => tracing::warn!(error = %e, "sweep failed"),
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stopped.changed() => return,
        }
    }
}

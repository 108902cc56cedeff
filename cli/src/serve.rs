//! `medic serve`: the serverless pipeline in one process. The same ingest, worker and sweeper
//! handlers as on Lambda, on the embedded adapters of the same ports: an in-memory queue (with
//! delays, redelivery and a dead-letter list standing in for SQS), in-memory dedupe and locks,
//! and the SQLite incident store; against a real Argo CD or the simulator.
//!
//! The listener serves ingest (`POST /v1/events`, `POST /v1/refresh`) and, when Slack is
//! configured with a signing secret, the slack-actions handler (`POST /slack/actions`: the same
//! signature check, allow-list and queueing as the Lambda, from the medic-slack-actions crate),
//! so a Slack app whose interactivity Request URL reaches this listener (through a tunnel) drives
//! the same click flow. Every connection has timeouts (headers, body, whole connection), and a
//! body is refused with 413 from its `Content-Length`, or as soon as it grows past the route's
//! cap, never buffered whole first.

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
use medic_adapters::memory::SystemClock;
use medic_adapters::telemetry::Metrics;
use medic_core::sweep::SweepScope;
use medic_core::{DecisionPolicy, PolicyConfig};
use medic_ingest::{Ingest, IngestConfig, WebhookSecrets};
use medic_slack::AnyEscalator;
use medic_slack_actions::{ActionsConfig, AllowList, SigningSecret, SlackActions};
use medic_sweeper::{Sweeper, SweeperConfig};
use medic_worker::{Worker, WorkerConfig};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::local_queue::SqliteQueue;
use crate::store::SqliteIncidentStore;

/// How many times a message is delivered before it is dead-lettered, as `maxReceiveCount`.
const MAX_RECEIVES: u32 = 5;
/// How long a failed message stays invisible before redelivery, as the visibility timeout.
const REDELIVER_AFTER: Duration = Duration::from_secs(5);
/// How long a message the worker has stays hidden: longer than any batch takes (a blocking hard
/// refresh, retries included), so it comes back only when the process died with it.
const IN_FLIGHT: Duration = Duration::from_secs(180);

/// The click endpoint on the listener.
pub const SLACK_ACTIONS_PATH: &str = "/slack/actions";

/// How long a client may take to send a request's headers, its body, and how long one
/// connection may stay open at all (keep-alive included).
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub connection_timeout: Duration,
    /// Connections served at once; more wait in the listen backlog until one ends, so a flood
    /// cannot use up the process's file descriptors (reliability review L6).
    pub max_connections: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(15),
            connection_timeout: Duration::from_secs(120),
            max_connections: 256,
        }
    }
}

/// What `/slack/actions` checks clicks against: the signing secret and the allow-list, as the
/// Lambda's `SLACK_SIGNING_SECRET` and `SLACK_ALLOWED_USERS`.
pub struct SlackActionsOptions {
    pub secret: SigningSecret,
    pub allow: AllowList,
}

pub struct ServeOptions {
    pub listen: SocketAddr,
    pub webhook_secret: String,
    /// The key `POST /v1/refresh` requests are signed with; `None` turns the route off.
    pub refresh_secret: Option<String>,
    pub sweep_every: Duration,
    pub dry_run: bool,
    pub policy: PolicyConfig,
    pub rates: BudgetRates,
    /// Incidents, actions and (for Slack) the escalation records.
    pub store: Arc<SqliteIncidentStore>,
    /// Slack (real or simulated) or the log.
    pub escalator: Arc<LocalEscalator>,
    /// `/slack/actions`, when Slack is the escalator; without it the path answers 404.
    pub slack_actions: Option<SlackActionsOptions>,
    pub http: HttpLimits,
}

/// The escalator `medic serve` uses: Slack when configured (its records in the state file), else
/// log lines.
pub type LocalEscalator = AnyEscalator<Arc<SqliteIncidentStore>>;

type LocalActions = SlackActions<Arc<SqliteQueue>, Arc<crate::local_dedupe::SqliteDedupe>, Arc<SqliteIncidentStore>>;

/// The handlers behind the listener.
struct Routes {
    ingest: LocalIngest,
    actions: Option<LocalActions>,
    http: HttpLimits,
    /// What `/healthz` reports.
    health: Health,
}

/// The path a supervisor or a load balancer asks whether `medic serve` is up.
pub const HEALTH_PATH: &str = "/healthz";

/// What `/healthz` reports: the queue's depth and the messages handled and dead-lettered.
#[derive(Clone)]
struct Health {
    queue: Arc<SqliteQueue>,
    handled: Arc<AtomicUsize>,
}

impl Health {
    fn response(&self) -> hyper::Response<Full<Bytes>> {
        let (status, body) = match self.queue.len().and_then(|queued| Ok((queued, self.queue.dead_letters()?.len()))) {
            Ok((queued, dead)) => (
                hyper::StatusCode::OK,
                serde_json::json!({
                    "status": "ok",
                    "queued": queued,
                    "handled": self.handled.load(Ordering::Relaxed),
                    "deadLettered": dead,
                }),
            ),
            // The state file does not answer: nothing can be queued or recorded.
            Err(e) => (hyper::StatusCode::SERVICE_UNAVAILABLE, serde_json::json!({"status": "error", "error": e.what()})),
        };
        let mut response = hyper::Response::new(Full::new(Bytes::from(body.to_string())));
        *response.status_mut() = status;
        response.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
        response
    }
}

type LocalIngest = Ingest<Arc<SqliteQueue>, Arc<HttpArgoClient>, SystemClock, Metrics>;
/// The adapters `medic serve` runs on: the embedded SQLite state and queue.
type LocalPorts = medic_stack::local::LocalPorts<Arc<HttpArgoClient>, Arc<LocalEscalator>, Arc<LocalBudget>>;

type LocalWorker = Worker<LocalPorts>;
type LocalSweeper = Sweeper<LocalPorts>;

/// A running local pipeline.
pub struct Served {
    pub addr: SocketAddr,
    pub queue: Arc<SqliteQueue>,
    pub escalator: Arc<LocalEscalator>,
    pub handled: Arc<AtomicUsize>,
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// How long a stop waits for the loops: the worker finishes the batch it holds and the sweeper
/// its pass, as a Lambda invocation would before its timeout. Past it they are aborted; what the
/// worker held stays in the state file's queue and is due again when its visibility ends.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

impl Served {
    /// Stops the server and the loops, waiting at most [`SHUTDOWN_GRACE`] for them. Returns
    /// false when it had to abort one.
    pub async fn shutdown(self) -> bool {
        let _ = self.stop.send(true);
        join_within(self.tasks, SHUTDOWN_GRACE).await
    }
}

/// Waits for `tasks` at most `grace`, then aborts what is left; true when all finished.
pub async fn join_within(tasks: Vec<tokio::task::JoinHandle<()>>, grace: Duration) -> bool {
    let aborts: Vec<_> = tasks.iter().map(|t| t.abort_handle()).collect();
    match tokio::time::timeout(grace, futures::future::join_all(tasks)).await {
        Ok(_) => true,
        Err(_) => {
            aborts.iter().for_each(tokio::task::AbortHandle::abort);
            false
        }
    }
}

/// A future that completes on SIGTERM or SIGINT (Ctrl-C), the signals systemd, Docker and
/// Kubernetes stop a process with (either one drains and prints the summary), subscribed when it is made, not when it
/// is first awaited: a process that says it is ready must already hear the signal that stops it.
/// Subscribed after the announcement, a SIGTERM sent on reading it could come before the
/// subscription and be lost, leaving the process running (a CI run of `serve`'s SIGTERM test hung
/// so).
pub fn stop_signal() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
            return Box::pin(async move {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
            });
        }
    }
    Box::pin(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}

/// Starts ingest (HTTP on `listen`), the worker loop and the sweeper loop.
pub async fn start(argo: HttpArgoClient, opts: ServeOptions) -> Result<Served> {
    let argo = Arc::new(argo);
    // The queue and the dedupe records live in the state file, so a restart loses nothing
    // accepted (issue 26) and handles no click twice.
    let state = medic_stack::local::LocalState::over(Arc::clone(&opts.store));
    let queue = Arc::clone(&state.queue);
    let escalator = Arc::clone(&opts.escalator);
    let store = Arc::clone(&opts.store);
    let instance = opts.policy.instance_id.clone();
    // Work items are signed as on Lambda, so the worker runs exactly as deployed, with the state
    // file's own key: items a previous process queued there verify in this one.
    let work_item_key = Some(queue.work_item_key().context("reading the work-item key of the state file")?);
    // One budget for the worker and the sweeper's canaries, as the stack's shared buckets.
    let budget = Arc::new(LocalBudget::new(opts.rates));
    // Ingest's, the worker's and the sweeper's adapters: one state file, queue, escalator and budget.
    let local = || -> LocalPorts { state.adapters(Arc::clone(&argo), Arc::clone(&escalator), Arc::clone(&budget), &instance) };
    let ingest: LocalIngest = Ingest::new(
        local().intake(IngestConfig { work_item_key: work_item_key.clone(), ..IngestConfig::default() }),
        WebhookSecrets::new(opts.webhook_secret.clone(), None),
    )
    .with_refresh_secrets(opts.refresh_secret.clone().map(|s| WebhookSecrets::new(s, None)));
    let actions = match (opts.slack_actions, &*escalator) {
        (Some(o), AnyEscalator::Slack(_)) => {
            let config = ActionsConfig { work_item_key: work_item_key.clone(), ..ActionsConfig::default() };
            Some(local().interactions(config, o.secret, o.allow, Arc::clone(&store)))
        }
        _ => None,
    };
    let handled = Arc::new(AtomicUsize::new(0));
    let health = Health { queue: Arc::clone(&queue), handled: Arc::clone(&handled) };
    let routes = Arc::new(Routes { ingest, actions, http: opts.http, health });
    let worker_config = WorkerConfig { dry_run: opts.dry_run, work_item_key: work_item_key.clone(), ..WorkerConfig::default() };
    let worker: Arc<LocalWorker> = Arc::new(Worker::from(local().work(worker_config, DecisionPolicy::new(opts.policy.clone()).into())));
    let sweeper_config = SweeperConfig {
        scope: SweepScope { projects: opts.policy.projects.clone(), selector: opts.policy.selector.clone(), ..SweepScope::default() },
        // `--dry-run` holds the canaries' refreshes and the outage's new posts too.
        dry_run: opts.dry_run,
        work_item_key: work_item_key.clone(),
        trust: opts.policy.trust.clone(),
        settle: std::time::Duration::from_secs(opts.policy.settle_secs.max(0) as u64),
        ..SweeperConfig::default()
    };
    let sweeper: Arc<LocalSweeper> = Arc::new(Sweeper::from(local().sweep(sweeper_config)));

    let listener = TcpListener::bind(opts.listen).await.with_context(|| format!("listening on {}", opts.listen))?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = watch::channel(false);
    let tasks = vec![
        tokio::spawn(http_loop(listener, routes, stopped.clone())),
        tokio::spawn(worker_loop(worker, Arc::clone(&queue), Arc::clone(&handled), stopped.clone())),
        tokio::spawn(sweep_loop(sweeper, opts.sweep_every, stopped)),
    ];
    Ok(Served { addr, queue, escalator, handled, stop, tasks })
}

async fn http_loop(listener: TcpListener, routes: Arc<Routes>, mut stopped: watch::Receiver<bool>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(routes.http.max_connections));
    loop {
        // A connection is accepted only with a slot free: beyond the cap, clients wait in the
        // kernel's backlog instead of each costing a descriptor and a task.
        let accepted = tokio::select! {
            a = async { (Arc::clone(&slots).acquire_owned().await, listener.accept().await) } => a,
            _ = stopped.changed() => return,
        };
        let (Ok(slot), accepted) = accepted else { return };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors (EMFILE, ENFILE) or memory: accepting again at once would
                // fail again at once, a busy loop. Wait for connections to end instead.
                tracing::warn!(error = %e, "accepting a connection failed; trying again in 100 ms");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let routes = Arc::clone(&routes);
        tokio::spawn(async move {
            let _slot = slot;
            let limits = routes.http;
            let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let routes = Arc::clone(&routes);
                async move { Ok::<_, Infallible>(handle_http(&routes, req).await) }
            });
            let connection = http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .serve_connection(TokioIo::new(stream), service);
            // A slow or idle client cannot hold a connection (and its task) for longer than this.
            let _ = tokio::time::timeout(limits.connection_timeout, connection).await;
        });
    }
}

/// A request refused before its handler saw it: answered in JSON like every other refusal
/// (`{"error", "reason"}`) and logged at WARN like them. (A 413 was plain text and unlogged.)
fn rejected(status: hyper::StatusCode, reason: &'static str, message: String, path: &str) -> hyper::Response<Full<Bytes>> {
    tracing::warn!(status = status.as_u16(), reason, message = %message, path, "request rejected");
    let (parts, body) = medic_adapters::edge::Rejection::new(status, reason, message).response(None).into_parts();
    hyper::Response::from_parts(parts, Full::new(Bytes::from(body)))
}

/// Turns a plain HTTP request into what the Lambda handler of its path takes, and back. The body
/// is read only up to the route's cap, within the body timeout.
async fn handle_http(routes: &Routes, req: hyper::Request<hyper::body::Incoming>) -> hyper::Response<Full<Bytes>> {
    use hyper::StatusCode;
    let path = req.uri().path().to_owned();
    if path == HEALTH_PATH && req.method() == hyper::Method::GET {
        return routes.health.response();
    }
    let slack = path == SLACK_ACTIONS_PATH;
    let limit = match (&routes.actions, slack) {
        (Some(actions), true) => actions.config.max_body_bytes,
        (None, true) => {
            let why = "no Slack interactivity here: medic serve needs Slack (--slack-simulate, or SLACK_TOKEN and SLACK_CHANNEL) and SLACK_SIGNING_SECRET";
            return rejected(StatusCode::NOT_FOUND, "path", why.to_owned(), &path);
        }
        (_, false) => routes.ingest.config.max_body_bytes,
    };
    let too_large = || {
        rejected(
            StatusCode::PAYLOAD_TOO_LARGE,
            "oversized",
            format!("the body is larger than the {limit} bytes this endpoint accepts"),
            &path,
        )
    };
    let declared = req.headers().get(hyper::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return too_large();
    }
    let (parts, body) = req.into_parts();
    let bytes = match tokio::time::timeout(routes.http.body_timeout, http_body_util::Limited::new(body, limit).collect()).await {
        Ok(Ok(b)) => b.to_bytes(),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => return too_large(),
        Ok(Err(_)) => return rejected(StatusCode::BAD_REQUEST, "unreadable", "the body could not be read".to_owned(), &path),
        Err(_) => {
            let why = format!("the body did not arrive within {:?}", routes.http.body_timeout);
            return rejected(StatusCode::REQUEST_TIMEOUT, "slow_body", why, &path);
        }
    };
    let request = lambda_http::http::Request::from_parts(parts, lambda_http::Body::from(bytes.to_vec()));
    let response = match (&routes.actions, slack) {
        (Some(actions), true) => actions.handle(request).await.map(lambda_http::Body::from),
        _ => routes.ingest.handle(request).await,
    };
    let (parts, body) = response.into_parts();
    hyper::Response::from_parts(parts, Full::new(Bytes::copy_from_slice(body.as_ref())))
}

/// The event source mapping: batches of up to 10 due items, each hidden for [`IN_FLIGHT`] while
/// the worker has it, deleted once handled, due again after [`REDELIVER_AFTER`] when it failed,
/// dead-lettered after `MAX_RECEIVES`. It stops between batches; what is still queued stays in
/// the state file for the next start.
async fn worker_loop(worker: Arc<LocalWorker>, queue: Arc<SqliteQueue>, handled: Arc<AtomicUsize>, mut stopped: watch::Receiver<bool>) {
    let mut next_id = 0u64;
    loop {
        if *stopped.borrow() {
            return;
        }
        let batch = match queue.receive(10, IN_FLIGHT) {
            Ok(batch) => batch,
            Err(e) => {
                tracing::error!(error = %e.what(), "reading the queue from the state file failed");
                Vec::new()
            }
        };
        if batch.is_empty() {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(100)) => continue,
                _ = stopped.changed() => return,
            }
        }
        let mut event = SqsEvent::default();
        let mut by_id = HashMap::new();
        for received in batch {
            next_id += 1;
            let id = format!("local-{next_id}");
            let mut record = SqsMessage::default();
            record.message_id = Some(id.clone());
            record.body = serde_json::to_string(&received.item).ok();
            record.attributes.insert("ApproximateReceiveCount".into(), received.receives.to_string());
            event.records.push(record);
            by_id.insert(id, received);
        }
        let response = match worker.handle_batch(event).await {
            Ok(r) => r,
            Err(e) => {
                // The whole batch comes back when its visibility ends, as on Lambda.
                tracing::error!(error = %e, "batch failed");
                continue;
            }
        };
        let failed: Vec<String> = response.batch_item_failures.into_iter().map(|f| f.item_identifier).collect();
        for (id, received) in by_id {
            let item = &received.item;
            // One line per message at the default level: what a person running `serve` watches.
            let what = match (&item.requested_action, &item.requested_by) {
                (Some(action), Some(by)) => format!("{action} requested by {by}"),
                (Some(action), None) => format!("{action} requested"),
                _ => item.trigger.to_string(),
            };
            let settled = if !failed.contains(&id) {
                handled.fetch_add(1, Ordering::Relaxed);
                crate::note!("medic: {}: {what}: done", item.app.id());
                queue.delete(received.id)
            } else if received.receives >= MAX_RECEIVES {
                tracing::error!(app = %item.app.id(), "message dead-lettered after {MAX_RECEIVES} receives");
                crate::note!("medic: {}: {what}: failed {MAX_RECEIVES} times, dead-lettered", item.app.id());
                queue.dead_letter(received.id)
            } else {
                crate::note!(
                    "medic: {}: {what}: failed (try {} of {MAX_RECEIVES}), again in {}s",
                    item.app.id(),
                    received.receives,
                    REDELIVER_AFTER.as_secs()
                );
                queue.release(received.id, REDELIVER_AFTER)
            };
            if let Err(e) = settled {
                // Left as it is, the item comes back when its visibility ends.
                tracing::error!(error = %e.what(), app = %item.app.id(), "updating the queue in the state file failed");
            }
        }
    }
}

async fn sweep_loop(sweeper: Arc<LocalSweeper>, every: Duration, mut stopped: watch::Receiver<bool>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A SIGTERM that arrives after the stop future is made but before it is first awaited still
    /// stops it (an `async fn` that subscribed on first poll lost it, or the default action killed
    /// the process).
    #[cfg(unix)]
    #[tokio::test]
    async fn a_sigterm_sent_before_the_stop_is_awaited_still_stops_it() {
        let stop = stop_signal();
        let pid = std::process::id().to_string();
        assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        tokio::time::timeout(Duration::from_secs(10), stop).await.expect("the SIGTERM sent before the await stops it");
    }

    #[tokio::test]
    async fn a_stop_waits_for_the_loops_within_its_grace_and_cuts_off_one_that_never_ends() {
        let quick = vec![tokio::spawn(async {})];
        assert!(join_within(quick, Duration::from_secs(5)).await);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let stuck = tokio::spawn(async move {
            let _tx = tx; // dropped only when the task is aborted
            std::future::pending::<()>().await
        });
        let started = std::time::Instant::now();
        assert!(!join_within(vec![stuck], Duration::from_millis(200)).await);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(rx.await.is_err(), "the stuck loop was aborted, not left running");
    }

    /// The log lines written while `f` runs.
    fn logged<T>(f: impl FnOnce() -> T) -> (T, String) {
        #[derive(Clone, Default)]
        struct Lines(Arc<std::sync::Mutex<Vec<u8>>>);
        impl std::io::Write for Lines {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).finish();
        let out = tracing::subscriber::with_default(subscriber, f);
        let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        (out, text)
    }

    #[test]
    fn a_request_refused_before_its_handler_is_answered_in_json_and_logged() {
        let (response, log) = logged(|| {
            rejected(hyper::StatusCode::PAYLOAD_TOO_LARGE, "oversized", "the body is larger than the 65536 bytes".into(), "/v1/events")
        });
        assert_eq!(response.status(), 413);
        assert_eq!(response.headers()["content-type"], "application/json");
        let body = futures_body(response);
        let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(answer["reason"], "oversized");
        assert!(answer["error"].as_str().unwrap().contains("65536"), "the limit is stated: {answer}");
        assert!(log.contains("WARN") && log.contains("request rejected") && log.contains("oversized"), "{log}");
    }

    fn futures_body(response: hyper::Response<Full<Bytes>>) -> Bytes {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(response.into_body().collect()).unwrap().to_bytes()
    }
}

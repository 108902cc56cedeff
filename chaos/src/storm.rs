//! `medic-chaos storm`: the morning after an outage, through the real handlers, in one process.
//!
//! A synthetic fleet in the Argo CD simulator has `--stale` apps left stale by an outage (health
//! Progressing, not reconciled for two hours; a refresh heals them). First the outage itself: the
//! stale apps' Git host is unreachable, so Argo CD cannot compare them (sync `Unknown`); the real
//! sweeper finds one cause and probes its canaries, and argocd-notifications' reports of each app
//! going `Unknown` reach the workers, which leave them to the cause. Then Git is back. argocd-notifications reports
//! each one `--copies` times, in a shuffled order (its at-most-once send retried by a proxy, two
//! controllers, a replayed queue). The real ingest handler takes every delivery onto an in-memory
//! queue; `--workers` real worker handlers drain it in batches of ten, drawing on the instance's
//! budgets as on Lambda (token buckets shared by the workers, `SharedBudget`; or with
//! `--static-split`, each worker `rate / max concurrency`, as before); a failed message comes back
//! after a visibility delay. The real sweeper runs last and finds what is left.
//!
//! Beside it, on a fresh simulator holding the same fleet, the cron script of the stale-at-scale
//! document: list every app, read every app again, refresh the stale ones. Both are counted from
//! the simulator's own request log (calls, and response bytes as JSON).
//!
//! The last line is `storm: ... D duplicate actions, C calls per remediated app, drain R x the
//! budget bound`; the exit status is non-zero unless every stale app healed, D = 0 and C <= 2.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use chrono::Utc;
use medic_adapters::argocd::HttpArgoClient;
use medic_adapters::budget::{BudgetRates, LocalBudget, SharedBudget};
use medic_adapters::config::ArgoSettings;
use medic_adapters::memory::{LogEscalator, MemoryBuckets, MemoryQueue};
use medic_adapters::telemetry::Metrics;
use medic_core::{DecisionPolicy, PolicyConfig};
use medic_ingest::{Ingest, IngestConfig, WebhookSecrets};
use medic_sim::{ArgoSim, LoggedRequest, SimConfig, synthetic_fleet};
use medic_stack::twins::MemoryState;
use medic_worker::{Worker, WorkerConfig};
use rand::SeedableRng;
use rand::seq::SliceRandom;

#[derive(clap::Args, Debug, Clone)]
pub struct Options {
    #[arg(long, default_value_t = 5_000)]
    pub apps: usize,
    /// Apps left stale by the outage (each heals on a refresh).
    #[arg(long, default_value_t = 2_000)]
    pub stale: usize,
    /// Deliveries of each notification.
    #[arg(long, default_value_t = 4)]
    pub copies: usize,
    /// The event source's maximum concurrency.
    #[arg(long, default_value_t = 2)]
    pub workers: u32,
    /// Worker invocations actually running at once (default: `--workers`); fewer than the
    /// maximum shows what a static split of the budget would leave unused.
    #[arg(long)]
    pub running: Option<u32>,
    /// The instance's refresh budget.
    #[arg(long, default_value_t = BudgetRates::default().refresh_per_minute)]
    pub refresh_per_minute: u32,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Each worker its static share of the budget (`rate / workers`), as the functions did before
    /// the shared buckets.
    #[arg(long)]
    pub static_split: bool,
    /// On the AWS adapters (SQS, DynamoDB in moto_server), every function built as its Lambda
    /// builds it, counting the AWS requests each makes (docs/cost.md).
    #[arg(long)]
    pub moto: bool,
}

/// The Git repository of the apps the outage left stale, on its own host.
const OUTAGE_REPO: &str = "https://git.outage.example.com/platform/deployments.git";

pub(crate) const SECRET: &str = "storm-webhook-secret-not-for-production";

/// The storm's adapters: the twins, shared by the fleet's workers and its sweeper.
type StormPorts = medic_stack::twins::MemoryPorts<HttpArgoClient, StormBudget>;
type StormSweeper = medic_sweeper::Sweeper<StormPorts>;
type StormWorker = Worker<StormPorts>;

/// One fleet in its own simulator.
pub(crate) async fn fleet_sim(o: &Options) -> anyhow::Result<(ArgoSim, Vec<serde_json::Value>)> {
    let sim = ArgoSim::start(SimConfig::default()).await?;
    let mut stale = Vec::new();
    for (app, outcomes) in synthetic_fleet(o.apps, o.stale, Utc::now()) {
        let name = app["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        let mut app = app;
        if outcomes.refresh == medic_sim::RefreshOutcome::Heal {
            // The stale apps share the Git host the outage took down; the others use another.
            app["spec"]["source"]["repoURL"] = OUTAGE_REPO.into();
            stale.push(app.clone());
        }
        sim.insert_app(app);
        sim.set_outcomes(&name, outcomes);
    }
    Ok((sim, stale))
}

fn client(sim: &ArgoSim) -> anyhow::Result<HttpArgoClient> {
    Ok(HttpArgoClient::new(ArgoSettings::new(sim.base_url(), SimConfig::default().tokens[0].token.clone()))?)
}

/// The notification argocd-notifications renders for a stale app (the sample's shape, this app's
/// values).
pub(crate) fn notification(sample: &serde_json::Value, app: &serde_json::Value) -> String {
    let mut n = sample.clone();
    let status = &app["status"];
    n["app"]["name"] = app["metadata"]["name"].clone();
    n["app"]["project"] = app["spec"]["project"].clone();
    n["sync"]["revision"] = status["sync"]["revision"].clone();
    n["operation"]["startedAt"] = status["operationState"]["startedAt"].clone();
    n["operation"]["finishedAt"] = status["operationState"]["finishedAt"].clone();
    n["reconciledAt"] = status["reconciledAt"].clone();
    n["resourceVersion"] = app["metadata"]["resourceVersion"].clone();
    let spec = &app["spec"];
    n["source"]["repoURLs"] = serde_json::json!([spec["source"]["repoURL"].as_str().unwrap_or("")]);
    n["source"]["destination"]["server"] = spec["destination"]["server"].as_str().unwrap_or("").into();
    n["source"]["destination"]["name"] = spec["destination"]["name"].as_str().unwrap_or("").into();
    n.to_string()
}

pub(crate) fn request(body: String) -> lambda_http::Request {
    lambda_http::http::Request::builder()
        .method("POST")
        .uri("https://ingest.lambda-url.us-east-1.on.aws/v1/events")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {SECRET}"))
        .body(lambda_http::Body::from(body))
        .expect("a valid request")
}

/// The calls in a simulator's log and the JSON bytes of their answers.
pub(crate) fn account(log: &[LoggedRequest]) -> (usize, usize) {
    (log.len(), log.iter().map(|r| r.response.to_string().len()).sum())
}

/// A worker's budget: the functions' (shared buckets) or the static split they had before.
enum StormBudget {
    Shared(SharedBudget<Arc<MemoryBuckets>>),
    Split(LocalBudget),
}

impl medic_core::ports::Budget for StormBudget {
    async fn acquire(&self, kind: medic_core::ladder::BudgetKind) -> Result<(), medic_core::ports::BudgetExhausted> {
        match self {
            StormBudget::Shared(b) => b.acquire(kind).await,
            StormBudget::Split(b) => b.acquire(kind).await,
        }
    }
}

/// Each worker's budget as `LambdaEnv::worker_budget` builds it: the instance's rates in buckets
/// every worker shares, with its share's wait; or with `--static-split` its share alone.
fn budget(o: &Options, buckets: &Arc<MemoryBuckets>) -> StormBudget {
    let instance = BudgetRates { refresh_per_minute: o.refresh_per_minute, ..BudgetRates::default() };
    let share = instance.worker_share(o.workers, medic_adapters::lambda_env::WORKER_BATCH_SIZE, Duration::from_secs(60));
    if o.static_split {
        StormBudget::Split(LocalBudget::new(share))
    } else {
        StormBudget::Shared(SharedBudget::new(buckets.clone(), instance, share))
    }
}

/// The key the storm's sweeper signs its recovery waves with and its workers verify (the stack's
/// `WorkItemKey`): without it the waves would reach the workers as plain looks.
fn work_item_key() -> medic_core::event::WorkItemKey {
    medic_core::event::WorkItemKey::new("storm-work-item-key-of-at-least-32-bytes").expect("long enough")
}

fn worker(sim: &ArgoSim, budget: StormBudget, state: &MemoryState) -> anyhow::Result<StormWorker> {
    let config = WorkerConfig { work_item_key: Some(work_item_key()), ..WorkerConfig::default() };
    let policy = DecisionPolicy::new(PolicyConfig::default()).into();
    Ok(Worker::from(state.adapters(client(sim)?, budget, "storm").with_escalator(LogEscalator::forgetful()).work(config, policy)))
}

/// The storm in one process over the in-memory twins (`--moto`: [`crate::storm_aws::run`], which
/// takes this module's fleet, notifications and tally).
pub async fn run(o: Options) -> anyhow::Result<bool> {
    let sample: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(medic_sim::workspace_root().join("events/webhook/stale-progressing.json"))?)?;

    // The cron script: list everything, read every app again, refresh the stale ones.
    let (cron_sim, stale) = fleet_sim(&o).await?;
    let cron = client(&cron_sim)?;
    let started = Instant::now();
    let listed = medic_core::ports::ArgoApi::list_apps(&cron, &medic_core::ports::ListQuery::default()).await?;
    for app in &listed {
        let r = medic_core::event::AppRef::from(app);
        let full = medic_core::ports::ArgoApi::get_app(&cron, &r).await?;
        if full.health_status() == "Progressing" {
            medic_core::ports::ArgoApi::refresh(
                &cron,
                medic_core::permit::Permit::for_tests(),
                &r,
                medic_core::ladder::RefreshKind::Normal,
            )
            .await?;
        }
    }
    let cron_secs = started.elapsed().as_secs_f64();
    let (cron_calls, cron_bytes) = account(&cron_sim.requests());
    let cron_healed = cron_sim.counts().refresh;
    drop(cron_sim);

    // Argo Medic: ingest every delivery, drain with the workers, then sweep.
    let (sim, _) = fleet_sim(&o).await?;
    let state = MemoryState::default();
    let queue = Arc::clone(&state.queue);
    let intake = state.intake(client(&sim)?, IngestConfig::default()).with_metrics(Metrics::quiet("storm"));
    let ingest = Ingest::new(intake, WebhookSecrets::new(SECRET, None));
    let buckets = Arc::new(MemoryBuckets::default());
    let workers: Vec<StormWorker> =
        (0..o.running.unwrap_or(o.workers).max(1)).map(|_| worker(&sim, budget(&o, &buckets), &state)).collect::<anyhow::Result<_>>()?;
    let sweeper_config = medic_sweeper::SweeperConfig { work_item_key: Some(work_item_key()), ..medic_sweeper::SweeperConfig::default() };
    let sweeper: StormSweeper =
        medic_sweeper::Sweeper::from(state.adapters(client(&sim)?, budget(&o, &buckets), "storm").sweep(sweeper_config));

    let outage = outage_phase(&o, &sim, &stale, &ingest, &workers, &queue, &sweeper).await?;
    // Git is back: Argo CD compares the apps again, and they stay Progressing until refreshed.
    for app in &stale {
        let name = app["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        sim.insert_app(app.clone());
        sim.set_outcomes(&name, medic_sim::Outcomes { refresh: medic_sim::RefreshOutcome::Heal, ..Default::default() });
    }
    sim.clear_requests();

    let mut deliveries: Vec<String> = stale.iter().flat_map(|app| std::iter::repeat_n(notification(&sample, app), o.copies)).collect();
    deliveries.shuffle(&mut rand::rngs::StdRng::seed_from_u64(o.seed));
    let mut rejected = 0;
    for body in &deliveries {
        rejected += usize::from(ingest.handle(request(body.clone())).await.status() != 202);
    }
    let started = Instant::now();
    let mut next_id = 0usize;
    let (invocations, failures) = drain(&workers, &queue, &mut next_id).await?;
    let drain_secs = started.elapsed().as_secs_f64();
    let swept = sweeper.run().await?;

    let Tally { healed, duplicates, app_calls, calls, bytes, per_app, bound } = tally(&sim, &o);
    println!(
        "storm: {} apps, {} stale, {} deliveries ({} each, shuffled, {rejected} rejected), {} of at most {} workers running, refresh budget {}/min ({})",
        o.apps,
        o.stale,
        deliveries.len(),
        o.copies,
        o.running.unwrap_or(o.workers),
        o.workers,
        o.refresh_per_minute,
        if o.static_split { "each worker its static share" } else { "shared by the workers" }
    );
    println!(
        "argo medic: {calls} calls ({} to apps), {bytes} bytes; {invocations} invocations, {failures} failed messages; drained in {drain_secs:.1} s; the sweep after listed {} and looked at {}",
        app_calls, swept.listed, swept.candidates
    );
    println!(
        "outage: {} fleet incident(s) ({}), {} canaries probed and {} per-app actions; {} notifications of apps going Unknown, {} left to the cause; {} Argo CD calls while it lasted ({} refreshes)",
        outage.causes.len(),
        outage.causes.join(", "),
        outage.probed,
        outage.refreshes.saturating_sub(outage.probed),
        outage.deliveries,
        outage.held,
        outage.calls,
        outage.refreshes
    );
    println!("cron script: {cron_calls} calls, {cron_bytes} bytes, {cron_healed} refreshes, one pass in {cron_secs:.1} s");
    println!(
        "ratio: the cron script makes {:.1}x the calls and {:.1}x the bytes of Argo Medic",
        cron_calls as f64 / calls.max(1) as f64,
        cron_bytes as f64 / bytes.max(1) as f64
    );
    println!(
        "storm: {healed} of {} healthy, {duplicates} duplicate actions, {per_app:.3} calls per remediated app, drain {:.2}x the budget bound ({bound:.0} s)",
        o.apps,
        drain_secs / bound.max(0.001)
    );
    let outage_ok = outage.causes.len() == 1 && outage.refreshes == outage.probed && outage.held == outage.deliveries;
    Ok(healed == o.apps && duplicates == 0 && per_app <= 2.0 && outage_ok)
}

/// The outage as the functions saw it.
struct OutageFigures {
    /// The causes the sweeper found (`repo:<host> (covered of listed)`).
    causes: Vec<String>,
    probed: usize,
    /// Notifications of apps going `Unknown`, and how many the workers left to the cause.
    deliveries: usize,
    held: usize,
    /// Argo CD calls while it lasted, and how many of them were refreshes.
    calls: usize,
    refreshes: usize,
}

/// The stale apps' Git host is unreachable: Argo CD cannot compare them (sync and health
/// `Unknown`, a ComparisonError; a refresh changes nothing). The sweeper runs once and
/// argocd-notifications reports each app going `Unknown` once (shuffled); the workers drain it.
async fn outage_phase(
    o: &Options,
    sim: &ArgoSim,
    stale: &[serde_json::Value],
    ingest: &Ingest<Arc<MemoryQueue>, HttpArgoClient, medic_adapters::memory::SystemClock, Metrics>,
    workers: &[StormWorker],
    queue: &Arc<MemoryQueue>,
    sweeper: &StormSweeper,
) -> anyhow::Result<OutageFigures> {
    let since = (Utc::now() - chrono::TimeDelta::minutes(20)).to_rfc3339();
    for app in stale {
        let mut down = app.clone();
        down["status"]["sync"]["status"] = "Unknown".into();
        down["status"]["health"] = serde_json::json!({"status": "Unknown", "lastTransitionTime": since});
        down["status"]["conditions"] = serde_json::json!([{"type": "ComparisonError", "lastTransitionTime": since,
            "message": "rpc error: code = Unknown desc = failed to list refs: dial tcp 10.20.30.40:443: connect: connection refused"}]);
        let name = down["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        sim.insert_app(down);
        sim.set_outcomes(&name, medic_sim::Outcomes::default());
    }
    sim.clear_requests();
    let run = sweeper.run().await?;
    let sample: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(
        medic_sim::workspace_root().join("events/webhook/comparison-error-transient.json"),
    )?)?;
    let mut bodies: Vec<String> = stale.iter().map(|app| notification(&sample, app)).collect();
    bodies.shuffle(&mut rand::rngs::StdRng::seed_from_u64(o.seed + 1));
    for body in &bodies {
        ingest.handle(request(body.clone())).await;
    }
    let mut next_id = 1_000_000_000;
    drain(workers, queue, &mut next_id).await?;
    let held = workers.iter().map(|w| w.metrics.total("HeldByFleetOutage")).sum::<f64>() as usize;
    // The fleet incidents as the sweeper told them (its Slack parent, here the log escalator's).
    let causes = sweeper.escalator.outages().iter().map(|v| format!("{}: {} of {} apps", v.scope, v.covered, v.listed)).collect();
    let (calls, refreshes) = (sim.requests().len(), sim.counts().refresh);
    Ok(OutageFigures { causes, probed: run.probed, deliveries: bodies.len(), held, calls, refreshes })
}

/// The event source mapping over the in-memory queue: batches of ten to each worker at once, a
/// failed message back after its visibility delay (5 s). Returns (invocations, failed messages).
async fn drain(workers: &[StormWorker], queue: &Arc<MemoryQueue>, next_id: &mut usize) -> anyhow::Result<(usize, usize)> {
    let (mut invocations, mut failures) = (0usize, 0usize);
    loop {
        let batches: Vec<Vec<medic_core::event::WorkItem>> = workers.iter().map(|_| queue.take_ready(10)).collect();
        if batches.iter().all(Vec::is_empty) {
            if queue.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        let runs = workers.iter().zip(batches).filter(|(_, b)| !b.is_empty()).map(|(w, items)| {
            let records: Vec<SqsMessage> = items
                .iter()
                .map(|item| {
                    *next_id += 1;
                    let mut m = SqsMessage::default();
                    m.message_id = Some(format!("m-{next_id}"));
                    m.body = serde_json::to_string(item).ok();
                    m.attributes.insert("ApproximateReceiveCount".into(), "1".into());
                    m
                })
                .collect();
            let mut event = SqsEvent::default();
            event.records = records;
            async move {
                let ids: Vec<String> = event.records.iter().filter_map(|r| r.message_id.clone()).collect();
                let response = w.handle_batch(event).await;
                (items, ids, response)
            }
        });
        for (items, ids, response) in futures::future::join_all(runs.collect::<Vec<_>>()).await {
            invocations += 1;
            let failed: Vec<String> =
                response.map(|r| r.batch_item_failures.into_iter().map(|f| f.item_identifier).collect()).unwrap_or(ids.clone());
            for (item, id) in items.iter().zip(&ids) {
                if failed.contains(id) {
                    // The visibility timeout: SQS hands a failed message out again later.
                    failures += 1;
                    medic_core::ports::WorkQueue::enqueue(&**queue, item, Duration::from_secs(5)).await?;
                }
            }
        }
    }
    Ok((invocations, failures))
}

/// What a storm did, from the simulator's own log: apps healthy at the end, refreshes of an app
/// beyond its first (duplicate actions), calls to the apps and in all, the bytes answered, calls
/// per remediated app, and the budget's bound on the drain (stale apps at the refresh rate).
pub(crate) struct Tally {
    pub healed: usize,
    pub duplicates: usize,
    pub app_calls: usize,
    pub calls: usize,
    pub bytes: usize,
    pub per_app: f64,
    pub bound: f64,
}

pub(crate) fn tally(sim: &ArgoSim, o: &Options) -> Tally {
    let log = sim.requests();
    let app_calls: Vec<&LoggedRequest> = log.iter().filter(|r| r.path.starts_with("/api/v1/applications/")).collect();
    let mut refreshes: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for r in app_calls.iter().filter(|r| r.query.iter().any(|(k, _)| k == "refresh")) {
        *refreshes.entry(r.path.as_str()).or_default() += 1;
    }
    let healed = (1..=o.apps)
        .filter(|i| sim.app("argocd", &format!("app-{i:05}")).is_some_and(|a| a["status"]["health"]["status"] == "Healthy"))
        .count();
    let (calls, bytes) = account(&log);
    Tally {
        healed,
        duplicates: refreshes.values().map(|n| n.saturating_sub(1)).sum(),
        app_calls: app_calls.len(),
        calls,
        bytes,
        per_app: app_calls.len() as f64 / o.stale.max(1) as f64,
        bound: o.stale as f64 * 60.0 / f64::from(o.refresh_per_minute.max(1)),
    }
}

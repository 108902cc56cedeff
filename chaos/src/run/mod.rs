//! The harness: the stack, the event source with its kills, the events, the faults, the account.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use chrono::{DateTime, Utc};
use medic_adapters::budget::BudgetRates;
use medic_core::PolicyConfig;
use medic_core::app::IDEMPOTENCY_INFO_NAME;
use medic_sim::moto::{MotoServer, unique};
use medic_sim::{
    ArgoSim, Fault, FaultKind, Outcomes, Rebase, RefreshOutcome, SLACK_BOT_TOKEN, SLACK_CHANNEL, SimConfig, SlackFault, SlackFaultKind,
    SlackSim, SlackSimConfig, SyncOutcome,
};
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::mpsc;

use crate::failpoints::BOUNDARIES;
use crate::function::{Call, Kind};
use crate::proxy::{AwsFault, AwsFaultKind, AwsProxy, Service};
use crate::worker::{Invocation, READY};

mod account;
mod events;
mod outage;
mod process;
mod source;

use account::*;
use events::*;
use outage::*;
use process::*;
use source::*;

/// A sweep's answer and when it came: its run's counts as JSON.
type SweepAnswer = (DateTime<Utc>, String);

/// How long the functions take to see `medic switch` (their switch cache, not scaled: it is no
/// timing of the pipeline's, and 30 s is what the docs promise).
const SWITCH_TAKES_EFFECT: Duration = medic_core::switch::TAKES_EFFECT_WITHIN;

/// Production timings (template.yaml's defaults), before scaling.
const WORKER_TIMEOUT_SECS: u64 = 60;
const VISIBILITY_SECS: u64 = 360;
const MAX_RECEIVE_COUNT: u32 = 5;
const SWEEP_WINDOW_SECS: u64 = 900;
const SLACK_POST_INTERVAL_MS: u64 = 1000;
const BATCH_SIZE: i32 = 10;
/// How often a person clicks a button again while slack-actions is short of kills.
const CLICK_AGAIN_EVERY: Duration = Duration::from_secs(5);
/// The work queue's `ReceiveMessageWaitTimeSeconds` (template.yaml): Lambda's poller long-polls.
/// Not a production timing of Argo Medic's (an empty poll's wait, not a delay), so not scaled.
const RECEIVE_WAIT_SECS: i32 = 20;

const WEBHOOK_SECRET: &str = "chaos-webhook-secret-not-for-production";
const REFRESH_SECRET: &str = "chaos-refresh-key-not-for-production";
const SIGNING_SECRET: &str = "chaos-slack-signing-secret-not-for-production";
const WORK_ITEM_KEY: &str = "chaos-work-item-key-generated-for-this-run-only";
const CLICKER: &str = "U0CHAOS001";
/// When the sample apps were captured (their timestamps are moved to the present).

#[derive(clap::Args, Debug, Clone)]
pub struct Options {
    /// Events to send: notification deliveries (each three times, shuffled), signed refreshes and
    /// button clicks.
    #[arg(long, default_value_t = 10_000)]
    pub events: usize,
    /// Apps in trouble.
    #[arg(long, default_value_t = 300)]
    pub apps: usize,
    /// Every production timing is divided by this (whole seconds, at least 1 s each).
    #[arg(long, default_value_t = 10)]
    pub scale: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Kills at each named boundary, at least.
    #[arg(long, default_value_t = 20)]
    pub kills_per_boundary: usize,
    /// Kills at random moments of an invocation.
    #[arg(long, default_value_t = 20)]
    pub random_kills: usize,
    /// Worker processes at once (the event source's maximum concurrency).
    #[arg(long, default_value_t = 2)]
    pub workers: usize,
    /// Report boundaries that got fewer kills than asked instead of failing: a short run can go
    /// quiet before every boundary was reached (the smoke in `make test`).
    #[arg(long)]
    pub kills_are_goals: bool,
    /// At most this many notification deliveries in all: the plan's and the fresh trouble fed
    /// after it to reach the boundaries still short of kills (default: `--events` and a quarter
    /// more). Clicks after the plan do not count against it: a run that clicks while slack-actions
    /// is short of kills must not starve the worker's boundaries of their trouble.
    #[arg(long)]
    pub max_events: Option<usize>,
    /// An experiment: the work items of the first N accepted clicks fail every time they are
    /// received (the event source withholds them from the worker, which is how a failing handler
    /// looks to SQS), until SQS moves them to the DLQ.
    #[arg(long, default_value_t = 0)]
    pub dead_letter_clicks: usize,
    /// After settling, redrive the DLQ to the work queue once (as the runbook's
    /// `start-message-move-task` does) and settle again.
    #[arg(long)]
    pub redrive: bool,
    /// Kills of each other function process (ingest, slack-actions, sweeper) in the middle of a
    /// call, at least.
    #[arg(long, default_value_t = 10)]
    pub kills_per_kind: usize,
    /// Fleet outages inside the run: the first a Git host, the second a destination cluster,
    /// each down for a share of the apps and then back.
    #[arg(long, default_value_t = 2)]
    pub outages: usize,
    /// Apps behind each outage's host or cluster (at least the sweeper's ten for a cause).
    #[arg(long, default_value_t = 40)]
    pub outage_apps: usize,
    /// How long each outage lasts, in sweep windows.
    #[arg(long, default_value_t = 2)]
    pub outage_windows: u32,
    /// `medic switch off` halfway through the feed, for this many seconds, then `act` (0: never).
    /// Longer than the switch's 30 s cache, or nothing can be seen held back.
    #[arg(long, default_value_t = 60)]
    pub switch_off_secs: u64,
    /// Give up waiting for the fleet to settle after this many seconds.
    #[arg(long, default_value_t = 900)]
    pub max_seconds: u64,
}

/// The scaled timings.
#[derive(Debug, Clone, Copy)]
struct Timings {
    scale: u64,
    timeout: Duration,
    visibility: Duration,
    sweep_window: Duration,
    settle: Duration,
    refused_wait: Duration,
    slack_post_interval: Duration,
}

impl Timings {
    fn new(scale: u64) -> Self {
        let s = |secs: u64| Duration::from_secs((secs / scale).max(1));
        let policy = PolicyConfig::default();
        Self {
            scale,
            timeout: s(WORKER_TIMEOUT_SECS),
            visibility: s(VISIBILITY_SECS),
            sweep_window: s(SWEEP_WINDOW_SECS),
            settle: s(policy.settle_secs as u64),
            refused_wait: s(policy.refused_wait_secs as u64),
            slack_post_interval: Duration::from_millis(SLACK_POST_INTERVAL_MS / scale),
        }
    }

    /// The policy with Argo Medic's own waits scaled. Thresholds read against the apps' own
    /// timestamps (staleness, progress and operation timeouts) stay as they are: the simulator's
    /// clock is not scaled.
    fn policy(&self) -> PolicyConfig {
        let d = PolicyConfig::default();
        PolicyConfig {
            instance_id: "chaos".into(),
            settle_secs: self.settle.as_secs() as i64,
            recheck_secs: (d.recheck_secs as u64 / self.scale).max(1) as i64,
            refused_wait_secs: self.refused_wait.as_secs() as i64,
            ..d
        }
    }

    /// How long a ladder may take before its incident must have reached a human: every rung
    /// seen by a sweep and settled, and every refusal waited out.
    fn ladder_bound(&self) -> Duration {
        let p = PolicyConfig::default();
        (self.sweep_window + self.settle + self.timeout) * 4 + self.refused_wait * p.max_refusals as u32
    }
}

/// An app of the run and what its trouble is.
struct Template {
    file: &'static str,
    webhook: Option<&'static str>,
    outcomes: Outcomes,
}

fn templates() -> Vec<Template> {
    let o = |refresh, hard_refresh, sync| Outcomes { refresh, hard_refresh, sync, lost_syncs: 0, comparison_error: None };
    vec![
        // A sync fixes it (a transient apply failure of a person's sync).
        Template {
            file: "sync-failed-transient.json",
            webhook: Some("sync-failed-transient.json"),
            outcomes: o(RefreshOutcome::Noop, RefreshOutcome::Noop, SyncOutcome::Succeed),
        },
        // A hook failed: a human, through Slack.
        Template { file: "hook-failed.json", webhook: Some("hook-failed.json"), outcomes: Outcomes::default() },
        // A hard refresh fixes it.
        Template {
            file: "cached-manifest-error.json",
            webhook: Some("cached-manifest-error.json"),
            outcomes: o(RefreshOutcome::Noop, RefreshOutcome::Heal, SyncOutcome::Succeed),
        },
        // Stale: a refresh fixes it.
        Template {
            file: "stale-progressing.json",
            webhook: Some("stale-progressing.json"),
            outcomes: o(RefreshOutcome::Heal, RefreshOutcome::Heal, SyncOutcome::Succeed),
        },
        // Nothing Argo Medic does helps: the whole ladder, then a human.
        Template { file: "custom-health-progressing.json", webhook: None, outcomes: Outcomes::default() },
        // A sync after a failed auto-sync (the retries were exhausted).
        Template {
            file: "auto-sync-retries-exhausted.json",
            webhook: Some("auto-sync-retries-exhausted.json"),
            outcomes: o(RefreshOutcome::Noop, RefreshOutcome::Noop, SyncOutcome::Succeed),
        },
    ]
}

/// moto_server started through `chaos/moto/launch.py` (no request log, transactions without a
/// copy of the whole table; see the file), with the virtualenv's Python.
fn moto_launcher() -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let moto_server = medic_sim::moto::binary();
    let python = moto_server.parent().map(|d| d.join("python")).filter(|p| p.exists());
    let Some(python) = python else {
        anyhow::bail!("no Python beside {}: run `make venv`", moto_server.display());
    };
    let path = std::env::temp_dir().join(format!("medic-chaos-moto-{}.py", std::process::id()));
    std::fs::write(&path, format!("#!{}\n{}", python.display(), include_str!("../../moto/launch.py")))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(path)
}

fn events_dir() -> PathBuf {
    medic_sim::workspace_root().join("events")
}

/// What happened, counted.
#[derive(Default, Clone)]
struct Tally {
    kills: BTreeMap<String, usize>,
    /// Argo CD and Slack faults injected, by kind (the AWS ones are counted by the proxy as they
    /// hit).
    faults: BTreeMap<String, usize>,
    events: usize,
    /// Clicks answered `accepted`, and when.
    accepted_clicks: BTreeMap<String, chrono::DateTime<Utc>>,
    /// Deliveries by kind: notification, signed refresh, click (a double click is two).
    delivered: BTreeMap<&'static str, usize>,
    /// Signed refreshes answered 202: app → when they were sent.
    refreshes_requested: BTreeMap<String, Vec<chrono::DateTime<Utc>>>,
    invocations: usize,
    outages: Vec<OutageWindow>,
    switched_off: Option<SwitchedOff>,
}

type Shared = Arc<Mutex<Tally>>;

/// Notifications and signed refreshes sent at once (as many argocd-notifications deliveries
/// arrive together): also how many ingest processes run side by side.
const IN_FLIGHT: usize = 8;

/// The worker processes' refresh reports (`CHAOS-REFRESH-SENT`/`-ENDED`), in order: process id,
/// sent (or ended), key.
static REFRESH_LOG: Mutex<Vec<(u32, bool, String)>> = Mutex::new(Vec::new());

/// Keys of refresh rungs whose refresh was sent again by another process after its first sender
/// died holding the claim (a takeover that re-sends without looking at `reconciledAt`).
fn refreshes_resent_on_takeover() -> Vec<String> {
    let log = REFRESH_LOG.lock().unwrap();
    // key → processes that sent under it and did not end their claim.
    let mut open: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
    let mut resent = BTreeSet::new();
    for (pid, sent, key) in log.iter() {
        let holders = open.entry(key.as_str()).or_default();
        if *sent {
            if holders.iter().any(|p| p != pid) {
                resent.insert(key.clone());
            }
            holders.insert(*pid);
        } else {
            holders.remove(pid);
        }
    }
    resent.into_iter().collect()
}

/// Whether the simulator shows app `name` synced and healthy.
fn calm(argo: &ArgoSim, name: &str) -> bool {
    let app = argo.app("argocd", name).unwrap_or_default();
    app["status"]["sync"]["status"] == "Synced" && app["status"]["health"]["status"] == "Healthy"
}

pub async fn run(o: Options) -> anyhow::Result<bool> {
    let t = Timings::new(o.scale);
    let started = Instant::now();
    let mut rng = StdRng::seed_from_u64(o.seed);
    eprintln!(
        "chaos: seed {}, time scale 1/{} (worker timeout {}s, visibility {}s, sweep window {}s, settle {}s), {} apps, {} events, {} workers",
        o.seed,
        t.scale,
        t.timeout.as_secs(),
        t.visibility.as_secs(),
        t.sweep_window.as_secs(),
        t.settle.as_secs(),
        o.apps,
        o.events,
        o.workers
    );

    // The stack: one moto_server for SQS and one for DynamoDB (one Python process each), the
    // fault proxy in front of them, queue and DLQ, table, simulators. The harness's own calls go
    // straight to moto.
    let launcher = moto_launcher()?;
    let (moto_sqs, moto_ddb) = tokio::task::spawn_blocking(move || {
        std::thread::scope(|s| {
            let sqs = s.spawn(|| MotoServer::start_program(launcher.clone()));
            let ddb = s.spawn(|| MotoServer::start_program(launcher.clone()));
            (sqs.join(), ddb.join())
        })
    })
    .await?;
    let (moto_sqs, moto_ddb) = (
        moto_sqs.map_err(|_| anyhow::anyhow!("moto_server (SQS) did not start"))?,
        moto_ddb.map_err(|_| anyhow::anyhow!("moto_server (DynamoDB) did not start"))?,
    );
    let proxy = Arc::new(AwsProxy::start(&moto_sqs.url, &moto_ddb.url).await?);
    let sdk = medic_adapters::aws::sdk_config(Some(&moto_sqs.url)).await;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let ddb = aws_sdk_dynamodb::Client::from_conf(aws_sdk_dynamodb::config::Builder::from(&sdk).endpoint_url(&moto_ddb.url).build());
    // The event source polls and deletes as Lambda's poller does, through the faulty listener.
    let sqs_polled = aws_sdk_sqs::Client::new(&medic_adapters::aws::sdk_config(Some(&proxy.url)).await);
    let dlq_url = sqs.create_queue().queue_name(unique("chaos-dlq")).send().await?.queue_url.unwrap_or_default();
    let dlq_arn = sqs
        .get_queue_attributes()
        .queue_url(&dlq_url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await?
        .attributes
        .unwrap_or_default()
        .remove(&QueueAttributeName::QueueArn)
        .unwrap_or_default();
    let queue_url = sqs
        .create_queue()
        .queue_name(unique("chaos-work"))
        .attributes(QueueAttributeName::VisibilityTimeout, t.visibility.as_secs().to_string())
        .attributes(QueueAttributeName::ReceiveMessageWaitTimeSeconds, RECEIVE_WAIT_SECS.to_string())
        .attributes(
            QueueAttributeName::RedrivePolicy,
            format!(r#"{{"deadLetterTargetArn":"{dlq_arn}","maxReceiveCount":"{MAX_RECEIVE_COUNT}"}}"#),
        )
        .send()
        .await?
        .queue_url
        .unwrap_or_default();
    let table = unique("chaos-state");
    medic_adapters::dynamodb::create_table(&ddb, &table).await.map_err(|e| anyhow::anyhow!(e))?;
    let argo = Arc::new(ArgoSim::start(SimConfig::default()).await?);
    let slack = Arc::new(SlackSim::start(SlackSimConfig::default()).await?);

    // The fleet: copies of the sample apps, one trouble each.
    let dir = std::env::temp_dir().join(unique("medic-chaos-apps"));
    std::fs::create_dir_all(&dir)?;
    let mut webhooks: Vec<String> = Vec::new();
    let mut names: Vec<(String, String)> = Vec::new();
    let templates = templates();
    for i in 0..o.apps {
        let tpl = &templates[i % templates.len()];
        let mut app: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(events_dir().join("apps").join(tpl.file))?)?;
        let name = format!("{}-{i}", app["metadata"]["name"].as_str().unwrap_or("app"));
        app["metadata"]["name"] = name.clone().into();
        names.push((name.clone(), app["spec"]["project"].as_str().unwrap_or_default().to_owned()));
        std::fs::write(dir.join(format!("{name}.json")), serde_json::to_vec(&app)?)?;
        if let Some(w) = tpl.webhook {
            let mut body: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(events_dir().join("webhook").join(w))?)?;
            body["app"]["name"] = name.clone().into();
            webhooks.push(body.to_string());
        }
    }
    argo.load_dir(&dir, Some(Rebase::samples_to(Utc::now())))?;
    for (i, (name, _)) in names.iter().enumerate() {
        argo.set_outcomes(name, templates[i % templates.len()].outcomes.clone());
    }
    std::fs::remove_dir_all(&dir).ok();
    let mut outage_plans = Vec::new();
    for k in 0..o.outages {
        let plan = plan_outage(&argo, k, o.outage_apps)?;
        names.extend(plan.apps.iter().cloned());
        outage_plans.push(plan);
    }

    // The functions' environment, as template.yaml sets it (secrets by value, as locally).
    let env: HashMap<String, String> = [
        // The functions the harness runs reach moto through the proxy's clean listener; the
        // worker processes through its faulty one (below).
        ("AWS_ENDPOINT_URL", proxy.clean_url.clone()),
        ("AWS_EC2_METADATA_DISABLED", "true".into()),
        ("MEDIC_INSTANCE_ID", "chaos".into()),
        ("QUEUE_URL", queue_url.clone()),
        ("TABLE_NAME", table.clone()),
        ("ARGOCD_SERVER", argo.base_url()),
        ("ARGOCD_AUTH_TOKEN", SimConfig::default().tokens[0].token.clone()),
        ("MEDIC_WEBHOOK_SECRET", WEBHOOK_SECRET.into()),
        ("MEDIC_REFRESH_SECRET", REFRESH_SECRET.into()),
        ("MEDIC_WORK_ITEM_KEY", WORK_ITEM_KEY.into()),
        ("SLACK_CHANNEL", SLACK_CHANNEL.into()),
        ("SLACK_TOKEN", SLACK_BOT_TOKEN.into()),
        ("SLACK_API_URL", slack.api_url()),
        ("SLACK_POST_INTERVAL_MS", t.slack_post_interval.as_millis().to_string()),
        ("SLACK_SIGNING_SECRET", SIGNING_SECRET.into()),
        ("SLACK_ALLOWED_USERS", format!(r#"{{"*": ["{CLICKER}"]}}"#)),
        ("MEDIC_DRY_RUN", "false".into()),
        ("MEDIC_FUNCTION_TIMEOUT_SECONDS", t.timeout.as_secs().to_string()),
        ("MEDIC_MAX_RECEIVE_COUNT", MAX_RECEIVE_COUNT.to_string()),
        ("MEDIC_RECHECK_SECONDS", t.sweep_window.as_secs().to_string()),
        ("MEDIC_WORKER_MAX_CONCURRENCY", o.workers.to_string()),
        // Read by the chaos worker process only: the worker's waits that no setting reaches.
        (crate::worker::SCALE_VAR, t.scale.to_string()),
        // Budgets are rates: a time scaled down by the factor scales them up by it.
        ("MEDIC_REFRESH_PER_MINUTE", (BudgetRates::default().refresh_per_minute as u64 * t.scale).to_string()),
        ("MEDIC_HARD_REFRESH_PER_MINUTE", (BudgetRates::default().hard_refresh_per_minute as u64 * t.scale).to_string()),
        ("MEDIC_SYNC_PER_MINUTE", (BudgetRates::default().sync_per_minute as u64 * t.scale).to_string()),
        ("MEDIC_POLICY_CONFIG", serde_json::to_string(&t.policy())?),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    // Every function process reaches moto through the proxy's faulty listener.
    let mut worker_env = env.clone();
    worker_env.insert("AWS_ENDPOINT_URL".into(), proxy.url.clone());

    let tally: Shared = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let exe = std::env::current_exe()?;
    let arming = Arc::new(Arming::new(o.kills_per_boundary, o.random_kills));
    let pool = |kind: Kind, concurrency: usize, salt: u64| {
        Arc::new(FunctionPool::new(
            kind,
            exe.clone(),
            worker_env.clone(),
            concurrency,
            o.kills_per_kind,
            o.seed ^ salt,
            Arc::clone(&arming),
        ))
    };
    let ingest = pool(Kind::Ingest, IN_FLIGHT, 0x1a9e);
    let actions = pool(Kind::SlackActions, 2, 0xac7);
    let sweeper = pool(Kind::Sweeper, 1, 0x5eeb);

    // The event source: one slot per concurrent worker process. Its arming is the pools' (a second
    // one here once left the pools' feed progress at 0, so each function got one kill at most).
    let withheld = Arc::new(Withheld { quota: Mutex::new(o.dead_letter_clicks), ..Withheld::default() });
    let mut slots = Vec::new();
    for slot in 0..o.workers {
        let source = EventSource {
            exe: exe.clone(),
            env: worker_env.clone(),
            sqs: sqs_polled.clone(),
            queue_url: queue_url.clone(),
            timings: t,
            tally: Arc::clone(&tally),
            arming: Arc::clone(&arming),
            stop: Arc::clone(&stop),
            withheld: Arc::clone(&withheld),
        };
        let seed = o.seed.wrapping_add(1 + slot as u64);
        slots.push(tokio::spawn(async move { source.run(StdRng::seed_from_u64(seed)).await }));
    }

    // A progress line a minute, for long runs.
    let progress = {
        let (tally, proxy, sqs, queue_url) = (Arc::clone(&tally), Arc::clone(&proxy), sqs.clone(), queue_url.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(60)).await;
                let (visible, in_flight, _) = depth(&sqs, &queue_url).await;
                let (events, invocations, kills) = {
                    let t = tally.lock().unwrap();
                    (t.events, t.invocations, t.kills.values().sum::<usize>())
                };
                let busiest = proxy
                    .stats()
                    .into_iter()
                    .take(3)
                    .map(|(op, s)| format!("{op} {}x{:.0?}", s.calls, s.total / s.calls.max(1) as u32))
                    .collect::<Vec<_>>()
                    .join(", ");
                eprintln!(
                    "chaos: [{:.0?}] {events} events, {invocations} invocations, {kills} kills, queue {visible} visible / {in_flight} in flight; moto: {busiest}",
                    started.elapsed()
                );
            }
        })
    };

    // The sweeper, on its schedule (a few times per window). Each run's counts are kept: an
    // outage app left in trouble is read with the outage's turns.
    let sweeps: Arc<Mutex<Vec<SweepAnswer>>> = Arc::default();
    let sweeping = {
        let (sweeper, stop, sweeps) = (Arc::clone(&sweeper), Arc::clone(&stop), Arc::clone(&sweeps));
        let every = (t.sweep_window / 3).max(Duration::from_secs(1));
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                match sweeper.call(&Call::Sweep).await {
                    Ok(Called::Answered(a)) if a.status != 200 => eprintln!("chaos: sweep failed: {}", a.body),
                    Ok(Called::Answered(a)) => sweeps.lock().unwrap().push((Utc::now(), a.body)),
                    Ok(_) => {}
                    Err(e) => eprintln!("chaos: a sweeper process: {e}"),
                }
                tokio::time::sleep(every).await;
            }
        })
    };

    // Faults on the Argo CD and Slack side, in a window: while events flow.
    let faults_on = Arc::new(AtomicBool::new(true));
    let faulting = {
        let (argo, slack, stop, tally) = (Arc::clone(&argo), Arc::clone(&slack), Arc::clone(&faults_on), Arc::clone(&tally));
        let mut rng = StdRng::seed_from_u64(o.seed ^ 0x5eed);
        let request_timeout = t.timeout / 3;
        tokio::spawn(async move {
            // `stop` here is the fault window.
            while stop.load(Ordering::SeqCst) {
                let which = rng.random_range(0..6);
                let name = [
                    "argo 503",
                    "argo slower than the timeout",
                    "argo sync applied then 504",
                    "argo sync applied then dropped",
                    "argo refresh applied then dropped",
                    "",
                ][which];
                let fault = match which {
                    0 => Fault {
                        path_contains: None,
                        method: Some("GET".into()),
                        kind: FaultKind::Status { code: 503, retry_after_secs: None },
                        times: 3,
                    },
                    1 => Fault {
                        path_contains: None,
                        method: Some("GET".into()),
                        kind: FaultKind::Latency(request_timeout + Duration::from_millis(500)),
                        times: 1,
                    },
                    2 => Fault {
                        path_contains: Some("/sync".into()),
                        method: Some("POST".into()),
                        kind: FaultKind::AppliedThenStatus { code: 504 },
                        times: 1,
                    },
                    3 => Fault {
                        path_contains: Some("/sync".into()),
                        method: Some("POST".into()),
                        kind: FaultKind::AppliedThenDrop,
                        times: 1,
                    },
                    4 => Fault {
                        path_contains: Some("refresh=".into()),
                        method: Some("GET".into()),
                        kind: FaultKind::AppliedThenDrop,
                        times: 1,
                    },
                    _ => {
                        let (kind, name) = if rng.random_bool(0.5) {
                            (SlackFaultKind::RateLimited { retry_after_secs: 1 }, "slack 429")
                        } else {
                            (SlackFaultKind::DropAfterApplying, "slack post applied then dropped")
                        };
                        slack.inject(SlackFault { method: Some("chat.postMessage".into()), kind, times: 1 });
                        *tally.lock().unwrap().faults.entry(name.into()).or_default() += 1;
                        tokio::time::sleep(Duration::from_millis(1500)).await;
                        continue;
                    }
                };
                argo.inject(fault);
                *tally.lock().unwrap().faults.entry(name.into()).or_default() += 1;
                tokio::time::sleep(Duration::from_millis(1500)).await;
            }
        })
    };
    // Faults on the AWS side, in the same window: throttles, 500s and answers dropped after the
    // write, on the worker processes' and the event source's way to moto.
    let aws_faulting = {
        let (proxy, window) = (Arc::clone(&proxy), Arc::clone(&faults_on));
        let mut rng = StdRng::seed_from_u64(o.seed ^ 0xa75);
        tokio::spawn(async move {
            while window.load(Ordering::SeqCst) {
                let service = if rng.random_bool(0.5) { Service::DynamoDb } else { Service::Sqs };
                let kind = match rng.random_range(0..4) {
                    0 => AwsFaultKind::Throttle,
                    1 if service == Service::DynamoDb => AwsFaultKind::ProvisionedThroughput,
                    1 => AwsFaultKind::Throttle,
                    2 => AwsFaultKind::ServerError,
                    _ => AwsFaultKind::DropAfterWrite,
                };
                proxy.inject(AwsFault { service, kind, times: rng.random_range(1..=3) });
                tokio::time::sleep(Duration::from_millis(1000)).await;
            }
            proxy.clear();
        })
    };

    // The outages: each begins when the feed is a share through (the first at a fifth, the next
    // a quarter later) and lasts its sweep windows; kills and faults go on through them and
    // through the waves after them.
    let outage_span = t.sweep_window * o.outage_windows;
    let mut outaging = tokio::task::JoinSet::new();
    let scale = t.scale;
    for (k, plan) in outage_plans.into_iter().enumerate() {
        let (argo, ingest, tally, arming) = (Arc::clone(&argo), Arc::clone(&ingest), Arc::clone(&tally), Arc::clone(&arming));
        outaging.spawn(async move {
            let share = 0.2 + 0.25 * k as f64;
            while arming.progress() < share {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            begin_outage(&argo, &plan, &ingest, &tally).await?;
            tokio::time::sleep(outage_span).await;
            end_outage(&argo, &plan, &tally, outage_span, scale);
            anyhow::Ok(())
        });
    }
    // The switch: `medic switch off` halfway through the feed (the same write the CLI makes),
    // `act` again after `--switch-off-secs`.
    let switching = (o.switch_off_secs > 0).then(|| {
        let (arming, tally) = (Arc::clone(&arming), Arc::clone(&tally));
        let store = medic_adapters::dynamodb::DynamoDbStore::new(ddb.clone(), &table, "chaos");
        let off_for = Duration::from_secs(o.switch_off_secs);
        tokio::spawn(async move {
            use medic_core::switch::{Mode, SwitchStore};
            while arming.progress() < 0.5 {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            let off = Utc::now();
            store.write_mode(Mode::Off, "medic switch (chaos)").await?;
            tally.lock().unwrap().switched_off = Some(SwitchedOff { off, on: None, takes_effect: SWITCH_TAKES_EFFECT });
            eprintln!("chaos: switched off for {off_for:?}");
            tokio::time::sleep(off_for).await;
            store.write_mode(Mode::Act, "medic switch (chaos)").await?;
            if let Some(s) = tally.lock().unwrap().switched_off.as_mut() {
                s.on = Some(Utc::now());
            }
            eprintln!("chaos: switched back to act");
            anyhow::Ok(())
        })
    });

    // The events: every notification three times, shuffled; signed refreshes; clicks.
    let mut plan: Vec<Event> = Vec::new();
    let clicks = (o.events * 3 / 100).max(2);
    let refreshes = (o.events * 3 / 100).max(2);
    for w in webhooks.iter().cycle() {
        if plan.len() + 3 + clicks + refreshes > o.events {
            break;
        }
        for _ in 0..3 {
            plan.push(Event::Webhook(w.clone()));
        }
    }
    for _ in 0..refreshes {
        let (name, project) = names[rng.random_range(0..names.len())].clone();
        plan.push(Event::Refresh { name, project });
    }
    for _ in 0..clicks {
        plan.push(Event::Click);
    }
    plan.shuffle(&mut rng);
    // Events go out several at a time, as many argocd-notifications deliveries arrive at once.
    const MAX_BACKLOG: usize = 300;
    let feed_for = Duration::from_secs((plan.len() as u64 / 100).max(10));
    let pause = feed_for / plan.len().max(1) as u32 * IN_FLIGHT as u32;
    let mut clicked: BTreeSet<String> = BTreeSet::new();
    // Clicks of the plan that found no button yet (escalations take a while): made later.
    let mut clicks_owed = 0usize;
    let mut sending = tokio::task::JoinSet::new();
    let (planned, mut fed) = (plan.len().max(1), 0usize);
    for event in plan {
        match event {
            Event::Click => {
                if !click_one(&slack, &actions, &mut clicked, &tally, &mut rng, false).await? {
                    clicks_owed += 1;
                }
            }
            event => {
                let (ingest, tally) = (Arc::clone(&ingest), Arc::clone(&tally));
                sending.spawn(async move { send(&ingest, event, &tally).await });
            }
        }
        fed += 1;
        arming.set_progress(fed as f64 / planned as f64);
        if sending.len() >= IN_FLIGHT {
            while let Some(sent) = sending.join_next().await {
                sent??;
            }
            tokio::time::sleep(pause).await;
            // Back-pressure: no more than a few batches waiting. moto's SQS costs time in
            // proportion to the queue's depth on every send and receive (it counts the messages
            // for the queue's attributes each time), so an unbounded backlog slows everything.
            while depth(&sqs, &queue_url).await.0 > MAX_BACKLOG {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    }
    while let Some(sent) = sending.join_next().await {
        sent??;
    }
    eprintln!("chaos: {} events sent in {:.0?}", tally.lock().unwrap().events, started.elapsed());
    faults_on.store(false, Ordering::SeqCst);
    arming.set_progress(1.0);

    // Settle: until every boundary has its kills and the queue is quiet for two visibility
    // timeouts (or time runs out). Buttons that appear meanwhile are clicked, the plan's clicks
    // that found none first. While boundaries are short of kills and no targeted kill came for a
    // while, fresh trouble keeps the run alive: a new app in trouble of the kind that reaches them
    // (a sync for the action boundaries, a hook failure for the Slack post), notified three times.
    let bound = t.ladder_bound();
    let deadline = started + Duration::from_secs(o.max_seconds);
    let max_events = o.max_events.unwrap_or(o.events + o.events / 4);
    let stall = (t.timeout * 2).max(Duration::from_secs(4));
    let mut fresh_at = Instant::now();
    let mut fresh = 0usize;
    // Fresh trouble is bounded by what the plan left of `max_events`, whatever the clicks spent.
    let mut fresh_room = max_events.saturating_sub(tally.lock().unwrap().events);
    let mut clicked_again_at = Instant::now();
    let mut quiet_since: Option<Instant> = None;
    let outage_names: Vec<String> = names.iter().filter(|(n, _)| n.contains("-outage")).map(|(n, _)| n.clone()).collect();
    let mut outages_over = false;
    let mut status_at = Instant::now();
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if clicks_owed > 0 && click_one(&slack, &actions, &mut clicked, &tally, &mut rng, false).await? {
            clicks_owed -= 1;
        } else if !actions.satisfied() && !o.kills_are_goals && clicked_again_at.elapsed() >= CLICK_AGAIN_EVERY {
            // slack-actions still short of kills: a person clicks a button again, now and then
            // (every second made a run of 2,000 planned events 2,808 clicks).
            clicked_again_at = Instant::now();
            click_one(&slack, &actions, &mut clicked, &tally, &mut rng, true).await?;
        }
        while let Some(done) = outaging.try_join_next() {
            done??;
        }
        outages_over = outaging.is_empty();
        let missing = arming.missing();
        let stalled = arming.since_last_kill() >= stall && fresh_at.elapsed() >= stall;
        let ingest_short = !ingest.satisfied() && !o.kills_are_goals;
        // Ingest is killed only while it receives: while it is short of kills, fresh trouble comes
        // whatever the other processes' kills (they kept a full run from ever stalling, and its
        // ingest stayed at 5 kills of 10).
        if ((!missing.is_empty() || arming.random_missing()) && stalled) || (ingest_short && fresh_at.elapsed() >= stall) {
            // The Slack boundary needs an escalation; every other one a sync's ladder.
            let mut kinds: Vec<usize> = Vec::new();
            let sync_short = missing.iter().filter(|b| **b != "in-slack-post").count();
            if sync_short > 0 || arming.random_missing() || ingest_short {
                kinds.push(0);
            }
            if sync_short > 1 {
                // Several action boundaries short: two ladders at once, so a redelivery's wait
                // (a visibility timeout) is not the run's pace.
                kinds.push(0);
            }
            if missing.contains(&"in-slack-post") {
                kinds.push(1);
            }
            for tpl in kinds {
                if fresh_room < 3 {
                    break;
                }
                fresh_room -= 3;
                let name = fresh_app(&argo, &templates[tpl], fresh).await?;
                fresh += 1;
                names.push(name.clone());
                let mut body: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(
                    events_dir().join("webhook").join(templates[tpl].webhook.unwrap_or_default()),
                )?)?;
                body["app"]["name"] = name.0.clone().into();
                for _ in 0..3 {
                    send(&ingest, Event::Webhook(body.to_string()), &tally).await?;
                }
            }
            fresh_at = Instant::now();
        }
        let (visible, in_flight, delayed) = depth(&sqs, &queue_url).await;
        let quiet = visible + in_flight + delayed == 0;
        quiet_since = if quiet { quiet_since.or(Some(Instant::now())) } else { None };
        let switched_back = switching.as_ref().is_none_or(|s| s.is_finished());
        let outage_apps_calm = outages_over && outage_names.iter().all(|n| calm(&argo, n));
        let kills_done = arming.satisfied() && (o.kills_are_goals || [&ingest, &actions, &sweeper].iter().all(|p| p.satisfied()));
        // Quiet for two visibility timeouts: nothing in flight, nothing delayed, nothing coming
        // back; the outages over and their waves through; the switch back on. Incidents younger
        // than the ladder's bound cannot be judged stuck yet; a longer run judges them.
        if kills_done && switched_back && outage_apps_calm && quiet_since.is_some_and(|q| q.elapsed() >= t.visibility * 2) {
            break;
        }
        if status_at.elapsed() >= Duration::from_secs(60) {
            // What the settle still waits for, once a minute: a long settle says why.
            status_at = Instant::now();
            let calm = outage_names.iter().filter(|n| calm(&argo, n)).count();
            let kills = arming.kills.lock().unwrap().clone();
            let short: Vec<String> =
                arming.missing().iter().map(|b| format!("{b} {}/{}", kills.get(*b).copied().unwrap_or(0), o.kills_per_boundary)).collect();
            eprintln!(
                "chaos: settling: boundaries short of kills {short:?}, random kills {}, {}, {}, {}; outage apps calm {calm}/{}, outages over {outages_over}; switch back {switched_back}; quiet for {:.0?}; {fresh} apps of fresh trouble",
                if arming.random_missing() { "short" } else { "done" },
                ingest.progress(),
                actions.progress(),
                sweeper.progress(),
                outage_names.len(),
                quiet_since.map(|q| q.elapsed()).unwrap_or_default(),
            );
        }
        if Instant::now() + Duration::from_secs(1) >= deadline
            || (std::env::var_os("MEDIC_CHAOS_VERBOSE").is_some() && started.elapsed().as_secs().is_multiple_of(10))
        {
            eprintln!(
                "chaos: out of time settling: kills done {kills_done}, switch back {switched_back}, outages over and calm {outage_apps_calm}, queue {visible} visible / {in_flight} in flight / {delayed} delayed"
            );
        }
    }
    if !outages_over {
        eprintln!("chaos: the run ended before its outages did");
    }
    // An outage app left in trouble has no incident when its outage held it, so the account
    // cannot call it stuck: its state here is what a long settle is read by.
    let troubled: Vec<&String> = outage_names.iter().filter(|n| !calm(&argo, n)).collect();
    if !troubled.is_empty() {
        // The outage's turns, sweep by sweep, and what Argo CD was asked of each app left.
        for (at, run) in sweeps.lock().unwrap().iter() {
            eprintln!("chaos:   sweep at {}: {run}", at.format("%H:%M:%S%.3f"));
        }
        for name in &troubled {
            let asked: Vec<String> = argo
                .requests()
                .iter()
                .filter(|r| r.path == format!("/api/v1/applications/{name}"))
                .map(|r| {
                    format!(
                        "{} {}{}",
                        r.at.format("%H:%M:%S%.3f"),
                        r.method,
                        r.query.iter().map(|(k, v)| format!(" {k}={v}")).collect::<String>()
                    )
                })
                .collect();
            eprintln!("chaos:   {name}: Argo CD was asked {} times: {asked:?}", asked.len());
        }
    }
    // What the state table says of them: their claims and their incident's timeline.
    let items = if troubled.is_empty() { Vec::new() } else { account::table_items(&ddb, &table).await.unwrap_or_default() };
    for name in troubled {
        let app = argo.app("argocd", name).unwrap_or_default();
        let pk = format!("APP#chaos#argocd/{name}");
        let mut told: Vec<String> = items
            .iter()
            .filter(|i| i.get("pk") == Some(&pk))
            .filter_map(|i| {
                let sk = i.get("sk")?;
                let line = if sk.starts_with("EVENT#") {
                    let event: serde_json::Value = serde_json::from_str(i.get("event")?).ok()?;
                    format!("{} {}: {}", event["at"].as_str()?, event["kind"].as_str()?, event["what"].as_str()?)
                } else if sk.starts_with("ACTION#") {
                    format!("{} claim {} {} {}", i.get("at")?, i.get("rung")?, i.get("status")?, i.get("outcome")?)
                } else {
                    format!("{sk} {}", i.get("opened_at").or(i.get("closed_at")).map_or("", String::as_str))
                };
                Some(line)
            })
            .collect();
        told.sort();
        for line in &told {
            eprintln!("chaos:   {name}: {line}");
        }
        let conditions: Vec<&str> =
            app["status"]["conditions"].as_array().into_iter().flatten().filter_map(|c| c["type"].as_str()).collect();
        eprintln!(
            "chaos: outage app {name} not calm at the end: sync {}, health {}, operation {}, conditions {conditions:?}, reconciled at {}",
            app["status"]["sync"]["status"],
            app["status"]["health"]["status"],
            app["status"]["operationState"]["phase"],
            app["status"]["reconciledAt"],
        );
    }
    if o.redrive {
        let unanswered = unanswered_clicks(&slack, &tally.lock().unwrap().accepted_clicks);
        let (in_dlq, _, _) = depth(&sqs, &dlq_url).await;
        eprintln!("chaos: before the redrive: {} accepted clicks unanswered, {in_dlq} messages in the DLQ", unanswered.len());
        let moved = redrive(&sqs, &dlq_url, &queue_url).await;
        eprintln!("chaos: redrove {moved} messages from the DLQ to the work queue");
        let mut quiet_since: Option<Instant> = None;
        while Instant::now() < deadline && quiet_since.is_none_or(|q| q.elapsed() < t.visibility * 2) {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let (visible, in_flight, delayed) = depth(&sqs, &queue_url).await;
            quiet_since = if visible + in_flight + delayed == 0 { quiet_since.or(Some(Instant::now())) } else { None };
        }
    }
    stop.store(true, Ordering::SeqCst);
    for s in slots {
        s.await.ok();
    }
    sweeping.await.ok();
    outaging.shutdown().await;
    if let Some(s) = switching {
        match s.await {
            Ok(Err(e)) => eprintln!("chaos: the switch could not be set: {e}"),
            Err(e) => eprintln!("chaos: the switch task: {e}"),
            Ok(Ok(())) => {}
        }
    }
    for p in [&ingest, &actions, &sweeper] {
        p.shutdown().await;
    }
    faulting.await.ok();
    aws_faulting.await.ok();
    progress.abort();

    // The account.
    let tally = tally.lock().unwrap().clone();
    let evidence = Evidence::gather(&argo, &slack, &ddb, &table, &names, &tally, bound, t.timeout, t.sweep_window / 3).await?;
    let account = account(&evidence, &names);
    let worker_kills: usize = tally.kills.values().sum();
    for (k, v) in &tally.kills {
        eprintln!("chaos: kills at {k}: {v}");
    }
    let kinds = [(Kind::Ingest, &ingest), (Kind::SlackActions, &actions), (Kind::Sweeper, &sweeper)];
    for (kind, p) in &kinds {
        eprintln!("chaos: kills of {} in the middle of a call: {}", kind.as_str(), p.kills());
    }
    let kills = worker_kills + kinds.iter().map(|(_, p)| p.kills()).sum::<usize>();
    for w in &tally.outages {
        eprintln!(
            "chaos: outage of {}: {} apps, from {} to {}",
            w.label,
            w.apps.len(),
            w.from.format("%H:%M:%S"),
            w.to.map_or_else(|| "(not over)".to_owned(), |t| t.format("%H:%M:%S").to_string())
        );
    }
    let mut faults = tally.faults.clone();
    faults.extend(proxy.applied());
    for (k, v) in &faults {
        eprintln!("chaos: faults: {k}: {v}");
    }
    let fault_count: usize = faults.values().sum();
    let resent = refreshes_resent_on_takeover();
    for key in &resent {
        eprintln!("chaos: refresh re-sent on a takeover: {key} (its first sender was killed holding the claim)");
    }
    eprintln!("chaos: {} refresh rungs re-sent on a takeover (not counted in D)", resent.len());
    for (op, s) in proxy.stats().iter().take(12) {
        eprintln!(
            "chaos: moto: {op}: {} calls, {:.1?} in all, {:.1?} each, {:.1?} at most",
            s.calls,
            s.total,
            s.total / s.calls.max(1) as u32,
            s.max
        );
    }
    for line in &account.details {
        eprintln!("chaos: {line}");
    }
    if o.dead_letter_clicks > 0 {
        let ids = withheld.ids.lock().unwrap().len();
        eprintln!(
            "chaos: experiment: {ids} click work items failed on every receive ({} receives)",
            withheld.receives.load(Ordering::SeqCst)
        );
    }
    let (dlq, _, _) = depth(&sqs, &dlq_url).await;
    for line in dead_letters(&sqs, &dlq_url).await {
        eprintln!("chaos: dead letter: {line}");
    }
    let delivered = |k: &str| tally.delivered.get(k).copied().unwrap_or(0);
    eprintln!(
        "chaos: events: {} notifications (each three times), {} signed refreshes, {} clicks ({:.1} % refreshes and clicks); {fresh} apps of fresh trouble",
        delivered("notification"),
        delivered("refresh"),
        delivered("click"),
        100.0 * (delivered("refresh") + delivered("click")) as f64 / tally.events.max(1) as f64
    );
    eprintln!(
        "chaos: {} invocations, {} messages in the DLQ, {} syncs, {} Slack parents, {:.0?} in all, seed {}, time scale 1/{}",
        tally.invocations,
        dlq,
        account.syncs,
        account.parents,
        started.elapsed(),
        o.seed,
        t.scale
    );
    let switch_line = match tally.switched_off {
        Some(_) => {
            format!("{} mutations or posts while switched off, {} mutations after act", account.acted_while_off, account.mutations_after_on)
        }
        None => "no switch-off".to_owned(),
    };
    // The first six counters keep the words and order of earlier releases; the new ones follow.
    println!(
        "chaos: {} events, {kills} kills, {} faults, {} duplicate actions, {} lost incidents, {} stuck incidents, {} closed in trouble, {} extra refreshes; {} lost actions (in L), {} apps escalated again; {switch_line}; {} timeline gaps",
        tally.events,
        fault_count,
        account.duplicates,
        account.lost,
        account.stuck,
        account.wrongly_closed,
        account.extra_refreshes,
        account.unperformed,
        account.repeated_escalations,
        account.timeline_gaps,
    );
    let mut enough = arming.satisfied() || o.kills_are_goals;
    if !arming.satisfied() {
        eprintln!("chaos: not every boundary got its kills: {:?}", tally.kills);
    }
    for (kind, p) in &kinds {
        if !p.satisfied() {
            eprintln!("chaos: {} got {} kills of {}", kind.as_str(), p.kills(), o.kills_per_kind);
            enough &= o.kills_are_goals;
        }
    }
    let resumed = tally.switched_off.is_none_or(|_| account.mutations_after_on > 0);
    if !resumed {
        eprintln!("chaos: nothing was done after the switch went back to act");
    }
    Ok(account.duplicates == 0
        && account.lost == 0
        && account.stuck == 0
        && account.wrongly_closed == 0
        && account.extra_refreshes == 0
        && account.acted_while_off == 0
        && account.timeline_gaps == 0
        && resumed
        && enough)
}

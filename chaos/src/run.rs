//! The harness: the stack, the event source with its kills, the events, the faults, the account.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use chrono::Utc;
use medic_adapters::budget::BudgetRates;
use medic_adapters::lambda_env::LambdaEnv;
use medic_core::PolicyConfig;
use medic_core::app::IDEMPOTENCY_INFO_NAME;
use medic_sim::moto::{moto, unique};
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
use crate::worker::{Invocation, READY};

/// Production timings (template.yaml's defaults), before scaling.
const WORKER_TIMEOUT_SECS: u64 = 60;
const VISIBILITY_SECS: u64 = 360;
const MAX_RECEIVE_COUNT: u32 = 5;
const SWEEP_WINDOW_SECS: u64 = 900;
const SLACK_POST_INTERVAL_MS: u64 = 1000;
const BATCH_SIZE: i32 = 10;

const WEBHOOK_SECRET: &str = "chaos-webhook-secret-not-for-production";
const REFRESH_SECRET: &str = "chaos-refresh-key-not-for-production";
const SIGNING_SECRET: &str = "chaos-slack-signing-secret-not-for-production";
const WORK_ITEM_KEY: &str = "chaos-work-item-key-generated-for-this-run-only";
const CLICKER: &str = "U0CHAOS001";
/// When the sample apps were captured (their timestamps are moved to the present).
const SAMPLES_CAPTURED_AT: &str = "2026-11-01T12:30:00Z";

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
    let o = |refresh, hard_refresh, sync| Outcomes { refresh, hard_refresh, sync };
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

fn events_dir() -> PathBuf {
    medic_sim::workspace_root().join("events")
}

/// What happened, counted.
#[derive(Default, Clone)]
struct Tally {
    kills: BTreeMap<String, usize>,
    faults: usize,
    events: usize,
    accepted_clicks: BTreeSet<String>,
    refreshes_requested: BTreeSet<String>,
    invocations: usize,
}

type Shared = Arc<Mutex<Tally>>;

static ENV: OnceLock<HashMap<String, String>> = OnceLock::new();

fn lookup(name: &str) -> Option<String> {
    ENV.get().and_then(|e| e.get(name).cloned())
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

    // The stack: queue and DLQ, table, simulators.
    let sdk = medic_adapters::aws::sdk_config(Some(&moto().url)).await;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let ddb = aws_sdk_dynamodb::Client::new(&sdk);
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
    argo.load_dir(&dir, Some(Rebase { captured_at: SAMPLES_CAPTURED_AT.parse()?, now: Utc::now() }))?;
    for (i, (name, _)) in names.iter().enumerate() {
        argo.set_outcomes(name, templates[i % templates.len()].outcomes.clone());
    }
    std::fs::remove_dir_all(&dir).ok();

    // The functions' environment, as template.yaml sets it (secrets by value, as locally).
    let env: HashMap<String, String> = [
        ("AWS_ENDPOINT_URL", moto().url.clone()),
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
        ("MEDIC_RECHECK_SECONDS", t.sweep_window.as_secs().to_string()),
        ("MEDIC_WORKER_MAX_CONCURRENCY", o.workers.to_string()),
        // Budgets are rates: a time scaled down by the factor scales them up by it.
        ("MEDIC_REFRESH_PER_MINUTE", (BudgetRates::default().refresh_per_minute as u64 * t.scale).to_string()),
        ("MEDIC_HARD_REFRESH_PER_MINUTE", (BudgetRates::default().hard_refresh_per_minute as u64 * t.scale).to_string()),
        ("MEDIC_SYNC_PER_MINUTE", (BudgetRates::default().sync_per_minute as u64 * t.scale).to_string()),
        ("MEDIC_POLICY_CONFIG", serde_json::to_string(&t.policy())?),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    ENV.set(env.clone()).map_err(|_| anyhow::anyhow!("the harness runs once per process"))?;
    let functions = LambdaEnv::from_lookup(lookup).await?;
    // Their EMF metrics would go to stdout, which carries the run's last line here.
    let quiet = || medic_adapters::telemetry::Metrics::quiet("chaos");
    let ingest = Arc::new(medic_ingest::Ingest { metrics: quiet(), ..medic_ingest::LambdaIngest::from_env(&functions).await? });
    let actions = Arc::new(medic_slack_actions::SlackActions {
        metrics: quiet(),
        ..medic_slack_actions::LambdaSlackActions::from_env(&functions).await?
    });
    let sweeper = Arc::new(medic_sweeper::Sweeper { metrics: quiet(), ..medic_sweeper::LambdaSweeper::from_env(&functions).await? });

    let tally: Shared = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let exe = std::env::current_exe()?;

    // The event source: one slot per concurrent worker process.
    let arming = Arc::new(Arming::new(o.kills_per_boundary, o.random_kills));
    let mut slots = Vec::new();
    for slot in 0..o.workers {
        let source = EventSource {
            exe: exe.clone(),
            env: env.clone(),
            sqs: sqs.clone(),
            queue_url: queue_url.clone(),
            timings: t,
            tally: Arc::clone(&tally),
            arming: Arc::clone(&arming),
            stop: Arc::clone(&stop),
        };
        let seed = o.seed.wrapping_add(1 + slot as u64);
        slots.push(tokio::spawn(async move { source.run(StdRng::seed_from_u64(seed)).await }));
    }

    // The sweeper, on its schedule (a few times per window).
    let sweeping = {
        let (sweeper, stop) = (Arc::clone(&sweeper), Arc::clone(&stop));
        let every = (t.sweep_window / 3).max(Duration::from_secs(1));
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                if let Err(e) = sweeper.run().await {
                    eprintln!("chaos: sweep failed: {e}");
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
            let mut n = 0usize;
            // `stop` here is the fault window.
            while stop.load(Ordering::SeqCst) {
                let fault = match rng.random_range(0..6) {
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
                        let kind = if rng.random_bool(0.5) {
                            SlackFaultKind::RateLimited { retry_after_secs: 1 }
                        } else {
                            SlackFaultKind::DropAfterApplying
                        };
                        slack.inject(SlackFault { method: Some("chat.postMessage".into()), kind, times: 1 });
                        n += 1;
                        tally.lock().unwrap().faults = n;
                        tokio::time::sleep(Duration::from_millis(1500)).await;
                        continue;
                    }
                };
                argo.inject(fault);
                n += 1;
                tally.lock().unwrap().faults = n;
                tokio::time::sleep(Duration::from_millis(1500)).await;
            }
        })
    };

    // The events: every notification three times, shuffled; signed refreshes; clicks.
    let mut plan: Vec<Event> = Vec::new();
    let clicks = (o.events * 3 / 100).max(2);
    let refreshes = (o.events * 3 / 100).max(2);
    while plan.len() + clicks + refreshes < o.events && !webhooks.is_empty() {
        for w in &webhooks {
            for _ in 0..3 {
                plan.push(Event::Webhook(w.clone()));
            }
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
    const IN_FLIGHT: usize = 8;
    let feed_for = Duration::from_secs((plan.len() as u64 / 100).max(10));
    let pause = feed_for / plan.len().max(1) as u32 * IN_FLIGHT as u32;
    let mut clicked: BTreeSet<String> = BTreeSet::new();
    let mut sending = tokio::task::JoinSet::new();
    for event in plan {
        match event {
            Event::Click => click_one(&slack, &actions, &mut clicked, &tally, &mut rng).await?,
            event => {
                let (ingest, tally) = (Arc::clone(&ingest), Arc::clone(&tally));
                sending.spawn(async move { send(&ingest, event, &tally).await });
            }
        }
        tally.lock().unwrap().events += 1;
        if sending.len() >= IN_FLIGHT {
            while let Some(sent) = sending.join_next().await {
                sent??;
            }
            tokio::time::sleep(pause).await;
        }
    }
    while let Some(sent) = sending.join_next().await {
        sent??;
    }
    eprintln!("chaos: {} events sent in {:.0?}", tally.lock().unwrap().events, started.elapsed());
    faults_on.store(false, Ordering::SeqCst);

    // Settle: until every boundary has its kills and the queue is quiet for a whole ladder bound
    // (or time runs out). Buttons that appear meanwhile are clicked too.
    let bound = t.ladder_bound();
    let deadline = started + Duration::from_secs(o.max_seconds);
    let mut quiet_since: Option<Instant> = None;
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if tally.lock().unwrap().accepted_clicks.len() < clicks / 2 {
            click_one(&slack, &actions, &mut clicked, &tally, &mut rng).await?;
        }
        let (visible, in_flight) = depth(&sqs, &queue_url).await;
        let quiet = visible + in_flight == 0;
        quiet_since = if quiet { quiet_since.or(Some(Instant::now())) } else { None };
        // Quiet for two visibility timeouts: nothing in flight, nothing coming back. Incidents
        // younger than the ladder's bound cannot be judged stuck yet; a longer run judges them.
        if arming.satisfied() && quiet_since.is_some_and(|q| q.elapsed() >= t.visibility * 2) {
            break;
        }
    }
    stop.store(true, Ordering::SeqCst);
    for s in slots {
        s.await.ok();
    }
    sweeping.await.ok();
    faulting.await.ok();

    // The account.
    let tally = tally.lock().unwrap().clone();
    let account = account(&argo, &slack, &ddb, &table, &names, &tally, bound).await?;
    let kills: usize = tally.kills.values().sum();
    for (k, v) in &tally.kills {
        eprintln!("chaos: kills at {k}: {v}");
    }
    for line in &account.details {
        eprintln!("chaos: {line}");
    }
    let (dlq, _) = depth(&sqs, &dlq_url).await;
    for line in dead_letters(&sqs, &dlq_url).await {
        eprintln!("chaos: dead letter: {line}");
    }
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
    println!(
        "chaos: {} events, {kills} kills, {} faults, {} duplicate actions, {} lost incidents, {} stuck incidents",
        tally.events, tally.faults, account.duplicates, account.lost, account.stuck
    );
    let enough = arming.satisfied() || o.kills_are_goals;
    if !arming.satisfied() {
        eprintln!("chaos: not every boundary got its kills: {:?}", tally.kills);
    }
    Ok(account.duplicates == 0 && account.lost == 0 && account.stuck == 0 && enough)
}

enum Event {
    Webhook(String),
    Refresh { name: String, project: String },
    Click,
}

/// Delivers a notification or a signed refresh request to ingest, as its callers would.
async fn send(ingest: &medic_ingest::LambdaIngest, event: Event, tally: &Shared) -> anyhow::Result<()> {
    match event {
        Event::Webhook(body) => {
            let request = lambda_http::http::Request::builder()
                .method("POST")
                .uri("https://ingest.lambda-url.us-east-1.on.aws/v1/events")
                .header("content-type", "application/json")
                .header("authorization", format!("Bearer {WEBHOOK_SECRET}"))
                .body(lambda_http::Body::from(body))?;
            let status = ingest.handle(request).await.status();
            if status != 202 {
                eprintln!("chaos: a webhook was answered {status}; argocd-notifications would retry it");
            }
        }
        Event::Refresh { name, project } => {
            let body = serde_json::json!({
                "apps": [{"name": name, "namespace": "argocd", "project": project}],
                "requestedAt": Utc::now().to_rfc3339(),
                "requestedBy": "chaos",
            })
            .to_string();
            let signature = medic_ingest::WebhookSecrets::new(REFRESH_SECRET, None).sign(body.as_bytes());
            let request = lambda_http::http::Request::builder()
                .method("POST")
                .uri("https://ingest.lambda-url.us-east-1.on.aws/v1/refresh")
                .header("content-type", "application/json")
                .header(medic_ingest::SIGNATURE_HEADER, signature)
                .body(lambda_http::Body::from(body))?;
            if ingest.handle(request).await.status() == 202 {
                tally.lock().unwrap().refreshes_requested.insert(format!("argocd/{name}"));
            }
        }
        Event::Click => {}
    }
    Ok(())
}

/// Clicks one button not clicked yet (twice: a double click), as a person in Slack would.
async fn click_one(
    slack: &SlackSim,
    actions: &medic_slack_actions::LambdaSlackActions,
    clicked: &mut BTreeSet<String>,
    tally: &Shared,
    rng: &mut StdRng,
) -> anyhow::Result<()> {
    let mut buttons: Vec<String> = Vec::new();
    for m in slack.messages(SLACK_CHANNEL) {
        for block in m.blocks.as_array().into_iter().flatten().filter(|b| b["type"] == "actions") {
            for e in block["elements"].as_array().into_iter().flatten() {
                let label = e["text"]["text"].as_str().unwrap_or_default();
                let id = e["value"].as_str().unwrap_or_default();
                if ["Acknowledge", "Hard refresh", "Sync"].iter().any(|l| label.starts_with(l)) && !clicked.contains(id) {
                    buttons.push(id.to_owned());
                }
            }
        }
    }
    let Some(id) = buttons.choose(rng).cloned() else { return Ok(()) };
    clicked.insert(id.clone());
    for _ in 0..2 {
        let response = actions.handle(signed_click(&id)?).await;
        let body: serde_json::Value = serde_json::from_slice(response.body().as_ref()).unwrap_or_default();
        if response.status() == 200 && body["accepted"] == true {
            tally.lock().unwrap().accepted_clicks.insert(id.clone());
        }
    }
    Ok(())
}

/// A Slack `block_actions` request for button `id`, signed as Slack signs it.
fn signed_click(id: &str) -> anyhow::Result<lambda_http::Request> {
    let payload = serde_json::json!({
        "type": "block_actions",
        "user": {"id": CLICKER, "username": "chaos"},
        "team": {"id": "T0CHAOS"},
        "actions": [{"action_id": id, "value": id, "type": "button"}],
    });
    let body: String = form_urlencoded::Serializer::new(String::new()).append_pair("payload", &payload.to_string()).finish();
    let ts = Utc::now().timestamp().to_string();
    let signature = medic_slack_actions::SigningSecret::new(SIGNING_SECRET, None).sign(&ts, body.as_bytes());
    Ok(lambda_http::http::Request::builder()
        .method("POST")
        .uri("https://actions.lambda-url.us-east-1.on.aws/")
        .header("content-type", "application/x-www-form-urlencoded")
        .header(medic_slack_actions::TIMESTAMP_HEADER, ts)
        .header(medic_slack_actions::SIGNATURE_HEADER, signature)
        .body(lambda_http::Body::from(body))?)
}

/// What ended in the DLQ: kind, app, and for requests what was asked.
async fn dead_letters(sqs: &aws_sdk_sqs::Client, url: &str) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..20 {
        let got = sqs.receive_message().queue_url(url).max_number_of_messages(10).visibility_timeout(600).send().await;
        let messages = got.ok().and_then(|o| o.messages).unwrap_or_default();
        if messages.is_empty() {
            break;
        }
        for m in messages {
            let body: serde_json::Value = serde_json::from_str(m.body().unwrap_or("{}")).unwrap_or_default();
            out.push(format!("{} {} {}", body["kind"], body["app"]["name"], body["requestedAction"]));
        }
    }
    out
}

async fn depth(sqs: &aws_sdk_sqs::Client, url: &str) -> (usize, usize) {
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .ok()
        .and_then(|o| o.attributes)
        .unwrap_or_default();
    let n = |a: QueueAttributeName| attrs.get(&a).and_then(|v| v.parse().ok()).unwrap_or(0);
    (n(QueueAttributeName::ApproximateNumberOfMessages), n(QueueAttributeName::ApproximateNumberOfMessagesNotVisible))
}

/// Which boundary the next invocation is armed at, until each has its kills.
struct Arming {
    per_boundary: usize,
    random: usize,
    kills: Mutex<BTreeMap<String, usize>>,
    random_done: AtomicUsize,
}

impl Arming {
    fn new(per_boundary: usize, random: usize) -> Self {
        Self { per_boundary, random, kills: Mutex::default(), random_done: AtomicUsize::new(0) }
    }

    fn next(&self, rng: &mut StdRng) -> Option<String> {
        let kills = self.kills.lock().unwrap();
        let wanted: Vec<&str> = BOUNDARIES.iter().copied().filter(|b| kills.get(*b).copied().unwrap_or(0) < self.per_boundary).collect();
        // Half the invocations run unarmed, so the pipeline also makes progress. A sync is the
        // rarest thing a batch does, so its boundary is armed whenever it still wants kills.
        if wanted.is_empty() || rng.random_bool(0.5) {
            None
        } else if wanted.contains(&"sync-in-flight") && rng.random_bool(0.5) {
            Some("sync-in-flight".to_owned())
        } else {
            Some(wanted[rng.random_range(0..wanted.len())].to_owned())
        }
    }

    fn killed(&self, boundary: &str) {
        *self.kills.lock().unwrap().entry(boundary.to_owned()).or_default() += 1;
    }

    fn random_kill(&self, rng: &mut StdRng) -> bool {
        self.random_done.load(Ordering::SeqCst) < self.random && rng.random_bool(0.2)
    }

    fn satisfied(&self) -> bool {
        let kills = self.kills.lock().unwrap();
        BOUNDARIES.iter().all(|b| kills.get(*b).copied().unwrap_or(0) >= self.per_boundary)
            && self.random_done.load(Ordering::SeqCst) >= self.random
    }
}

/// A worker process and its pipes.
struct WorkerProcess {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    paused: mpsc::UnboundedReceiver<String>,
}

impl WorkerProcess {
    async fn spawn(exe: &PathBuf, env: &HashMap<String, String>) -> anyhow::Result<Self> {
        let mut child = Command::new(exe)
            .arg("worker")
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child.stdin.take().expect("piped");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped")).lines();
        let stderr = BufReader::new(child.stderr.take().expect("piped"));
        let (tx, paused) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut lines = stderr.lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(b) = line.strip_prefix("CHAOS-PAUSED ") {
                    tx.send(b.to_owned()).ok();
                } else if std::env::var_os("MEDIC_CHAOS_VERBOSE").is_some() {
                    eprintln!("worker: {line}");
                }
            }
        });
        // Init (Lambda's cold start) ends with the first `/next`; here, READY.
        let ready = tokio::time::timeout(Duration::from_secs(60), stdout.next_line()).await;
        match ready {
            Ok(Ok(Some(line))) if line == READY => Ok(Self { child, stdin, stdout, paused }),
            other => anyhow::bail!("a worker process did not start: {other:?}"),
        }
    }

    async fn kill(mut self) {
        // SIGKILL, as Lambda stops an invocation at its timeout.
        self.child.start_kill().ok();
        self.child.wait().await.ok();
    }
}

/// One slot of the event source: receives a batch, invokes a worker process with it, deletes
/// what did not fail; kills the process at an armed boundary, at random, or at the timeout.
struct EventSource {
    exe: PathBuf,
    env: HashMap<String, String>,
    sqs: aws_sdk_sqs::Client,
    queue_url: String,
    timings: Timings,
    tally: Shared,
    arming: Arc<Arming>,
    stop: Arc<AtomicBool>,
}

enum Ended {
    Answered(SqsBatchResponse),
    Killed(String),
}

impl EventSource {
    async fn run(self, mut rng: StdRng) {
        let mut process: Option<WorkerProcess> = None;
        while !self.stop.load(Ordering::SeqCst) {
            let mut worker = match process.take() {
                Some(w) => w,
                None => match WorkerProcess::spawn(&self.exe, &self.env).await {
                    Ok(w) => w,
                    Err(e) => {
                        eprintln!("chaos: {e}");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                },
            };
            let messages = self.receive().await;
            if messages.is_empty() {
                process = Some(worker);
                continue;
            }
            let mut event = SqsEvent::default();
            event.records = messages.iter().map(record).collect();
            let arm = self.arming.next(&mut rng);
            // A random moment of the invocation: most batches take a few hundred milliseconds,
            // so the moment is drawn from those, not from the whole timeout.
            let random_after =
                (arm.is_none() && self.arming.random_kill(&mut rng)).then(|| Duration::from_millis(rng.random_range(0..250)));
            self.tally.lock().unwrap().invocations += 1;
            let line = serde_json::to_string(&Invocation { arm, event }).expect("serialisable") + "\n";
            if worker.stdin.write_all(line.as_bytes()).await.is_err() {
                worker.kill().await;
                continue;
            }
            let ended = tokio::select! {
                answer = worker.stdout.next_line() => match answer {
                    Ok(Some(a)) => serde_json::from_str(&a).map(Ended::Answered).unwrap_or_else(|_| Ended::Killed("bad-answer".into())),
                    _ => Ended::Killed("crashed".into()),
                },
                Some(boundary) = worker.paused.recv() => Ended::Killed(boundary),
                _ = tokio::time::sleep(self.timings.timeout) => Ended::Killed("timeout".into()),
                _ = tokio::time::sleep(random_after.unwrap_or(Duration::MAX / 4)), if random_after.is_some() => Ended::Killed("random".into()),
            };
            match ended {
                Ended::Answered(response) => {
                    let failed: BTreeSet<String> = response.batch_item_failures.into_iter().map(|f| f.item_identifier).collect();
                    for m in messages.iter().filter(|m| !failed.contains(m.message_id.as_deref().unwrap_or(""))) {
                        if let Some(handle) = &m.receipt_handle {
                            self.sqs.delete_message().queue_url(&self.queue_url).receipt_handle(handle).send().await.ok();
                        }
                    }
                    process = Some(worker);
                }
                Ended::Killed(why) => {
                    // Nothing of the batch is deleted: SQS offers it again after the visibility timeout.
                    worker.kill().await;
                    if why == "random" {
                        self.arming.random_done.fetch_add(1, Ordering::SeqCst);
                    }
                    if BOUNDARIES.contains(&why.as_str()) {
                        self.arming.killed(&why);
                    }
                    *self.tally.lock().unwrap().kills.entry(why).or_default() += 1;
                }
            }
        }
        if let Some(w) = process {
            w.kill().await;
        }
    }

    async fn receive(&self) -> Vec<aws_sdk_sqs::types::Message> {
        self.sqs
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(BATCH_SIZE)
            .wait_time_seconds(1)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await
            .ok()
            .and_then(|o| o.messages)
            .unwrap_or_default()
    }
}

/// An SQS record as Lambda delivers it.
fn record(m: &aws_sdk_sqs::types::Message) -> SqsMessage {
    let mut r = SqsMessage::default();
    r.message_id = m.message_id.clone();
    r.receipt_handle = m.receipt_handle.clone();
    r.body = m.body.clone();
    r.attributes = m.attributes.clone().unwrap_or_default().into_iter().map(|(k, v)| (k.as_str().to_owned(), v)).collect();
    r
}

struct Account {
    duplicates: usize,
    lost: usize,
    stuck: usize,
    syncs: usize,
    parents: usize,
    details: Vec<String>,
}

/// Duplicate actions (a second sync under one idempotency key; a second Slack parent for one
/// incident), lost incidents (an app in trouble no incident ever covered; a click neither acted on
/// nor answered; a requested refresh never made) and stuck ones (in trouble, not escalated, and
/// open longer than the ladder's bound).
async fn account(
    argo: &ArgoSim,
    slack: &SlackSim,
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    names: &[(String, String)],
    tally: &Tally,
    bound: Duration,
) -> anyhow::Result<Account> {
    let mut details = Vec::new();
    let requests = argo.requests();
    let mut by_key: BTreeMap<String, usize> = BTreeMap::new();
    for r in requests.iter().filter(|r| r.method == "POST" && r.path.ends_with("/sync")) {
        let key = r
            .body
            .as_ref()
            .and_then(|b| b["infos"].as_array().cloned())
            .into_iter()
            .flatten()
            .find(|i| i["name"] == IDEMPOTENCY_INFO_NAME)
            .and_then(|i| i["value"].as_str().map(str::to_owned))
            .unwrap_or_else(|| "(no key)".into());
        *by_key.entry(key).or_default() += 1;
    }
    let syncs: usize = by_key.values().sum();
    let mut duplicates = 0;
    for (key, n) in by_key.iter().filter(|(_, n)| **n > 1) {
        details.push(format!("duplicate: {n} syncs under key {key}"));
        duplicates += n - 1;
    }
    let parents = slack.parents(SLACK_CHANNEL);
    let mut by_incident: BTreeMap<String, usize> = BTreeMap::new();
    for p in &parents {
        *by_incident.entry(p.payload("key").unwrap_or("(no key)").to_owned()).or_default() += 1;
    }
    for (key, n) in by_incident.iter().filter(|(_, n)| **n > 1) {
        details.push(format!("duplicate: {n} Slack parents for {key}"));
        duplicates += n - 1;
    }

    // The table: which apps had an incident, and which were escalated (a completed escalate).
    let mut incident_apps: BTreeSet<String> = BTreeSet::new();
    let mut escalated: BTreeSet<String> = BTreeSet::new();
    let mut open_since: BTreeMap<String, chrono::DateTime<Utc>> = BTreeMap::new();
    let mut start_key = None;
    loop {
        let out = ddb.scan().table_name(table).set_exclusive_start_key(start_key).send().await?;
        for item in out.items() {
            let s = |a: &str| item.get(a).and_then(|v| v.as_s().ok()).cloned().unwrap_or_default();
            let pk = s("pk");
            let Some(app) = pk.strip_prefix("APP#chaos#") else { continue };
            incident_apps.insert(app.to_owned());
            let sk = s("sk");
            if sk.starts_with("ACTION#") && s("rung") == "escalate" && s("status") == "COMPLETED" {
                escalated.insert(app.to_owned());
            }
            if sk == "INCIDENT" {
                if let Ok(at) = s("opened_at").parse() {
                    open_since.insert(app.to_owned(), at);
                }
            }
        }
        start_key = out.last_evaluated_key().cloned().map(|k: HashMap<String, AttributeValue>| k);
        if start_key.is_none() {
            break;
        }
    }
    let now = Utc::now();
    let (mut lost, mut stuck) = (0, 0);
    for (name, _) in names {
        let app = format!("argocd/{name}");
        let state = argo.app("argocd", name).unwrap_or_default();
        let calm = state["status"]["sync"]["status"] == "Synced" && state["status"]["health"]["status"] == "Healthy";
        if calm {
            continue;
        }
        if !incident_apps.contains(&app) {
            details.push(format!("lost: {app} is in trouble and no incident covers it"));
            lost += 1;
        } else if !escalated.contains(&app) && open_since.get(&app).is_some_and(|t| (now - *t).to_std().unwrap_or_default() > bound) {
            details.push(format!("stuck: {app} has been open since {} without reaching a human", open_since[&app]));
            stuck += 1;
        }
    }
    // Every accepted click is answered in its thread.
    let answered: BTreeSet<String> = slack
        .messages(SLACK_CHANNEL)
        .iter()
        .filter_map(|m| m.payload("key").and_then(|k| k.strip_prefix("act:")).map(str::to_owned))
        .collect();
    for id in tally.accepted_clicks.iter().filter(|id| !answered.contains(*id)) {
        details.push(format!("lost: the click on {id} was accepted and never answered"));
        lost += 1;
    }
    // Every accepted signed refresh reached Argo CD.
    let refreshed: BTreeSet<String> = requests
        .iter()
        .filter(|r| r.method == "GET" && r.query.iter().any(|(k, _)| k == "refresh"))
        .filter_map(|r| r.path.strip_prefix("/api/v1/applications/").map(|n| format!("argocd/{n}")))
        .collect();
    for app in tally.refreshes_requested.iter().filter(|a| !refreshed.contains(*a)) {
        details.push(format!("lost: the requested refresh of {app} never reached Argo CD"));
        lost += 1;
    }
    Ok(Account { duplicates, lost, stuck, syncs, parents: parents.len(), details })
}

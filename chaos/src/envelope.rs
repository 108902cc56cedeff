//! `medic-chaos envelope`: the functions' Lambda envelope measured locally: cold start, first and
//! warm response, peak memory, bootstrap size.
//!
//! A Lambda Runtime API stub on 127.0.0.1 (`GET /2018-06-01/runtime/invocation/next`, `POST
//! .../invocation/{id}/response` and `/error`, `POST .../init/error`) serves each release
//! bootstrap two invocations of the same sample event (events/lambda/<fn>/); the bootstrap runs
//! with `AWS_LAMBDA_RUNTIME_API` pointing at the stub and the function's environment, against
//! moto (SQS, DynamoDB, Secrets Manager) and the Argo CD simulator, with its secrets either in the
//! environment or in Secrets Manager. Measured from just before the exec:
//! - **init**: exec → the first `/next` (the runtime asks for work once `main` has built the
//!   function);
//! - **first**: exec → the first response;
//! - **warm**: the second invocation, `/next` answered → its response;
//! - **cold overhead**: first − warm, what a cold start adds to the invocation that triggers it;
//! - **peak RSS**: `VmHWM` of `/proc/<pid>/status` after the last response;
//! - **CPU**: the process's time on a CPU (the sum of its threads' `schedstat`), up to the first
//!   response (**cold CPU**) and per later invocation (**warm CPU**, over `--invocations` − 1 warm
//!   invocations of the same event): what a build costs per batch, apart from the time spent
//!   waiting on moto and the simulator (issue 10's condition for `opt-level` for size).
//!
//! A hello-world `lambda_runtime` binary (`envelope-hello`, same crate, same release profile) runs
//! in every round; each round runs every target once in a shuffled order, with a fresh queue per
//! run. Medians are printed; "x hello" is the median of each round's ratio to that round's hello
//! init, so the interleaving cancels the machine's drift.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use chrono::Utc;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use medic_sim::moto::MotoServer;
use medic_sim::{ArgoSim, SimConfig};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

#[derive(clap::Args, Debug, Clone)]
pub struct Options {
    /// The directory of the release bootstraps (`ingest`, `worker`, `sweeper`, `slack-actions`,
    /// `envelope-hello`); default `$CARGO_TARGET_DIR/release` (or `target/release`).
    #[arg(long)]
    pub bin_dir: Option<PathBuf>,
    /// The hello world's directory, when it is not `--bin-dir`.
    #[arg(long)]
    pub hello_dir: Option<PathBuf>,
    /// Other builds of the functions to run in the same rounds, `NAME=DIR` (e.g. the bootstraps
    /// before a change, copied aside): a before/after comparison on the same machine state.
    #[arg(long = "also")]
    pub also: Vec<String>,
    /// Rounds; each runs every target once, shuffled.
    #[arg(long, default_value_t = 15)]
    pub rounds: usize,
    /// The functions measured.
    #[arg(long, value_delimiter = ',', default_value = "ingest,worker,sweeper,slack-actions")]
    pub functions: Vec<String>,
    /// Where the secrets come from: `env`, `sm` (Secrets Manager in moto, one secret each) and
    /// `sm1` (all of them keys of one JSON secret, `ARN#key`: one call per cold start).
    #[arg(long, value_delimiter = ',', default_value = "env,sm")]
    pub secrets: Vec<String>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Keep each run's output (the function's log) in this directory.
    #[arg(long)]
    pub keep_logs: Option<PathBuf>,
    /// A synthetic fleet of this many apps in the simulator instead of the sample apps: the
    /// sweeper's peak memory at scale (issue 10: 50,000 apps within 200 MB).
    #[arg(long)]
    pub fleet: Option<usize>,
    /// With `--fleet`, how many of its apps are stale.
    #[arg(long, default_value_t = 0)]
    pub stale: usize,
    /// Invocations per run (at least 2): the first is the cold one, the second gives the warm
    /// latency, all after the first the warm CPU per invocation.
    #[arg(long, default_value_t = 2)]
    pub invocations: usize,
}

const WEBHOOK_SECRET: &str = "local-test-secret-not-for-production";
const WORK_ITEM_KEY: &str = "envelope-work-item-key-not-for-production";
const REFRESH_SECRET: &str = r#"{"current":"envelope-refresh-secret-not-for-production"}"#;
const SIGNING_SECRET: &str = "envelope-slack-signing-secret-not-for-production";
const API: &str = "/2018-06-01/runtime";

/// What the stub saw, with when.
#[derive(Debug)]
enum Seen {
    Next(usize, Instant),
    Response(usize, Instant),
    Error(usize, String),
    InitError(String),
}

/// The Runtime API of one run: `events[i]` is the i-th invocation; later `/next` calls wait.
struct Stub {
    events: Vec<String>,
    served: AtomicUsize,
    seen: mpsc::UnboundedSender<Seen>,
}

async fn stub_serve(stub: Arc<Stub>, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let now = Instant::now();
    let path = req.uri().path().to_owned();
    let method = req.method().clone();
    let body = req.into_body().collect().await?.to_bytes();
    let text = String::from_utf8_lossy(&body).into_owned();
    let ok = |status: StatusCode| Response::builder().status(status).body(Full::new(Bytes::new())).expect("a response");
    let rest = path.strip_prefix(API).unwrap_or("");
    if method == hyper::Method::GET && rest == "/invocation/next" {
        let n = stub.served.fetch_add(1, Ordering::SeqCst);
        let _ = stub.seen.send(Seen::Next(n, now));
        let Some(event) = stub.events.get(n) else {
            // No more work: the runtime waits here until the process is killed.
            std::future::pending::<()>().await;
            unreachable!()
        };
        let deadline = Utc::now().timestamp_millis() + 60_000;
        return Ok(Response::builder()
            .header("content-type", "application/json")
            .header("lambda-runtime-aws-request-id", format!("envelope-{n}"))
            .header("lambda-runtime-deadline-ms", deadline.to_string())
            .header("lambda-runtime-invoked-function-arn", "arn:aws:lambda:us-east-1:123456789012:function:envelope")
            .header("lambda-runtime-trace-id", format!("Root=1-5759e988-bd862e3fe1be46a99427{n:04};Parent=53995c3f42cd8ad8;Sampled=0"))
            .body(Full::new(Bytes::from(event.clone())))
            .expect("a response"));
    }
    if method == hyper::Method::POST && rest == "/init/error" {
        let _ = stub.seen.send(Seen::InitError(text));
        return Ok(ok(StatusCode::ACCEPTED));
    }
    if let Some(id) = rest.strip_prefix("/invocation/envelope-").filter(|_| method == hyper::Method::POST) {
        let (n, kind) = id.split_once('/').unwrap_or((id, ""));
        let n: usize = n.parse().unwrap_or(usize::MAX);
        let seen = match kind {
            "response" => Seen::Response(n, now),
            _ => Seen::Error(n, text),
        };
        let _ = stub.seen.send(seen);
        return Ok(ok(StatusCode::ACCEPTED));
    }
    Ok(ok(StatusCode::NOT_FOUND))
}

/// Starts a stub on a free loopback port.
async fn start_stub(events: Vec<String>) -> anyhow::Result<(u16, mpsc::UnboundedReceiver<Seen>, tokio::task::JoinHandle<()>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let (tx, rx) = mpsc::unbounded_channel();
    let stub = Arc::new(Stub { events, served: AtomicUsize::new(0), seen: tx });
    let task = tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        while let Ok((stream, _)) = listener.accept().await {
            let stub = Arc::clone(&stub);
            connections.spawn(async move {
                let service = service_fn(move |req| stub_serve(Arc::clone(&stub), req));
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    Ok((port, rx, task))
}

/// One run's figures.
#[derive(Debug, Clone, Copy)]
struct Sample {
    init: Duration,
    first: Duration,
    warm: Duration,
    peak_rss_kb: u64,
    /// CPU time up to the first response.
    cpu_first: Duration,
    /// CPU time per warm invocation, and the part of it in user space (the rest is the kernel's:
    /// sockets to moto and the simulator), whose resolution is the kernel's 10 ms tick.
    cpu_warm: Duration,
    user_warm: Duration,
}

/// One bootstrap to run: its file, environment and two invocations.
struct Target {
    label: String,
    function: String,
    secrets: String,
    binary: PathBuf,
}

/// Everything the functions reach, shared by the runs.
struct World {
    moto: MotoServer,
    sqs: aws_sdk_sqs::Client,
    table: String,
    argo: ArgoSim,
    /// Secrets Manager ARNs by the variable that names them: one secret each, and keys of one.
    arns: Vec<(&'static str, String)>,
    shared: Vec<(&'static str, String)>,
    events: PathBuf,
    queue_count: AtomicUsize,
    clicks: AtomicUsize,
    /// How long a run may take for both its invocations: a minute for the samples; a synthetic
    /// fleet's sweep lists, plans and enqueues thousands of apps through moto (the sweeper's own
    /// timeout is 240 s).
    patience: Duration,
    invocations: usize,
}

impl World {
    async fn start(fleet: Option<(usize, usize)>, invocations: usize) -> anyhow::Result<World> {
        let moto = tokio::task::spawn_blocking(MotoServer::start).await?;
        let sdk = medic_adapters::aws::sdk_config(Some(&moto.url)).await;
        let sqs = aws_sdk_sqs::Client::new(&sdk);
        let ddb = aws_sdk_dynamodb::Client::new(&sdk);
        let secrets = aws_sdk_secretsmanager::Client::new(&sdk);
        let table = "envelope-state".to_owned();
        medic_adapters::dynamodb::create_table(&ddb, &table).await.map_err(|e| anyhow::anyhow!("creating the table: {e}"))?;
        let argo = ArgoSim::start(SimConfig::default()).await?;
        let events = medic_sim::workspace_root().join("events");
        match fleet {
            Some((apps, stale)) => {
                for (app, outcomes) in medic_sim::synthetic_fleet(apps, stale, Utc::now()) {
                    let name = app["metadata"]["name"].as_str().unwrap_or_default().to_owned();
                    argo.insert_app(app);
                    argo.set_outcomes(&name, outcomes);
                }
            }
            None => {
                argo.load_samples(&events, Utc::now()).context("loading the sample apps into the simulator")?;
            }
        }
        let token = SimConfig::default().tokens[0].token.clone();
        let mut arns = Vec::new();
        let mut one = serde_json::Map::new();
        let each = [
            ("ARGOCD_AUTH_TOKEN_SECRET_ARN", "argocd-token", token.as_str()),
            ("WEBHOOK_SECRET_ARN", "webhook", WEBHOOK_SECRET),
            ("REFRESH_SECRET_ARN", "refresh", REFRESH_SECRET),
            ("WORK_ITEM_KEY_SECRET_ARN", "work-item-key", WORK_ITEM_KEY),
            ("SLACK_SIGNING_SECRET_ARN", "slack-signing", SIGNING_SECRET),
        ];
        for (var, name, value) in each {
            let out = secrets.create_secret().name(format!("envelope-{name}")).secret_string(value).send().await?;
            arns.push((var, out.arn.context("a secret's ARN")?));
            // A JSON document stays one (the refresh secret), as deploy.md's shared secret holds it.
            one.insert(name.to_owned(), serde_json::from_str(value).unwrap_or_else(|_| value.into()));
        }
        let out = secrets.create_secret().name("envelope-shared").secret_string(serde_json::Value::Object(one).to_string()).send().await?;
        let shared_arn = out.arn.context("the shared secret's ARN")?;
        let shared = each.iter().map(|(var, name, _)| (*var, format!("{shared_arn}#{name}"))).collect();
        let patience = Duration::from_secs(if fleet.is_some() { 600 } else { 60 + invocations as u64 });
        Ok(World {
            moto,
            sqs,
            table,
            argo,
            arns,
            shared,
            events,
            queue_count: AtomicUsize::new(0),
            clicks: AtomicUsize::new(0),
            patience,
            invocations,
        })
    }

    /// What one Secrets Manager call costs against moto, from this process: median of `n` calls
    /// on a new client (a new connection, as a cold start makes it) and on an open one. The
    /// floor under the `sm` rows' cold overhead.
    async fn secrets_floor(&self, n: usize) -> anyhow::Result<(Duration, Duration)> {
        let arn = &self.arns.first().context("a secret")?.1;
        let (mut cold, mut warm) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let client = aws_sdk_secretsmanager::Client::new(&medic_adapters::aws::sdk_config(Some(&self.moto.url)).await);
            for times in [&mut cold, &mut warm] {
                let start = Instant::now();
                client.get_secret_value().secret_id(arn).send().await?;
                times.push(ms(start.elapsed()));
            }
        }
        let ms_to = |v: f64| Duration::from_secs_f64(v / 1e3);
        Ok((ms_to(median(cold)), ms_to(median(warm))))
    }

    /// A fresh queue for one run.
    async fn queue(&self) -> anyhow::Result<String> {
        let n = self.queue_count.fetch_add(1, Ordering::Relaxed);
        let out = self.sqs.create_queue().queue_name(format!("envelope-{n}")).send().await?;
        out.queue_url.context("a queue URL")
    }

    /// The environment of `target` as template.yaml and Lambda give it.
    fn env(&self, target: &Target, queue_url: &str, runtime_api: &str) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = [
            ("AWS_LAMBDA_RUNTIME_API", runtime_api),
            ("AWS_LAMBDA_FUNCTION_NAME", target.function.as_str()),
            ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128"),
            ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
            ("AWS_LAMBDA_LOG_GROUP_NAME", "/aws/lambda/envelope"),
            ("AWS_LAMBDA_LOG_STREAM_NAME", "envelope"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "test"),
            ("AWS_SECRET_ACCESS_KEY", "test"),
            ("AWS_ENDPOINT_URL", self.moto.url.as_str()),
            ("MEDIC_INSTANCE_ID", "envelope"),
            ("QUEUE_URL", queue_url),
            ("TABLE_NAME", self.table.as_str()),
            ("SLACK_ALLOWED_USERS", r#"{"*": ["U0ALICE001"]}"#),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        env.push(("ARGOCD_SERVER".into(), self.argo.base_url()));
        if target.secrets == "sm" {
            env.extend(self.arns.iter().map(|(k, v)| (k.to_string(), v.clone())));
        } else if target.secrets == "sm1" {
            env.extend(self.shared.iter().map(|(k, v)| (k.to_string(), v.clone())));
        } else {
            env.extend(
                [
                    ("ARGOCD_AUTH_TOKEN", SimConfig::default().tokens[0].token.clone()),
                    ("MEDIC_WEBHOOK_SECRET", WEBHOOK_SECRET.into()),
                    ("MEDIC_REFRESH_SECRET", REFRESH_SECRET.into()),
                    ("MEDIC_WORK_ITEM_KEY", WORK_ITEM_KEY.into()),
                    ("SLACK_SIGNING_SECRET", SIGNING_SECRET.into()),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v)),
            );
        }
        env
    }

    /// The invocations' payloads: the function's sample event (slack-actions' signed now,
    /// each click its own trigger id, so no invocation is refused as a replay of an earlier one).
    fn payloads(&self, function: &str) -> anyhow::Result<Vec<String>> {
        let sample =
            |name: &str| std::fs::read_to_string(self.events.join("lambda").join(name)).with_context(|| format!("events/lambda/{name}"));
        Ok(match function {
            "ingest" | "hello" => vec![sample("ingest/webhook-sync-failed.json")?; self.invocations],
            "worker" => {
                let batch: serde_json::Value = serde_json::from_str(&sample("worker/batch-with-poison.json")?)?;
                (0..self.invocations).map(|i| fresh_batch(&batch, i)).collect()
            }
            "sweeper" => vec![sample("sweeper/scheduled.json")?; self.invocations],
            "slack-actions" => {
                let event: serde_json::Value = serde_json::from_str(&sample("slack-actions/block-actions-sync.json")?)?;
                let secret = medic_slack_actions::SigningSecret::from_secret(SIGNING_SECRET)?;
                let now = Utc::now().timestamp();
                (0..self.invocations)
                    .map(|_| {
                        let mut e = event.clone();
                        let ts = now.to_string();
                        let click = self.clicks.fetch_add(1, Ordering::Relaxed);
                        let body = e["body"].as_str().unwrap_or_default().replace("1234567890", &format!("{click:010}"));
                        e["body"] = body.clone().into();
                        e["headers"]["x-slack-request-timestamp"] = ts.clone().into();
                        e["headers"]["x-slack-signature"] = secret.sign(&ts, body.as_bytes()).into();
                        e.to_string()
                    })
                    .collect()
            }
            other => bail!("no sample event for `{other}`"),
        })
    }
}

/// Peak resident set size (kB) of a running process.
/// The sample batch as the `i`th delivery of new notifications: message ids and each operation's
/// start moved by `i`, so every invocation's notifications get past the dedupe and each warm
/// invocation reads, decides and records as the first did (a repeated batch would only measure
/// the duplicate path).
fn fresh_batch(batch: &serde_json::Value, i: usize) -> String {
    let mut batch = batch.clone();
    for record in batch["Records"].as_array_mut().into_iter().flatten() {
        if let Some(id) = record["messageId"].as_str() {
            record["messageId"] = format!("{id}-{i}").into();
        }
        let Some(body) = record["body"].as_str() else { continue };
        let Ok(mut event) = serde_json::from_str::<serde_json::Value>(body) else { continue };
        let started = event.pointer("/operation/startedAt").and_then(|v| v.as_str()).and_then(|t| t.parse::<chrono::DateTime<Utc>>().ok());
        if let Some(started) = started {
            let moved = started + chrono::Duration::seconds(i as i64);
            event["operation"]["startedAt"] = moved.to_rfc3339_opts(chrono::SecondsFormat::Secs, true).into();
            record["body"] = event.to_string().into();
        }
    }
    batch.to_string()
}

fn peak_rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Time a running process has spent on a CPU: its threads' `schedstat` run times (nanoseconds,
/// unlike `stat`'s 10 ms ticks).
fn cpu_time(pid: u32) -> Option<Duration> {
    let mut total = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(total))
}

/// User time of a running process (all its threads, living and gone), from `/proc/<pid>/stat`
/// (clock ticks of 10 ms: `USER_HZ` is 100 on Linux).
fn user_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces: fields are counted after its closing parenthesis.
    let rest = &stat[stat.rfind(')')? + 2..];
    let utime: u64 = rest.split_whitespace().nth(11)?.parse().ok()?;
    Some(Duration::from_millis(utime * 10))
}

/// One cold start and the warm invocations of `target`.
async fn run_once(world: &World, target: &Target, logs: &Path, round: usize) -> anyhow::Result<Sample> {
    let queue_url = world.queue().await?;
    let (port, mut seen, server) = start_stub(world.payloads(&target.function)?).await?;
    let log_path = logs.join(format!("{}-{round}.log", target.label.replace('/', "-")));
    let log = std::fs::File::create(&log_path)?;
    let mut command = tokio::process::Command::new(&target.binary);
    command
        .env_clear()
        .envs(world.env(target, &queue_url, &format!("127.0.0.1:{port}")))
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .kill_on_drop(true);
    let start = Instant::now();
    let mut child = command.spawn().with_context(|| format!("starting {}", target.binary.display()))?;
    let pid = child.id().context("the child's pid")?;
    let (mut init, mut first, mut warm_from, mut warm) = (None, None, None, None);
    let (mut cpu_first, mut cpu_last, mut user_first, mut user_last) = (None, None, None, None);
    let last = world.invocations - 1;
    let deadline = tokio::time::sleep(world.patience);
    tokio::pin!(deadline);
    let outcome: anyhow::Result<()> = loop {
        tokio::select! {
            s = seen.recv() => match s {
                Some(Seen::Next(0, t)) => init = Some(t - start),
                Some(Seen::Next(1, t)) => warm_from = Some(t),
                Some(Seen::Next(..)) => {}
                Some(Seen::Response(n, t)) => {
                    if n == 0 {
                        first = Some(t - start);
                        cpu_first = cpu_time(pid);
                        user_first = user_time(pid);
                    }
                    if n == 1 {
                        warm = warm_from.map(|from| t - from);
                    }
                    if n == last {
                        cpu_last = cpu_time(pid);
                        user_last = user_time(pid);
                        break Ok(());
                    }
                }
                Some(Seen::Error(n, body)) => break Err(anyhow::anyhow!("invocation {n} failed: {body}")),
                Some(Seen::InitError(body)) => break Err(anyhow::anyhow!("init failed: {body}")),
                None => break Err(anyhow::anyhow!("the stub stopped")),
            },
            status = child.wait() => break Err(anyhow::anyhow!("the bootstrap exited: {status:?}")),
            _ = &mut deadline => break Err(anyhow::anyhow!("no response {} within {} s", last + 1, world.patience.as_secs())),
        }
    };
    let peak = peak_rss_kb(pid);
    let _ = child.start_kill();
    let _ = child.wait().await;
    server.abort();
    let _ = world.sqs.delete_queue().queue_url(&queue_url).send().await;
    if let Err(e) = outcome {
        let output = std::fs::read_to_string(&log_path).unwrap_or_default();
        let tail: Vec<&str> = output.lines().rev().take(20).collect();
        bail!("{} (round {round}): {e}\n{}", target.label, tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
    }
    let (Some(init), Some(first), Some(warm), Some(peak_rss_kb), Some(cpu_first), Some(cpu_last), Some(user_first), Some(user_last)) =
        (init, first, warm, peak, cpu_first, cpu_last, user_first, user_last)
    else {
        bail!("{}: incomplete timings", target.label);
    };
    let warm_runs = u32::try_from(last).unwrap_or(u32::MAX);
    let cpu_warm = cpu_last.saturating_sub(cpu_first) / warm_runs;
    let user_warm = user_last.saturating_sub(user_first) / warm_runs;
    Ok(Sample { init, first, warm, peak_rss_kb, cpu_first, cpu_warm, user_warm })
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

pub async fn run(o: Options) -> anyhow::Result<()> {
    if o.invocations < 2 {
        bail!("--invocations must be at least 2 (a cold one and a warm one)");
    }
    let target_dir = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| medic_sim::workspace_root().join("target"));
    let bin_dir = o.bin_dir.clone().unwrap_or_else(|| target_dir.join("release"));
    let hello_dir = o.hello_dir.clone().unwrap_or_else(|| bin_dir.clone());
    let mut builds = vec![(String::new(), bin_dir)];
    for also in &o.also {
        let Some((name, dir)) = also.split_once('=') else { bail!("--also takes NAME=DIR, not `{also}`") };
        builds.push((format!("@{name}"), PathBuf::from(dir)));
    }
    let mut targets =
        vec![Target { label: "hello".into(), function: "hello".into(), secrets: "-".into(), binary: hello_dir.join("envelope-hello") }];
    for function in &o.functions {
        for secrets in &o.secrets {
            if !["env", "sm", "sm1"].contains(&secrets.as_str()) {
                bail!("--secrets takes env, sm and sm1, not `{secrets}`");
            }
            for (name, dir) in &builds {
                targets.push(Target {
                    label: format!("{function}/{secrets}{name}"),
                    function: function.clone(),
                    secrets: secrets.clone(),
                    binary: dir.join(function),
                });
            }
        }
    }
    for t in &targets {
        if !t.binary.is_file() {
            bail!("{} is missing: build the release bootstraps first (make envelope does)", t.binary.display());
        }
    }
    let logs = match &o.keep_logs {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!("medic-envelope-{}", std::process::id())),
    };
    std::fs::create_dir_all(&logs)?;
    let world = World::start(o.fleet.map(|apps| (apps, o.stale)), o.invocations).await?;
    eprintln!(
        "envelope: {} targets x {} rounds; moto {}, Argo CD simulator {}",
        targets.len(),
        o.rounds,
        world.moto.url,
        world.argo.base_url()
    );

    let mut rng = rand::rngs::StdRng::seed_from_u64(o.seed);
    let mut samples: BTreeMap<usize, Vec<(usize, Sample)>> = BTreeMap::new();
    // One unmeasured run of each first: the page cache holds every binary, moto has compiled
    // its handlers for each call.
    for (i, t) in targets.iter().enumerate() {
        run_once(&world, t, &logs, 0).await.with_context(|| format!("warm-up run of {}", targets[i].label))?;
    }
    for round in 1..=o.rounds {
        let mut order: Vec<usize> = (0..targets.len()).collect();
        order.shuffle(&mut rng);
        for i in order {
            let s = run_once(&world, &targets[i], &logs, round).await?;
            samples.entry(i).or_default().push((round, s));
        }
        eprintln!("envelope: round {round}/{} done", o.rounds);
    }
    if o.keep_logs.is_none() {
        let _ = std::fs::remove_dir_all(&logs);
    }
    let floor = if o.secrets.iter().any(|s| s.starts_with("sm")) { Some(world.secrets_floor(o.rounds.max(5)).await?) } else { None };

    let hello: BTreeMap<usize, Sample> = samples.get(&0).map(|v| v.iter().copied().collect()).unwrap_or_default();
    println!(
        "{:<20} {:>8} {:>8} {:>9} {:>8} {:>13} {:>13} {:>9} {:>9} {:>10} {:>10} {:>10}",
        "target",
        "init ms",
        "x hello",
        "first ms",
        "warm ms",
        "overhead ms",
        "ovh/hello-init",
        "RSS MB",
        "size MB",
        "cold CPU",
        "warm CPU",
        "warm user"
    );
    for (i, t) in targets.iter().enumerate() {
        let runs = samples.get(&i).cloned().unwrap_or_default();
        let init = median(runs.iter().map(|(_, s)| ms(s.init)).collect());
        let x_hello = median(runs.iter().filter_map(|(r, s)| hello.get(r).map(|h| ms(s.init) / ms(h.init))).collect());
        let first = median(runs.iter().map(|(_, s)| ms(s.first)).collect());
        let warm = median(runs.iter().map(|(_, s)| ms(s.warm)).collect());
        let overhead = median(runs.iter().map(|(_, s)| ms(s.first) - ms(s.warm)).collect());
        let ovh_hello = median(runs.iter().filter_map(|(r, s)| hello.get(r).map(|h| (ms(s.first) - ms(s.warm)) / ms(h.init))).collect());
        let rss = median(runs.iter().map(|(_, s)| s.peak_rss_kb as f64 / 1024.0).collect());
        let size = std::fs::metadata(&t.binary).map(|m| m.len() as f64 / 1e6).unwrap_or(f64::NAN);
        let cpu_cold = median(runs.iter().map(|(_, s)| ms(s.cpu_first)).collect());
        let cpu_warm = median(runs.iter().map(|(_, s)| ms(s.cpu_warm)).collect());
        // Summed, not a median: each run's user time moves in 10 ms ticks.
        let user_warm = runs.iter().map(|(_, s)| ms(s.user_warm)).sum::<f64>() / runs.len().max(1) as f64;
        println!(
            "{:<20} {init:>8.2} {x_hello:>8.2} {first:>9.2} {warm:>8.2} {overhead:>13.2} {ovh_hello:>13.2} {rss:>9.1} {size:>9.2} {cpu_cold:>10.3} {cpu_warm:>10.3} {user_warm:>10.3}",
            t.label
        );
    }
    println!(
        "envelope: medians of {} rounds; x hello and ovh/hello-init are medians of each round's ratio to its hello init; CPU in ms, warm CPU per invocation over {} warm invocations (warm user: its user-space part, the mean of the runs)",
        o.rounds,
        o.invocations - 1
    );
    if let Some((cold, warm)) = floor {
        let hello_init = median(hello.values().map(|s| ms(s.init)).collect());
        println!(
            "envelope: moto's floor, one GetSecretValue from this process: {:.2} ms on a new connection, {:.2} ms on an open one ({:.2} and {:.2} x hello's init)",
            ms(cold),
            ms(warm),
            ms(cold) / hello_init,
            ms(warm) / hello_init
        );
    }
    Ok(())
}

//! A claim interrupted by a crash is resumed, never skipped (issue 21): the Lambda worker, built
//! as `LambdaWorker::from_env` builds it (the harness's `medic-chaos worker` process), is
//! SIGKILLed right after it claimed a sync (and a hard refresh) and before its call to Argo CD; the
//! batch is delivered again one visibility timeout later, to a new process, as SQS does. The action
//! reaches the Argo CD simulator exactly once, under the claim's key, and nothing is escalated.
//!
//! Timings are the template's divided by one factor: a 2 s function timeout (the template's
//! default is 60 s), so leases of 3 s, a claim timeout of 6 s and a visibility timeout of 12 s.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use chrono::Utc;
use medic_core::event::{AppRef, WorkItem, WorkKind};
use medic_core::ports::IncidentStore;
use medic_core::{Rung, Trigger};
use medic_sim::moto::{moto, unique};
use medic_sim::{ArgoSim, SimConfig};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

const TIMEOUT_SECS: u64 = 2;
/// The template's visibility timeout is six function timeouts.
const VISIBILITY: Duration = Duration::from_secs(6 * TIMEOUT_SECS);

fn events_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test"))
        .join("../events")
}

/// The policy with its own waits divided by the time scale (thresholds read against the apps'
/// timestamps stay as they are).
fn policy() -> medic_core::PolicyConfig {
    let d = medic_core::PolicyConfig::default();
    let scale = 60 / TIMEOUT_SECS as i64;
    medic_core::PolicyConfig {
        instance_id: "resume".into(),
        settle_secs: (d.settle_secs / scale).max(1),
        recheck_secs: (d.recheck_secs / scale).max(1),
        refused_wait_secs: (d.refused_wait_secs / scale).max(1),
        ..d
    }
}

struct Stack {
    sim: ArgoSim,
    env: HashMap<String, String>,
    store: medic_adapters::dynamodb::DynamoDbStore,
}

async fn stack() -> Stack {
    let url = moto().url.clone();
    let sdk = medic_adapters::aws::sdk_config(Some(&url)).await;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let ddb = aws_sdk_dynamodb::Client::new(&sdk);
    let queue_url = sqs.create_queue().queue_name(unique("resume-work")).send().await.unwrap().queue_url.unwrap();
    let table = unique("resume-state");
    medic_adapters::dynamodb::create_table(&ddb, &table).await.unwrap();
    let sim = ArgoSim::start(SimConfig::default()).await.unwrap();
    sim.load_samples(&events_dir(), Utc::now()).unwrap();
    let env: HashMap<String, String> = [
        ("AWS_ENDPOINT_URL", url.clone()),
        ("AWS_EC2_METADATA_DISABLED", "true".into()),
        ("MEDIC_INSTANCE_ID", "resume".into()),
        ("QUEUE_URL", queue_url),
        ("TABLE_NAME", table.clone()),
        ("ARGOCD_SERVER", sim.base_url()),
        ("ARGOCD_AUTH_TOKEN", SimConfig::default().tokens[0].token.clone()),
        ("MEDIC_WORK_ITEM_KEY", "resume-test-work-item-key-long-enough-to-sign".into()),
        ("MEDIC_FUNCTION_TIMEOUT_SECONDS", TIMEOUT_SECS.to_string()),
        ("MEDIC_DRY_RUN", "false".into()),
        // Argo Medic's own waits scaled by the same factor (60 s / 2 s = 30), as the chaos run does.
        ("MEDIC_POLICY_CONFIG", serde_json::to_string(&policy()).unwrap()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let store = medic_adapters::dynamodb::DynamoDbStore::new(ddb, table, "resume");
    Stack { sim, env, store }
}

/// One `medic-chaos worker` process: the Lambda worker fed batches on stdin.
struct WorkerProcess {
    child: Child,
    stdin: ChildStdin,
    stdout: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    stderr: tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
}

impl WorkerProcess {
    async fn spawn(env: &HashMap<String, String>) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_medic-chaos"))
            .arg("worker")
            .envs(env)
            .env("MEDIC_CHAOS_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the worker process starts");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let stderr = BufReader::new(child.stderr.take().unwrap()).lines();
        let ready = tokio::time::timeout(Duration::from_secs(60), stdout.next_line()).await;
        assert!(matches!(&ready, Ok(Ok(Some(l))) if l == "CHAOS-READY"), "the worker did not start: {ready:?}");
        Self { child, stdin, stdout, stderr }
    }

    async fn invoke(&mut self, arm: Option<&str>, event: &SqsEvent) {
        let line = serde_json::json!({"arm": arm, "event": event}).to_string() + "\n";
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// Waits for the armed boundary, then SIGKILLs the process there.
    async fn killed_at(mut self, boundary: &str) {
        let wanted = format!("CHAOS-PAUSED {boundary}");
        let reached = tokio::time::timeout(Duration::from_secs(30), async {
            while let Ok(Some(line)) = self.stderr.next_line().await {
                if line == wanted {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(reached, Ok(true), "the worker reached {boundary}");
        self.child.start_kill().unwrap(); // SIGKILL
        self.child.wait().await.unwrap();
    }

    async fn answer(&mut self) -> serde_json::Value {
        let line = tokio::time::timeout(Duration::from_secs(60), self.stdout.next_line()).await.unwrap().unwrap().unwrap();
        serde_json::from_str(&line).unwrap()
    }
}

fn batch(app: &str, project: &str, receives: u32) -> SqsEvent {
    let app = AppRef { name: app.into(), namespace: "argocd".into(), project: Some(project.into()) };
    let item = WorkItem::for_app(WorkKind::Sweep, app, Trigger::sweep(), "resume-window", Utc::now());
    let mut record = SqsMessage::default();
    record.message_id = Some("resume-message-1".into());
    record.receipt_handle = Some(format!("receipt-{receives}"));
    record.body = Some(serde_json::to_string(&item).unwrap());
    record.attributes.insert("ApproximateReceiveCount".into(), receives.to_string());
    let mut event = SqsEvent::default();
    event.records = vec![record];
    event
}

/// Kills a worker between its claim of `rung` for `app` and the call, redelivers the batch one
/// visibility timeout later to a new worker, and returns the claim's key.
async fn kill_after_claim_and_redeliver(stack: &Stack, app: &str, project: &str, rung: Rung) -> String {
    let mut first = WorkerProcess::spawn(&stack.env).await;
    first.invoke(Some("after-claim"), &batch(app, project, 1)).await;
    first.killed_at("after-claim").await;
    let id = medic_core::AppId::new("argocd", app);
    let claimed = stack.store.history(&id).await.unwrap().attempts;
    assert_eq!(claimed.len(), 1, "{claimed:?}");
    assert_eq!((claimed[0].rung, claimed[0].outcome), (rung, medic_core::Outcome::Requested), "an unfinished claim");
    let key = claimed[0].idempotency_key.clone().unwrap().to_string();

    tokio::time::sleep(VISIBILITY).await;
    let mut second = WorkerProcess::spawn(&stack.env).await;
    second.invoke(None, &batch(app, project, 2)).await;
    let answer = second.answer().await;
    assert_eq!(answer["batchItemFailures"], serde_json::json!([]), "the redelivery is handled: {answer}");
    let history = stack.store.history(&id).await.unwrap().attempts;
    assert!(history.iter().all(|a| a.rung != Rung::Escalate), "no escalation: {history:?}");
    // Completed under its key: a refresh verified, a sync accepted (`Sent`: whether it started is
    // the next read's to judge, issue 24) or seen started.
    assert!(
        history.iter().any(|a| a.rung == rung
            && matches!(a.outcome, medic_core::Outcome::Succeeded | medic_core::Outcome::Sent)
            && a.idempotency_key.as_ref().map(|k| k.to_string()) == Some(key.clone())),
        "the claim completed under its key: {history:?}"
    );
    key
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_sigkilled_between_a_sync_claim_and_its_post_syncs_once_under_the_claims_key_on_redelivery() {
    let stack = stack().await;
    let key = kill_after_claim_and_redeliver(&stack, "observability", "platform", Rung::Sync).await;
    let syncs: Vec<serde_json::Value> =
        stack.sim.requests().into_iter().filter(|r| r.method == "POST" && r.path.ends_with("/sync")).filter_map(|r| r.body).collect();
    assert_eq!(syncs.len(), 1, "exactly one sync reached Argo CD");
    assert!(syncs[0]["infos"].as_array().unwrap().iter().any(|i| i["value"] == key.as_str()), "under the claim's key: {}", syncs[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_sigkilled_between_a_hard_refresh_claim_and_its_get_refreshes_once_on_redelivery() {
    let stack = stack().await;
    // The hard refresh reconciles without healing, so the incident (and its record) stays open.
    stack.sim.set_outcomes("fraud-scoring", medic_sim::Outcomes { hard_refresh: medic_sim::RefreshOutcome::Noop, ..Default::default() });
    kill_after_claim_and_redeliver(&stack, "fraud-scoring", "payments", Rung::HardRefresh).await;
    assert_eq!(stack.sim.counts().hard_refresh, 1, "exactly one hard refresh reached Argo CD");
}

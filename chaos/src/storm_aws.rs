//! `medic-chaos storm --moto`: the storm on the AWS adapters, and what it costs in AWS requests.
//!
//! The same fleet and deliveries as the in-memory storm, but every function is built as its
//! Lambda `main` builds it (`from_env` on a `LambdaEnv`): SQS and DynamoDB are moto_server on
//! 127.0.0.1, the budgets are the shared buckets on the state table. The event source mapping is
//! emulated as Lambda runs it: each worker receives up to ten messages, invokes the handler, and
//! deletes what did not fail; a failed message comes back when its visibility timeout runs out
//! (30 s here: longer than any batch takes, as production's 360 s is six times the worker's
//! timeout; a delete after it would find its receipt stale, as on Lambda, and the message would
//! be handled again).
//!
//! The exit status is non-zero unless every app healed with no action twice. Every SDK call is
//! counted per function by an interceptor, with the items of batch and
//! transaction calls, and every invocation is timed: docs/cost.md prices these counts.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents, interceptors::BeforeSerializationInterceptorContextRef};
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use medic_adapters::lambda_env::LambdaEnv;
use medic_sim::moto::{moto, unique};
use medic_sim::{ArgoSim, SimConfig};
use rand::SeedableRng;
use rand::seq::SliceRandom;

use crate::storm::{Options, SECRET, Tally, fleet_sim, notification, request, tally};

/// The queue's visibility timeout in this run: a failed message is handed out again after it.
const VISIBILITY: Duration = Duration::from_secs(30);

/// SDK calls of one function: per `Service:Operation`, calls and the items they carried (a batch
/// or transaction's entries, 1 for a single-item call).
#[derive(Debug, Clone, Default)]
struct CallCounter {
    calls: Arc<Mutex<BTreeMap<String, (u64, u64)>>>,
}

impl CallCounter {
    fn snapshot(&self) -> BTreeMap<String, (u64, u64)> {
        self.calls.lock().expect("counter lock").clone()
    }
}

impl Intercept for CallCounter {
    fn name(&self) -> &'static str {
        "StormCallCounter"
    }

    fn read_before_serialization(
        &self,
        ctx: &BeforeSerializationInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let meta = cfg.load::<Metadata>().ok_or("an SDK operation without metadata")?;
        let input = ctx.input();
        let items = if let Some(i) = input.downcast_ref::<aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsInput>() {
            i.transact_items().len()
        } else if let Some(i) = input.downcast_ref::<aws_sdk_dynamodb::operation::batch_get_item::BatchGetItemInput>() {
            i.request_items().map_or(0, |r| r.values().map(|k| k.keys().len()).sum())
        } else if let Some(i) = input.downcast_ref::<aws_sdk_sqs::operation::send_message_batch::SendMessageBatchInput>() {
            i.entries().len()
        } else if let Some(i) = input.downcast_ref::<aws_sdk_sqs::operation::delete_message_batch::DeleteMessageBatchInput>() {
            i.entries().len()
        } else {
            1
        };
        let mut calls = self.calls.lock().expect("counter lock");
        let entry = calls.entry(format!("{}:{}", meta.service(), meta.name())).or_default();
        entry.0 += 1;
        entry.1 += items as u64;
        Ok(())
    }
}

static ENV: OnceLock<HashMap<&'static str, String>> = OnceLock::new();

fn lookup(name: &str) -> Option<String> {
    ENV.get().and_then(|env| env.get(name).cloned())
}

/// Invocations of one function and their total duration.
#[derive(Debug, Default, Clone, Copy)]
struct Timing {
    invocations: u64,
    total: Duration,
}

impl Timing {
    fn add(&mut self, d: Duration) {
        self.invocations += 1;
        self.total += d;
    }
}

pub async fn run(o: Options) -> anyhow::Result<bool> {
    let sample: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(medic_sim::workspace_root().join("events/webhook/stale-progressing.json"))?)?;
    let sdk = medic_adapters::aws::sdk_config(Some(&moto().url)).await;
    // The event source mapping's own calls (receive, delete) are billed too: counted apart.
    let event_source = CallCounter::default();
    let sqs = aws_sdk_sqs::Client::from_conf(aws_sdk_sqs::config::Builder::from(&sdk).interceptor(event_source.clone()).build());
    let setup = aws_sdk_sqs::Client::new(&sdk);
    let ddb = aws_sdk_dynamodb::Client::new(&sdk);
    let queue_url = setup
        .create_queue()
        .queue_name(unique("storm-work"))
        .attributes(QueueAttributeName::VisibilityTimeout, VISIBILITY.as_secs().to_string())
        .send()
        .await?
        .queue_url
        .unwrap_or_default();
    let table = unique("storm-state");
    medic_adapters::dynamodb::create_table(&ddb, &table).await?;
    let (sim, stale): (ArgoSim, _) = fleet_sim(&o).await?;
    ENV.set(HashMap::from([
        ("AWS_ENDPOINT_URL", moto().url.clone()),
        ("MEDIC_INSTANCE_ID", "storm".to_owned()),
        ("QUEUE_URL", queue_url.clone()),
        ("TABLE_NAME", table.clone()),
        ("ARGOCD_SERVER", sim.base_url()),
        ("ARGOCD_AUTH_TOKEN", SimConfig::default().tokens[0].token.clone()),
        ("MEDIC_WEBHOOK_SECRET", SECRET.to_owned()),
        ("MEDIC_WORK_ITEM_KEY", "storm-work-item-key-not-for-production".to_owned()),
        ("MEDIC_DRY_RUN", "false".to_owned()),
        ("MEDIC_WORKER_MAX_CONCURRENCY", o.workers.to_string()),
        ("MEDIC_REFRESH_PER_MINUTE", o.refresh_per_minute.to_string()),
    ]))
    .map_err(|_| anyhow::anyhow!("the storm's environment is set once"))?;
    let env = async |counter: &CallCounter| anyhow::Ok(LambdaEnv::from_lookup(lookup).await?.with_interceptor(counter.clone()));
    let counters: BTreeMap<&str, CallCounter> = ["ingest", "worker", "sweeper"].into_iter().map(|f| (f, CallCounter::default())).collect();
    let ingest = medic_ingest::LambdaIngest::from_env(&env(&counters["ingest"]).await?).await?;
    let mut workers = Vec::new();
    for _ in 0..o.running.unwrap_or(o.workers).max(1) {
        workers.push(medic_worker::LambdaWorker::from_env(&env(&counters["worker"]).await?).await?);
    }
    let sweeper = medic_sweeper::LambdaSweeper::from_env(&env(&counters["sweeper"]).await?).await?;
    let mut timings: BTreeMap<&str, Timing> = BTreeMap::new();

    let mut deliveries: Vec<String> = stale.iter().flat_map(|app| std::iter::repeat_n(notification(&sample, app), o.copies)).collect();
    deliveries.shuffle(&mut rand::rngs::StdRng::seed_from_u64(o.seed));
    let mut rejected = 0;
    for body in &deliveries {
        let started = Instant::now();
        rejected += usize::from(ingest.handle(request(body.clone())).await.status() != 202);
        timings.entry("ingest").or_default().add(started.elapsed());
    }

    // The event source mapping, one poller per worker: receive, invoke, delete what did not fail.
    let started = Instant::now();
    let worker_timing = Arc::new(Mutex::new((Timing::default(), 0usize)));
    let pollers = workers.iter().map(|worker| {
        let (sqs, setup, queue_url, worker_timing) = (&sqs, &setup, &queue_url, worker_timing.clone());
        async move {
            loop {
                let received = sqs
                    .receive_message()
                    .queue_url(queue_url)
                    .max_number_of_messages(10)
                    .wait_time_seconds(1)
                    .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
                    .send()
                    .await?;
                let messages = received.messages.unwrap_or_default();
                if messages.is_empty() {
                    if queue_is_empty(setup, queue_url).await? {
                        return anyhow::Ok(());
                    }
                    continue;
                }
                let mut event = SqsEvent::default();
                event.records = messages.iter().map(record).collect();
                let invoked = Instant::now();
                let response = worker.handle_batch(event).await;
                let failed: Vec<String> = match response {
                    Ok(r) => r.batch_item_failures.into_iter().map(|f| f.item_identifier).collect(),
                    Err(_) => messages.iter().filter_map(|m| m.message_id.clone()).collect(),
                };
                {
                    let mut t = worker_timing.lock().expect("timing lock");
                    t.0.add(invoked.elapsed());
                    t.1 += failed.len();
                }
                for m in messages.iter().filter(|m| !m.message_id.as_ref().is_some_and(|id| failed.contains(id))) {
                    let deleted =
                        sqs.delete_message().queue_url(queue_url).receipt_handle(m.receipt_handle.clone().unwrap_or_default()).send().await;
                    if let Err(e) = deleted {
                        // The event source mapping would leave it too: it comes back and is a duplicate.
                        eprintln!(
                            "storm: a delete failed ({}); the message will be delivered again",
                            medic_adapters::aws::describe("DeleteMessage", &e)
                        );
                    }
                }
            }
        }
    });
    for result in futures::future::join_all(pollers).await {
        result?;
    }
    let drain_secs = started.elapsed().as_secs_f64();
    let (worker_time, failures) = *worker_timing.lock().expect("timing lock");
    timings.insert("worker", worker_time);
    let swept_at = Instant::now();
    let swept = sweeper.run().await?;
    timings.entry("sweeper").or_default().add(swept_at.elapsed());

    let Tally { healed, duplicates, app_calls, calls, bytes, per_app, bound } = tally(&sim, &o);
    println!(
        "storm (moto): {} apps, {} stale, {} deliveries ({} each, shuffled, {rejected} rejected), {} of at most {} workers, refresh budget {}/min (shared buckets on the state table)",
        o.apps,
        o.stale,
        deliveries.len(),
        o.copies,
        workers.len(),
        o.workers,
        o.refresh_per_minute
    );
    println!(
        "argo medic: {calls} Argo CD calls ({} to apps), {bytes} bytes; {failures} failed messages; drained in {drain_secs:.1} s; the sweep after listed {} and looked at {}",
        app_calls, swept.listed, swept.candidates
    );
    println!("AWS requests per function (calls / items), per delivery and per remediated app:");
    for (function, counter) in counters.iter().map(|(f, c)| (*f, c)).chain([("events", &event_source)]) {
        for (op, (n, items)) in counter.snapshot() {
            println!(
                "  {function:<8} {op:<32} {n:>7} / {items:>7}   {:>6.3} per delivery   {:>6.3} per app",
                n as f64 / deliveries.len().max(1) as f64,
                n as f64 / o.stale.max(1) as f64
            );
        }
    }
    println!("invocations (count, total s, mean ms):");
    for (function, t) in &timings {
        println!(
            "  {function:<8} {:>7} {:>9.1} {:>9.1}",
            t.invocations,
            t.total.as_secs_f64(),
            t.total.as_secs_f64() * 1000.0 / t.invocations.max(1) as f64
        );
    }
    println!(
        "storm: {healed} of {} healthy, {duplicates} duplicate actions, {per_app:.3} calls per remediated app, drain {:.2}x the budget bound ({bound:.0} s)",
        o.apps,
        drain_secs / bound.max(0.001)
    );
    // Healed, and no action twice. The calls per app are reported, not required here: the
    // in-memory storm holds them to 2; against moto's latency a few steps find their app busy
    // and are re-enqueued, and read it again when they come back.
    Ok(healed == o.apps && duplicates == 0)
}

/// Nothing visible, in flight or delayed.
async fn queue_is_empty(sqs: &aws_sdk_sqs::Client, url: &str) -> anyhow::Result<bool> {
    let attrs =
        sqs.get_queue_attributes().queue_url(url).attribute_names(QueueAttributeName::All).send().await?.attributes.unwrap_or_default();
    let n = |a: QueueAttributeName| attrs.get(&a).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    Ok(n(QueueAttributeName::ApproximateNumberOfMessages)
        + n(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        + n(QueueAttributeName::ApproximateNumberOfMessagesDelayed)
        == 0)
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

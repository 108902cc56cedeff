//! The serverless pipeline end to end on real wire protocols: SQS and DynamoDB in moto_server,
//! Argo CD in the simulator, the functions' handlers driven with real aws_lambda_events payloads
//! (Function URL requests parsed by lambda_http, SQS batches built from messages received from
//! the queue, as Lambda's event source mapping does).

use std::collections::BTreeSet;
use std::time::Duration;

use aws_lambda_events::event::sqs::SqsEvent;
use medic_adapters::argocd::HttpArgoClient;
use medic_adapters::dynamodb::DynamoDbStore;
use medic_adapters::memory::{LogEscalator, SystemClock};
use medic_adapters::sqs::SqsWorkQueue;
use medic_adapters::telemetry::Metrics;
use medic_core::ports::{DedupeStore, IncidentStore, WorkQueue};
use medic_core::switch::{FixedSwitch, Mode, Switch, SwitchStore};
use medic_ingest::{Ingest, IngestConfig, WebhookSecrets};
use medic_sim::{ArgoSim, Fault, FaultKind, SimConfig};
use medic_sweeper::{Sweeper, SweeperConfig};
use medic_worker::Handled;

use crate::support::stack::{AwsStack, TestWorker};
use crate::support::{LosesCompletion, events_dir, sim_with_samples};

/// The shared secret of the sample Function URL requests in events/lambda/ingest/.
const SECRET: &str = "local-test-secret-not-for-production";
/// The key signed refresh requests are checked with (not the webhook secret).
const REFRESH_SECRET: &str = "pipeline-test-refresh-signing-key";

/// The pipeline's stack: a work queue with a DLQ after two receives and a 1 s visibility timeout,
/// and a state table; the handlers below are wired to it.
type Stack = AwsStack;

async fn stack() -> Stack {
    AwsStack::new("work", 1, 2).await
}

impl AwsStack {
    fn sweeper(
        &self,
        sim: &ArgoSim,
    ) -> Sweeper<crate::support::stack::TestPorts<DynamoDbStore, LogEscalator, medic_core::switch::FixedSwitch>> {
        let config = SweeperConfig { work_item_key: Some(crate::support::work_item_key()), ..SweeperConfig::default() };
        Sweeper::from(self.on_table(sim).sweep(config))
    }

    fn ingest(&self, sim: &ArgoSim) -> Ingest<SqsWorkQueue, HttpArgoClient, SystemClock, Metrics> {
        let config = IngestConfig { max_refresh_apps: 5, work_item_key: Some(crate::support::work_item_key()), ..IngestConfig::default() };
        Ingest::new(self.on_table(sim).intake(config), WebhookSecrets::new(SECRET, Some("the-previous-secret-still-valid".into())))
            .with_refresh_secrets(Some(WebhookSecrets::new(REFRESH_SECRET, None)))
    }

    fn worker<S: IncidentStore>(&self, sim: &ArgoSim, store: S) -> TestWorker<S, LogEscalator, FixedSwitch> {
        self.worker_with(sim, store, LogEscalator::default(), FixedSwitch::default())
    }

    fn switched_worker<S: IncidentStore, W: Switch>(&self, sim: &ArgoSim, store: S, switch: W) -> TestWorker<S, LogEscalator, W> {
        self.worker_with(sim, store, LogEscalator::default(), switch)
    }

    /// One poll of the event source mapping: receive, invoke, delete what did not fail.
    async fn poll<S: IncidentStore, W: Switch>(&self, worker: &TestWorker<S, LogEscalator, W>) -> (usize, Vec<String>) {
        let messages = self.receive().await;
        if messages.is_empty() {
            return (0, Vec::new());
        }
        let response = worker.handle_batch(sqs_event(&messages)).await.expect("every record has an id");
        let failed: Vec<String> = response.batch_item_failures.iter().map(|f| f.item_identifier.clone()).collect();
        for m in messages.iter().filter(|m| !failed.contains(m.message_id.as_ref().unwrap())) {
            self.delete(m).await;
        }
        (messages.len(), failed)
    }
}

/// An SQS event as Lambda delivers it, from messages received from the queue.
fn sqs_event(messages: &[aws_sdk_sqs::types::Message]) -> SqsEvent {
    let mut event = SqsEvent::default();
    event.records = messages.iter().map(crate::support::sqs_record).collect();
    event
}

fn lambda_request(name: &str) -> lambda_http::Request {
    let text = std::fs::read_to_string(events_dir().join("lambda/ingest").join(name)).unwrap();
    lambda_http::request::from_str(&text).expect("a Function URL request")
}

/// A Function URL request for `/v1/events` with this body and headers.
fn webhook(body: &str, headers: &[(&str, &str)]) -> lambda_http::Request {
    let mut template: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(events_dir().join("lambda/ingest/webhook-sync-failed.json")).unwrap()).unwrap();
    template["body"] = body.into();
    template["headers"] =
        headers.iter().map(|(k, v)| (k.to_string(), serde_json::Value::from(*v))).collect::<serde_json::Map<_, _>>().into();
    lambda_http::request::from_str(&template.to_string()).unwrap()
}

fn sample_webhook(name: &str) -> String {
    std::fs::read_to_string(events_dir().join("webhook").join(name)).unwrap()
}

/// The identity of the outage of `scope` the sweeper keeps (its first sighting, RFC 3339 seconds).
async fn outage_since(stack: &Stack, scope: &str) -> String {
    let marker = medic_core::keys::fleet_sighting_marker(scope);
    let sighted = stack.store().sighted(&marker, Duration::from_secs(1800)).await.unwrap();
    sighted.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

async fn drain<S: IncidentStore, W: Switch>(stack: &Stack, worker: &TestWorker<S, LogEscalator, W>) {
    // Until nothing is visible or in flight: a delivery that found another one handling its
    // item is reported failed and comes back after the visibility timeout.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        if stack.poll(worker).await.0 == 0 {
            // Delayed re-checks (waits) are not in flight: they are the worker's own next looks.
            let (visible, in_flight, _delayed) = stack.depth(&stack.queue_url).await;
            if visible + in_flight == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    panic!("the queue did not drain within a minute");
}

#[tokio::test]
async fn a_webhook_flows_through_ingest_and_the_queue_to_exactly_one_argo_cd_action() {
    let (stack, sim) = (stack().await, sim_with_samples(SimConfig::default()).await);
    let ingest = stack.ingest(&sim);
    let response = ingest.handle(lambda_request("webhook-sync-failed.json")).await;
    assert_eq!(response.status(), 202, "{:?}", response.body());
    let worker = stack.worker(&sim, stack.store());
    let (received, failed) = stack.poll(&worker).await;
    assert_eq!((received, failed.len()), (1, 0));
    assert_eq!(sim.counts().sync, 1, "the CRD-race failure is re-synced once");
    let app = sim.app("argocd", "observability").unwrap();
    let infos = app["operation"]["info"]
        .as_array()
        .cloned()
        .or_else(|| app["status"]["operationState"]["operation"]["info"].as_array().cloned())
        .unwrap();
    assert!(infos.iter().any(|i| i["name"] == medic_core::app::IDEMPOTENCY_INFO_NAME), "{infos:?}");
    assert_eq!(stack.depth(&stack.dlq_url).await.0, 0);
}

#[tokio::test]
async fn the_same_notification_three_times_makes_one_action() {
    // The copies are retried (1 s visibility) while the first is handled; under a loaded machine
    // that can take more than two receives, which the shared stack's DLQ after two would count as
    // dead letters (seen once in CI: one duplicate instead of two). Ten receives here.
    let (stack, sim) = (AwsStack::new("work", 1, 10).await, sim_with_samples(SimConfig::default()).await);
    let ingest = stack.ingest(&sim);
    let body = sample_webhook("sync-failed-transient.json");
    for _ in 0..3 {
        let r =
            ingest.handle(webhook(&body, &[("content-type", "application/json"), ("authorization", &format!("Bearer {SECRET}"))])).await;
        assert_eq!(r.status(), 202);
    }
    let worker = stack.worker(&sim, stack.store());
    drain(&stack, &worker).await;
    assert_eq!(sim.counts().sync, 1, "one sync for three deliveries");
    // Handled together, the two copies find the first in progress and come back later as
    // duplicates; none is dropped while the first is still being handled.
    assert_eq!(worker.metrics.total("DuplicateMessages"), 2.0);
    assert_eq!(stack.depth(&stack.dlq_url).await.0, 0, "no copy dead-lettered");
}

#[tokio::test]
async fn two_workers_on_one_app_at_once_make_one_action() {
    let (stack, sim) = (stack().await, sim_with_samples(SimConfig::default()).await);
    let ingest = stack.ingest(&sim);
    let auth = format!("Bearer {SECRET}");
    let headers = [("content-type", "application/json"), ("authorization", auth.as_str())];
    // Two different pieces of news about one app: two messages with different dedupe keys.
    let mut second: serde_json::Value = serde_json::from_str(&sample_webhook("sync-failed-transient.json")).unwrap();
    second["trigger"] = "on-sync-status-unknown".into();
    assert_eq!(ingest.handle(webhook(&sample_webhook("sync-failed-transient.json"), &headers)).await.status(), 202);
    assert_eq!(ingest.handle(webhook(&second.to_string(), &headers)).await.status(), 202);
    let messages = stack.receive().await;
    assert_eq!(messages.len(), 2);
    let (a, b) = (stack.worker(&sim, stack.store()), stack.worker(&sim, stack.store()));
    let event = sqs_event(&messages);
    let (ra, rb) = tokio::join!(a.handle_message(&event.records[0]), b.handle_message(&event.records[1]));
    let outcomes = [ra.unwrap(), rb.unwrap()];
    assert_eq!(sim.counts().sync, 1, "{outcomes:?}");
    assert!(outcomes.iter().any(|o| matches!(o, Handled::Requeued { .. } | Handled::Stepped(_))), "{outcomes:?}");
}

#[tokio::test]
async fn a_poison_message_fails_alone_and_ends_in_the_dlq() {
    let (stack, sim) = (stack().await, sim_with_samples(SimConfig::default()).await);
    let batch: SqsEvent =
        serde_json::from_str(&std::fs::read_to_string(events_dir().join("lambda/worker/batch-with-poison.json")).unwrap()).unwrap();
    let worker = stack.worker(&sim, stack.store());
    let response = worker.handle_batch(batch.clone()).await.unwrap();
    let failed: Vec<_> = response.batch_item_failures.iter().map(|f| f.item_identifier.as_str()).collect();
    assert_eq!(failed, vec![batch.records[1].message_id.as_deref().unwrap()], "only the poison message fails");
    assert_eq!(worker.metrics.total("PoisonMessages"), 1.0);

    // On the real queue: a poison message among good ones is retried, then moved to the DLQ.
    for r in &batch.records {
        stack.sqs.send_message().queue_url(&stack.queue_url).message_body(r.body.clone().unwrap()).send().await.unwrap();
    }
    let fresh = stack.worker(&sim, stack.store());
    for _ in 0..6 {
        stack.poll(&fresh).await;
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    assert_eq!(stack.depth(&stack.queue_url).await, (0, 0, 0));
    assert_eq!(stack.depth(&stack.dlq_url).await.0, 1, "the poison message is in the DLQ");
}

#[tokio::test]
async fn an_argo_cd_outage_retries_the_message_instead_of_losing_it() {
    let (stack, sim) = (stack().await, sim_with_samples(SimConfig::default()).await);
    let ingest = stack.ingest(&sim);
    assert_eq!(ingest.handle(lambda_request("webhook-sync-failed.json")).await.status(), 202);
    // Argo CD answers 503 to every attempt the client makes for this message (4), then recovers.
    sim.inject(Fault {
        path_contains: Some("observability".into()),
        method: None,
        kind: FaultKind::Status { code: 503, retry_after_secs: None },
        times: 4,
    });
    let worker = stack.worker(&sim, stack.store());
    let (received, failed) = stack.poll(&worker).await;
    assert_eq!((received, failed.len()), (1, 1), "the message is reported failed, so SQS redelivers it");
    assert_eq!(sim.counts().sync, 0);
    tokio::time::sleep(Duration::from_millis(1100)).await; // the visibility timeout
    let (received, failed) = stack.poll(&worker).await;
    assert_eq!((received, failed.len()), (1, 0), "the redelivered message is handled");
    assert_eq!(sim.counts().sync, 1, "and leads to the one sync");
    assert_eq!(stack.depth(&stack.dlq_url).await.0, 0);
}

#[tokio::test]
async fn a_worker_killed_between_action_and_record_does_not_act_again_on_redelivery() {
    let (stack, sim) = (stack().await, sim_with_samples(SimConfig::default()).await);
    let ingest = stack.ingest(&sim);
    assert_eq!(
        ingest
            .handle(webhook(
                &sample_webhook("sync-failed-transient.json"),
                &[("content-type", "application/json"), ("authorization", &format!("Bearer {SECRET}"))]
            ))
            .await
            .status(),
        202
    );
    let dying = stack.worker(&sim, LosesCompletion(stack.store()));
    let (_, failed) = stack.poll(&dying).await;
    assert_eq!(failed.len(), 1, "the invocation did not finish");
    assert_eq!(sim.counts().sync, 1);
    tokio::time::sleep(Duration::from_millis(1200)).await; // visibility timeout: SQS redelivers
    let next = stack.worker(&sim, stack.store());
    drain(&stack, &next).await;
    assert_eq!(sim.counts().sync, 1, "no second sync on redelivery");
}

#[tokio::test]
async fn a_wait_is_rechecked_later_by_a_delayed_message_not_by_the_dlq() {
    let (stack, sim) = (stack().await, sim_with_samples(SimConfig::default()).await);
    let ingest = stack.ingest(&sim);
    // identity: a migration hook is running, so the decision is to wait.
    let mut event: serde_json::Value = serde_json::from_str(&sample_webhook("healthy.json")).unwrap();
    event["app"]["name"] = "identity".into();
    event["trigger"] = "on-sync-running".into();
    assert_eq!(
        ingest
            .handle(webhook(&event.to_string(), &[("content-type", "application/json"), ("authorization", &format!("Bearer {SECRET}"))]))
            .await
            .status(),
        202
    );
    let worker = stack.worker(&sim, stack.store());
    let (received, failed) = stack.poll(&worker).await;
    assert_eq!((received, failed.len()), (1, 0), "a wait is not a failure");
    let (visible, in_flight, delayed) = stack.depth(&stack.queue_url).await;
    assert_eq!((visible, in_flight, delayed), (0, 0, 1), "one delayed recheck message, nothing held");
    assert_eq!(stack.depth(&stack.dlq_url).await.0, 0);
    assert_eq!(sim.counts().sync + sim.counts().refresh, 0);
}

/// The recorded Function URL events of a rejected webhook never reach the real queue; every
/// status and reason of the handler is tested on the in-memory queue in functions/ingest/tests/.
#[tokio::test]
async fn rejected_webhooks_never_reach_the_queue_and_a_rotated_secret_still_does() {
    let (stack, sim) = (stack().await, sim_with_samples(SimConfig::default()).await);
    let ingest = stack.ingest(&sim);
    for (request, status) in [(lambda_request("webhook-unauthenticated.json"), 401), (lambda_request("webhook-malformed.json"), 400)] {
        assert_eq!(ingest.handle(request).await.status(), status);
    }
    assert_eq!(stack.depth(&stack.queue_url).await, (0, 0, 0), "nothing rejected reaches the queue");
    // The previous secret still works during a rotation.
    let body = sample_webhook("hook-failed.json");
    let rotated = ingest
        .handle(webhook(&body, &[("content-type", "application/json"), ("authorization", "Bearer the-previous-secret-still-valid")]))
        .await;
    assert_eq!(rotated.status(), 202);
    assert_eq!(stack.depth(&stack.queue_url).await.0, 1, "the accepted one is on the queue");
}

#[tokio::test]
async fn a_signed_refresh_request_enqueues_the_named_apps_within_the_cap() {
    let (stack, sim) = (stack().await, sim_with_samples(SimConfig::default()).await);
    let ingest = stack.ingest(&sim);
    let now = chrono::Utc::now().to_rfc3339();
    let signed_with = |secret: &str, body: String| {
        let sig = WebhookSecrets::new(secret, None).sign(body.as_bytes());
        let mut template: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(events_dir().join("lambda/ingest/webhook-sync-failed.json")).unwrap()).unwrap();
        template["rawPath"] = "/v1/refresh".into();
        template["requestContext"]["http"]["path"] = "/v1/refresh".into();
        template["body"] = body.into();
        template["headers"] = serde_json::json!({"content-type": "application/json", "x-argo-medic-signature": sig});
        lambda_http::request::from_str(&template.to_string()).unwrap()
    };
    let signed = |body: String| signed_with(REFRESH_SECRET, body);
    // L1: the webhook secret (in argocd-notifications-secret, readable by more people) does not
    // sign refreshes; before, it was the only key.
    let by_name = format!(r#"{{"apps":[{{"name":"inventory","namespace":"argocd"}}],"requestedAt":"{now}","requestedBy":"ci"}}"#);
    assert_eq!(ingest.handle(signed_with(SECRET, by_name.clone())).await.status(), 403, "signed with the webhook secret");
    // A deployment without a refresh secret has no refresh route.
    let off = stack.ingest(&sim).with_refresh_secrets(None);
    assert_eq!(off.handle(signed(by_name)).await.status(), 404, "signed refreshes are off without a refresh secret");
    let by_selector = format!(r#"{{"selector":"team=platform","requestedAt":"{now}","requestedBy":"ci"}}"#);
    let response = ingest.handle(signed(by_selector)).await;
    assert_eq!(response.status(), 202, "{:?}", response.body());
    let accepted: serde_json::Value = serde_json::from_slice(response.body().as_ref()).unwrap();
    assert_eq!(accepted["accepted"], 4, "the four apps labelled team=platform");
    let too_many = format!(r#"{{"projects":["payments"],"requestedAt":"{now}","requestedBy":"ci"}}"#);
    assert_eq!(ingest.handle(signed(too_many)).await.status(), 400, "more apps than one call may touch");
    let stale =
        r#"{"apps":[{"name":"inventory","namespace":"argocd"}],"requestedAt":"2026-01-01T00:00:00Z","requestedBy":"ci"}"#.to_owned();
    assert_eq!(ingest.handle(signed(stale)).await.status(), 403);
    let mut forged =
        signed(format!(r#"{{"apps":[{{"name":"inventory","namespace":"argocd"}}],"requestedAt":"{now}","requestedBy":"ci"}}"#));
    forged.headers_mut().insert("x-argo-medic-signature", "sha256=00".parse().unwrap());
    assert_eq!(ingest.handle(forged).await.status(), 403);

    let worker = stack.worker(&sim, stack.store());
    drain(&stack, &worker).await;
    assert_eq!(sim.counts().refresh, 4, "each selected app refreshed once");

    // L1: an app that opted out is not refreshed, whoever asks (before, it was).
    let opted_out = format!(r#"{{"apps":[{{"name":"ledger","namespace":"argocd"}}],"requestedAt":"{now}","requestedBy":"ci"}}"#);
    assert_eq!(ingest.handle(signed(opted_out)).await.status(), 202, "accepted: ingest does not read the app");
    drain(&stack, &worker).await;
    assert_eq!(sim.counts().refresh, 4, "the opted-out app was read, not refreshed");
}

#[tokio::test]
async fn the_sweeper_enqueues_what_no_notification_reported_once_per_window() {
    let (stack, sim) = (stack().await, sim_with_samples(SimConfig::default()).await);
    let sweeper = stack.sweeper(&sim);
    let first = sweeper.run().await.unwrap();
    assert_eq!(first.listed, 33);
    assert!(first.enqueued >= 25, "{first:?}");
    let again = sweeper.run().await.unwrap();
    assert_eq!(again.enqueued, 0, "nothing twice within the window: {again:?}");
    assert_eq!(again.skipped, first.enqueued);
    assert_eq!(stack.depth(&stack.queue_url).await.0, first.enqueued);
    let worker = stack.worker(&sim, stack.store());
    drain(&stack, &worker).await;
    assert!(sim.counts().refresh >= 3 && sim.counts().sync >= 3, "{:?}", sim.counts());
}

/// MissedNotifications (issue 10): the apps in trouble that no notification reported are what
/// the sweeper exists for, and it counts them, each once a day. A notified app is not counted,
/// even when, as here (a dry run), handling it opened no incident.
#[tokio::test]
async fn the_sweeper_counts_the_apps_in_trouble_no_notification_reported_once_a_day() {
    let (stack, sim) = (stack().await, sim_with_samples(SimConfig::default()).await);
    let mut worker = stack.worker(&sim, stack.store());
    worker.config.dry_run = true;
    let ingest = stack.ingest(&sim);
    assert_eq!(ingest.handle(lambda_request("webhook-sync-failed.json")).await.status(), 202);
    assert_eq!(stack.poll(&worker).await, (1, vec![]));
    assert!(stack.store().open_incidents().await.unwrap().is_empty(), "a dry run opens no incident");

    let sweeper = stack.sweeper(&sim);
    let first = sweeper.run().await.unwrap();
    assert!(first.candidates > 10, "{first:?}");
    assert_eq!(first.missed_notifications, first.candidates - 1, "every app in trouble but the notified one: {first:?}");
    assert_eq!(sweeper.metrics.total("MissedNotifications"), first.missed_notifications as f64);
    let second = sweeper.run().await.unwrap();
    assert_eq!(second.missed_notifications, 0, "each app once a day: {second:?}");
}

/// A fleet outage through the functions (issue 10): the sweeper holds the covered apps back and
/// probes three canaries; once Git is back and a canary heals, it enqueues the rest as one
/// recovery wave, and the workers refresh each once. No app of the cause is escalated on its
/// own: the cause is, once, when it has lasted past its time bound (an hour; this one began 70
/// minutes ago).
#[tokio::test]
async fn the_sweeper_holds_an_outage_back_probes_canaries_and_releases_one_wave_when_one_heals() {
    let stack = stack().await;
    let refused = "rpc error: code = Unknown desc = failed to list refs: dial tcp 10.20.30.40:443: connect: connection refused";
    let sim = crate::support::outage_fleet(60, 40, "git.down.example.com", 70, Some(refused), |_, _| None).await;
    let sweeper = stack.sweeper(&sim);
    let during = sweeper.run().await.unwrap();
    assert_eq!((during.outages, during.held, during.probed, during.healed, during.released), (1, 37, 3, 0, 0), "{during:?}");
    assert_eq!(during.escalated, 1, "past its time bound: {during:?}");
    let escalations: Vec<String> =
        sweeper.escalator.alerts().into_iter().filter(|a| a.starts_with("Escalation: fleet outage past its time bound")).collect();
    assert_eq!(escalations.len(), 1, "{escalations:?}");
    assert!(
        escalations[0].contains("git.down.example.com") && escalations[0].contains("40 of 40 apps of source host git.down.example.com"),
        "{escalations:?}"
    );
    let still = sweeper.run().await.unwrap();
    assert_eq!(still.held, 37, "{still:?}");
    let told = sweeper.escalator.alerts().into_iter().filter(|a| a.starts_with("Escalation: fleet outage past its time bound")).count();
    assert_eq!(told, 1, "escalated once per cause, not once per sweep");
    let queued: Vec<String> = stack.receive().await.iter().filter_map(|m| m.body.clone()).collect();
    assert_eq!(during.enqueued, 0, "nothing of the cause goes to the workers while it lasts: {queued:?}");
    assert_eq!(sim.counts().refresh, 6, "three canaries probed by each of the two sweeps");
    // A notification of a covered app meanwhile is left to the cause by the worker.
    let worker = stack.worker(&sim, stack.store());
    let app = medic_core::event::AppRef { name: "app-00010".into(), namespace: "argocd".into(), project: Some("team-e".into()) };
    let trigger: medic_core::Trigger = "on-sync-status-unknown".parse().unwrap();
    let item = medic_core::event::WorkItem::for_app(medic_core::event::WorkKind::Notification, app, trigger, "n1", chrono::Utc::now());
    let mut record = aws_lambda_events::event::sqs::SqsMessage::default();
    (record.message_id, record.body) = (Some("n-1".into()), Some(serde_json::to_string(&item).unwrap()));
    assert_eq!(worker.handle_message(&record).await.unwrap(), Handled::HeldByFleet("repo:git.down.example.com".into()));
    assert_eq!(worker.metrics.total("HeldByFleetOutage"), 1.0);
    assert_eq!(sim.counts().refresh, 6, "the held app was read, not refreshed");

    for i in 0..40 {
        let heal = medic_sim::Outcomes { refresh: medic_sim::RefreshOutcome::Heal, ..Default::default() };
        sim.set_outcomes(&format!("app-{:05}", i + 1), heal);
    }
    let after = sweeper.run().await.unwrap();
    assert_eq!((after.probed, after.healed, after.released, after.enqueued), (3, 3, 37, 37), "{after:?}");
    drain(&stack, &worker).await;
    assert_eq!(sim.counts().refresh, 6 + 3 + 37, "one refresh per released app");
    let synced = (1..=40).filter(|i| sim.app("argocd", &format!("app-{i:05}")).is_some_and(|a| a["status"]["sync"]["status"] == "Synced"));
    assert_eq!(synced.count(), 40);
    assert!(worker.escalator.escalations().is_empty(), "{:?}", worker.escalator.escalations());
    assert!(stack.store().open_incidents().await.unwrap().is_empty(), "every wave refresh closed its incident");
}

/// A recovery wave pauses itself when most of a batch fails again: here only the canaries came
/// back (the rest of the host's apps still cannot be compared). The workers record each wave
/// step's outcome in the state table; the one that completes the first batch of 20 with most of
/// it failed leaves the relapse marker, the rest of the wave is held without a call to Argo CD,
/// and the next sweep holds the cause again though its canaries are healthy.
#[tokio::test]
async fn a_recovery_wave_whose_first_batch_fails_again_pauses_itself_and_is_not_released_again() {
    let stack = stack().await;
    let refused = "rpc error: code = Unknown desc = failed to list refs: dial tcp 10.20.30.41:443: connect: connection refused";
    let sim = crate::support::outage_fleet(60, 40, "git.flaky.example.com", 70, Some(refused), |_, _| None).await;
    let sweeper = stack.sweeper(&sim);
    let during = sweeper.run().await.unwrap();
    assert_eq!((during.outages, during.held, during.probed, during.released), (1, 37, 3, 0), "{during:?}");
    let refreshed = |sim: &ArgoSim| -> Vec<String> {
        sim.requests()
            .iter()
            .filter(|r| r.query.iter().any(|(k, _)| k == "refresh"))
            .filter_map(|r| r.path.strip_prefix("/api/v1/applications/").map(str::to_owned))
            .collect()
    };
    let canaries: BTreeSet<String> = refreshed(&sim).into_iter().collect();
    assert_eq!(canaries.len(), 3, "{canaries:?}");
    for canary in &canaries {
        sim.set_outcomes(canary, medic_sim::Outcomes { refresh: medic_sim::RefreshOutcome::Heal, ..Default::default() });
    }
    sim.clear_requests();
    let after = sweeper.run().await.unwrap();
    assert_eq!((after.healed, after.released, after.enqueued), (3, 37, 37), "{after:?}");
    let worker = stack.worker(&sim, stack.store());
    drain(&stack, &worker).await;

    let since = outage_since(&stack, "repo:git.flaky.example.com").await;
    let relapse = medic_core::keys::fleet_relapse_marker("repo:git.flaky.example.com", &since);
    assert!(stack.store().marked(std::slice::from_ref(&relapse)).await.unwrap().contains(&relapse), "the wave paused itself");
    assert_eq!(worker.metrics.total("WavesPaused"), 1.0, "one batch judged failed, one pause");
    let wave_refreshes = refreshed(&sim).into_iter().filter(|a| !canaries.contains(a)).count();
    let held = worker.metrics.total("HeldByFleetOutage") as usize;
    assert!((20..37).contains(&wave_refreshes), "the first batch was stepped, not the whole wave: {wave_refreshes}");
    assert_eq!(wave_refreshes + held, 37, "every wave item was stepped or held: {wave_refreshes} + {held}");
    assert!(worker.escalator.escalations().is_empty(), "no app of the cause escalated: {:?}", worker.escalator.escalations());

    // The cause is seen again; the canaries are healthy now, but the wave stays held.
    sim.clear_requests();
    let again = sweeper.run().await.unwrap();
    assert_eq!((again.outages, again.released, again.enqueued), (1, 0, 0), "{again:?}");
    let hold = medic_core::keys::fleet_hold_marker("repo:git.flaky.example.com");
    assert!(stack.store().marked(std::slice::from_ref(&hold)).await.unwrap().contains(&hold), "notifications are held again");
}

/// A queue that refuses every batch: the sweep dies after its outage turns, before its items are
/// on the queue (as a sweeper killed there, or SQS failing, leaves it).
struct RefusesBatches(SqsWorkQueue);

impl medic_core::ports::WorkQueueDecorator for RefusesBatches {
    type Inner = SqsWorkQueue;
    fn inner(&self) -> &SqsWorkQueue {
        &self.0
    }
    async fn enqueue_batch(&self, _: &[medic_core::event::WorkItem]) -> Result<(), medic_core::ports::QueueError> {
        Err(medic_core::ports::QueueError::unavailable("the sweep died before its items were on the queue"))
    }
}

/// Found by chaos-smoke (2 runs in 7): the sweep whose canary probes showed a Git outage over
/// died before its wave was on the queue. Its canaries had healed, so the next sweep found 9 of
/// the 12 apps down, under the cause's threshold of 10: no cause, no wave, and the scope's
/// `recovering` marker held the apps' own looks; they stayed Unknown. The next sweep now sends
/// the lost wave, and every app of the outage is compared again. Fails before the fix: the
/// second sweep releases nothing and 9 apps stay Unknown.
#[tokio::test]
async fn a_recovery_wave_lost_with_its_sweep_is_sent_by_the_next_though_the_cause_fell_under_its_threshold() {
    let stack = stack().await;
    let sim = crate::support::outage_fleet(20, 12, "git.down.example.com", 10, None, |_, _| None).await;
    let sweeper = stack.sweeper(&sim);
    let during = sweeper.run().await.unwrap();
    assert_eq!((during.outages, during.probed, during.released), (1, 3, 0), "{during:?}");
    // The outage ends: a refresh compares every app again.
    let down: Vec<String> = (0..12).map(|i| format!("app-{:05}", i + 1)).collect();
    assert!(down.iter().all(|n| sim.app("argocd", n).unwrap()["status"]["sync"]["status"] == "Unknown"));
    for name in &down {
        sim.set_outcomes(name, medic_sim::Outcomes { refresh: medic_sim::RefreshOutcome::Heal, ..Default::default() });
    }
    let config = SweeperConfig { work_item_key: Some(crate::support::work_item_key()), ..SweeperConfig::default() };
    let dying = Sweeper::from(stack.on_table(&sim).map_queue(RefusesBatches).sweep(config));
    assert!(dying.run().await.is_err(), "the sweep that released the wave died before sending it");
    let unknown = |sim: &ArgoSim| down.iter().filter(|n| sim.app("argocd", n).unwrap()["status"]["sync"]["status"] == "Unknown").count();
    assert_eq!(unknown(&sim), 9, "its canaries healed");

    let after = sweeper.run().await.unwrap();
    assert_eq!((after.outages, after.released), (0, 9), "no cause under the threshold, and the lost wave sent: {after:?}");
    let again = sweeper.run().await.unwrap();
    assert_eq!(again.released, 0, "sent once: {again:?}");
    let worker = stack.worker(&sim, stack.store());
    drain(&stack, &worker).await;
    assert_eq!(unknown(&sim), 0, "every app of the outage compared again");
    assert!(worker.escalator.escalations().is_empty(), "{:?}", worker.escalator.escalations());
}

/// The hold lasts as long as the outage: every sweep that still sees the cause renews it. Before,
/// the sweep wrote it once (a conditional first sighting that later sweeps found and left alone),
/// so it lapsed two windows after the outage began, and until the next sweep the workers climbed
/// every covered app's ladder. Windows here are 2 s (production: 900 s), sweeps 3 s apart.
#[tokio::test]
async fn the_fleet_hold_is_renewed_by_every_sweep_that_still_sees_the_outage() {
    let stack = stack().await;
    let sim = crate::support::outage_fleet(20, 15, "git.down.example.com", 10, None, |_, _| None).await;
    let mut sweeper = stack.sweeper(&sim);
    sweeper.config.recheck_interval = Duration::from_secs(2);
    let hold = medic_core::keys::fleet_hold_marker("repo:git.down.example.com");
    let held = async || stack.store().marked(std::slice::from_ref(&hold)).await.unwrap().contains(&hold);
    assert_eq!(sweeper.run().await.unwrap().outages, 1);
    assert!(held().await);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(sweeper.run().await.unwrap().outages, 1, "still down");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(held().await, "five seconds in, two after the last sweep saw the outage: still held");
}

/// A cause the repo-server keeps answering from its cache of the failed generation (issue 10):
/// a normal refresh of a canary replays `Manifest generation error (cached)` and cannot tell
/// whether the source is back, so the sweeper hard-refreshes it; it heals, and the wave goes.
#[tokio::test]
async fn canaries_of_a_cached_generation_failure_are_hard_refreshed_and_release_the_wave() {
    let stack = stack().await;
    let cached = medic_sim::Outcomes {
        refresh: medic_sim::RefreshOutcome::Noop,
        hard_refresh: medic_sim::RefreshOutcome::Heal,
        ..Default::default()
    };
    let message = "Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = Manifest generation error (cached): git fetch: 503 Service Unavailable";
    let sim =
        crate::support::outage_fleet(30, 20, "git.cached.example.com", 10, Some(message), |i, _| (i < 20).then(|| cached.clone())).await;
    let run = stack.sweeper(&sim).run().await.unwrap();
    assert_eq!((run.outages, run.probed, run.healed, run.released, run.escalated), (1, 3, 3, 17, 0), "{run:?}");
    assert_eq!((sim.counts().refresh, sim.counts().hard_refresh), (3, 3), "a normal refresh, then a hard one, per canary");
    drain(&stack, &stack.worker(&sim, stack.store())).await;
    let synced = (1..=20).filter(|i| sim.app("argocd", &format!("app-{i:05}")).is_some_and(|a| a["status"]["sync"]["status"] == "Synced"));
    assert_eq!(synced.count(), 20, "the wave's own steps hard-refresh the rest (the ladder of a cached error)");
}

#[tokio::test]
async fn an_incident_of_an_app_deleted_from_argo_cd_is_closed_by_the_next_sweep_not_left_open() {
    let (stack, sim) = (stack().await, sim_with_samples(SimConfig::default()).await);
    let sweeper = stack.sweeper(&sim);
    // hook-failed (accounts) is escalated: an open incident that nothing Argo Medic does closes.
    let ingest = stack.ingest(&sim);
    let auth = format!("Bearer {SECRET}");
    let headers = [("content-type", "application/json"), ("authorization", auth.as_str())];
    assert_eq!(ingest.handle(webhook(&sample_webhook("hook-failed.json"), &headers)).await.status(), 202);
    let worker = stack.worker(&sim, stack.store());
    drain(&stack, &worker).await;
    assert!(stack.store().open_incidents().await.unwrap().contains(&medic_core::AppId::new("argocd", "accounts")));
    // Someone deletes the app. The list no longer shows it; a read without its project answers 403.
    assert!(sim.remove_app("argocd", "accounts"));
    let run = sweeper.run().await.unwrap();
    assert_eq!(run.unlisted, 1, "{run:?}");
    sim.clear_requests();
    drain(&stack, &worker).await;
    assert!(
        !stack.store().open_incidents().await.unwrap().contains(&medic_core::AppId::new("argocd", "accounts")),
        "the incident of a deleted app is closed"
    );
    let confirmed =
        sim.requests().iter().any(|r| r.path == "/api/v1/applications" && r.query.iter().any(|(k, v)| k == "name" && v == "accounts"));
    assert!(confirmed, "absence is confirmed with a list by name before closing");
}

#[test]
fn every_lambda_sample_parses_as_its_functions_input() {
    let dir = events_dir().join("lambda");
    let read = |f: &std::path::Path| std::fs::read_to_string(f).unwrap();
    let files = |sub: &str| medic::input::json_files(&dir.join(sub)).unwrap();
    assert!(!files("ingest").is_empty() && !files("worker").is_empty() && !files("sweeper").is_empty());
    for f in files("ingest") {
        let request = lambda_http::request::from_str(&read(&f)).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert_eq!(request.method(), "POST", "{}", f.display());
    }
    for f in files("worker") {
        let event: SqsEvent = serde_json::from_str(&read(&f)).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(event.records.iter().all(|r| r.message_id.is_some() && r.body.is_some()), "{}", f.display());
    }
    for f in files("sweeper") {
        let event: serde_json::Value = serde_json::from_str(&read(&f)).unwrap();
        assert_eq!(event["detail-type"], "Scheduled Event", "{}", f.display());
    }
}

#[tokio::test]
async fn the_switch_in_the_state_table_stops_argo_cd_mutations_at_once_and_flipping_it_back_resumes_them() {
    use medic_adapters::switch::{CachedSwitch, SwitchSettings};
    use medic_core::event::{AppRef, WorkItem, WorkKind};
    use medic_core::step::StepResult;

    let (stack, sim) = (stack().await, sim_with_samples(SimConfig::default()).await);
    // What `medic switch --table T --instance test off` writes.
    stack.store().write_mode(Mode::Off, "test").await.unwrap();
    // Every check reads the table (a container's cache would keep a value up to 30 s).
    let settings = SwitchSettings { fresh_for: Duration::ZERO, ..SwitchSettings::default() };
    let worker = stack.switched_worker(&sim, stack.store(), CachedSwitch::with_settings(stack.store(), SystemClock, settings));
    let observability = AppRef { name: "observability".into(), namespace: "argocd".into(), project: Some("platform".into()) };
    let look = |window: &str| {
        WorkItem::for_app(WorkKind::Notification, observability.clone(), "on-sync-failed".parse().unwrap(), window, chrono::Utc::now())
    };

    stack.queue().enqueue(&look("switch-1"), Duration::ZERO).await.unwrap();
    let messages = stack.receive().await;
    assert_eq!(messages.len(), 1);
    let handled = worker.handle_message(&crate::support::sqs_record(&messages[0])).await.unwrap();
    assert_eq!(handled, Handled::Stepped(StepResult::DryRun), "decided, not acted on");
    let counts = sim.counts();
    assert_eq!((counts.sync, counts.refresh), (0, 0), "switched off: no mutating Argo CD call; {counts:?}");
    assert!(
        stack.store().history(&medic_core::AppId::new("argocd", "observability")).await.unwrap().attempts.is_empty(),
        "and nothing recorded"
    );

    stack.store().write_mode(Mode::Act, "test").await.unwrap();
    stack.queue().enqueue(&look("switch-2"), Duration::ZERO).await.unwrap();
    drain(&stack, &worker).await;
    assert_eq!(sim.counts().sync, 1, "switched back on: the CRD-race failure is re-synced");
}

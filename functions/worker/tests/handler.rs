//! The worker handler on the in-memory twins and the Argo CD simulator: a batch as Lambda hands it
//! over, without moto or Python (`cargo test -p worker`). The same handler over SQS and DynamoDB,
//! with its dead-letter queue, is in tests/pipeline.rs.

use std::path::PathBuf;
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use chrono::Utc;
use medic_adapters::argocd::HttpArgoClient;
use medic_adapters::budget::{BudgetRates, LocalBudget};
use medic_adapters::config::ArgoSettings;
use medic_core::event::NotificationEvent;
use medic_core::ports::IncidentStore;
use medic_core::{AppId, DecisionPolicy, PolicyConfig};
use medic_sim::{ArgoSim, SimConfig};
use medic_worker::{Worker, WorkerConfig};

/// The handler on the in-memory twins.
type Twins = medic_stack::twins::MemoryPorts<HttpArgoClient, LocalBudget>;
type TwinWorker = Worker<Twins>;

fn events_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test")).join("../../events")
}

async fn sim() -> ArgoSim {
    let sim = ArgoSim::start(SimConfig::default()).await.expect("the simulator starts");
    sim.load_samples(&events_dir(), Utc::now()).expect("the sample apps load");
    sim
}

fn worker(sim: &ArgoSim) -> TwinWorker {
    let settings = ArgoSettings::new(sim.base_url(), SimConfig::default().tokens[0].token.clone());
    let config = WorkerConfig { claim_timeout: Duration::ZERO, work_item_key: Some(work_item_key()), ..WorkerConfig::default() };
    let policy = DecisionPolicy::new(PolicyConfig { settle_secs: 0, ..PolicyConfig::default() }).into();
    let twins = medic_stack::twins::MemoryState::default().adapters(
        HttpArgoClient::new(settings).unwrap(),
        LocalBudget::new(BudgetRates::default()),
        "test",
    );
    Worker::from(twins.work(config, policy))
}

/// The stack's work-item key, as the sweeper signs a recovery wave's items with it.
fn work_item_key() -> medic_core::event::WorkItemKey {
    medic_core::event::WorkItemKey::new("a-work-item-key-of-at-least-32-bytes-for-tests").unwrap()
}

/// The work item ingest makes of the sample notification `name`, as an SQS message body.
fn notification(name: &str) -> String {
    let body = std::fs::read(events_dir().join("webhook").join(name)).unwrap();
    serde_json::to_string(&NotificationEvent::parse(&body).unwrap().into_work(Utc::now())).unwrap()
}

fn record(id: &str, body: &str, receive: u32) -> SqsMessage {
    let mut m = SqsMessage::default();
    m.message_id = Some(id.into());
    m.body = Some(body.into());
    m.attributes.insert("ApproximateReceiveCount".into(), receive.to_string());
    m
}

fn batch(records: Vec<SqsMessage>) -> SqsEvent {
    let mut event = SqsEvent::default();
    event.records = records;
    event
}

fn refreshes_of(sim: &ArgoSim, name: &str) -> usize {
    sim.requests()
        .iter()
        .filter(|r| r.path.ends_with(&format!("/applications/{name}")) && r.query.iter().any(|(k, _)| k == "refresh"))
        .count()
}

#[tokio::test]
async fn a_poison_message_fails_alone_and_a_redelivered_notification_acts_once() {
    let sim = sim().await;
    let worker = worker(&sim);
    let pricing = notification("stale-progressing.json");
    let failed = |response: aws_lambda_events::event::sqs::SqsBatchResponse| -> Vec<String> {
        response.batch_item_failures.into_iter().map(|f| f.item_identifier).collect()
    };
    let first = worker
        .handle_batch(batch(vec![record("m-1", &pricing, 1), record("m-2", "{not a work item", 1), record("m-3", &pricing, 1)]))
        .await
        .expect("every record has an id");
    // m-3 is the same notification while m-1 still holds it: it is handed back, not dropped.
    assert_eq!(failed(first), ["m-2", "m-3"], "the poison message and the held duplicate go back to the queue");
    assert_eq!(worker.metrics.total("PoisonMessages"), 1.0);
    assert_eq!(refreshes_of(&sim, "pricing"), 1, "{:?}", sim.requests());
    // One StepLatency line for the step, its breakdown as properties (what the dashboard's Logs
    // Insights widgets group by), no metric per value.
    for (property, value) in
        [("Action", "refresh"), ("FailureMode", "stale-progressing"), ("Result", "refreshed"), ("Trigger", "on-stale-progressing")]
    {
        assert!(worker.metrics.has_property("StepLatency", (property, value)), "StepLatency {property}={value}");
    }
    // The duplicate's next delivery finds it handled; the poison message fails again (SQS moves it
    // to the DLQ after maxReceiveCount).
    let second = worker.handle_batch(batch(vec![record("m-3", &pricing, 2), record("m-2", "{not a work item", 2)])).await.expect("ids");
    assert_eq!(failed(second), ["m-2"]);
    assert_eq!(refreshes_of(&sim, "pricing"), 1, "two deliveries of one notification, one refresh");
    // The sample's refresh heals it (events/sim/outcomes.json): the verified refresh saw it calm
    // and closed the incident without another read.
    let history = worker.store.history(&AppId::new("argocd", "pricing")).await.unwrap();
    assert_eq!(history.incident, None, "{history:?}");
    assert_eq!(sim.requests().iter().filter(|r| r.path.ends_with("/applications/pricing")).count(), 2, "one read, one refresh");
}

#[tokio::test]
async fn a_batch_with_a_record_without_an_id_is_refused_whole() {
    let sim = sim().await;
    let worker = worker(&sim);
    let mut no_id = record("", &notification("stale-progressing.json"), 1);
    no_id.message_id = None;
    assert!(worker.handle_batch(batch(vec![record("m-1", &notification("hook-failed.json"), 1), no_id])).await.is_err());
    assert!(sim.requests().is_empty(), "nothing is acted on for a batch Lambda cannot report on");
}

/// While the sweeper holds a fleet outage's cause (its marker in the state table), a notification
/// of an app of that cause that Argo CD cannot compare is left to the cause: read, not acted on.
/// Without the marker the same notification runs the app's own ladder.
#[tokio::test]
async fn a_notification_of_an_app_held_by_a_fleet_outage_is_left_to_the_outage() {
    use medic_core::ports::DedupeStore;
    use medic_worker::Handled;
    let sim = sim().await;
    let held = worker(&sim);
    let marker = medic_core::keys::fleet_hold_marker("repo:git.example.com");
    held.dedupe.first_sighting(&marker, Duration::from_secs(1800)).await.unwrap();
    let body = notification("comparison-error-transient.json");
    let handled = held.handle_message(&record("m-1", &body, 1)).await.unwrap();
    assert_eq!(handled, Handled::HeldByFleet("repo:git.example.com".into()));
    assert_eq!(held.metrics.total("HeldByFleetOutage"), 1.0);
    let calls = |sim: &ArgoSim| sim.requests().iter().filter(|r| r.path.ends_with("/applications/payments-api")).count();
    assert_eq!(calls(&sim), 0, "the event named the app's source host: no call to Argo CD at all: {:?}", sim.requests());
    assert!(held.store.history(&AppId::new("argocd", "payments-api")).await.unwrap().incident.is_none(), "no incident of its own");
    // An event of an earlier template (no source): the app is read to find its scopes.
    let mut older: serde_json::Value = serde_json::from_str(&body).unwrap();
    older.as_object_mut().unwrap().remove("scopes");
    older["dedupeKey"] = "ev1-an-earlier-template".into();
    let handled = held.handle_message(&record("m-0", &older.to_string(), 1)).await.unwrap();
    assert_eq!(handled, Handled::HeldByFleet("repo:git.example.com".into()));
    assert_eq!(calls(&sim), 1, "one read, nothing else: {:?}", sim.requests());

    let free = worker(&sim);
    let handled = free.handle_message(&record("m-2", &body, 1)).await.unwrap();
    assert!(matches!(handled, Handled::Stepped(_) | Handled::Requeued { .. }), "its own ladder decides: {handled:?}");
    assert!(free.metrics.total("HeldByFleetOutage") == 0.0);
}

/// The item a worker's requeue makes of `item` (what `Worker::requeue` sends), as an SQS record.
fn as_record(id: &str, item: &medic_core::event::WorkItem) -> SqsMessage {
    record(id, &serde_json::to_string(item).unwrap(), 1)
}

/// H1 (reliability review of 0a3f9d5): the hold was checked only on a notification's first
/// delivery, so the rechecks of apps notified before the sweeper's first hold (their first look
/// waits out the repo-error grace and re-enqueues a `Recheck`) each climbed their own ladder
/// during the outage. Every automatic item is held now, whatever its kind and delivery. Fails on
/// 4b8d4db: the recheck and the sweep item are stepped (`Requeued`/`Stepped`), not held.
#[tokio::test]
async fn a_recheck_or_sweep_item_of_an_app_held_by_a_fleet_outage_is_left_to_the_outage_too() {
    use medic_core::event::{WorkItem, WorkKind};
    use medic_core::ports::DedupeStore;
    use medic_worker::Handled;
    let sim = sim().await;
    let w = worker(&sim);
    let app = medic_core::event::AppRef { name: "payments-api".into(), namespace: "argocd".into(), project: Some("payments".into()) };
    let trigger: medic_core::Trigger = "on-sync-status-unknown".parse().unwrap();
    // The notification before the hold: its own ladder waits out the grace and looks again later.
    let first = WorkItem::for_app(WorkKind::Notification, app.clone(), trigger.clone(), "n1", Utc::now());
    let handled = w.handle_message(&as_record("m-1", &first)).await.unwrap();
    assert!(matches!(handled, Handled::Requeued { .. }), "{handled:?}");
    let recheck = w.queue.items().pop().expect("the wait re-enqueued a recheck");
    assert_eq!(recheck.kind, WorkKind::Recheck);
    // The sweeper holds the cause now: the recheck, and a sweep item, are left to it.
    w.dedupe.mark(&medic_core::keys::fleet_hold_marker("repo:git.example.com"), Duration::from_secs(1800)).await.unwrap();
    let before = sim.requests().len();
    assert_eq!(w.handle_message(&as_record("m-2", &recheck)).await.unwrap(), Handled::HeldByFleet("repo:git.example.com".into()));
    let sweep = WorkItem::for_app(WorkKind::Sweep, app, medic_core::Trigger::sweep(), "w1", Utc::now());
    assert_eq!(w.handle_message(&as_record("m-3", &sweep)).await.unwrap(), Handled::HeldByFleet("repo:git.example.com".into()));
    let mutating = sim.requests()[before..].iter().filter(|r| r.method != "GET" || r.query.iter().any(|(k, _)| k == "refresh")).count();
    assert_eq!(mutating, 0, "held apps are read, never refreshed or synced: {:?}", &sim.requests()[before..]);
    assert!(w.escalator.escalations().is_empty());
}

/// Issue 30: an item the worker ends without a look, because a fleet outage holds its app, is in
/// the app's incident timeline all the same: received, and waiting for the outage. Before, the
/// incident's timeline had a gap for the whole outage.
#[tokio::test]
async fn a_held_item_of_an_app_with_an_open_incident_is_in_its_timeline() {
    use medic_core::event::{WorkItem, WorkKind};
    use medic_core::ports::{DedupeStore, IncidentStore};
    use medic_core::timeline::EventKind;
    use medic_worker::Handled;
    let sim = sim().await;
    let w = worker(&sim);
    let app = medic_core::event::AppRef { name: "payments-worker".into(), namespace: "argocd".into(), project: Some("payments".into()) };
    let first = WorkItem::for_app(WorkKind::Sweep, app.clone(), medic_core::Trigger::sweep(), "w1", Utc::now());
    let handled = w.handle_message(&as_record("m-1", &first)).await.unwrap();
    assert!(matches!(handled, Handled::Stepped(_)), "{handled:?}");
    let incident = w.store.history(&app.id()).await.unwrap().incident.expect("the first look opened an incident");
    w.dedupe.mark(&medic_core::keys::fleet_hold_marker("repo:git.example.com"), Duration::from_secs(1800)).await.unwrap();
    let second = WorkItem::for_app(WorkKind::Sweep, app.clone(), medic_core::Trigger::sweep(), "w2", Utc::now());
    assert_eq!(w.handle_message(&as_record("m-2", &second)).await.unwrap(), Handled::HeldByFleet("repo:git.example.com".into()));
    // Delivered again: a duplicate, nothing more in the timeline.
    assert_eq!(w.handle_message(&as_record("m-2", &second)).await.unwrap(), Handled::Duplicate);
    let timeline = w.store.timeline(&app.id(), &incident.id()).await.unwrap();
    let held: Vec<_> = timeline
        .iter()
        .filter(|e| e.kind == EventKind::Waited && e.what.starts_with("held by the fleet outage of repo:git.example.com"))
        .collect();
    assert_eq!(held.len(), 1, "{timeline:#?}");
    assert_eq!(timeline.iter().filter(|e| e.kind == EventKind::Received).count(), 2, "both looks' items, once each: {timeline:#?}");
}

/// H1, the wave's half: a wave item deferred or waiting was re-enqueued as a plain recheck, without
/// its place in the wave, so a relapse or a person's Pause no longer held it. Its requeue carries
/// the slot (and the scopes its notification named) now, and the pause of its own outage holds it.
/// Fails on 4b8d4db: the requeued item has no `wave` and is stepped.
#[tokio::test]
async fn a_wave_item_looked_at_again_keeps_its_place_and_waits_for_its_outage_s_pause() {
    use medic_core::event::{WorkItem, WorkKind};
    use medic_core::ladder::{FleetControl, WaveSlot};
    use medic_core::ports::DedupeStore;
    use medic_worker::Handled;
    let sim = sim().await;
    let w = worker(&sim);
    let app = medic_core::event::AppRef { name: "payments-api".into(), namespace: "argocd".into(), project: Some("payments".into()) };
    let since = "2026-12-05T08:00:00Z";
    let slot = WaveSlot { scope: "repo:git.example.com".into(), since: since.into(), wave: "w1".into(), index: 3, len: 40 };
    let mut item =
        WorkItem { wave: Some(slot.clone()), ..WorkItem::for_app(WorkKind::Sweep, app, medic_core::Trigger::recovery(), "w1", Utc::now()) };
    work_item_key().sign(&mut item);
    // Still within the repo-error grace: a wait, looked at again later.
    let handled = w.handle_message(&as_record("m-1", &item)).await.unwrap();
    assert!(matches!(handled, Handled::Requeued { .. }), "{handled:?}");
    let again = w.queue.items().pop().expect("re-enqueued");
    assert_eq!(again.wave.as_ref(), Some(&slot), "the requeue keeps the item's place in its wave");
    // A person pauses this outage's wave: the item waits for the sweep to release it again.
    w.dedupe
        .mark(&medic_core::keys::fleet_control_marker(&slot.scope, since, FleetControl::Pause), Duration::from_secs(3600))
        .await
        .unwrap();
    let before = sim.requests().len();
    assert_eq!(w.handle_message(&as_record("m-2", &again)).await.unwrap(), Handled::HeldByFleet(slot.scope.clone()));
    assert_eq!(sim.requests().len(), before, "a paused wave item costs Argo CD nothing");
    // A pause of another outage of the scope (a later one) does not hold this one's items.
    let other = WaveSlot { since: "2026-12-06T08:00:00Z".into(), ..slot };
    assert_ne!(medic_core::keys::wave_pause_markers(&other), medic_core::keys::wave_pause_markers(&again.wave.unwrap()));
}

/// Issue 22 (found by the chaos run): an app whose outage was past the repo-error grace when it
/// was notified climbed its own ladder before the sweeper's first hold; a run that claimed its
/// rung was killed, and the redelivery was held by the outage and ended. The claim was never
/// performed: a lost action. A held item of an app with such a claim is stepped now, so the
/// claim is resumed and performed once; the hold applies from the next decision on. Fails on
/// f09c8c4: the redelivery is `HeldByFleet` and nothing reaches Argo CD.
#[tokio::test]
async fn a_claim_made_before_a_fleet_hold_is_still_performed_once() {
    use medic_core::event::{AppRef, WorkItem, WorkKind};
    use medic_core::incident::{Attempt, Outcome};
    use medic_core::ports::{ArgoApi, DedupeStore};
    use medic_worker::Handled;
    let sim = ArgoSim::start(SimConfig::default()).await.unwrap();
    // The comparison error is an hour old: past the grace, the ladder acts.
    sim.load_samples(&events_dir(), Utc::now() - chrono::Duration::hours(1)).unwrap();
    let w = worker(&sim);
    let target = AppRef { name: "payments-api".into(), namespace: "argocd".into(), project: Some("payments".into()) };
    let id = target.id();
    let sweep = |window: &str| WorkItem::for_app(WorkKind::Sweep, target.clone(), medic_core::Trigger::sweep(), window, Utc::now());

    // The dead run: decided, claimed ten minutes ago, killed before its call.
    let app = w.argo.get_app(&target).await.unwrap();
    let decided = w.policy.base().decide(&app, &medic_core::Trigger::sweep(), &Default::default(), Utc::now()).unwrap();
    let rung = medic_core::Rung::of(decided.action).unwrap_or_else(|| panic!("a rung: {}", decided.reason));
    let claimed_at = Utc::now() - chrono::Duration::minutes(10);
    let attempt = Attempt { rung, at: claimed_at, idempotency_key: decided.idempotency_key.clone(), outcome: Outcome::Requested };
    w.store.claim(&id, decided.incident.as_ref().unwrap(), &attempt, Duration::ZERO).await.unwrap();

    // The sweeper holds the cause now. The redelivery resumes the claim instead of ending it.
    w.dedupe.mark(&medic_core::keys::fleet_hold_marker("repo:git.example.com"), Duration::from_secs(1800)).await.unwrap();
    let handled = w.handle_message(&as_record("m-1", &sweep("w1"))).await.unwrap();
    assert!(matches!(handled, Handled::Stepped(_)), "{handled:?}");
    let history = w.store.history(&id).await.unwrap();
    assert!(history.pending().is_none(), "the claim was completed: {history:?}");
    let performed = refreshes_of(&sim, "payments-api") + w.escalator.escalations().len() + sim.counts().sync;
    assert_eq!(performed, 1, "performed once: {:?}", sim.requests());

    // Nothing claimed is left: the next item is held again, and costs Argo CD nothing more.
    let before = sim.requests().len();
    let handled = w.handle_message(&as_record("m-2", &sweep("w2"))).await.unwrap();
    assert_eq!(handled, Handled::HeldByFleet("repo:git.example.com".into()));
    assert_eq!(sim.requests().len() - before, 1, "one read to find the app's scopes: {:?}", &sim.requests()[before..]);
}

/// L12 (reliability review of 0a3f9d5): a sweep item's wave slot and recovery trigger were taken
/// from whoever sent it, so anyone allowed to send to the queue could feed a wave's relapse count
/// or start a ladder at its refresh. Only a slot signed with the work-item key is honoured now;
/// an unsigned one is made a plain look (the app is still looked at). Fails on e5dc073: the
/// unsigned item is held by its slot's pause.
#[tokio::test]
async fn an_unsigned_wave_slot_is_ignored_and_the_app_looked_at_as_by_a_sweep() {
    use medic_core::event::{WorkItem, WorkKind};
    use medic_core::ladder::{FleetControl, WaveSlot};
    use medic_core::ports::DedupeStore;
    use medic_worker::Handled;
    let sim = sim().await;
    let w = worker(&sim);
    let app = medic_core::event::AppRef { name: "payments-api".into(), namespace: "argocd".into(), project: Some("payments".into()) };
    let since = "2026-12-05T08:00:00Z";
    let slot = WaveSlot { scope: "repo:git.example.com".into(), since: since.into(), wave: "w1".into(), index: 0, len: 1 };
    w.dedupe
        .mark(&medic_core::keys::fleet_control_marker(&slot.scope, since, FleetControl::Pause), Duration::from_secs(3600))
        .await
        .unwrap();
    let made_up =
        WorkItem { wave: Some(slot.clone()), ..WorkItem::for_app(WorkKind::Sweep, app, medic_core::Trigger::recovery(), "w9", Utc::now()) };

    // Unsigned: neither the pause of its slot holds it nor does its outcome count in the wave.
    let handled = w.handle_message(&as_record("m-1", &made_up)).await.unwrap();
    assert!(matches!(handled, Handled::Stepped(_) | Handled::Requeued { .. }), "looked at by its own ladder: {handled:?}");
    assert_eq!(w.metrics.total("RefusedFleetSlots"), 1.0);
    let outcomes: Vec<medic_core::keys::Marker> = [medic_core::ladder::WaveOutcome::Healed, medic_core::ladder::WaveOutcome::Failed]
        .into_iter()
        .map(|o| medic_core::keys::wave_outcome_marker(&slot, 0, o))
        .collect();
    assert!(w.dedupe.marked(&outcomes).await.unwrap().is_empty(), "no outcome tallied for a slot nobody gave");
    if let Some(next) = w.queue.items().pop() {
        assert_eq!((next.wave, next.trigger.as_str()), (None, "sweep"), "its requeue is a plain look too");
    }

    // Signed with a slot that was tampered with after signing: the same.
    let mut signed = WorkItem { dedupe_key: "w9-signed".into(), ..made_up.clone() };
    work_item_key().sign(&mut signed);
    let tampered = WorkItem { wave: Some(WaveSlot { index: 1, len: 2, ..slot.clone() }), ..signed.clone() };
    let handled = w.handle_message(&as_record("m-2", &tampered)).await.unwrap();
    assert!(!matches!(handled, Handled::HeldByFleet(_)), "{handled:?}");
    assert_eq!(w.metrics.total("RefusedFleetSlots"), 2.0);

    // Signed as the sweeper signs it: its outage's pause holds it.
    let mut genuine = WorkItem { dedupe_key: "w9-genuine".into(), ..made_up };
    work_item_key().sign(&mut genuine);
    assert_eq!(w.handle_message(&as_record("m-4", &genuine)).await.unwrap(), Handled::HeldByFleet(slot.scope));
    assert_eq!(w.metrics.total("RefusedFleetSlots"), 2.0);
}

//! One contract per port, run against every implementation of it: the in-memory twins `medic
//! serve` and the handler tests use, the CLI's SQLite store, the adapters on DynamoDB and SQS
//! (moto_server on 127.0.0.1), and the Slack escalator against the Slack simulator. ArgoApi has one
//! implementation, held to Argo CD's own spec (tests/argo.rs, the swagger checks). A twin that drifts from its production adapter would make every test
//! built on it prove the wrong thing; these keep them saying the same.
//!
//! Leases and expiries are real (whole seconds, as DynamoDB keeps them); nothing here sets a
//! clock to zero.

use medic_core::keys::Marker;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use medic::store::SqliteIncidentStore;
use medic_adapters::dynamodb::{DynamoDbStore, create_table};
use medic_adapters::memory::{MemoryDedupe, MemoryIncidentStore, MemoryLock, MemoryQueue};
use medic_adapters::sqs::SqsWorkQueue;
use medic_core::AppId;
use medic_core::Rung;
use medic_core::event::{AppRef, WorkItem, WorkKind};
use medic_core::incident::{Attempt, DecisionNote, Outcome};
use medic_core::keys::IncidentKey;
use medic_core::ports::{AppLock, Begun, Claim, DedupeStore, EscalationStore, IncidentStore, Seen, WorkQueue};
use medic_core::{Decision, Trigger};
use medic_sim::moto::{moto, unique};
use medic_slack::{DynamoDbEscalationStore, MemoryEscalationStore};
use serde_json::json;

async fn table() -> (aws_sdk_dynamodb::Client, String) {
    let sdk = medic_adapters::aws::sdk_config(Some(&moto().url)).await;
    let ddb = aws_sdk_dynamodb::Client::new(&sdk);
    let table = unique("contract");
    create_table(&ddb, &table).await.unwrap();
    (ddb, table)
}

async fn dynamodb() -> DynamoDbStore {
    let (ddb, table) = table().await;
    DynamoDbStore::new(ddb, table, "contract")
}

// --- IncidentStore ---------------------------------------------------------------------------

fn app() -> AppId {
    AppId::new("argocd", "contract")
}
const LEASE: Duration = Duration::from_secs(600);

fn incident() -> IncidentKey {
    IncidentKey {
        instance: "contract".into(),
        app: app(),
        revision: "0f3c2a1".into(),
        began_at: Some(Utc.with_ymd_and_hms(2026, 11, 1, 8, 0, 0).unwrap()),
    }
}

fn at(minutes: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 1, 9, 0, 0).unwrap() + TimeDelta::minutes(minutes)
}

fn attempt(rung: Rung, minutes: i64) -> Attempt {
    Attempt { rung, at: at(minutes), idempotency_key: Some(incident().key_for(rung)), outcome: Outcome::Requested }
}

async fn incident_store_contract<S: IncidentStore>(store: &S, label: &str) {
    assert!(store.history(&app()).await.unwrap().incident.is_none(), "{label}: nothing open at first");
    assert!(store.open_incidents().await.unwrap().is_empty(), "{label}");

    // A note never opens an incident.
    let d = Decision::gone(&app(), at(0));
    store.note_decision(&app(), &incident(), &DecisionNote::new(&d, "payments", "sweep")).await.unwrap();
    assert!(store.open_incidents().await.unwrap().is_empty(), "{label}: a note opened an incident");

    // A claim opens the incident and holds the rung for its lease.
    assert_eq!(store.claim(&app(), &incident(), &attempt(Rung::Refresh, 0), LEASE).await.unwrap(), Claim::Granted, "{label}");
    assert_eq!(store.open_incidents().await.unwrap(), vec![app()], "{label}");
    assert_eq!(
        store.claim(&app(), &incident(), &attempt(Rung::Refresh, 5), LEASE).await.unwrap(),
        Claim::Held { until: at(10) },
        "{label}: held within the lease"
    );
    // Past the lease the holder is presumed dead and the rung is taken over.
    assert_eq!(store.claim(&app(), &incident(), &attempt(Rung::Refresh, 11), LEASE).await.unwrap(), Claim::Granted, "{label}: taken over");
    // A refresh seen to reach Argo CD stays in progress and says so; a run that takes it over
    // and carries that on keeps it said.
    let refresh = incident().key_for(Rung::Refresh);
    store.mark_reached(&app(), &refresh).await.unwrap();
    let unfinished = |h: medic_core::incident::History| h.unfinished(&refresh).map(|a| a.outcome);
    assert_eq!(unfinished(store.history(&app()).await.unwrap()), Some(Outcome::Reached), "{label}: reached, in progress");
    let carried = Attempt { outcome: Outcome::Reached, ..attempt(Rung::Refresh, 22) };
    assert_eq!(store.claim(&app(), &incident(), &carried, LEASE).await.unwrap(), Claim::Granted, "{label}: a reached claim is taken over");
    assert_eq!(unfinished(store.history(&app()).await.unwrap()), Some(Outcome::Reached), "{label}: carried over");
    store.complete(&app(), &incident().key_for(Rung::Refresh), Outcome::NoEffect).await.unwrap();
    assert!(store.mark_reached(&app(), &refresh).await.is_err(), "{label}: a completed claim is not in progress");
    assert_eq!(
        store.claim(&app(), &incident(), &attempt(Rung::Refresh, 60), LEASE).await.unwrap(),
        Claim::AlreadyDone(Outcome::NoEffect),
        "{label}: done is done, whenever asked"
    );

    // A released claim may be taken again at once.
    assert_eq!(store.claim(&app(), &incident(), &attempt(Rung::Sync, 61), LEASE).await.unwrap(), Claim::Granted, "{label}");
    store.release(&app(), &incident().key_for(Rung::Sync)).await.unwrap();
    assert_eq!(store.claim(&app(), &incident(), &attempt(Rung::Sync, 62), LEASE).await.unwrap(), Claim::Granted, "{label}: after release");
    store.complete(&app(), &incident().key_for(Rung::Sync), Outcome::Succeeded).await.unwrap();

    let history = store.history(&app()).await.unwrap();
    assert_eq!(history.incident.as_ref(), Some(&incident()), "{label}");
    let rungs: Vec<(Rung, Outcome)> = history.attempts.iter().map(|a| (a.rung, a.outcome)).collect();
    assert_eq!(rungs, vec![(Rung::Refresh, Outcome::NoEffect), (Rung::Sync, Outcome::Succeeded)], "{label}: the ladder in order");

    store.close(&app(), at(70)).await.unwrap();
    assert!(store.history(&app()).await.unwrap().incident.is_none(), "{label}: closed");
    assert!(store.open_incidents().await.unwrap().is_empty(), "{label}");
    store.close(&app(), at(71)).await.unwrap();
}

#[tokio::test]
async fn every_incident_store_keeps_the_same_claim_contract() {
    incident_store_contract(&MemoryIncidentStore::default(), "memory").await;
    incident_store_contract(&SqliteIncidentStore::in_memory().unwrap(), "sqlite").await;
    incident_store_contract(&dynamodb().await, "dynamodb").await;
}

// --- DedupeStore -----------------------------------------------------------------------------

async fn dedupe_contract<D: DedupeStore>(store: &D, label: &str) {
    let hour = Duration::from_secs(3600);
    let marker = unique("marker");
    let m = |k: &str| Marker::for_tests(k);
    assert_eq!(store.first_sighting(&m(&marker), hour).await.unwrap(), Seen::New, "{label}");
    assert_eq!(store.first_sighting(&m(&marker), hour).await.unwrap(), Seen::Duplicate, "{label}");
    store.forget(&m(&marker)).await.unwrap();
    assert_eq!(store.first_sighting(&m(&marker), hour).await.unwrap(), Seen::New, "{label}: forgotten");

    // Which markers are set, many at once (more than one DynamoDB batch), expired ones not.
    let many: Vec<String> = (0..150).map(|i| format!("{marker}-{i}")).collect();
    for k in many.iter().step_by(3) {
        store.first_sighting(&m(k), hour).await.unwrap();
    }
    store.first_sighting(&m(&format!("{marker}-short")), Duration::from_secs(1)).await.unwrap();
    // A mark is renewed by the next, whatever was there: marked with a second to live, then an
    // hour, it outlives the second; first seen for a second, a mark extends it too.
    store.mark(&m(&format!("{marker}-renewed")), Duration::from_secs(1)).await.unwrap();
    store.mark(&m(&format!("{marker}-renewed")), hour).await.unwrap();
    store.first_sighting(&m(&format!("{marker}-extended")), Duration::from_secs(1)).await.unwrap();
    store.mark(&m(&format!("{marker}-extended")), hour).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let mut asked = many.clone();
    asked.push(format!("{marker}-short"));
    asked.push(format!("{marker}-renewed"));
    asked.push(format!("{marker}-extended"));
    asked.push(marker.clone());
    let found = store.marked(&asked.iter().map(|k| m(k)).collect::<Vec<_>>()).await.unwrap();
    let mut expected: std::collections::BTreeSet<Marker> = many.iter().step_by(3).map(|k| m(k)).collect();
    expected.insert(m(&marker));
    expected.insert(m(&format!("{marker}-renewed")));
    expected.insert(m(&format!("{marker}-extended")));
    assert_eq!(found, expected, "{label}: set and unexpired markers only");
    assert!(store.marked(&[]).await.unwrap().is_empty(), "{label}");

    // One delivery owns a work item; another waits; the owner's own retry still owns it.
    let item = unique("item");
    assert_eq!(store.begin(&m(&item), "m1#1", hour).await.unwrap(), Begun::Owned, "{label}");
    assert!(matches!(store.begin(&m(&item), "m1#2", hour).await.unwrap(), Begun::InProgress { .. }), "{label}: another delivery waits");
    assert_eq!(store.begin(&m(&item), "m1#1", hour).await.unwrap(), Begun::Owned, "{label}: an SDK retry recognises its own write");
    store.end(&m(&item), "m1#1", true, hour).await.unwrap();
    assert_eq!(store.begin(&m(&item), "m1#3", hour).await.unwrap(), Begun::Done, "{label}: handled once");

    // Given up: the next delivery handles it at once.
    let failed = unique("failed");
    assert_eq!(store.begin(&m(&failed), "m2#1", hour).await.unwrap(), Begun::Owned, "{label}");
    store.end(&m(&failed), "m2#1", false, hour).await.unwrap();
    assert_eq!(store.begin(&m(&failed), "m2#2", hour).await.unwrap(), Begun::Owned, "{label}: a failure is retried");

    // A killed holder's lease runs out and the record is taken over; the dead holder's late end
    // then changes nothing.
    let killed = unique("killed");
    assert_eq!(store.begin(&m(&killed), "m3#1", Duration::from_secs(1)).await.unwrap(), Begun::Owned, "{label}");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(store.begin(&m(&killed), "m3#2", hour).await.unwrap(), Begun::Owned, "{label}: taken over after the lease");
    store.end(&m(&killed), "m3#1", false, hour).await.unwrap();
    assert!(
        matches!(store.begin(&m(&killed), "m3#3", hour).await.unwrap(), Begun::InProgress { .. }),
        "{label}: the late end of the dead holder"
    );
}

#[tokio::test]
async fn every_dedupe_store_keeps_the_same_lease_contract() {
    dedupe_contract(&MemoryDedupe::default(), "memory").await;
    dedupe_contract(&medic::local_dedupe::SqliteDedupe::new(std::sync::Arc::new(SqliteIncidentStore::in_memory().unwrap())), "sqlite")
        .await;
    dedupe_contract(&dynamodb().await, "dynamodb").await;
}

// --- AppLock ---------------------------------------------------------------------------------

async fn lock_contract<L: AppLock>(lock: &L, label: &str) {
    let app = AppId::parse(&unique("argocd/locked")).unwrap();
    let long = Duration::from_secs(120);
    assert!(lock.try_lock(&app, "a", long).await.unwrap(), "{label}");
    assert!(!lock.try_lock(&app, "b", long).await.unwrap(), "{label}: held");
    assert!(lock.try_lock(&app, "a", long).await.unwrap(), "{label}: the holder extends it");
    lock.unlock(&app, "b").await.unwrap();
    assert!(!lock.try_lock(&app, "b", long).await.unwrap(), "{label}: only the holder unlocks");
    lock.unlock(&app, "a").await.unwrap();
    assert!(lock.try_lock(&app, "b", Duration::from_secs(1)).await.unwrap(), "{label}: free after unlock");
    // A crashed holder's lock expires (DynamoDB keeps whole seconds: up to two).
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert!(lock.try_lock(&app, "c", long).await.unwrap(), "{label}: expired");
}

#[tokio::test]
async fn every_app_lock_keeps_the_same_contract() {
    lock_contract(&MemoryLock::default(), "memory").await;
    lock_contract(&dynamodb().await, "dynamodb").await;
}

// --- EscalationStore -------------------------------------------------------------------------

/// Create only once, write only at the version read, list a group, forget what expired.
async fn escalation_store_contract<S: EscalationStore>(store: &S, label: &str) {
    let doc = json!({"a": 1});
    let day = Duration::from_secs(86_400);
    assert!(store.store("g", "x", &doc, None, day).await.unwrap(), "{label}: created");
    assert!(!store.store("g", "x", &json!({"a": 2}), None, day).await.unwrap(), "{label}: only once");
    let v = store.load("g", "x").await.unwrap().unwrap();
    assert_eq!((v.version, v.doc.clone()), (1, doc.clone()), "{label}");
    assert!(store.store("g", "x", &json!({"a": 3}), Some(1), day).await.unwrap(), "{label}: at the version read");
    assert!(!store.store("g", "x", &json!({"a": 4}), Some(1), day).await.unwrap(), "{label}: a stale version loses");
    assert_eq!(store.load("g", "x").await.unwrap().unwrap().doc, json!({"a": 3}), "{label}");
    assert!(store.store("g", "y", &doc, None, day).await.unwrap(), "{label}");
    assert!(store.store("other", "z", &doc, None, day).await.unwrap(), "{label}");
    let mut ids: Vec<String> = store.list("g").await.unwrap().into_iter().map(|(id, _)| id).collect();
    ids.sort();
    assert_eq!(ids, vec!["x", "y"], "{label}");
    assert!(store.store("g", "short", &doc, None, Duration::ZERO).await.unwrap(), "{label}");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(store.load("g", "short").await.unwrap(), None, "{label}: expired records are gone for readers");
    assert!(store.store("g", "short", &doc, None, day).await.unwrap(), "{label}: and may be created again");
    assert_eq!(store.load("missing", "x").await.unwrap(), None, "{label}");
}

#[tokio::test]
async fn every_escalation_store_keeps_the_same_compare_and_set_contract() {
    escalation_store_contract(&MemoryEscalationStore::default(), "memory").await;
    escalation_store_contract(&SqliteIncidentStore::in_memory().unwrap(), "sqlite").await;
    let (ddb, table) = table().await;
    escalation_store_contract(&DynamoDbEscalationStore::new(ddb, table, "contract"), "dynamodb").await;
}

// --- WorkQueue -------------------------------------------------------------------------------

fn item(name: &str) -> WorkItem {
    let app = AppRef { name: name.into(), namespace: "argocd".into(), project: None };
    WorkItem::for_app(WorkKind::Sweep, app, Trigger::sweep(), "w1", Utc::now())
}

/// What either queue hands the worker: the same items, intact; a delay past SQS's 15 minutes is
/// refused rather than shortened.
async fn queue_contract<Q: WorkQueue>(queue: &Q, take: impl AsyncFn() -> Vec<WorkItem>, label: &str) {
    queue.enqueue(&item("one"), Duration::ZERO).await.unwrap();
    queue.enqueue_batch(&[item("two"), item("three")]).await.unwrap();
    queue.enqueue_batch(&[]).await.unwrap();
    assert!(queue.enqueue(&item("late"), Duration::from_secs(901)).await.is_err(), "{label}: over 15 minutes");
    let mut names: Vec<String> = take().await.into_iter().map(|i| i.app.name).collect();
    names.sort();
    assert_eq!(names, ["one", "three", "two"], "{label}");
}

#[tokio::test]
async fn both_work_queues_deliver_the_same_items_and_refuse_the_same_delays() {
    let memory = MemoryQueue::default();
    queue_contract(&memory, async || memory.take_ready(10), "memory").await;

    let sdk = medic_adapters::aws::sdk_config(Some(&moto().url)).await;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let url = sqs.create_queue().queue_name(unique("contract")).send().await.unwrap().queue_url.unwrap();
    let queue = SqsWorkQueue::new(sqs.clone(), url.clone());
    let take = async || {
        let mut items = Vec::new();
        for _ in 0..3 {
            for m in crate::support::receive(&sqs, &url).await {
                items.push(WorkItem::parse(m.body.unwrap_or_default().as_bytes(), Utc::now()).unwrap());
            }
        }
        items
    };
    queue_contract(&queue, take, "sqs").await;
}

// --- SwitchStore -----------------------------------------------------------------------------

/// Unset until written; then the last mode written, whoever wrote it.
async fn switch_store_contract<S: medic_core::switch::SwitchStore>(store: &S, label: &str) {
    use medic_core::switch::Mode;
    assert_eq!(store.read_mode().await.unwrap(), None, "{label}: never set");
    store.write_mode(Mode::Off, "alice").await.unwrap();
    assert_eq!(store.read_mode().await.unwrap(), Some(Mode::Off), "{label}");
    store.write_mode(Mode::DryRun, "bob").await.unwrap();
    store.write_mode(Mode::Act, "alice").await.unwrap();
    assert_eq!(store.read_mode().await.unwrap(), Some(Mode::Act), "{label}: the last write wins");
}

#[tokio::test]
async fn both_switch_stores_keep_the_same_contract() {
    switch_store_contract(&medic_adapters::switch::MemorySwitchStore::default(), "memory").await;
    switch_store_contract(&dynamodb().await, "dynamodb").await;
}

// --- BucketStore -----------------------------------------------------------------------------

/// Absent until written; a write lands only on the version it read, so of two workers that read
/// the same bucket one wins and the other reads again; the budgets are separate buckets.
async fn bucket_store_contract<S: medic_core::ports::BucketStore>(store: &S, label: &str) {
    use medic_core::budget::BucketState;
    use medic_core::ladder::BudgetKind;
    let first = BucketState { milli_tokens: 25_000, at_ms: 1_764_000_000_000, version: 1 };
    assert_eq!(store.read_bucket(BudgetKind::Refresh).await.unwrap(), None, "{label}: never written");
    assert!(store.replace_bucket(BudgetKind::Refresh, None, &first).await.unwrap(), "{label}: the first write");
    assert!(!store.replace_bucket(BudgetKind::Refresh, None, &first).await.unwrap(), "{label}: no second first write");
    assert_eq!(store.read_bucket(BudgetKind::Refresh).await.unwrap(), Some(first), "{label}");

    let mine = BucketState { milli_tokens: 20_000, at_ms: first.at_ms + 10, version: 2 };
    let theirs = BucketState { milli_tokens: 15_000, at_ms: first.at_ms + 12, version: 2 };
    assert!(store.replace_bucket(BudgetKind::Refresh, Some(&first), &mine).await.unwrap(), "{label}");
    assert!(!store.replace_bucket(BudgetKind::Refresh, Some(&first), &theirs).await.unwrap(), "{label}: a stale read loses");
    assert_eq!(store.read_bucket(BudgetKind::Refresh).await.unwrap(), Some(mine), "{label}: the winner's write stands");

    assert_eq!(store.read_bucket(BudgetKind::HardRefresh).await.unwrap(), None, "{label}: one bucket per budget");
    assert!(!store.replace_bucket(BudgetKind::Sync, Some(&first), &mine).await.unwrap(), "{label}: a read of a bucket that is not there");
}

#[tokio::test]
async fn both_bucket_stores_keep_the_same_compare_and_set_contract() {
    bucket_store_contract(&medic_adapters::memory::MemoryBuckets::default(), "memory").await;
    bucket_store_contract(&dynamodb().await, "dynamodb").await;
}

// --- IncidentLedger --------------------------------------------------------------------------

/// An incident is listed open from its first claim, with its attempts; once closed it is listed
/// only when closed ones are asked for, with when it closed.
async fn ledger_contract<S: IncidentStore + medic_core::ports::IncidentLedger>(store: &S, label: &str) {
    assert!(store.incidents(true).await.unwrap().is_empty(), "{label}: nothing yet");
    assert_eq!(store.claim(&app(), &incident(), &attempt(Rung::Refresh, 0), LEASE).await.unwrap(), Claim::Granted, "{label}");
    store.complete(&app(), &incident().key_for(Rung::Refresh), Outcome::NoEffect).await.unwrap();
    let open = store.incidents(false).await.unwrap();
    assert_eq!(open.len(), 1, "{label}: {open:?}");
    assert_eq!((open[0].app.clone(), open[0].incident.clone(), open[0].closed_at), (app(), incident(), None), "{label}");
    assert_eq!(open[0].attempts.len(), 1, "{label}: the claim is on the record");
    // Closed now: a closed incident is kept for its retention from the close, so a fixed date
    // would age out of the listing.
    let closed = chrono::SubsecRound::trunc_subsecs(Utc::now(), 0);
    store.close(&app(), closed).await.unwrap();
    assert!(store.incidents(false).await.unwrap().is_empty(), "{label}: closed is not open");
    let all = store.incidents(true).await.unwrap();
    assert_eq!(all.len(), 1, "{label}");
    assert_eq!(all[0].closed_at, Some(closed), "{label}: when it closed");
}

#[tokio::test]
async fn both_incident_ledgers_keep_the_same_contract() {
    ledger_contract(&SqliteIncidentStore::in_memory().unwrap(), "sqlite").await;
    ledger_contract(&dynamodb().await, "dynamodb").await;
}

// --- Decision records ------------------------------------------------------------------------

/// A decision about `app` at `at`, recorded in `mode` on an app whose status says `sync`.
fn decision_record(app: &AppId, at: DateTime<Utc>, mode: &str, sync: &str) -> medic_core::record::DecisionRecord {
    let decision = Decision { rule: "health-and-sync → nothing-to-do".into(), ..Decision::nothing(app, at) };
    let json = json!({
        "metadata": {"name": app.name(), "namespace": app.namespace(), "uid": "not-read"},
        "spec": {"project": "payments"},
        "status": {"sync": {"status": sync}}
    });
    medic_core::record::DecisionRecord::new(&decision, &json, "payments", "sweep", mode, &medic_core::History::default())
}

/// Every decision is kept once (a second write of the same app and time, a retry, keeps the
/// first), read back oldest first from `since` (across days: DynamoDB partitions by day), with
/// what the policy read of the app and not the rest.
async fn decision_log_contract<S: IncidentStore + medic_core::ports::IncidentLedger>(store: &S, label: &str) {
    let now = chrono::SubsecRound::trunc_subsecs(Utc::now(), 3);
    let other = AppId::new("argocd", "other");
    let older = decision_record(&app(), now - TimeDelta::hours(40), "act", "OutOfSync");
    let yesterday = decision_record(&app(), now - TimeDelta::hours(25), "dry-run", "OutOfSync");
    let same_time = decision_record(&other, now - TimeDelta::hours(25), "dry-run", "Synced");
    let latest = decision_record(&app(), now, "act", "Synced");
    for r in [&latest, &older, &yesterday, &same_time] {
        store.record_decision(r).await.unwrap();
    }
    store.record_decision(&decision_record(&app(), now, "off", "Unknown")).await.unwrap();
    let read = store.decisions(now - TimeDelta::hours(30)).await.unwrap();
    let seen: Vec<(String, String, String)> =
        read.iter().map(|r| (r.decision.app.to_string(), r.mode.clone(), r.fields.app["status"]["sync"]["status"].to_string())).collect();
    assert_eq!(
        seen,
        [
            ("argocd/contract".into(), "dry-run".into(), "\"OutOfSync\"".into()),
            ("argocd/other".into(), "dry-run".into(), "\"Synced\"".into()),
            ("argocd/contract".into(), "act".into(), "\"Synced\"".into()),
        ],
        "{label}: since 30 hours ago, oldest first, the retry kept once"
    );
    assert_eq!(read[2], latest, "{label}: read back as written");
    assert!(read[0].fields.app["metadata"].get("uid").is_none(), "{label}: what the policy does not read is not kept");
    assert_eq!(store.decisions(now - TimeDelta::hours(48)).await.unwrap().len(), 4, "{label}");
}

#[tokio::test]
async fn both_decision_logs_keep_the_same_contract() {
    decision_log_contract(&SqliteIncidentStore::in_memory().unwrap(), "sqlite").await;
    decision_log_contract(&dynamodb().await, "dynamodb").await;
}

// --- Escalator -------------------------------------------------------------------------------

/// What every escalator does alike: it takes an escalation, an alert and a resolution without
/// error, resolving an app with nothing open is a no-op, and no id it did not hand out stands for
/// a human action. (Posting once per incident is the Slack escalator's own contract,
/// tests/slack.rs; the log escalator writes a line per call.)
async fn escalator_contract<E: medic_core::ports::Escalator>(escalator: &E, label: &str) {
    use crate::support::slack::{escalation_of, sample_app};
    let app = sample_app("hook-failed.json");
    let d = escalation_of(&app);
    escalator.escalate(medic_core::permit::Permit::for_tests(), &app, &d).await.unwrap_or_else(|e| panic!("{label}: {e}"));
    escalator
        .alert(medic_core::permit::Permit::for_tests(), "contract: a problem of the service itself")
        .await
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    escalator
        .resolve(
            medic_core::permit::Permit::for_tests(),
            &AppId::new("argocd", "never-escalated"),
            &Decision::gone(&AppId::new("argocd", "never-escalated"), Utc::now()),
        )
        .await
        .unwrap();
    escalator
        .resolve(medic_core::permit::Permit::for_tests(), &app.id(), &Decision::gone(&app.id(), Utc::now()))
        .await
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    assert_eq!(escalator.human_action("amact-00000000000000000000").await.unwrap(), None, "{label}: an id never handed out");
}

#[tokio::test]
async fn every_escalator_keeps_the_same_contract() {
    use crate::support::slack::{settings, slack_escalator};
    escalator_contract(&medic_adapters::memory::LogEscalator::default(), "log").await;
    let slack = medic_sim::SlackSim::start(medic_sim::SlackSimConfig::default()).await.unwrap();
    let memory = slack_escalator(&slack, settings(&slack), MemoryEscalationStore::default());
    escalator_contract(&memory, "slack on the memory store").await;
    let (ddb, table) = table().await;
    let dynamo = slack_escalator(&slack, settings(&slack), DynamoDbEscalationStore::new(ddb, table, "contract"));
    escalator_contract(&dynamo, "slack on DynamoDB").await;
    escalator_contract(
        &medic_slack::AnyEscalator::Slack(Box::new(slack_escalator(&slack, settings(&slack), MemoryEscalationStore::default()))),
        "any",
    )
    .await;
}

// --- Switch ----------------------------------------------------------------------------------

/// A switch nobody flipped acts, and has nothing to tell a person.
async fn switch_contract<W: medic_core::switch::Switch>(switch: &W, label: &str) {
    assert_eq!(switch.mode().await, medic_core::switch::Mode::Act, "{label}");
    assert_eq!(switch.take_alert(), None, "{label}");
}

#[tokio::test]
async fn every_switch_keeps_the_same_contract() {
    use medic_adapters::switch::{CachedSwitch, MemorySwitchStore};
    switch_contract(&medic_core::switch::FixedSwitch::default(), "fixed").await;
    switch_contract(&CachedSwitch::new(MemorySwitchStore::default(), medic_adapters::memory::SystemClock), "cached, memory").await;
    switch_contract(&CachedSwitch::new(dynamodb().await, medic_adapters::memory::SystemClock), "cached, DynamoDB").await;
}

//! `DynamoDbStore` against a real moto_server: the incident-store contract (the same cases as the
//! SQLite store's tests, plus concurrency), dedupe, app locks, the table and the item layout.

mod common;

use medic_core::keys::Marker;
use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, BillingMode, KeyType, TimeToLiveStatus};
use chrono::{DateTime, TimeZone, Utc};
use common::{dynamodb, unique};
use medic_adapters::dynamodb::{DynamoDbStore, create_table};
use medic_core::AppId;
use medic_core::Rung;
use medic_core::incident::{Attempt, History, Outcome};
use medic_core::keys::IdempotencyKey;
use medic_core::keys::IncidentKey;
use medic_core::ports::{AppLock, Claim, DedupeStore, IncidentStore, Seen};

fn app() -> AppId {
    AppId::new("argocd", "web")
}
const TTL: Duration = Duration::from_secs(600);

fn incident_at(revision: &str) -> IncidentKey {
    IncidentKey {
        instance: "default".into(),
        app: app(),
        revision: revision.into(),
        began_at: Some(Utc.with_ymd_and_hms(2026, 11, 1, 12, 0, 0).unwrap()),
    }
}

fn incident() -> IncidentKey {
    incident_at("abc")
}

fn time(minute: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 1, 12, minute, 0).unwrap()
}

fn attempt_in(incident: &IncidentKey, rung: Rung, minute: u32) -> Attempt {
    Attempt { rung, at: time(minute), idempotency_key: Some(incident.key_for(rung)), outcome: Outcome::Requested }
}

fn attempt(rung: Rung, minute: u32) -> Attempt {
    attempt_in(&incident(), rung, minute)
}

/// A store on a fresh table of its own, for instance `default`.
async fn store(prefix: &str) -> DynamoDbStore {
    let client = dynamodb().await;
    let table = unique(prefix);
    create_table(&client, &table).await.unwrap();
    DynamoDbStore::new(client, table, "default")
}

async fn raw_item(store: &DynamoDbStore, pk: &str, sk: &str) -> Option<std::collections::HashMap<String, AttributeValue>> {
    dynamodb()
        .await
        .get_item()
        .table_name(store.table())
        .key("pk", AttributeValue::S(pk.into()))
        .key("sk", AttributeValue::S(sk.into()))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
}

fn text<'a>(item: &'a std::collections::HashMap<String, AttributeValue>, name: &str) -> &'a str {
    item.get(name).unwrap_or_else(|| panic!("`{name}` missing in {item:?}")).as_s().unwrap()
}

fn number(item: &std::collections::HashMap<String, AttributeValue>, name: &str) -> i64 {
    item.get(name).unwrap_or_else(|| panic!("`{name}` missing in {item:?}")).as_n().unwrap().parse().unwrap()
}

#[tokio::test]
async fn claims_are_exclusive_until_completed_and_expire_for_crashed_holders() {
    let store = store("claims").await;
    assert_eq!(store.claim(&app(), &incident(), &attempt(Rung::Refresh, 0), TTL).await.unwrap(), Claim::Granted);
    assert_eq!(store.claim(&app(), &incident(), &attempt(Rung::Refresh, 5), TTL).await.unwrap(), Claim::Held { until: time(10) });
    // The holder crashed: once its in-progress time has passed another worker takes over.
    assert_eq!(store.claim(&app(), &incident(), &attempt(Rung::Refresh, 10), TTL).await.unwrap(), Claim::Granted);
    store.complete(&app(), &incident().key_for(Rung::Refresh), Outcome::NoEffect).await.unwrap();
    assert_eq!(store.claim(&app(), &incident(), &attempt(Rung::Refresh, 30), TTL).await.unwrap(), Claim::AlreadyDone(Outcome::NoEffect));

    let history = store.history(&app()).await.unwrap();
    assert_eq!(history.incident, Some(incident()));
    assert_eq!(
        history.attempts,
        vec![Attempt {
            rung: Rung::Refresh,
            at: time(10),
            idempotency_key: Some(incident().key_for(Rung::Refresh)),
            outcome: Outcome::NoEffect
        }]
    );
    assert_eq!(store.open_incidents().await.unwrap(), vec![app()]);

    store.close(&app(), time(40)).await.unwrap();
    assert_eq!(store.history(&app()).await.unwrap(), History::default());
    assert!(store.open_incidents().await.unwrap().is_empty());
    // A late duplicate of a done action is refused and does not reopen the closed incident.
    assert_eq!(store.claim(&app(), &incident(), &attempt(Rung::Refresh, 41), TTL).await.unwrap(), Claim::AlreadyDone(Outcome::NoEffect));
    assert_eq!(store.history(&app()).await.unwrap(), History::default());
}

#[tokio::test]
async fn a_released_claim_can_be_claimed_again_but_a_completed_one_cannot_be_released() {
    let store = store("release").await;
    let key = incident().key_for(Rung::Sync);
    assert_eq!(store.claim(&app(), &incident(), &attempt(Rung::Sync, 0), TTL).await.unwrap(), Claim::Granted);
    store.release(&app(), &key).await.unwrap();
    assert_eq!(store.claim(&app(), &incident(), &attempt(Rung::Sync, 1), TTL).await.unwrap(), Claim::Granted);
    store.complete(&app(), &key, Outcome::Succeeded).await.unwrap();
    store.release(&app(), &key).await.unwrap();
    assert_eq!(store.claim(&app(), &incident(), &attempt(Rung::Sync, 2), TTL).await.unwrap(), Claim::AlreadyDone(Outcome::Succeeded));
    // Releasing what was never claimed is a no-op.
    store.release(&app(), &incident().key_for(Rung::Refresh)).await.unwrap();
}

#[tokio::test]
async fn completing_a_claim_that_does_not_exist_is_an_error() {
    let store = store("complete-missing").await;
    let err = store.complete(&app(), &IdempotencyKey::derive(&incident(), Rung::Escalate), Outcome::Succeeded).await.unwrap_err();
    assert!(err.what().contains("no claim for"), "{err}");
    // Nor can a released claim be completed.
    let key = incident().key_for(Rung::Refresh);
    assert_eq!(store.claim(&app(), &incident(), &attempt(Rung::Refresh, 0), TTL).await.unwrap(), Claim::Granted);
    store.release(&app(), &key).await.unwrap();
    assert!(store.complete(&app(), &key, Outcome::Succeeded).await.is_err());
}

#[tokio::test]
async fn an_attempt_without_an_idempotency_key_cannot_be_claimed() {
    let store = store("no-key").await;
    let mut a = attempt(Rung::Refresh, 0);
    a.idempotency_key = None;
    let err = store.claim(&app(), &incident(), &a, TTL).await.unwrap_err();
    assert!(err.what().contains("without an idempotency key"), "{err}");
    assert_eq!(store.history(&app()).await.unwrap(), History::default());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_concurrent_claims_of_one_key_grant_exactly_one() {
    let store = store("concurrent").await;
    for (i, rung) in [Rung::Refresh, Rung::HardRefresh, Rung::Sync, Rung::Escalate].into_iter().enumerate() {
        let minute = u32::try_from(i).unwrap();
        let (key, first, second) = (incident(), attempt(rung, minute), attempt(rung, minute));
        let app = app();
        let (a, b) = tokio::join!(store.claim(&app, &key, &first, TTL), store.claim(&app, &key, &second, TTL));
        let mut answers = vec![a.unwrap(), b.unwrap()];
        answers.sort_by_key(|c| matches!(c, Claim::Granted));
        assert_eq!(answers, vec![Claim::Held { until: time(minute + 10) }, Claim::Granted], "{rung:?}");
    }
    let history = store.history(&app()).await.unwrap();
    let rungs: Vec<Rung> = history.attempts.iter().map(|a| a.rung).collect();
    assert_eq!(rungs, vec![Rung::Refresh, Rung::HardRefresh, Rung::Sync, Rung::Escalate]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_claims_of_different_rungs_are_both_granted_in_one_incident() {
    let store = store("concurrent-rungs").await;
    let (key, refresh, hard) = (incident(), attempt(Rung::Refresh, 0), attempt(Rung::HardRefresh, 0));
    let app = app();
    let (a, b) = tokio::join!(store.claim(&app, &key, &refresh, TTL), store.claim(&app, &key, &hard, TTL));
    assert_eq!((a.unwrap(), b.unwrap()), (Claim::Granted, Claim::Granted));
    let history = store.history(&app).await.unwrap();
    assert_eq!(history.incident, Some(incident()));
    assert_eq!(history.attempts.len(), 2);
}

#[tokio::test]
async fn history_lists_the_open_incidents_attempts_oldest_first() {
    let store = store("history").await;
    // Claimed out of time order; their sort keys order them by idempotency key instead.
    for (rung, minute) in [(Rung::Sync, 20), (Rung::Refresh, 1), (Rung::HardRefresh, 10)] {
        assert_eq!(store.claim(&app(), &incident(), &attempt(rung, minute), TTL).await.unwrap(), Claim::Granted);
    }
    store.complete(&app(), &incident().key_for(Rung::Refresh), Outcome::NoEffect).await.unwrap();
    store.complete(&app(), &incident().key_for(Rung::HardRefresh), Outcome::Succeeded).await.unwrap();
    let history = store.history(&app()).await.unwrap();
    let seen: Vec<(Rung, DateTime<Utc>, Outcome)> = history.attempts.iter().map(|a| (a.rung, a.at, a.outcome)).collect();
    assert_eq!(
        seen,
        vec![
            (Rung::Refresh, time(1), Outcome::NoEffect),
            (Rung::HardRefresh, time(10), Outcome::Succeeded),
            // Still in progress: listed, as requested.
            (Rung::Sync, time(20), Outcome::Requested),
        ]
    );
    assert!(history.attempts.iter().all(|a| a.idempotency_key == Some(incident().key_for(a.rung))));
    // Another app's incident is not part of it.
    assert_eq!(store.history(&medic_core::AppId::new("argocd", "other")).await.unwrap(), History::default());
}

#[tokio::test]
async fn a_new_incident_replaces_the_open_one_and_its_history() {
    let store = store("new-incident").await;
    let old = incident_at("abc");
    let new = incident_at("def");
    assert_eq!(store.claim(&app(), &old, &attempt_in(&old, Rung::Refresh, 0), TTL).await.unwrap(), Claim::Granted);
    store.complete(&app(), &old.key_for(Rung::Refresh), Outcome::NoEffect).await.unwrap();
    assert_eq!(store.claim(&app(), &new, &attempt_in(&new, Rung::Refresh, 30), TTL).await.unwrap(), Claim::Granted);
    let history = store.history(&app()).await.unwrap();
    assert_eq!(history.incident, Some(new.clone()));
    assert_eq!(history.attempts.iter().map(|a| a.at).collect::<Vec<_>>(), vec![time(30)]);
    // A late duplicate from the old incident is refused and leaves the new one open.
    assert_eq!(store.claim(&app(), &old, &attempt_in(&old, Rung::Refresh, 31), TTL).await.unwrap(), Claim::AlreadyDone(Outcome::NoEffect));
    assert_eq!(store.history(&app()).await.unwrap().incident, Some(new));
    assert_eq!(store.open_incidents().await.unwrap(), vec![app()]);
}

#[tokio::test]
async fn open_incidents_lists_only_this_instances_apps_with_an_open_incident() {
    let client = dynamodb().await;
    let table = unique("open");
    create_table(&client, &table).await.unwrap();
    let prod = DynamoDbStore::new(client.clone(), table.clone(), "prod");
    // `prod#eu` starts with `prod#`, the prefix of prod's keys: it must still stay apart.
    let prod_eu = DynamoDbStore::new(client.clone(), table.clone(), "prod#eu");
    let staging = DynamoDbStore::new(client, table, "staging");
    for (store, app) in [(&prod, "argocd/web"), (&prod, "team-a/api"), (&prod_eu, "argocd/web"), (&staging, "argocd/db")] {
        let mut key = incident();
        key.instance = store.instance().into();
        key.app = AppId::parse(app).unwrap();
        assert_eq!(store.claim(&key.app, &key, &attempt_in(&key, Rung::Refresh, 0), TTL).await.unwrap(), Claim::Granted);
    }
    assert_eq!(prod.open_incidents().await.unwrap(), vec!["argocd/web".to_string(), "team-a/api".to_string()]);
    assert_eq!(prod_eu.open_incidents().await.unwrap(), vec!["argocd/web".to_string()]);
    assert_eq!(staging.open_incidents().await.unwrap(), vec!["argocd/db".to_string()]);
    prod.close(&medic_core::AppId::new("team-a", "api"), time(5)).await.unwrap();
    assert_eq!(prod.open_incidents().await.unwrap(), vec!["argocd/web".to_string()]);
    assert_eq!(prod_eu.open_incidents().await.unwrap(), vec!["argocd/web".to_string()]);
}

#[tokio::test]
async fn a_claim_writes_the_documented_item_layout() {
    let store = store("layout").await;
    let key = incident().key_for(Rung::HardRefresh);
    assert_eq!(store.claim(&app(), &incident(), &attempt(Rung::HardRefresh, 0), TTL).await.unwrap(), Claim::Granted);

    let pk = format!("APP#default#{}", app());
    let open = raw_item(&store, &pk, "INCIDENT").await.expect("the open-incident item");
    assert_eq!(serde_json::from_str::<IncidentKey>(text(&open, "incident")).unwrap(), incident());
    assert_eq!(text(&open, "app"), app().as_str());
    assert_eq!(text(&open, "opened_at").parse::<DateTime<Utc>>().unwrap(), time(0));

    let sk = format!("ACTION#{}#{}", incident().id(), key.as_str());
    let action = raw_item(&store, &pk, &sk).await.expect("the action item");
    assert_eq!(text(&action, "status"), "INPROGRESS");
    assert_eq!(text(&action, "rung"), "hard_refresh");
    assert_eq!(text(&action, "outcome"), "requested");
    assert_eq!(text(&action, "at").parse::<DateTime<Utc>>().unwrap(), time(0));
    assert_eq!(number(&action, "in_progress_until"), time(10).timestamp_millis());
    // No expiry while the incident is open (M1): closing gives its actions one.
    assert!(!action.contains_key("expires_at"), "an open incident's action does not expire: {action:?}");

    store.complete(&app(), &key, Outcome::Succeeded).await.unwrap();
    let action = raw_item(&store, &pk, &sk).await.expect("the action item");
    assert_eq!(text(&action, "status"), "COMPLETED");
    assert_eq!(text(&action, "outcome"), "succeeded");
    assert!(!action.contains_key("in_progress_until"));

    store.close(&app(), time(5)).await.unwrap();
    assert!(raw_item(&store, &pk, "INCIDENT").await.is_none());
    // Closing keeps the action records: they answer late duplicates until they expire.
    assert!(raw_item(&store, &pk, &sk).await.is_some());
}

#[tokio::test]
async fn dedupe_remembers_a_key_until_it_is_forgotten() {
    let store = store("dedupe").await;
    let ttl = Duration::from_secs(3600);
    assert_eq!(store.first_sighting(&Marker::for_tests("ev1-aaaa"), ttl).await.unwrap(), Seen::New);
    assert_eq!(store.first_sighting(&Marker::for_tests("ev1-aaaa"), ttl).await.unwrap(), Seen::Duplicate);
    assert_eq!(store.first_sighting(&Marker::for_tests("ev1-bbbb"), ttl).await.unwrap(), Seen::New);
    store.forget(&Marker::for_tests("ev1-aaaa")).await.unwrap();
    assert_eq!(store.first_sighting(&Marker::for_tests("ev1-aaaa"), ttl).await.unwrap(), Seen::New);
    assert_eq!(store.first_sighting(&Marker::for_tests("ev1-aaaa"), ttl).await.unwrap(), Seen::Duplicate);
    // Keys are per Argo CD instance.
    let other = DynamoDbStore::new(dynamodb().await, store.table(), "other");
    assert_eq!(other.first_sighting(&Marker::for_tests("ev1-aaaa"), ttl).await.unwrap(), Seen::New);
    // Forgetting an unknown key is fine.
    store.forget(&Marker::for_tests("ev1-never-seen")).await.unwrap();
}

#[tokio::test]
async fn a_dedupe_record_is_new_again_once_its_ttl_has_passed_even_before_ttl_deletion() {
    let store = store("dedupe-expiry").await;
    assert_eq!(store.first_sighting(&Marker::for_tests("ev1-short"), Duration::from_secs(1)).await.unwrap(), Seen::New);
    assert_eq!(store.first_sighting(&Marker::for_tests("ev1-short"), Duration::from_secs(1)).await.unwrap(), Seen::Duplicate);
    tokio::time::sleep(Duration::from_millis(2100)).await;
    // moto does not delete expired items, like DynamoDB's lazy TTL: the condition decides.
    assert_eq!(store.first_sighting(&Marker::for_tests("ev1-short"), Duration::from_secs(3600)).await.unwrap(), Seen::New);
    assert_eq!(store.first_sighting(&Marker::for_tests("ev1-short"), Duration::from_secs(3600)).await.unwrap(), Seen::Duplicate);
}

/// A fleet outage's sighting (issue 22, H3): the first call's time, kept by every later call
/// that renews it, and a new time once it lapsed unrenewed or was forgotten.
#[tokio::test]
async fn a_sighting_keeps_its_first_time_while_renewed_and_starts_anew_once_it_lapsed() {
    let store = store("sighting").await;
    let first = store.sighted(&Marker::for_tests("fleet-seen-repo:x"), Duration::from_secs(2)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(store.sighted(&Marker::for_tests("fleet-seen-repo:x"), Duration::from_secs(2)).await.unwrap(), first, "renewed, same time");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        store.sighted(&Marker::for_tests("fleet-seen-repo:x"), Duration::from_secs(2)).await.unwrap(),
        first,
        "the renewal kept it alive"
    );
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let later = store.sighted(&Marker::for_tests("fleet-seen-repo:x"), Duration::from_secs(3600)).await.unwrap();
    assert!(later > first, "lapsed: a new sighting ({first} then {later})");
    store.forget(&Marker::for_tests("fleet-seen-repo:x")).await.unwrap();
    assert!(store.sighted(&Marker::for_tests("fleet-seen-repo:x"), Duration::from_secs(3600)).await.unwrap() > later);
}

#[tokio::test]
async fn a_lock_is_exclusive_renewable_by_its_owner_and_not_released_by_another() {
    let store = store("lock").await;
    let ttl = Duration::from_secs(300);
    assert!(store.try_lock(&app(), "worker-a", ttl).await.unwrap());
    assert!(!store.try_lock(&app(), "worker-b", ttl).await.unwrap());
    assert!(store.try_lock(&app(), "worker-a", ttl).await.unwrap(), "the owner may renew its lock");
    // Another app's lock is independent.
    assert!(store.try_lock(&medic_core::AppId::new("argocd", "other"), "worker-b", ttl).await.unwrap());
    // worker-b cannot release worker-a's lock.
    store.unlock(&app(), "worker-b").await.unwrap();
    assert!(!store.try_lock(&app(), "worker-c", ttl).await.unwrap());
    store.unlock(&app(), "worker-a").await.unwrap();
    assert!(store.try_lock(&app(), "worker-b", ttl).await.unwrap());
}

#[tokio::test]
async fn an_expired_lock_can_be_taken_over_and_its_old_owner_cannot_release_it() {
    let store = store("lock-expiry").await;
    assert!(store.try_lock(&app(), "crashed", Duration::from_secs(1)).await.unwrap());
    assert!(!store.try_lock(&app(), "worker-b", Duration::from_secs(300)).await.unwrap());
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert!(store.try_lock(&app(), "worker-b", Duration::from_secs(300)).await.unwrap());
    store.unlock(&app(), "crashed").await.unwrap();
    assert!(!store.try_lock(&app(), "worker-c", Duration::from_secs(300)).await.unwrap());
}

#[tokio::test]
async fn create_table_makes_an_on_demand_table_with_ttl_on_expires_at_and_may_run_twice() {
    let client = dynamodb().await;
    let table = unique("create");
    create_table(&client, &table).await.unwrap();
    create_table(&client, &table).await.unwrap();
    let described = client.describe_table().table_name(&table).send().await.unwrap();
    let t = described.table().unwrap();
    assert_eq!(t.billing_mode_summary().and_then(|b| b.billing_mode()), Some(&BillingMode::PayPerRequest));
    let keys: Vec<(&str, &KeyType)> = t.key_schema().iter().map(|k| (k.attribute_name(), k.key_type())).collect();
    assert_eq!(keys, vec![("pk", &KeyType::Hash), ("sk", &KeyType::Range)]);
    let ttl = client.describe_time_to_live().table_name(&table).send().await.unwrap();
    let ttl = ttl.time_to_live_description().unwrap();
    assert_eq!(ttl.time_to_live_status(), Some(&TimeToLiveStatus::Enabled));
    assert_eq!(ttl.attribute_name(), Some("expires_at"));
}

#[tokio::test]
async fn store_errors_carry_the_service_code_and_message_not_a_debug_dump() {
    let store = DynamoDbStore::new(dynamodb().await, "no-such-table", "default");
    let errors = [
        store.history(&app()).await.unwrap_err(),
        store.claim(&app(), &incident(), &attempt(Rung::Refresh, 0), TTL).await.unwrap_err(),
        store.first_sighting(&Marker::for_tests("ev1-x"), TTL).await.unwrap_err(),
        store.try_lock(&app(), "w", TTL).await.unwrap_err(),
    ];
    for err in errors {
        let text = err.to_string();
        assert!(text.contains("ResourceNotFoundException"), "{text}");
        assert!(text.contains("no-such-table"), "{text}");
        assert!(!text.contains("ServiceError {") && !text.contains("raw:") && !text.contains("ErrorMetadata"), "{text}");
        // A missing table stays missing: retrying changes nothing. The SDK's error is the cause.
        assert!(!err.retryable(), "{text}");
        let cause = std::error::Error::source(&err).map(ToString::to_string).unwrap_or_default();
        assert!(!cause.is_empty(), "the SDK error is kept as the cause: {text}");
    }
}

/// A store that does not answer (nothing listens at its endpoint) fails retryably: the next
/// delivery may find it back.
#[tokio::test]
async fn a_store_that_does_not_answer_fails_retryably_with_its_cause() {
    let sdk = medic_adapters::aws::sdk_config(Some("http://127.0.0.1:1")).await;
    let store = DynamoDbStore::new(aws_sdk_dynamodb::Client::new(&sdk), "table", "default");
    let err = store.first_sighting(&Marker::for_tests("ev1-x"), TTL).await.unwrap_err();
    assert!(err.retryable(), "{err}");
    assert!(std::error::Error::source(&err).is_some(), "{err}");
    assert!(err.to_string().starts_with("incident store: "), "the port's prefix stays: {err}");
}

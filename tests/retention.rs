//! How long an incident's action records live (issue 8, M1), the same in every `IncidentStore`:
//! memory, SQLite and DynamoDB (moto_server on 127.0.0.1). An incident open longer than the
//! 30-day retention keeps its ladder (before the fix DynamoDB gave every action `at + 30 days`, so
//! TTL would delete the ladder of a long incident and it would start again: a second escalation,
//! a second Slack parent); once closed its actions are kept `ACTION_RETENTION` and then count as
//! gone even where TTL's deletion lags; an incident that opens again keeps them again.

use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use medic::store::SqliteIncidentStore;
use medic_adapters::dynamodb::{DynamoDbStore, create_table};
use medic_adapters::memory::MemoryIncidentStore;
use medic_core::AppId;
use medic_core::Rung;
use medic_core::incident::{ACTION_RETENTION, Attempt, Outcome};
use medic_core::keys::IncidentKey;
use medic_core::ports::{Claim, IncidentStore};
use medic_sim::moto::{moto, unique};

fn app() -> AppId {
    AppId::new("argocd", "long-lived")
}
const LEASE: Duration = Duration::from_secs(600);

fn incident() -> IncidentKey {
    IncidentKey {
        instance: "default".into(),
        app: app(),
        revision: "0f3c2a1".into(),
        began_at: Some(Utc.with_ymd_and_hms(2026, 1, 1, 8, 0, 0).unwrap()),
    }
}

fn day(n: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 9, 0, 0).unwrap() + TimeDelta::days(n)
}

fn attempt(rung: Rung, at: DateTime<Utc>) -> Attempt {
    Attempt { rung, at, idempotency_key: Some(incident().key_for(rung)), outcome: Outcome::Requested }
}

async fn take<S: IncidentStore>(store: &S, rung: Rung, at: DateTime<Utc>) {
    assert_eq!(store.claim(&app(), &incident(), &attempt(rung, at), LEASE).await.unwrap(), Claim::Granted, "{rung:?} at {at}");
    store.complete(&app(), &incident().key_for(rung), Outcome::NoEffect).await.unwrap();
}

async fn claim<S: IncidentStore>(store: &S, rung: Rung, at: DateTime<Utc>) -> Claim {
    store.claim(&app(), &incident(), &attempt(rung, at), LEASE).await.unwrap()
}

async fn rungs<S: IncidentStore>(store: &S) -> Vec<Rung> {
    store.history(&app()).await.unwrap().attempts.iter().map(|a| a.rung).collect()
}

/// The contract, on one store. `between` runs after each phase (the DynamoDB case checks the
/// items' expiry there).
async fn actions_live_as_long_as_their_incident<S: IncidentStore>(store: &S, label: &str) {
    let retention = ACTION_RETENTION.as_secs() as i64 / 86_400;
    assert_eq!(retention, 30, "the documented retention");

    // Open for longer than the retention: the ladder is all there, nothing is taken twice.
    take(store, Rung::Refresh, day(0)).await;
    take(store, Rung::HardRefresh, day(1)).await;
    take(store, Rung::Escalate, day(45)).await;
    assert_eq!(rungs(store).await, vec![Rung::Refresh, Rung::HardRefresh, Rung::Escalate], "{label}: the ladder after 45 days");
    assert_eq!(claim(store, Rung::Refresh, day(60)).await, Claim::AlreadyDone(Outcome::NoEffect), "{label}: refresh again on day 60");

    // Closed on day 61: kept 30 days more, then gone even if nothing deleted it yet.
    store.close(&app(), day(61)).await.unwrap();
    assert!(store.history(&app()).await.unwrap().incident.is_none(), "{label}: closed");
    assert_eq!(
        claim(store, Rung::Refresh, day(61 + retention - 1)).await,
        Claim::AlreadyDone(Outcome::NoEffect),
        "{label}: within the retention after closing"
    );

    // The same incident opens again on day 62: its earlier actions are its ladder again, kept
    // for as long as it stays open (here past the day they would have expired).
    take(store, Rung::Sync, day(62)).await;
    assert_eq!(
        claim(store, Rung::HardRefresh, day(61 + retention + 5)).await,
        Claim::AlreadyDone(Outcome::NoEffect),
        "{label}: reopened, the earlier hard refresh is kept past its old expiry"
    );
    assert_eq!(rungs(store).await, vec![Rung::Refresh, Rung::HardRefresh, Rung::Escalate, Rung::Sync], "{label}: reopened");

    // Closed again on day 100; 31 days later the records count as gone: a claim is granted.
    store.close(&app(), day(100)).await.unwrap();
    assert_eq!(claim(store, Rung::Refresh, day(100 + retention + 1)).await, Claim::Granted, "{label}: expired after closing");
}

#[tokio::test]
async fn memory_store_keeps_actions_for_the_incident_s_life_then_the_retention() {
    actions_live_as_long_as_their_incident(&MemoryIncidentStore::default(), "memory").await;
}

#[tokio::test]
async fn sqlite_store_keeps_actions_for_the_incident_s_life_then_the_retention() {
    actions_live_as_long_as_their_incident(&SqliteIncidentStore::in_memory().unwrap(), "sqlite").await;
}

#[tokio::test]
async fn dynamodb_store_keeps_actions_for_the_incident_s_life_then_the_retention() {
    let sdk = medic_adapters::aws::sdk_config(Some(&moto().url)).await;
    let ddb = aws_sdk_dynamodb::Client::new(&sdk);
    let table = unique("retention");
    create_table(&ddb, &table).await.unwrap();
    let store = DynamoDbStore::new(ddb.clone(), table.clone(), "default");
    actions_live_as_long_as_their_incident(&store, "dynamodb").await;
}

/// The items themselves: no `expires_at` while the incident is open (TTL cannot delete its
/// ladder), `closed_at + 30 days` once closed; a record of the previous release (expiry from its
/// claim) loses its expiry when the open incident's history reads it.
#[tokio::test]
async fn dynamodb_action_items_carry_no_expiry_while_open_and_the_retention_once_closed() {
    let sdk = medic_adapters::aws::sdk_config(Some(&moto().url)).await;
    let ddb = aws_sdk_dynamodb::Client::new(&sdk);
    let table = unique("retention-items");
    create_table(&ddb, &table).await.unwrap();
    let store = DynamoDbStore::new(ddb.clone(), table.clone(), "default");
    let pk = format!("APP#default#{}", app());
    let expiry = |rung: Rung| {
        let (ddb, table, pk) = (ddb.clone(), table.clone(), pk.clone());
        async move {
            let sk = format!("ACTION#{}#{}", incident().id(), incident().key_for(rung).as_str());
            let item = ddb
                .get_item()
                .table_name(&table)
                .key("pk", AttributeValue::S(pk))
                .key("sk", AttributeValue::S(sk))
                .consistent_read(true)
                .send()
                .await
                .unwrap()
                .item
                .expect("the action item");
            item.get("expires_at").map(|v| v.as_n().unwrap().parse::<i64>().unwrap())
        }
    };
    take(&store, Rung::Refresh, day(0)).await;
    take(&store, Rung::Escalate, day(3)).await;
    assert_eq!(expiry(Rung::Refresh).await, None, "an open incident's action does not expire");
    assert_eq!(expiry(Rung::Escalate).await, None);

    // What the previous release wrote: the claim's time + 30 days, on an incident still open
    // (an expiry still ahead: history reads against the wall clock).
    let legacy = (Utc::now() + TimeDelta::days(10)).timestamp();
    ddb.update_item()
        .table_name(&table)
        .key("pk", AttributeValue::S(pk.clone()))
        .key("sk", AttributeValue::S(format!("ACTION#{}#{}", incident().id(), incident().key_for(Rung::Refresh).as_str())))
        .update_expression("SET expires_at = :e")
        .expression_attribute_values(":e", AttributeValue::N(legacy.to_string()))
        .send()
        .await
        .unwrap();
    assert_eq!(expiry(Rung::Refresh).await, Some(legacy));
    store.history(&app()).await.unwrap();
    assert_eq!(expiry(Rung::Refresh).await, None, "read by the open incident's history, the old expiry is removed");

    store.close(&app(), day(10)).await.unwrap();
    let kept_until = day(10).timestamp() + 30 * 86_400;
    assert_eq!(expiry(Rung::Refresh).await, Some(kept_until), "closed: kept 30 days from the close");
    assert_eq!(expiry(Rung::Escalate).await, Some(kept_until));
}

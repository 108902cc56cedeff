//! Golden layouts of the state table: what each write leaves in DynamoDB, key by key and attribute
//! by attribute, pinned. Records written by a deployed version are read by the next one (an open
//! incident, its actions, an in-progress dedupe lease, a Slack record); a change of a key or an
//! attribute name would orphan them. With `functions/core/tests/key_vectors.rs` (the keys
//! themselves) this is what lets the code be restructured without losing a record. The table's
//! documentation is in `functions/adapters/src/dynamodb/mod.rs`.

use medic_core::keys::Marker;
use std::collections::BTreeMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{TimeZone, Utc};
use medic_adapters::dynamodb::{DynamoDbStore, create_table};
use medic_core::Rung;
use medic_core::incident::{Attempt, DecisionNote, Outcome};
use medic_core::keys::IncidentKey;
use medic_core::ports::{AppLock, DedupeStore, EscalationStore, IncidentStore};
use medic_core::switch::{Mode, SwitchStore};
use medic_sim::moto::{moto, unique};
use medic_slack::DynamoDbEscalationStore;

/// Every item of the table as `pk sk: attribute names` (values vary with the time of the run).
async fn layout(ddb: &aws_sdk_dynamodb::Client, table: &str) -> BTreeMap<String, Vec<String>> {
    let items = ddb.scan().table_name(table).send().await.unwrap().items.unwrap_or_default();
    items
        .into_iter()
        .map(|item| {
            let s = |k: &str| item.get(k).and_then(|v| v.as_s().ok()).cloned().unwrap_or_default();
            let mut names: Vec<String> = item.keys().filter(|k| !matches!(k.as_str(), "pk" | "sk")).cloned().collect();
            names.sort();
            (format!("{} {}", s("pk"), s("sk")), names)
        })
        .collect()
}

fn attr<'a>(ddb_items: &'a [std::collections::HashMap<String, AttributeValue>], pk: &str, name: &str) -> &'a AttributeValue {
    ddb_items.iter().find(|i| i.get("pk").and_then(|v| v.as_s().ok()).is_some_and(|p| p == pk)).and_then(|i| i.get(name)).unwrap()
}

#[tokio::test]
async fn the_state_table_keeps_the_layout_deployed_versions_wrote() {
    let sdk = medic_adapters::aws::sdk_config(Some(&moto().url)).await;
    let ddb = aws_sdk_dynamodb::Client::new(&sdk);
    let table = unique("layout");
    create_table(&ddb, &table).await.unwrap();
    let store = DynamoDbStore::new(ddb.clone(), table.clone(), "prod");

    let incident = IncidentKey {
        instance: "prod".into(),
        app: medic_core::AppId::new("argocd", "payments"),
        revision: "34a1021526089c57744ab3e25ec2f81ca02d37c5".into(),
        began_at: Some(Utc.with_ymd_and_hms(2026, 11, 1, 12, 0, 0).unwrap()),
    };
    let at = Utc::now();
    let attempt = |rung| Attempt { rung, at, idempotency_key: Some(incident.key_for(rung)), outcome: Outcome::Requested };
    store.claim(&medic_core::AppId::new("argocd", "payments"), &incident, &attempt(Rung::Refresh), Duration::from_secs(600)).await.unwrap();
    store.complete(&medic_core::AppId::new("argocd", "payments"), &incident.key_for(Rung::Refresh), Outcome::NoEffect).await.unwrap();
    store.claim(&medic_core::AppId::new("argocd", "payments"), &incident, &attempt(Rung::Sync), Duration::from_secs(600)).await.unwrap();
    let d = medic_core::Decision::gone(&medic_core::AppId::new("argocd", "payments"), at);
    store
        .note_decision(&medic_core::AppId::new("argocd", "payments"), &incident, &DecisionNote::new(&d, "payments", "sweep"))
        .await
        .unwrap();
    store
        .claim(
            &medic_core::AppId::new("argocd", "closed"),
            &IncidentKey { app: medic_core::AppId::new("argocd", "closed"), ..incident.clone() },
            &attempt(Rung::Escalate),
            Duration::from_secs(600),
        )
        .await
        .unwrap();
    store.close(&medic_core::AppId::new("argocd", "closed"), at).await.unwrap();
    store.first_sighting(&Marker::for_tests("alert-outage-w1"), Duration::from_secs(3600)).await.unwrap();
    store.begin(&Marker::for_tests("ev1-8bdb6c078c9510343567df7a20a26669"), "m1#1", Duration::from_secs(60)).await.unwrap();
    store.begin(&Marker::for_tests("sw1-a0da5884c26ad252632740c3e1e1c625"), "m2#1", Duration::from_secs(60)).await.unwrap();
    store.end(&Marker::for_tests("sw1-a0da5884c26ad252632740c3e1e1c625"), "m2#1", true, Duration::from_secs(3600)).await.unwrap();
    store.try_lock(&medic_core::AppId::new("argocd", "payments"), "m1#1", Duration::from_secs(120)).await.unwrap();
    store.write_mode(Mode::DryRun, "U0ALICE001").await.unwrap();
    let slack = DynamoDbEscalationStore::new(ddb.clone(), table.clone(), "prod");
    slack
        .store("action", "amact-5c880e8b4ca2835a91295771ad99ad75", &serde_json::json!({"a": 1}), None, Duration::from_secs(60))
        .await
        .unwrap();
    // A decision record (issue 30), at a fixed time, kept long enough for this test's scan.
    let decided =
        medic_core::Decision::nothing(&medic_core::AppId::new("argocd", "payments"), Utc.with_ymd_and_hms(2026, 11, 1, 12, 5, 0).unwrap());
    let record = medic_core::record::DecisionRecord::new(
        &decided,
        &serde_json::json!({"metadata": {"name": "payments", "namespace": "argocd"}, "spec": {"project": "payments"}}),
        "payments",
        "sweep",
        "dry-run",
        &medic_core::History::default(),
    );
    store.clone().with_retention(Duration::from_secs(3650 * 86_400)).record_decision(&record).await.unwrap();

    let id = incident.id();
    let closed_id = IncidentKey { app: medic_core::AppId::new("argocd", "closed"), ..incident.clone() }.id();
    let s = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let expected: BTreeMap<String, Vec<String>> = [
        ("APP#prod#argocd/payments INCIDENT".to_owned(), s(&["app", "incident", "incident_id", "last_decision", "opened_at"])),
        (
            format!("APP#prod#argocd/payments ACTION#{id}#{}", incident.key_for(Rung::Refresh)),
            s(&["app", "at", "idempotency_key", "incident_id", "outcome", "rung", "status"]),
        ),
        (
            format!("APP#prod#argocd/payments ACTION#{id}#{}", incident.key_for(Rung::Sync)),
            s(&["app", "at", "idempotency_key", "in_progress_until", "incident_id", "outcome", "rung", "status"]),
        ),
        (
            format!("APP#prod#argocd/closed CLOSED#{closed_id}"),
            s(&["app", "closed_at", "expires_at", "incident", "incident_id", "opened_at"]),
        ),
        (
            format!("APP#prod#argocd/closed ACTION#{closed_id}#{}", incident.key_for(Rung::Escalate)),
            s(&["app", "at", "expires_at", "idempotency_key", "in_progress_until", "incident_id", "outcome", "rung", "status"]),
        ),
        ("DEDUPE#prod#alert-outage-w1 -".to_owned(), s(&["expires_at", "seen_at"])),
        ("DEDUPE#prod#ev1-8bdb6c078c9510343567df7a20a26669 -".to_owned(), s(&["expires_at", "lease_until", "owner", "seen_at", "status"])),
        ("DEDUPE#prod#sw1-a0da5884c26ad252632740c3e1e1c625 -".to_owned(), s(&["expires_at", "owner", "seen_at", "status"])),
        ("LOCK#prod#argocd/payments -".to_owned(), s(&["expires_at", "locked_at", "owner"])),
        ("SWITCH#prod -".to_owned(), s(&["mode", "set_at", "set_by"])),
        ("ESC#prod#action amact-5c880e8b4ca2835a91295771ad99ad75".to_owned(), s(&["doc", "expires_at", "version"])),
        ("DECISION#prod#2026-11-01 2026-11-01T12:05:00.000000Z#argocd/payments".to_owned(), s(&["app", "expires_at", "record"])),
    ]
    .into_iter()
    .collect();
    let found = layout(&ddb, &table).await;
    assert_eq!(found, expected, "a key or attribute of the state table changed: records of deployed versions would be orphaned");

    let items = ddb.scan().table_name(&table).send().await.unwrap().items.unwrap_or_default();
    assert_eq!(attr(&items, "SWITCH#prod", "mode").as_s().unwrap(), "dry-run");
    let recorded: serde_json::Value = serde_json::from_str(attr(&items, "DECISION#prod#2026-11-01", "record").as_s().unwrap()).unwrap();
    let mut fields: Vec<&str> = recorded.as_object().unwrap().keys().map(String::as_str).collect();
    fields.sort();
    assert_eq!(
        fields,
        ["decision", "fields", "history", "mode", "project", "rows", "trigger"],
        "a decision record's fields, as medic report and replay read them"
    );
    assert_eq!(attr(&items, "DEDUPE#prod#sw1-a0da5884c26ad252632740c3e1e1c625", "status").as_s().unwrap(), "COMPLETED");
    assert_eq!(attr(&items, "DEDUPE#prod#ev1-8bdb6c078c9510343567df7a20a26669", "status").as_s().unwrap(), "INPROGRESS");
}

//! One timeline per incident (issue 30): each event written once, through a run killed between
//! its claim and its call and the redelivery that resumes it, on the state file (SQLite) and on
//! the state table (DynamoDB in moto); and what `medic incidents show` makes of it.

use std::time::Duration;

use chrono::Utc;
use medic::store::SqliteIncidentStore;
use medic_adapters::dynamodb::{DynamoDbStore, create_table};
use medic_core::ports::{IncidentLedger, IncidentStore};
use medic_core::step::StepResult;
use medic_core::timeline::{Arrival, EventKind};
use medic_core::{Action, PolicyConfig, Trigger};
use medic_sim::SimConfig;
use medic_sim::moto::{moto, unique};

use crate::support::{DiesAt, Dying, Parts, app, client, sim_with_samples};

fn policy() -> PolicyConfig {
    PolicyConfig { instance_id: "test".into(), settle_secs: 0, ..PolicyConfig::default() }
}

async fn dynamodb() -> DynamoDbStore {
    let sdk = medic_adapters::aws::sdk_config(Some(&moto().url)).await;
    let ddb = aws_sdk_dynamodb::Client::new(&sdk);
    let table = unique("timeline");
    create_table(&ddb, &table).await.unwrap();
    DynamoDbStore::new(ddb, table, "test")
}

/// fraud-scoring's notification arrives; the run that takes it is killed after claiming the hard
/// refresh and before sending it (its future dropped at the call, as a SIGKILL leaves it); SQS
/// delivers the message again once the claim has expired, and the run that takes it resumes the
/// claim and heals the app; the message is delivered a third time (its deletion was lost). The
/// incident's timeline shows each event once.
async fn through_a_kill_and_a_redelivery<S: IncidentStore + IncidentLedger>(store: S, label: &str) -> S {
    let sim = sim_with_samples(SimConfig::default()).await;
    let c = client(&sim);
    let parts = Parts::new(store, policy());
    let target = app("fraud-scoring", "payments");
    let arrival = Arrival { key: format!("ev1-{}#0", unique("delivery")), received_at: Utc::now() };

    let dying = Dying(&c, DiesAt::HardRefresh);
    let first = parts.step(&dying, false, Duration::ZERO).with_arrival(&arrival);
    let killed = tokio::time::timeout(Duration::from_secs(2), first.run(&target, &Trigger::sweep(), None)).await;
    assert!(killed.is_err(), "{label}: the first run died at its call");
    assert_eq!(sim.counts().hard_refresh, 0, "{label}");

    let again = parts.step(&c, false, Duration::ZERO).with_arrival(&arrival);
    let resumed = again.run(&target, &Trigger::sweep(), None).await.unwrap();
    assert_eq!((resumed.action, resumed.result), (Some(Action::HardRefresh), StepResult::Refreshed), "{label}: {}", resumed.detail);
    let incident = resumed.decision.as_ref().and_then(|d| d.incident.clone()).expect("the decision names its incident");
    let third = parts.step(&c, false, Duration::ZERO).with_arrival(&arrival);
    third.run(&target, &Trigger::sweep(), None).await.unwrap();

    let timeline = parts.store.timeline(&incident.app, &incident.id()).await.unwrap();
    let kinds: Vec<EventKind> = timeline.iter().map(|e| e.kind).collect();
    let mut once = kinds.clone();
    once.dedup();
    assert_eq!(kinds, once, "{label}: each event once: {timeline:#?}");
    for kind in [EventKind::Received, EventKind::Decided, EventKind::Claimed, EventKind::Acted, EventKind::Verified] {
        assert_eq!(kinds.iter().filter(|k| **k == kind).count(), 1, "{label}: one {kind:?}: {kinds:?}");
    }
    let key = resumed.idempotency_key.as_ref().map(|k| k.as_str().to_owned());
    for e in timeline.iter().filter(|e| matches!(e.kind, EventKind::Claimed | EventKind::Acted | EventKind::Verified)) {
        assert_eq!(e.key, key, "{label}: {:?} carries the action's key", e.kind);
    }
    let decided = timeline.iter().find(|e| e.kind == EventKind::Decided).unwrap();
    assert!(decided.rule.as_deref().is_some_and(|r| r.contains("hard_refresh")), "{label}: the rule: {decided:?}");
    assert_eq!(decided.level.as_deref(), Some("act"), "{label}");
    if resumed.resolution.is_some() {
        assert_eq!(kinds.last(), Some(&EventKind::Resolved), "{label}: healed by the refresh, resolved last: {kinds:?}");
    }
    // Written again as the same events: nothing new.
    let written = parts.store.append_event(&timeline[0]).await.unwrap();
    assert!(!written, "{label}: an event written twice is one record");
    parts.into_store()
}

#[tokio::test]
async fn an_incident_through_a_kill_and_a_redelivery_shows_each_event_once_in_sqlite() {
    let store = through_a_kill_and_a_redelivery(SqliteIncidentStore::in_memory().unwrap(), "sqlite").await;
    // `medic incidents show fraud-scoring` prints it, and `-o json` carries it.
    let query = medic::incidents::Query { app: Some("fraud-scoring".into()), closed: true, ..Default::default() };
    let views = medic::incidents::collect(&store, &store, &query, Utc::now()).await.unwrap();
    assert_eq!(views.len(), 1, "{views:?}");
    let kinds: Vec<&str> = views[0].timeline.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(&kinds[..5], ["received", "decided", "claimed", "acted", "verified"], "{kinds:?}");
    let shown = medic::incidents::details(&views[0], Utc::now());
    let lines: Vec<&str> = shown.lines().skip_while(|l| l.trim() != "timeline").skip(1).collect();
    assert_eq!(lines.len(), kinds.len(), "one line per event:\n{shown}");
    assert!(lines[1].contains("decided") && lines[1].contains("hard_refresh") && lines[1].contains("[act]"), "{}", lines[1]);
    let json = serde_json::to_value(&views[0]).unwrap();
    assert_eq!(json["timeline"].as_array().map(Vec::len), Some(kinds.len()), "{json}");
    // A listing reads no timeline.
    let listed = medic::incidents::collect(&store, &store, &medic::incidents::Query { closed: true, ..Default::default() }, Utc::now())
        .await
        .unwrap();
    assert!(listed.iter().all(|v| v.timeline.is_empty()));
}

#[tokio::test]
async fn an_incident_through_a_kill_and_a_redelivery_shows_each_event_once_in_dynamodb() {
    through_a_kill_and_a_redelivery(dynamodb().await, "dynamodb").await;
}

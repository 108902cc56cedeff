//! `medic incidents` against DynamoDB (moto_server on 127.0.0.1): what the per-app step leaves in
//! the state table (open incidents with their last decision, closed ones kept for a week), read
//! the way the command reads a deployed stack, in both output formats and with the filters; and
//! items written before decision notes still read.

use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::Utc;
use medic::incidents::{self, Query};
use medic_adapters::dynamodb::{DynamoDbStore, create_table};
use medic_core::keys::IncidentKey;
use medic_core::ports::IncidentLedger;
use medic_core::step::StepResult;
use medic_core::{PolicyConfig, Trigger};
use medic_sim::SimConfig;
use medic_sim::moto::{moto, unique};
use medic_slack::DynamoDbEscalationStore;

use crate::support::{Parts, app, client, sim_with_samples};

#[tokio::test]
async fn incidents_in_dynamodb_list_open_and_closed_with_notes_filters_and_both_outputs() {
    let sdk = medic_adapters::aws::sdk_config(Some(&moto().url)).await;
    let ddb = aws_sdk_dynamodb::Client::new(&sdk);
    let table = unique("incidents");
    create_table(&ddb, &table).await.unwrap();
    let store = DynamoDbStore::new(ddb.clone(), table.clone(), "test");
    let slack = DynamoDbEscalationStore::new(ddb.clone(), table.clone(), "test");
    let argo = sim_with_samples(SimConfig::default()).await;
    let c = client(&argo);
    let parts = Parts::new(store.clone(), PolicyConfig { instance_id: "test".into(), settle_secs: 0, ..PolicyConfig::default() });
    let step = parts.step(&c, false, Duration::from_secs(60));
    let result = |r: medic_core::step::StepReport| r.result;
    // A hook failure escalates; a stale app is refreshed and heals (the simulator's outcome): the
    // verified refresh's own read closes its incident, kept as a closed record; a CRD race is synced.
    assert_eq!(result(step.run(&app("accounts", "payments"), &Trigger::sweep(), None).await.unwrap()), StepResult::Escalated);
    let inventory = step.run(&app("inventory", "payments"), &Trigger::sweep(), None).await.unwrap();
    assert_eq!(inventory.result, StepResult::Refreshed);
    assert!(inventory.detail.ends_with("the incident is closed"), "{}", inventory.detail);
    assert_eq!(result(step.run(&app("observability", "platform"), &Trigger::sweep(), None).await.unwrap()), StepResult::Synced);
    // Looked at again, inventory is calm and has no incident left to close.
    assert_eq!(result(step.run(&app("inventory", "payments"), &Trigger::sweep(), None).await.unwrap()), StepResult::NoAction);

    let open = store.incidents(false).await.unwrap();
    assert_eq!(open.iter().map(|r| r.app.as_str()).collect::<Vec<_>>(), ["argocd/accounts", "argocd/observability"]);
    let all = store.incidents(true).await.unwrap();
    let inventory = all.iter().find(|r| r.app == "argocd/inventory").expect("the closed incident is kept");
    assert!(inventory.closed_at.is_some());
    assert_eq!(inventory.last_decision.as_ref().unwrap().action, "refresh", "the note it had when it closed");
    assert_eq!(inventory.attempts.len(), 1);

    let now = Utc::now();
    let views = incidents::collect(&store, &slack, &Query::default(), now).await.unwrap();
    let accounts = views.iter().find(|v| v.app == "argocd/accounts").unwrap();
    assert_eq!(accounts.failure_mode.as_deref(), Some("hook-failed"));
    assert_eq!(accounts.project.as_deref(), Some("payments"));
    assert_eq!(accounts.next.kind, "human");
    let note = accounts.last_decision.as_ref().unwrap();
    assert!(note.evidence.iter().any(|e| e.value.contains("accounts-db-migrate")), "{note:?}");
    let observability = views.iter().find(|v| v.app == "argocd/observability").unwrap();
    assert_eq!(observability.rungs.len(), 1);
    assert!(observability.rungs[0].idempotency_key.as_deref().unwrap().starts_with("am1-"));

    let table_text = incidents::table(&views, now);
    assert!(
        table_text.lines().any(|l| l.starts_with("argocd/accounts ") && l.contains("hook-failed") && l.contains("human owns it")),
        "{table_text}"
    );
    let lines = incidents::json_lines(&views).unwrap();
    let parsed: Vec<serde_json::Value> = lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(parsed.len(), 2);
    assert_eq!(parsed.iter().find(|v| v["app"] == "argocd/observability").unwrap()["rungs"][0]["rung"], "sync");

    let filtered = |query: Query| {
        let (store, slack) = (&store, &slack);
        async move { incidents::collect(store, slack, &query, now).await.unwrap() }
    };
    let by_project = filtered(Query { projects: vec!["platform".into()], ..Query::default() }).await;
    assert_eq!(by_project.iter().map(|v| v.app.as_str()).collect::<Vec<_>>(), ["argocd/observability"]);
    let by_mode = filtered(Query { modes: vec!["hook-failed".into()], closed: true, ..Query::default() }).await;
    assert_eq!(by_mode.iter().map(|v| v.app.as_str()).collect::<Vec<_>>(), ["argocd/accounts"]);
    assert!(filtered(Query { older_than: Some(Duration::from_secs(1000 * 86400)), ..Query::default() }).await.is_empty());
    let closed = filtered(Query { closed: true, ..Query::default() }).await;
    assert_eq!(closed.last().unwrap().status, "closed", "closed ones after the open ones");
    let shown = filtered(Query { app: Some("inventory".into()), ..Query::default() }).await;
    assert_eq!(shown.len(), 1, "show finds closed incidents too");
    let text = incidents::details(&shown[0], now);
    assert!(text.contains("argocd/inventory (closed)") && text.contains("refresh"), "{text}");

    // An incident item written by an earlier version (no `last_decision`) still reads, and an
    // expired closed record is not listed although TTL has not deleted it yet.
    let old =
        IncidentKey { instance: "test".into(), app: medic_core::AppId::new("argocd", "legacy"), revision: "abc".into(), began_at: None };
    let pk = "APP#test#argocd/legacy";
    for (sk, extra) in [("INCIDENT", None), ("CLOSED#inc-expired", Some(now.timestamp() - 60))] {
        let mut put = ddb
            .put_item()
            .table_name(&table)
            .item("pk", AttributeValue::S(pk.into()))
            .item("sk", AttributeValue::S(sk.into()))
            .item("app", AttributeValue::S("argocd/legacy".into()))
            .item("incident_id", AttributeValue::S(old.id()))
            .item("incident", AttributeValue::S(serde_json::to_string(&old).unwrap()))
            .item("opened_at", AttributeValue::S("2026-11-01T12:00:00+00:00".into()));
        if let Some(expired) = extra {
            put = put
                .item("closed_at", AttributeValue::S("2026-11-01T13:00:00+00:00".into()))
                .item("expires_at", AttributeValue::N(expired.to_string()));
        }
        put.send().await.unwrap();
    }
    let views = incidents::collect(&store, &slack, &Query { closed: true, ..Query::default() }, now).await.unwrap();
    let legacy: Vec<_> = views.iter().filter(|v| v.app == "argocd/legacy").collect();
    assert_eq!(legacy.len(), 1, "the open one only");
    assert_eq!(legacy[0].status, "open");
    assert!(legacy[0].last_decision.is_none() && legacy[0].failure_mode.is_none());
    assert_eq!(legacy[0].next.kind, "look_again");
    argo.shutdown().await;
}

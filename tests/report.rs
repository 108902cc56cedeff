//! `medic report` and `medic replay` over a history the per-app step recorded, with outcomes known
//! by construction, in SQLite and in DynamoDB (moto_server on 127.0.0.1): the report's counts per
//! failure mode, project and outcome are the history's; a replay with the recording's own
//! configuration decides every record the same, and one threshold changed changes exactly the
//! decisions it governs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeDelta, Utc};
use medic::store::SqliteIncidentStore;
use medic_adapters::argocd::HttpArgoClient;
use medic_adapters::dynamodb::{DynamoDbStore, create_table};
use medic_core::ports::{IncidentLedger, IncidentStore};
use medic_core::report::Next;
use medic_core::{PolicyConfig, Trigger};
use medic_sim::moto::{moto, unique};
use medic_sim::{ArgoSim, SimConfig};
use serde_json::json;

use crate::support::{Parts, TestClock, app, client, events_dir};

/// The app `name` as Argo CD shows it once it is Synced and Healthy again at `at`, with the
/// operation `operation` (or none) as its last.
fn healed(sim: &ArgoSim, name: &str, at: chrono::DateTime<Utc>, operation: Option<serde_json::Value>) {
    let mut a = sim.app("argocd", name).unwrap();
    let status = &mut a["status"];
    status["sync"]["status"] = json!("Synced");
    status["health"] = json!({"status": "Healthy", "lastTransitionTime": at.to_rfc3339()});
    status["conditions"] = json!([]);
    status["reconciledAt"] = json!(at.to_rfc3339());
    match operation {
        Some(op) => status["operationState"] = op,
        None => {
            status.as_object_mut().unwrap().remove("operationState");
        }
    }
    if let Some(resources) = status["resources"].as_array_mut() {
        for r in resources {
            r["status"] = json!("Synced");
            r["health"] = json!({"status": "Healthy"});
        }
    }
    sim.insert_app(a);
}

/// The configuration the history is recorded with.
fn recording_config() -> PolicyConfig {
    PolicyConfig { settle_secs: 600, ..PolicyConfig::default() }
}

/// The app `name` as the controller leaves it after reconciling at `at`, unchanged otherwise.
fn reconciled(sim: &ArgoSim, name: &str, at: chrono::DateTime<Utc>) {
    let mut a = sim.app("argocd", name).unwrap();
    a["status"]["reconciledAt"] = json!(at.to_rfc3339());
    sim.insert_app(a);
}

/// A week's history, recorded by the real step over the sample fleet, two days ago:
/// - inventory (stale): decided in a dry run, Synced and Healthy again 5 minutes later, looked at;
/// - accounts (a failed hook): decided in a dry run, looked at again 30 minutes later, unchanged;
/// - observability: decided in a dry run; a person syncs it 2 minutes later, healthy at 3;
/// - payouts (a transient sync failure): decided and synced in `act`;
/// - storefront (a failed sync): decided in a dry run, Synced and Healthy 4 minutes later, never
///   looked at again.
///
/// Returns the simulator, which shows the apps as they are now.
async fn record_history<S: IncidentStore>(store: S) -> ArgoSim {
    let clock = TestClock::now_real();
    clock.advance(-TimeDelta::days(2));
    let t0 = clock.now_at();
    // The sample fleet as it stood then.
    let owned = ArgoSim::start(SimConfig::default()).await.unwrap();
    owned.load_samples(&events_dir(), t0).unwrap();
    let sim = &owned;
    let parts = Parts::new(store, recording_config());
    let c = client(sim);
    let dry = parts.step_with_clock(&c, clock.as_ref(), true, Duration::from_secs(60));
    let live = parts.step_with_clock(&c, clock.as_ref(), false, Duration::from_secs(60));
    let look = |name: &'static str, project: &'static str| app(name, project);
    for (name, project) in [("inventory", "payments"), ("accounts", "payments"), ("observability", "platform"), ("storefront", "payments")]
    {
        dry.run(&look(name, project), &Trigger::sweep(), None).await.unwrap();
    }
    live.run(&look("payouts", "payments"), &Trigger::sweep(), None).await.unwrap();
    let person = json!({
        "operation": {"initiatedBy": {"username": "alice"}, "sync": {"revision": "HEAD"}},
        "phase": "Succeeded", "message": "successfully synced (all tasks run)",
        "startedAt": (t0 + TimeDelta::minutes(2)).to_rfc3339(), "finishedAt": (t0 + TimeDelta::minutes(2)).to_rfc3339()
    });
    clock.advance(TimeDelta::minutes(3));
    healed(sim, "observability", clock.now_at(), Some(person));
    dry.run(&look("observability", "platform"), &Trigger::sweep(), None).await.unwrap();
    clock.advance(TimeDelta::minutes(1));
    // storefront heals without another look: only its state now shows it.
    healed(sim, "storefront", clock.now_at(), None);
    clock.advance(TimeDelta::minutes(1));
    healed(sim, "inventory", clock.now_at(), None);
    dry.run(&look("inventory", "payments"), &Trigger::sweep(), None).await.unwrap();
    clock.advance(TimeDelta::minutes(25));
    reconciled(sim, "accounts", clock.now_at());
    dry.run(&look("accounts", "payments"), &Trigger::sweep(), None).await.unwrap();
    owned
}

/// A fresh state table in moto, for instance `instance`.
async fn state_table(instance: &str) -> DynamoDbStore {
    let sdk = medic_adapters::aws::sdk_config(Some(&moto().url)).await;
    let ddb = aws_sdk_dynamodb::Client::new(&sdk);
    let table = unique(instance);
    create_table(&ddb, &table).await.unwrap();
    DynamoDbStore::new(ddb, table, instance)
}

/// The report's rows as (mode, project) → (decisions, apps, would change, would escalate, outcomes).
type Rows = BTreeMap<(String, String), (usize, usize, usize, usize, BTreeMap<Next, usize>)>;

async fn rows_of<L: IncidentLedger>(ledger: &L, argo: Option<&HttpArgoClient>) -> (usize, Rows) {
    let since = Utc::now() - TimeDelta::days(7);
    let report = medic::report::read(ledger, since, TimeDelta::seconds(600), argo).await.unwrap();
    let rows = report
        .rows
        .iter()
        .map(|r| ((r.failure_mode.clone(), r.project.clone()), (r.decisions, r.apps, r.would_change, r.would_escalate, r.next.clone())))
        .collect();
    (report.decisions, rows)
}

/// The rows the history makes: from the records alone, or with the apps as Argo CD shows them
/// now (`now`): storefront healed without another look, and accounts' hook is still failed.
fn expected(now: bool) -> Rows {
    let row = |mode: &str, project: &str, counts: (usize, usize, usize, usize), next: &[(Next, usize)]| {
        ((mode.to_owned(), project.to_owned()), (counts.0, counts.1, counts.2, counts.3, next.iter().copied().collect()))
    };
    type Outcomes = &'static [(Next, usize)];
    let (hook, storefront): (Outcomes, Outcomes) = if now {
        (&[(Next::StillBroken, 2)], &[(Next::HealedByItself, 1)])
    } else {
        (&[(Next::StillBroken, 1), (Next::NotSeenSince, 1)], &[(Next::NotSeenSince, 1)])
    };
    [
        row("crd-not-established", "platform", (1, 1, 1, 0), &[(Next::PersonActed, 1)]),
        row("hook-failed", "payments", (2, 1, 0, 2), hook),
        row("stale-reconcile", "payments", (1, 1, 1, 0), &[(Next::HealedByItself, 1)]),
        row("sync-failed", "payments", (1, 1, 0, 1), storefront),
        row("sync-failed-transient", "payments", (1, 1, 1, 0), &[(Next::ArgoMedicActed, 1)]),
    ]
    .into_iter()
    .collect()
}

#[tokio::test]
async fn the_report_counts_what_the_recorded_history_did_in_sqlite_and_in_dynamodb() {
    let sqlite = Arc::new(SqliteIncidentStore::in_memory().unwrap());
    let sim = record_history(Arc::clone(&sqlite)).await;
    let (decisions, rows) = rows_of(sqlite.as_ref(), None).await;
    assert_eq!(rows, expected(false), "sqlite");
    assert_eq!(decisions, 8, "sqlite: the two healthy looks are read too, and make no row");
    assert_eq!(rows_of(sqlite.as_ref(), Some(&client(&sim))).await, (8, expected(true)), "sqlite, with the apps now");

    let dynamodb = state_table("report").await;
    let sim = record_history(dynamodb.clone()).await;
    assert_eq!(rows_of(&dynamodb, None).await, (8, expected(false)), "dynamodb");
    assert_eq!(rows_of(&dynamodb, Some(&client(&sim))).await, (8, expected(true)), "dynamodb, with the apps now");

    let report =
        medic::report::read(&dynamodb, Utc::now() - TimeDelta::days(7), TimeDelta::seconds(600), Some(&client(&sim))).await.unwrap();
    let text = medic::report::table(&report, Utc::now());
    assert!(text.starts_with("8 decisions recorded since"), "{text}");
    // docs/operations.md shows this table as its example: it is what the code prints.
    let docs = std::fs::read_to_string(crate::support::events_dir().join("../docs/operations.md")).unwrap();
    let example = docs
        .split("<!-- report-example")
        .nth(1)
        .and_then(|rest| rest.split("```").nth(1))
        .expect("docs/operations.md has the report example");
    let table: String = text.lines().skip(2).take_while(|l| !l.is_empty()).map(|l| format!("{l}\n")).collect();
    assert_eq!(example.trim_start_matches('\n'), table, "docs/operations.md's example is the table the code prints for this history");
}

/// The sweeper's weekly report (what its report schedule's input asks for) over the same history
/// in the stack's state table: the report it makes is `medic report`'s with the apps now, and the
/// Block Kit message it posts says the same counts, row for row and in total, within Slack's limits.
#[tokio::test]
async fn the_weekly_report_posted_to_slack_counts_what_the_recorded_history_did() {
    let stack = crate::support::slack::stack().await;
    let sim = record_history(stack.store()).await;
    let mut sweeper = stack.sweeper(&sim, Duration::from_secs(300));
    sweeper.config.settle = Duration::from_secs(600);
    let done = sweeper.handle(&json!({"medic": medic_sweeper::WEEKLY_REPORT_INPUT})).await.unwrap();
    let medic_sweeper::Done::Report(report) = done else { panic!("the report's input made a sweep: {done:?}") };
    let rows: Rows = report
        .rows
        .iter()
        .map(|r| ((r.failure_mode.clone(), r.project.clone()), (r.decisions, r.apps, r.would_change, r.would_escalate, r.next.clone())))
        .collect();
    assert_eq!((report.decisions, rows), (8, expected(true)), "the sweeper's report is medic report's, with the apps now");

    let posted: Vec<_> = stack
        .slack
        .parents(crate::support::slack::CH)
        .into_iter()
        .filter(|m| m.payload("key").is_some_and(|k| k.starts_with("report-")))
        .collect();
    assert_eq!(posted.len(), 1, "one weekly report in the channel");
    let blocks = posted[0].blocks.as_array().unwrap();
    let violations = medic_slack::blocks::violations(&posted[0].text, blocks);
    assert!(violations.is_empty(), "{violations:?}");
    let texts: Vec<String> = blocks
        .iter()
        .flat_map(|b| {
            let text = b.pointer("/text/text").and_then(|t| t.as_str()).map(str::to_owned);
            let fields = b["fields"].as_array().into_iter().flatten().filter_map(|f| f["text"].as_str().map(str::to_owned));
            text.into_iter().chain(fields)
        })
        .collect();
    for ((mode, project), (decisions, apps, change, escalate, next)) in expected(true) {
        let head = format!("*{mode}* · project `{project}` · {decisions} decisions on {apps} apps");
        let row = texts.iter().find(|t| t.starts_with(&head)).unwrap_or_else(|| panic!("no row `{head}` in {texts:#?}"));
        assert!(row.contains(&format!("would: change {change} · escalate {escalate}")), "{row}");
        for (n, k) in next {
            assert!(row.contains(&format!("{} {k}", n.as_str().replace('_', " "))), "{n:?} {k}: {row}");
        }
    }
    let total = |label: &str| texts.iter().find_map(|t| t.strip_prefix(&format!("*{label}*\n"))).map(str::to_owned);
    assert_eq!(total("Would change Argo CD").as_deref(), Some("3"), "{texts:#?}");
    assert_eq!(total("Still broken").as_deref(), Some("2"), "{texts:#?}");
    assert_eq!(total("A person acted").as_deref(), Some("1"), "{texts:#?}");
}

/// Replayed with the configuration it was recorded with, the history is decided the same, record
/// for record; with `stale_reconcile_secs` raised to a day, exactly the decision that judged
/// inventory's status stale is taken otherwise, and nothing else.
async fn replay_contract<L: IncidentLedger>(ledger: &L, label: &str) {
    let since = Utc::now() - TimeDelta::days(7);
    let same = medic::report::replay(ledger, since, &medic_core::DecisionPolicy::new(recording_config())).await.unwrap();
    assert_eq!((same.decisions, same.replayed, same.truncated, same.unreadable), (8, 8, 0, 0), "{label}: {same:?}");
    assert!(same.differences.is_empty(), "{label}: {:#?}", same.differences);
    let candidate = PolicyConfig { stale_reconcile_secs: 24 * 3600, ..recording_config() };
    let changed = medic::report::replay(ledger, since, &medic_core::DecisionPolicy::new(candidate)).await.unwrap();
    let differ: Vec<(String, String, String)> =
        changed.differences.iter().map(|d| (d.app.to_string(), d.recorded.failure_mode.clone(), d.replayed.failure_mode.clone())).collect();
    assert_eq!(differ.len(), 1, "{label}: {differ:?}");
    assert_eq!((differ[0].0.as_str(), differ[0].1.as_str()), ("argocd/inventory", "stale-reconcile"), "{label}: {differ:?}");
    assert_ne!(differ[0].2, "stale-reconcile", "{label}");
    let text = medic::report::replay_table(&changed);
    // docs/operations.md shows this as its example, but for the time the decision was taken.
    let docs = std::fs::read_to_string(crate::support::events_dir().join("../docs/operations.md")).unwrap();
    let example = docs
        .split("<!-- replay-example")
        .nth(1)
        .and_then(|rest| rest.split("```").nth(1))
        .expect("docs/operations.md has the replay example");
    let shown = changed.differences[0].decided_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let documented = example.lines().last().and_then(|l| l.split_whitespace().next()).unwrap_or_default();
    assert_eq!(example.trim_start_matches('\n'), text.replace(&shown, documented), "{label}: docs/operations.md's replay example");
    assert!(
        text.starts_with(
            "8 decisions read, 8 decided again, 0 cut to their size bound and 0 unreadable (not decided again); 1 decided otherwise"
        ),
        "{text}"
    );
    assert!(text.contains("argocd/inventory"), "{text}");
}

#[tokio::test]
async fn a_replay_reproduces_the_history_and_a_changed_threshold_changes_exactly_its_decisions() {
    let sqlite = Arc::new(SqliteIncidentStore::in_memory().unwrap());
    record_history(Arc::clone(&sqlite)).await;
    replay_contract(sqlite.as_ref(), "sqlite").await;
    let dynamodb = state_table("replay").await;
    record_history(dynamodb.clone()).await;
    replay_contract(&dynamodb, "dynamodb").await;
}

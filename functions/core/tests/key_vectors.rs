//! Golden vectors: every key Argo Medic derives, pinned byte for byte.
//!
//! Deployed versions have written these keys into DynamoDB, Argo CD's `operation.info`, SQS and
//! Slack's message metadata. A change to a derivation would orphan every record already written:
//! an open incident would start its ladder again, a sync already started would be started again,
//! a Slack parent would be posted twice. So a change here is never a refactoring; it needs a new
//! scheme (a new prefix or version string) that still reads the old one.

use chrono::{DateTime, TimeZone, Utc};
use medic_core::event::{AppRef, WorkItem, WorkItemKey, WorkKind};
use medic_core::keys::action_id;
use medic_core::ladder::HumanAction;
use medic_core::{IdempotencyKey, IncidentKey, NotificationEvent, Rung, Trigger};

fn began() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 1, 12, 0, 0).unwrap()
}

fn incident() -> IncidentKey {
    IncidentKey {
        instance: "prod".into(),
        app: medic_core::AppId::new("argocd", "payments"),
        revision: "34a1021526089c57744ab3e25ec2f81ca02d37c5".into(),
        began_at: Some(began()),
    }
}

#[test]
fn incident_ids_are_pinned() {
    assert_eq!(incident().id(), "inc-0b119947ea18bfc0d15d");
    assert_eq!(IncidentKey { began_at: None, ..incident() }.id(), "inc-e34f0d77b365c45b4163");
}

#[test]
fn idempotency_keys_are_pinned() {
    let keys: Vec<String> =
        [Rung::Refresh, Rung::HardRefresh, Rung::Sync, Rung::Escalate].into_iter().map(|r| incident().key_for(r).to_string()).collect();
    assert_eq!(
        keys,
        [
            "am1-646d72e8d8d026493073ed0ea818f2d9",
            "am1-c327a471f923282a2f619d6b814489be",
            "am1-cc0b610c1e4982573f7e48095f440bfb",
            "am1-a7b48a83e482a66926e76c5ce9a6d047"
        ]
    );
    assert_eq!(incident().key_for_attempt(Rung::Sync, 1), incident().key_for(Rung::Sync), "the first try keeps the original key");
    assert_eq!(incident().key_for_attempt(Rung::Sync, 2).as_str(), "am1-dc60d601854b77c5cc25222aeaccaed7");
    assert_eq!(IdempotencyKey::for_human_action("amact-0123456789abcdef0123456789abcdef").as_str(), "am1-2bab65e7cef58b9df709d298d05957fd");
}

#[test]
fn button_ids_are_pinned() {
    let id = incident().id();
    assert_eq!(action_id(&id, HumanAction::Sync, 0), "amact-5c880e8b4ca2835a91295771ad99ad75");
    assert_eq!(action_id(&id, HumanAction::Acknowledge, 3), "amact-333ff990dd2f4c7889bdf445861b62e0");
    use medic_core::keys::fleet_button_id;
    use medic_core::ladder::FleetControl;
    assert_eq!(
        fleet_button_id("repo:git.example.com", "2026-11-01T08:00:00Z", FleetControl::Pause),
        "amfleet-168f9bff0881655df1c42e153673de65"
    );
    assert_eq!(
        fleet_button_id("repo:git.example.com", "2026-11-01T08:00:00Z", FleetControl::Release),
        "amfleet-53bcc7be16185d088016419686e66972"
    );
}

#[test]
fn work_item_dedupe_keys_are_pinned() {
    let app = AppRef { name: "payments".into(), namespace: "argocd".into(), project: Some("payments".into()) };
    let key =
        |kind, trigger: &str, window: &str| WorkItem::for_app(kind, app.clone(), trigger.parse().unwrap(), window, began()).dedupe_key;
    assert_eq!(key(WorkKind::Sweep, "sweep", "2026-11-01T12:00:00+00:00"), "sw1-a0da5884c26ad252632740c3e1e1c625");
    assert_eq!(key(WorkKind::Recheck, "sweep", "recheck-1"), "rc1-4b92aa592fb81416ce212df8b1aa0d31");
    assert_eq!(key(WorkKind::Requested, "slack-action", "amact-1"), "rq1-0046657271f13a2bf93978564f89bb30");
    assert_eq!(key(WorkKind::Requested, "requested-refresh", "2026-11-01T12:00:00+00:00"), "rq1-6a1eec131bd94f17863f7ea9d81d773a");
}

#[test]
fn notification_dedupe_keys_are_pinned() {
    let dir = format!(
        "{}/../../events/webhook/",
        std::path::Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test")).display()
    );
    let key = |file: &str| NotificationEvent::parse(&std::fs::read(format!("{dir}{file}")).unwrap()).unwrap().dedupe_key();
    assert_eq!(key("hook-failed.json"), "ev1-8bdb6c078c9510343567df7a20a26669");
    assert_eq!(key("healthy.json"), "ev1-9cb200f6f54cf81b11925b3494cee876");
}

#[test]
fn work_item_signatures_are_pinned() {
    let key = WorkItemKey::new("a-fixed-test-key-of-at-least-thirty-two-bytes").unwrap();
    let app = AppRef { name: "payments".into(), namespace: "argocd".into(), project: Some("payments".into()) };
    let mut item = WorkItem::for_app(WorkKind::Requested, app, "slack-action".parse::<Trigger>().unwrap(), "amact-1", began());
    item.requested_action = Some("amact-0123".into());
    item.requested_by = Some("slack:U0ALICE001".into());
    key.sign(&mut item);
    assert_eq!(item.signature.as_deref(), Some("baaa82972d242bec8fffa8b89dc7f29c8870c6484d0162049e5e2d405b090f97"));
    assert!(key.verifies(&item));
}

#[test]
fn state_table_markers_are_pinned() {
    use medic_core::keys::{fleet_control_marker, fleet_hold_marker, missed_marker, notified_marker};
    let app = medic_core::AppId::new("argocd", "payments");
    assert_eq!(notified_marker(&app, began()), "notified-argocd/payments-2026110112");
    assert_eq!(missed_marker(&app, began()), "missed-argocd/payments-20261101");
    assert_eq!(fleet_hold_marker("repo:git.example.com"), "fleet-hold-repo:git.example.com");
    assert_eq!(medic_core::keys::fleet_recovering_marker("repo:git.example.com"), "fleet-recovering-repo:git.example.com");
    use medic_core::ladder::FleetControl;
    const SINCE: &str = "2026-11-01T12:04:00Z";
    assert_eq!(
        fleet_control_marker("cluster:https://10.0.0.1", SINCE, FleetControl::Pause),
        "fleet-pause-cluster:https://10.0.0.1-2026-11-01T12:04:00Z"
    );
    assert_eq!(fleet_control_marker("instance", SINCE, FleetControl::Release), "fleet-release-instance-2026-11-01T12:04:00Z");
    use medic_core::keys::{fleet_relapse_marker, fleet_released_marker, fleet_sighting_marker, legacy_fleet_markers, wave_outcome_marker};
    use medic_core::ladder::{WaveOutcome, WaveSlot};
    assert_eq!(fleet_relapse_marker("repo:git.example.com", SINCE), "fleet-relapse-repo:git.example.com-2026-11-01T12:04:00Z");
    assert_eq!(fleet_released_marker("repo:git.example.com", SINCE), "fleet-released-repo:git.example.com-2026-11-01T12:04:00Z");
    assert_eq!(fleet_sighting_marker("repo:git.example.com"), "fleet-seen-repo:git.example.com");
    // What the release before outage identities wrote, still read mid-outage.
    assert_eq!(
        legacy_fleet_markers("repo:git.example.com"),
        ["fleet-pause-repo:git.example.com", "fleet-release-repo:git.example.com", "fleet-relapse-repo:git.example.com"]
    );
    let slot =
        WaveSlot { scope: "repo:git.example.com".into(), since: SINCE.into(), wave: "2026-11-01T12:00:00+00:00".into(), index: 7, len: 37 };
    assert_eq!(wave_outcome_marker(&slot, 3, WaveOutcome::Failed), "fleet-wave-repo:git.example.com-2026-11-01T12:00:00+00:00-3-failed");
    assert_eq!(wave_outcome_marker(&slot, 19, WaveOutcome::Healed), "fleet-wave-repo:git.example.com-2026-11-01T12:00:00+00:00-19-healed");
}

/// The keys and markers that lived beside their users before they moved to keys.rs (slack-actions'
/// click key, the sweeper's enqueued marker, the worker's recheck key, the alerts' markers): the
/// same bytes as the release that wrote them.
#[test]
fn the_keys_moved_into_keys_rs_keep_their_bytes() {
    use medic_core::keys::{
        click_work_key, daily_alert_marker, hourly_alert_marker, outage_overdue_marker, recheck_dedupe_key, sweep_enqueued_marker,
    };
    assert_eq!(click_work_key("amact-1"), "sa1-bbf038ebcb10c157b1101674543aadfb");
    assert_eq!(recheck_dedupe_key("w1-0123", 3), "w1-0123#3");
    assert_eq!(sweep_enqueued_marker("w1-0123"), "enqueued-w1-0123");
    // The deployed slack-actions claimed a button under this key before keys.rs made it.
    assert_eq!(medic_core::keys::click_claim_marker("amact-1"), "slack-action-amact-1");
    assert_eq!(medic_core::keys::delivery_marker("ev1-0123"), "ev1-0123", "a delivery's lease is its item's own key");
    let t = Utc.with_ymd_and_hms(2026, 11, 30, 23, 59, 59).unwrap();
    assert_eq!(hourly_alert_marker("switch", t), "alert-switch-2026113023");
    assert_ne!(hourly_alert_marker("switch", t), hourly_alert_marker("switch", t + chrono::Duration::seconds(1)));
    assert_eq!(daily_alert_marker("token-expiring", t), "alert-token-expiring-20261130");
    assert_eq!(
        outage_overdue_marker("repo:git.example.com", Some(t)),
        format!("alert-outage-overdue-repo:git.example.com-{}", t.timestamp())
    );
    assert_eq!(outage_overdue_marker("instance", None), "alert-outage-overdue-instance-0");
    // The Slack records' group id (records.rs, computed from the old function's scheme).
    let at = Utc.timestamp_micros(1_793_536_200_000_000).unwrap();
    assert_eq!(medic_core::keys::group_id("prod", "hook-failed", at), "flt-0484778bfe61c1907243");
}

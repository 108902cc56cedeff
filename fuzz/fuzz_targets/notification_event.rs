//! The notification event as ingest receives it (webhook body) and the queue carries it.
//!
//! Besides "no panic, no hang, no unbounded allocation": an accepted event must survive the trip
//! ingest sends it on (into a work item, serialised, parsed by the worker) unchanged, or the
//! worker would drop as poison what ingest answered 202 for.
#![no_main]

use chrono::{DateTime, Utc};
use libfuzzer_sys::fuzz_target;
use medic_core::event::{NotificationEvent, WorkItem};

fuzz_target!(|data: &[u8]| {
    let Ok(event) = NotificationEvent::parse(data) else { return };
    let key = event.dedupe_key();
    assert!(key.starts_with("ev1-") && key.len() <= 128, "{key}");
    let _ = event.app_id();

    let now: DateTime<Utc> = DateTime::from_timestamp(1_793_536_200, 0).expect("a valid instant");
    let item = event.clone().into_work(now);
    let body = serde_json::to_vec(&item).expect("a work item serialises");
    let back = WorkItem::parse(&body, now).unwrap_or_else(|e| panic!("the worker refuses what ingest accepted: {e}"));
    assert_eq!(back, item, "the work item changed on the queue");

    // A bare event on the queue (the `awssqs` service) is read the same way.
    let bare = serde_json::to_vec(&event).expect("an event serialises");
    let from_sqs = WorkItem::parse(&bare, now).unwrap_or_else(|e| panic!("a bare event does not re-parse: {e}"));
    assert_eq!(from_sqs.dedupe_key, key);
});

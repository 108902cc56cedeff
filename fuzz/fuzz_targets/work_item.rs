//! The worker's SQS message body: a work item or a bare notification event, and the signature
//! check of `requested` items (`WorkItemKey`, HMAC-SHA256 over the item's fields).
//!
//! Properties: no panic, no hang, no unbounded allocation; an unsigned or forged item never
//! verifies; signing an accepted item makes it verify, also after the queue round trip; the
//! idempotency keys the worker reads back parse only in their one shape.
#![no_main]

use chrono::{DateTime, Utc};
use libfuzzer_sys::fuzz_target;
use medic_core::IdempotencyKey;
use medic_core::event::{WorkItem, WorkItemKey};

const KEY: &str = "a-work-item-key-of-at-least-32-bytes-for-fuzzing";

fuzz_target!(|data: &[u8]| {
    // Keys read back from storage or Argo CD's `operation.info` are arbitrary text.
    if let Ok(s) = std::str::from_utf8(data) {
        if let Some(k) = IdempotencyKey::parse(s) {
            assert_eq!(k.as_str(), s);
            assert!(s.len() == 36 && s.starts_with("am1-"));
        }
    }

    let now: DateTime<Utc> = DateTime::from_timestamp(1_793_536_200, 0).expect("a valid instant");
    let Ok(item) = WorkItem::parse(data, now) else { return };
    let key = WorkItemKey::new(KEY).expect("long enough");
    // A signature the fuzzer wrote is a forgery: 2^-256 odds of hitting the right one.
    assert!(!key.verifies(&item), "a forged signature verifies");

    let mut signed = item.clone();
    key.sign(&mut signed);
    assert!(key.verifies(&signed), "a freshly signed item does not verify");
    let body = serde_json::to_vec(&signed).expect("a work item serialises");
    let back = WorkItem::parse(&body, now).unwrap_or_else(|e| panic!("a signed item does not re-parse: {e}"));
    assert!(key.verifies(&back), "the signature does not survive the queue");
    assert_eq!(back, signed);
});

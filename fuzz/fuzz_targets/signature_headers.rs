//! The secrets and signature headers of the two front doors, with the fuzzer writing the header
//! values, the secret documents and the bodies:
//! - ingest: `Authorization: Bearer <secret>` (`WebhookSecrets::matches`) and the refresh
//!   endpoint's `X-Argo-Medic-Signature: sha256=<hex>` (`WebhookSecrets::verify_hmac`), and the
//!   secret document itself (`WebhookSecrets::from_json`);
//! - slack-actions: Slack's v0 signature (`SigningSecret::verify` over timestamp and body), the
//!   signing secret document and the allow-list (`SLACK_ALLOWED_USERS`);
//! - the opaque ids read back from the outside: button ids and idempotency keys.
//!
//! Input: `secret document \0 header value \0 timestamp \0 body` (missing parts are empty).
//! Properties: no panic; the bearer check accepts exactly the current and previous secret; a
//! signature verifies only when it is the HMAC the sender computes (hex in either case), and the
//! one each side produces itself always verifies.
#![no_main]

use libfuzzer_sys::fuzz_target;
use medic_core::IdempotencyKey;
use medic_core::event::WorkItemKey;
use medic_ingest::WebhookSecrets;
use medic_slack_actions::{AllowList, SigningSecret};

const CURRENT: &str = "a-fixed-shared-secret-for-fuzzing-0123";
const PREVIOUS: &str = "the-previous-shared-secret-for-fuzzing";

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(4, |b| *b == 0);
    let doc = parts.next().unwrap_or_default();
    let header = parts.next().unwrap_or_default();
    let timestamp = parts.next().unwrap_or_default();
    let body = parts.next().unwrap_or_default();
    let doc = String::from_utf8_lossy(doc);
    let header_text = String::from_utf8_lossy(header);
    let timestamp = String::from_utf8_lossy(timestamp);

    // Ingest: the bearer check compares the raw header bytes.
    let secrets = WebhookSecrets::new(CURRENT, Some(PREVIOUS.to_owned()));
    let expected = header == CURRENT.as_bytes() || header == PREVIOUS.as_bytes();
    assert_eq!(secrets.matches(header), expected, "the bearer check");
    // The refresh signature (after `sha256=`, as ingest strips it).
    let hex = header_text.strip_prefix("sha256=").unwrap_or("");
    let good = secrets.sign(body);
    let good_hex = good.strip_prefix("sha256=").expect("sign writes sha256=");
    assert!(secrets.verify_hmac(body, good_hex), "ingest's own signature does not verify");
    let previous_hex = WebhookSecrets::new(PREVIOUS, None).sign(body);
    let previous_hex = previous_hex.strip_prefix("sha256=").expect("sign writes sha256=");
    if secrets.verify_hmac(body, hex) {
        let hex = hex.trim().to_ascii_lowercase();
        assert!(hex == good_hex || hex == previous_hex, "a forged refresh signature verifies: {hex}");
    }
    if let Ok(parsed) = WebhookSecrets::from_json(&doc) {
        let _ = parsed.matches(header);
        let _ = parsed.verify_hmac(body, hex);
        assert!(parsed.verify_hmac(body, parsed.sign(body).trim_start_matches("sha256=")));
    }

    // Slack: v0 signature over `v0:<timestamp>:<body>`.
    let slack = SigningSecret::new(CURRENT, Some(PREVIOUS.to_owned()));
    let good = slack.sign(&timestamp, body);
    assert!(slack.verify(&timestamp, body, &good), "Slack's own signature does not verify");
    let previous = SigningSecret::new(PREVIOUS, None).sign(&timestamp, body);
    if slack.verify(&timestamp, body, &header_text) {
        let presented = header_text.trim().to_ascii_lowercase();
        assert!(presented == good || presented == previous, "a forged Slack signature verifies: {presented}");
    }
    if let Ok(parsed) = SigningSecret::from_secret(&doc) {
        let _ = parsed.verify(&timestamp, body, &header_text);
    }
    if let Ok(allow) = AllowList::from_json(&doc) {
        let _ = allow.allows(&header_text, &timestamp);
    }

    // Opaque ids that come back from Slack, Argo CD and the store.
    if medic_core::keys::is_action_id(&header_text) {
        assert_eq!(header_text.len(), medic_core::keys::ACTION_ID_PREFIX.len() + 32);
        let _ = medic_core::human_action::human_action_key(&header_text);
    }
    if let Some(k) = IdempotencyKey::parse(&header_text) {
        assert_eq!(k.as_str(), header_text);
    }
    if let Some(key) = WorkItemKey::new(&doc) {
        assert!(doc.trim().len() >= WorkItemKey::MIN_LEN);
        let _ = format!("{key:?}");
    }
});

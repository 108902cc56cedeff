//! Slack escalation: [`SlackEscalator`] implements the core's escalation ports (`IncidentChannel`,
//! `OutageBoard`, `HumanActions`) with the Slack Web API (a bot token, `chat.postMessage`, `chat.update`,
//! threads), and [`SlackClient`] is the minimal Web API client it uses. The messages are rendered
//! by [`blocks`].
//!
//! # One parent per incident, whatever crashes
//!
//! `chat.postMessage` has no idempotency key, so every message is posted through
//! [`SlackEscalator::post_once`], keyed by what the message is (`inc:<incident id>`,
//! `fm:<group id>:<incident id>`, `res:<incident id>`, ...):
//!
//! 1. a record of the intent is written first (`EscalationStore`, compare-and-set), holding a lease
//!    (`lease`, longer than a post can take);
//! 2. the message is posted with Slack message metadata carrying the key
//!    (`event_type` [`METADATA_EVENT_TYPE`], `event_payload.key`);
//! 3. its `ts` is recorded.
//!
//! A retry that finds a recorded `ts` posts nothing. One that finds an intent without a `ts`
//! (the earlier attempt crashed, or lost the answer) waits out the lease and then looks for the
//! message in the channel (`conversations.history`, or `conversations.replies` for a thread reply,
//! with `include_all_metadata`, from shortly before the first intent) and adopts it when found;
//! only when nothing carries the key does it post. A live lease held by another worker makes the
//! caller wait briefly and then fail (the queue retries it), never post.
//!
//! # Threads, states, groups
//!
//! The parent is updated in place (`chat.update`) as the incident moves (needs a human →
//! investigating when acknowledged → remediating when a person's action is under way → resolved),
//! and each step is a thread reply. When `group_threshold` incidents of one failure mode arrive
//! within `group_window` of each other, they become one incident group: the first one's parent is
//! rewritten into the group parent, the others (up to the threshold) are folded into a one-line
//! pointer, and every app gets one reply with its facts and buttons in the group thread. With the
//! default threshold of 2, an outage of hundreds of apps posts exactly one parent.
//!
//! # Rate limits
//!
//! Posts and updates to one channel are paced `post_interval` apart (Slack allows about one
//! message per second per channel), and an HTTP 429 is honoured: the client sleeps `Retry-After`
//! (when it is at most `max_retry_wait`) and tries again; a longer one fails the call, which the
//! queue retries later. A 429 means nothing was posted, so retrying it cannot duplicate.
//!
//! # Records (`EscalationStore`)
//!
//! | group | id | what |
//! | --- | --- | --- |
//! | `msg` | message key | channel, thread, `ts` once posted, lease, first intent |
//! | `app#<namespace/name>` | incident id | the incident's facts, state, button generation, where it is shown, reported actions |
//! | `action` | button id | the [`HumanActionRequest`] behind a button (kept while its incident is open, then `action_ttl`) |
//! | `fleetwin` | failure mode | the open group window: group id, members in arrival order, last arrival |
//! | `fleet` | group id | the incident group: its apps, which recovered, whether its parent is set up |
//! | `snooze` | `namespace/name` | until when new incidents of the app are not posted, and who asked |
//!
//! `fleetwin` and `fleet` (and the group parent's message key `fleet:<group id>`) are the names the
//! deployed release stores: incident groups were called fleets then. They stay, so its records
//! still read; everywhere else "fleet" means a shared-cause outage only.
//!
//! An open incident's records (its `app#` record, its messages, its group's) are kept until it
//! resolves, however long that takes: losing them would post a second parent. Resolving gives
//! them `record_ttl` (30 days) from then on. Buttons, the incidents' and the outages' (`fleetbtn`),
//! are kept as long as their incident or outage and `action_ttl` (14 days) once it is over;
//! snoozes keep their own end, group windows `record_ttl`.

pub mod blocks;
pub mod interaction;

mod any;
mod client;
mod escalator;
mod group;
mod records;
mod store;

pub use any::AnyEscalator;
pub use client::{DEFAULT_API_URL, HistoryMessage, SlackClient, SlackError, SlackSettings};
pub use escalator::SlackEscalator;
pub use records::{GroupView, SlackIncidentView, incident_view, load_action, load_fleet_button};
pub use store::{DynamoDbEscalationStore, MemoryEscalationStore};

#[cfg(test)]
mod tests {
    use medic_adapters::settings::{SLACK_API_URL, SLACK_POST_INTERVAL_MS, VarDefault};

    /// The settings declare the client's own defaults (they were checked beside the settings
    /// before the client left the adapters).
    #[test]
    fn the_client_s_defaults_are_the_declared_ones() {
        assert_eq!(SLACK_API_URL.default, VarDefault::Value(super::DEFAULT_API_URL));
        let post_interval = super::SlackSettings::new("C1", "i").post_interval.as_millis().to_string();
        assert!(matches!(SLACK_POST_INTERVAL_MS.default, VarDefault::Value(v) if v == post_interval), "{post_interval}");
    }
}

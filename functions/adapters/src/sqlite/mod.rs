//! The embedded state `medic` runs on (feature `sqlite`): incidents, idempotency records, the
//! Slack escalator's records, dedupe markers and `medic serve`'s work queue, all in one SQLite
//! file, with the contracts of their DynamoDB and SQS counterparts (`tests/contracts.rs`). The
//! functions on Lambda never build it.

pub mod dedupe;
pub mod queue;
pub mod store;

//! [`SqsWorkQueue`]: the work-queue port on an SQS standard queue.
//!
//! Each message body is one [`WorkItem`] as JSON (schema version 1, what `WorkItem::parse`
//! reads). A delay becomes the message's `DelaySeconds`; SQS allows at most 15 minutes, so a longer
//! wait is an error and the caller chains it (enqueue for 900 s, then look again and re-enqueue).
//! Redelivery and the dead-letter queue are the queue's own settings (its `RedrivePolicy`).

use std::time::Duration;

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use medic_core::event::WorkItem;
use medic_core::ports::{QueueError, WorkQueue};

use crate::aws::describe;

/// The longest `DelaySeconds` SQS accepts.
pub const MAX_DELAY: Duration = Duration::from_secs(900);

/// Most entries in one `SendMessageBatch` call.
pub const MAX_BATCH_ENTRIES: usize = 10;

/// Most bytes of message bodies in one `SendMessageBatch` call (SQS's classic 256 KiB limit on
/// the whole batch's payload; kept even where a queue allows more).
pub const MAX_BATCH_BYTES: usize = 256 * 1024;

/// An SQS queue carrying work items to the worker.
#[derive(Debug, Clone)]
pub struct SqsWorkQueue {
    client: Client,
    queue_url: String,
}

/// One item of a batch that was not enqueued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchFailure {
    /// Its index in the slice given to [`SqsWorkQueue::send_batch`].
    pub index: usize,
    /// `namespace/name` of its app.
    pub app: String,
    pub dedupe_key: String,
    /// SQS's error code and message, or why the call failed.
    pub reason: String,
}

impl std::fmt::Display for BatchFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "item {} ({}, dedupe key {}): {}", self.index, self.app, self.dedupe_key, self.reason)
    }
}

impl SqsWorkQueue {
    pub fn new(client: Client, queue_url: impl Into<String>) -> Self {
        Self { client, queue_url: queue_url.into() }
    }

    pub fn queue_url(&self) -> &str {
        &self.queue_url
    }

    /// Enqueues many items without delay, in `SendMessageBatch` calls of at most ten entries.
    /// Every chunk is tried even when an earlier one fails; the error names each item that was not
    /// enqueued (all others were).
    pub async fn send_batch(&self, items: &[WorkItem]) -> Result<(), QueueError> {
        let failures = self.send_batch_failures(items).await;
        if failures.is_empty() {
            return Ok(());
        }
        let list: Vec<String> = failures.iter().map(ToString::to_string).collect();
        Err(QueueError::unavailable(format!("{} of {} items not enqueued: {}", failures.len(), items.len(), list.join("; "))))
    }

    /// As [`send_batch`](Self::send_batch), returning the items that were not enqueued, so a
    /// caller can retry exactly those.
    pub async fn send_batch_failures(&self, items: &[WorkItem]) -> Vec<BatchFailure> {
        let mut failures = Vec::new();
        let mut bodies = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            match serde_json::to_string(item) {
                Ok(body) => bodies.push((index, body)),
                Err(e) => failures.push(failure(items, index, format!("serialising the work item: {e}"))),
            }
        }
        for chunk in chunks(&bodies) {
            self.send_chunk(items, chunk, &mut failures).await;
        }
        failures.sort_by_key(|f| f.index);
        failures.dedup_by_key(|f| f.index);
        failures
    }

    async fn send_chunk(&self, items: &[WorkItem], chunk: &[(usize, String)], failures: &mut Vec<BatchFailure>) {
        let mut entries = Vec::with_capacity(chunk.len());
        for (index, body) in chunk {
            // Entry ids only need to be unique within the call; the item's index is.
            match SendMessageBatchRequestEntry::builder().id(index.to_string()).message_body(body).build() {
                Ok(entry) => entries.push(entry),
                Err(e) => failures.push(failure(items, *index, format!("building the batch entry: {e}"))),
            }
        }
        if entries.is_empty() {
            return;
        }
        let sent: Vec<usize> = entries.iter().filter_map(|e| e.id().parse().ok()).collect();
        match self.client.send_message_batch().queue_url(&self.queue_url).set_entries(Some(entries)).send().await {
            Ok(out) => {
                for failed in out.failed() {
                    let reason = match failed.message() {
                        Some(m) => format!("{}: {m}", failed.code()),
                        None => failed.code().to_owned(),
                    };
                    match failed.id().parse::<usize>() {
                        Ok(index) if sent.contains(&index) => failures.push(failure(items, index, reason)),
                        // An id we did not send: cannot tell which item, so say so for the chunk.
                        _ => failures.extend(
                            sent.iter().map(|&i| failure(items, i, format!("unrecognised failed entry {}: {reason}", failed.id()))),
                        ),
                    }
                }
            }
            Err(e) => {
                let reason = describe("SendMessageBatch", &e);
                failures.extend(sent.iter().map(|&i| failure(items, i, reason.clone())));
            }
        }
    }
}

fn failure(items: &[WorkItem], index: usize, reason: String) -> BatchFailure {
    let item = &items[index];
    BatchFailure { index, app: item.app.id().to_string(), dedupe_key: item.dedupe_key.clone(), reason }
}

/// Splits bodies into batches of at most [`MAX_BATCH_ENTRIES`] entries and [`MAX_BATCH_BYTES`]
/// bytes (a single larger body goes alone, and SQS judges it).
fn chunks(bodies: &[(usize, String)]) -> Vec<&[(usize, String)]> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, (_, body)) in bodies.iter().enumerate() {
        let full = i - start == MAX_BATCH_ENTRIES || (i > start && bytes + body.len() > MAX_BATCH_BYTES);
        if full {
            out.push(&bodies[start..i]);
            start = i;
            bytes = 0;
        }
        bytes += body.len();
    }
    if start < bodies.len() {
        out.push(&bodies[start..]);
    }
    out
}

/// `DelaySeconds` for a delay: whole seconds, rounded up so an item is never delivered early, at
/// most 900. A delay beyond 900 s is an error: SQS cannot hold it, the caller must chain it.
pub fn delay_seconds(delay: Duration) -> Result<i32, QueueError> {
    if delay > MAX_DELAY {
        return Err(QueueError::invalid(format!(
            "a delay of {}s is longer than SQS allows ({}s): enqueue for at most {}s and re-enqueue then",
            delay.as_secs(),
            MAX_DELAY.as_secs(),
            MAX_DELAY.as_secs()
        )));
    }
    let secs = delay.as_secs() + u64::from(delay.subsec_nanos() > 0);
    Ok(i32::try_from(secs.min(MAX_DELAY.as_secs())).unwrap_or(900))
}

impl WorkQueue for SqsWorkQueue {
    async fn enqueue(&self, item: &WorkItem, delay: Duration) -> Result<(), QueueError> {
        let delay = delay_seconds(delay)?;
        let body = serde_json::to_string(item).map_err(|e| QueueError::invalid(format!("serialising the work item: {e}")))?;
        self.client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body)
            .delay_seconds(delay)
            .send()
            .await
            .map_err(|e| crate::aws::port_error("SendMessage", e))?;
        Ok(())
    }

    /// `SendMessageBatch` in chunks of ten: a sweep of thousands of apps is hundreds of calls.
    async fn enqueue_batch(&self, items: &[WorkItem]) -> Result<(), QueueError> {
        self.send_batch(items).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_round_up_to_whole_seconds_and_stop_at_fifteen_minutes() {
        assert_eq!(delay_seconds(Duration::ZERO).unwrap(), 0);
        assert_eq!(delay_seconds(Duration::from_millis(1)).unwrap(), 1);
        assert_eq!(delay_seconds(Duration::from_millis(899_500)).unwrap(), 900);
        assert_eq!(delay_seconds(MAX_DELAY).unwrap(), 900);
        let err = delay_seconds(Duration::from_secs(901)).unwrap_err();
        assert!(err.what().contains("901s") && err.what().contains("900s"), "{err}");
    }

    #[test]
    fn batches_hold_at_most_ten_entries_and_256_kib() {
        let small: Vec<(usize, String)> = (0..25).map(|i| (i, "x".repeat(10))).collect();
        let sizes: Vec<usize> = chunks(&small).iter().map(|c| c.len()).collect();
        assert_eq!(sizes, vec![10, 10, 5]);
        let big: Vec<(usize, String)> = (0..5).map(|i| (i, "x".repeat(100 * 1024))).collect();
        let sizes: Vec<usize> = chunks(&big).iter().map(|c| c.len()).collect();
        assert_eq!(sizes, vec![2, 2, 1]);
        assert!(chunks(&[]).is_empty());
    }
}

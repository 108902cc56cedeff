//! The worker function: consumes SQS batches of work items. Each message is one delivery of a
//! work item, handled by the application ([`medic_service::work`]); the response lists exactly
//! the messages that failed. A poison message is reported as failed, so SQS moves it to the DLQ
//! after `maxReceiveCount`; it never blocks the rest of the batch.

use std::ops::{Deref, DerefMut};

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use futures::future::join_all;
use medic_core::ports::Telemetry;
use medic_service::Ports;
pub use medic_service::work::{
    DEFAULT_TIMEOUT, Delivery, Handled, MessageError, NOTIFIED_MEMORY, VersionProbe, Work, WorkerConfig, WorkerPolicy,
};

/// The worker's handler: SQS records in, partial batch failures out, over one [`Work`].
pub struct Worker<P: Ports> {
    pub work: Work<P>,
}

impl<P: Ports> From<Work<P>> for Worker<P> {
    fn from(work: Work<P>) -> Self {
        Self { work }
    }
}

/// The handler is its work plus the queue's plumbing: its collaborators are the work's.
impl<P: Ports> Deref for Worker<P> {
    type Target = Work<P>;
    fn deref(&self) -> &Work<P> {
        &self.work
    }
}

impl<P: Ports> DerefMut for Worker<P> {
    fn deref_mut(&mut self) -> &mut Work<P> {
        &mut self.work
    }
}

/// A record without a message id cannot be reported as a partial failure; the whole invocation
/// fails so SQS retries the batch rather than losing the message.
#[derive(Debug, thiserror::Error)]
#[error("an SQS record without a messageId cannot be reported; failing the batch")]
pub struct UnidentifiableRecord;

impl<P: Ports> Worker<P> {
    /// Handles one SQS batch; the response lists exactly the messages that failed.
    pub async fn handle_batch(&self, event: SqsEvent) -> Result<SqsBatchResponse, UnidentifiableRecord> {
        if event.records.iter().any(|r| r.message_id.as_deref().is_none_or(str::is_empty)) {
            return Err(UnidentifiableRecord);
        }
        let results = join_all(event.records.iter().map(|r| self.handle_message(r))).await;
        self.work.after_batch().await;
        let mut response = SqsBatchResponse::default();
        for (record, result) in event.records.iter().zip(results) {
            if let Err(e) = result {
                let id = record.message_id.clone().unwrap_or_default();
                let receives = record.attributes.get("ApproximateReceiveCount").cloned().unwrap_or_default();
                match &e {
                    MessageError::Poison(_) => {
                        self.work.metrics.count("PoisonMessages", None, 1.0);
                        tracing::error!(message_id = %id, receives = %receives, error = %e, "poison message; it goes to the DLQ after maxReceiveCount");
                    }
                    // A failure that will come back as it is (a record that does not parse) is
                    // retried all the same, to the DLQ: said so, so it is not mistaken for a blip.
                    MessageError::Retry { retryable, .. } => {
                        tracing::warn!(message_id = %id, receives = %receives, error = %e, retryable, "message will be retried")
                    }
                }
                response.add_failure(id);
            }
        }
        Ok(response)
    }

    /// Handles one message: one delivery of its work item.
    pub async fn handle_message(&self, record: &SqsMessage) -> Result<Handled, MessageError> {
        let delivery = Delivery {
            message_id: record.message_id.as_deref().unwrap_or_default(),
            receives: record.attributes.get("ApproximateReceiveCount").map_or("", String::as_str),
            body: record.body.as_deref().unwrap_or_default().as_bytes(),
        };
        self.work.handle(delivery).await
    }
}

/// The worker as the Lambda runs it.
pub type LambdaWorker = Worker<medic_stack::lambda::LambdaPorts>;

impl LambdaWorker {
    /// Builds the worker from the function's settings (what `main` runs; tests build it the same way).
    pub async fn from_env(env: &medic_adapters::lambda_env::LambdaEnv) -> Result<Self, medic_adapters::lambda_env::EnvError> {
        Ok(Worker::from(medic_stack::lambda::work(env).await?))
    }
}

//! The AWS side of a test stack, built once for every test that needs it: a work queue with its
//! dead-letter queue and a state table in moto_server, and the worker wired to them as the tests
//! run it (the production handler; budgets generous, claims not held, requests signed). The
//! pipeline tests and the Slack tests add their own parts around it.

use std::time::Duration;

use aws_sdk_sqs::types::QueueAttributeName;
use medic_adapters::argocd::HttpArgoClient;
use medic_adapters::budget::LocalBudget;
use medic_adapters::dynamodb::{DynamoDbStore, create_table};
use medic_adapters::memory::SystemClock;
use medic_adapters::sqs::SqsWorkQueue;
use medic_adapters::telemetry::Metrics;
use medic_core::ports::{Escalator, IncidentStore};
use medic_core::switch::Switch;
use medic_core::{DecisionPolicy, PolicyConfig};
use medic_sim::ArgoSim;
use medic_sim::moto::{moto, unique};
use medic_slack::DynamoDbEscalationStore;
use medic_worker::{Worker, WorkerConfig};

/// The adapters of the tests' workers: the stack's queue and table, an incident store `S`, an
/// escalator `E` and a switch `W` of each test's choosing.
pub type TestPorts<S, E, W> =
    medic_stack::adapters::Adapters<HttpArgoClient, S, DynamoDbStore, DynamoDbStore, SqsWorkQueue, E, LocalBudget, SystemClock, W, Metrics>;

/// The worker as the tests build it, over the stack's queue and table.
pub type TestWorker<S, E, W> = Worker<TestPorts<S, E, W>>;

/// A work queue, its dead-letter queue and a state table, all in moto.
pub struct AwsStack {
    pub sqs: aws_sdk_sqs::Client,
    pub queue_url: String,
    pub dlq_url: String,
    pub ddb: aws_sdk_dynamodb::Client,
    pub table: String,
}

/// The policy the test workers decide with: instance `test`, no settling time.
pub fn test_policy() -> DecisionPolicy {
    DecisionPolicy::new(PolicyConfig { instance_id: "test".into(), settle_secs: 0, ..PolicyConfig::default() })
}

impl AwsStack {
    /// Messages become visible again `visibility_secs` after a receive and move to the DLQ after
    /// `max_receive` receives.
    pub async fn new(name: &str, visibility_secs: u32, max_receive: u32) -> Self {
        let sdk = medic_adapters::aws::sdk_config(Some(&moto().url)).await;
        let sqs = aws_sdk_sqs::Client::new(&sdk);
        let ddb = aws_sdk_dynamodb::Client::new(&sdk);
        let dlq_url = sqs.create_queue().queue_name(unique(&format!("{name}-dlq"))).send().await.unwrap().queue_url.unwrap();
        let dlq_arn = sqs
            .get_queue_attributes()
            .queue_url(&dlq_url)
            .attribute_names(QueueAttributeName::QueueArn)
            .send()
            .await
            .unwrap()
            .attributes
            .unwrap()[&QueueAttributeName::QueueArn]
            .clone();
        let queue_url = sqs
            .create_queue()
            .queue_name(unique(name))
            .attributes(QueueAttributeName::VisibilityTimeout, visibility_secs.to_string())
            .attributes(
                QueueAttributeName::RedrivePolicy,
                format!(r#"{{"deadLetterTargetArn":"{dlq_arn}","maxReceiveCount":"{max_receive}"}}"#),
            )
            .send()
            .await
            .unwrap()
            .queue_url
            .unwrap();
        let table = unique(&format!("{name}-state"));
        create_table(&ddb, &table).await.unwrap();
        Self { sqs, queue_url, dlq_url, ddb, table }
    }

    pub fn queue(&self) -> SqsWorkQueue {
        SqsWorkQueue::new(self.sqs.clone(), self.queue_url.clone())
    }

    pub fn store(&self) -> DynamoDbStore {
        DynamoDbStore::new(self.ddb.clone(), self.table.clone(), "test")
    }

    pub fn escalations(&self) -> DynamoDbEscalationStore {
        DynamoDbEscalationStore::new(self.ddb.clone(), self.table.clone(), "test")
    }

    /// The Lambda's adapters over this stack's table and queue, reading `sim`, with generous
    /// budgets.
    pub fn on_table(&self, sim: &ArgoSim) -> medic_stack::lambda::OnTable<HttpArgoClient> {
        medic_stack::lambda::on_table(super::client(sim), self.store(), self.queue()).with_budget(super::generous_budget())
    }

    /// The worker over this stack: `store` for incidents, the table for dedupe and locks.
    pub fn worker_with<S: IncidentStore, E: Escalator, W: Switch>(
        &self,
        sim: &ArgoSim,
        store: S,
        escalator: E,
        switch: W,
    ) -> TestWorker<S, E, W> {
        let config = WorkerConfig {
            claim_timeout: Duration::ZERO,
            busy_delay: Duration::from_secs(1),
            work_item_key: Some(super::work_item_key()),
            ..WorkerConfig::default()
        };
        let adapters = self.on_table(sim).with_store(store).with_escalator(escalator).with_switch(switch);
        Worker::from(adapters.work(config, test_policy().into()))
    }

    /// Receives what is visible now on the work queue, as Lambda's event source mapping would.
    pub async fn receive(&self) -> Vec<aws_sdk_sqs::types::Message> {
        super::receive(&self.sqs, &self.queue_url).await
    }

    /// Deletes a handled message, as the event source mapping does after the handler returns.
    pub async fn delete(&self, m: &aws_sdk_sqs::types::Message) {
        self.sqs.delete_message().queue_url(&self.queue_url).receipt_handle(m.receipt_handle.clone().unwrap()).send().await.unwrap();
    }

    /// Messages on `url`: (visible, in flight, delayed).
    pub async fn depth(&self, url: &str) -> (usize, usize, usize) {
        let attrs = self
            .sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::All)
            .send()
            .await
            .unwrap()
            .attributes
            .unwrap_or_default();
        let n = |a: QueueAttributeName| attrs.get(&a).and_then(|v| v.parse().ok()).unwrap_or(0);
        (
            n(QueueAttributeName::ApproximateNumberOfMessages),
            n(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
            n(QueueAttributeName::ApproximateNumberOfMessagesDelayed),
        )
    }
}

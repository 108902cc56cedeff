//! The Slack test stack: the sample fixtures, the Slack and Argo CD simulators, a work queue and
//! state table in moto, the worker with the Slack escalator and the slack-actions handler, and a
//! signed button click as Slack sends it. Used by `tests/slack.rs`, `tests/iam.rs` and
//! `tests/serve.rs`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use medic_adapters::dynamodb::{DynamoDbStore, create_table};
use medic_adapters::sqs::SqsWorkQueue;
use medic_core::event::{AppRef, WorkItem, WorkKind};
use medic_core::ports::{EscalationStore, WorkQueue};
use medic_core::{Application, Decision, DecisionPolicy, History, Trigger};
use medic_sim::moto::{moto, unique};
use medic_sim::{ArgoSim, SLACK_BOT_TOKEN, SLACK_CHANNEL, SimConfig, SimMessage, SlackSim, SlackSimConfig};
use medic_slack::{DynamoDbEscalationStore, SlackEscalator, SlackSettings};
use medic_slack_actions::{ActionsConfig, AllowList, SigningSecret, SlackActions};
use medic_worker::Handled;
use serde_json::Value;

use crate::support::stack::{AwsStack, TestWorker};
use crate::support::{events_dir, sim_with_samples};
use medic_core::switch::FixedSwitch;

/// The signing secret of the sample in events/lambda/slack-actions/ (a test value, nothing else).
pub(crate) const SIGNING_SECRET: &str = "local-test-slack-signing-secret-not-for-production";
/// On the allow-list of project `payments` (every sample app used here is in it).
pub(crate) const ALICE: &str = "U0ALICE001";
/// On no allow-list.
pub(crate) const MALLORY: &str = "U0MALLORY1";

pub(crate) const CH: &str = SLACK_CHANNEL;

// --- fixtures ---------------------------------------------------------------------------------

pub(crate) fn sample_app(file: &str) -> Application {
    let text = std::fs::read_to_string(events_dir().join("apps").join(file)).unwrap();
    serde_json::from_str(&text).unwrap()
}

pub(crate) fn captured_at() -> DateTime<Utc> {
    medic::scenario::SAMPLES_CAPTURED_AT.parse().unwrap()
}

pub(crate) fn policy() -> DecisionPolicy {
    crate::support::stack::test_policy()
}

/// The sample app's decision at capture time; it must be an escalation.
pub(crate) fn escalation_of(app: &Application) -> Decision {
    let d = policy().decide(app, &Trigger::sweep(), &History::default(), captured_at()).unwrap();
    assert_eq!(d.action, medic_core::Action::Escalate, "{}: {}", d.app, d.reason);
    d
}

pub(crate) fn settings(slack: &SlackSim) -> SlackSettings {
    let mut s = SlackSettings::new(CH, "test");
    s.api_url = slack.api_url();
    s.argocd_url = Some("https://argocd.example.com".into());
    s.group_threshold = 0;
    s.group_update_interval = Duration::ZERO;
    s.post_interval = Duration::ZERO;
    s.lease = Duration::from_secs(1);
    s.busy_wait = Duration::from_secs(5);
    s.max_retry_wait = Duration::from_secs(5);
    s.request_timeout = Duration::from_secs(5);
    s
}

pub(crate) async fn ddb() -> (aws_sdk_dynamodb::Client, String) {
    let sdk = medic_adapters::aws::sdk_config(Some(&moto().url)).await;
    let ddb = aws_sdk_dynamodb::Client::new(&sdk);
    let table = unique("slack");
    create_table(&ddb, &table).await.unwrap();
    (ddb, table)
}

pub(crate) async fn escalation_store() -> DynamoDbEscalationStore {
    let (ddb, table) = ddb().await;
    DynamoDbEscalationStore::new(ddb, table, "test")
}

pub(crate) fn slack_escalator<S: EscalationStore>(slack: &SlackSim, settings: SlackSettings, store: S) -> SlackEscalator<S> {
    let _ = slack;
    SlackEscalator::new(settings, SLACK_BOT_TOKEN, store).unwrap()
}

/// Top-level messages that carry an escalation key (what a person sees in the channel).
pub(crate) fn parents(slack: &SlackSim) -> Vec<SimMessage> {
    slack.parents(CH).into_iter().filter(|m| m.payload("key").is_some()).collect()
}

pub(crate) fn text_of(m: &SimMessage) -> String {
    m.blocks.to_string()
}

/// The opaque id of the button labelled `label` in a message.
pub(crate) fn button(m: &SimMessage, label: &str) -> String {
    let blocks = m.blocks.as_array().unwrap();
    let actions = blocks.iter().find(|b| b["type"] == "actions").unwrap_or_else(|| panic!("no buttons in {}", m.blocks));
    let b = actions["elements"].as_array().unwrap().iter().find(|e| e["text"]["text"].as_str().unwrap().starts_with(label)).unwrap();
    assert_eq!(b["value"], b["action_id"], "a button carries only its opaque id");
    b["value"].as_str().unwrap().to_owned()
}

// --- the serverless stack: queue, table, worker, slack-actions ------------------------------------

pub(crate) struct Stack {
    pub(crate) aws: AwsStack,
    pub(crate) slack: SlackSim,
    pub(crate) argo: ArgoSim,
}

/// The queue, the table and the worker of every stack (`stack.sqs`, `stack.store()`, ...).
impl std::ops::Deref for Stack {
    type Target = AwsStack;
    fn deref(&self) -> &AwsStack {
        &self.aws
    }
}

/// The sweeper of the Slack stack: the stack's table and queue, posting through the Slack
/// escalator, with generous budgets; `recheck_interval` is its window (production: 300 s).
pub(crate) type SlackSweeper = medic_sweeper::Sweeper<SlackSweeperPorts<medic_adapters::argocd::HttpArgoClient>>;

/// [`SlackSweeper`]'s ports, reading Argo CD with `A`.
pub(crate) type SlackSweeperPorts<A> = medic_stack::adapters::Adapters<
    A,
    DynamoDbStore,
    DynamoDbStore,
    DynamoDbStore,
    SqsWorkQueue,
    SlackEscalator<DynamoDbEscalationStore>,
    medic_adapters::budget::LocalBudget,
    medic_adapters::memory::SystemClock,
    FixedSwitch,
    medic_adapters::telemetry::Metrics,
>;

pub(crate) type SlackWorker = SwitchedWorker<FixedSwitch>;
/// The stack's worker reading the instant switch (and its freezes) from `W`.
pub(crate) type SwitchedWorker<W> = TestWorker<DynamoDbStore, SlackEscalator<DynamoDbEscalationStore>, W>;
pub(crate) type Actions = SlackActions<SqsWorkQueue, DynamoDbStore, DynamoDbEscalationStore>;

/// No message of these tests is meant to reach the DLQ: a failing one panics the poll first.
pub(crate) async fn stack() -> Stack {
    let aws = AwsStack::new("slack-work", 1, 1000).await;
    let slack = SlackSim::start(SlackSimConfig::default()).await.unwrap();
    let argo = sim_with_samples(SimConfig::default()).await;
    Stack { aws, slack, argo }
}

impl Stack {
    pub(crate) fn worker(&self) -> SlackWorker {
        self.aws.worker_with(
            &self.argo,
            self.store(),
            slack_escalator(&self.slack, settings(&self.slack), self.escalations()),
            FixedSwitch::default(),
        )
    }

    /// The sweeper over `sim`, this stack's table and queue, posting to its Slack simulator.
    pub(crate) fn sweeper(&self, sim: &ArgoSim, recheck_interval: Duration) -> SlackSweeper {
        self.sweeper_reading(crate::support::client(sim), recheck_interval)
    }

    /// [`Stack::sweeper`] reading Argo CD with `argo`.
    pub(crate) fn sweeper_reading<A: medic_core::ports::ArgoApi>(
        &self,
        argo: A,
        recheck_interval: Duration,
    ) -> medic_sweeper::Sweeper<SlackSweeperPorts<A>> {
        let config = medic_sweeper::SweeperConfig {
            recheck_interval,
            work_item_key: Some(crate::support::work_item_key()),
            ..medic_sweeper::SweeperConfig::default()
        };
        let escalator = slack_escalator(&self.slack, settings(&self.slack), self.escalations());
        let adapters = medic_stack::lambda::on_table(argo, self.store(), self.queue())
            .with_budget(crate::support::generous_budget())
            .with_escalator(escalator);
        medic_sweeper::Sweeper::from(adapters.sweep(config))
    }

    pub(crate) fn actions(&self) -> Actions {
        let config = ActionsConfig { work_item_key: Some(crate::support::work_item_key()), ..ActionsConfig::default() };
        let allow = AllowList::from_json(&format!(r#"{{"payments": ["{ALICE}"], "platform": ["U0BOB00001"]}}"#)).unwrap();
        medic_stack::lambda::on_table((), self.store(), self.queue()).interactions(
            config,
            SigningSecret::new(SIGNING_SECRET, None),
            allow,
            self.escalations(),
        )
    }

    pub(crate) async fn enqueue_look(&self, name: &str, window: &str) {
        let app = AppRef { name: name.into(), namespace: "argocd".into(), project: Some("payments".into()) };
        let item = WorkItem::for_app(WorkKind::Sweep, app, Trigger::sweep(), window, Utc::now());
        self.queue().enqueue(&item, Duration::ZERO).await.unwrap();
    }

    /// The parent message of `app`'s escalation: a sweep look at it, handled by `worker`.
    pub(crate) async fn escalated<W: medic_core::switch::Switch>(&self, worker: &SwitchedWorker<W>, app: &str) -> SimMessage {
        self.enqueue_look(app, "w1").await;
        self.poll(worker).await;
        parents(&self.slack).remove(0)
    }

    /// One poll of the event source mapping: receive, invoke, delete what did not fail.
    pub(crate) async fn poll<W: medic_core::switch::Switch>(&self, worker: &SwitchedWorker<W>) -> Vec<Handled> {
        let messages = self.receive().await;
        let mut handled = Vec::new();
        for m in &messages {
            let record = crate::support::sqs_record(m);
            match worker.handle_message(&record).await {
                Ok(h) => {
                    handled.push(h);
                    self.delete(m).await;
                }
                Err(e) => panic!("message failed: {e}"),
            }
        }
        handled
    }

    /// Work items waiting on the queue (visible, in flight or delayed).
    pub(crate) async fn depth(&self) -> usize {
        let (visible, in_flight, delayed) = self.aws.depth(&self.aws.queue_url).await;
        visible + in_flight + delayed
    }
}

/// A button click as Slack sends it to the Function URL: the sample request with this button,
/// this user and this timestamp, signed with `secret`.
pub(crate) fn click(action_id: &str, user: &str, timestamp: i64, secret: &str) -> lambda_http::Request {
    let mut event: Value =
        serde_json::from_str(&std::fs::read_to_string(events_dir().join("lambda/slack-actions/block-actions-sync.json")).unwrap()).unwrap();
    let body = event["body"].as_str().unwrap().to_owned();
    let payload = form_urlencoded::parse(body.as_bytes()).find(|(k, _)| k == "payload").unwrap().1.into_owned();
    let mut payload: Value = serde_json::from_str(&payload).unwrap();
    payload["actions"][0]["action_id"] = action_id.into();
    payload["actions"][0]["value"] = action_id.into();
    payload["user"]["id"] = user.into();
    let body: String = form_urlencoded::Serializer::new(String::new()).append_pair("payload", &payload.to_string()).finish();
    let ts = timestamp.to_string();
    event["body"] = body.clone().into();
    event["headers"]["x-slack-request-timestamp"] = ts.clone().into();
    event["headers"]["x-slack-signature"] = SigningSecret::new(secret, None).sign(&ts, body.as_bytes()).into();
    lambda_http::request::from_str(&event.to_string()).unwrap()
}

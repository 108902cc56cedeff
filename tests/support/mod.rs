//! Shared helpers: the Argo CD simulator loaded with the sample apps, and clients pointed at it.

pub mod gotemplate;
pub mod slack;
pub mod stack;

use std::path::PathBuf;
use std::time::Duration;

use chrono::Utc;
use medic_adapters::argocd::HttpArgoClient;
use medic_adapters::breaker::BreakerSettings;
use medic_adapters::budget::{BudgetRates, LocalBudget};
use medic_adapters::config::ArgoSettings;
use medic_adapters::memory::{LogEscalator, MemoryDedupe, SystemClock};
use medic_core::AppId;
use medic_core::event::AppRef;
use medic_core::incident::Outcome;
use medic_core::keys::IdempotencyKey;
use medic_core::ports::{ArgoApi, IncidentStore, StoreError};
use medic_core::switch::{FixedSwitch, Mode};
use medic_core::{DecisionPolicy, PolicyConfig};
use medic_service::remediate::{Remediator, StepConfig};
use medic_sim::{ArgoSim, SimConfig};
use medic_stack::adapters::{InlinePorts, inline};

pub fn events_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test")).join("../events")
}

/// A simulator holding every sample app, its timestamps moved so the capture time is now.
pub async fn sim_with_samples(mut config: SimConfig) -> ArgoSim {
    // `make test` runs the client tests once more per Argo CD profile (medic_sim::PROFILE_VERSIONS):
    // a simulator left at the default version serves the profile named here.
    if let Some(version) = served_profile()
        && config.version == SimConfig::default().version
    {
        config.version = version;
    }
    let sim = ArgoSim::start(config).await.expect("simulator starts");
    sim.load_samples(&events_dir(), Utc::now()).expect("the sample apps and their outcomes load");
    sim
}

/// The Argo CD profile this run serves: `MEDIC_ARGOCD_PROFILE` (a tag such as `v3.3.7`, or a
/// full version), when `make test` sets it; else the simulator's default.
pub fn served_profile() -> Option<String> {
    let wanted = std::env::var("MEDIC_ARGOCD_PROFILE").ok().filter(|v| !v.is_empty())?;
    let version = medic_sim::PROFILE_VERSIONS.iter().find(|v| v.split('+').next() == Some(wanted.as_str())).map(|v| v.to_string());
    Some(version.unwrap_or_else(|| panic!("MEDIC_ARGOCD_PROFILE={wanted} is not one of {:?}", medic_sim::PROFILE_VERSIONS)))
}

/// The `ComparisonError` of an app whose Git host refuses connections, as the controller words
/// it (`controller/state.go`: "Failed to load target state: ..."; the rest is the repo-server's).
pub const GIT_UNREACHABLE: &str = "Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = failed to list refs: dial tcp 10.20.30.40:443: connect: connection refused";

/// A fleet outage in a fresh simulator: `apps` synthetic apps, the first `down` of them sourced
/// from Git host `host` and not comparable since `minutes_ago`, as Argo CD shows a source it
/// cannot reach: sync `Unknown` and `condition` as their `ComparisonError` since then (without
/// one, [`GIT_UNREACHABLE`]), health left as it was (`Healthy` since a day before, with that old transition time:
/// the controller assesses health from the live resources whatever the comparison result, see
/// docs/fleet.md "When an outage began"). `edit` shapes each app further (its index and JSON) and
/// may return outcomes to replace its own.
pub async fn outage_fleet(
    apps: usize,
    down: usize,
    host: &str,
    minutes_ago: i64,
    condition: Option<&str>,
    edit: impl Fn(usize, &mut serde_json::Value) -> Option<medic_sim::Outcomes>,
) -> ArgoSim {
    let sim = ArgoSim::start(SimConfig::default()).await.expect("simulator starts");
    let since = (Utc::now() - chrono::TimeDelta::minutes(minutes_ago)).to_rfc3339();
    for (i, (mut app, outcomes)) in medic_sim::synthetic_fleet(apps, 0, Utc::now()).into_iter().enumerate() {
        let name = app["metadata"]["name"].as_str().expect("a synthetic app has a name").to_owned();
        if i < down {
            app["spec"]["source"]["repoURL"] = format!("https://{host}/platform/deployments.git").into();
            app["status"]["sync"]["status"] = "Unknown".into();
            let message = condition.unwrap_or(GIT_UNREACHABLE);
            app["status"]["conditions"] = serde_json::json!([{"type": "ComparisonError", "lastTransitionTime": since, "message": message}]);
        }
        let outcomes = edit(i, &mut app).unwrap_or(outcomes);
        sim.insert_app(app);
        sim.set_outcomes(&name, outcomes);
    }
    sim
}

/// Settings for a test client: quick retries so backoff tests take seconds, not minutes.
pub fn settings(sim: &ArgoSim, token: &str) -> ArgoSettings {
    let mut s = ArgoSettings::new(sim.base_url(), token);
    s.request_timeout = Duration::from_secs(2);
    s.retry_deadline = Duration::from_secs(5);
    s.max_attempts = 4;
    s.max_retry_after = Duration::from_secs(2);
    s
}

pub fn client(sim: &ArgoSim) -> HttpArgoClient {
    HttpArgoClient::with_breaker(settings(sim, &default_token()), BreakerSettings { failure_threshold: 1000, ..Default::default() })
        .unwrap()
}

pub fn app(name: &str, project: &str) -> AppRef {
    AppRef { name: name.into(), namespace: "argocd".into(), project: Some(project.into()) }
}

/// The work-item key the test stacks' ingest, slack-actions and worker share.
pub fn work_item_key() -> medic_core::event::WorkItemKey {
    medic_core::event::WorkItemKey::new("test-work-item-key-shared-by-the-stack-functions").unwrap()
}

pub fn default_token() -> String {
    SimConfig::default().tokens[0].token.clone()
}

/// Budgets high enough that tests never wait for a token.
pub fn generous_budget() -> LocalBudget {
    LocalBudget::new(BudgetRates {
        refresh_per_minute: 60_000,
        hard_refresh_per_minute: 6_000,
        sync_per_minute: 6_000,
        max_wait: Duration::from_secs(2),
    })
}

/// The adapters a test's per-app steps borrow: the composition root's inline set, its Argo CD
/// client given per step.
pub type StepPorts<S> = InlinePorts<(), S, LogEscalator, LocalBudget>;

/// The collaborators of a per-app step, owned, so a test can build `Remediator`s that borrow them.
/// Reads as its adapters (`parts.store`, `parts.dedupe`, …).
pub struct Parts<S> {
    ports: StepPorts<S>,
    pub policy: DecisionPolicy,
}

impl<S> std::ops::Deref for Parts<S> {
    type Target = StepPorts<S>;
    fn deref(&self) -> &StepPorts<S> {
        &self.ports
    }
}

impl<S: IncidentStore> Parts<S> {
    pub fn new(store: S, policy: PolicyConfig) -> Self {
        Self { ports: inline((), store, LogEscalator::default(), generous_budget()), policy: DecisionPolicy::new(policy) }
    }

    /// The store, for a test that goes on with it.
    pub fn into_store(self) -> S {
        self.ports.store
    }

    /// The same parts with another budget.
    pub fn with_budget(self, budget: LocalBudget) -> Self {
        Self { ports: self.ports.with_budget(budget), ..self }
    }

    pub fn step<'a, A: ArgoApi>(
        &'a self,
        argo: &'a A,
        dry_run: bool,
        claim_timeout: Duration,
    ) -> Remediator<'a, A, S, MemoryDedupe, LogEscalator, LocalBudget, SystemClock, FixedSwitch> {
        self.step_with_clock(argo, &SystemClock, dry_run, claim_timeout)
    }

    /// [`Self::step_with_clock`] reading the instant switch (and its freezes) from `switch`.
    pub fn step_switched<'a, A: ArgoApi, C: medic_core::ports::Clock, W: medic_core::switch::Switch>(
        &'a self,
        argo: &'a A,
        clock: &'a C,
        switch: &'a W,
        claim_timeout: Duration,
    ) -> Remediator<'a, A, S, MemoryDedupe, LogEscalator, LocalBudget, C, W> {
        let config = StepConfig { dry_run: false, kill_switch: false, claim_timeout };
        self.ports.by_ref().with_argo(argo).with_clock(clock).with_switch(switch).step(&self.policy, config)
    }

    /// [`Self::step`] on a clock of the test's choosing (a function whose clock is off).
    pub fn step_with_clock<'a, A: ArgoApi, C: medic_core::ports::Clock>(
        &'a self,
        argo: &'a A,
        clock: &'a C,
        dry_run: bool,
        claim_timeout: Duration,
    ) -> Remediator<'a, A, S, MemoryDedupe, LogEscalator, LocalBudget, C, FixedSwitch> {
        let config = StepConfig { dry_run, kill_switch: false, claim_timeout };
        self.ports.by_ref().with_argo(argo).with_clock(clock).with_switch(&FixedSwitch(Mode::Act)).step(&self.policy, config)
    }
}

/// A store that loses the completion of every action: the process dies between the action and
/// recording its outcome. Everything else goes to the wrapped store.
pub struct LosesCompletion<S>(pub S);

impl<S: IncidentStore> medic_core::ports::IncidentStoreDecorator for LosesCompletion<S> {
    type Inner = S;
    fn inner(&self) -> &S {
        &self.0
    }
    async fn complete(&self, _app: &AppId, _key: &IdempotencyKey, _outcome: Outcome) -> Result<(), StoreError> {
        Err(StoreError::unavailable("the process died before recording"))
    }
}

/// Receives what is visible now on `queue_url` (up to 10), as Lambda's event source mapping would.
pub async fn receive(sqs: &aws_sdk_sqs::Client, queue_url: &str) -> Vec<aws_sdk_sqs::types::Message> {
    let out = sqs
        .receive_message()
        .queue_url(queue_url)
        .max_number_of_messages(10)
        .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount)
        .send()
        .await
        .unwrap();
    out.messages.unwrap_or_default()
}

/// An SQS record as Lambda delivers it, from a message received from the queue.
pub fn sqs_record(m: &aws_sdk_sqs::types::Message) -> aws_lambda_events::event::sqs::SqsMessage {
    let mut record = aws_lambda_events::event::sqs::SqsMessage::default();
    record.message_id = m.message_id.clone();
    record.receipt_handle = m.receipt_handle.clone();
    record.body = m.body.clone();
    record.attributes = m.attributes.clone().unwrap_or_default().into_iter().map(|(k, v)| (k.as_str().to_owned(), v)).collect();
    record
}

/// A clock a test sets: starts at the real time, moves only when told (the `Clock` port).
pub struct TestClock(std::sync::Mutex<chrono::DateTime<Utc>>);

impl TestClock {
    pub fn now_real() -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self(std::sync::Mutex::new(Utc::now())))
    }

    pub fn advance(&self, by: chrono::TimeDelta) {
        *self.0.lock().unwrap() += by;
    }

    /// The time it shows now.
    pub fn now_at(&self) -> chrono::DateTime<Utc> {
        *self.0.lock().unwrap()
    }
}

impl medic_core::ports::Clock for TestClock {
    fn now(&self) -> chrono::DateTime<Utc> {
        *self.0.lock().unwrap()
    }
}

/// Which mutating call a [`DiesAt`] never returns from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiesAt {
    Sync,
    HardRefresh,
}

/// An Argo CD client whose run dies right before one mutating call: the call never reaches Argo
/// CD and never returns, so a test that drops the step's future (a timeout) leaves everything
/// after it undone, as a SIGKILL of the process between its claim and its call does.
pub struct Dying<'a, A>(pub &'a A, pub DiesAt);

impl<A: ArgoApi> medic_core::ports::ArgoApiDecorator for Dying<'_, A> {
    type Inner = A;
    fn inner(&self) -> &A {
        self.0
    }
    async fn refresh(
        &self,
        permit: &medic_core::permit::Permit,
        app: &AppRef,
        kind: medic_core::ladder::RefreshKind,
    ) -> Result<medic_core::Application, medic_core::ports::ArgoError> {
        if self.1 == DiesAt::HardRefresh && kind == medic_core::ladder::RefreshKind::Hard {
            return std::future::pending().await;
        }
        self.0.refresh(permit, app, kind).await
    }
    async fn sync(
        &self,
        permit: &medic_core::permit::Permit,
        app: &AppRef,
        request: &medic_core::app::ApplicationSyncRequest,
    ) -> Result<medic_core::Application, medic_core::ports::ArgoError> {
        if self.1 == DiesAt::Sync {
            return std::future::pending().await;
        }
        self.0.sync(permit, app, request).await
    }
}

/// The block of `doc` (a path from the repository root) between `start` and `end` is `expected`,
/// a generated table the docs must not let drift; `MEDIC_BLESS=1` rewrites it instead. Returns the
/// whole document as checked.
pub fn generated_block(doc: &str, start: &str, end: &str, expected: &str) -> String {
    let path = events_dir().join("..").join(doc);
    let text = std::fs::read_to_string(&path).unwrap();
    let from = text.find(start).unwrap_or_else(|| panic!("{doc} has no `{start}` marker")) + start.len();
    let to = text[from..].find(end).unwrap_or_else(|| panic!("{doc} has no `{end}` marker")) + from;
    if text[from..to] != *expected && std::env::var_os("MEDIC_BLESS").is_some() {
        let blessed = format!("{}{expected}{}", &text[..from], &text[to..]);
        std::fs::write(&path, &blessed).unwrap();
        return blessed;
    }
    assert_eq!(text[from..to], *expected, "{doc}: the generated block after `{start}` has drifted (MEDIC_BLESS=1 rewrites it)");
    text
}

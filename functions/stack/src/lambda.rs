//! The stack on AWS: every adapter built from the function's environment ([`LambdaEnv`]):
//! DynamoDB for state, SQS for work, the Argo CD API with its token from Secrets Manager, Slack
//! when configured, CloudWatch metrics.

use std::time::Duration;

use medic_adapters::argocd::HttpArgoClient;
use medic_adapters::budget::{BudgetRates, LocalBudget, SharedBudget};
use medic_adapters::dynamodb::DynamoDbStore;
use medic_adapters::lambda_env::{EnvError, LambdaEnv};
use medic_adapters::memory::{LogEscalator, SystemClock};
use medic_adapters::sqs::SqsWorkQueue;
use medic_adapters::switch::CachedSwitch;
use medic_adapters::telemetry::Metrics;
use medic_core::DecisionPolicy;
use medic_core::event::WorkItemKey;
use medic_core::sweep::SweepScope;
use medic_core::switch::FixedSwitch;
use medic_service::intake::{IngestConfig, Intake};
use medic_service::sweep::{Sweep, SweeperConfig};
use medic_service::work::{Work, WorkerConfig, WorkerPolicy};
use medic_slack::interaction::{ActionsConfig, AllowList, AllowListError, Interactions, SecretFormatError, SigningSecret};
use medic_slack::{AnyEscalator, DynamoDbEscalationStore, SlackEscalator, SlackSettings};

use crate::adapters::Adapters;

/// The adapters the Lambda functions run on.
pub type LambdaPorts = Adapters<
    HttpArgoClient,
    DynamoDbStore,
    DynamoDbStore,
    DynamoDbStore,
    SqsWorkQueue,
    AnyEscalator<DynamoDbEscalationStore>,
    SharedBudget<DynamoDbStore>,
    SystemClock,
    CachedSwitch<DynamoDbStore, SystemClock>,
    Metrics,
>;

/// The Lambda's adapters over a state table and a queue given instead of the environment's (a
/// test stack in moto): the table for incidents, markers and locks; escalations logged, the
/// default budget in process, the system clock, the switch at `act`, metrics kept quietly.
pub type OnTable<A> =
    Adapters<A, DynamoDbStore, DynamoDbStore, DynamoDbStore, SqsWorkQueue, LogEscalator, LocalBudget, SystemClock, FixedSwitch, Metrics>;

/// See [`OnTable`].
pub fn on_table<A>(argo: A, table: DynamoDbStore, queue: SqsWorkQueue) -> OnTable<A> {
    Adapters {
        argo,
        store: table.clone(),
        dedupe: table.clone(),
        lock: table,
        queue,
        escalator: LogEscalator::default(),
        budget: LocalBudget::new(BudgetRates::default()),
        clock: SystemClock,
        switch: FixedSwitch::default(),
        metrics: Metrics::quiet("test"),
    }
}

/// slack-actions as the Lambda runs it: its queue, the state table for replays, claims and the
/// buttons' actions, the system clock.
pub type LambdaInteractions = Interactions<SqsWorkQueue, DynamoDbStore, DynamoDbEscalationStore, SystemClock, Metrics>;

/// Why slack-actions could not start.
#[derive(Debug, thiserror::Error)]
pub enum ActionsInitError {
    #[error(transparent)]
    Env(#[from] EnvError),
    #[error(transparent)]
    Secret(#[from] SecretFormatError),
    #[error(transparent)]
    AllowList(#[from] AllowListError),
}

/// slack-actions from the function's settings. The secrets at once: each is a Secrets Manager
/// round trip of the cold start.
pub async fn interactions(env: &LambdaEnv) -> Result<LambdaInteractions, ActionsInitError> {
    let (work_item_key, signing_secret) = tokio::try_join!(env.work_item_key(), env.slack_signing_secret())?;
    let config = ActionsConfig { work_item_key: Some(work_item_key), ..ActionsConfig::default() };
    let (secret, allow) = (SigningSecret::from_secret(&signing_secret)?, AllowList::from_json(&env.slack_allowed_users())?);
    let (store, queue) = (env.store()?, env.queue());
    Ok(Interactions {
        config,
        secret,
        allow,
        queue,
        dedupe: store,
        actions: escalation_store(env)?,
        clock: SystemClock,
        metrics: Metrics::new(&env.instance_id),
    })
}

/// The records that keep Slack posts at most once, in the state table.
pub fn escalation_store(env: &LambdaEnv) -> Result<DynamoDbEscalationStore, EnvError> {
    let (client, table, instance) = env.escalation_table()?;
    Ok(DynamoDbEscalationStore::new(client, table, instance))
}

/// Slack when the environment configures it ([`LambdaEnv::slack`]), else the log.
pub async fn escalator(env: &LambdaEnv) -> Result<AnyEscalator<DynamoDbEscalationStore>, EnvError> {
    escalator_with(env, escalation_store(env)?).await
}

/// [`escalator`] keeping its records in `store` (the chaos harness wraps the table's store to
/// stop a worker inside a post).
pub async fn escalator_with<S: medic_core::ports::EscalationStore>(env: &LambdaEnv, store: S) -> Result<AnyEscalator<S>, EnvError> {
    let Some(slack) = env.slack().await? else {
        return Ok(AnyEscalator::Log(LogEscalator::forgetful()));
    };
    let mut settings = SlackSettings::new(slack.channel, env.instance_id.clone());
    settings.api_url = slack.api_url;
    settings.argocd_url = slack.argocd_url;
    settings.group_threshold = slack.group_threshold;
    settings.lease = slack.lease;
    settings.post_interval = slack.post_interval;
    let escalator = SlackEscalator::with_token_source(settings, slack.token, store)
        .map_err(|e| EnvError::Invalid { name: "SLACK_API_URL", problem: e.to_string() })?;
    Ok(AnyEscalator::Slack(Box::new(escalator)))
}

/// Every adapter, and the work-item key, from the environment. The secrets at once (the Argo CD
/// token, the work-item key, the Slack token): each is a Secrets Manager round trip of the cold
/// start.
pub async fn adapters(env: &LambdaEnv) -> Result<(LambdaPorts, WorkItemKey), EnvError> {
    let (argo, work_item_key, escalator) = tokio::try_join!(env.argo_client(), env.work_item_key(), escalator(env))?;
    let adapters = Adapters {
        argo,
        store: env.incident_store()?,
        dedupe: env.store()?,
        lock: env.store()?,
        queue: env.queue(),
        escalator,
        budget: env.worker_budget()?,
        clock: SystemClock,
        switch: CachedSwitch::new(env.store()?, SystemClock),
        metrics: Metrics::new(&env.instance_id),
    };
    Ok((adapters, work_item_key))
}

/// The worker's work, as the worker function runs it.
pub async fn work(env: &LambdaEnv) -> Result<Work<LambdaPorts>, EnvError> {
    let (adapters, config, policy) = worker_parts(env).await?;
    Ok(adapters.work(config, policy))
}

/// What the worker's work is made of, apart: a harness wraps a port or scales a setting before
/// it builds the work ([`Adapters::work`]).
pub async fn worker_parts(env: &LambdaEnv) -> Result<(LambdaPorts, WorkerConfig, WorkerPolicy), EnvError> {
    let (adapters, work_item_key) = adapters(env).await?;
    // Rules that differ between Argo CD versions read it from the policy. Unless configured, it
    // is asked for on the first batch, not here: init is paid on every cold start and makes no
    // other call to Argo CD.
    let config = env.policy()?;
    if let Some(note) = config.trust.unapprovable_note(medic_core::ports::Escalator::takes_approvals(&adapters.escalator)) {
        tracing::warn!("{note}");
    }
    let policy = match config.argocd_version {
        Some(_) => WorkerPolicy::fixed(DecisionPolicy::new(config)),
        None => {
            let client = adapters.argo.clone();
            WorkerPolicy::learning(DecisionPolicy::new(config), move || {
                let client = client.clone();
                Box::pin(async move { medic_core::ports::ArgoApi::version(&client).await.ok() })
            })
        }
    };
    let config = WorkerConfig {
        dry_run: env.dry_run()?,
        kill_switch: env.kill_switch()?,
        work_item_key: Some(work_item_key),
        max_receive_count: env.max_receive_count()?,
        relapse_hold: Duration::from_secs(2 * env.recheck_secs()?),
        ..WorkerConfig::for_timeout(env.function_timeout)
    };
    Ok((adapters, config, policy))
}

/// The sweep, as the sweeper function runs it.
pub async fn sweep(env: &LambdaEnv) -> Result<Sweep<LambdaPorts>, EnvError> {
    let (adapters, config) = sweeper_parts(env).await?;
    Ok(adapters.sweep(config))
}

/// What the sweep is made of, apart (see [`worker_parts`]).
pub async fn sweeper_parts(env: &LambdaEnv) -> Result<(LambdaPorts, SweeperConfig), EnvError> {
    let (adapters, work_item_key) = adapters(env).await?;
    let policy = env.policy()?;
    let config = SweeperConfig {
        scope: SweepScope { projects: policy.projects, selector: policy.selector, ..SweepScope::default() },
        recheck_interval: Duration::from_secs(env.recheck_secs()?),
        dry_run: env.dry_run()?,
        kill_switch: env.kill_switch()?,
        refresh_per_minute: env.rates()?.refresh_per_minute,
        work_item_key: Some(work_item_key),
        token_expiry_warning: env.token_expiry_warning()?,
        trust: policy.trust,
        settle: Duration::from_secs(policy.settle_secs.max(0) as u64),
    };
    Ok((adapters, config))
}

/// Ingest's intake as the function runs it: the queue, and an Argo CD client whose token is read
/// on first use.
pub type LambdaIntake = Intake<SqsWorkQueue, HttpArgoClient, SystemClock, Metrics>;

/// See [`LambdaIntake`]. Only a refresh by selector calls Argo CD, so the webhook path, almost
/// every invocation, never reads the Argo CD token (a Secrets Manager round trip of the cold
/// start): the client is made now, its token read on its first call
/// ([`LambdaEnv::deferred_argo_client`]); its server is required now, so a deployment without one
/// still fails at start.
pub async fn intake(env: &LambdaEnv) -> Result<LambdaIntake, EnvError> {
    let argo = env.deferred_argo_client()?;
    let work_item_key = env.work_item_key().await?;
    Ok(Intake {
        config: IngestConfig { max_body_bytes: env.max_body_bytes()?, work_item_key: Some(work_item_key), ..IngestConfig::default() },
        queue: env.queue(),
        argo,
        clock: SystemClock,
        metrics: Metrics::new(&env.instance_id),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(name: &str) -> Option<String> {
        match name {
            "MEDIC_INSTANCE_ID" => Some("prod".into()),
            "QUEUE_URL" => Some("http://127.0.0.1:1/queue/work".into()),
            "TABLE_NAME" => Some("state".into()),
            "AWS_ENDPOINT_URL" => Some("http://127.0.0.1:1".into()),
            _ => None,
        }
    }

    fn slack(name: &str) -> Option<String> {
        match name {
            "SLACK_CHANNEL" => Some("C0123456789".into()),
            "SLACK_TOKEN" => Some("xoxb-local-test".into()),
            "SLACK_POST_INTERVAL_MS" => Some(" 100 ".into()),
            "ARGOCD_SERVER" => Some("argocd.example.com".into()),
            _ => base(name),
        }
    }

    /// Slack when a channel and a token are configured, with the environment's settings; the
    /// log otherwise.
    #[tokio::test]
    async fn the_escalator_is_slack_when_the_environment_configures_it_else_the_log() {
        let env = LambdaEnv::from_lookup(base).await.unwrap();
        assert!(matches!(escalator(&env).await.unwrap(), AnyEscalator::Log(_)));
        let env = LambdaEnv::from_lookup(slack).await.unwrap();
        match escalator(&env).await.unwrap() {
            AnyEscalator::Slack(s) => {
                assert_eq!(s.settings.channel, "C0123456789");
                assert_eq!(s.settings.instance, "prod");
                assert_eq!(s.settings.group_threshold, 2);
                assert_eq!(s.settings.post_interval, Duration::from_millis(100));
                assert_eq!(s.settings.argocd_url.as_deref(), Some("https://argocd.example.com"));
                assert_eq!(s.settings.api_url, medic_slack::DEFAULT_API_URL);
            }
            AnyEscalator::Log(_) => panic!("Slack is configured"),
        }
    }
}

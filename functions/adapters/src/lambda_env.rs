//! The functions' settings, read once at cold start from the environment `template.yaml` sets,
//! and the clients built from them. Secrets (the Argo CD token, the webhook secret, the Slack
//! token) come from Secrets Manager by ARN; for local runs they may come straight from the
//! environment (`ARGOCD_AUTH_TOKEN`, `MEDIC_WEBHOOK_SECRET`). `AWS_ENDPOINT_URL` points every AWS
//! client at moto_server in tests and local mode.

use std::time::Duration;

use aws_config::SdkConfig;
use aws_sdk_dynamodb::config::{Intercept, SharedInterceptor};
use medic_core::PolicyConfig;
use thiserror::Error;

use crate::argocd::HttpArgoClient;
use crate::budget::{BudgetRates, SharedBudget};
use crate::config::{ArgoSettings, Settings, SettingsError};
use crate::dynamodb::DynamoDbStore;
use crate::settings::{self as vars, Reader, Var};
use crate::sqs::SqsWorkQueue;

/// A setting that is missing or malformed, named.
#[derive(Debug, Error)]
pub enum EnvError {
    #[error("environment variable `{0}` is required")]
    Missing(&'static str),
    #[error("environment variable `{name}`: {problem}")]
    Invalid { name: &'static str, problem: String },
    #[error("reading secret `{arn}`: {problem}")]
    Secret { arn: String, problem: String },
    #[error(transparent)]
    Client(#[from] crate::argocd::ClientError),
}

/// What every function reads at cold start, and the way to the rest: each function reads its
/// own settings through the methods below (from its `from_env`, so still at cold start), and
/// only those ([`crate::settings`] declares which).
#[derive(Debug, Clone)]
pub struct LambdaEnv {
    pub instance_id: String,
    pub queue_url: String,
    /// The function's timeout (`MEDIC_FUNCTION_TIMEOUT_SECONDS`, the template's value): every
    /// lease and the Argo CD client's retry budget derive from it.
    pub function_timeout: Duration,
    pub sdk: SdkConfig,
    settings: Settings,
    /// Interceptors every AWS client built here carries (the IAM conformance test records each
    /// call a function makes with one).
    interceptors: Vec<SharedInterceptor>,
    /// One client per AWS service, built on first use and shared by every adapter (a client is
    /// an `Arc`): building one validates its config and its HTTPS connector, which the worker
    /// otherwise did six times at init for DynamoDB alone.
    clients: AwsClients,
}

#[derive(Debug, Clone, Default)]
struct AwsClients {
    sqs: std::sync::OnceLock<aws_sdk_sqs::Client>,
    dynamodb: std::sync::OnceLock<aws_sdk_dynamodb::Client>,
    secrets: std::sync::OnceLock<aws_sdk_secretsmanager::Client>,
    /// Each secret's string, by ARN, read once (concurrent readers wait for the one read).
    fetched: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<tokio::sync::OnceCell<String>>>>>,
}

/// Where a secret is: `arn`, or `arn#key` for the value under `key` of a secret whose string is
/// a JSON object, so that several of Argo Medic's secrets can share one Secrets Manager secret
/// (each is billed; docs/cost.md). A value that is itself a JSON object (a rotation document,
/// `{"current": ..., "previous": ...}`) is handed on as its JSON text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecretRef<'a> {
    pub arn: &'a str,
    pub key: Option<&'a str>,
}

impl<'a> SecretRef<'a> {
    /// Secret names cannot hold `#`, so the first one starts the key.
    pub fn parse(reference: &'a str) -> Self {
        match reference.split_once('#') {
            Some((arn, key)) => Self { arn, key: Some(key) },
            None => Self { arn: reference, key: None },
        }
    }

    /// The value this reference names in the secret's string `whole`.
    pub fn value_in(&self, whole: &str) -> Result<String, String> {
        let Some(key) = self.key else { return Ok(whole.to_owned()) };
        let doc: serde_json::Value =
            serde_json::from_str(whole).map_err(|e| format!("`#{key}` needs the secret to be a JSON object: {e}"))?;
        match doc.get(key) {
            Some(serde_json::Value::String(s)) => Ok(s.clone()),
            Some(value @ serde_json::Value::Object(_)) => Ok(value.to_string()),
            // The kind only, never the value: this message reaches the init error's log line.
            Some(other) => Err(format!("the secret's `{key}` is {}, not a string or an object", crate::config::json_kind(other))),
            None => Err(format!("the secret has no key `{key}`")),
        }
    }
}

/// The string of the secret `arn`.
async fn fetch_secret(client: aws_sdk_secretsmanager::Client, arn: String) -> Result<String, String> {
    let out = client.get_secret_value().secret_id(&arn).send().await.map_err(|e| crate::aws::describe("GetSecretValue", &e))?;
    out.secret_string().map(str::to_owned).ok_or_else(|| "the secret has no string value".to_owned())
}

impl From<SettingsError> for EnvError {
    fn from(e: SettingsError) -> Self {
        match e {
            SettingsError::Missing(name) => EnvError::Missing(name),
            SettingsError::Invalid { name, problem } => EnvError::Invalid { name, problem },
            other => EnvError::Client(other.into()),
        }
    }
}

/// Slack as a function's environment configures it ([`LambdaEnv::slack`]).
pub struct SlackEnv {
    pub channel: String,
    /// The Web API's base URL (`SLACK_API_URL`, Slack's own by default).
    pub api_url: String,
    /// The Argo CD UI the messages link to.
    pub argocd_url: Option<String>,
    /// Incidents of one failure mode that make a group (`SLACK_FLEET_THRESHOLD`).
    pub group_threshold: usize,
    /// How long a post's intent is held (the function's lease).
    pub lease: Duration,
    /// Posts to one channel at least this far apart.
    pub post_interval: Duration,
    /// The bot token, read again from Secrets Manager when Slack rejects it.
    pub token: crate::token::TokenSource,
}

impl LambdaEnv {
    /// Reads the process environment, as `function` (its declarations are checked in tests).
    pub async fn load(function: Reader) -> Result<Self, EnvError> {
        Self::from_settings(Settings::from_env().for_reader(function)).await
    }

    /// Reads through `get` (tests pass their own).
    pub async fn from_lookup(get: fn(&str) -> Option<String>) -> Result<Self, EnvError> {
        Self::from_settings(Settings::from_fn(get)).await
    }

    pub async fn from_settings(settings: Settings) -> Result<Self, EnvError> {
        let s = &settings;
        let endpoint = s.text(&vars::AWS_ENDPOINT_URL);
        let function_timeout = Duration::from_secs(s.number::<u64>(&vars::MEDIC_FUNCTION_TIMEOUT_SECONDS)?.max(1));
        // Every AWS call of the function is bounded: a connection in 3 s, each answer within
        // `Timeouts::aws_read` (the SDK retries a timed-out attempt like any transient error).
        // Without them a DynamoDB call that never answered held the invocation to its end.
        let t = medic_core::timeouts::Timeouts::of(function_timeout);
        let timeouts = aws_config::timeout::TimeoutConfig::builder().connect_timeout(t.aws_connect).read_timeout(t.aws_read).build();
        let sdk = crate::aws::sdk_config(endpoint.as_deref()).await.into_builder().timeout_config(timeouts).build();
        Ok(Self {
            instance_id: s.required(&vars::MEDIC_INSTANCE_ID)?,
            queue_url: s.required(&vars::QUEUE_URL)?,
            function_timeout,
            sdk,
            settings: settings.clone(),
            interceptors: Vec::new(),
            clients: AwsClients::default(),
        })
    }

    /// The settings this environment reads through (a test compares what was asked of them with
    /// what the template gives the function).
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The state table's name.
    pub fn table(&self) -> Result<String, EnvError> {
        Ok(self.settings.required(&vars::TABLE_NAME)?)
    }

    /// The policy (`MEDIC_POLICY_CONFIG`), for this instance.
    pub fn policy(&self) -> Result<PolicyConfig, EnvError> {
        let json = self.settings.text_or_default(&vars::MEDIC_POLICY_CONFIG).unwrap_or_else(|| "{}".to_owned());
        let policy: PolicyConfig =
            serde_json::from_str(&json).map_err(|e| EnvError::Invalid { name: vars::MEDIC_POLICY_CONFIG.name, problem: e.to_string() })?;
        Ok(PolicyConfig { instance_id: self.instance_id.clone(), ..policy })
    }

    /// How to reach Argo CD (`ARGOCD_SERVER`, `ARGOCD_INSECURE`, `ARGOCD_PLAINTEXT`,
    /// `ARGOCD_ROOT_PATH`, `ARGOCD_CA_BUNDLE`); the token is read apart, from its secret.
    pub fn argocd(&self) -> Result<ArgoSettings, EnvError> {
        Ok(ArgoSettings::connection(&self.settings)?)
    }

    /// `MEDIC_DRY_RUN`: a deployment that says nothing acts on nothing.
    pub fn dry_run(&self) -> Result<bool, EnvError> {
        Ok(self.settings.flag(&vars::MEDIC_DRY_RUN)?)
    }

    pub fn kill_switch(&self) -> Result<bool, EnvError> {
        Ok(self.settings.flag(&vars::MEDIC_KILL_SWITCH)?)
    }

    /// The instance's budgets.
    pub fn rates(&self) -> Result<BudgetRates, EnvError> {
        let s = &self.settings;
        Ok(BudgetRates {
            refresh_per_minute: s.number(&vars::MEDIC_REFRESH_PER_MINUTE)?,
            hard_refresh_per_minute: s.number(&vars::MEDIC_HARD_REFRESH_PER_MINUTE)?,
            sync_per_minute: s.number(&vars::MEDIC_SYNC_PER_MINUTE)?,
            max_wait: Duration::from_secs(2),
        })
    }

    /// Most workers at once (the event source's `MaximumConcurrency`), at least 1.
    pub fn worker_max_concurrency(&self) -> Result<u32, EnvError> {
        Ok(self.settings.number::<u32>(&vars::MEDIC_WORKER_MAX_CONCURRENCY)?.max(1))
    }

    /// `MEDIC_RECHECK_SECONDS`: how often open incidents are looked at again.
    pub fn recheck_secs(&self) -> Result<u64, EnvError> {
        Ok(self.settings.number(&vars::MEDIC_RECHECK_SECONDS)?)
    }

    /// How long before the Argo CD token expires the sweeper starts to warn.
    pub fn token_expiry_warning(&self) -> Result<std::time::Duration, EnvError> {
        Ok(std::time::Duration::from_secs(self.settings.number::<u64>(&vars::MEDIC_TOKEN_EXPIRY_WARNING_DAYS)?.saturating_mul(86_400)))
    }

    /// The largest body ingest accepts.
    pub fn max_body_bytes(&self) -> Result<usize, EnvError> {
        Ok(self.settings.number(&vars::MEDIC_MAX_BODY_BYTES)?)
    }

    /// `MEDIC_MAX_RECEIVE_COUNT`: the work queue's `maxReceiveCount` (the template's MaxReceiveCount).
    pub fn max_receive_count(&self) -> Result<u32, EnvError> {
        Ok(self.settings.number::<u32>(&vars::MEDIC_MAX_RECEIVE_COUNT)?.max(1))
    }

    /// The Argo CD UI's base URL for links (default: from `ARGOCD_SERVER` and the root path).
    pub fn argocd_ui_url(&self) -> Result<Option<String>, EnvError> {
        let argocd = self.argocd()?;
        Ok(self.settings.text(&vars::ARGOCD_UI_URL).or_else(|| argocd.ui_url().filter(|_| !argocd.server.is_empty())))
    }

    /// The slack-actions function's allow-list: JSON `{"<project>": ["<Slack user id>", ...]}`.
    pub fn slack_allowed_users(&self) -> String {
        self.settings.text_or_default(&vars::SLACK_ALLOWED_USERS).unwrap_or_else(|| "{}".to_owned())
    }

    /// Adds an interceptor to every AWS client built from now on.
    pub fn with_interceptor(mut self, interceptor: impl Intercept + 'static) -> Self {
        self.interceptors.push(SharedInterceptor::new(interceptor));
        self.clients = AwsClients::default();
        self
    }

    fn sqs_client(&self) -> aws_sdk_sqs::Client {
        let build = || {
            let config = self.interceptors.iter().fold(aws_sdk_sqs::config::Builder::from(&self.sdk), |b, i| b.interceptor(i.clone()));
            aws_sdk_sqs::Client::from_conf(config.build())
        };
        self.clients.sqs.get_or_init(build).clone()
    }

    fn dynamodb_client(&self) -> aws_sdk_dynamodb::Client {
        let build = || {
            let config = self.interceptors.iter().fold(aws_sdk_dynamodb::config::Builder::from(&self.sdk), |b, i| b.interceptor(i.clone()));
            aws_sdk_dynamodb::Client::from_conf(config.build())
        };
        self.clients.dynamodb.get_or_init(build).clone()
    }

    fn secrets_client(&self) -> aws_sdk_secretsmanager::Client {
        let build = || {
            let config =
                self.interceptors.iter().fold(aws_sdk_secretsmanager::config::Builder::from(&self.sdk), |b, i| b.interceptor(i.clone()));
            aws_sdk_secretsmanager::Client::from_conf(config.build())
        };
        self.clients.secrets.get_or_init(build).clone()
    }

    /// A secret by reference from Secrets Manager ([`SecretRef`]: an ARN, or `ARN#key` for one
    /// key of a JSON secret), or the fallback environment variable for local runs. One secret
    /// holding several values is read once per process, however many of them are asked for.
    pub async fn secret(&self, arn: Option<&str>, fallback_env: &Var) -> Result<String, EnvError> {
        let Some(reference) = arn else {
            return Ok(self.settings.required(fallback_env)?);
        };
        let secret = SecretRef::parse(reference);
        let cell = {
            let mut fetched = self.clients.fetched.lock().unwrap_or_else(|e| e.into_inner());
            std::sync::Arc::clone(fetched.entry(secret.arn.to_owned()).or_default())
        };
        let whole = cell
            .get_or_try_init(|| fetch_secret(self.secrets_client(), secret.arn.to_owned()))
            .await
            .map_err(|problem| EnvError::Secret { arn: secret.arn.to_owned(), problem })?;
        secret.value_in(whole).map_err(|problem| EnvError::Secret { arn: reference.to_owned(), problem })
    }

    /// The key work items carrying a person's request are signed with (Secrets Manager by
    /// `WORK_ITEM_KEY_SECRET_ARN`, the stack generates it; or `MEDIC_WORK_ITEM_KEY` locally).
    pub async fn work_item_key(&self) -> Result<medic_core::event::WorkItemKey, EnvError> {
        let arn = self.settings.text(&vars::WORK_ITEM_KEY_SECRET_ARN);
        let secret = self.secret(arn.as_deref(), &vars::MEDIC_WORK_ITEM_KEY).await?;
        medic_core::event::WorkItemKey::new(&secret).ok_or(EnvError::Invalid {
            name: "WORK_ITEM_KEY_SECRET_ARN",
            problem: format!("the work-item key must be at least {} bytes", medic_core::event::WorkItemKey::MIN_LEN),
        })
    }

    /// The webhook secret document (`{"current": ..., "previous": ...}`).
    pub async fn webhook_secret(&self) -> Result<String, EnvError> {
        let arn = self.settings.text(&vars::WEBHOOK_SECRET_ARN);
        self.secret(arn.as_deref(), &vars::MEDIC_WEBHOOK_SECRET).await
    }

    /// The refresh secret document (`{"current": ..., "previous": ...}`) from
    /// `REFRESH_SECRET_ARN` or `MEDIC_REFRESH_SECRET`; `None` when neither is set (signed
    /// refreshes are off).
    pub async fn refresh_secret(&self) -> Result<Option<String>, EnvError> {
        let arn = self.settings.text(&vars::REFRESH_SECRET_ARN);
        if arn.is_none() && self.settings.text(&vars::MEDIC_REFRESH_SECRET).is_none() {
            return Ok(None);
        }
        self.secret(arn.as_deref(), &vars::MEDIC_REFRESH_SECRET).await.map(Some)
    }

    pub async fn argo_client(&self) -> Result<HttpArgoClient, EnvError> {
        let argocd = self.argocd()?;
        if argocd.server.is_empty() {
            return Err(EnvError::Missing(vars::ARGOCD_SERVER.name));
        }
        let arn = self.settings.text(&vars::ARGOCD_AUTH_TOKEN_SECRET_ARN);
        let token = self.secret(arn.as_deref(), &vars::ARGOCD_AUTH_TOKEN).await?;
        let source = self.token_source(token.trim(), arn.as_deref());
        Ok(HttpArgoClient::with_token_source(self.argo_settings(argocd, token.trim()), Default::default(), source)?)
    }

    /// The Argo CD client, made now, whose token is read from its secret only when a call first
    /// needs it ([`crate::token::TokenSource::deferred`]): for ingest, whose webhook path never
    /// calls Argo CD, so its cold start does not wait on Secrets Manager. A token given in the
    /// environment (no ARN) is used as it is.
    pub fn deferred_argo_client(&self) -> Result<HttpArgoClient, EnvError> {
        let argocd = self.argocd()?;
        if argocd.server.is_empty() {
            return Err(EnvError::Missing(vars::ARGOCD_SERVER.name));
        }
        let source = match self.settings.text(&vars::ARGOCD_AUTH_TOKEN_SECRET_ARN) {
            Some(arn) => crate::token::TokenSource::deferred(self.secret_refresher(&arn)),
            None => crate::token::TokenSource::fixed(self.settings.required(&vars::ARGOCD_AUTH_TOKEN)?.trim()),
        };
        Ok(HttpArgoClient::with_token_source(self.argo_settings(argocd, ""), Default::default(), source)?)
    }

    /// A token read from the secret `arn` again when a server rejects it (rotation without a
    /// redeploy); a token from the environment (no ARN) is never re-read.
    pub fn token_source(&self, token: &str, arn: Option<&str>) -> crate::token::TokenSource {
        match arn {
            Some(reference) => crate::token::TokenSource::refreshing(token, self.secret_refresher(reference)),
            None => crate::token::TokenSource::fixed(token),
        }
    }

    /// Reads the secret `reference` (`ARN` or `ARN#key`) from Secrets Manager, each time called.
    fn secret_refresher(&self, reference: &str) -> crate::token::Refresher {
        let (client, reference) = (self.secrets_client(), reference.to_owned());
        std::sync::Arc::new(move || {
            let (client, reference) = (client.clone(), reference.clone());
            Box::pin(async move {
                let secret = SecretRef::parse(&reference);
                let whole = fetch_secret(client, secret.arn.to_owned()).await?;
                secret.value_in(&whole)
            })
        })
    }

    /// The Argo CD client's settings for this function: its retry budget derives from the
    /// function's timeout.
    pub fn argo_settings(&self, connection: ArgoSettings, token: &str) -> ArgoSettings {
        let mut settings = ArgoSettings { token: token.to_owned().into(), ..connection };
        // One call, retries included, fits in a third of the invocation, so a message's read,
        // act and verify fit in it and a stopped invocation is the exception.
        let t = medic_core::timeouts::Timeouts::of(self.function_timeout);
        settings.retry_deadline = t.argo_call;
        settings.request_timeout = settings.request_timeout.min(t.argo_request_floor);
        settings
    }

    /// True when Slack is configured: a channel and a token (by ARN, or `SLACK_TOKEN` locally).
    pub fn slack_enabled(&self) -> bool {
        self.settings.text(&vars::SLACK_CHANNEL).is_some()
            && (self.settings.text(&vars::SLACK_TOKEN_SECRET_ARN).is_some() || self.settings.text(&vars::SLACK_TOKEN).is_some())
    }

    /// The state table's client, name and instance: where the Slack escalator keeps the records
    /// that post each message at most once.
    pub fn escalation_table(&self) -> Result<(aws_sdk_dynamodb::Client, String, String), EnvError> {
        Ok((self.dynamodb_client(), self.table()?, self.instance_id.clone()))
    }

    /// Slack as the environment configures it ([`LambdaEnv::slack_enabled`]), for the
    /// composition root to build the escalator from; `None` when it is not configured.
    pub async fn slack(&self) -> Result<Option<SlackEnv>, EnvError> {
        let s = &self.settings;
        let Some(channel) = s.text(&vars::SLACK_CHANNEL).filter(|_| self.slack_enabled()) else {
            return Ok(None);
        };
        let arn = s.text(&vars::SLACK_TOKEN_SECRET_ARN);
        let token = self.secret(arn.as_deref(), &vars::SLACK_TOKEN).await?;
        Ok(Some(SlackEnv {
            channel,
            api_url: s.text_or_default(&vars::SLACK_API_URL).unwrap_or_default(),
            argocd_url: self.argocd_ui_url()?,
            group_threshold: s.number(&vars::SLACK_FLEET_THRESHOLD)?,
            // A post's intent is held as long as an invocation can last, like every other lease
            // (pacing and a 429's wait happen inside it), so no other worker posts meanwhile.
            lease: medic_core::timeouts::Timeouts::of(self.function_timeout).lease,
            // Slack's one post per second per channel; a time-scaled test run scales it too.
            post_interval: Duration::from_millis(s.number(&vars::SLACK_POST_INTERVAL_MS)?),
            token: self.token_source(token.trim(), arn.as_deref()),
        }))
    }

    /// The slack-actions function's signing secret (Secrets Manager, or `SLACK_SIGNING_SECRET`).
    pub async fn slack_signing_secret(&self) -> Result<String, EnvError> {
        let arn = self.settings.text(&vars::SLACK_SIGNING_SECRET_ARN);
        self.secret(arn.as_deref(), &vars::SLACK_SIGNING_SECRET).await.map(|s| s.trim().to_owned())
    }

    pub fn queue(&self) -> SqsWorkQueue {
        SqsWorkQueue::new(self.sqs_client(), self.queue_url.clone())
    }

    pub fn store(&self) -> Result<DynamoDbStore, EnvError> {
        Ok(DynamoDbStore::new(self.dynamodb_client(), self.table()?, self.instance_id.clone()))
    }

    /// How long the state table keeps a closed incident and a decision.
    pub fn history(&self) -> Result<std::time::Duration, EnvError> {
        Ok(std::time::Duration::from_secs(self.settings.number::<u64>(&vars::MEDIC_HISTORY_DAYS)?.saturating_mul(86_400)))
    }

    /// The incident store: the state table, keeping closed incidents and decisions for
    /// [`Self::history`].
    pub fn incident_store(&self) -> Result<DynamoDbStore, EnvError> {
        Ok(self.store()?.with_retention(self.history()?))
    }

    /// The worker's budget: the instance's rates in token buckets on the state table, shared by
    /// every worker that runs ([`SharedBudget`]). Its share of them
    /// ([`BudgetRates::worker_share`]: the event source runs at most
    /// `MEDIC_WORKER_MAX_CONCURRENCY` workers at once) sets its wait for a token, and is what it
    /// falls back to when the table cannot be read.
    pub fn worker_budget(&self) -> Result<SharedBudget<DynamoDbStore>, EnvError> {
        let rates = self.rates()?;
        let share = rates.worker_share(self.worker_max_concurrency()?, WORKER_BATCH_SIZE, self.function_timeout);
        Ok(SharedBudget::new(self.store()?, rates, share))
    }
}

/// The event source mapping's `BatchSize` (template.yaml): messages one worker invocation handles.
pub const WORKER_BATCH_SIZE: u32 = 10;

#[cfg(test)]
mod tests {
    use super::*;

    fn base(name: &str) -> Option<String> {
        match name {
            "MEDIC_INSTANCE_ID" => Some("prod".into()),
            "QUEUE_URL" => Some("http://127.0.0.1:1/queue/work".into()),
            "TABLE_NAME" => Some("state".into()),
            "AWS_ENDPOINT_URL" => Some("http://127.0.0.1:1".into()),
            "MEDIC_POLICY_CONFIG" => Some(r#"{"max_prune": 2}"#.into()),
            "MEDIC_WORKER_MAX_CONCURRENCY" => Some("4".into()),
            "MEDIC_REFRESH_PER_MINUTE" => Some("400".into()),
            _ => None,
        }
    }

    /// The worker's budget assumes the event source's batch: the two must not drift apart.
    #[test]
    fn a_secret_reference_names_an_arn_or_one_key_of_a_json_secret() {
        let arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:argo-medic-AbCdEf";
        assert_eq!(SecretRef::parse(arn), SecretRef { arn, key: None });
        let webhook = format!("{arn}#webhook");
        let r = SecretRef::parse(&webhook);
        assert_eq!((r.arn, r.key), (arn, Some("webhook")));
        let whole = r#"{"webhook": {"current": "s3cret", "previous": null}, "argocd": "tok.en", "n": 3}"#;
        assert_eq!(r.value_in(whole).unwrap(), r#"{"current":"s3cret","previous":null}"#, "a rotation document stays JSON");
        assert_eq!(SecretRef::parse(&format!("{arn}#argocd")).value_in(whole).unwrap(), "tok.en");
        assert_eq!(SecretRef::parse(arn).value_in(whole).unwrap(), whole, "no key: the whole string");
        let missing = SecretRef::parse(&format!("{arn}#slack")).value_in(whole).unwrap_err();
        assert!(missing.contains("no key `slack`"), "{missing}");
        assert!(SecretRef::parse(&format!("{arn}#n")).value_in(whole).unwrap_err().contains("not a string"));
        assert!(SecretRef::parse(&format!("{arn}#argocd")).value_in("plain-token").unwrap_err().contains("JSON object"));
        // L10 (reliability review of 0a3f9d5): a token stored as a number or an array of tokens
        // was printed into the init error. Fails on 0a3f9d5.
        let secret = r#"{"numeric": 918273645546372819, "tokens": ["tok-1-secret", "tok-2-secret"]}"#;
        for (key, kind) in [("numeric", "a number"), ("tokens", "an array")] {
            let problem = SecretRef::parse(&format!("{arn}#{key}")).value_in(secret).unwrap_err();
            assert!(problem.contains(kind), "{problem}");
            assert!(!problem.contains("918273645546372819") && !problem.contains("tok-1-secret"), "no value in the error: {problem}");
        }
    }

    #[test]
    fn the_worker_batch_size_is_the_template_s() {
        let template = include_str!("../../../template.yaml");
        let sizes: Vec<&str> = template.lines().filter_map(|l| l.trim().strip_prefix("BatchSize:")).map(str::trim).collect();
        assert_eq!(sizes, [WORKER_BATCH_SIZE.to_string()], "template.yaml's BatchSize");
    }

    static VALUE: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

    fn plaintext_is(name: &str) -> Option<String> {
        match name {
            "ARGOCD_PLAINTEXT" => Some(VALUE.lock().unwrap().clone()),
            "ARGOCD_SERVER" => Some("argocd.example.com".into()),
            "ARGOCD_AUTH_TOKEN" => Some("t".into()),
            _ => base(name),
        }
    }

    /// One boolean grammar: ARGOCD_PLAINTEXT read by the functions, by their UI links and by the
    /// CLI's settings means the same (before, `TRUE` failed one loader, `on` another, and the
    /// UI link took ` yes ` for HTTPS while the API client took it for plain HTTP).
    #[tokio::test]
    async fn booleans_read_the_same_in_the_functions_and_the_cli() {
        for (value, expected) in [
            ("TRUE", Some(true)),
            ("True", Some(true)),
            ("on", Some(true)),
            ("Off", Some(false)),
            (" yes ", Some(true)),
            ("0", Some(false)),
            ("maybe", None),
        ] {
            *VALUE.lock().unwrap() = value.to_owned();
            let env = LambdaEnv::from_lookup(plaintext_is).await.unwrap();
            let functions = env.argocd().ok().map(|a| a.plaintext);
            let links = env.argocd_ui_url().ok().flatten().map(|u| u.starts_with("http://"));
            let cli = ArgoSettings::from_lookup(plaintext_is).ok().map(|s| s.plaintext);
            assert_eq!((functions, links, cli), (expected, expected, expected), "`{value}`");
        }
    }

    #[tokio::test]
    async fn settings_come_from_the_template_names_with_safe_defaults() {
        let env = LambdaEnv::from_lookup(base).await.unwrap();
        assert_eq!(env.instance_id, "prod");
        assert_eq!(env.policy().unwrap().instance_id, "prod", "the instance id is part of every key");
        assert_eq!(env.policy().unwrap().max_prune, 2);
        assert!(env.dry_run().unwrap(), "dry run unless said otherwise");
        assert!(!env.kill_switch().unwrap());
        assert_eq!(env.rates().unwrap().refresh_per_minute, 400);
        assert_eq!(env.worker_max_concurrency().unwrap(), 4);
        assert_eq!(env.recheck_secs().unwrap(), 300, "the template's RecheckSeconds (the code said 900)");
        assert!(!env.slack_enabled(), "no Slack unless a channel and a token are configured");
        assert!(env.slack().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_slack_channel_and_token_configure_slack_and_links_point_at_the_argo_cd_ui() {
        fn slack(name: &str) -> Option<String> {
            match name {
                "SLACK_CHANNEL" => Some("C0123456789".into()),
                "SLACK_TOKEN" => Some("xoxb-local-test".into()),
                "ARGOCD_SERVER" => Some("argocd.example.com".into()),
                "ARGOCD_ROOT_PATH" => Some("/argocd".into()),
                _ => base(name),
            }
        }
        fn channel_only(name: &str) -> Option<String> {
            if name == "SLACK_CHANNEL" { Some("C0123456789".into()) } else { base(name) }
        }
        let env = LambdaEnv::from_lookup(slack).await.unwrap();
        assert!(env.slack_enabled());
        assert_eq!(env.argocd_ui_url().unwrap().as_deref(), Some("https://argocd.example.com/argocd"));
        let s = env.slack().await.unwrap().expect("Slack is configured");
        assert_eq!(s.channel, "C0123456789");
        assert_eq!(s.group_threshold, 2);
        assert_eq!(s.argocd_url.as_deref(), Some("https://argocd.example.com/argocd"));
        let env = LambdaEnv::from_lookup(channel_only).await.unwrap();
        assert!(!env.slack_enabled(), "a channel without a token is not enough");
    }

    /// Every number reads with one grammar and a bad one is named. SLACK_POST_INTERVAL_MS was
    /// parsed on its own and a value that was no number was silently replaced by the default.
    #[tokio::test]
    async fn a_malformed_slack_post_interval_is_named_not_ignored() {
        fn slack(name: &str, interval: &str) -> Option<String> {
            match name {
                "SLACK_CHANNEL" => Some("C0123456789".into()),
                "SLACK_TOKEN" => Some("xoxb-local-test".into()),
                "SLACK_POST_INTERVAL_MS" => Some(interval.into()),
                _ => base(name),
            }
        }
        fn bad(name: &str) -> Option<String> {
            slack(name, "1s")
        }
        fn scaled(name: &str) -> Option<String> {
            slack(name, " 100 ")
        }
        let err = LambdaEnv::from_lookup(bad).await.unwrap().slack().await.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("`SLACK_POST_INTERVAL_MS`") && err.contains("`1s` is not a number"), "{err}");
        let s = LambdaEnv::from_lookup(scaled).await.unwrap().slack().await.unwrap().expect("Slack is configured");
        assert_eq!(s.post_interval, Duration::from_millis(100));
    }

    #[tokio::test]
    async fn a_missing_or_malformed_setting_is_named() {
        fn no_queue(name: &str) -> Option<String> {
            if name == "QUEUE_URL" { None } else { base(name) }
        }
        fn bad_flag(name: &str) -> Option<String> {
            if name == "MEDIC_DRY_RUN" { Some("maybe".into()) } else { base(name) }
        }
        fn bad_policy(name: &str) -> Option<String> {
            if name == "MEDIC_POLICY_CONFIG" { Some(r#"{"max_prun": 2}"#.into()) } else { base(name) }
        }
        assert_eq!(LambdaEnv::from_lookup(no_queue).await.unwrap_err().to_string(), "environment variable `QUEUE_URL` is required");
        // Each function reads its own settings in its `from_env`, at cold start.
        assert!(LambdaEnv::from_lookup(bad_flag).await.unwrap().dry_run().unwrap_err().to_string().contains("`MEDIC_DRY_RUN`: `maybe`"));
        assert!(LambdaEnv::from_lookup(bad_policy).await.unwrap().policy().unwrap_err().to_string().contains("max_prun"));
        let env = LambdaEnv::from_lookup(base).await.unwrap();
        assert_eq!(
            env.argo_client().await.err().map(|e| e.to_string()).as_deref(),
            Some("environment variable `ARGOCD_SERVER` is required")
        );
    }
}

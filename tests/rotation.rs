//! Secrets rotated without a redeploy: the Argo CD token is read again from Secrets Manager (moto
//! on 127.0.0.1) when Argo CD (the simulator) answers 401, and the call is retried once with the
//! new token; a second rejection within a minute does not read the secret again. The same for the
//! Slack bot token on `invalid_auth` (the Slack simulator).

use std::collections::HashMap;
use std::sync::OnceLock;

use medic_adapters::lambda_env::LambdaEnv;
use medic_core::ports::{ArgoApi, ArgoError};
use medic_sim::moto::{moto, unique};
use medic_sim::{DEFAULT_SUBJECT, SLACK_BOT_TOKEN, SLACK_CHANNEL, SimConfig, SlackSim, SlackSimConfig, TokenGrant};
use medic_slack::AnyEscalator;
use medic_slack::blocks::Rendered;

use crate::support::{app, default_token, sim_with_samples};

static ENV: OnceLock<HashMap<&'static str, String>> = OnceLock::new();

fn lookup(name: &str) -> Option<String> {
    ENV.get().and_then(|env| env.get(name).cloned())
}

static SLACK_ENV: OnceLock<HashMap<&'static str, String>> = OnceLock::new();

fn slack_lookup(name: &str) -> Option<String> {
    SLACK_ENV.get().and_then(|env| env.get(name).cloned())
}

fn grant(token: &str) -> TokenGrant {
    TokenGrant { token: token.into(), subject: DEFAULT_SUBJECT.into(), expired: false }
}

#[tokio::test]
async fn a_rotated_argo_cd_token_is_read_again_after_a_401_and_the_call_succeeds() {
    let sdk = medic_adapters::aws::sdk_config(Some(&moto().url)).await;
    let secrets = aws_sdk_secretsmanager::Client::new(&sdk);
    let arn = secrets.create_secret().name(unique("argocd-token")).secret_string(default_token()).send().await.unwrap().arn.unwrap();
    let argo = sim_with_samples(SimConfig::default()).await;
    ENV.set(HashMap::from([
        ("AWS_ENDPOINT_URL", moto().url.clone()),
        ("MEDIC_INSTANCE_ID", "rotation".to_owned()),
        ("QUEUE_URL", "http://127.0.0.1:1/queue/unused".to_owned()),
        ("TABLE_NAME", "unused".to_owned()),
        ("ARGOCD_SERVER", argo.base_url()),
        ("ARGOCD_AUTH_TOKEN_SECRET_ARN", arn.clone()),
    ]))
    .unwrap();
    let env = LambdaEnv::from_lookup(lookup).await.unwrap();
    let client = env.argo_client().await.unwrap();
    let accounts = app("accounts", "payments");
    client.get_app(&accounts).await.expect("the first token works");

    // The account's token is rotated: Argo CD accepts only the new one, and the secret holds it.
    argo.set_tokens(vec![grant("rotated.argo-cd.token")]);
    secrets.put_secret_value().secret_id(&arn).secret_string("rotated.argo-cd.token\n").send().await.unwrap();
    argo.clear_requests();
    client.get_app(&accounts).await.expect("a 401, the secret read again, the call retried with the new token");
    assert_eq!(client.token_source().reads(), 1);
    assert_eq!(argo.requests().len(), 2, "the rejected call and its one retry");

    // Rotated again within the minute: the secret is not read again, the 401 stands.
    argo.set_tokens(vec![grant("rotated.again.token")]);
    secrets.put_secret_value().secret_id(&arn).secret_string("rotated.again.token").send().await.unwrap();
    let err = client.get_app(&accounts).await.unwrap_err();
    assert!(matches!(err, ArgoError::Unauthenticated(_)), "{err:?}");
    assert_eq!(client.token_source().reads(), 1, "at most one read a minute per container");
}

#[tokio::test]
async fn a_rotated_slack_token_is_read_again_after_invalid_auth_and_the_post_goes_through() {
    let sdk = medic_adapters::aws::sdk_config(Some(&moto().url)).await;
    let secrets = aws_sdk_secretsmanager::Client::new(&sdk);
    let arn = secrets.create_secret().name(unique("slack-token")).secret_string(SLACK_BOT_TOKEN).send().await.unwrap().arn.unwrap();
    let slack = SlackSim::start(SlackSimConfig::default()).await.unwrap();
    SLACK_ENV
        .set(HashMap::from([
            ("AWS_ENDPOINT_URL", moto().url.clone()),
            ("MEDIC_INSTANCE_ID", "rotation".to_owned()),
            ("QUEUE_URL", "http://127.0.0.1:1/queue/unused".to_owned()),
            ("TABLE_NAME", "unused".to_owned()),
            ("SLACK_CHANNEL", SLACK_CHANNEL.to_owned()),
            ("SLACK_TOKEN_SECRET_ARN", arn.clone()),
            ("SLACK_API_URL", slack.api_url()),
        ]))
        .unwrap();
    let env = LambdaEnv::from_lookup(slack_lookup).await.unwrap();
    let AnyEscalator::Slack(escalator) = medic_stack::lambda::escalator(&env).await.unwrap() else { panic!("Slack is configured") };
    let client = &escalator.client;
    let message = Rendered { text: "rotation test".into(), blocks: Vec::new() };

    slack.set_tokens(vec!["xoxb-rotated".into()]);
    secrets.put_secret_value().secret_id(&arn).secret_string("xoxb-rotated").send().await.unwrap();
    client.post_message(SLACK_CHANNEL, None, &message, None).await.expect("invalid_auth, the secret read again, posted");
    assert_eq!(client.token_source().reads(), 1);
    assert_eq!(slack.messages(SLACK_CHANNEL).len(), 1, "posted once");

    slack.set_tokens(vec!["xoxb-rotated-again".into()]);
    secrets.put_secret_value().secret_id(&arn).secret_string("xoxb-rotated-again").send().await.unwrap();
    let err = client.post_message(SLACK_CHANNEL, None, &message, None).await.unwrap_err();
    assert!(err.to_string().contains("invalid_auth"), "{err}");
    assert_eq!(client.token_source().reads(), 1, "not read again within a minute");
}

/// Counts the Secrets Manager reads a `LambdaEnv`'s clients make.
#[derive(Debug, Default, Clone)]
struct SecretReads(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl aws_sdk_dynamodb::config::Intercept for SecretReads {
    fn name(&self) -> &'static str {
        "SecretReads"
    }

    fn read_before_serialization(
        &self,
        _ctx: &aws_sdk_dynamodb::config::interceptors::BeforeSerializationInterceptorContextRef<'_>,
        _components: &aws_sdk_dynamodb::config::RuntimeComponents,
        cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        if cfg.load::<aws_smithy_runtime_api::client::orchestrator::Metadata>().is_some_and(|m| m.name() == "GetSecretValue") {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        Ok(())
    }
}

static SHARED_ENV: OnceLock<HashMap<&'static str, String>> = OnceLock::new();

fn shared_lookup(name: &str) -> Option<String> {
    SHARED_ENV.get().and_then(|env| env.get(name).cloned())
}

/// Several of the functions' secrets in one Secrets Manager secret (`ARN#key`, docs/cost.md):
/// each value is found under its key, the secret is read once for all of them, and a rotated
/// token is read again from its key after a 401.
#[tokio::test]
async fn secrets_sharing_one_json_secret_are_read_once_and_a_rotated_token_from_its_key() {
    let sdk = medic_adapters::aws::sdk_config(Some(&moto().url)).await;
    let secrets = aws_sdk_secretsmanager::Client::new(&sdk);
    let document = |token: &str| {
        serde_json::json!({"argocd": token, "workItemKey": "a-work-item-key-of-at-least-thirty-two-bytes",
                           "webhook": {"current": "hook-secret-now", "previous": "hook-secret-before"}})
        .to_string()
    };
    let arn =
        secrets.create_secret().name(unique("argo-medic")).secret_string(document(&default_token())).send().await.unwrap().arn.unwrap();
    let argo = sim_with_samples(SimConfig::default()).await;
    SHARED_ENV
        .set(HashMap::from([
            ("AWS_ENDPOINT_URL", moto().url.clone()),
            ("MEDIC_INSTANCE_ID", "shared-secret".to_owned()),
            ("QUEUE_URL", "http://127.0.0.1:1/queue/unused".to_owned()),
            ("TABLE_NAME", "unused".to_owned()),
            ("ARGOCD_SERVER", argo.base_url()),
            ("ARGOCD_AUTH_TOKEN_SECRET_ARN", format!("{arn}#argocd")),
            ("WORK_ITEM_KEY_SECRET_ARN", format!("{arn}#workItemKey")),
            ("WEBHOOK_SECRET_ARN", format!("{arn}#webhook")),
        ]))
        .unwrap();
    let reads = SecretReads::default();
    let env = LambdaEnv::from_lookup(shared_lookup).await.unwrap().with_interceptor(reads.clone());
    let (client, key, webhook) = tokio::try_join!(env.argo_client(), env.work_item_key(), env.webhook_secret()).unwrap();
    assert_eq!(reads.0.load(std::sync::atomic::Ordering::SeqCst), 1, "three values, one read");
    let webhook: serde_json::Value = serde_json::from_str(&webhook).unwrap();
    assert_eq!(webhook["previous"], "hook-secret-before", "a rotation document is handed on whole");
    assert!(format!("{key:?}").contains("redacted"));
    let accounts = app("accounts", "payments");
    client.get_app(&accounts).await.expect("the token under `argocd` works");

    // Rotated inside the shared secret: a 401, the secret read again, the token taken from its key.
    argo.set_tokens(vec![grant("rotated.shared.token")]);
    secrets.put_secret_value().secret_id(&arn).secret_string(document("rotated.shared.token")).send().await.unwrap();
    client.get_app(&accounts).await.expect("the rotated token, from its key");
    assert_eq!(client.token_source().reads(), 1);

    let missing = LambdaEnv::from_lookup(shared_lookup).await.unwrap();
    let err = missing.secret(Some(&format!("{arn}#slack")), &medic_adapters::settings::SLACK_TOKEN).await.unwrap_err().to_string();
    assert!(err.contains("no key `slack`"), "{err}");
}

/// A token that expires within `MEDIC_TOKEN_EXPIRY_WARNING_DAYS` (7): every sweep publishes the
/// days left (`ArgoTokenDaysLeft`, the alarm's metric) and the first of the day tells Slack; the
/// next sweep does not tell again. Rotated in its secret, the sweeper reads it again although the
/// old one still works (it would never see a 401), and the warning ends with the next sweep.
#[tokio::test]
async fn a_token_about_to_expire_is_told_once_a_day_until_a_rotation_in_its_secret_ends_it() {
    let stack = crate::support::slack::stack().await;
    let now = chrono::Utc::now();
    let expiring = TokenGrant::expiring(DEFAULT_SUBJECT, now + chrono::TimeDelta::days(3));
    stack.argo.set_tokens(vec![expiring.clone()]);
    let sdk = medic_adapters::aws::sdk_config(Some(&moto().url)).await;
    let secrets = aws_sdk_secretsmanager::Client::new(&sdk);
    let arn = secrets.create_secret().name(unique("argocd-token")).secret_string(&expiring.token).send().await.unwrap().arn.unwrap();
    // The secret as the functions read it (GetSecretValue), without the minute between reads.
    let refresher: medic_adapters::token::Refresher = {
        let (secrets, arn) = (secrets.clone(), arn.clone());
        std::sync::Arc::new(move || {
            let (secrets, arn) = (secrets.clone(), arn.clone());
            Box::pin(async move {
                let value = secrets.get_secret_value().secret_id(arn).send().await.map_err(|e| e.to_string())?;
                value.secret_string.ok_or_else(|| "no string".to_owned())
            })
        })
    };
    let source = medic_adapters::token::TokenSource::refreshing(&expiring.token, refresher).with_min_interval(std::time::Duration::ZERO);
    let client = medic_adapters::argocd::HttpArgoClient::with_token_source(
        crate::support::settings(&stack.argo, &expiring.token),
        Default::default(),
        source,
    )
    .unwrap();
    let sweeper = stack.sweeper_reading(client, std::time::Duration::from_secs(900));
    let warnings =
        || stack.slack.messages(crate::support::slack::CH).into_iter().filter(|m| m.text.contains("Argo CD token expires in")).count();

    sweeper.run().await.unwrap();
    let left = sweeper.metrics.total("ArgoTokenDaysLeft");
    assert!((2.99..3.0).contains(&left), "{left}");
    assert_eq!(warnings(), 1, "told in Slack: {:?}", stack.slack.messages(crate::support::slack::CH));
    sweeper.run().await.unwrap();
    assert_eq!(warnings(), 1, "once a day, not every sweep");

    // Rotated: Argo CD takes both tokens (the old one has not expired), the secret holds the new one.
    let rotated = TokenGrant::expiring(DEFAULT_SUBJECT, now + chrono::TimeDelta::days(90));
    stack.argo.set_tokens(vec![expiring, rotated.clone()]);
    secrets.put_secret_value().secret_id(&arn).secret_string(&rotated.token).send().await.unwrap();
    sweeper.run().await.unwrap();
    let left = sweeper.metrics.total("ArgoTokenDaysLeft");
    assert!((89.99..90.0).contains(&left), "the rotated token's days: {left}");
    assert_eq!(sweeper.argo.token_source().reads(), 3, "read again on every sweep while the token was close to its expiry");
    sweeper.run().await.unwrap();
    assert_eq!(sweeper.argo.token_source().reads(), 3, "90 days left: not read again");
    assert_eq!(warnings(), 1);
}

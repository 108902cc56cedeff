//! `medic check` against the Argo CD simulator: each way a deploy day goes wrong (an expired or
//! unknown token, missing RBAC, plain HTTP, something that is not Argo CD's API, argocd-notifications
//! without Argo Medic's service) is found, and its finding says what to do.

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use medic::check::{CheckOptions, Finding, Route, Status, check};
use medic_adapters::config::ArgoSettings;
use medic_sim::{ArgoSim, Notifications, Policy, SimConfig, TokenGrant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn options(server: String, token: &str, plaintext: bool) -> CheckOptions {
    let mut argo = ArgoSettings::new(server, token);
    argo.plaintext = plaintext;
    CheckOptions {
        argo,
        projects: Vec::new(),
        may_sync: true,
        route: Route::Any,
        expiry_warning: Duration::from_secs(7 * 86_400),
        now: Utc::now(),
    }
}

/// A simulator whose one token expires at `expires` (from now), and `config` otherwise.
async fn start_sim(expires: TimeDelta, config: SimConfig) -> (ArgoSim, String) {
    let grant = TokenGrant::expiring("argo-medic", Utc::now() + expires);
    let token = grant.token.clone();
    let sim = ArgoSim::start(SimConfig { tokens: vec![grant], ..config }).await.unwrap();
    (sim, token)
}

fn of<'a>(findings: &'a [Finding], check: &str, status: Status) -> Vec<&'a Finding> {
    findings.iter().filter(|f| f.check == check && f.status == status).collect()
}

fn failures(findings: &[Finding]) -> Vec<&Finding> {
    findings.iter().filter(|f| f.status == Status::Fail).collect()
}

#[tokio::test]
async fn a_good_token_with_its_rbac_and_notifications_passes_and_its_expiry_is_printed() {
    let (sim, token) = start_sim(TimeDelta::days(90), SimConfig::default()).await;
    let findings = check(&options(sim.base_url(), &token, true)).await;
    assert!(failures(&findings).is_empty(), "{findings:#?}");
    let token_ok = of(&findings, "token", Status::Ok);
    assert!(token_ok.len() == 1 && token_ok[0].detail.contains("expires at") && token_ok[0].detail.contains("in 89 days"), "{findings:#?}");
    assert_eq!(of(&findings, "rbac", Status::Ok).len(), 2, "get and sync: {findings:#?}");
    assert_eq!(of(&findings, "notifications", Status::Ok).len(), 2, "{findings:#?}");
    // The simulator speaks plain HTTP: allowed, and said.
    let plain = of(&findings, "argo-cd", Status::Warn);
    assert!(plain.len() == 1 && plain[0].detail.contains("v3.5.1") && plain[0].detail.contains("plain HTTP"), "{findings:#?}");
    // A token close to its end warns.
    let (soon, token) = start_sim(TimeDelta::days(3), SimConfig::default()).await;
    let findings = check(&options(soon.base_url(), &token, true)).await;
    assert_eq!(of(&findings, "token", Status::Warn).len(), 1, "{findings:#?}");
}

#[tokio::test]
async fn an_expired_token_fails_locally_and_at_argo_cd_with_how_to_mint_one() {
    let (sim, token) = start_sim(TimeDelta::days(-1), SimConfig::default()).await;
    let findings = check(&options(sim.base_url(), &token, true)).await;
    let token_fail = of(&findings, "token", Status::Fail);
    assert!(token_fail.len() == 1 && token_fail[0].detail.contains("expired at"), "{findings:#?}");
    assert!(token_fail[0].fix.as_deref().unwrap().contains("argocd account generate-token"));
    let rejected = of(&findings, "rbac", Status::Fail);
    assert!(rejected.len() == 1 && rejected[0].detail.contains("token is expired"), "{findings:#?}");
}

#[tokio::test]
async fn a_token_argo_cd_does_not_know_is_rejected() {
    let (sim, _) = start_sim(TimeDelta::days(90), SimConfig::default()).await;
    let stranger = medic_sim::token_for("someone-else");
    let findings = check(&options(sim.base_url(), &stranger, true)).await;
    let rejected = of(&findings, "rbac", Status::Fail);
    assert!(rejected.len() == 1 && rejected[0].detail.contains("rejected the token"), "{findings:#?}");
    // Not a JWT at all: said before any call.
    let findings = check(&options(sim.base_url(), "hunter2", true)).await;
    assert!(of(&findings, "token", Status::Fail)[0].detail.contains("not a JWT"), "{findings:#?}");
}

#[tokio::test]
async fn missing_rbac_names_the_policy_line_to_add_per_project() {
    let config = SimConfig { policies: vec![Policy::new("argo-medic", "get", "payments")], ..SimConfig::default() };
    let (sim, token) = start_sim(TimeDelta::days(90), config).await;
    let mut o = options(sim.base_url(), &token, true);
    o.projects = vec!["payments".into(), "checkout".into()];
    let findings = check(&o).await;
    let fails: Vec<&str> = of(&findings, "rbac", Status::Fail).iter().map(|f| f.detail.as_str()).collect();
    assert_eq!(
        fails,
        ["may not sync applications payments/*", "may not get applications checkout/*", "may not sync applications checkout/*"]
    );
    let fix = of(&findings, "rbac", Status::Fail)[0].fix.clone().unwrap();
    assert!(fix.contains("p, role:argo-medic, applications, sync, payments/*, allow"), "{fix}");
    assert_eq!(of(&findings, "rbac", Status::Ok)[0].detail, "may get applications payments/*");
    // A deployment that never syncs needs only get.
    o.projects = vec!["payments".into()];
    o.may_sync = false;
    assert!(failures(&check(&o).await).is_empty());
}

#[tokio::test]
async fn https_to_a_plain_http_server_says_to_set_argocd_plaintext() {
    let (sim, token) = start_sim(TimeDelta::days(90), SimConfig::default()).await;
    let server = sim.base_url().trim_start_matches("http://").trim_end_matches('/').to_owned();
    let findings = check(&options(server, &token, false)).await;
    let failed = of(&findings, "argo-cd", Status::Fail);
    assert!(failed.len() == 1, "{findings:#?}");
    assert!(failed[0].fix.as_deref().unwrap().contains("ARGOCD_PLAINTEXT=true"), "{findings:#?}");
    assert!(findings.iter().all(|f| f.check != "rbac"), "nothing asked of a server not reached: {findings:#?}");
}

#[tokio::test]
async fn a_server_answering_html_is_not_taken_for_argo_cd() {
    // An ingress that serves the UI's index.html for every path.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buf = vec![0u8; 4096];
            let _ = stream.read(&mut buf).await;
            let body = "<!doctype html><html><head><title>Argo CD</title></head><body></body></html>";
            let head = format!("HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len());
            let _ = stream.write_all(format!("{head}{body}").as_bytes()).await;
        }
    });
    let findings = check(&options(format!("http://{addr}"), &medic_sim::token_for("argo-medic"), true)).await;
    let failed = of(&findings, "argo-cd", Status::Fail);
    assert!(failed.len() == 1 && failed[0].detail.contains("not as Argo CD's API does"), "{findings:#?}");
    assert!(failed[0].fix.as_deref().unwrap().contains("ARGOCD_ROOT_PATH"));
}

#[tokio::test]
async fn argocd_notifications_without_argo_medic_s_service_or_triggers_fails_with_the_file_to_apply() {
    let config = SimConfig {
        notifications: Notifications { services: vec!["slack".into()], triggers: vec!["on-sync-failed".into()] },
        ..SimConfig::default()
    };
    let (sim, token) = start_sim(TimeDelta::days(90), config).await;
    let findings = check(&options(sim.base_url(), &token, true)).await;
    let failed = of(&findings, "notifications", Status::Fail);
    assert_eq!(failed.len(), 2, "{findings:#?}");
    assert!(failed[0].detail.contains("no service argo-medic or argo-medic-sqs (it has: slack)"), "{findings:#?}");
    assert!(failed[1].detail.contains("argo-medic-on-sync-failed"), "{findings:#?}");
    assert!(failed[0].fix.as_deref().unwrap().contains("argocd-notifications-cm.yaml"));
    // The awssqs route wants its own service.
    let config = SimConfig {
        notifications: Notifications { services: vec!["argo-medic".into()], ..Notifications::default() },
        ..SimConfig::default()
    };
    let (sim, token) = start_sim(TimeDelta::days(90), config).await;
    let mut o = options(sim.base_url(), &token, true);
    o.route = Route::Awssqs;
    assert_eq!(of(&check(&o).await, "notifications", Status::Fail).len(), 1);
}

/// The parts of a deployed stack `medic check --stack` reads, as CloudFormation in moto keeps
/// them: the names are template.yaml's (held by the test below), the resources the few that
/// moto's CloudFormation builds for real.
const STACK_TEMPLATE: &str = r#"{
  "Parameters": {
    "InstanceId": {"Type": "String"}, "ArgoCdServer": {"Type": "String"},
    "ArgoCdPlaintext": {"Type": "String"}, "ArgoCdTokenSecretArn": {"Type": "String"},
    "SlackTokenSecretArn": {"Type": "String", "Default": ""}, "DryRun": {"Type": "String"},
    "KillSwitch": {"Type": "String", "Default": "off"}, "PolicyConfig": {"Type": "String", "Default": "{}"}
  },
  "Resources": {
    "DeadLetterQueue": {"Type": "AWS::SQS::Queue"},
    "WorkQueue": {"Type": "AWS::SQS::Queue"},
    "StateTable": {"Type": "AWS::DynamoDB::Table", "Properties": {
      "BillingMode": "PAY_PER_REQUEST",
      "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"}],
      "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]}}
  },
  "Outputs": {
    "WorkQueueUrl": {"Value": {"Ref": "WorkQueue"}},
    "DeadLetterQueueUrl": {"Value": {"Ref": "DeadLetterQueue"}},
    "StateTableName": {"Value": {"Ref": "StateTable"}}
  }
}"#;

fn preflight(stack: &str) -> medic::check_stack::Preflight {
    medic::check_stack::Preflight {
        stack: Some(stack.to_owned()),
        endpoint_url: Some(medic_sim::moto::moto().url.clone()),
        projects: None,
        no_sync: false,
        route: Route::Any,
        expiry_warning: Duration::from_secs(7 * 86_400),
        now: Utc::now(),
    }
}

/// `medic check --stack`: a healthy stack passes, Argo CD checked with the token in its secret
/// and the scope of its PolicyConfig; then each thing a stack gets wrong in production is found
/// with what to do: a dead letter, the switch left off, a secret deleted, the table without
/// its TTL; an unknown stack says where to look. Everything in moto and the simulator.
#[tokio::test]
async fn a_deployed_stack_is_checked_with_its_own_token_and_each_broken_part_says_what_to_do() {
    use medic_sim::moto::{moto, unique};
    let sdk = medic_adapters::aws::sdk_config(Some(&moto().url)).await;
    let (cfn, secrets) = (aws_sdk_cloudformation::Client::new(&sdk), aws_sdk_secretsmanager::Client::new(&sdk));
    let (ddb, sqs) = (aws_sdk_dynamodb::Client::new(&sdk), aws_sdk_sqs::Client::new(&sdk));
    let (sim, token) = start_sim(TimeDelta::days(30), SimConfig::default()).await;
    let token_arn =
        secrets.create_secret().name(unique("check-argocd")).secret_string(format!("{token}\n")).send().await.unwrap().arn.unwrap();
    let slack_arn = secrets.create_secret().name(unique("check-slack")).secret_string("xoxb-1").send().await.unwrap().arn.unwrap();
    let name = unique("argo-medic-check");
    let parameter = |k: &str, v: &str| aws_sdk_cloudformation::types::Parameter::builder().parameter_key(k).parameter_value(v).build();
    cfn.create_stack()
        .stack_name(&name)
        .template_body(STACK_TEMPLATE)
        .parameters(parameter("InstanceId", "prod"))
        .parameters(parameter("ArgoCdServer", &sim.base_url()))
        .parameters(parameter("ArgoCdPlaintext", "true"))
        .parameters(parameter("ArgoCdTokenSecretArn", &token_arn))
        .parameters(parameter("SlackTokenSecretArn", &slack_arn))
        .parameters(parameter("DryRun", "false"))
        .parameters(parameter("PolicyConfig", r#"{"projects": ["payments"]}"#))
        .send()
        .await
        .unwrap();
    let outputs: std::collections::BTreeMap<String, String> = cfn.describe_stacks().stack_name(&name).send().await.unwrap().stacks()[0]
        .outputs()
        .iter()
        .map(|o| (o.output_key().unwrap().to_owned(), o.output_value().unwrap().to_owned()))
        .collect();
    let table = &outputs["StateTableName"];
    let ttl = aws_sdk_dynamodb::types::TimeToLiveSpecification::builder().attribute_name("expires_at").enabled(true).build().unwrap();
    ddb.update_time_to_live().table_name(table).time_to_live_specification(ttl).send().await.unwrap();

    let findings = medic::check_stack::preflight(preflight(&name), || Err::<ArgoSettings, ()>(())).await.unwrap();
    assert!(failures(&findings).is_empty(), "{findings:#?}");
    for check in ["stack", "secrets", "switch", "queue", "dlq", "table", "token"] {
        assert_eq!(of(&findings, check, Status::Ok).len(), 1, "{check}: {findings:#?}");
    }
    let secrets_ok = &of(&findings, "secrets", Status::Ok)[0].detail;
    // (The secret the stack makes itself, the work-item key, is found among its resources; moto's
    // CloudFormation cannot make an AWS::SecretsManager::Secret, so it is not in this stack.)
    assert!(secrets_ok.contains("ArgoCdTokenSecretArn, SlackTokenSecretArn"), "{secrets_ok}");
    let rbac: Vec<&str> = of(&findings, "rbac", Status::Ok).iter().map(|f| f.detail.as_str()).collect();
    assert!(rbac.len() == 2 && rbac.iter().all(|d| d.contains("payments")), "get and sync on PolicyConfig's project: {rbac:?}");

    // What goes wrong after a deploy.
    sqs.send_message().queue_url(&outputs["DeadLetterQueueUrl"]).message_body("{}").send().await.unwrap();
    let store = medic_adapters::dynamodb::DynamoDbStore::new(ddb.clone(), table, "prod");
    medic_core::switch::SwitchStore::write_mode(&store, medic_core::switch::Mode::Off, "carol").await.unwrap();
    secrets.delete_secret().secret_id(&slack_arn).force_delete_without_recovery(true).send().await.unwrap();
    ddb.update_time_to_live()
        .table_name(table)
        .time_to_live_specification(
            aws_sdk_dynamodb::types::TimeToLiveSpecification::builder().attribute_name("expires_at").enabled(false).build().unwrap(),
        )
        .send()
        .await
        .unwrap();
    let findings = medic::check_stack::preflight(preflight(&name), || Err::<ArgoSettings, ()>(())).await.unwrap();
    let dlq = of(&findings, "dlq", Status::Fail);
    assert!(dlq.len() == 1 && dlq[0].detail.contains("1 message") && dlq[0].fix.as_deref().unwrap().contains("runbook"), "{findings:#?}");
    let off = of(&findings, "switch", Status::Warn);
    assert!(
        off.len() == 1 && off[0].detail.contains("off (set by carol") && off[0].fix.as_deref().unwrap().contains("medic switch act"),
        "{findings:#?}"
    );
    let gone = of(&findings, "secrets", Status::Fail);
    assert!(gone.len() == 1 && gone[0].detail.starts_with("SlackTokenSecretArn"), "{findings:#?}");
    assert_eq!(of(&findings, "table", Status::Warn).len(), 1, "{findings:#?}");
    assert_eq!(of(&findings, "rbac", Status::Ok).len(), 2, "Argo CD is still checked: {findings:#?}");

    let unknown = medic::check_stack::preflight(preflight("no-such-stack"), || Err::<ArgoSettings, ()>(())).await.unwrap();
    assert_eq!(unknown.len(), 1, "{unknown:#?}");
    assert!(unknown[0].status == Status::Fail && unknown[0].fix.as_deref().unwrap().contains("region"), "{unknown:#?}");
}

/// The parameters and outputs `medic check --stack` reads are template.yaml's.
#[test]
fn the_stack_names_medic_check_reads_are_the_template_s() {
    let template = std::fs::read_to_string(crate::support::events_dir().join("../template.yaml")).unwrap();
    let doc: serde_norway::Value = serde_norway::from_str(&template).unwrap();
    let missing: Vec<&&str> =
        medic::check_stack::READS.iter().filter(|n| doc["Parameters"].get(**n).is_none() && doc["Outputs"].get(**n).is_none()).collect();
    assert!(missing.is_empty(), "not in template.yaml's Parameters or Outputs: {missing:?}");
}

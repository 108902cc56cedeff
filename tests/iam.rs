//! IAM conformance: every AWS call a function makes is granted to that function's role in
//! template.yaml, on the resource it names, and every action a role is granted is one its function
//! makes (least privilege). moto does not enforce IAM, so without this test a missing grant shows
//! up only on AWS (a claim's `ConditionCheck` inside `TransactWriteItems` needs
//! `dynamodb:ConditionCheckItem`, which no other test could notice).
//!
//! The functions are built exactly as their `main` builds them (`from_env` on a `LambdaEnv` read
//! from the template's variable names), every AWS client carrying a recording SDK interceptor, and
//! driven through a sweep, webhooks, remediation up the ladder, a Slack escalation and a button
//! click, against moto (SQS, DynamoDB, Secrets Manager), the Argo CD simulator and the Slack
//! simulator. The fixture's own calls (creating the table, receiving for the event source) use
//! clients without the recorder.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents, interceptors::BeforeSerializationInterceptorContextRef};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use chrono::Utc;
use medic_adapters::config::Settings;
use medic_adapters::dynamodb::create_table;
use medic_adapters::lambda_env::LambdaEnv;
use medic_adapters::settings::{self, Origin, Reader};
use medic_core::event::{AppRef, WorkItem, WorkKind};
use medic_sim::moto::{moto, unique};
use medic_sim::{SLACK_BOT_TOKEN, SLACK_CHANNEL, SimConfig, SlackSim, SlackSimConfig};
use serde_norway::Value as Yaml;

use crate::support::{default_token, events_dir, receive, sim_with_samples, sqs_record};

const WEBHOOK_SECRET: &str = "iam-test-webhook-secret-not-for-production";
const SIGNING_SECRET: &str = "iam-test-slack-signing-secret-not-for-production";
const ALICE: &str = "U0ALICE001";

/// Actions the platform performs with a function's role rather than the function's code: they
/// are granted but never appear among the calls the code makes.
fn platform_actions(function: &str) -> BTreeSet<&'static str> {
    let mut actions = BTreeSet::from([
        // The Lambda service writes the function's logs.
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        // VPC attachment (only with SubnetIds): Lambda manages the ENIs.
        "ec2:CreateNetworkInterface",
        "ec2:DescribeNetworkInterfaces",
        "ec2:DescribeSubnets",
        "ec2:DeleteNetworkInterface",
        "ec2:AssignPrivateIpAddresses",
        "ec2:UnassignPrivateIpAddresses",
        // Active tracing: the Lambda service sends the segments.
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
        // A customer-managed key on the secrets: Secrets Manager decrypts on the caller's behalf
        // (kms:ViaService); moto does not model it.
        "kms:Decrypt",
    ]);
    if function == "worker" {
        // The SQS event source mapping polls, deletes and extends with the function's role.
        actions.extend(["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"]);
    }
    actions
}

/// One call as IAM authorises it: the action and the resource it names (a template logical id or
/// parameter name, resolved from the table name, queue URL or secret ARN).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Call {
    action: String,
    resource: String,
}

/// An SDK interceptor that records every operation, with the IAM actions a transaction's items
/// need (`TransactWriteItems` is authorised item by item).
#[derive(Debug, Clone, Default)]
struct CallLog {
    calls: Arc<Mutex<BTreeSet<Call>>>,
    /// Physical names (table, queue URL, secret ARN) → the template's names.
    names: Arc<HashMap<String, String>>,
}

impl CallLog {
    fn new(names: &HashMap<String, String>) -> Self {
        Self { calls: Arc::default(), names: Arc::new(names.clone()) }
    }

    fn calls(&self) -> BTreeSet<Call> {
        self.calls.lock().unwrap().clone()
    }

    fn record(&self, action: String, physical: Option<&str>) {
        let resource = physical.map_or_else(|| "?".to_owned(), |p| self.names.get(p).cloned().unwrap_or_else(|| format!("unknown:{p}")));
        self.calls.lock().unwrap().insert(Call { action, resource });
    }
}

impl Intercept for CallLog {
    fn name(&self) -> &'static str {
        "IamCallLog"
    }

    // Not `read_before_execution`: a client's interceptors run that before the operation's
    // configuration (its name) is in the bag.
    fn read_before_serialization(
        &self,
        ctx: &BeforeSerializationInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let meta = cfg.load::<Metadata>().ok_or("an SDK operation without metadata")?;
        let input = ctx.input();
        match meta.service() {
            "DynamoDB" => {
                use aws_sdk_dynamodb::operation::*;
                macro_rules! table_of {
                    ($($m:ident :: $t:ident),*) => {{
                        let mut table = None;
                        $(if let Some(i) = input.downcast_ref::<$m::$t>() { table = i.table_name().map(str::to_owned); })*
                        table
                    }};
                }
                if let Some(t) = input.downcast_ref::<transact_write_items::TransactWriteItemsInput>() {
                    for item in t.transact_items() {
                        if let Some(p) = item.put() {
                            self.record("dynamodb:PutItem".into(), Some(p.table_name()));
                        }
                        if let Some(u) = item.update() {
                            self.record("dynamodb:UpdateItem".into(), Some(u.table_name()));
                        }
                        if let Some(d) = item.delete() {
                            self.record("dynamodb:DeleteItem".into(), Some(d.table_name()));
                        }
                        if let Some(c) = item.condition_check() {
                            self.record("dynamodb:ConditionCheckItem".into(), Some(c.table_name()));
                        }
                    }
                    return Ok(());
                }
                // Batch reads name their tables as the keys of `RequestItems`: one call, one
                // authorisation per table.
                if let Some(b) = input.downcast_ref::<batch_get_item::BatchGetItemInput>() {
                    for table in b.request_items().into_iter().flat_map(|items| items.keys()) {
                        self.record("dynamodb:BatchGetItem".into(), Some(table));
                    }
                    return Ok(());
                }
                let table = table_of!(
                    get_item::GetItemInput,
                    put_item::PutItemInput,
                    update_item::UpdateItemInput,
                    delete_item::DeleteItemInput,
                    query::QueryInput,
                    scan::ScanInput
                );
                self.record(format!("dynamodb:{}", meta.name()), table.as_deref());
            }
            "SQS" => {
                use aws_sdk_sqs::operation::*;
                let url = input
                    .downcast_ref::<send_message::SendMessageInput>()
                    .and_then(|i| i.queue_url())
                    .or_else(|| input.downcast_ref::<send_message_batch::SendMessageBatchInput>().and_then(|i| i.queue_url()))
                    .or_else(|| input.downcast_ref::<receive_message::ReceiveMessageInput>().and_then(|i| i.queue_url()))
                    .or_else(|| input.downcast_ref::<delete_message::DeleteMessageInput>().and_then(|i| i.queue_url()))
                    .or_else(|| input.downcast_ref::<get_queue_attributes::GetQueueAttributesInput>().and_then(|i| i.queue_url()));
                // Batch calls are authorised by their single-message actions.
                let action = meta.name().trim_end_matches("Batch");
                self.record(format!("sqs:{action}"), url);
            }
            "Secrets Manager" | "SecretsManager" => {
                let id = input
                    .downcast_ref::<aws_sdk_secretsmanager::operation::get_secret_value::GetSecretValueInput>()
                    .and_then(|i| i.secret_id());
                self.record(format!("secretsmanager:{}", meta.name()), id);
            }
            other => self.record(format!("{other}:{}", meta.name()), None),
        }
        Ok(())
    }
}

// --- the template's grants ---------------------------------------------------------------------

/// The names a resource expression can grant: `!GetAtt X.Arn` → X, `!Ref P` → P, `"*"`, both
/// branches of an `!If`, every element of a list.
fn resource_names(v: &Yaml) -> BTreeSet<String> {
    match v {
        Yaml::String(s) => BTreeSet::from([s.clone()]),
        Yaml::Sequence(items) => items.iter().flat_map(resource_names).collect(),
        Yaml::Tagged(t) => match (t.tag.to_string().trim_start_matches('!'), &t.value) {
            ("GetAtt", Yaml::String(s)) => BTreeSet::from([s.split('.').next().unwrap().to_owned()]),
            ("Ref", Yaml::String(s)) if s == "AWS::NoValue" => BTreeSet::new(),
            ("Ref", Yaml::String(s)) => BTreeSet::from([s.clone()]),
            ("If", Yaml::Sequence(branches)) => branches.iter().skip(1).flat_map(resource_names).collect(),
            // `!Select [0, !Split ["#", !Ref P]]`: the secret's ARN of a reference `ARN#key`.
            ("Select", Yaml::Sequence(args)) if args.len() == 2 => match &args[1] {
                Yaml::Tagged(split) if split.tag.to_string().trim_start_matches('!') == "Split" => {
                    let parts = split.value.as_sequence().expect("!Split [delimiter, value]");
                    assert_eq!(parts[0].as_str(), Some("#"), "a secret reference is split at `#`");
                    resource_names(&parts[1])
                }
                other => panic!("unexpected !Select over {other:?}"),
            },
            (tag, value) => panic!("unexpected resource expression !{tag} {value:?}"),
        },
        other => panic!("unexpected resource expression {other:?}"),
    }
}

/// A role's grants: action → resources. A statement behind an `!If` is granted when its condition
/// holds, so it counts.
fn grants(template: &Yaml, role: &str) -> BTreeMap<String, BTreeSet<String>> {
    let policies = template["Resources"][role]["Properties"]["Policies"].as_sequence().unwrap_or_else(|| panic!("{role} has no policies"));
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for policy in policies {
        for statement in policy["PolicyDocument"]["Statement"].as_sequence().unwrap() {
            let statement = match statement {
                Yaml::Tagged(t) if t.tag.to_string().trim_start_matches('!') == "If" => &t.value.as_sequence().unwrap()[1],
                s => s,
            };
            assert_eq!(statement["Effect"].as_str(), Some("Allow"), "{role}: only Allow statements are expected");
            let actions: Vec<String> = match &statement["Action"] {
                Yaml::String(a) => vec![a.clone()],
                Yaml::Sequence(list) => list.iter().map(|a| a.as_str().unwrap().to_owned()).collect(),
                other => panic!("{role}: unexpected Action {other:?}"),
            };
            let resources = resource_names(&statement["Resource"]);
            for a in actions {
                out.entry(a).or_default().extend(resources.iter().cloned());
            }
        }
    }
    out
}

fn template() -> Yaml {
    let text = std::fs::read_to_string(events_dir().join("../template.yaml")).unwrap();
    serde_norway::from_str(&text).expect("template.yaml parses")
}

/// What `calls` need that `granted` lacks, and what `granted` holds that neither `calls` nor the
/// platform uses.
fn conformance(function: &str, calls: &BTreeSet<Call>, granted: &BTreeMap<String, BTreeSet<String>>) -> (Vec<String>, Vec<String>) {
    let mut missing = Vec::new();
    for c in calls {
        let ok = granted.get(&c.action).is_some_and(|r| r.contains(&c.resource) || r.contains("*"));
        if !ok {
            missing.push(format!("{function}: {} on {} is not granted", c.action, c.resource));
        }
    }
    let platform = platform_actions(function);
    let used: BTreeSet<&str> = calls.iter().map(|c| c.action.as_str()).collect();
    let unused = granted
        .keys()
        .filter(|a| !used.contains(a.as_str()) && !platform.contains(a.as_str()))
        .map(|a| format!("{function}: {a} is granted but never called"))
        .collect();
    (missing, unused)
}

// --- the run -----------------------------------------------------------------------------------

/// The opaque id of the button labelled `label` in a Slack message.
fn button_of(m: &medic_sim::SimMessage, label: &str) -> String {
    let buttons =
        m.blocks.as_array().unwrap().iter().filter(|b| b["type"] == "actions").flat_map(|b| b["elements"].as_array().unwrap().clone());
    let found = buttons.into_iter().find(|e| e["text"]["text"].as_str().unwrap_or_default().starts_with(label));
    found.unwrap_or_else(|| panic!("no {label} button in {}", m.blocks))["value"].as_str().unwrap().to_owned()
}

static ENV: OnceLock<HashMap<&'static str, String>> = OnceLock::new();

fn lookup(name: &str) -> Option<String> {
    ENV.get().expect("environment set").get(name).cloned()
}

#[test]
fn every_aws_call_a_function_makes_is_granted_to_its_role_and_nothing_more_is() {
    // Four functions' futures in one body outgrow a test thread's default stack.
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(|| tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(run_every_function()))
        .unwrap()
        .join()
        .unwrap();
}

async fn run_every_function() {
    // Fixture: moto (queue, DLQ, table, secrets), the Argo CD and Slack simulators.
    let sdk = medic_adapters::aws::sdk_config(Some(&moto().url)).await;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let ddb = aws_sdk_dynamodb::Client::new(&sdk);
    let secrets = aws_sdk_secretsmanager::Client::new(&sdk);
    let queue_url = sqs.create_queue().queue_name(unique("iam-work")).send().await.unwrap().queue_url.unwrap();
    // A queue that is gone, for the failure paths.
    let doomed = sqs.create_queue().queue_name(unique("iam-doomed")).send().await.unwrap().queue_url.unwrap();
    sqs.delete_queue().queue_url(&doomed).send().await.unwrap();
    let table = unique("iam-state");
    create_table(&ddb, &table).await.unwrap();
    let secret =
        async |name: &str, value: &str| secrets.create_secret().name(unique(name)).secret_string(value).send().await.unwrap().arn.unwrap();
    let argo_arn = secret("argocd-token", &default_token()).await;
    let webhook_arn = secret("webhook", &format!(r#"{{"current":"{WEBHOOK_SECRET}"}}"#)).await;
    let refresh_arn = secret("refresh", r#"{"current":"iam-test-refresh-signing-key"}"#).await;
    let slack_token_arn = secret("slack-token", SLACK_BOT_TOKEN).await;
    let signing_arn = secret("slack-signing", SIGNING_SECRET).await;
    let work_key_arn = secret("work-item-key", "iam-test-work-item-key-generated-by-the-stack").await;
    let argo = sim_with_samples(SimConfig::default()).await;
    let slack = SlackSim::start(SlackSimConfig::default()).await.unwrap();

    let names: HashMap<String, String> = HashMap::from([
        (table.clone(), "StateTable".to_owned()),
        (queue_url.clone(), "WorkQueue".to_owned()),
        (doomed.clone(), "WorkQueue".to_owned()),
        (argo_arn.clone(), "ArgoCdTokenSecretArn".to_owned()),
        (webhook_arn.clone(), "WebhookSecretArn".to_owned()),
        (refresh_arn.clone(), "RefreshSecretArn".to_owned()),
        (slack_token_arn.clone(), "SlackTokenSecretArn".to_owned()),
        (signing_arn.clone(), "SlackSigningSecretArn".to_owned()),
        (work_key_arn.clone(), "WorkItemKey".to_owned()),
    ]);
    ENV.set(HashMap::from([
        ("AWS_ENDPOINT_URL", moto().url.clone()),
        ("MEDIC_INSTANCE_ID", "iam".to_owned()),
        ("QUEUE_URL", queue_url.clone()),
        ("TABLE_NAME", table.clone()),
        ("ARGOCD_SERVER", argo.base_url()),
        ("ARGOCD_AUTH_TOKEN_SECRET_ARN", argo_arn),
        ("WEBHOOK_SECRET_ARN", webhook_arn),
        ("REFRESH_SECRET_ARN", refresh_arn),
        ("SLACK_CHANNEL", SLACK_CHANNEL.to_owned()),
        ("SLACK_TOKEN_SECRET_ARN", slack_token_arn),
        ("SLACK_API_URL", slack.api_url()),
        ("SLACK_SIGNING_SECRET_ARN", signing_arn),
        ("WORK_ITEM_KEY_SECRET_ARN", work_key_arn),
        ("SLACK_ALLOWED_USERS", r#"{"*": ["U0ALICE001"]}"#.to_owned()),
        ("MEDIC_DRY_RUN", "false".to_owned()),
        // Judge each action at once, so one run climbs the ladder.
        ("MEDIC_POLICY_CONFIG", r#"{"settle_secs": 0}"#.to_owned()),
    ]))
    .unwrap();
    // Each function reads as itself: a read its row in settings.rs does not declare panics, and
    // what each asked for is compared with what the template gives it below.
    let env = |reader: Reader| async move { LambdaEnv::from_settings(Settings::from_fn(lookup).for_reader(reader)).await.unwrap() };
    let logs: BTreeMap<&str, CallLog> =
        ["ingest", "worker", "sweeper", "slack-actions"].into_iter().map(|f| (f, CallLog::new(&names))).collect();

    let envs: BTreeMap<Reader, LambdaEnv> = {
        let mut envs = BTreeMap::new();
        for reader in Reader::FUNCTIONS {
            envs.insert(reader, env(reader).await.with_interceptor(logs[reader.as_str()].clone()));
        }
        envs
    };
    let ingest = medic_ingest::LambdaIngest::from_env(&envs[&Reader::Ingest]).await.unwrap();
    let worker = medic_worker::LambdaWorker::from_env(&envs[&Reader::Worker]).await.unwrap();
    let sweeper = medic_sweeper::LambdaSweeper::from_env(&envs[&Reader::Sweeper]).await.unwrap();
    let actions = medic_stack::lambda::interactions(&envs[&Reader::SlackActions]).await.unwrap();
    // Init asks Argo CD nothing (it is paid on every cold start); the worker learns the version
    // on its first batch.
    let version_calls = || argo.requests().iter().filter(|r| r.path == "/api/version").count();
    assert_eq!(argo.requests().len(), 0, "no function calls Argo CD at init: {:?}", argo.requests());

    // The event source mapping: receive, invoke, delete what did not fail.
    let poll = async || {
        loop {
            let messages = receive(&sqs, &queue_url).await;
            if messages.is_empty() {
                break;
            }
            let mut event = aws_lambda_events::event::sqs::SqsEvent::default();
            event.records = messages.iter().map(sqs_record).collect();
            let response = worker.handle_batch(event).await.unwrap();
            let failed: BTreeSet<String> = response.batch_item_failures.into_iter().map(|f| f.item_identifier).collect();
            for m in messages.iter().filter(|m| !failed.contains(m.message_id.as_deref().unwrap())) {
                sqs.delete_message().queue_url(&queue_url).receipt_handle(m.receipt_handle.clone().unwrap()).send().await.unwrap();
            }
        }
    };

    // Webhooks, a sweep of the sample fleet, and the worker on everything they enqueued. The
    // second webhook reports an app Argo CD cannot compare: the worker looks for a fleet hold.
    for sample in ["hook-failed.json", "comparison-error-transient.json"] {
        let body = std::fs::read_to_string(events_dir().join("webhook").join(sample)).unwrap();
        let request = lambda_http::http::Request::builder()
            .method("POST")
            .uri("https://ingest.lambda-url.us-east-1.on.aws/v1/events")
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {WEBHOOK_SECRET}"))
            .body(lambda_http::Body::from(body))
            .unwrap();
        assert_eq!(ingest.handle(request).await.status(), 202);
    }
    // A signed refresh by selector: ingest lists the apps, so it reads the Argo CD token then.
    let body = serde_json::json!({"selector": "team=payments", "requestedAt": Utc::now().to_rfc3339(), "requestedBy": "iam"}).to_string();
    let signature = medic_ingest::WebhookSecrets::new("iam-test-refresh-signing-key", None).sign(body.as_bytes());
    let request = lambda_http::http::Request::builder()
        .method("POST")
        .uri("https://ingest.lambda-url.us-east-1.on.aws/v1/refresh")
        .header("content-type", "application/json")
        .header(medic_ingest::SIGNATURE_HEADER, signature)
        .body(lambda_http::Body::from(body))
        .unwrap();
    let refreshed = ingest.handle(request).await;
    assert_eq!(refreshed.status(), 202, "{:?}", refreshed.body());
    let run = sweeper.run().await.unwrap();
    assert!(run.enqueued > 5, "{run:?}");
    // Ingest's list (the refresh by selector) and the sweeper's each ask once per container, for
    // the list mask that version honours (docs/argo-cd-versions.md).
    assert_eq!(version_calls(), 2);
    poll().await;
    assert_eq!(version_calls(), 3, "the worker asks for the version once, on its first batch");
    // A second look at every sample app: the next rung of open incidents (a claim on an open
    // incident), and closing the healed ones.
    let apps: Vec<String> =
        argo.requests().iter().filter_map(|r| r.path.strip_prefix("/api/v1/applications/").map(str::to_owned)).collect();
    for name in apps.iter().filter(|n| !n.contains('/')).collect::<BTreeSet<_>>() {
        let app = AppRef { name: name.clone(), namespace: "argocd".into(), project: None };
        let item = WorkItem::for_app(WorkKind::Recheck, app, "sweep".parse().unwrap(), "iam-second-look", Utc::now());
        medic_core::ports::WorkQueue::enqueue(
            &medic_adapters::sqs::SqsWorkQueue::new(sqs.clone(), queue_url.clone()),
            &item,
            Duration::ZERO,
        )
        .await
        .unwrap();
    }
    poll().await;

    // A fleet outage seen by two sweeps: the first sighting is a conditional PutItem, the second
    // renews it with an UpdateItem that returns its time (the outage's identity).
    for (i, (mut app, _)) in medic_sim::synthetic_fleet(12, 0, Utc::now()).into_iter().enumerate() {
        app["metadata"]["name"] = format!("iam-outage-{i:02}").into();
        app["spec"]["source"]["repoURL"] = "https://git.iam-down.example.com/platform/deployments.git".into();
        app["status"]["sync"]["status"] = "Unknown".into();
        app["status"]["conditions"] = serde_json::json!([{"type": "ComparisonError", "lastTransitionTime": Utc::now().to_rfc3339(),
            "message": crate::support::GIT_UNREACHABLE}]);
        argo.insert_app(app);
    }
    for _ in 0..2 {
        assert_eq!(sweeper.run().await.unwrap().outages, 1);
    }

    // A person clicks a button on an escalation; the worker performs it.
    let parent = slack.parents(SLACK_CHANNEL).into_iter().next().expect("an escalation was posted");
    let ack = button_of(&parent, "Acknowledge");
    let clicked = actions.handle(crate::support::slack::click(&ack, ALICE, Utc::now().timestamp(), SIGNING_SECRET)).await;
    assert_eq!(clicked.status(), 200);
    poll().await;

    // Failure paths that call AWS too: a queue that is gone (the sweeper and slack-actions
    // forget their markers so the next run re-sends), and a fleet-wide outage (one alert).
    let outage_argo = medic_sim::ArgoSim::start(SimConfig::default()).await.unwrap();
    for (i, (mut app, _)) in medic_sim::synthetic_fleet(20, 20, Utc::now()).into_iter().enumerate() {
        if i < 15 {
            app["status"]["sync"]["status"] = "Unknown".into();
        }
        outage_argo.insert_app(app);
    }
    let broken = |reader: Reader, log: &CallLog| {
        let (doomed, server) = (doomed.clone(), outage_argo.base_url());
        let log = log.clone();
        async move {
            let settings = Settings::from_fn(move |name| match name {
                "QUEUE_URL" => Some(doomed.clone()),
                "ARGOCD_SERVER" => Some(server.clone()),
                _ => lookup(name),
            })
            .for_reader(reader);
            LambdaEnv::from_settings(settings).await.unwrap().with_interceptor(log)
        }
    };
    // Another instance, so its dedupe markers are its own and every stale app is a candidate.
    let mut sweeper_env = broken(Reader::Sweeper, &logs["sweeper"]).await;
    sweeper_env.instance_id = "iam-failures".into();
    let failing_sweeper = medic_sweeper::LambdaSweeper::from_env(&sweeper_env).await.unwrap();
    let failed = failing_sweeper.run().await;
    assert!(failed.is_err(), "a sweep whose queue is gone fails: {failed:?}");
    let failing_actions = medic_stack::lambda::interactions(&broken(Reader::SlackActions, &logs["slack-actions"]).await).await.unwrap();
    let snooze = button_of(&parent, "Snooze");
    let refused = failing_actions.handle(crate::support::slack::click(&snooze, ALICE, Utc::now().timestamp(), SIGNING_SECRET)).await;
    assert_ne!(refused.status(), 200, "a click that could not be queued is not acknowledged as done");
    // The outage's Slack parent (posted by the failing sweep before its enqueue failed): a person
    // pauses the wave, which slack-actions records for the next sweep.
    let outage = slack
        .parents(SLACK_CHANNEL)
        .into_iter()
        .find(|m| m.blocks.to_string().contains("Fleet outage") && !m.blocks.to_string().contains("iam-down"))
        .expect("an outage parent");
    let pause = button_of(&outage, "Pause wave");
    let mut outage_env = env(Reader::SlackActions).await.with_interceptor(logs["slack-actions"].clone());
    outage_env.instance_id = "iam-failures".into();
    let outage_actions = medic_stack::lambda::interactions(&outage_env).await.unwrap();
    let paused = outage_actions.handle(crate::support::slack::click(&pause, ALICE, Utc::now().timestamp() + 1, SIGNING_SECRET)).await;
    assert_eq!(paused.status(), 200);
    // The weekly shadow report over what this run decided: the decisions read back, the apps in
    // trouble read once more from Argo CD, one post (its record kept a week).
    let weekly = sweeper.handle(&serde_json::json!({"medic": medic_sweeper::WEEKLY_REPORT_INPUT})).await.unwrap();
    assert!(matches!(&weekly, medic_sweeper::Done::Report(r) if r.decisions > 0 && !r.rows.is_empty()), "{weekly:?}");

    // What each function read, against what the template gives it: the functions' own reads,
    // not the declarations, so a variable the code stopped reading (or a new one it reads but
    // the template withholds) fails here as well as in tests/settings.rs.
    for (reader, env) in &envs {
        let asked: BTreeSet<&str> = env.settings().asked();
        let template_vars: BTreeSet<&str> = settings::read_by(*reader).filter(|v| v.origin == Origin::Template).map(|v| v.name).collect();
        let read_from_template: BTreeSet<&str> =
            asked.iter().copied().filter(|n| settings::ALL.iter().any(|v| v.name == *n && v.origin == Origin::Template)).collect();
        assert_eq!(read_from_template, template_vars, "{}: the template variables it read, and the ones its row declares", reader.as_str());
    }

    let calls: BTreeMap<&str, BTreeSet<Call>> = logs.iter().map(|(f, log)| (*f, log.calls())).collect();
    // The run reached the paths that matter: a claim on an open incident (the ConditionCheck).
    assert!(
        calls["worker"].contains(&Call { action: "dynamodb:ConditionCheckItem".into(), resource: "StateTable".into() }),
        "the run never claimed a second rung: {:?}",
        calls["worker"]
    );
    let template = template();
    let mut problems = Vec::new();
    for (function, role) in
        [("ingest", "IngestRole"), ("worker", "WorkerRole"), ("sweeper", "SweeperRole"), ("slack-actions", "SlackActionsRole")]
    {
        let (missing, unused) = conformance(function, &calls[function], &grants(&template, role));
        problems.extend(missing);
        problems.extend(unused);
    }
    assert!(
        problems.is_empty(),
        "template.yaml does not match the calls the functions make:\n{}\n\ncalls: {calls:#?}",
        problems.join("\n")
    );
}

#[test]
fn the_conformance_check_finds_a_missing_grant_and_an_unused_one() {
    let granted = BTreeMap::from([
        ("dynamodb:PutItem".to_owned(), BTreeSet::from(["StateTable".to_owned()])),
        ("dynamodb:Scan".to_owned(), BTreeSet::from(["StateTable".to_owned()])),
        ("logs:PutLogEvents".to_owned(), BTreeSet::from(["WorkerLogGroup".to_owned()])),
    ]);
    let calls = BTreeSet::from([
        Call { action: "dynamodb:PutItem".into(), resource: "StateTable".into() },
        Call { action: "dynamodb:ConditionCheckItem".into(), resource: "StateTable".into() },
        Call { action: "dynamodb:PutItem".into(), resource: "OtherTable".into() },
    ]);
    let (missing, unused) = conformance("worker", &calls, &granted);
    assert_eq!(missing.len(), 2, "{missing:?}");
    assert!(missing.iter().any(|m| m.contains("ConditionCheckItem")));
    assert!(missing.iter().any(|m| m.contains("OtherTable")));
    assert_eq!(unused, vec!["worker: dynamodb:Scan is granted but never called".to_owned()]);
}

const IAM_START: &str = "<!-- iam: generated from template.yaml, checked by tests/iam.rs -->\n";
const IAM_END: &str = "<!-- end of iam -->";

/// docs/deploy.md's IAM table, from the roles' grants: per function, the actions that share a set
/// of resources, on those resources.
fn grants_table(template: &Yaml) -> String {
    let mut out = String::from("| function | granted: actions on resources |\n| --- | --- |\n");
    for (function, role) in
        [("ingest", "IngestRole"), ("worker", "WorkerRole"), ("sweeper", "SweeperRole"), ("slack-actions", "SlackActionsRole")]
    {
        let mut by_resources: BTreeMap<BTreeSet<String>, Vec<String>> = BTreeMap::new();
        for (action, resources) in grants(template, role) {
            by_resources.entry(resources).or_default().push(action);
        }
        let mut parts: Vec<(String, String)> = by_resources
            .into_iter()
            .map(|(resources, actions)| {
                let actions: Vec<String> = actions.iter().map(|a| format!("`{a}`")).collect();
                let resources: Vec<String> = resources.iter().map(|r| format!("`{r}`")).collect();
                (actions.join(", "), resources.join(", "))
            })
            .collect();
        parts.sort();
        let cells: Vec<String> = parts.into_iter().map(|(a, r)| format!("{a} on {r}")).collect();
        out.push_str(&format!("| {function} | {} |\n", cells.join(" · ")));
    }
    out
}

/// The IAM table operators read is the template's, not a copy that drifts (it had no row for
/// slack-actions and no work-item key). `MEDIC_BLESS=1` rewrites it.
#[test]
fn the_deploy_guide_s_iam_table_is_the_template_s_grants() {
    crate::support::generated_block("docs/deploy.md", IAM_START, IAM_END, &grants_table(&template()));
}

//! `medic check --stack NAME`: the deployed stack's own parts, read as an operator's AWS
//! credentials can (nothing is changed). The stack's outputs and parameters come from
//! CloudFormation (`DescribeStacks`, the one place they are all kept); then
//!
//! - the stack: its status (a stack rolled back, or mid-update, runs something else than its template);
//! - secrets: every `*SecretArn` parameter and the secrets the stack made itself exist and hold a
//!   current value (`DescribeSecret`); the Argo CD token's is read, so the Argo CD checks run with
//!   the token the functions send;
//! - the switch: the instant switch in the state table, with the `DryRun` and `KillSwitch`
//!   parameters (an install that says nothing acts on nothing, and that surprises people);
//! - the work queue and the dead-letter queue (a message in the DLQ is a failure: something was
//!   given up);
//! - the state table: active, with its time to live on (without it, markers never expire).

use std::collections::BTreeMap;

use medic_adapters::config::ArgoSettings;
use medic_adapters::lambda_env::SecretRef;

use crate::check::Finding;

/// What `DescribeStacks` says of a stack.
#[derive(Debug, Clone, Default)]
pub struct StackView {
    pub name: String,
    pub status: String,
    pub parameters: BTreeMap<String, String>,
    pub outputs: BTreeMap<String, String>,
}

impl StackView {
    fn parameter(&self, key: &str) -> Option<&str> {
        self.parameters.get(key).map(String::as_str).filter(|v| !v.trim().is_empty())
    }

    /// The Argo CD settings the stack's functions use, with the token read from its secret.
    pub fn argo_settings(&self, token: &str) -> Option<ArgoSettings> {
        let mut s = ArgoSettings::new(self.parameter("ArgoCdServer")?, token);
        s.root_path = self.parameter("ArgoCdRootPath").unwrap_or_default().to_owned();
        s.plaintext = self.parameter("ArgoCdPlaintext") == Some("true");
        s.insecure = self.parameter("ArgoCdInsecure") == Some("true");
        s.ca_bundle = self.parameter("ArgoCdCaBundle").map(str::to_owned);
        Some(s)
    }

    /// `PolicyConfig.projects`, the sweep's scope.
    pub fn projects(&self) -> Vec<String> {
        let config = self.parameter("PolicyConfig").unwrap_or("{}");
        serde_json::from_str::<serde_json::Value>(config)
            .ok()
            .and_then(|c| c["projects"].as_array().map(|p| p.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()))
            .unwrap_or_default()
    }

    /// Whether the stack may act (so it needs `sync`, not only `get`).
    pub fn acts(&self) -> bool {
        self.parameter("DryRun") == Some("false")
    }
}

/// The AWS clients of the checks, from one SDK configuration.
pub struct StackClients {
    pub cloudformation: aws_sdk_cloudformation::Client,
    pub secrets: aws_sdk_secretsmanager::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub dynamodb: aws_sdk_dynamodb::Client,
}

impl StackClients {
    /// The clients of the default credential chain (`AWS_PROFILE`, `AWS_REGION`, ...), all at
    /// `endpoint_url` when one is given (moto_server in tests).
    pub async fn new(endpoint_url: Option<&str>) -> Self {
        let sdk = medic_adapters::aws::sdk_config(endpoint_url).await;
        Self {
            cloudformation: aws_sdk_cloudformation::Client::new(&sdk),
            secrets: aws_sdk_secretsmanager::Client::new(&sdk),
            sqs: aws_sdk_sqs::Client::new(&sdk),
            dynamodb: aws_sdk_dynamodb::Client::new(&sdk),
        }
    }
}

/// What `medic check` was asked.
#[derive(Debug, Clone)]
pub struct Preflight {
    /// `--stack`: check the deployed stack, and Argo CD as it reaches it.
    pub stack: Option<String>,
    /// `--endpoint-url`: another AWS endpoint (moto).
    pub endpoint_url: Option<String>,
    /// `--project` or `--config`'s projects: the scope, over the stack's `PolicyConfig`.
    pub projects: Option<Vec<String>>,
    /// `--no-sync`: only `get` is needed (a stack in dry run needs only `get` anyway).
    pub no_sync: bool,
    pub route: crate::check::Route,
    pub expiry_warning: std::time::Duration,
    pub now: chrono::DateTime<chrono::Utc>,
}

/// `medic check`: with a stack, the stack's checks first, then Argo CD with the stack's own
/// settings and token; without one, Argo CD with `argo_from_env` (ARGOCD_SERVER, ...).
pub async fn preflight<E>(p: Preflight, argo_from_env: impl FnOnce() -> Result<ArgoSettings, E>) -> Result<Vec<Finding>, E> {
    let mut findings = Vec::new();
    let (argo, stack_projects, may_sync) = match &p.stack {
        Some(name) => {
            let clients = StackClients::new(p.endpoint_url.as_deref()).await;
            let (stack_findings, stack) = check(&clients, name).await;
            findings.extend(stack_findings);
            // Without the stack's token the Argo CD checks would test someone else's: they stop
            // at the finding that says why.
            let Some((stack, Some(token))) = stack else { return Ok(findings) };
            let Some(argo) = stack.argo_settings(&token) else {
                findings.push(Finding::fail("argo-cd", "the stack has no ArgoCdServer parameter", STACK_FIX));
                return Ok(findings);
            };
            (argo, stack.projects(), stack.acts() && !p.no_sync)
        }
        None => (argo_from_env()?, Vec::new(), !p.no_sync),
    };
    let options = crate::check::CheckOptions {
        argo,
        projects: p.projects.unwrap_or(stack_projects),
        may_sync,
        route: p.route,
        expiry_warning: p.expiry_warning,
        now: p.now,
    };
    findings.extend(crate::check::check(&options).await);
    Ok(findings)
}

/// The stack's parameters and outputs these checks read (`tests/check.rs` holds them to
/// template.yaml).
pub const READS: &[&str] = &[
    "ArgoCdServer",
    "ArgoCdRootPath",
    "ArgoCdPlaintext",
    "ArgoCdInsecure",
    "ArgoCdCaBundle",
    "ArgoCdTokenSecretArn",
    "PolicyConfig",
    "DryRun",
    "KillSwitch",
    "InstanceId",
    "StateTableName",
    "WorkQueueUrl",
    "DeadLetterQueueUrl",
];

const STACK_FIX: &str =
    "check the stack's name and the region (AWS_REGION, AWS_PROFILE): `aws cloudformation describe-stacks --stack-name NAME`";
const DLQ_FIX: &str = "read them before anything else, then redrive or drain them: docs/deploy.md, \"Dead-letter queue runbook\"";

/// The stack's checks, and the stack as read (for the Argo CD checks) with its Argo CD token;
/// `None` when the stack cannot be read.
pub async fn check(clients: &StackClients, name: &str) -> (Vec<Finding>, Option<(StackView, Option<String>)>) {
    let stack = match describe(&clients.cloudformation, name).await {
        Ok(s) => s,
        Err(e) => return (vec![Finding::fail("stack", format!("cannot read the stack `{name}`: {e}"), STACK_FIX)], None),
    };
    let mut findings = vec![status(&stack)];
    let (secret_findings, token) = secrets(clients, &stack).await;
    findings.extend(secret_findings);
    findings.extend(switch(clients, &stack).await);
    findings.extend(queues(clients, &stack).await);
    findings.push(table(clients, &stack).await);
    (findings, Some((stack, token)))
}

async fn describe(cfn: &aws_sdk_cloudformation::Client, name: &str) -> Result<StackView, String> {
    let out = cfn.describe_stacks().stack_name(name).send().await.map_err(|e| medic_adapters::aws::describe("DescribeStacks", &e))?;
    let stack = out.stacks().first().ok_or_else(|| "no such stack".to_owned())?;
    let mut view = StackView {
        name: stack.stack_name().unwrap_or(name).to_owned(),
        status: stack.stack_status().map(|s| s.as_str().to_owned()).unwrap_or_default(),
        ..StackView::default()
    };
    for p in stack.parameters() {
        if let (Some(k), Some(v)) = (p.parameter_key(), p.parameter_value()) {
            view.parameters.insert(k.to_owned(), v.to_owned());
        }
    }
    for o in stack.outputs() {
        if let (Some(k), Some(v)) = (o.output_key(), o.output_value()) {
            view.outputs.insert(k.to_owned(), v.to_owned());
        }
    }
    // The secrets the stack made (the work-item key): their ARNs are resource ids, not outputs.
    if let Ok(resources) = cfn.describe_stack_resources().stack_name(name).send().await {
        for r in resources.stack_resources() {
            if r.resource_type() == Some("AWS::SecretsManager::Secret")
                && let (Some(id), Some(arn)) = (r.logical_resource_id(), r.physical_resource_id())
            {
                view.parameters.insert(format!("{id}SecretArn"), arn.to_owned());
            }
        }
    }
    Ok(view)
}

fn status(stack: &StackView) -> Finding {
    let s = stack.status.as_str();
    let detail = format!("stack {} is {s}", stack.name);
    if s.ends_with("_FAILED") || s.contains("ROLLBACK") {
        Finding::fail(
            "stack",
            detail,
            "the last deploy did not take: read its events (`aws cloudformation describe-stack-events`) and deploy again",
        )
    } else if s.ends_with("_IN_PROGRESS") {
        Finding::warn("stack", detail, "an update is running: check again when it is complete")
    } else {
        Finding::ok("stack", detail)
    }
}

/// Every secret the stack names exists and has a current value; the Argo CD token is returned.
async fn secrets(clients: &StackClients, stack: &StackView) -> (Vec<Finding>, Option<String>) {
    let mut findings = Vec::new();
    let mut token = None;
    if stack.parameter("ArgoCdTokenSecretArn").is_none() {
        findings.push(Finding::fail(
            "secrets",
            "the stack names no Argo CD token secret (ArgoCdTokenSecretArn)",
            "deploy with ArgoCdTokenSecretArn set: docs/deploy.md",
        ));
    }
    let named: Vec<(&String, &String)> =
        stack.parameters.iter().filter(|(k, v)| k.ends_with("SecretArn") && !v.trim().is_empty()).collect();
    let mut fine = Vec::new();
    for (parameter, reference) in named {
        let secret = SecretRef::parse(reference);
        let problem = match clients.secrets.describe_secret().secret_id(secret.arn).send().await {
            Err(e) => Some(medic_adapters::aws::describe("DescribeSecret", &e)),
            Ok(d) if d.deleted_date().is_some() => Some("it is scheduled for deletion".to_owned()),
            Ok(d) if !d.version_ids_to_stages().is_some_and(|v| v.values().any(|s| s.iter().any(|s| s == "AWSCURRENT"))) => {
                Some("it has no current value (AWSCURRENT)".to_owned())
            }
            Ok(_) => None,
        };
        let problem = match problem {
            None if parameter == "ArgoCdTokenSecretArn" => match read(&clients.secrets, secret).await {
                Ok(value) => {
                    token = Some(value);
                    None
                }
                Err(e) => Some(e),
            },
            other => other,
        };
        match problem {
            Some(p) => findings.push(Finding::fail(
                "secrets",
                format!("{parameter} `{reference}`: {p}"),
                "create or restore the secret, or deploy with the ARN of the one that holds the value (docs/deploy.md, Secrets)",
            )),
            None => fine.push(parameter.as_str()),
        }
    }
    if !fine.is_empty() {
        findings.push(Finding::ok("secrets", format!("{} have a current value", fine.join(", "))));
    }
    (findings, token)
}

async fn read(client: &aws_sdk_secretsmanager::Client, secret: SecretRef<'_>) -> Result<String, String> {
    let out =
        client.get_secret_value().secret_id(secret.arn).send().await.map_err(|e| medic_adapters::aws::describe("GetSecretValue", &e))?;
    let whole = out.secret_string().ok_or_else(|| "the secret has no string value".to_owned())?;
    secret.value_in(whole).map(|v| v.trim().to_owned())
}

/// The instant switch, read as the functions read it, and the parameters that hold every action.
async fn switch(clients: &StackClients, stack: &StackView) -> Vec<Finding> {
    let (Some(table), Some(instance)) = (stack.outputs.get("StateTableName"), stack.parameter("InstanceId")) else {
        return vec![Finding::fail("switch", "the stack has no StateTableName output or InstanceId", STACK_FIX)];
    };
    let store = medic_adapters::dynamodb::DynamoDbStore::new(clients.dynamodb.clone(), table, instance);
    let mut findings = Vec::new();
    let switch = medic_core::switch::Mode::Act;
    match store.switch_record().await {
        Ok(None) => findings.push(Finding::ok("switch", format!("{switch} (never set)"))),
        Ok(Some(r)) if r.mode == switch => findings.push(Finding::ok("switch", format!("act (set by {} at {})", r.set_by, r.set_at))),
        Ok(Some(r)) => findings.push(Finding::warn(
            "switch",
            format!("{} (set by {} at {}): Argo Medic does not act", r.mode, r.set_by, r.set_at),
            format!("when that is over: `medic switch act --table {table} --instance {instance}` (docs/operations.md)"),
        )),
        Err(e) => findings.push(Finding::fail(
            "switch",
            format!("cannot read the switch in {table}: {e}"),
            "the functions fail closed while they cannot read it: check the table and your access to it",
        )),
    }
    if stack.parameter("KillSwitch") == Some("on") {
        findings.push(Finding::warn("switch", "KillSwitch is on: no action at all", "deploy with KillSwitch=off when the stop is over"));
    } else if !stack.acts() {
        findings.push(Finding::warn(
            "switch",
            "DryRun is true: Argo Medic decides and records, and changes nothing",
            "read the decisions in the logs, then deploy with DryRun=false (docs/deploy.md)",
        ));
    }
    findings
}

/// The work queue's depth, and the DLQ's: a dead letter is a failure.
async fn queues(clients: &StackClients, stack: &StackView) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (check, output) in [("queue", "WorkQueueUrl"), ("dlq", "DeadLetterQueueUrl")] {
        let Some(url) = stack.outputs.get(output) else {
            findings.push(Finding::fail(check, format!("the stack has no {output} output"), STACK_FIX));
            continue;
        };
        let attrs = clients
            .sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::All)
            .send()
            .await
            .map(|o| o.attributes.unwrap_or_default());
        let attrs = match attrs {
            Ok(a) => a,
            Err(e) => {
                let detail = format!("cannot read {url}: {}", medic_adapters::aws::describe("GetQueueAttributes", &e));
                findings.push(Finding::fail(check, detail, "the functions cannot either: check the queue and your access to it"));
                continue;
            }
        };
        let n = |a: aws_sdk_sqs::types::QueueAttributeName| attrs.get(&a).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        use aws_sdk_sqs::types::QueueAttributeName as Q;
        let (visible, in_flight) = (n(Q::ApproximateNumberOfMessages), n(Q::ApproximateNumberOfMessagesNotVisible));
        if check == "dlq" && visible + in_flight > 0 {
            findings.push(Finding::fail("dlq", format!("{} message(s) in the dead-letter queue", visible + in_flight), DLQ_FIX));
        } else {
            findings.push(Finding::ok(check, format!("{visible} waiting, {in_flight} in flight")));
        }
    }
    findings
}

/// The state table is active and expires its items.
async fn table(clients: &StackClients, stack: &StackView) -> Finding {
    let Some(table) = stack.outputs.get("StateTableName") else {
        return Finding::fail("table", "the stack has no StateTableName output", STACK_FIX);
    };
    let status = match clients.dynamodb.describe_table().table_name(table).send().await {
        Ok(d) => d.table().and_then(|t| t.table_status()).map(|s| s.as_str().to_owned()).unwrap_or_default(),
        Err(e) => {
            let detail = format!("cannot read {table}: {}", medic_adapters::aws::describe("DescribeTable", &e));
            return Finding::fail("table", detail, "the functions cannot either: check the table and your access to it");
        }
    };
    if status != "ACTIVE" {
        return Finding::warn("table", format!("{table} is {status}"), "check again when it is ACTIVE");
    }
    let ttl = clients.dynamodb.describe_time_to_live().table_name(table).send().await;
    let ttl_on =
        ttl.ok().and_then(|t| t.time_to_live_description).and_then(|d| d.time_to_live_status).is_some_and(|s| s.as_str() == "ENABLED");
    if ttl_on {
        Finding::ok("table", format!("{table} is ACTIVE, its items expire"))
    } else {
        Finding::warn(
            "table",
            format!("{table} is ACTIVE without its time to live: markers and leases are never removed"),
            "turn TTL on for attribute expires_at (the template does: was the table changed by hand?)",
        )
    }
}

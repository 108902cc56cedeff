//! Leases and timeouts fit together for every worker timeout the template allows: a lease
//! outlasts the invocation that holds it (so it is never taken over while its holder may still
//! act), ends before the queue offers the message again (so a killed invocation's message is taken
//! over, not burnt into the DLQ), a claim outlasts a lease, and one Argo CD call fits in an
//! invocation. All of it derives from one setting, `MEDIC_FUNCTION_TIMEOUT_SECONDS`.

use std::time::Duration;

use medic_adapters::lambda_env::LambdaEnv;
use medic_worker::WorkerConfig;
use serde_norway::Value as Yaml;

use crate::support::events_dir;

fn template() -> Yaml {
    serde_norway::from_str(&std::fs::read_to_string(events_dir().join("../template.yaml")).unwrap()).unwrap()
}

fn number(v: &Yaml) -> u64 {
    match v {
        Yaml::Number(n) => n.as_u64().unwrap(),
        Yaml::String(s) => s.parse().unwrap(),
        other => panic!("not a number: {other:?}"),
    }
}

/// The visibility timeouts the template's Rules allow with a worker timeout of `secs`.
fn allowed_visibility(template: &Yaml, secs: u64) -> Vec<u64> {
    let rule = &template["Rules"][format!("VisibilityForWorkerTimeout{secs}").as_str()];
    let contains = &rule["Assertions"][0]["Assert"]["Fn::Contains"];
    contains[0]
        .as_sequence()
        .unwrap_or_else(|| panic!("no Rule bounds VisibilityTimeout for WorkerTimeout {secs}"))
        .iter()
        .map(number)
        .collect()
}

fn fixed(name: &str) -> Option<String> {
    match name {
        "MEDIC_INSTANCE_ID" => Some("leases".into()),
        "QUEUE_URL" => Some("http://127.0.0.1:1/queue".into()),
        "TABLE_NAME" => Some("state".into()),
        "AWS_ENDPOINT_URL" => Some("http://127.0.0.1:1".into()),
        "ARGOCD_SERVER" => Some("127.0.0.1:1".into()),
        _ => None,
    }
}

#[tokio::test]
async fn every_lease_fits_every_worker_timeout_the_template_allows() {
    let template = template();
    let allowed: Vec<u64> = template["Parameters"]["WorkerTimeout"]["AllowedValues"].as_sequence().unwrap().iter().map(number).collect();
    assert!(allowed.len() >= 5, "{allowed:?}");
    let mut env = LambdaEnv::from_lookup(fixed).await.unwrap();
    // The AWS calls are bounded too, from the same function (`fixed` gives no timeout: 60 s).
    let t = medic_core::timeouts::Timeouts::of(env.function_timeout);
    let sdk = env.sdk.timeout_config().expect("the functions' SDK has timeouts");
    assert_eq!((sdk.connect_timeout(), sdk.read_timeout()), (Some(t.aws_connect), Some(t.aws_read)));
    for secs in allowed {
        let timeout = Duration::from_secs(secs);
        let min_visibility = Duration::from_secs(*allowed_visibility(&template, secs).iter().min().unwrap());
        let t = medic_core::timeouts::Timeouts::of(timeout);
        assert!(min_visibility >= t.visibility_floor, "WorkerTimeout {secs}: visibility {min_visibility:?} < 6 × timeout (AWS's advice)");
        let c = WorkerConfig::for_timeout(timeout);
        assert!(c.dedupe_lease > timeout, "{secs}: the dedupe lease must outlast the invocation");
        assert!(c.dedupe_lease < min_visibility, "{secs}: a redelivery must find a dead holder's lease over");
        assert!(c.lock_ttl > timeout && c.lock_ttl < min_visibility, "{secs}: the app lock likewise");
        assert!(c.claim_timeout > c.dedupe_lease, "{secs}: a claim outlasts the lease of the run that made it");
        assert!(c.dedupe_ttl >= c.dedupe_lease);
        assert_eq!((c.dedupe_lease, c.lock_ttl, c.claim_timeout), (t.lease, t.lease, t.claim), "{secs}: the worker's are Timeouts'");
        env.function_timeout = timeout;
        let argo = env.argo_settings(env.argocd().unwrap(), "token");
        assert!(
            argo.retry_deadline + argo.request_timeout <= timeout,
            "{secs}: one Argo CD call (deadline {:?} + last request {:?}) must fit in the invocation",
            argo.retry_deadline,
            argo.request_timeout
        );
    }
}

/// A scalar or `!Tag scalar` as text: `10` and `"10"` read the same, as CloudFormation reads them.
fn scalar(v: &Yaml) -> String {
    match v {
        Yaml::Number(n) => n.to_string(),
        Yaml::String(s) => s.clone(),
        Yaml::Tagged(t) => format!("{} {}", t.tag, scalar(&t.value)),
        other => panic!("not a scalar: {other:?}"),
    }
}

#[test]
fn each_function_is_told_its_own_timeout() {
    let template = template();
    let resources = template["Resources"].as_mapping().unwrap();
    let mut functions = 0;
    for (name, resource) in resources {
        if resource["Type"].as_str() != Some("AWS::Serverless::Function") {
            continue;
        }
        functions += 1;
        let props = &resource["Properties"];
        let told = &props["Environment"]["Variables"]["MEDIC_FUNCTION_TIMEOUT_SECONDS"];
        assert_eq!(scalar(&props["Timeout"]), scalar(told), "{name:?}: MEDIC_FUNCTION_TIMEOUT_SECONDS must be the function's Timeout");
    }
    assert_eq!(functions, 4);
}

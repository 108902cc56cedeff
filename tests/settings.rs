//! The environment each function reads (functions/adapters/src/settings.rs), held against
//! template.yaml (each function is given exactly the template variables it reads, with the code's
//! defaults, and its own timeout) and against docs/configuration.md's table of variables.
//! tests/iam.rs checks the other half: what the functions really read when they run.

use std::collections::BTreeMap;

use medic_adapters::config::parse_bool;
use medic_adapters::settings::{self, Kind, Origin, Reader, Var, VarDefault};
use serde_norway::Value as Yaml;

use crate::support::events_dir;

fn template() -> Yaml {
    serde_norway::from_str(&std::fs::read_to_string(events_dir().join("../template.yaml")).unwrap()).expect("template.yaml parses")
}

/// A function's environment as the template gives it: the globals, then its own.
fn environment(t: &Yaml, resource: &str) -> BTreeMap<String, Yaml> {
    let mut env = BTreeMap::new();
    for vars in [&t["Globals"]["Function"]["Environment"]["Variables"], &t["Resources"][resource]["Properties"]["Environment"]["Variables"]]
    {
        for (k, v) in vars.as_mapping().into_iter().flatten() {
            env.insert(k.as_str().unwrap().to_owned(), v.clone());
        }
    }
    env
}

/// What a template value is when the stack is deployed with every default: a literal, or the
/// default of the parameter it refers to. `None` for a resource (its name or URL).
fn default_of(t: &Yaml, value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Number(n) => Some(n.to_string()),
        Yaml::Bool(b) => Some(b.to_string()),
        Yaml::Tagged(tagged) if tagged.tag.to_string().trim_start_matches('!') == "Ref" => {
            let name = tagged.value.as_str().unwrap();
            let param = t["Parameters"].get(name)?;
            Some(match param.get("Default") {
                Some(Yaml::String(s)) => s.clone(),
                Some(Yaml::Number(n)) => n.to_string(),
                Some(Yaml::Bool(b)) => b.to_string(),
                Some(other) => panic!("{name}'s default is {other:?}"),
                None => String::new(),
            })
        }
        other => panic!("a variable's value the test does not know: {other:?}"),
    }
}

/// True when the template's `given` means the same as the code's default for `var`.
fn same_default(var: &Var, given: &str) -> bool {
    let declared = match var.default {
        VarDefault::Value(v) => v,
        VarDefault::Unset => "",
        // Required: any value the stack gives it (a resource's name) will do.
        VarDefault::Required => return !given.trim().is_empty(),
    };
    match var.kind {
        Kind::Flag => given.trim().is_empty() && declared.is_empty() || parse_bool(given) == parse_bool(declared),
        Kind::Number => given.trim().parse::<u64>().ok() == declared.parse::<u64>().ok(),
        Kind::Json => serde_json::from_str::<serde_json::Value>(given).ok() == serde_json::from_str::<serde_json::Value>(declared).ok(),
        Kind::Text | Kind::Secret => given.trim() == declared,
    }
}

#[test]
fn each_function_is_given_exactly_the_template_variables_it_reads() {
    let problems = variable_problems(&template());
    assert!(problems.is_empty(), "template.yaml and functions/adapters/src/settings.rs disagree:\n{}", problems.join("\n"));
}

fn variable_problems(t: &Yaml) -> Vec<String> {
    let mut problems = Vec::new();
    for reader in Reader::FUNCTIONS {
        let resource = reader.resource().unwrap();
        let given = environment(t, resource);
        for var in settings::read_by(reader).filter(|v| v.origin == Origin::Template) {
            if !given.contains_key(var.name) {
                problems.push(format!("{resource} reads {} but template.yaml does not give it", var.name));
            }
        }
        for name in given.keys() {
            match settings::ALL.iter().find(|v| v.name == name) {
                None => {
                    problems.push(format!("{resource} is given {name}, which no function reads (settings.rs declares no such variable)"))
                }
                Some(v) if v.origin != Origin::Template => {
                    problems.push(format!("{resource} is given {name}, which settings.rs says the template never sets"))
                }
                Some(v) if !v.read_by(reader) => problems.push(format!("{resource} is given {name}, which it does not read")),
                Some(_) => {}
            }
        }
    }
    problems
}

#[test]
fn the_template_s_defaults_are_the_code_s() {
    let problems = default_problems(&template());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn default_problems(t: &Yaml) -> Vec<String> {
    let mut problems = Vec::new();
    for reader in Reader::FUNCTIONS {
        let resource = reader.resource().unwrap();
        for (name, value) in environment(t, resource) {
            let Some(var) = settings::ALL.iter().find(|v| v.name == name) else { continue };
            if var.name == settings::MEDIC_FUNCTION_TIMEOUT_SECONDS.name {
                continue; // each function's own: the next test
            }
            let Some(given) = default_of(t, &value) else { continue };
            if !same_default(var, &given) {
                problems.push(format!("{resource}: {name} defaults to `{given}` in the template, {:?} in the code", var.default));
            }
        }
    }
    problems
}

/// Leases and the Argo CD client's retry budget derive from MEDIC_FUNCTION_TIMEOUT_SECONDS, so
/// it must be the function's own timeout, whatever either is changed to.
#[test]
fn each_function_is_told_its_own_timeout() {
    let t = template();
    for reader in Reader::FUNCTIONS {
        let resource = reader.resource().unwrap();
        let told = &environment(&t, resource)[settings::MEDIC_FUNCTION_TIMEOUT_SECONDS.name];
        let timeout = &t["Resources"][resource]["Properties"]["Timeout"];
        assert_eq!(default_of(&t, told), default_of(&t, timeout), "{resource}: MEDIC_FUNCTION_TIMEOUT_SECONDS is not its Timeout");
        let literal_or_same_ref = match (told, timeout) {
            (Yaml::Tagged(a), Yaml::Tagged(b)) => a.value == b.value,
            (Yaml::Tagged(_), _) | (_, Yaml::Tagged(_)) => false,
            _ => true,
        };
        assert!(literal_or_same_ref, "{resource}: the timeout and the variable must name the same parameter");
    }
}

/// The rules above, on a template that breaks them (a test that cannot fail measures nothing):
/// the drifts the deploy-day review found, put back.
#[test]
fn the_comparison_names_a_withheld_variable_a_stray_one_and_a_drifted_default() {
    let mut t = template();
    let worker = t["Resources"]["WorkerFunction"]["Properties"]["Environment"]["Variables"].as_mapping_mut().unwrap();
    worker.remove("MEDIC_RECHECK_SECONDS");
    worker.insert("MEDIC_MAX_BODY_BYTES".into(), "65536".into());
    let ingest = t["Resources"]["IngestFunction"]["Properties"]["Environment"]["Variables"].as_mapping_mut().unwrap();
    ingest.remove("ARGOCD_PLAINTEXT");
    ingest.insert("MEDIC_MAX_BODY_BYTES".into(), "1048576".into());
    t["Parameters"]["WorkerMaxConcurrency"]["Default"] = 2.into();
    let mut problems = variable_problems(&t);
    problems.extend(default_problems(&t));
    problems.sort();
    assert_eq!(
        problems,
        [
            "IngestFunction reads ARGOCD_PLAINTEXT but template.yaml does not give it",
            "IngestFunction: MEDIC_MAX_BODY_BYTES defaults to `1048576` in the template, Value(\"65536\") in the code",
            "SweeperFunction: MEDIC_WORKER_MAX_CONCURRENCY defaults to `2` in the template, Value(\"5\") in the code",
            "WorkerFunction is given MEDIC_MAX_BODY_BYTES, which it does not read",
            "WorkerFunction reads MEDIC_RECHECK_SECONDS but template.yaml does not give it",
            "WorkerFunction: MEDIC_WORKER_MAX_CONCURRENCY defaults to `2` in the template, Value(\"5\") in the code",
        ]
    );
    assert!(same_default(&settings::MEDIC_KILL_SWITCH, "off"), "`off` is false in the one grammar");
    assert!(same_default(&settings::MEDIC_POLICY_CONFIG, "{ }"), "JSON compares as JSON");
}

const TABLE_START: &str = "<!-- variables: generated from functions/adapters/src/settings.rs, checked by tests/settings.rs -->\n";
const TABLE_END: &str = "<!-- end of variables -->";

/// docs/configuration.md lists every variable once, as declared. `MEDIC_BLESS=1` rewrites the
/// table from the declarations.
#[test]
fn docs_configuration_lists_every_variable_as_declared() {
    let doc = crate::support::generated_block("docs/configuration.md", TABLE_START, TABLE_END, &settings::markdown_table());
    for var in settings::ALL {
        assert_eq!(doc.matches(&format!("| `{}` |", var.name)).count(), 1, "{} is listed once", var.name);
    }
}

/// The report schedule's input in template.yaml is what the sweeper reads as the weekly report;
/// the sweep's own schedule, which sends EventBridge's scheduled event, asks for a sweep. The
/// parameter's pattern takes its default and empty (off), and refuses what EventBridge would.
#[test]
fn the_report_schedule_asks_the_sweeper_for_the_report_and_the_sweep_schedule_for_a_sweep() {
    use medic_sweeper::Invocation;
    let t = template();
    let events = &t["Resources"]["SweeperFunction"]["Properties"]["Events"];
    let input: serde_json::Value =
        serde_json::from_str(events["WeeklyReport"]["Properties"]["Input"].as_str().expect("the report schedule has an input")).unwrap();
    assert_eq!(Invocation::of(&input), Invocation::WeeklyReport);
    assert!(events["Sweep"]["Properties"].get("Input").is_none(), "the sweep schedule sends EventBridge's own event");
    let scheduled = serde_json::json!({
        "version": "0", "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa", "detail-type": "Scheduled Event", "source": "aws.events",
        "account": "123456789012", "time": "2026-12-07T09:00:00Z", "region": "eu-west-1", "resources": [], "detail": {}
    });
    assert_eq!(Invocation::of(&scheduled), Invocation::Sweep);
    assert_eq!(Invocation::of(&serde_json::json!({})), Invocation::Sweep);
    let param = &t["Parameters"]["ReportSchedule"];
    let pattern = regex::Regex::new(param["AllowedPattern"].as_str().unwrap()).unwrap();
    for ok in [param["Default"].as_str().unwrap(), "", "rate(7 days)", "cron(30 8 ? * FRI *)"] {
        assert!(pattern.is_match(ok), "{ok:?} is allowed");
    }
    for bad in ["weekly", "cron 0 9 * * MON", "rate(7 days) "] {
        assert!(!pattern.is_match(bad), "{bad:?} is refused");
    }
}

/// SweepSchedule's pattern enforces the documented floor: a sweep may run 240 s, so none more
/// often than every 5 minutes (before, any `rate(...)` or `cron(...)` passed).
#[test]
fn the_sweep_schedule_cannot_be_set_below_five_minutes() {
    let t = template();
    let param = &t["Parameters"]["SweepSchedule"];
    let pattern = regex::Regex::new(param["AllowedPattern"].as_str().unwrap()).unwrap();
    assert!(pattern.is_match(param["Default"].as_str().unwrap()));
    for ok in [
        "rate(5 minutes)",
        "rate(15 minutes)",
        "rate(60 minutes)",
        "rate(1 hour)",
        "rate(2 hours)",
        "rate(1 day)",
        "cron(0/5 * * * ? *)",
        "cron(0,30 * * * ? *)",
        "cron(7 * * * ? *)",
    ] {
        assert!(pattern.is_match(ok), "{ok} runs at most every 5 minutes");
    }
    for too_often in [
        "rate(1 minute)",
        "rate(2 minutes)",
        "rate(4 minutes)",
        "rate(0 minutes)",
        "cron(* * * * ? *)",
        "cron(0/1 * * * ? *)",
        "cron(0/4 * * * ? *)",
        "cron(0-59 * * * ? *)",
        "rate(5 minute)",
    ] {
        assert!(!pattern.is_match(too_often), "{too_often} is refused");
    }
}

/// Every parameter check of the template is explained in docs/deploy.md, where a failed deploy
/// sends the operator (SlackActionsNeedSlack was not).
#[test]
fn every_rule_of_the_template_is_explained_in_the_deploy_guide() {
    let t = template();
    let deploy = std::fs::read_to_string(events_dir().join("../docs/deploy.md")).unwrap();
    for rule in t["Rules"].as_mapping().unwrap().keys().map(|k| k.as_str().unwrap()) {
        let documented = rule.strip_prefix("VisibilityForWorkerTimeout").map_or(rule, |_| "VisibilityForWorkerTimeout<N>");
        assert!(deploy.contains(&format!("| `{documented}` |")), "docs/deploy.md's table of rules does not explain {rule}");
    }
}

/// docs/deploy.md's "What gets deployed" names everything of substance the template creates (it
/// listed three functions, no slack-actions and no generated work-item key).
#[test]
fn the_deploy_guide_s_inventory_names_every_resource_of_substance() {
    let t = template();
    let deploy = std::fs::read_to_string(events_dir().join("../docs/deploy.md")).unwrap();
    let start = deploy.find("## What gets deployed").expect("the inventory section");
    let section = &deploy[start..start + deploy[start..].find("\n## Prerequisites").expect("the next section")];
    let kinds = [
        "AWS::Serverless::Function",
        "AWS::Lambda::Url",
        "AWS::ApiGatewayV2::Api",
        "AWS::SQS::Queue",
        "AWS::DynamoDB::Table",
        "AWS::SecretsManager::Secret",
        "AWS::Logs::LogGroup",
        "AWS::IAM::Role",
        "AWS::CloudWatch::Alarm",
        "AWS::CloudWatch::Dashboard",
    ];
    let mut missing = Vec::new();
    for (id, resource) in t["Resources"].as_mapping().unwrap() {
        let (id, kind) = (id.as_str().unwrap(), resource["Type"].as_str().unwrap_or_default());
        if kinds.contains(&kind) && !section.contains(&format!("`{id}`")) {
            missing.push(format!("{id} ({kind})"));
        }
    }
    assert!(missing.is_empty(), "docs/deploy.md's inventory does not name: {missing:?}");
}

/// docs/deploy.md's minimal `parameter_overrides` names exactly what a deploy cannot do without: the
/// parameters with no default, and those a Rule requires with the other defaults (the webhook
/// secret, the default endpoint being public). Each value passes its parameter's pattern.
#[test]
fn the_minimal_parameters_are_the_required_ones_and_valid() {
    let t = template();
    let deploy = std::fs::read_to_string(events_dir().join("../docs/deploy.md")).unwrap();
    let start = deploy.find("<!-- minimal parameters:").expect("the minimal parameters' marker");
    let line = deploy[start..].lines().find(|l| l.starts_with("parameter_overrides = ")).expect("a parameter_overrides line");
    let overrides: BTreeMap<&str, &str> =
        line.trim_start_matches("parameter_overrides = ").trim_matches('"').split(' ').map(|kv| kv.split_once('=').unwrap()).collect();
    let params = t["Parameters"].as_mapping().unwrap();
    let mut required: Vec<&str> = params.iter().filter(|(_, p)| p.get("Default").is_none()).map(|(k, _)| k.as_str().unwrap()).collect();
    // IngestEndpoint defaults to a public Function URL, and WebhookNeedsSecret then asks for this.
    assert_eq!(t["Parameters"]["IngestEndpoint"]["Default"].as_str(), Some("FunctionUrl"));
    assert!(t["Rules"]["WebhookNeedsSecret"].is_mapping());
    required.push("WebhookSecretArn");
    required.sort_unstable();
    let named: Vec<&str> = overrides.keys().copied().collect();
    assert_eq!(named, required, "the minimal example's parameters");
    for (name, value) in overrides {
        let Some(pattern) = t["Parameters"][name]["AllowedPattern"].as_str() else { continue };
        assert!(regex::Regex::new(pattern).unwrap().is_match(value), "{name}={value} fails its pattern {pattern}");
    }
}

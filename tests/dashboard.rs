//! The operator's dashboard in `template.yaml` (`OperatorDashboard`): its body is valid JSON once
//! CloudFormation has substituted it, every alarm of the stack has a widget, and every metric it
//! names exists: the `ArgoMedic` ones are emitted by the functions' code (found in their sources,
//! with the extra dimension each is emitted with), the AWS ones are metrics SQS and Lambda
//! publish, for this stack's own queues and functions. Every metric the code emits is on it too.
//!
//! The metric names live as literals at their emission sites (`self.metrics.count("HumanActions",
//! Some(("Action", ...)), ...)`, `self.metrics.millis_with("StepLatency", &breakdown, ...)`); there is no list of them in code, so the sources are the single
//! source of truth and this test reads them.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::PathBuf;

use serde_json::Value as Json;
use serde_norway::Value as Yaml;

fn repo_path(rel: &str) -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test")).join("..").join(rel)
}

fn template() -> Yaml {
    let text = fs::read_to_string(repo_path("template.yaml")).expect("template.yaml");
    serde_norway::from_str(&text).expect("template.yaml is YAML")
}

/// Logical ids of the template's resources, by type.
fn resources(t: &Yaml) -> BTreeMap<String, String> {
    t["Resources"]
        .as_mapping()
        .expect("Resources")
        .iter()
        .map(|(k, v)| (k.as_str().unwrap().to_owned(), v["Type"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

/// The ARN a `${X.Arn}` of an alarm stands for in the substituted body.
fn alarm_arn(id: &str) -> String {
    format!("arn:aws:cloudwatch:eu-west-1:123456789012:alarm:{id}")
}

/// Parameters the body substitutes as JSON numbers.
const NUMERIC_PARAMETERS: &[&str] = &["QueueAgeAlarmSeconds", "WorkerMaxConcurrency"];

/// The dashboard body as CloudFormation hands it to CloudWatch, with placeholders for what only a
/// deployment knows: `${X.Arn}` of an alarm is an alarm ARN ending in `X`, a numeric parameter is
/// 1, anything else `${X}` is `<X>`. Every `${…}` must name a parameter, a resource (attribute), a
/// pseudo parameter or a variable of the `Fn::Sub`.
fn dashboard_body(t: &Yaml) -> Json {
    let resources = resources(t);
    let dashboards: Vec<&String> = resources.iter().filter(|(_, ty)| *ty == "AWS::CloudWatch::Dashboard").map(|(id, _)| id).collect();
    assert_eq!(dashboards, vec!["OperatorDashboard"], "one dashboard");
    let Yaml::Tagged(sub) = &t["Resources"]["OperatorDashboard"]["Properties"]["DashboardBody"] else {
        panic!("DashboardBody is an Fn::Sub");
    };
    assert_eq!(sub.tag, "Sub");
    let (text, variables) = match &sub.value {
        Yaml::String(s) => (s.clone(), BTreeSet::new()),
        Yaml::Sequence(v) => (
            v[0].as_str().expect("the Sub string").to_owned(),
            v[1].as_mapping().expect("the Sub variables").keys().map(|k| k.as_str().unwrap().to_owned()).collect(),
        ),
        other => panic!("unexpected Fn::Sub form {other:?}"),
    };
    let parameters: BTreeSet<String> = t["Parameters"].as_mapping().unwrap().keys().map(|k| k.as_str().unwrap().to_owned()).collect();
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').expect("closed ${") + start;
        let token = &rest[start + 2..end];
        let (base, attribute) = token.split_once('.').map_or((token, None), |(b, a)| (b, Some(a)));
        assert!(
            token.starts_with("AWS::") || parameters.contains(token) || variables.contains(token) || resources.contains_key(base),
            "the dashboard substitutes `${{{token}}}`, which names nothing in the template"
        );
        let replacement = match attribute {
            Some("Arn") if resources.get(base).map(String::as_str) == Some("AWS::CloudWatch::Alarm") => alarm_arn(base),
            _ if NUMERIC_PARAMETERS.contains(&token) => "1".to_owned(),
            _ => format!("<{token}>"),
        };
        out.push_str(&replacement);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("the substituted dashboard body is not JSON: {e}\n{out}"))
}

/// `(metric name, extra dimension)` of every `ArgoMedic` metric the functions emit (their handlers
/// and the application they run): every
/// `.count("Name", …)` / `.millis("Name", …)` call in their sources, with the dimension of its
/// `Some(("Dim", …))` (each is published per `Instance` and per `Instance` and that dimension).
fn emitted_metrics() -> BTreeSet<(String, Option<String>)> {
    let mut found = BTreeSet::new();
    // The handlers, the application they run (medic-service) and Slack's interactions (medic-slack).
    for crate_dir in [
        "functions/ingest/src",
        "functions/worker/src",
        "functions/sweeper/src",
        "functions/slack-actions/src",
        "functions/service/src",
        "functions/slack/src",
    ] {
        for entry in fs::read_dir(repo_path(crate_dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let source = fs::read_to_string(&path).unwrap();
            for call in [".count(", ".millis(", ".gauge(", ".count_with(", ".millis_with("] {
                for (at, _) in source.match_indices(call) {
                    let args = source[at + call.len()..].trim_start();
                    let Some(args) = args.strip_prefix('"') else { continue };
                    let name = &args[..args.find('"').unwrap()];
                    let after = args[name.len() + 1..].trim_start().trim_start_matches(',').trim_start();
                    // `_with` calls publish per Instance alone; their breakdown is properties.
                    let dimension = after.strip_prefix("Some((\"").map(|d| d[..d.find('"').unwrap()].to_owned());
                    assert!(
                        dimension.is_some() || after.starts_with("None") || call.ends_with("_with("),
                        "{}: cannot read the call to {name}",
                        path.display()
                    );
                    found.insert((name.to_owned(), dimension));
                }
            }
        }
    }
    assert!(found.len() >= 15, "the scan found the emission sites: {found:?}");
    found
}

/// Metrics AWS publishes that the dashboard may show, by namespace.
const AWS_METRICS: &[(&str, &[&str])] = &[
    (
        "AWS/SQS",
        &[
            "ApproximateNumberOfMessagesVisible",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
            "ApproximateAgeOfOldestMessage",
        ],
    ),
    ("AWS/Lambda", &["Errors", "Throttles", "Duration", "ConcurrentExecutions", "Invocations"]),
];

/// One metric a widget names: namespace, name, and its dimensions (name → value).
#[derive(Debug)]
struct Named {
    widget: String,
    namespace: String,
    name: String,
    dimensions: BTreeMap<String, String>,
}

/// Every metric the widgets name, in plain metric arrays and in `SEARCH` expressions.
fn named_metrics(body: &Json) -> Vec<Named> {
    let mut out = Vec::new();
    for w in body["widgets"].as_array().expect("widgets") {
        let title = w["properties"]["title"].as_str().unwrap_or_default().to_owned();
        for entry in w["properties"]["metrics"].as_array().into_iter().flatten() {
            let entry = entry.as_array().expect("each metric is an array");
            match entry.first() {
                Some(Json::String(namespace)) => {
                    let mut parts: Vec<&str> = entry.iter().filter_map(Json::as_str).collect();
                    assert!(parts.len() >= 2 && parts.len().is_multiple_of(2), "{title}: malformed metric {entry:?}");
                    let name = parts[1].to_owned();
                    parts.drain(..2);
                    let dimensions = parts.chunks(2).map(|c| (c[0].to_owned(), c[1].to_owned())).collect();
                    out.push(Named { widget: title.clone(), namespace: namespace.clone(), name, dimensions });
                }
                Some(Json::Object(o)) => {
                    let expression = o["expression"].as_str().expect("an expression");
                    out.push(parse_search(&title, expression));
                }
                other => panic!("{title}: unexpected metric entry {other:?}"),
            }
        }
    }
    out
}

/// `SEARCH('{Namespace,Dim1,Dim2} MetricName="Name" "<instance>"', 'Stat', period)`: the metric,
/// with the schema's dimensions (the instance's value where the search names it).
fn parse_search(widget: &str, expression: &str) -> Named {
    let inner = expression.strip_prefix("SEARCH('{").unwrap_or_else(|| panic!("{widget}: not a SEARCH: {expression}"));
    let (schema, terms) = inner.split_once('}').unwrap();
    let mut schema = schema.split(',');
    let namespace = schema.next().unwrap().to_owned();
    let name = terms.split("MetricName=\"").nth(1).and_then(|s| s.split('"').next()).unwrap_or_else(|| panic!("{widget}: {expression}"));
    assert!(terms.contains("\"<InstanceId>\""), "{widget}: the search is limited to this stack's instance: {expression}");
    let dimensions = schema.map(|d| (d.to_owned(), if d == "Instance" { "<InstanceId>".to_owned() } else { "*".to_owned() })).collect();
    Named { widget: widget.to_owned(), namespace, name: name.to_owned(), dimensions }
}

#[test]
fn every_alarm_of_the_stack_has_its_own_graph_and_is_on_the_status_widget() {
    let t = template();
    let body = dashboard_body(&t);
    let alarms: Vec<String> = resources(&t).into_iter().filter(|(_, ty)| ty == "AWS::CloudWatch::Alarm").map(|(id, _)| id).collect();
    assert!(alarms.len() >= 8, "{alarms:?}");
    let widgets = body["widgets"].as_array().unwrap();
    let status: Vec<&str> = widgets
        .iter()
        .filter(|w| w["type"] == "alarm")
        .flat_map(|w| w["properties"]["alarms"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()))
        .collect();
    let graphs: Vec<&Json> =
        widgets.iter().filter(|w| w["type"] == "metric" && w["properties"]["annotations"]["alarms"].is_array()).collect();
    for alarm in &alarms {
        let arn = alarm_arn(alarm);
        assert!(status.contains(&arn.as_str()), "{alarm} is missing from the alarm status widget");
        let own: Vec<&&Json> = graphs.iter().filter(|w| w["properties"]["annotations"]["alarms"] == serde_json::json!([arn])).collect();
        assert_eq!(own.len(), 1, "{alarm} has {} graph widgets (want one)", own.len());
        assert!(own[0]["properties"]["metrics"].is_null(), "an alarm graph shows the alarm's own metric only");
    }
    assert_eq!(status.len(), alarms.len(), "the status widget lists only the stack's alarms");
    assert_eq!(graphs.len(), alarms.len());
}

#[test]
fn every_metric_on_the_dashboard_exists_and_every_metric_the_code_emits_is_on_it() {
    let t = template();
    let body = dashboard_body(&t);
    let resources = resources(&t);
    let emitted = emitted_metrics();
    let names = named_metrics(&body);
    assert!(names.len() > 20, "{names:?}");
    // Per Instance alone: emitted without a breakdown, or a breakdown whose total is published
    // for an alarm; other breakdowns have no per-Instance metric.
    let alone = |name: &str| {
        emitted.contains(&(name.to_owned(), None))
            || (medic_adapters::telemetry::ALARMED_TOTALS.contains(&name) && emitted.iter().any(|(n, _)| n == name))
    };
    let mut wrong = Vec::new();
    for m in &names {
        match m.namespace.as_str() {
            "ArgoMedic" => {
                if m.dimensions.get("Instance").map(String::as_str) != Some("<InstanceId>") {
                    wrong.push(format!("{}: {} is not limited to this stack's Instance", m.widget, m.name));
                }
                let extra: Vec<&String> = m.dimensions.keys().filter(|d| *d != "Instance").collect();
                let ok = match extra.as_slice() {
                    [] => alone(&m.name),
                    [d] => emitted.contains(&(m.name.clone(), Some((*d).clone()))),
                    _ => false,
                };
                if !ok {
                    wrong.push(format!("{}: ArgoMedic/{} by {extra:?} is not emitted by the code", m.widget, m.name));
                }
            }
            namespace => {
                let known = AWS_METRICS.iter().find(|(ns, _)| *ns == namespace).map(|(_, names)| *names).unwrap_or_default();
                if !known.contains(&m.name.as_str()) {
                    wrong.push(format!("{}: {namespace}/{} is not one the dashboard may name", m.widget, m.name));
                }
                // The stack's own queues and functions.
                for (dimension, value) in &m.dimensions {
                    let target = value.trim_start_matches('<').trim_end_matches('>');
                    let target = target.strip_suffix(".QueueName").unwrap_or(target);
                    let ok = match dimension.as_str() {
                        "QueueName" => resources.get(target).map(String::as_str) == Some("AWS::SQS::Queue"),
                        "FunctionName" => {
                            resources.get(target).map(String::as_str) == Some("AWS::Serverless::Function")
                                || target == "SlackActionsFunctionName"
                        }
                        _ => false,
                    };
                    if !ok {
                        wrong.push(format!("{}: {namespace}/{} {dimension}={value} is not this stack's", m.widget, m.name));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));

    // The other way round: a metric the code emits and nobody can see is a gap. A breakdown kept
    // as log properties is seen through a log widget over the metric's lines.
    let mut shown: BTreeSet<&str> = names.iter().filter(|m| m.namespace == "ArgoMedic").map(|m| m.name.as_str()).collect();
    shown.extend(
        log_breakdowns(&body)
            .into_iter()
            .map(|(metric, _)| metric)
            .filter_map(|m| emitted.iter().find(|(n, _)| *n == m))
            .map(|(n, _)| n.as_str()),
    );
    let missing: Vec<&String> = emitted.iter().map(|(n, _)| n).filter(|n| !shown.contains(n.as_str())).collect();
    assert!(missing.is_empty(), "emitted but not on the dashboard: {missing:?}");

    // The alarms on ArgoMedic metrics watch metrics the code emits, per Instance.
    for (id, ty) in &resources {
        let props = &t["Resources"][id.as_str()]["Properties"];
        if ty == "AWS::CloudWatch::Alarm" && props["Namespace"].as_str() == Some("ArgoMedic") {
            let name = props["MetricName"].as_str().unwrap();
            assert!(alone(name), "{id} watches ArgoMedic/{name} per Instance, which nothing publishes (see telemetry::ALARMED_TOTALS)");
        }
    }
}

/// `(metric, field)` of every log widget that breaks an EMF metric's lines down:
/// `filter ispresent(Metric) ... | stats ... by Field`.
fn log_breakdowns(body: &Json) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for w in body["widgets"].as_array().unwrap().iter().filter(|w| w["type"] == "log") {
        let query = w["properties"]["query"].as_str().unwrap();
        let Some(metric) = query.split("ispresent(").nth(1).map(|m| m[..m.find(')').unwrap()].to_owned()) else { continue };
        if metric.starts_with('`') || metric.starts_with('@') {
            continue;
        }
        let Some(by) = query.rsplit(" by ").next().filter(|_| query.contains("| stats ")) else { continue };
        for field in by.split(',').map(str::trim) {
            out.push((metric.clone(), field.to_owned()));
        }
    }
    out
}

#[test]
fn every_log_breakdown_reads_a_metric_and_a_property_the_code_emits() {
    let body = dashboard_body(&template());
    let emitted = emitted_metrics();
    let breakdowns = log_breakdowns(&body);
    assert!(breakdowns.len() >= 4, "{breakdowns:?}");
    let sources: String = ["functions/ingest/src/lib.rs", "functions/worker/src/lib.rs", "functions/service/src/work.rs"]
        .iter()
        .map(|f| fs::read_to_string(repo_path(f)).unwrap())
        .collect();
    for (metric, field) in breakdowns {
        assert!(emitted.contains(&(metric.clone(), None)), "a log widget reads {metric}, which is not emitted per Instance alone");
        // The property is named as a literal beside its value, e.g. `("Result", result_name)`.
        assert!(sources.contains(&format!("(\"{field}\", ")), "a log widget breaks {metric} down by {field}, which no emission names");
    }
}

#[test]
fn the_log_widgets_query_this_stacks_log_groups() {
    let t = template();
    let body = dashboard_body(&t);
    let resources = resources(&t);
    let logs: Vec<&Json> = body["widgets"].as_array().unwrap().iter().filter(|w| w["type"] == "log").collect();
    assert!(!logs.is_empty());
    for w in logs {
        let query = w["properties"]["query"].as_str().unwrap();
        assert!(query.starts_with("SOURCE '"), "{query}");
        for source in query.split("SOURCE '").skip(1) {
            let group = source.split('\'').next().unwrap().trim_start_matches('<').trim_end_matches('>');
            assert_eq!(resources.get(group).map(String::as_str), Some("AWS::Logs::LogGroup"), "{query}");
        }
        assert_eq!(w["properties"]["region"], "<AWS::Region>");
    }
    // The error widget reads every function's log group (it once left slack-actions out).
    let errors =
        body["widgets"].as_array().unwrap().iter().find(|w| w["properties"]["title"] == "Errors and warnings").expect("an errors widget");
    let query = errors["properties"]["query"].as_str().unwrap();
    for group in ["IngestLogGroup", "WorkerLogGroup", "SweeperLogGroup", "SlackActionsLogGroup"] {
        assert!(query.contains(&format!("SOURCE '<{group}>'")), "the errors widget does not read {group}: {query}");
    }
}

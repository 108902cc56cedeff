//! Metrics in CloudWatch Embedded Metric Format: one JSON line on stdout per metric, which
//! CloudWatch turns into metrics without any API call (so no `cloudwatch:PutMetricData` right and
//! no latency on the hot path). Every metric is recorded in memory too, so tests can assert on it.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{Map, Value, json};

/// The CloudWatch namespace of every Argo Medic metric.
pub const NAMESPACE: &str = "ArgoMedic";

/// Metrics with a breakdown that are also published per `Instance` alone, because an alarm in
/// template.yaml watches their total. Every other breakdown is published per value only: each
/// dimension set is one more CloudWatch custom metric, billed for every hour it is published
/// (docs/cost.md), and the dashboard sums the values with `SEARCH`.
pub const ALARMED_TOTALS: &[&str] = &["WebhookRejected"];

/// Emits metrics with the instance as a dimension.
#[derive(Debug)]
pub struct Metrics {
    instance: String,
    /// Print EMF lines (off in tests that only want the counts).
    print: bool,
    recorded: Mutex<BTreeMap<String, f64>>,
    /// What was recorded per value of a property (`name|key=value`), apart: a property is no
    /// CloudWatch metric, and the metric's total must not count it twice.
    by_property: Mutex<BTreeMap<String, f64>>,
}

impl Metrics {
    pub fn new(instance: impl Into<String>) -> Self {
        Self { instance: instance.into(), print: true, recorded: Mutex::new(BTreeMap::new()), by_property: Mutex::new(BTreeMap::new()) }
    }

    /// Records without printing.
    pub fn quiet(instance: impl Into<String>) -> Self {
        Self { print: false, ..Self::new(instance) }
    }

    /// One metric, with the `Instance` dimension and optionally one more (`Reason`, `Action`, ...).
    /// With one more, it is published per instance and that dimension, and also per instance
    /// alone when an alarm watches the total ([`ALARMED_TOTALS`]).
    pub fn count(&self, name: &str, extra: Option<(&str, &str)>, value: f64) {
        self.emit(name, extra, value, "Count");
    }

    pub fn millis(&self, name: &str, extra: Option<(&str, &str)>, value: f64) {
        self.emit(name, extra, value, "Milliseconds");
    }

    /// A level, not a count (days left on a token): recorded as the latest value, not summed.
    pub fn gauge(&self, name: &str, extra: Option<(&str, &str)>, value: f64) {
        let key = match extra {
            Some((k, v)) => format!("{name}|{k}={v}"),
            None => name.to_owned(),
        };
        self.recorded.lock().unwrap_or_else(|e| e.into_inner()).insert(key, value);
        if self.print {
            println!("{}", self.line(name, extra, value, "None", chrono::Utc::now().timestamp_millis()));
        }
    }

    /// One metric per `Instance` alone, with `properties` in its log line: a breakdown for Logs
    /// Insights (`stats count(*) by Result`) that costs no CloudWatch metric per value, unlike a
    /// dimension (docs/cost.md).
    pub fn count_with(&self, name: &str, properties: &[(&str, &str)], value: f64) {
        self.emit_with(name, None, properties, value, "Count");
    }

    pub fn millis_with(&self, name: &str, properties: &[(&str, &str)], value: f64) {
        self.emit_with(name, None, properties, value, "Milliseconds");
    }

    fn emit(&self, name: &str, extra: Option<(&str, &str)>, value: f64, unit: &str) {
        self.emit_with(name, extra, &[], value, unit);
    }

    fn emit_with(&self, name: &str, extra: Option<(&str, &str)>, properties: &[(&str, &str)], value: f64, unit: &str) {
        let key = match extra {
            Some((k, v)) => format!("{name}|{k}={v}"),
            None => name.to_owned(),
        };
        *self.recorded.lock().unwrap_or_else(|e| e.into_inner()).entry(key).or_default() += value;
        if !properties.is_empty() {
            let mut by_property = self.by_property.lock().unwrap_or_else(|e| e.into_inner());
            for (k, v) in properties {
                *by_property.entry(format!("{name}|{k}={v}")).or_default() += value;
            }
        }
        if self.print {
            println!("{}", self.line_with(name, extra, properties, value, unit, chrono::Utc::now().timestamp_millis()));
        }
    }

    /// The EMF document for one metric.
    pub fn line(&self, name: &str, extra: Option<(&str, &str)>, value: f64, unit: &str, timestamp_ms: i64) -> String {
        self.line_with(name, extra, &[], value, unit, timestamp_ms)
    }

    /// The EMF document for one metric with properties that are not dimensions.
    pub fn line_with(
        &self,
        name: &str,
        extra: Option<(&str, &str)>,
        properties: &[(&str, &str)],
        value: f64,
        unit: &str,
        timestamp_ms: i64,
    ) -> String {
        let mut dimensions = Vec::new();
        let mut doc = Map::new();
        for (k, v) in properties {
            doc.insert((*k).into(), Value::String((*v).into()));
        }
        doc.insert("Instance".into(), Value::String(self.instance.clone()));
        if extra.is_none() || ALARMED_TOTALS.contains(&name) {
            dimensions.push(json!(["Instance"]));
        }
        if let Some((k, v)) = extra {
            dimensions.push(json!(["Instance", k]));
            doc.insert(k.into(), Value::String(v.into()));
        }
        doc.insert(name.into(), json!(value));
        doc.insert(
            "_aws".into(),
            json!({"Timestamp": timestamp_ms, "CloudWatchMetrics": [{"Namespace": NAMESPACE, "Dimensions": dimensions, "Metrics": [{"Name": name, "Unit": unit}]}]}),
        );
        Value::Object(doc).to_string()
    }

    /// The total recorded for `name` (all extra dimensions summed).
    pub fn total(&self, name: &str) -> f64 {
        let recorded = self.recorded.lock().unwrap_or_else(|e| e.into_inner());
        recorded.iter().filter(|(k, _)| k.as_str() == name || k.starts_with(&format!("{name}|"))).map(|(_, v)| v).sum()
    }

    /// True when a line of `name` carried the property `key=value`.
    pub fn has_property(&self, name: &str, (key, value): (&str, &str)) -> bool {
        self.by_property.lock().unwrap_or_else(|e| e.into_inner()).contains_key(&format!("{name}|{key}={value}"))
    }

    /// The total recorded for `name` with one extra dimension value, or one property value.
    pub fn get(&self, name: &str, extra: (&str, &str)) -> f64 {
        let key = format!("{name}|{}={}", extra.0, extra.1);
        let dimension = self.recorded.lock().unwrap_or_else(|e| e.into_inner()).get(&key).copied();
        dimension.or_else(|| self.by_property.lock().unwrap_or_else(|e| e.into_inner()).get(&key).copied()).unwrap_or(0.0)
    }
}

/// The port the application counts through; the inherent methods above do the work.
impl medic_core::ports::Telemetry for Metrics {
    fn count(&self, name: &str, extra: Option<(&str, &str)>, value: f64) {
        Metrics::count(self, name, extra, value)
    }
    fn count_with(&self, name: &str, properties: &[(&str, &str)], value: f64) {
        Metrics::count_with(self, name, properties, value)
    }
    fn millis(&self, name: &str, extra: Option<(&str, &str)>, value: f64) {
        Metrics::millis(self, name, extra, value)
    }
    fn millis_with(&self, name: &str, properties: &[(&str, &str)], value: f64) {
        Metrics::millis_with(self, name, properties, value)
    }
    fn gauge(&self, name: &str, extra: Option<(&str, &str)>, value: f64) {
        Metrics::gauge(self, name, extra, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_emf_line_declares_its_namespace_dimensions_and_unit() {
        let m = Metrics::quiet("prod");
        let line: Value =
            serde_json::from_str(&m.line("WebhookRejected", Some(("Reason", "unauthenticated")), 1.0, "Count", 1_700_000_000_000)).unwrap();
        assert_eq!(line["Instance"], "prod");
        assert_eq!(line["Reason"], "unauthenticated");
        assert_eq!(line["WebhookRejected"], 1.0);
        let spec = &line["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(spec["Namespace"], NAMESPACE);
        assert_eq!(spec["Dimensions"], json!([["Instance"], ["Instance", "Reason"]]));
        assert_eq!(spec["Metrics"][0], json!({"Name": "WebhookRejected", "Unit": "Count"}));
        assert_eq!(line["_aws"]["Timestamp"], 1_700_000_000_000i64);
    }

    #[test]
    fn a_breakdown_nobody_alarms_on_is_published_per_value_only() {
        let m = Metrics::quiet("prod");
        let line: Value = serde_json::from_str(&m.line("HumanActions", Some(("Action", "sync")), 1.0, "Count", 0)).unwrap();
        assert_eq!(line["_aws"]["CloudWatchMetrics"][0]["Dimensions"], json!([["Instance", "Action"]]), "no per-Instance twin");
        let plain: Value = serde_json::from_str(&m.line("QueueLag", None, 5.0, "Milliseconds", 0)).unwrap();
        assert_eq!(plain["_aws"]["CloudWatchMetrics"][0]["Dimensions"], json!([["Instance"]]));
    }

    #[test]
    fn a_property_breakdown_is_one_metric_per_instance_with_the_values_in_its_line() {
        let m = Metrics::quiet("prod");
        let line: Value = serde_json::from_str(&m.line_with(
            "StepLatency",
            None,
            &[("Result", "refreshed"), ("FailureMode", "stale-comparison")],
            41.0,
            "Milliseconds",
            0,
        ))
        .unwrap();
        assert_eq!(line["_aws"]["CloudWatchMetrics"][0]["Dimensions"], json!([["Instance"]]), "the properties are no dimensions");
        assert_eq!(line["Result"], "refreshed");
        assert_eq!(line["FailureMode"], "stale-comparison");
        assert_eq!(line["StepLatency"], 41.0);
        m.millis_with("StepLatency", &[("Result", "refreshed")], 41.0);
        m.millis_with("StepLatency", &[("Result", "deferred")], 9.0);
        assert_eq!(m.total("StepLatency"), 50.0, "properties are not counted twice in the total");
        assert_eq!(m.get("StepLatency", ("Result", "deferred")), 9.0);
        assert!(m.has_property("StepLatency", ("Result", "refreshed")) && !m.has_property("StepLatency", ("Result", "synced")));
    }

    #[test]
    fn recorded_metrics_add_up_per_dimension() {
        let m = Metrics::quiet("prod");
        m.count("WebhookRejected", Some(("Reason", "oversized")), 1.0);
        m.count("WebhookRejected", Some(("Reason", "oversized")), 1.0);
        m.count("WebhookRejected", Some(("Reason", "malformed")), 1.0);
        assert_eq!(m.get("WebhookRejected", ("Reason", "oversized")), 2.0);
        assert_eq!(m.total("WebhookRejected"), 3.0);
        assert_eq!(m.total("Webhook"), 0.0);
    }
}

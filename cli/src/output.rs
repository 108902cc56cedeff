//! What `-o` can say, per kind of output, in the argocd CLI's words: `json` and `yaml` are one
//! document, `wide` is the table with every column and nothing cut, `name` the names alone; JSON
//! Lines, one object a line for `jq -c` and for streaming, is `jsonl`. One enum per kind of output
//! so each command's `--help` offers only what it prints, described truly for it.

use clap::ValueEnum;
use serde::Serialize;

/// `medic sweep`: rows that stream as each app finishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SweepOutput {
    /// Aligned columns, a row as each app finishes; DETAIL cut at 100 characters.
    Table,
    /// The table with the idempotency key and Argo CD calls, DETAIL whole.
    Wide,
    /// One JSON document at the end: `rows` and a `summary` (the partial one when interrupted).
    Json,
    /// One YAML document at the end, as `json`.
    Yaml,
    /// One JSON object a line, as each app finishes; no summary.
    Jsonl,
    /// The name of each app looked at, a line as it finishes.
    Name,
}

/// `medic decide` and `medic demo`: one decision per app.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DecisionOutput {
    /// One app: its decision object on one line. Several: one JSON array, a decision a line.
    Json,
    /// One decision object a line.
    Jsonl,
    /// One YAML document: a decision, or a list of them.
    Yaml,
    /// A block per decision: reason, rule, map rows read, evidence.
    Text,
    /// A row per decision; REASON cut at 110 characters.
    Table,
    /// The table with the rule and the idempotency key, REASON whole.
    Wide,
    /// The decided apps' names, a line each.
    Name,
}

/// `medic incidents`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum IncidentsOutput {
    /// A row per incident.
    Table,
    /// Every incident in full, with the evidence of its last decision (as `show`).
    Text,
    /// One JSON array of incidents.
    Json,
    /// One YAML list of incidents.
    Yaml,
    /// One incident object a line.
    Jsonl,
    /// The apps' names, a line each.
    Name,
}

/// `medic catalogue` and `medic map`: reference tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReferenceOutput {
    /// Aligned columns.
    Table,
    /// The Markdown table docs/decisions.md carries.
    Markdown,
    /// One JSON array.
    Json,
    /// One YAML list.
    Yaml,
    /// One object a line.
    Jsonl,
}

/// `medic check`: findings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CheckOutput {
    /// A line per check, for people.
    Text,
    /// One JSON array of findings.
    Json,
    /// One YAML list of findings.
    Yaml,
    /// One finding object a line.
    Jsonl,
}

/// The one-document formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Document {
    Json,
    Yaml,
}

/// `value` as one document: indented JSON (as `argocd ... -o json` prints), or YAML.
pub fn document<T: Serialize + ?Sized>(value: &T, format: Document) -> anyhow::Result<String> {
    Ok(match format {
        Document::Json => serde_json::to_string_pretty(value)? + "\n",
        Document::Yaml => serde_norway::to_string(value)?,
    })
}

/// `values` as JSON Lines.
pub fn json_lines<T: Serialize>(values: impl IntoIterator<Item = T>) -> serde_json::Result<String> {
    values.into_iter().map(|v| serde_json::to_string(&v).map(|s| s + "\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_is_one_value_and_json_lines_one_a_line() {
        let rows = vec![serde_json::json!({"app": "argocd/a", "n": 1}), serde_json::json!({"app": "argocd/b", "n": 2})];
        let json = document(&rows, Document::Json).unwrap();
        assert_eq!(serde_json::from_str::<serde_json::Value>(&json).unwrap(), serde_json::Value::from(rows.clone()));
        let yaml = document(&rows, Document::Yaml).unwrap();
        assert_eq!(serde_norway::from_str::<serde_json::Value>(&yaml).unwrap(), serde_json::Value::from(rows.clone()));
        let lines = json_lines(&rows).unwrap();
        let parsed: Vec<serde_json::Value> = lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(parsed, rows);
    }
}

//! Small helpers for editing Applications as raw JSON, tolerant of any shape a test inserts.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value};

/// The object at `path`, created (or replacing a non-object) on the way.
pub(crate) fn object_at<'a>(value: &'a mut Value, path: &[&str]) -> &'a mut Map<String, Value> {
    let mut map = force_object(value);
    for key in path {
        let next = map.entry((*key).to_string()).or_insert_with(|| Value::Object(Map::new()));
        map = force_object(next);
    }
    map
}

fn force_object(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = Value::Object(Map::new());
    }
    match value {
        Value::Object(map) => map,
        // Made an object just above.
        _ => unreachable!("value is an object"),
    }
}

/// The string at a dotted path, if it is a string.
pub(crate) fn str_at<'a>(value: &'a Value, path: &str) -> Option<&'a str> {
    lookup(value, path).and_then(Value::as_str)
}

/// The value at a dotted path.
pub(crate) fn lookup<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(value, |v, key| v.get(key))
}

/// Kubernetes `metav1.Time`: RFC 3339 with whole seconds, UTC as `Z`.
pub(crate) fn timestamp(t: DateTime<Utc>) -> Value {
    Value::String(t.to_rfc3339_opts(SecondsFormat::Secs, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn object_at_creates_and_replaces_on_the_way() {
        let mut v = json!({"status": "broken"});
        object_at(&mut v, &["status", "health"]).insert("status".into(), json!("Healthy"));
        assert_eq!(v, json!({"status": {"health": {"status": "Healthy"}}}));
        assert_eq!(str_at(&v, "status.health.status"), Some("Healthy"));
    }
}

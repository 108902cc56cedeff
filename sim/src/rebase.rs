//! Shifting captured sample apps in time.
//!
//! Sample Applications are captured at one moment; a policy judging "reconciled 2 hours ago" or
//! "running for 40 minutes" needs them to look the same relative to the present. Every string
//! in the app that is a complete RFC 3339 timestamp is moved by `now - captured_at`, keeping its
//! precision (Kubernetes writes whole seconds).

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use serde_json::Value;

/// When the sample Applications under `events/apps/` were captured (events/README.md): the one
/// instant every user of the samples (the CLI's scenarios, the simulator, chaos, tests) rebases from.
pub const SAMPLES_CAPTURED_AT: &str = "2026-11-01T12:30:00Z";

/// Moves timestamps captured at `captured_at` so they sit the same distance before `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rebase {
    /// When the samples were captured.
    pub captured_at: DateTime<Utc>,
    /// The present the samples should be relative to.
    pub now: DateTime<Utc>,
}

impl Rebase {
    /// The sample apps moved so they were captured at `now`.
    pub fn samples_to(now: DateTime<Utc>) -> Self {
        Self { captured_at: SAMPLES_CAPTURED_AT.parse().expect("SAMPLES_CAPTURED_AT is RFC 3339"), now }
    }

    /// The shift applied to every timestamp.
    pub fn offset(&self) -> TimeDelta {
        self.now - self.captured_at
    }

    /// Shifts every RFC 3339 string anywhere in `value`.
    pub fn apply(&self, value: &mut Value) {
        let offset = self.offset();
        shift(value, offset);
    }
}

fn shift(value: &mut Value, offset: TimeDelta) {
    match value {
        Value::String(s) => {
            if let Some(shifted) = shift_timestamp(s, offset) {
                *s = shifted;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| shift(v, offset)),
        Value::Object(map) => map.values_mut().for_each(|v| shift(v, offset)),
        _ => {}
    }
}

fn shift_timestamp(s: &str, offset: TimeDelta) -> Option<String> {
    // Cheap pre-check: RFC 3339 starts with `YYYY-MM-DDT`.
    let bytes = s.as_bytes();
    if bytes.len() < 20 || bytes[4] != b'-' || !matches!(bytes[10], b'T' | b't') {
        return None;
    }
    let parsed = DateTime::parse_from_rfc3339(s).ok()?.with_timezone(&Utc);
    let shifted = parsed.checked_add_signed(offset)?;
    let digits = s.split_once('.').map(|(_, frac)| frac.bytes().take_while(u8::is_ascii_digit).count()).unwrap_or(0);
    let format = match digits {
        0 => SecondsFormat::Secs,
        1..=3 => SecondsFormat::Millis,
        4..=6 => SecondsFormat::Micros,
        _ => SecondsFormat::Nanos,
    };
    Some(shifted.to_rfc3339_opts(format, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("timestamp").with_timezone(&Utc)
    }

    #[test]
    fn every_timestamp_moves_and_other_strings_stay() {
        let rebase = Rebase { captured_at: at("2026-11-01T12:30:00Z"), now: at("2026-12-01T08:00:00Z") };
        let mut app = json!({
            "a": "2026-11-01T12:29:02Z",
            "b": ["2026-11-01T10:00:00.123456Z", "Retrying attempt #2 at 3:04PM."],
            "c": {"d": "2026-11-01"}, "e": 5
        });
        rebase.apply(&mut app);
        assert_eq!(app["a"], "2026-12-01T07:59:02Z");
        assert_eq!(app["b"][0], "2026-12-01T05:30:00.123456Z");
        assert_eq!(app["b"][1], "Retrying attempt #2 at 3:04PM.");
        assert_eq!(app["c"]["d"], "2026-11-01");
    }
}

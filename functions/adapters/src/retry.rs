//! What the adapters' retries share: the one reading of a `Retry-After` header (Argo CD's
//! gateway and proxies in front of it, Slack), and the jittered backoff of the state table's
//! retry loops (a claim cancelled by a concurrent transaction, keys a `BatchGetItem` left
//! unprocessed), from backon as the Argo CD client's retries are.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};

/// A `Retry-After` in seconds, as proxies, Argo CD's gateway and Slack send it. An HTTP date is
/// rare enough on these APIs to be read as no hint (the caller's own backoff applies).
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

/// The waits between `tries` attempts of a state-table write or read: exponential from `first`,
/// doubling, with full jitter so the workers that met the same conflict do not meet again.
pub fn store_backoff(first: Duration, tries: usize) -> impl Iterator<Item = Duration> {
    ExponentialBuilder::default()
        .with_min_delay(first)
        .with_max_delay(first * 32)
        .with_max_times(tries.saturating_sub(1))
        .with_jitter()
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_ignores_dates_and_garbage() {
        let mut h = reqwest::header::HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert(reqwest::header::RETRY_AFTER, " 7 ".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert(reqwest::header::RETRY_AFTER, "Wed, 21 Oct 2026 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn the_store_backoff_waits_tries_minus_one_times_growing_and_jittered() {
        let waits: Vec<Duration> = store_backoff(Duration::from_millis(20), 6).collect();
        assert_eq!(waits.len(), 5);
        for (i, w) in waits.iter().enumerate() {
            let base = Duration::from_millis(20) * 2u32.pow(i as u32);
            assert!(*w >= base && *w <= base * 2, "wait {i}: {w:?} outside [{base:?}, {:?}]", base * 2);
        }
        let again: Vec<Duration> = store_backoff(Duration::from_millis(20), 6).collect();
        assert_ne!(waits, again, "jittered: two workers do not wait alike");
    }
}

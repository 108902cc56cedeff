//! A token bucket that many workers share through a store ([`crate::ports::BucketStore`]): the
//! arithmetic only, so the store's adapters and the in-memory twin keep one rule.
//!
//! Why shared: the worker Lambda's event source runs up to N workers, and a static split of the
//! instance's budget (`rate / N` each) leaves most of it unused when fewer run. The storm benchmark
//! measured the drain at 1.93× the budget's bound with one of two workers running
//! (docs/benchmarks.md). A bucket every worker draws from gives the running ones all of it.
//!
//! The state is whole milli-tokens and epoch milliseconds, so a compare-and-set on it is exact. A
//! worker takes a few tokens at once ([`take`]'s `want`): one conditional write per block, not per
//! refresh, keeps the store's cost low; the block is small so no worker sits on tokens another one
//! waits for.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Refreshes per minute an instance allows when not configured (`MEDIC_REFRESH_PER_MINUTE`):
/// the budget's default, and the sweep's estimate of a recovery wave's length.
pub const DEFAULT_REFRESH_PER_MINUTE: u32 = 300;

/// A bucket as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketState {
    /// Tokens left at `at_ms`, in thousandths.
    pub milli_tokens: u64,
    /// When `milli_tokens` was computed (epoch milliseconds, the writer's clock).
    pub at_ms: i64,
    /// Bumped by every write: what a compare-and-set compares.
    pub version: u64,
}

/// A bucket's rate and capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketRate {
    /// Tokens added per minute: the budget's rate (`MEDIC_REFRESH_PER_MINUTE` and the like).
    pub per_minute: u32,
    /// The most tokens the bucket holds (what an idle period can save up).
    pub burst: u32,
}

impl BucketRate {
    /// The budget's rate with the burst the in-process buckets use: a tenth of a minute's worth,
    /// so work starts promptly but cannot spike.
    pub fn per_minute(per_minute: u32) -> Self {
        let per_minute = per_minute.max(1);
        Self { per_minute, burst: (per_minute / 10).max(1) }
    }
}

/// What the bucket gives a worker now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// `tokens` (at least one), and the state to write in place of the one read.
    Granted {
        /// The tokens granted: at least one, at most the `want` asked for.
        tokens: u32,
        /// The bucket with them taken out, to write if the stored state is still the one read.
        next: BucketState,
    },
    /// Not one token yet: look again after this long.
    Wait(Duration),
}

/// Takes up to `want` tokens from the bucket read (`None`: never written, so full) at `now_ms`.
/// A writer whose clock is behind the stored time refills nothing, and the stored time never
/// moves back, so clock skew between workers can slow the bucket but never inflate it.
pub fn take(read: Option<&BucketState>, rate: BucketRate, now_ms: i64, want: u32) -> Take {
    let capacity = u64::from(rate.burst.max(1)) * 1000;
    let (milli, at, version) = match read {
        None => (capacity, now_ms, 0),
        Some(s) => {
            let elapsed = u64::try_from(now_ms.saturating_sub(s.at_ms)).unwrap_or(0);
            // per_minute tokens in 60,000 ms: elapsed × per_minute / 60 milli-tokens.
            let refill = elapsed.saturating_mul(u64::from(rate.per_minute)) / 60;
            (s.milli_tokens.saturating_add(refill).min(capacity), s.at_ms.max(now_ms), s.version)
        }
    };
    let whole = u32::try_from(milli / 1000).unwrap_or(u32::MAX);
    let tokens = want.max(1).min(whole);
    if tokens == 0 {
        let missing = 1000 - milli;
        // Rounded up: waking a millisecond early would only find the bucket still short.
        let wait_ms = (missing * 60).div_ceil(u64::from(rate.per_minute.max(1)));
        return Take::Wait(Duration::from_millis(wait_ms.max(1)));
    }
    Take::Granted { tokens, next: BucketState { milli_tokens: milli - u64::from(tokens) * 1000, at_ms: at, version: version + 1 } }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const RATE: BucketRate = BucketRate { per_minute: 300, burst: 30 };

    fn granted(t: Take) -> (u32, BucketState) {
        match t {
            Take::Granted { tokens, next } => (tokens, next),
            Take::Wait(d) => panic!("waited {d:?}"),
        }
    }

    #[test]
    fn a_new_bucket_is_full_and_gives_at_most_what_is_asked() {
        let (n, s) = granted(take(None, RATE, 1_000, 10));
        assert_eq!((n, s.milli_tokens, s.at_ms, s.version), (10, 20_000, 1_000, 1));
        let (n, s) = granted(take(Some(&s), RATE, 1_000, 25));
        assert_eq!((n, s.milli_tokens, s.version), (20, 0, 2), "what is left, not what is asked");
    }

    #[test]
    fn an_empty_bucket_says_when_the_next_token_comes() {
        let empty = BucketState { milli_tokens: 0, at_ms: 0, version: 7 };
        // 300 a minute: one token every 200 ms.
        assert_eq!(take(Some(&empty), RATE, 0, 5), Take::Wait(Duration::from_millis(200)));
        assert_eq!(take(Some(&empty), RATE, 150, 5), Take::Wait(Duration::from_millis(50)));
        let (n, s) = granted(take(Some(&empty), RATE, 200, 5));
        assert_eq!((n, s.milli_tokens, s.at_ms, s.version), (1, 0, 200, 8));
    }

    #[test]
    fn an_idle_bucket_saves_up_only_its_burst() {
        let empty = BucketState { milli_tokens: 0, at_ms: 0, version: 1 };
        let (n, s) = granted(take(Some(&empty), RATE, 3_600_000, 100));
        assert_eq!((n, s.milli_tokens), (30, 0));
    }

    #[test]
    fn a_writer_with_a_slow_clock_refills_nothing_and_keeps_the_stored_time() {
        let s = BucketState { milli_tokens: 1_500, at_ms: 10_000, version: 3 };
        let (n, next) = granted(take(Some(&s), RATE, 9_000, 5));
        assert_eq!((n, next.milli_tokens, next.at_ms), (1, 500, 10_000));
    }

    proptest! {
        /// However workers interleave their takes, the bucket never gives more than its burst
        /// plus the rate times the time elapsed.
        #[test]
        fn never_more_than_burst_plus_rate(steps in proptest::collection::vec((0i64..2_000, 1u32..12), 1..200),
                                           per_minute in 1u32..5_000) {
            let rate = BucketRate::per_minute(per_minute);
            let mut state: Option<BucketState> = None;
            let (mut now, mut given) = (0i64, 0u64);
            for (advance, want) in steps {
                now += advance;
                if let Take::Granted { tokens, next } = take(state.as_ref(), rate, now, want) {
                    prop_assert!(tokens <= want);
                    given += u64::from(tokens);
                    state = Some(next);
                }
                let bound = u64::from(rate.burst) + (u64::try_from(now).unwrap() * u64::from(rate.per_minute)) / 60_000;
                prop_assert!(given <= bound, "gave {} by {} ms, bound {}", given, now, bound);
            }
        }
    }
}

//! Per-instance budgets for refresh, hard refresh and sync, as in-process token buckets
//! (`governor`, GCRA). A caller waits up to `max_wait` for a token, then is told to come back
//! later. For the serverless pipeline, where many workers share one Argo CD, the same port is
//! implemented over a shared store.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::{Jitter, Quota, RateLimiter, clock::DefaultClock, state::InMemoryState, state::NotKeyed};
use medic_core::ports::{Budget, BudgetExhausted, BudgetKind};

/// Rates per instance. Defaults follow docs/argo-cd-behaviour.md §5: refreshes at about the controller's own
/// pace, hard refreshes scarce (they bypass the repo-server's cache), syncs few.
#[derive(Debug, Clone, Copy)]
pub struct BudgetRates {
    pub refresh_per_minute: u32,
    pub hard_refresh_per_minute: u32,
    pub sync_per_minute: u32,
    /// Longest a caller waits for a token before being deferred.
    pub max_wait: Duration,
}

impl Default for BudgetRates {
    fn default() -> Self {
        Self { refresh_per_minute: 300, hard_refresh_per_minute: 10, sync_per_minute: 30, max_wait: Duration::from_secs(5) }
    }
}

impl BudgetRates {
    /// One worker's budget when at most `workers` run at once: its share of every rate (together
    /// they never exceed the instance's), and a wait long enough for a whole batch of `batch`
    /// steps to take their refresh at that share (at most a sixth of the function's `timeout`,
    /// at least `max_wait`). A step that gives up waiting is re-enqueued and reads its app again
    /// when it comes back: with the 2 s wait, the storm benchmark (docs/benchmarks.md) measured
    /// one such extra read for every third stale app. Waiting a few seconds inside the invocation
    /// costs less than those reads.
    pub fn worker_share(&self, workers: u32, batch: u32, timeout: Duration) -> BudgetRates {
        let share = |per_minute: u32| (per_minute / workers.max(1)).max(1);
        let refresh = share(self.refresh_per_minute);
        let batch_wait = Duration::from_millis(u64::from(batch) * 60_000 / u64::from(refresh)) + Duration::from_secs(1);
        BudgetRates {
            refresh_per_minute: refresh,
            hard_refresh_per_minute: share(self.hard_refresh_per_minute),
            sync_per_minute: share(self.sync_per_minute),
            max_wait: batch_wait.min(timeout / 6).max(self.max_wait),
        }
    }
}

type Bucket = RateLimiter<NotKeyed, InMemoryState, DefaultClock>;

/// Token buckets in this process.
pub struct LocalBudget {
    refresh: Bucket,
    hard_refresh: Bucket,
    sync: Bucket,
    max_wait: Duration,
}

fn bucket(per_minute: u32) -> Bucket {
    let n = NonZeroU32::new(per_minute.max(1)).expect("at least one");
    // Burst of a tenth of a minute's budget, so a sweep starts promptly but cannot spike.
    let burst = NonZeroU32::new((per_minute / 10).max(1)).expect("at least one");
    RateLimiter::direct(Quota::per_minute(n).allow_burst(burst))
}

impl LocalBudget {
    pub fn new(rates: BudgetRates) -> Self {
        Self {
            refresh: bucket(rates.refresh_per_minute),
            hard_refresh: bucket(rates.hard_refresh_per_minute),
            sync: bucket(rates.sync_per_minute),
            max_wait: rates.max_wait,
        }
    }

    fn bucket(&self, kind: BudgetKind) -> &Bucket {
        match kind {
            BudgetKind::Refresh => &self.refresh,
            BudgetKind::HardRefresh => &self.hard_refresh,
            BudgetKind::Sync => &self.sync,
        }
    }
}

impl Budget for LocalBudget {
    async fn acquire(&self, kind: BudgetKind) -> Result<(), BudgetExhausted> {
        let bucket = self.bucket(kind);
        // Jitter spreads callers that wake together, so Argo CD sees a smooth rate.
        let wait = bucket.until_ready_with_jitter(Jitter::up_to(Duration::from_millis(50)));
        tokio::time::timeout(self.max_wait, wait).await.map_err(|_| {
            let retry_after = match bucket.check() {
                Ok(()) => Duration::ZERO,
                Err(not_until) => not_until.wait_time_from(governor::clock::Clock::now(&DefaultClock::default())),
            };
            BudgetExhausted { kind, retry_after: retry_after.max(Duration::from_secs(1)) }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_bucket_grants_its_burst_then_defers_with_a_retry_after() {
        let budget = LocalBudget::new(BudgetRates {
            refresh_per_minute: 20,
            hard_refresh_per_minute: 1,
            sync_per_minute: 1,
            max_wait: Duration::from_millis(20),
        });
        assert!(budget.acquire(BudgetKind::HardRefresh).await.is_ok());
        let err = budget.acquire(BudgetKind::HardRefresh).await.unwrap_err();
        assert_eq!(err.kind, BudgetKind::HardRefresh);
        assert!(err.retry_after >= Duration::from_secs(50), "{err}");
        // Budgets are separate: the refresh bucket still has its burst of two.
        assert!(budget.acquire(BudgetKind::Refresh).await.is_ok());
        assert!(budget.acquire(BudgetKind::Refresh).await.is_ok());
        assert!(budget.acquire(BudgetKind::Refresh).await.is_err());
    }

    #[test]
    fn a_worker_gets_its_share_and_waits_for_a_batch_within_its_timeout() {
        let instance =
            BudgetRates { refresh_per_minute: 300, hard_refresh_per_minute: 10, sync_per_minute: 30, max_wait: Duration::from_secs(2) };
        let w = instance.worker_share(2, 10, Duration::from_secs(60));
        assert_eq!((w.refresh_per_minute, w.hard_refresh_per_minute, w.sync_per_minute), (150, 5, 15));
        assert_eq!(w.max_wait, Duration::from_secs(5), "10 refreshes at 2.5 a second, and a second of slack");
        let tight = instance.worker_share(2, 10, Duration::from_secs(12));
        assert_eq!(tight.max_wait, Duration::from_secs(2), "never past a sixth of the timeout, never under the instance's wait");
        let fast = BudgetRates { refresh_per_minute: 60_000, ..instance }.worker_share(2, 10, Duration::from_secs(60));
        assert_eq!(fast.max_wait, Duration::from_secs(2));
    }
}

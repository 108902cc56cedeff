//! Per-instance budgets for refresh, hard refresh and sync. A caller waits up to `max_wait` for a
//! token, then is told to come back later.
//!
//! - [`LocalBudget`]: in-process token buckets (`governor`, GCRA), for one process (`medic sweep`,
//!   `medic serve`), and for a worker when the shared buckets cannot be reached.
//! - [`SharedBudget`]: token buckets in a store every worker reads ([`BucketStore`]; the state
//!   table on AWS), so the workers that run get the whole instance budget between them.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use governor::{Quota, RateLimiter, clock::DefaultClock, state::InMemoryState, state::NotKeyed};
use medic_core::budget::{BucketRate, Take, take};
use medic_core::ladder::BudgetKind;
use medic_core::ports::{BucketStore, Budget, BudgetExhausted};
use rand::Rng;

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
        Self {
            refresh_per_minute: medic_core::budget::DEFAULT_REFRESH_PER_MINUTE,
            hard_refresh_per_minute: 10,
            sync_per_minute: 30,
            max_wait: Duration::from_secs(5),
        }
    }
}

impl BudgetRates {
    /// The rate of one budget.
    pub fn per_minute(&self, kind: BudgetKind) -> u32 {
        match kind {
            BudgetKind::Refresh => self.refresh_per_minute,
            BudgetKind::HardRefresh => self.hard_refresh_per_minute,
            BudgetKind::Sync => self.sync_per_minute,
        }
    }

    /// One worker's budget when at most `workers` run at once: its share of every rate (together
    /// they never exceed the instance's), and a wait long enough for a whole batch of `batch`
    /// steps to take their refresh at that share (at most the function's
    /// [`medic_core::timeouts::Timeouts::budget_wait`], at least `max_wait`). A step that gives up waiting is re-enqueued and reads its app again
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
            max_wait: batch_wait.min(medic_core::timeouts::Timeouts::of(timeout).budget_wait).max(self.max_wait),
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
        // Waits on tokio's clock (governor's own `until_ready` sleeps on futures-timer: a thread
        // of its own, deaf to a test's paused clock). Jitter spreads callers that wake together,
        // so Argo CD sees a smooth rate.
        let wait = async {
            while let Err(not_until) = bucket.check() {
                let jitter = Duration::from_millis(rand::random_range(0..50));
                tokio::time::sleep(not_until.wait_time_from(governor::clock::Clock::now(&DefaultClock::default())) + jitter).await;
            }
        };
        tokio::time::timeout(self.max_wait, wait).await.map_err(|_| {
            let retry_after = match bucket.check() {
                Ok(()) => Duration::ZERO,
                Err(not_until) => not_until.wait_time_from(governor::clock::Clock::now(&DefaultClock::default())),
            };
            BudgetExhausted { kind, retry_after: retry_after.max(Duration::from_secs(1)) }
        })
    }
}

/// The most tokens a worker takes from a shared bucket at once. One conditional write per block
/// rather than per refresh; small, so a worker never sits on tokens another one waits for (it
/// uses a block within a second at the default rate).
pub const SHARED_BLOCK: u32 = 5;

/// How long taken tokens stay usable: a warm container's leftovers must not add a burst minutes
/// later to the one the bucket already allows.
const POOL_TTL: Duration = Duration::from_secs(10);

/// Tokens this worker took from a shared bucket and has not used yet.
struct Pool {
    tokens: u32,
    taken_at: Instant,
}

/// Budgets shared by every worker of the instance: one token bucket per budget in `store`, at the
/// instance's rates ([`medic_core::budget`]). The storm benchmark (docs/benchmarks.md) measured
/// why: with the static split (`rate / max concurrency` each), one of two workers running drained
/// at 1.93× the budget's bound.
///
/// When the store fails, the token is deferred (a few seconds): the shared bucket is the only
/// count of what the instance spent, so a worker that cannot read it cannot know what it may
/// spend. Before, it fell back to its static share while the workers that could still reach the
/// table drained the whole bucket, and the instance spent above its rate (reliability review
/// M2). The claims live in the same table, so a worker that cannot reach it cannot act anyway.
///
/// One acquirer per budget and container talks to the store at a time; the others wait for it
/// and take from the block it pooled: a batch of ten waiting steps makes one conditional write,
/// not ten racing ones (each lost race is a write DynamoDB bills and throttles).
pub struct SharedBudget<S> {
    store: S,
    rates: BudgetRates,
    pools: Mutex<HashMap<BudgetKind, Pool>>,
    /// Held by the acquirer that talks to the store, per budget.
    readers: [tokio::sync::Mutex<()>; 3],
}

/// How long a token the store could not answer for is deferred.
const STORE_FAILED_RETRY: Duration = Duration::from_secs(5);

impl<S: BucketStore> SharedBudget<S> {
    /// `rates` are the instance's; `share` is this worker's share of them
    /// ([`BudgetRates::worker_share`]): its wait for a token.
    pub fn new(store: S, rates: BudgetRates, share: BudgetRates) -> Self {
        Self {
            store,
            rates: BudgetRates { max_wait: share.max_wait, ..rates },
            pools: Mutex::new(HashMap::new()),
            readers: Default::default(),
        }
    }

    fn reader(&self, kind: BudgetKind) -> &tokio::sync::Mutex<()> {
        match kind {
            BudgetKind::Refresh => &self.readers[0],
            BudgetKind::HardRefresh => &self.readers[1],
            BudgetKind::Sync => &self.readers[2],
        }
    }

    fn take_pooled(&self, kind: BudgetKind) -> bool {
        let mut pools = self.pools.lock().expect("pool lock");
        match pools.get_mut(&kind) {
            Some(pool) if pool.tokens > 0 && pool.taken_at.elapsed() < POOL_TTL => {
                pool.tokens -= 1;
                true
            }
            _ => false,
        }
    }

    fn keep(&self, kind: BudgetKind, tokens: u32) {
        self.pools.lock().expect("pool lock").insert(kind, Pool { tokens, taken_at: Instant::now() });
    }

    fn store_failed(&self, kind: BudgetKind, error: medic_core::ports::StoreError) -> Result<(), BudgetExhausted> {
        tracing::warn!(%error, budget = kind.as_str(), "shared budget unreadable; the token is deferred");
        Err(BudgetExhausted { kind, retry_after: STORE_FAILED_RETRY })
    }
}

/// How many tokens one take moves from the shared bucket to this worker's pool: what the bucket
/// refills in a second, at most [`SHARED_BLOCK`] and the burst. At the refresh rate (300 a minute)
/// that is the whole block, as docs/cost.md measured; at the sync and hard refresh rates (30 and
/// 10 a minute) one token: a block those rates take seconds to refill expired unused in one
/// worker's pool while another waited (a third of the sync budget reached the workers,
/// reliability review L9).
fn block_of(rate: BucketRate) -> u32 {
    (rate.per_minute / 60).clamp(1, SHARED_BLOCK.min(rate.burst).max(1))
}

fn jitter(max_ms: u64) -> Duration {
    Duration::from_millis(rand::rng().random_range(0..=max_ms))
}

impl<S: BucketStore> Budget for SharedBudget<S> {
    async fn acquire(&self, kind: BudgetKind) -> Result<(), BudgetExhausted> {
        if self.take_pooled(kind) {
            return Ok(());
        }
        let rate = BucketRate::per_minute(self.rates.per_minute(kind));
        let block = block_of(rate);
        let deadline = Instant::now() + self.rates.max_wait;
        let Ok(_reading) = tokio::time::timeout_at(deadline.into(), self.reader(kind).lock()).await else {
            return Err(BudgetExhausted { kind, retry_after: Duration::from_secs(1) });
        };
        // The acquirer before this one may have pooled a block while this one waited.
        if self.take_pooled(kind) {
            return Ok(());
        }
        let mut lost = 0u32;
        loop {
            let read = match self.store.read_bucket(kind).await {
                Ok(read) => read,
                Err(e) => return self.store_failed(kind, e),
            };
            let wait = match take(read.as_ref(), rate, chrono::Utc::now().timestamp_millis(), block) {
                Take::Granted { tokens, next } => match self.store.replace_bucket(kind, read.as_ref(), &next).await {
                    Ok(true) => {
                        self.keep(kind, tokens - 1);
                        return Ok(());
                    }
                    // Another container wrote first: read again a moment later, longer after each
                    // loss, so containers that keep colliding spread out.
                    Ok(false) => {
                        lost += 1;
                        jitter(10 << lost.min(5))
                    }
                    Err(e) => return self.store_failed(kind, e),
                },
                // Jitter spreads workers that wake together, so Argo CD sees a smooth rate.
                Take::Wait(wait) => wait + jitter(50),
            };
            if Instant::now() + wait > deadline {
                return Err(BudgetExhausted { kind, retry_after: wait.max(Duration::from_secs(1)) });
            }
            tokio::time::sleep(wait).await;
        }
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

    /// A store that cannot be reached: what a worker sees when DynamoDB throttles or fails.
    struct Unreachable;

    impl BucketStore for Unreachable {
        async fn read_bucket(&self, _: BudgetKind) -> Result<Option<medic_core::budget::BucketState>, medic_core::ports::StoreError> {
            Err(medic_core::ports::StoreError::unavailable("DynamoDB GetItem: service unavailable"))
        }
        async fn replace_bucket(
            &self,
            _: BudgetKind,
            _: Option<&medic_core::budget::BucketState>,
            _: &medic_core::budget::BucketState,
        ) -> Result<bool, medic_core::ports::StoreError> {
            unreachable!("never read, never written")
        }
    }

    fn instance(per_minute: u32, wait: Duration) -> BudgetRates {
        BudgetRates { refresh_per_minute: per_minute, hard_refresh_per_minute: 1, sync_per_minute: 1, max_wait: wait }
    }

    /// Takes refresh tokens until `budget` defers one; how many it got.
    async fn drain(budget: &impl Budget) -> u32 {
        let mut n = 0;
        while budget.acquire(BudgetKind::Refresh).await.is_ok() {
            n += 1;
        }
        n
    }

    #[tokio::test]
    async fn one_running_worker_gets_the_whole_shared_budget_where_the_static_split_gives_it_half() {
        // 600 a minute, burst 60; two workers at most, so the static share is 300 a minute, burst 30.
        let rates = instance(600, Duration::from_millis(10));
        let share = rates.worker_share(2, 10, Duration::from_secs(60));
        let shared =
            SharedBudget::new(crate::memory::MemoryBuckets::default(), rates, BudgetRates { max_wait: Duration::from_millis(10), ..share });
        let alone = drain(&shared).await;
        let split = drain(&LocalBudget::new(BudgetRates { max_wait: Duration::from_millis(10), ..share })).await;
        assert!((60..=62).contains(&alone), "the instance's burst, and what refilled meanwhile: {alone}");
        assert!((30..=31).contains(&split), "the static share's burst: {split}");
    }

    #[tokio::test]
    async fn workers_drawing_together_never_exceed_the_instance_rate() {
        // 1,200 a minute (20 a second), burst 120: four workers for about 1.5 s.
        let buckets = std::sync::Arc::new(crate::memory::MemoryBuckets::default());
        let rates = instance(1_200, Duration::from_millis(1_500));
        let share = rates.worker_share(4, 10, Duration::from_secs(60));
        let started = Instant::now();
        let workers = (0..4).map(|_| {
            let budget = SharedBudget::new(buckets.clone(), rates, BudgetRates { max_wait: Duration::from_millis(1_500), ..share });
            tokio::spawn(async move {
                let mut n = 0u32;
                while started.elapsed() < Duration::from_millis(1_500) && budget.acquire(BudgetKind::Refresh).await.is_ok() {
                    n += 1;
                }
                n
            })
        });
        let mut total = 0;
        for w in workers.collect::<Vec<_>>() {
            total += w.await.unwrap();
        }
        let elapsed = started.elapsed().as_secs_f64();
        // Tokens left in the workers' pools were taken, so they count: at most a block each.
        let bound = 120.0 + 20.0 * elapsed + f64::from(4 * SHARED_BLOCK);
        assert!(f64::from(total) <= bound, "{total} tokens in {elapsed:.2} s, bound {bound:.0}");
        assert!(total >= 120 + 20, "the burst and at least a second's refill: {total}");
    }

    /// L9 (reliability review of 0a3f9d5): at the sync rate (30 a minute, a burst of three) one
    /// worker's take moved the whole burst into its pool, where two tokens expired unused while
    /// other workers were deferred. Now a take at that rate moves one token: three workers each get
    /// one of the burst. Fails on 0a3f9d5 (the second and third are deferred).
    #[tokio::test]
    async fn a_slow_budget_is_not_taken_in_blocks_that_starve_other_workers() {
        let buckets = std::sync::Arc::new(crate::memory::MemoryBuckets::default());
        let rates = BudgetRates { sync_per_minute: 30, max_wait: Duration::from_millis(10), ..BudgetRates::default() };
        let share = BudgetRates { max_wait: Duration::from_millis(10), ..rates.worker_share(3, 10, Duration::from_secs(60)) };
        let workers: Vec<_> = (0..3).map(|_| SharedBudget::new(buckets.clone(), rates, share)).collect();
        for (i, w) in workers.iter().enumerate() {
            assert!(w.acquire(BudgetKind::Sync).await.is_ok(), "worker {i} gets one of the burst's three tokens");
        }
        assert!(workers[0].acquire(BudgetKind::Sync).await.is_err(), "and the burst is spent: nothing pooled");
        assert_eq!(block_of(BucketRate::per_minute(300)), SHARED_BLOCK, "the refresh budget keeps its blocks");
        assert_eq!(block_of(BucketRate::per_minute(120)), 2);
        assert_eq!(block_of(BucketRate::per_minute(10)), 1);
    }

    /// M2 (reliability review of 0a3f9d5): a worker that could not reach the shared buckets fell
    /// back to its static share while the others drained the whole bucket, so the instance spent
    /// above its rate. One worker of four on a failing store: the instance's bound holds. Fails on
    /// 4b8d4db (the failing worker adds its share's burst and refill on top).
    #[tokio::test]
    async fn a_worker_that_cannot_reach_the_shared_buckets_defers_and_the_instance_keeps_its_rate() {
        let rates = instance(600, Duration::from_millis(10));
        let share = BudgetRates { max_wait: Duration::from_millis(10), ..rates.worker_share(4, 10, Duration::from_secs(60)) };
        let failing = SharedBudget::new(Unreachable, rates, share);
        let err = failing.acquire(BudgetKind::Refresh).await.unwrap_err();
        assert_eq!(err.retry_after, STORE_FAILED_RETRY, "deferred, not spent outside the instance's count");
        let buckets = std::sync::Arc::new(crate::memory::MemoryBuckets::default());
        let started = Instant::now();
        let mut total = drain(&failing).await;
        for _ in 0..3 {
            total += drain(&SharedBudget::new(buckets.clone(), rates, share)).await;
        }
        let elapsed = started.elapsed().as_secs_f64();
        // The burst (60) and the refill at 10 a second: every token a drained worker pooled was
        // handed out before it was deferred.
        let bound = 60.0 + 10.0 * elapsed + 1.0;
        assert!(f64::from(total) <= bound, "{total} tokens in {elapsed:.2} s, bound {bound:.0}");
    }

    /// Ten steps of one container waiting on one budget make one take at a time, not ten racing
    /// conditional writes: each lost race is a write DynamoDB bills and throttles.
    #[tokio::test]
    async fn one_acquirer_per_container_talks_to_the_store_at_a_time() {
        let store = std::sync::Arc::new(CountingBuckets::default());
        let rates = instance(600, Duration::from_millis(500));
        let budget = std::sync::Arc::new(SharedBudget::new(store.clone(), rates, rates));
        let takers: Vec<_> = (0..10)
            .map(|_| {
                let budget = budget.clone();
                tokio::spawn(async move { budget.acquire(BudgetKind::Refresh).await.is_ok() })
            })
            .collect();
        for t in takers {
            assert!(t.await.unwrap());
        }
        let (writes, lost) = store.writes();
        assert_eq!(lost, 0, "no conditional write lost to a sibling");
        assert_eq!(writes, 2, "ten tokens in blocks of {SHARED_BLOCK}: two takes");
    }

    /// Memory buckets that count the conditional writes and the ones that lost.
    #[derive(Default)]
    struct CountingBuckets {
        inner: crate::memory::MemoryBuckets,
        writes: std::sync::atomic::AtomicU32,
        lost: std::sync::atomic::AtomicU32,
    }

    impl CountingBuckets {
        fn writes(&self) -> (u32, u32) {
            use std::sync::atomic::Ordering::SeqCst;
            (self.writes.load(SeqCst), self.lost.load(SeqCst))
        }
    }

    impl BucketStore for CountingBuckets {
        async fn read_bucket(&self, kind: BudgetKind) -> Result<Option<medic_core::budget::BucketState>, medic_core::ports::StoreError> {
            // A round trip's pause, so concurrent acquirers would overlap.
            tokio::time::sleep(Duration::from_millis(2)).await;
            self.inner.read_bucket(kind).await
        }
        async fn replace_bucket(
            &self,
            kind: BudgetKind,
            expected: Option<&medic_core::budget::BucketState>,
            next: &medic_core::budget::BucketState,
        ) -> Result<bool, medic_core::ports::StoreError> {
            use std::sync::atomic::Ordering::SeqCst;
            self.writes.fetch_add(1, SeqCst);
            let won = self.inner.replace_bucket(kind, expected, next).await?;
            if !won {
                self.lost.fetch_add(1, SeqCst);
            }
            Ok(won)
        }
    }
}

//! The instant switch's adapters: [`CachedSwitch`] (the per-container cache every check goes
//! through), [`MemorySwitchStore`] (its twin for tests) and [`ManualClock`]. The DynamoDB store
//! is in [`crate::dynamodb`] (item `SWITCH#<instance>` / `-`, attribute `mode`).
//!
//! # The cache
//!
//! A check answers from a value read at most [`SwitchSettings::fresh_for`] ago (30 s); an older
//! one is read again, by one caller at a time (single flight: the others wait for its answer
//! instead of reading too). When a read fails, the last value read stays in force, re-read at
//! most every [`SwitchSettings::retry_after_error`], until reads have failed for
//! [`SwitchSettings::fail_closed_after`] (2 minutes): from then on, and whenever no value was
//! ever read, the answer is [`Mode::Off`] (fail closed), and the problem is handed out once by
//! [`Switch::take_alert`]. The stack's parameters are applied by the callers (the step's
//! `dry_run`, the worker's configuration), which take the stricter of the two.

use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use medic_core::freeze::Freeze;
use medic_core::ports::{Clock, StoreError};
use medic_core::switch::{Mode, Switch, SwitchStore};

/// How the cache ages and fails.
#[derive(Debug, Clone, Copy)]
pub struct SwitchSettings {
    /// A value read this recently is used without reading again.
    pub fresh_for: Duration,
    /// Reads failing this long make every check answer `off`.
    pub fail_closed_after: Duration,
    /// After a failed read, the next read waits this long (checks meanwhile use the verdict).
    pub retry_after_error: Duration,
}

impl Default for SwitchSettings {
    fn default() -> Self {
        Self {
            fresh_for: medic_core::switch::TAKES_EFFECT_WITHIN,
            fail_closed_after: Duration::from_secs(120),
            retry_after_error: Duration::from_secs(5),
        }
    }
}

#[derive(Debug, Default)]
struct State {
    /// The last value read, and when.
    known: Option<(Mode, DateTime<Utc>)>,
    /// The freezes of that read.
    freezes: Vec<Freeze>,
    /// When reads began failing (none since the last good read).
    failing_since: Option<DateTime<Utc>>,
    last_attempt: Option<DateTime<Utc>>,
    last_error: String,
    /// Told already in this failure.
    alerted: bool,
    alert: Option<String>,
}

/// The switch as a container sees it.
pub struct CachedSwitch<R, C> {
    store: R,
    clock: C,
    settings: SwitchSettings,
    state: Mutex<State>,
    refresh: tokio::sync::Mutex<()>,
}

fn delta(d: Duration) -> TimeDelta {
    TimeDelta::from_std(d).unwrap_or(TimeDelta::MAX)
}

impl<R: SwitchStore, C: Clock> CachedSwitch<R, C> {
    pub fn new(store: R, clock: C) -> Self {
        Self::with_settings(store, clock, SwitchSettings::default())
    }

    pub fn with_settings(store: R, clock: C, settings: SwitchSettings) -> Self {
        Self { store, clock, settings, state: Mutex::new(State::default()), refresh: tokio::sync::Mutex::new(()) }
    }

    pub fn store(&self) -> &R {
        &self.store
    }

    /// The answer without reading, if the cache can give one now.
    fn cached(&self, now: DateTime<Utc>) -> Option<Mode> {
        let mut state = self.state.lock().expect("switch state");
        if let Some((mode, _)) = state.known.filter(|(_, at)| now - *at < delta(self.settings.fresh_for)) {
            return Some(mode);
        }
        let failing = state.failing_since.is_some() && state.last_attempt.is_some_and(|t| now - t < delta(self.settings.retry_after_error));
        failing.then(|| self.failing_verdict(&mut state, now))
    }

    /// The answer while reads fail; past the limit, fail closed and keep an alert (once).
    fn failing_verdict(&self, state: &mut State, now: DateTime<Utc>) -> Mode {
        let since = state.failing_since.unwrap_or(now);
        let failed_for = (now - since).to_std().unwrap_or_default();
        let too_long = failed_for > self.settings.fail_closed_after;
        if too_long && !state.alerted {
            state.alerted = true;
            state.alert = Some(format!(
                "Argo Medic has not been able to read its switch for {}s and acts on nothing until it can (fail closed): {}",
                failed_for.as_secs(),
                state.last_error
            ));
        }
        // The last value bridges a short outage of the store, not a long idle spell: read longer
        // ago than it stays fresh plus the failing allowance, it may be long out of date (an
        // operator's `off` since), so the switch fails closed at once.
        let recent = |at: DateTime<Utc>| now - at <= delta(self.settings.fresh_for + self.settings.fail_closed_after);
        match state.known {
            Some((mode, at)) if !too_long && recent(at) => mode,
            _ => Mode::Off,
        }
    }

    async fn current(&self) -> Mode {
        if let Some(mode) = self.cached(self.clock.now()) {
            return mode;
        }
        let _single_flight = self.refresh.lock().await;
        // Another caller may have read it while this one waited.
        if let Some(mode) = self.cached(self.clock.now()) {
            return mode;
        }
        // The freezes come with the mode: one read of the switch is both, or neither.
        let read = match tokio::join!(self.store.read_mode(), self.store.read_freezes()) {
            (Ok(mode), Ok(freezes)) => Ok((mode, freezes)),
            (Err(e), _) | (_, Err(e)) => Err(e),
        };
        let now = self.clock.now();
        let mut state = self.state.lock().expect("switch state");
        state.last_attempt = Some(now);
        match read {
            Ok((mode, freezes)) => {
                let mode = mode.unwrap_or_default();
                state.freezes = freezes;
                if state.failing_since.take().is_some() {
                    tracing::info!(%mode, "the switch is readable again");
                }
                state.known = Some((mode, now));
                state.alerted = false;
                mode
            }
            Err(e) => {
                let since = *state.failing_since.get_or_insert(now);
                state.last_error = e.to_string();
                let verdict = self.failing_verdict(&mut state, now);
                let failing_secs = (now - since).num_seconds();
                tracing::warn!(error = %e, failing_secs, %verdict, "cannot read the switch");
                verdict
            }
        }
    }
}

impl<R: SwitchStore, C: Clock> Switch for CachedSwitch<R, C> {
    async fn mode(&self) -> Mode {
        self.current().await
    }

    fn take_alert(&self) -> Option<String> {
        self.state.lock().expect("switch state").alert.take()
    }

    /// Those of the last good read. While reads fail, the last known ones stay in force (and
    /// past the failing allowance the mode is `off`, which holds everything anyway).
    async fn freezes(&self) -> Vec<Freeze> {
        self.current().await;
        self.state.lock().expect("switch state").freezes.clone()
    }

    /// Written to the store, and into this container's cache at once (others read it within
    /// [`SwitchSettings::fresh_for`]).
    async fn freeze(&self, freeze: &Freeze) -> Result<(), StoreError> {
        self.store.write_freeze(freeze).await?;
        let mut state = self.state.lock().expect("switch state");
        state.freezes.retain(|f| f.id != freeze.id);
        state.freezes.push(freeze.clone());
        Ok(())
    }
}

/// The switch's store in memory: settable, breakable, counting its reads.
#[derive(Debug, Default)]
pub struct MemorySwitchStore {
    mode: Mutex<Option<Mode>>,
    freezes: Mutex<Vec<Freeze>>,
    broken: Mutex<Option<String>>,
    reads: std::sync::atomic::AtomicUsize,
}

impl MemorySwitchStore {
    pub fn set(&self, mode: Mode) {
        *self.mode.lock().expect("switch") = Some(mode);
    }

    /// Every read fails with `problem` from now on (`None`: reads work again).
    pub fn break_reads(&self, problem: Option<&str>) {
        *self.broken.lock().expect("switch") = problem.map(str::to_owned);
    }

    pub fn reads(&self) -> usize {
        self.reads.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl SwitchStore for MemorySwitchStore {
    async fn read_mode(&self) -> Result<Option<Mode>, StoreError> {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        // Lets concurrent callers pile up behind a read in progress (single-flight tests).
        YieldOnce(false).await;
        if let Some(problem) = self.broken.lock().expect("switch").clone() {
            return Err(StoreError::unavailable(problem));
        }
        Ok(*self.mode.lock().expect("switch"))
    }

    async fn write_mode(&self, mode: Mode, _by: &str) -> Result<(), StoreError> {
        self.set(mode);
        Ok(())
    }

    async fn read_freezes(&self) -> Result<Vec<Freeze>, StoreError> {
        if let Some(problem) = self.broken.lock().expect("switch").clone() {
            return Err(StoreError::unavailable(problem));
        }
        Ok(self.freezes.lock().expect("switch").clone())
    }

    async fn write_freeze(&self, freeze: &Freeze) -> Result<(), StoreError> {
        let mut freezes = self.freezes.lock().expect("switch");
        freezes.retain(|f| f.id != freeze.id);
        freezes.push(freeze.clone());
        Ok(())
    }

    async fn lift_freeze(&self, id: &str) -> Result<bool, StoreError> {
        let mut freezes = self.freezes.lock().expect("switch");
        let before = freezes.len();
        freezes.retain(|f| f.id != id);
        Ok(freezes.len() < before)
    }
}

/// Pending once, then ready: a point where other futures run.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

/// A clock tests move by hand.
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    pub fn new(at: DateTime<Utc>) -> Self {
        Self(Mutex::new(at))
    }

    pub fn advance(&self, by: Duration) {
        *self.0.lock().expect("clock") += delta(by);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().expect("clock")
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    type Tested = CachedSwitch<Arc<MemorySwitchStore>, Arc<ManualClock>>;

    fn setup() -> (Arc<MemorySwitchStore>, Arc<ManualClock>, Tested) {
        let store = Arc::new(MemorySwitchStore::default());
        let clock = Arc::new(ManualClock::new("2026-11-30T12:00:00Z".parse().unwrap()));
        let switch = CachedSwitch::new(Arc::clone(&store), Arc::clone(&clock));
        (store, clock, switch)
    }

    #[tokio::test]
    async fn an_unset_switch_acts_and_a_value_is_used_for_30_seconds_then_read_again() {
        let (store, clock, switch) = setup();
        assert_eq!(switch.mode().await, Mode::Act, "never set: the stack's parameters decide");
        store.set(Mode::Off);
        clock.advance(Duration::from_secs(29));
        assert_eq!(switch.mode().await, Mode::Act, "29 s old: still fresh");
        assert_eq!(store.reads(), 1);
        clock.advance(Duration::from_secs(1));
        assert_eq!(switch.mode().await, Mode::Off, "30 s old: read again");
        assert_eq!(store.reads(), 2);
        store.set(Mode::DryRun);
        clock.advance(Duration::from_secs(30));
        assert_eq!(switch.mode().await, Mode::DryRun);
        assert_eq!(switch.take_alert(), None);
    }

    #[tokio::test]
    async fn concurrent_checks_of_a_stale_value_read_once() {
        let (store, _clock, switch) = setup();
        let modes = futures_join(&switch).await;
        assert!(modes.iter().all(|m| *m == Mode::Act));
        assert_eq!(store.reads(), 1, "single flight");
    }

    async fn futures_join(switch: &Tested) -> Vec<Mode> {
        let (a, b, c, d) = tokio::join!(switch.mode(), switch.mode(), switch.mode(), switch.mode());
        vec![a, b, c, d]
    }

    #[tokio::test]
    async fn errors_keep_the_last_value_for_two_minutes_then_fail_closed_and_alert_once() {
        let (store, clock, switch) = setup();
        store.set(Mode::Act);
        assert_eq!(switch.mode().await, Mode::Act);
        store.break_reads(Some("throttled"));
        clock.advance(Duration::from_secs(30));
        assert_eq!(switch.mode().await, Mode::Act, "first failure: the last value stays in force");
        let reads = store.reads();
        clock.advance(Duration::from_secs(1));
        assert_eq!(switch.mode().await, Mode::Act);
        assert_eq!(store.reads(), reads, "not re-read within 5 s of a failure");
        clock.advance(Duration::from_secs(118));
        assert_eq!(switch.mode().await, Mode::Act, "119 s of failures");
        assert_eq!(switch.take_alert(), None);
        clock.advance(Duration::from_secs(2));
        assert_eq!(switch.mode().await, Mode::Off, "more than 2 minutes of failures: fail closed");
        let alert = switch.take_alert().expect("told once");
        assert!(alert.contains("throttled"), "{alert}");
        clock.advance(Duration::from_secs(60));
        assert_eq!(switch.mode().await, Mode::Off);
        assert_eq!(switch.take_alert(), None, "only once");
        store.break_reads(None);
        clock.advance(Duration::from_secs(5));
        assert_eq!(switch.mode().await, Mode::Act, "readable again: acts again");
    }

    /// L2 (reliability review of 0a3f9d5): a container that last read `act` an hour ago and whose
    /// next read fails kept acting for two more minutes, whatever an operator had set since.
    /// Fails on 0a3f9d5 (`act`).
    #[tokio::test]
    async fn a_value_read_long_ago_is_not_kept_when_the_next_read_fails() {
        let (store, clock, switch) = setup();
        store.set(Mode::Act);
        assert_eq!(switch.mode().await, Mode::Act);
        clock.advance(Duration::from_secs(3600));
        store.set(Mode::Off);
        store.break_reads(Some("throttled"));
        assert_eq!(switch.mode().await, Mode::Off, "an hour-old act is no evidence: fail closed");
    }

    #[tokio::test]
    async fn a_switch_never_read_fails_closed_at_once() {
        let (store, clock, switch) = setup();
        store.break_reads(Some("no network"));
        assert_eq!(switch.mode().await, Mode::Off, "nothing known: closed");
        assert_eq!(switch.take_alert(), None, "not alerted before 2 minutes");
        store.break_reads(None);
        clock.advance(Duration::from_secs(5));
        assert_eq!(switch.mode().await, Mode::Act);
    }
}

//! A circuit breaker for calls to one Argo CD instance.
//!
//! Closed: calls pass; `failure_threshold` consecutive failures open it. Open: calls are refused
//! for `open_for` (doubling on each re-open, up to `max_open_for`). Then it ramps back slowly:
//! at first 1 call in `ramp_steps` passes, one more in each window of `ramp_steps` calls after
//! every success, and any failure opens it again. Written here rather than taken from a crate:
//! the ramp (not a single half-open probe) is the behaviour Argo CD's repo-server needs after an
//! outage (docs/argo-cd-behaviour.md §5), and the state machine is small.

use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Closed {
        failures: u32,
    },
    Open {
        until: Instant,
        open_for: Duration,
    },
    /// `allowed` of every `ramp_steps` calls pass.
    Ramping {
        allowed: u32,
        seen: u32,
        open_for: Duration,
    },
}

/// Breaker settings.
#[derive(Debug, Clone, Copy)]
pub struct BreakerSettings {
    pub failure_threshold: u32,
    pub open_for: Duration,
    pub max_open_for: Duration,
    pub ramp_steps: u32,
}

impl Default for BreakerSettings {
    fn default() -> Self {
        Self { failure_threshold: 5, open_for: Duration::from_secs(30), max_open_for: Duration::from_secs(600), ramp_steps: 10 }
    }
}

/// What the breaker is doing, for reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    Closed,
    Open,
    Ramping { allowed_per_ten: u32 },
}

#[derive(Debug)]
pub struct CircuitBreaker {
    settings: BreakerSettings,
    state: Mutex<State>,
}

impl CircuitBreaker {
    pub fn new(settings: BreakerSettings) -> Self {
        Self { settings, state: Mutex::new(State::Closed { failures: 0 }) }
    }

    /// May a call go out now? `Err(wait)` when not.
    pub fn check(&self) -> Result<(), Duration> {
        self.check_at(Instant::now())
    }

    pub fn check_at(&self, now: Instant) -> Result<(), Duration> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match *state {
            State::Closed { .. } => Ok(()),
            State::Open { until, open_for } if now >= until => {
                *state = State::Ramping { allowed: 1, seen: 1, open_for };
                Ok(())
            }
            State::Open { until, .. } => Err(until - now),
            State::Ramping { allowed, seen, open_for } => {
                let steps = self.settings.ramp_steps.max(1);
                let position = seen % steps;
                *state = State::Ramping { allowed, seen: seen + 1, open_for };
                if position < allowed { Ok(()) } else { Err(Duration::from_secs(1)) }
            }
        }
    }

    /// Records the result of a call that was let through.
    pub fn record(&self, success: bool) {
        self.record_at(success, Instant::now())
    }

    pub fn record_at(&self, success: bool, now: Instant) {
        let s = self.settings;
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        *state = match (*state, success) {
            (State::Closed { .. }, true) => State::Closed { failures: 0 },
            (State::Closed { failures }, false) if failures + 1 >= s.failure_threshold => {
                State::Open { until: now + s.open_for, open_for: s.open_for }
            }
            (State::Closed { failures }, false) => State::Closed { failures: failures + 1 },
            (State::Ramping { allowed, .. }, true) if allowed + 1 >= s.ramp_steps => State::Closed { failures: 0 },
            (State::Ramping { allowed, seen, open_for }, true) => State::Ramping { allowed: allowed + 1, seen, open_for },
            (State::Ramping { open_for, .. }, false) => {
                let longer = (open_for * 2).min(s.max_open_for);
                State::Open { until: now + longer, open_for: longer }
            }
            // A late result of a call let through before the breaker opened changes nothing.
            (open @ State::Open { .. }, _) => open,
        };
    }

    pub fn state(&self) -> BreakerState {
        match *self.state.lock().unwrap_or_else(|e| e.into_inner()) {
            State::Closed { .. } => BreakerState::Closed,
            State::Open { .. } => BreakerState::Open,
            State::Ramping { allowed, .. } => BreakerState::Ramping { allowed_per_ten: allowed * 10 / self.settings.ramp_steps.max(1) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker() -> CircuitBreaker {
        CircuitBreaker::new(BreakerSettings {
            failure_threshold: 3,
            open_for: Duration::from_secs(10),
            max_open_for: Duration::from_secs(40),
            ramp_steps: 4,
        })
    }

    #[test]
    fn consecutive_failures_open_it_and_a_success_resets_the_count() {
        let b = breaker();
        let t = Instant::now();
        b.record_at(false, t);
        b.record_at(false, t);
        b.record_at(true, t);
        b.record_at(false, t);
        b.record_at(false, t);
        assert_eq!(b.check_at(t), Ok(()), "two failures after a success do not open it");
        b.record_at(false, t);
        assert_eq!(b.state(), BreakerState::Open);
        assert_eq!(b.check_at(t + Duration::from_secs(4)), Err(Duration::from_secs(6)));
    }

    #[test]
    fn after_opening_it_ramps_back_one_call_at_a_time() {
        let b = breaker();
        let t = Instant::now();
        for _ in 0..3 {
            b.record_at(false, t);
        }
        let later = t + Duration::from_secs(10);
        let passed = |b: &CircuitBreaker| (0..4).filter(|_| b.check_at(later).is_ok()).count();
        assert_eq!(passed(&b), 1, "first window after opening: one probe");
        b.record_at(true, later);
        assert_eq!(passed(&b), 2);
        b.record_at(true, later);
        assert_eq!(passed(&b), 3);
        b.record_at(true, later);
        assert_eq!(b.state(), BreakerState::Closed);
        assert_eq!(passed(&b), 4);
    }

    #[test]
    fn a_failure_while_ramping_reopens_it_for_twice_as_long() {
        let b = breaker();
        let t = Instant::now();
        for _ in 0..3 {
            b.record_at(false, t);
        }
        let t1 = t + Duration::from_secs(10);
        assert!(b.check_at(t1).is_ok());
        b.record_at(false, t1);
        assert_eq!(b.check_at(t1 + Duration::from_secs(19)), Err(Duration::from_secs(1)));
        assert!(b.check_at(t1 + Duration::from_secs(20)).is_ok());
    }
}

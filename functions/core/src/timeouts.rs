//! Every duration Argo Medic derives from a function's timeout, from one place. The timeout is
//! the template's (`WorkerTimeout` and the others, given to each function again as
//! `MEDIC_FUNCTION_TIMEOUT_SECONDS`); leases, claims, the Argo CD client's retry budget and the
//! queue's visibility are all read from [`Timeouts::of`], so changing one template value moves
//! them together, and `tests/leases.rs` holds their order for every timeout the template allows:
//!
//! invocation < lease < claim, lease < visibility; one Argo CD call (retries included) fits in
//! a third of an invocation.

use std::time::Duration;

/// What a function's timeout implies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// The function's timeout: Lambda stops an invocation there.
    pub invocation: Duration,
    /// How long a holder keeps a lease (a message's dedupe lease, an app's lock, a Slack post's
    /// intent): half an invocation more than an invocation. Lambda stops one at its timeout, but
    /// the store's clock and the function's are not the same clock.
    pub lease: Duration,
    /// How long a claimed action may wait for its record before a later run may judge it
    /// unfinished: two leases, so the run that claimed it has surely stopped.
    pub claim: Duration,
    /// The longest one Argo CD call may take, retries included: a third of an invocation (at
    /// most a minute), so a message's read, act and verify fit in one.
    pub argo_call: Duration,
    /// The shortest request timeout an Argo CD call may be given (a third of a short invocation
    /// would starve a refresh, which blocks until the controller has reconciled).
    pub argo_request_floor: Duration,
    /// The least visibility timeout of the queue a function with this timeout reads: six times
    /// the timeout (AWS's advice for an SQS event source), so a redelivery finds a dead holder's
    /// lease over.
    pub visibility_floor: Duration,
    /// The longest a worker waits for a budget token: a sixth of an invocation.
    pub budget_wait: Duration,
    /// How long an AWS call (SQS, DynamoDB, Secrets Manager) may take to connect.
    pub aws_connect: Duration,
    /// How long an AWS call may wait for its answer: a third of an invocation, between 5 s (a
    /// scaled test run's short timeouts under a slow local endpoint) and 20 s (what no healthy
    /// DynamoDB or SQS call comes near; a long worker timeout must not let one hang for minutes).
    pub aws_read: Duration,
}

impl Timeouts {
    /// The durations of a function whose timeout is `invocation`.
    pub fn of(invocation: Duration) -> Self {
        let lease = invocation + invocation / 2;
        Self {
            invocation,
            lease,
            claim: lease * 2,
            argo_call: (invocation / 3).min(Duration::from_secs(60)),
            argo_request_floor: (invocation / 3).max(Duration::from_secs(5)),
            visibility_floor: invocation * 6,
            budget_wait: invocation / 6,
            aws_connect: Duration::from_secs(3),
            aws_read: (invocation / 3).clamp(Duration::from_secs(5), Duration::from_secs(20)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minute_long_worker_s_durations_keep_their_order() {
        let t = Timeouts::of(Duration::from_secs(60));
        assert_eq!((t.lease, t.claim, t.visibility_floor), (Duration::from_secs(90), Duration::from_secs(180), Duration::from_secs(360)));
        assert!(t.invocation < t.lease && t.lease < t.claim && t.lease < t.visibility_floor);
        assert_eq!(t.argo_call, Duration::from_secs(20));
        let long = Timeouts::of(Duration::from_secs(900));
        assert_eq!(long.argo_call, Duration::from_secs(60), "one call never takes more than a minute");
        assert_eq!(Timeouts::of(Duration::from_secs(6)).argo_request_floor, Duration::from_secs(5));
        assert_eq!((t.aws_connect, t.aws_read), (Duration::from_secs(3), Duration::from_secs(20)));
        assert_eq!(long.aws_read, Duration::from_secs(20), "a long worker timeout does not let an AWS call hang");
        assert!(t.aws_connect + t.aws_read < t.invocation, "an AWS call that times out leaves the invocation time to retry it");
    }
}

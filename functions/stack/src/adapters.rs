//! [`Adapters`]: one set of adapters by value, the [`Ports`] it names, and the application's
//! parts built from it. A composition root builds one whole ([`crate::lambda::adapters`],
//! [`Adapters::twins`]); a test or a harness changes one port with `with_*`, which gives a new
//! set (a decorator around one port wraps it: `with_argo(Failpoint(a.argo))`).

use medic_adapters::memory::{MemoryDedupe, SystemClock};
use medic_core::policy::DecisionPolicy;
use medic_core::ports::{AppLock, ArgoApi, Budget, Clock, DeliveryLeases, Escalator, IncidentStore, MarkerStore, Telemetry, WorkQueue};
use medic_core::switch::{FixedSwitch, Switch};
use medic_service::Ports;
use medic_service::intake::{IngestConfig, Intake};
use medic_service::remediate::{Remediator, StepConfig};
use medic_service::sweep::{Sweep, SweeperConfig};
use medic_service::work::{Work, WorkerConfig, WorkerPolicy};
use medic_slack::interaction::{ActionsConfig, AllowList, Interactions, SigningSecret};

/// One set of adapters: the Argo CD client, the incident store, the markers, the app lock, the
/// work queue, the escalator, the budget, the clock, the instant switch and the metrics.
pub struct Adapters<A, S, D, L, Q, E, B, C, W, T> {
    pub argo: A,
    pub store: S,
    pub dedupe: D,
    pub lock: L,
    pub queue: Q,
    pub escalator: E,
    pub budget: B,
    pub clock: C,
    pub switch: W,
    pub metrics: T,
}

impl<A, S, D, L, Q, E, B, C, W, T> Ports for Adapters<A, S, D, L, Q, E, B, C, W, T>
where
    A: ArgoApi,
    S: IncidentStore,
    D: MarkerStore + DeliveryLeases,
    L: AppLock,
    Q: WorkQueue,
    E: Escalator,
    B: Budget,
    C: Clock,
    W: Switch,
    T: Telemetry,
{
    type Argo = A;
    type Incidents = S;
    type Markers = D;
    type Lock = L;
    type Queue = Q;
    type Escalator = E;
    type Budget = B;
    type Clock = C;
    type Switch = W;
    type Telemetry = T;
}

impl<A, S, D, L, Q, E, B, C, W, T> Adapters<A, S, D, L, Q, E, B, C, W, T>
where
    Self: Ports<Argo = A, Incidents = S, Markers = D, Lock = L, Queue = Q, Escalator = E, Budget = B, Clock = C, Switch = W, Telemetry = T>,
{
    /// The worker's work over these adapters.
    pub fn work(self, config: WorkerConfig, policy: WorkerPolicy) -> Work<Self> {
        let Adapters { argo, store, dedupe, lock, queue, escalator, budget, clock, switch, metrics } = self;
        Work { config, argo, store, dedupe, lock, queue, escalator, budget, clock, policy, metrics, switch }
    }

    /// Ingest's intake over these adapters' queue, Argo CD client, clock and metrics.
    pub fn intake(self, config: IngestConfig) -> Intake<Q, A, C, T> {
        let Adapters { argo, queue, clock, metrics, .. } = self;
        Intake { config, queue, argo, clock, metrics }
    }

    /// The sweep over these adapters (it takes no app lock).
    pub fn sweep(self, config: SweeperConfig) -> Sweep<Self> {
        let Adapters { argo, store, dedupe, lock: _, queue, escalator, budget, clock, switch, metrics } = self;
        Sweep { config, argo, store, dedupe, queue, escalator, budget, clock, metrics, switch }
    }
}

/// The adapters of a sweep stepped in one process (`medic sweep`, and tests of the per-app step):
/// the run's markers in memory, the system clock, the switch at `act`. No app lock, queue or
/// metrics: an inline step uses none of them.
pub type InlinePorts<A, S, E, B> = Adapters<A, S, MemoryDedupe, (), (), E, B, SystemClock, FixedSwitch, ()>;

/// [`InlinePorts`] over `argo`, `store`, `escalator` and `budget`, the parts a command chooses.
pub fn inline<A, S, E, B>(argo: A, store: S, escalator: E, budget: B) -> InlinePorts<A, S, E, B> {
    Adapters {
        argo,
        store,
        dedupe: MemoryDedupe::default(),
        lock: (),
        queue: (),
        escalator,
        budget,
        clock: SystemClock,
        switch: FixedSwitch::default(),
        metrics: (),
    }
}

impl<'a, A, S, D, L, Q, E, B, C, W, T> Adapters<&'a A, &'a S, &'a D, L, Q, &'a E, &'a B, &'a C, &'a W, T> {
    /// The per-app step over these borrowed adapters ([`Adapters::by_ref`]), deciding with
    /// `policy`; the worker builds its own from its work item's collaborators.
    pub fn step(self, policy: &'a DecisionPolicy, config: StepConfig) -> Remediator<'a, A, S, D, E, B, C, W> {
        let StepConfig { dry_run, kill_switch, claim_timeout } = config;
        let Adapters { argo, store, dedupe, escalator, budget, clock, switch, .. } = self;
        Remediator { argo, store, dedupe, escalator, budget, clock, policy, dry_run, kill_switch, switch, claim_timeout, arrival: None }
    }
}

/// `with_<port>` and `map_<port>`: the same set with one port replaced, or wrapped (a decorator
/// around it); its type changes with it.
impl<A, S, D, L, Q, E, B, C, W, T> Adapters<A, S, D, L, Q, E, B, C, W, T> {
    /// Slack's interactivity endpoint over these adapters' queue, markers (replays and claims),
    /// clock and metrics, reading the buttons' actions from `actions` (the escalator's records). It reads no
    /// Argo CD: any `argo` will do.
    pub fn interactions<X>(
        self,
        config: ActionsConfig,
        secret: SigningSecret,
        allow: AllowList,
        actions: X,
    ) -> Interactions<Q, D, X, C, T> {
        let Adapters { queue, dedupe, clock, metrics, .. } = self;
        Interactions { config, secret, allow, queue, dedupe, actions, clock, metrics }
    }

    /// The same set, borrowed: the adapters a step borrows ([`Adapters::step`]), or a set to swap
    /// one borrowed port in (`a.by_ref().with_argo(&other)`).
    pub fn by_ref(&self) -> Adapters<&A, &S, &D, &L, &Q, &E, &B, &C, &W, &T> {
        let Adapters { argo, store, dedupe, lock, queue, escalator, budget, clock, switch, metrics } = self;
        Adapters { argo, store, dedupe, lock, queue, escalator, budget, clock, switch, metrics }
    }

    fn into_parts(self) -> (A, S, D, L, Q, E, B, C, W, T) {
        let Adapters { argo, store, dedupe, lock, queue, escalator, budget, clock, switch, metrics } = self;
        (argo, store, dedupe, lock, queue, escalator, budget, clock, switch, metrics)
    }

    /// The same adapters with `argo` wrapped (or replaced) by `wrap`.
    pub fn map_argo<X>(self, wrap: impl FnOnce(A) -> X) -> Adapters<X, S, D, L, Q, E, B, C, W, T> {
        let (a, s, d, l, q, e, b, c, w, t) = self.into_parts();
        Adapters { argo: wrap(a), store: s, dedupe: d, lock: l, queue: q, escalator: e, budget: b, clock: c, switch: w, metrics: t }
    }

    /// The same adapters with another `argo`.
    pub fn with_argo<X>(self, argo: X) -> Adapters<X, S, D, L, Q, E, B, C, W, T> {
        self.map_argo(|_| argo)
    }

    /// The same adapters with `store` wrapped (or replaced) by `wrap`.
    pub fn map_store<X>(self, wrap: impl FnOnce(S) -> X) -> Adapters<A, X, D, L, Q, E, B, C, W, T> {
        let (a, s, d, l, q, e, b, c, w, t) = self.into_parts();
        Adapters { argo: a, store: wrap(s), dedupe: d, lock: l, queue: q, escalator: e, budget: b, clock: c, switch: w, metrics: t }
    }

    /// The same adapters with another `store`.
    pub fn with_store<X>(self, store: X) -> Adapters<A, X, D, L, Q, E, B, C, W, T> {
        self.map_store(|_| store)
    }

    /// The same adapters with `dedupe` wrapped (or replaced) by `wrap`.
    pub fn map_dedupe<X>(self, wrap: impl FnOnce(D) -> X) -> Adapters<A, S, X, L, Q, E, B, C, W, T> {
        let (a, s, d, l, q, e, b, c, w, t) = self.into_parts();
        Adapters { argo: a, store: s, dedupe: wrap(d), lock: l, queue: q, escalator: e, budget: b, clock: c, switch: w, metrics: t }
    }

    /// The same adapters with another `dedupe`.
    pub fn with_dedupe<X>(self, dedupe: X) -> Adapters<A, S, X, L, Q, E, B, C, W, T> {
        self.map_dedupe(|_| dedupe)
    }

    /// The same adapters with `lock` wrapped (or replaced) by `wrap`.
    pub fn map_lock<X>(self, wrap: impl FnOnce(L) -> X) -> Adapters<A, S, D, X, Q, E, B, C, W, T> {
        let (a, s, d, l, q, e, b, c, w, t) = self.into_parts();
        Adapters { argo: a, store: s, dedupe: d, lock: wrap(l), queue: q, escalator: e, budget: b, clock: c, switch: w, metrics: t }
    }

    /// The same adapters with another `lock`.
    pub fn with_lock<X>(self, lock: X) -> Adapters<A, S, D, X, Q, E, B, C, W, T> {
        self.map_lock(|_| lock)
    }

    /// The same adapters with `queue` wrapped (or replaced) by `wrap`.
    pub fn map_queue<X>(self, wrap: impl FnOnce(Q) -> X) -> Adapters<A, S, D, L, X, E, B, C, W, T> {
        let (a, s, d, l, q, e, b, c, w, t) = self.into_parts();
        Adapters { argo: a, store: s, dedupe: d, lock: l, queue: wrap(q), escalator: e, budget: b, clock: c, switch: w, metrics: t }
    }

    /// The same adapters with another `queue`.
    pub fn with_queue<X>(self, queue: X) -> Adapters<A, S, D, L, X, E, B, C, W, T> {
        self.map_queue(|_| queue)
    }

    /// The same adapters with `escalator` wrapped (or replaced) by `wrap`.
    pub fn map_escalator<X>(self, wrap: impl FnOnce(E) -> X) -> Adapters<A, S, D, L, Q, X, B, C, W, T> {
        let (a, s, d, l, q, e, b, c, w, t) = self.into_parts();
        Adapters { argo: a, store: s, dedupe: d, lock: l, queue: q, escalator: wrap(e), budget: b, clock: c, switch: w, metrics: t }
    }

    /// The same adapters with another `escalator`.
    pub fn with_escalator<X>(self, escalator: X) -> Adapters<A, S, D, L, Q, X, B, C, W, T> {
        self.map_escalator(|_| escalator)
    }

    /// The same adapters with `budget` wrapped (or replaced) by `wrap`.
    pub fn map_budget<X>(self, wrap: impl FnOnce(B) -> X) -> Adapters<A, S, D, L, Q, E, X, C, W, T> {
        let (a, s, d, l, q, e, b, c, w, t) = self.into_parts();
        Adapters { argo: a, store: s, dedupe: d, lock: l, queue: q, escalator: e, budget: wrap(b), clock: c, switch: w, metrics: t }
    }

    /// The same adapters with another `budget`.
    pub fn with_budget<X>(self, budget: X) -> Adapters<A, S, D, L, Q, E, X, C, W, T> {
        self.map_budget(|_| budget)
    }

    /// The same adapters with `clock` wrapped (or replaced) by `wrap`.
    pub fn map_clock<X>(self, wrap: impl FnOnce(C) -> X) -> Adapters<A, S, D, L, Q, E, B, X, W, T> {
        let (a, s, d, l, q, e, b, c, w, t) = self.into_parts();
        Adapters { argo: a, store: s, dedupe: d, lock: l, queue: q, escalator: e, budget: b, clock: wrap(c), switch: w, metrics: t }
    }

    /// The same adapters with another `clock`.
    pub fn with_clock<X>(self, clock: X) -> Adapters<A, S, D, L, Q, E, B, X, W, T> {
        self.map_clock(|_| clock)
    }

    /// The same adapters with `switch` wrapped (or replaced) by `wrap`.
    pub fn map_switch<X>(self, wrap: impl FnOnce(W) -> X) -> Adapters<A, S, D, L, Q, E, B, C, X, T> {
        let (a, s, d, l, q, e, b, c, w, t) = self.into_parts();
        Adapters { argo: a, store: s, dedupe: d, lock: l, queue: q, escalator: e, budget: b, clock: c, switch: wrap(w), metrics: t }
    }

    /// The same adapters with another `switch`.
    pub fn with_switch<X>(self, switch: X) -> Adapters<A, S, D, L, Q, E, B, C, X, T> {
        self.map_switch(|_| switch)
    }

    /// The same adapters with `metrics` wrapped (or replaced) by `wrap`.
    pub fn map_metrics<X>(self, wrap: impl FnOnce(T) -> X) -> Adapters<A, S, D, L, Q, E, B, C, W, X> {
        let (a, s, d, l, q, e, b, c, w, t) = self.into_parts();
        Adapters { argo: a, store: s, dedupe: d, lock: l, queue: q, escalator: e, budget: b, clock: c, switch: w, metrics: wrap(t) }
    }

    /// The same adapters with another `metrics`.
    pub fn with_metrics<X>(self, metrics: X) -> Adapters<A, S, D, L, Q, E, B, C, W, X> {
        self.map_metrics(|_| metrics)
    }
}

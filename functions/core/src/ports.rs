//! Ports: what the per-app step needs from the outside world, as traits. Adapters implement them
//! (HTTP, SQLite, DynamoDB, Slack, in-memory); the core only names them.
//!
//! The traits use `impl Future` return types, so this crate needs no async runtime.

use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, Utc};
use thiserror::Error;

use crate::app::{AppId, Application, ApplicationSyncRequest};
use crate::budget::BucketState;
use crate::decision::Decision;
use crate::event::AppRef;
use crate::human_action::{HumanActionOutcome, HumanActionRequest};
use crate::incident::{Attempt, DecisionNote, History, IncidentRecord, Outcome};
use crate::keys::IdempotencyKey;
use crate::keys::IncidentKey;
use crate::keys::Marker;
use crate::ladder::{BudgetKind, RefreshKind};
use crate::permit::Permit;
use crate::record::DecisionRecord;
use crate::timeline::TimelineEvent;

/// Declares a port, its decorator trait, and its forwarding through `Arc`, so forwarding is
/// written once for every port and method, never by hand.
///
/// A decorator (a failpoint, a test's dying adapter, a lazily built client) wraps one adapter and
/// changes one or two of its methods: it implements the port's decorator trait (`ArgoApiDecorator`
/// for `ArgoApi`, ...), names its inner adapter, and writes only the methods it changes; every
/// other method forwards to the inner one. `Arc<T>` is such a decorator that changes nothing (one
/// adapter shared by several handlers in one process: `medic serve` runs ingest, worker and
/// sweeper together). A port's own methods have no default body (tests/layering.rs): an adapter
/// that forgot one would silently do the default.
macro_rules! port {
    (
        $(#[$meta:meta])*
        pub trait $port:ident: Send + Sync {
            $(
                $(#[$method_meta:meta])*
                fn $method:ident(&self $(, $arg:ident: $arg_ty:ty)* $(,)?) $(-> $ret:ty)?;
            )*
        }
        decorated by $decorator:ident;
    ) => {
        $(#[$meta])*
        pub trait $port: Send + Sync {
            $(
                $(#[$method_meta])*
                fn $method(&self $(, $arg: $arg_ty)*) $(-> $ret)?;
            )*
        }

        #[doc = concat!("A decorator of [`", stringify!($port), "`]: every method forwards to [`", stringify!($decorator), "::inner`] unless the decorator writes its own (see `port!` in ports.rs).")]
        pub trait $decorator: Send + Sync {
            /// The adapter decorated.
            type Inner: $port;
            /// The adapter decorated.
            fn inner(&self) -> &Self::Inner;
            $(
                $(#[$method_meta])*
                fn $method(&self $(, $arg: $arg_ty)*) $(-> $ret)? {
                    self.inner().$method($($arg),*)
                }
            )*
        }

        impl<D: $decorator> $port for D {
            $(
                fn $method(&self $(, $arg: $arg_ty)*) $(-> $ret)? {
                    <D as $decorator>::$method(self $(, $arg)*)
                }
            )*
        }

        impl<T: $port> $decorator for std::sync::Arc<T> {
            type Inner = T;
            fn inner(&self) -> &T {
                self
            }
        }
    };
}

/// Declares a port made of capability ports, so an adapter implements (and a decorator decorates)
/// each capability on its own, and a consumer names only the capabilities it uses.
///
/// Each part is a [`port!`] of its own. The sum names every method of its parts and is
/// implemented by every adapter that implements them all (a blanket impl writes the forwarding):
/// it is the name for "the whole store" where one adapter is held (a test's store, a composition
/// root's set). Generic code bounds on the parts, never on the sum, which does not imply them; and
/// a module that imports a part does not import its sum, whose methods would then be ambiguous.
macro_rules! port_sum {
    (
        $(#[$meta:meta])*
        pub trait $sum:ident = $(
            $(#[$part_meta:meta])*
            pub trait $part:ident: Send + Sync {
                $(
                    $(#[$method_meta:meta])*
                    fn $method:ident(&self $(, $arg:ident: $arg_ty:ty)* $(,)?) $(-> $ret:ty)?;
                )*
            }
            decorated by $decorator:ident;
        )+
    ) => {
        $(
            port! {
                $(#[$part_meta])*
                pub trait $part: Send + Sync {
                    $(
                        $(#[$method_meta])*
                        fn $method(&self $(, $arg: $arg_ty)*) $(-> $ret)?;
                    )*
                }
                decorated by $decorator;
            }
        )+

        $(#[$meta])*
        pub trait $sum: Send + Sync {
            $($(
                $(#[$method_meta])*
                fn $method(&self $(, $arg: $arg_ty)*) $(-> $ret)?;
            )*)+
        }

        impl<T: Send + Sync $(+ $part)+> $sum for T {
            $($(
                fn $method(&self $(, $arg: $arg_ty)*) $(-> $ret)? {
                    <T as $part>::$method(self $(, $arg)*)
                }
            )*)+
        }
    };
}

/// Filters for listing apps. `fields` is Argo CD's response mask (`items.status.sync.status`, ...).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// One app by name (with `app_namespace`): how absence is confirmed.
    pub name: String,
    /// Only apps of these projects (`projects=`; empty: every project the token may read).
    pub projects: Vec<String>,
    /// A label selector (`selector=`, Kubernetes syntax; empty: no filter).
    pub selector: String,
    /// Only apps whose source is this repository URL (`repo=`).
    pub repo: String,
    /// The namespace the Applications live in (`appNamespace=`; empty: Argo CD's own).
    pub app_namespace: String,
    /// Argo CD's response mask (`fields=`): only these JSON paths of each item come back.
    pub fields: Vec<String>,
}

/// Argo CD errors, typed by what to do about them.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum ArgoError {
    /// 404: the app does not exist (deleted, or never was).
    #[error("not found: {0}")]
    NotFound(String),
    /// 403: the token may not do this to this app (Argo CD also answers 403 for an app of a
    /// project the token cannot see).
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// The service's token is invalid, expired or revoked: never retried, escalated once.
    #[error("Argo CD rejected Argo Medic's token (invalid or expired): {0}")]
    Unauthenticated(String),
    /// A sync was refused because the app already runs an operation.
    #[error("another operation is already in progress")]
    OperationInProgress,
    /// A sync was refused by one of the project's sync windows.
    #[error("blocked by sync window: {0}")]
    SyncWindowBlocked(String),
    /// The app has a deletion timestamp: Argo CD refuses to operate on it.
    #[error("application is deleting")]
    AppDeleting,
    /// 429 from Argo CD or the proxy in front of it.
    #[error("rate limited{}", .retry_after.map(|d| format!(", retry after {}s", d.as_secs())).unwrap_or_default())]
    RateLimited {
        /// The wait the `Retry-After` header asked for, when it gave one.
        retry_after: Option<Duration>,
    },
    /// 5xx, timeouts, connection errors.
    #[error("Argo CD unavailable: {0}")]
    Transient(String),
    /// The request was wrong (400, 415, bad selector): a bug or a misconfiguration, not retried.
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The circuit breaker is open: Argo CD has been failing; no call was made.
    #[error("circuit open after repeated Argo CD failures; retry after {}s", .retry_after.as_secs())]
    CircuitOpen {
        /// How long until the breaker lets a trial call through.
        retry_after: Duration,
    },
}

impl ArgoError {
    /// True when the same call may succeed later.
    pub fn is_retryable(&self) -> bool {
        matches!(self, ArgoError::RateLimited { .. } | ArgoError::Transient(_) | ArgoError::CircuitOpen { .. })
    }

    /// A stable name for metrics and reports.
    pub fn kind(&self) -> &'static str {
        match self {
            ArgoError::NotFound(_) => "not_found",
            ArgoError::PermissionDenied(_) => "permission_denied",
            ArgoError::Unauthenticated(_) => "unauthenticated",
            ArgoError::OperationInProgress => "operation_in_progress",
            ArgoError::SyncWindowBlocked(_) => "sync_window_blocked",
            ArgoError::AppDeleting => "app_deleting",
            ArgoError::RateLimited { .. } => "rate_limited",
            ArgoError::Transient(_) => "transient",
            ArgoError::Invalid(_) => "invalid",
            ArgoError::CircuitOpen { .. } => "circuit_open",
        }
    }
}

port! {
/// The Argo CD API, as far as Argo Medic uses it.
pub trait ArgoApi: Send + Sync {
    /// `GET /api/v1/applications/{name}`: a read, changing nothing.
    fn get_app(&self, app: &AppRef) -> impl Future<Output = Result<Application, ArgoError>> + Send;
    /// `GET /api/v1/applications`, usually field-masked: items are partial Applications.
    fn list_apps(&self, query: &ListQuery) -> impl Future<Output = Result<Vec<Application>, ArgoError>> + Send;
    /// `GET /api/v1/applications/{name}?refresh=normal|hard`: the controller reconciles (a hard
    /// refresh regenerates manifests) and the call blocks until it has. Changes Argo CD: only the
    /// actuator holds a [`Permit`].
    fn refresh(&self, permit: &Permit, app: &AppRef, kind: RefreshKind) -> impl Future<Output = Result<Application, ArgoError>> + Send;
    /// `POST /api/v1/applications/{name}/sync`. Only the actuator holds a [`Permit`].
    fn sync(
        &self,
        permit: &Permit,
        app: &AppRef,
        request: &ApplicationSyncRequest,
    ) -> impl Future<Output = Result<Application, ArgoError>> + Send;
    /// `DELETE /api/v1/applications/{name}/operation`. Only the actuator holds a [`Permit`].
    fn terminate_operation(&self, permit: &Permit, app: &AppRef) -> impl Future<Output = Result<(), ArgoError>> + Send;
    /// When the credential these calls are made with expires (an Argo CD token's JWT `exp`):
    /// `Ok(None)` when it never does or the client has none to tell; `Err` (a description) when
    /// it cannot be read. No call to Argo CD.
    fn credential_expiry(&self) -> impl Future<Output = Result<Option<chrono::DateTime<chrono::Utc>>, String>> + Send;
    /// `GET /api/v1/applications/{name}/revisions/{revision}/metadata` (`sourceIndex` for one
    /// source of several): a Git commit's author, date, message and tags. `Ok(None)` when the
    /// revision is unknown to Argo CD or the client cannot say.
    fn revision_metadata(
        &self,
        app: &AppRef,
        revision: &str,
        source_index: Option<usize>,
    ) -> impl Future<Output = Result<Option<crate::app::RevisionMetadata>, ArgoError>> + Send;
    /// The version Argo CD reports (`GET /api/version`, e.g. `v3.5.1+109ca7c`), read once a
    /// client: what the rules that differ between releases read.
    fn version(&self) -> impl Future<Output = Result<String, ArgoError>> + Send;
}
decorated by ArgoApiDecorator;
}

/// A failure's cause, kept for [`std::error::Error::source`] and the logs: an SDK error, a
/// database error, a parse error. Two causes are equal when they read the same (tests compare
/// errors).
#[derive(Clone)]
pub struct Cause(std::sync::Arc<dyn std::error::Error + Send + Sync>);

impl Cause {
    /// Keeps `error` as a cause.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(std::sync::Arc::new(error))
    }
}

impl std::fmt::Debug for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&*self.0, f)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for Cause {}

/// What every port's error is: made of what failed and whether it may pass, and able to say so.
/// One failure can then become another port's with its class and cause ([`pass_on`]), and an
/// adapter classifies its client's errors once for every port ([`PortError::classified`]).
pub trait PortError: std::error::Error + Send + Sync + Sized + 'static {
    /// Unavailable (`retryable`) or invalid, with `what` failed.
    fn classified(retryable: bool, what: String) -> Self;
    /// The same failure, caused by `error`.
    fn caused_by(self, error: impl std::error::Error + Send + Sync + 'static) -> Self;
    /// Whether trying again later can succeed.
    fn retryable(&self) -> bool;
    /// What failed, without the port's prefix.
    fn what(&self) -> &str;
}

/// `error`, one port's failure, as another's: as retryable, caused by it (the escalator's records
/// failing in their store, the queue kept in the state file).
pub fn pass_on<T: PortError>(error: impl PortError) -> T {
    T::classified(error.retryable(), error.what().to_owned()).caused_by(error)
}

/// Declares a port's error: `Unavailable` (the other side did not answer, or answered "not now":
/// a timeout, throttling, a 5xx, a busy database; trying again later can succeed) or `Invalid`
/// (the request or a record is wrong as it stands: an item that does not parse, a value out of
/// range, a request the service refuses; trying again changes nothing), each with what failed
/// and, when there is one, its cause.
macro_rules! port_error {
    ($(#[$meta:meta])* $name:ident, $prefix:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Error, PartialEq, Eq)]
        pub enum $name {
            /// Trying again later can succeed.
            #[error("{}: {what}", $prefix)]
            Unavailable {
                /// What failed, in words (the operation and its target).
                what: String,
                /// The error underneath, when there is one.
                #[source]
                cause: Option<Cause>,
            },
            /// Trying again changes nothing.
            #[error("{}: {what}", $prefix)]
            Invalid {
                /// What failed, in words (the operation and its target).
                what: String,
                /// The error underneath, when there is one.
                #[source]
                cause: Option<Cause>,
            },
        }

        impl $name {
            /// The other side did not answer, or answered "not now".
            pub fn unavailable(what: impl Into<String>) -> Self {
                Self::Unavailable { what: what.into(), cause: None }
            }

            /// The request or a record is wrong as it stands.
            pub fn invalid(what: impl Into<String>) -> Self {
                Self::Invalid { what: what.into(), cause: None }
            }

            /// The same failure, caused by `error`.
            pub fn caused_by(self, error: impl std::error::Error + Send + Sync + 'static) -> Self {
                match self {
                    Self::Unavailable { what, .. } => Self::Unavailable { what, cause: Some(Cause::new(error)) },
                    Self::Invalid { what, .. } => Self::Invalid { what, cause: Some(Cause::new(error)) },
                }
            }

            /// Whether trying again later can succeed.
            pub fn retryable(&self) -> bool {
                matches!(self, Self::Unavailable { .. })
            }

            /// What failed, without the port's prefix.
            pub fn what(&self) -> &str {
                match self {
                    Self::Unavailable { what, .. } | Self::Invalid { what, .. } => what,
                }
            }
        }

        impl PortError for $name {
            fn classified(retryable: bool, what: String) -> Self {
                match retryable {
                    true => Self::unavailable(what),
                    false => Self::invalid(what),
                }
            }

            fn caused_by(self, error: impl std::error::Error + Send + Sync + 'static) -> Self {
                $name::caused_by(self, error)
            }

            fn retryable(&self) -> bool {
                $name::retryable(self)
            }

            fn what(&self) -> &str {
                $name::what(self)
            }
        }
    };
}

port_error!(
    /// Store failures (incidents, markers, locks, the Slack records).
    StoreError,
    "incident store"
);

/// The answer to "may I take this action now?".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// Recorded as in progress; go ahead, then `complete` or `release` it.
    Granted,
    /// Already done with this outcome: do not act again.
    AlreadyDone(Outcome),
    /// Someone else holds it (another worker, or a crashed one whose claim has not expired).
    Held {
        /// When the holder's claim expires.
        until: DateTime<Utc>,
    },
}

port! {
/// Durable incident state and idempotency records (SQLite locally, DynamoDB on AWS).
pub trait IncidentStore: Send + Sync {
    /// The open incident of an app (`namespace/name`) and what was done in it.
    fn history(&self, app: &AppId) -> impl Future<Output = Result<History, StoreError>> + Send;
    /// Claims an action before taking it: a conditional write keyed by the idempotency key. A
    /// claim left in progress longer than `in_progress_for` (a crashed holder) may be taken over.
    fn claim(
        &self,
        app: &AppId,
        incident: &IncidentKey,
        attempt: &Attempt,
        in_progress_for: Duration,
    ) -> impl Future<Output = Result<Claim, StoreError>> + Send;
    /// Records how a claimed action turned out.
    fn complete(&self, app: &AppId, key: &IdempotencyKey, outcome: Outcome) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Records that the claimed refresh under `key` reached Argo CD ([`Outcome::Reached`]), the
    /// claim still in progress: the run that takes it over credits the next compare to it.
    fn mark_reached(&self, app: &AppId, key: &IdempotencyKey) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Gives up a claim without an outcome (the action failed transiently and may be retried).
    fn release(&self, app: &AppId, key: &IdempotencyKey) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Closes the app's open incident (the app is Synced and Healthy again).
    fn close(&self, app: &AppId, at: DateTime<Utc>) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Apps with an open incident, so a sweep can look at them even when they now look healthy.
    fn open_incidents(&self) -> impl Future<Output = Result<Vec<AppId>, StoreError>> + Send;
    /// Keeps `note` (the step's last decision) on the app's open incident, if that incident is
    /// `incident`; does nothing otherwise (no incident is opened by a note). For operators only
    /// (`medic incidents show`): the policy never reads it.
    fn note_decision(
        &self,
        app: &AppId,
        incident: &IncidentKey,
        note: &DecisionNote,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Keeps `record`, one decision taken at whatever level and in whatever mode (a dry run too),
    /// for the store's retention: what `medic report` and `medic replay` read. Idempotent: the
    /// same record (app and time) written twice is kept once. The policy never reads it.
    fn record_decision(&self, record: &DecisionRecord) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Appends `event` to its incident's timeline, unless an event with its id is there already
    /// (a conditional write): true when written. Kept [`crate::incident::ACTION_RETENTION`]
    /// after it happened, and at least that long after its incident closes.
    fn append_event(&self, event: &TimelineEvent) -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// The timeline of the app's incident `incident_id` (its [`crate::keys::IncidentKey::id`]),
    /// oldest first: what `medic incidents show` prints, and what an escalation tells in its new
    /// thread of what came before it.
    fn timeline(&self, app: &AppId, incident_id: &str) -> impl Future<Output = Result<Vec<TimelineEvent>, StoreError>> + Send;
}
decorated by IncidentStoreDecorator;
}

port! {
/// The operator's read of a store's incidents (`medic incidents`): open ones, and with
/// `include_closed` those closed recently enough to still be kept.
pub trait IncidentLedger: Send + Sync {
    /// Every open incident, and the closed ones still kept when `include_closed`.
    fn incidents(&self, include_closed: bool) -> impl Future<Output = Result<Vec<IncidentRecord>, StoreError>> + Send;
    /// The decisions recorded at or after `since` and still kept, oldest first.
    fn decisions(&self, since: DateTime<Utc>) -> impl Future<Output = Result<Vec<DecisionRecord>, StoreError>> + Send;
}
decorated by IncidentLedgerDecorator;
}

port_error!(
    /// Escalation failures (Slack, or its records).
    EscalationError,
    "escalation failed"
);

impl From<StoreError> for EscalationError {
    /// The escalator's records could not be read or written: as retryable as the store's failure.
    fn from(e: StoreError) -> Self {
        pass_on(e)
    }
}

port_sum! {
/// Where humans are told (Slack, or a log): its incidents, its outages and the buttons people
/// press, the sum of [`IncidentChannel`], [`OutageBoard`] and [`HumanActions`].
///
/// Every method is required, with no default: a forwarding or wrapping escalator that forgot
/// one would silently do nothing (an `Arc` forwarder once dropped `resolve` that way).
pub trait Escalator =
/// Where people are told of one app's incident, and of the service's own problems.
pub trait IncidentChannel: Send + Sync {
    /// One incident that needs a human. Called again for the same incident after a crash or a
    /// redelivery: it must not tell twice (Slack: never a second parent message).
    fn escalate(&self, permit: &Permit, app: &Application, decision: &Decision)
    -> impl Future<Output = Result<(), EscalationError>> + Send;
    /// A problem of the service itself (for example Argo CD rejecting its token).
    fn alert(&self, permit: &Permit, summary: &str) -> impl Future<Output = Result<(), EscalationError>> + Send;
    /// The app (`namespace/name`) is out of trouble (`decision` says why): every open escalation
    /// of it is marked resolved. Idempotent; cheap when nothing is open.
    fn resolve(&self, permit: &Permit, app: &AppId, decision: &Decision) -> impl Future<Output = Result<(), EscalationError>> + Send;
    /// Whether a person can answer what is posted with a button (Slack can; log lines cannot): a
    /// proposal ([`crate::trust::TrustLevel::Propose`]) needs one to be approved.
    fn takes_approvals(&self) -> bool;
    /// Tells `reply`'s timeline events as one compact reply in the incident's thread, once per
    /// `reply.key`; nothing when the incident has no thread of its own (not escalated, snoozed,
    /// resolved, or a reply in a group's thread).
    fn tell_timeline(&self, permit: &Permit, reply: &crate::timeline::ThreadReply<'_>)
    -> impl Future<Output = Result<(), EscalationError>> + Send;
    /// The weekly shadow report ([`crate::report`]) made at `now`: told once per ISO week of
    /// `now` ([`crate::keys::weekly_report_key`]), so a retried run does not tell it twice.
    fn report(&self, permit: &Permit, report: &crate::report::Report, now: DateTime<Utc>)
    -> impl Future<Output = Result<(), EscalationError>> + Send;
}
decorated by IncidentChannelDecorator;
/// Where a shared-cause outage is shown while it lasts, one parent per cause and start.
pub trait OutageBoard: Send + Sync {
    /// A fleet outage as it stands this sweep: one parent per cause and start (Slack: posted
    /// once, then rewritten in place, with pause and release buttons while the wave waits).
    fn outage(&self, permit: &Permit, view: &crate::fleet::OutageView) -> impl Future<Output = Result<(), EscalationError>> + Send;
    /// Every fleet outage told before ([`OutageBoard::outage`]) whose parent key
    /// (`OutageView::key`) is not in `current`, the causes this sweep sees, is told once more as
    /// over (`WaveState::Recovered`: Slack rewrites its parent a last time). Returns how many.
    fn outages_ended(&self, permit: &Permit, current: &[String]) -> impl Future<Output = Result<usize, EscalationError>> + Send;
}
decorated by OutageBoardDecorator;
/// The buttons offered to people: what each stands for, and how a pressed one turned out.
pub trait HumanActions: Send + Sync {
    /// What the button with opaque id `id` stands for; `None` when unknown or expired.
    fn human_action(&self, id: &str) -> impl Future<Output = Result<Option<HumanActionRequest>, EscalationError>> + Send;
    /// Reports how a human action requested by `by` (a Slack user id) turned out, in the
    /// incident's thread, and moves the incident's state. Idempotent per request.
    fn record_human_action(
        &self,
        permit: &Permit,
        request: &HumanActionRequest,
        by: &str,
        outcome: &HumanActionOutcome,
    ) -> impl Future<Output = Result<(), EscalationError>> + Send;
}
decorated by HumanActionsDecorator;
}

/// A record of an [`EscalationStore`], with the version its next write must name.
#[derive(Debug, Clone, PartialEq)]
pub struct Versioned {
    /// The record's version: 1 when first written, one more with every write.
    pub version: u64,
    /// The record's JSON document.
    pub doc: serde_json::Value,
}

port! {
/// Durable records of what was told where (Slack messages, their buttons, fleet incidents), so
/// that nothing is posted twice across crashes and redeliveries: DynamoDB on AWS, memory locally.
///
/// Records live in groups (the incidents of one app, the buttons, ...) under an id, hold one JSON
/// document, and change only by compare-and-set on their version, so two writers never both win.
pub trait EscalationStore: Send + Sync {
    /// The record, if it exists and has not expired.
    fn load(&self, group: &str, id: &str) -> impl Future<Output = Result<Option<Versioned>, StoreError>> + Send;
    /// Writes `doc` if the record is at version `expected` (`None`: only if it does not exist).
    /// True when written (the record is then at `expected + 1`, or 1); false when another writer
    /// came first. The record expires after `ttl`.
    fn store(
        &self,
        group: &str,
        id: &str,
        doc: &serde_json::Value,
        expected: Option<u64>,
        ttl: Duration,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// Every live record of a group, as `(id, record)`.
    fn list(&self, group: &str) -> impl Future<Output = Result<Vec<(String, Versioned)>, StoreError>> + Send;
}
decorated by EscalationStoreDecorator;
}

/// Out of budget for now.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[error("{kind:?} budget exhausted; retry after {}s", .retry_after.as_secs())]
pub struct BudgetExhausted {
    /// The budget that ran out.
    pub kind: BudgetKind,
    /// When its bucket has a token again.
    pub retry_after: Duration,
}

port! {
/// Per-instance budgets (token buckets) for the actions that load Argo CD. Behind a port so the
/// serverless pipeline can share one bucket across concurrent workers.
pub trait Budget: Send + Sync {
    /// Takes one token of `kind`, or says when the bucket has one again.
    fn acquire(&self, kind: BudgetKind) -> impl Future<Output = Result<(), BudgetExhausted>> + Send;
}
decorated by BudgetDecorator;
}

port! {
/// The token buckets every worker shares ([`crate::budget`]), on the state table: read a bucket,
/// and replace it only if nobody wrote it since (an optimistic compare-and-set).
pub trait BucketStore: Send + Sync {
    /// The bucket of `kind` as stored; `None` before its first write.
    fn read_bucket(&self, kind: BudgetKind) -> impl Future<Output = Result<Option<BucketState>, StoreError>> + Send;
    /// Writes `next` when the stored bucket is still `read` (`None`: still absent); `false` when
    /// another writer came first.
    fn replace_bucket(
        &self,
        kind: BudgetKind,
        read: Option<&BucketState>,
        next: &BucketState,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}
decorated by BucketStoreDecorator;
}

port! {
/// The time. A port so tests can fix it; the policy itself only ever receives `now`.
pub trait Clock: Send + Sync {
    /// Now, in UTC.
    fn now(&self) -> DateTime<Utc>;
}
decorated by ClockDecorator;
}

port! {
/// Where the application's counts and latencies go: CloudWatch's embedded metric format on
/// Lambda (`medic_adapters::telemetry::Metrics`, which also keeps them for tests). `extra` is
/// one more dimension; `properties` are searchable properties of the line, not dimensions (each
/// dimension set is one more billed metric, docs/cost.md).
pub trait Telemetry: Send + Sync {
    /// Adds `value` to the count `name` (with the `extra` dimension when given).
    fn count(&self, name: &str, extra: Option<(&str, &str)>, value: f64);
    /// Adds `value` to the count `name`, with `properties` on its line.
    fn count_with(&self, name: &str, properties: &[(&str, &str)], value: f64);
    /// One latency of `name`, in milliseconds (with the `extra` dimension when given).
    fn millis(&self, name: &str, extra: Option<(&str, &str)>, value: f64);
    /// One latency of `name`, in milliseconds, with `properties` on its line.
    fn millis_with(&self, name: &str, properties: &[(&str, &str)], value: f64);
    /// A level, not a count: the latest value is kept.
    fn gauge(&self, name: &str, extra: Option<(&str, &str)>, value: f64);
}
decorated by TelemetryDecorator;
}

port_error!(
    /// Queue failures.
    QueueError,
    "work queue"
);

port! {
/// The work queue (SQS on AWS, a channel locally).
pub trait WorkQueue: Send + Sync {
    /// Enqueues one item, delivered after `delay` (SQS allows at most 15 minutes).
    fn enqueue(&self, item: &crate::event::WorkItem, delay: Duration) -> impl Future<Output = Result<(), QueueError>> + Send;

    /// Enqueues many items at once, without delay (the sweeper's fleet). An error may leave some
    /// items enqueued, which is harmless because the worker dedupes.
    fn enqueue_batch(&self, items: &[crate::event::WorkItem]) -> impl Future<Output = Result<(), QueueError>> + Send;
}
decorated by WorkQueueDecorator;
}

/// The answer to "is this news new?".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// First time: handle it.
    New,
    /// Handled before (or being handled): drop it.
    Duplicate,
}

/// What a delivery found when it began handling a work item (see [`DeliveryLeases::begin`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Begun {
    /// This delivery owns the item now: it was new, its last holder's lease ran out (a killed
    /// invocation), or the record is this delivery's own (an SDK retry after a lost answer).
    /// Handle it, then [`DeliveryLeases::end`] it.
    Owned,
    /// Handled before: drop it.
    Done,
    /// Another delivery is handling it until its lease ends: report the message failed so the
    /// queue offers it again later; never delete it.
    InProgress {
        /// When the other delivery's lease ends.
        until: DateTime<Utc>,
    },
}

port_sum! {
/// Durable markers with an expiry, and the leases of work items being handled: the sum of
/// [`MarkerStore`] and [`DeliveryLeases`], which one table (or file) keeps.
pub trait DedupeStore =
/// Durable markers by key, each with an expiry: "seen", "held", "paused", "told once". Keys are
/// [`Marker`]s, made only by `keys.rs`.
pub trait MarkerStore: Send + Sync {
    /// Marks the key seen unless it already is (a conditional write); `ttl` bounds how long it
    /// is remembered. For markers whose work is a single write (alert once, enqueue once).
    fn first_sighting(&self, key: &Marker, ttl: Duration) -> impl Future<Output = Result<Seen, StoreError>> + Send;
    /// Forgets a marker whose work failed, so the next attempt makes it again.
    fn forget(&self, key: &Marker) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Marks the key for `ttl` from now, marked already or not: a marker that must last as long
    /// as the condition it records (a fleet outage's hold), renewed by whoever still sees it.
    fn mark(&self, key: &Marker, ttl: Duration) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Which of `keys` are marked now (by [`MarkerStore::first_sighting`], not expired). Reads
    /// only, many keys per call: the sweeper asks about every app in trouble at once.
    fn marked(&self, keys: &[Marker]) -> impl Future<Output = Result<std::collections::BTreeSet<Marker>, StoreError>> + Send;
    /// When `key` was first sighted: its marker's time when it is live (its expiry renewed to
    /// `ttl` from now), else now (the marker written). A marker that must name the moment a
    /// condition was first seen and keep naming it while whoever sees it renews it: a fleet
    /// outage's start, which keys its Slack parent, its buttons and its overdue alert.
    fn sighted(&self, key: &Marker, ttl: Duration) -> impl Future<Output = Result<DateTime<Utc>, StoreError>> + Send;
}
decorated by MarkerStoreDecorator;
/// Which deliveries of a work item (or a click) are being handled, and which were handled, so a
/// redelivery is dropped or taken over, never handled twice at once.
pub trait DeliveryLeases: Send + Sync {
    /// Begins handling a work item: an in-progress record owned by `owner` (one delivery of the
    /// item) until `lease` passes, so that a killed handler's record is taken over once its
    /// lease ends instead of dropping the redelivery as a duplicate (the Powertools idempotency
    /// model). The lease must outlast the handler's timeout and end before the queue's
    /// visibility timeout brings the message back.
    fn begin(&self, key: &Marker, owner: &str, lease: Duration) -> impl Future<Output = Result<Begun, StoreError>> + Send;
    /// Ends `owner`'s handling: `handled` keeps the key as done for `ttl` (later deliveries are
    /// duplicates); otherwise the record is removed so a redelivery is handled at once. Does
    /// nothing when another delivery has taken the record over.
    fn end(&self, key: &Marker, owner: &str, handled: bool, ttl: Duration) -> impl Future<Output = Result<(), StoreError>> + Send;
}
decorated by DeliveryLeasesDecorator;
}

port! {
/// A per-app lock so no two workers act on one app at the same time.
pub trait AppLock: Send + Sync {
    /// Takes the lock for `app` until `ttl` passes (a crashed holder's lock expires). False when
    /// another holder has it.
    fn try_lock(&self, app: &AppId, owner: &str, ttl: Duration) -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// Gives the lock back if `owner` still holds it; nothing when another holder took it over.
    fn unlock(&self, app: &AppId, owner: &str) -> impl Future<Output = Result<(), StoreError>> + Send;
}
decorated by AppLockDecorator;
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// One port's failure as another's keeps whether it may pass, and the first as its cause.
    #[test]
    fn a_failure_keeps_its_class_and_cause_across_ports() {
        let busy: QueueError = pass_on(StoreError::unavailable("the state file is locked"));
        assert!(busy.retryable());
        assert_eq!(busy.to_string(), "work queue: the state file is locked");
        assert_eq!(std::error::Error::source(&busy).map(ToString::to_string).as_deref(), Some("incident store: the state file is locked"));
        let broken = EscalationError::from(StoreError::invalid("action x: unreadable record"));
        assert!(!broken.retryable());
        assert_eq!(broken.what(), "action x: unreadable record");
        assert_eq!(StoreError::classified(true, "t".into()), StoreError::unavailable("t"));
        assert_ne!(StoreError::unavailable("t"), StoreError::invalid("t"), "the class is part of the error");
    }

    /// Counts the calls of the escalator methods an `Arc` forwarder once dropped.
    #[derive(Default)]
    struct Counting {
        resolved: AtomicUsize,
        looked_up: AtomicUsize,
        recorded: AtomicUsize,
        outages: AtomicUsize,
        ended: AtomicUsize,
        reported: AtomicUsize,
        told: AtomicUsize,
    }

    impl IncidentChannel for Counting {
        fn takes_approvals(&self) -> bool {
            false
        }
        async fn escalate(&self, _: &Permit, _: &Application, _: &Decision) -> Result<(), EscalationError> {
            Ok(())
        }
        async fn alert(&self, _: &Permit, _: &str) -> Result<(), EscalationError> {
            Ok(())
        }
        async fn resolve(&self, _: &Permit, _: &AppId, _: &Decision) -> Result<(), EscalationError> {
            self.resolved.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
        async fn report(&self, _: &Permit, _: &crate::report::Report, _: DateTime<Utc>) -> Result<(), EscalationError> {
            self.reported.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
        async fn tell_timeline(&self, _: &Permit, _: &crate::timeline::ThreadReply<'_>) -> Result<(), EscalationError> {
            self.told.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    impl OutageBoard for Counting {
        async fn outage(&self, _: &Permit, _: &crate::fleet::OutageView) -> Result<(), EscalationError> {
            self.outages.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
        async fn outages_ended(&self, _: &Permit, _: &[String]) -> Result<usize, EscalationError> {
            self.ended.fetch_add(1, Ordering::SeqCst);
            Ok(0)
        }
    }

    impl HumanActions for Counting {
        async fn human_action(&self, _: &str) -> Result<Option<HumanActionRequest>, EscalationError> {
            self.looked_up.fetch_add(1, Ordering::SeqCst);
            Ok(None)
        }
        async fn record_human_action(
            &self,
            _: &Permit,
            _: &HumanActionRequest,
            _: &str,
            _: &HumanActionOutcome,
        ) -> Result<(), EscalationError> {
            self.recorded.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    /// Drives a future that never waits (the test escalator's) to completion without a runtime.
    fn ready<F: Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => panic!("the test escalator never waits"),
        }
    }

    #[test]
    fn an_escalator_behind_an_arc_forwards_every_method_of_every_capability() {
        let inner = Arc::new(Counting::default());
        let shared: Arc<Counting> = Arc::clone(&inner);
        let decision: Decision = serde_json::from_value(serde_json::json!({
            "app": "argocd/a", "action": "none", "failure_mode": "healthy", "reason": "", "evidence": [], "human_actions": [], "resolves_incident": true,
            "decided_at": "2026-11-01T12:00:00Z"
        }))
        .expect("a minimal decision");
        let request: HumanActionRequest = serde_json::from_value(serde_json::json!({
            "id": "amact-0", "action": "acknowledge", "incident_id": "inc-0",
            "app": {"name": "a", "namespace": "argocd"}, "failure_mode": "healthy",
            "idempotency_key": "am1-00000000000000000000000000000000", "offered_at": "2026-11-01T12:00:00Z"
        }))
        .expect("a minimal request");
        ready(Escalator::resolve(&shared, Permit::for_tests(), &AppId::new("argocd", "a"), &decision)).unwrap();
        ready(Escalator::human_action(&shared, "amact-0")).unwrap();
        let outcome = HumanActionOutcome { performed: true, state: None, summary: String::new(), snoozed_until: None };
        ready(Escalator::record_human_action(&shared, Permit::for_tests(), &request, "U1", &outcome)).unwrap();
        let view = crate::fleet::OutageView {
            scope: "repo:git.example.com".into(),
            describe: "source host git.example.com".into(),
            began: None,
            since: None,
            covered: 10,
            listed: 12,
            canaries: 3,
            probed: 3,
            healed: 0,
            state: crate::fleet::WaveState::Held,
            released: 0,
            eta_secs: 0,
            by_person: false,
            overdue: false,
            projects: vec![],
        };
        ready(Escalator::outage(&shared, Permit::for_tests(), &view)).unwrap();
        ready(Escalator::outages_ended(&shared, Permit::for_tests(), &[])).unwrap();
        let epoch = DateTime::<Utc>::from_timestamp(0, 0).unwrap();
        let report = crate::report::report(&[], epoch, chrono::Duration::zero());
        ready(Escalator::report(&shared, Permit::for_tests(), &report, epoch)).unwrap();
        assert_eq!(inner.reported.load(Ordering::SeqCst), 1, "report reached the adapter");
        let reply = crate::timeline::ThreadReply { app: &AppId::new("argocd", "a"), incident_id: "i", key: "k", events: &[] };
        ready(Escalator::tell_timeline(&shared, Permit::for_tests(), &reply)).unwrap();
        assert_eq!(inner.told.load(Ordering::SeqCst), 1, "tell_timeline reached the adapter");
        assert_eq!(inner.outages.load(Ordering::SeqCst), 1, "outage reached the adapter");
        assert_eq!(inner.ended.load(Ordering::SeqCst), 1, "outages_ended reached the adapter");
        assert_eq!(inner.resolved.load(Ordering::SeqCst), 1, "resolve reached the adapter");
        assert_eq!(inner.looked_up.load(Ordering::SeqCst), 1, "human_action reached the adapter");
        assert_eq!(inner.recorded.load(Ordering::SeqCst), 1, "record_human_action reached the adapter");
    }
}

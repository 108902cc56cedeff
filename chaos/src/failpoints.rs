//! Named boundaries inside a worker process where the harness kills it. Each wrapper delegates to
//! the real adapter and, when its boundary is armed for the current batch, tells the harness on
//! stderr (`CHAOS-PAUSED <boundary>`) and stops making progress, so the SIGKILL that follows lands
//! exactly there: after the effect named, before anything after it.
//!
//! They also report every refresh sent under a claim of a refresh rung (`CHAOS-REFRESH-SENT
//! <key>`) and the end of that claim (`CHAOS-REFRESH-ENDED <key>`, completed or released), so the
//! harness can tell a refresh re-sent by a claim's takeover after its first sender was killed.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use medic_core::AppId;
use medic_core::app::{Application, ApplicationSyncRequest};
use medic_core::event::AppRef;
use medic_core::incident::{Attempt, Outcome};
use medic_core::keys::IdempotencyKey;
use medic_core::keys::IncidentKey;
use medic_core::ladder::RefreshKind;
use medic_core::ladder::Rung;
use medic_core::permit::Permit;
use medic_core::ports::{
    ArgoApi, ArgoApiDecorator, ArgoError, Begun, Claim, DeliveryLeases, DeliveryLeasesDecorator, EscalationStore, EscalationStoreDecorator,
    IncidentStore, IncidentStoreDecorator, MarkerStore, MarkerStoreDecorator, StoreError,
};

/// The boundaries, in the order a message meets them.
pub const BOUNDARIES: [&str; 5] = ["after-dedupe", "after-claim", "sync-in-flight", "before-record", "in-slack-post"];

static ARMED: Mutex<Option<String>> = Mutex::new(None);

/// The refresh rungs claimed in this process and not yet ended: app (`namespace/name`) → key.
/// One per app: the worker locks an app before its step.
static REFRESH_CLAIMS: Mutex<Option<HashMap<String, String>>> = Mutex::new(None);

fn refresh_claims<R>(f: impl FnOnce(&mut HashMap<String, String>) -> R) -> R {
    f(REFRESH_CLAIMS.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashMap::new))
}

fn refresh_ended(app: &AppId, key: &IdempotencyKey) {
    if refresh_claims(|c| c.remove(app.as_str())).is_some() {
        eprintln!("CHAOS-REFRESH-ENDED {}", key.as_str());
    }
}

/// Arms `boundary` for the next batch (`None` disarms).
pub fn arm(boundary: Option<String>) {
    *ARMED.lock().unwrap_or_else(|e| e.into_inner()) = boundary;
}

/// At `boundary`: when armed, report and never return (the harness kills the process).
async fn reached(boundary: &str) {
    let hit = ARMED.lock().unwrap_or_else(|e| e.into_inner()).as_deref() == Some(boundary);
    if hit {
        eprintln!("CHAOS-PAUSED {boundary}");
        loop {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    }
}

/// A port adapter with failpoints: it changes only the methods a boundary sits in, and every other
/// method forwards to the adapter it wraps.
pub struct Failpoint<T>(pub T);

impl<T: MarkerStore> MarkerStoreDecorator for Failpoint<T> {
    type Inner = T;
    fn inner(&self) -> &T {
        &self.0
    }
}

impl<T: DeliveryLeases> DeliveryLeasesDecorator for Failpoint<T> {
    type Inner = T;
    fn inner(&self) -> &T {
        &self.0
    }
    async fn begin(&self, key: &medic_core::keys::Marker, owner: &str, lease: Duration) -> Result<Begun, StoreError> {
        let begun = self.0.begin(key, owner, lease).await?;
        if begun == Begun::Owned {
            reached("after-dedupe").await;
        }
        Ok(begun)
    }
}

impl<T: IncidentStore> IncidentStoreDecorator for Failpoint<T> {
    type Inner = T;
    fn inner(&self) -> &T {
        &self.0
    }
    async fn claim(&self, app: &AppId, incident: &IncidentKey, attempt: &Attempt, in_progress_for: Duration) -> Result<Claim, StoreError> {
        let claim = self.0.claim(app, incident, attempt, in_progress_for).await?;
        if let (Claim::Granted, Rung::Refresh | Rung::HardRefresh, Some(key)) = (&claim, attempt.rung, &attempt.idempotency_key) {
            refresh_claims(|c| c.insert(app.to_string(), key.as_str().to_owned()));
        }
        if claim == Claim::Granted {
            reached("after-claim").await;
        }
        Ok(claim)
    }
    async fn complete(&self, app: &AppId, key: &IdempotencyKey, outcome: Outcome) -> Result<(), StoreError> {
        reached("before-record").await;
        let done = self.0.complete(app, key, outcome).await;
        refresh_ended(app, key);
        done
    }
    async fn release(&self, app: &AppId, key: &IdempotencyKey) -> Result<(), StoreError> {
        let done = self.0.release(app, key).await;
        refresh_ended(app, key);
        done
    }
}

impl<T: ArgoApi> ArgoApiDecorator for Failpoint<T> {
    type Inner = T;
    fn inner(&self) -> &T {
        &self.0
    }
    async fn refresh(&self, permit: &Permit, app: &AppRef, kind: RefreshKind) -> Result<Application, ArgoError> {
        if let Some(key) = refresh_claims(|c| c.get(app.id().as_str()).cloned()) {
            eprintln!("CHAOS-REFRESH-SENT {key}");
        }
        self.0.refresh(permit, app, kind).await
    }
    async fn sync(&self, permit: &Permit, app: &AppRef, request: &ApplicationSyncRequest) -> Result<Application, ArgoError> {
        // The POST reached Argo CD (whatever it answered); the worker dies before reading it.
        let answer = self.0.sync(permit, app, request).await;
        reached("sync-in-flight").await;
        answer
    }
}

impl<T: EscalationStore> EscalationStoreDecorator for Failpoint<T> {
    type Inner = T;
    fn inner(&self) -> &T {
        &self.0
    }
    async fn store(
        &self,
        group: &str,
        id: &str,
        doc: &serde_json::Value,
        expected: Option<u64>,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let written = self.0.store(group, id, doc, expected, ttl).await?;
        // A post's intent (a message record with a lease and no ts yet) is on record; the post
        // has not been made, or is being made.
        let intent =
            group == "msg" && doc.get("ts").is_none_or(serde_json::Value::is_null) && doc.get("lease_until").is_some_and(|l| !l.is_null());
        if written && intent {
            reached("in-slack-post").await;
        }
        Ok(written)
    }
}

//! The shadow report made from a store's recorded decisions ([`medic_core::report`]): the apps as
//! Argo CD shows them now, which settle what the records leave open, and the weekly report the
//! sweeper posts on its report schedule. `medic report` reads the same apps the same way.

use std::collections::BTreeMap;

use futures::StreamExt;
use medic_core::app::{AppId, Application};
use medic_core::event::AppRef;
use medic_core::ports::{ArgoApi, ArgoError};
use medic_core::record::DecisionRecord;

/// Reads of Argo CD in flight at once while the report is made (one per app in trouble).
const READS: usize = 8;

/// The apps of `records` that were in trouble, as Argo CD shows them now, one read each (a
/// read-only token will do), and the apps that could not be read with why: an app Argo CD no
/// longer has, or that this token may not read, keeps what its records say. A token Argo CD
/// refuses ends the report.
pub async fn apps_now<A: ArgoApi>(
    argo: &A,
    records: &[DecisionRecord],
) -> Result<(BTreeMap<AppId, Application>, Vec<(AppId, ArgoError)>), ArgoError> {
    let mut apps: BTreeMap<AppId, AppRef> = BTreeMap::new();
    for r in records.iter().filter(|r| r.decision.failure_mode != medic_core::FailureMode::Healthy) {
        let id = &r.decision.app;
        apps.entry(id.clone()).or_insert_with(|| AppRef {
            name: id.name().to_owned(),
            namespace: id.namespace().to_owned(),
            project: Some(r.project.clone()).filter(|p| !p.is_empty()),
        });
    }
    let reads: Vec<(AppId, Result<Application, ArgoError>)> =
        futures::stream::iter(apps).map(|(id, app)| async move { (id, argo.get_app(&app).await) }).buffered(READS).collect().await;
    let (mut now, mut unread) = (BTreeMap::new(), Vec::new());
    for (id, read) in reads {
        match read {
            Ok(found) => {
                now.insert(id, found);
            }
            Err(e @ ArgoError::Unauthenticated(_)) => return Err(e),
            Err(e) => unread.push((id, e)),
        }
    }
    Ok((now, unread))
}

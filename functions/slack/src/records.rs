//! The records the escalator keeps per message, incident, group window, group and snooze, how long
//! they live, and the read-only views `medic incidents` and slack-actions use.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::blocks::{GroupSummary, IncidentFacts, Status};
use chrono::{DateTime, Utc};
use medic_core::AppId;
use medic_core::catalogue::FailureMode;
use medic_core::human_action::{HumanActionRequest, IncidentState};
use medic_core::ports::{EscalationError, EscalationStore, StoreError, Versioned};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The last view of a fleet outage told (group `outage`, keyed like its parent message), so that
/// a later sweep that no longer sees the cause can tell it over (`OutageBoard::outages_ended`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct OutageRec {
    pub(super) view: medic_core::fleet::OutageView,
    #[serde(default)]
    pub(super) ended: bool,
}

/// A message posted once (group `msg`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct MessageRec {
    pub(super) channel: String,
    #[serde(default)]
    pub(super) thread_ts: Option<String>,
    #[serde(default)]
    pub(super) ts: Option<String>,
    #[serde(default)]
    pub(super) lease_until: Option<DateTime<Utc>>,
    pub(super) first_intent: DateTime<Utc>,
    #[serde(default)]
    pub(super) tries: u32,
}

/// One escalated incident (group `app#<app>`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct IncidentRec {
    pub(super) facts: IncidentFacts,
    pub(super) state: IncidentState,
    #[serde(default)]
    pub(super) detail: String,
    pub(super) state_at: DateTime<Utc>,
    /// Button generation: bumped when a person's action is performed.
    #[serde(default)]
    pub(super) generation: u32,
    /// Update counter (new actions block id on every update).
    #[serde(default)]
    pub(super) revision: u32,
    /// The message that shows this incident, and whether it is a group member's reply.
    pub(super) message_key: String,
    #[serde(default)]
    pub(super) member: bool,
    /// The message whose thread gets this incident's replies.
    pub(super) thread_key: String,
    /// The group window this incident joined, and its position in it (1-based).
    #[serde(default, rename = "window_fleet")]
    pub(super) window_group: Option<String>,
    #[serde(default)]
    pub(super) position: usize,
    /// Set once it is (or became) part of an incident group.
    #[serde(default, rename = "fleet")]
    pub(super) group: Option<String>,
    /// Snoozed at escalation: nothing was posted.
    #[serde(default)]
    pub(super) suppressed: bool,
    #[serde(default)]
    pub(super) resolved: bool,
    /// Human actions already reported.
    #[serde(default)]
    pub(super) reported: Vec<String>,
    #[serde(default)]
    pub(super) snoozed_until: Option<DateTime<Utc>>,
    /// The channel its thread is in, when routed to its team's ([`medic_core::route`]); empty:
    /// the deployment's channel (and every record written before routing).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(super) channel: String,
}

impl IncidentRec {
    pub(super) fn status(&self) -> Status {
        Status { state: self.state, detail: self.detail.clone(), at: self.state_at, snoozed_until: self.snoozed_until }
    }
}

/// The open group window of one failure mode (group `fleetwin`, [`stored::GROUP_WINDOW`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct WindowRec {
    #[serde(rename = "fleet_id")]
    pub(super) group_id: String,
    pub(super) last_at: DateTime<Utc>,
    /// The first incidents, in arrival order (as many as the group threshold: later ones join the
    /// group whatever their position, so only the first need remembering).
    pub(super) members: Vec<String>,
    /// Arrivals in this window.
    #[serde(default)]
    pub(super) count: usize,
}

/// A group member as the group parent lists it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(super) struct GroupMember {
    pub(super) incident_id: String,
    pub(super) app: AppId,
    pub(super) project: String,
    pub(super) destination: String,
}

/// An incident group (group `fleet`, [`stored::GROUP`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct GroupRec {
    #[serde(rename = "fleet_id")]
    pub(super) group_id: String,
    pub(super) failure_mode: FailureMode,
    pub(super) opened_at: DateTime<Utc>,
    pub(super) last_at: DateTime<Utc>,
    /// The incidents that arrived before the group was recognised (individual parents first).
    pub(super) earlier: Vec<String>,
    /// The apps with a reply of their own (at most `max_group_replies`).
    pub(super) members: Vec<GroupMember>,
    /// Apps beyond that: counted in the parent, no reply.
    #[serde(default)]
    pub(super) more: usize,
    /// Those apps per project and per destination cluster, for the parent's "most affected".
    #[serde(default)]
    pub(super) more_projects: BTreeMap<String, usize>,
    #[serde(default)]
    pub(super) more_clusters: BTreeMap<String, usize>,
    #[serde(default)]
    pub(super) resolved: Vec<String>,
    /// Whether the group parent is the first incident's parent, rewritten (`Some(Some(id))`), or
    /// a new message (`Some(None)`); decided once, by whoever gets there first.
    #[serde(default)]
    pub(super) adopt: Option<Option<String>>,
    /// The group parent exists.
    #[serde(default)]
    pub(super) established: bool,
    /// The earlier incidents were moved into the group thread.
    #[serde(default)]
    pub(super) migrated: bool,
    /// Bumped by every change the parent shows; `shown` is the revision on screen.
    #[serde(default)]
    pub(super) revision: u32,
    #[serde(default)]
    pub(super) shown: u32,
    /// The one worker updating the parent now (so updates cannot land out of order), until when.
    #[serde(default)]
    pub(super) updater: Option<u64>,
    #[serde(default)]
    pub(super) updating_until: Option<DateTime<Utc>>,
}

impl GroupRec {
    pub(super) fn summary(&self, instance: &str) -> GroupSummary {
        // Every app counts, with a reply of its own or beyond the reply limit.
        let mut projects = self.more_projects.clone();
        let mut clusters = self.more_clusters.clone();
        for m in &self.members {
            *projects.entry(m.project.clone()).or_default() += 1;
            *clusters.entry(m.destination.clone()).or_default() += 1;
        }
        GroupSummary {
            group_id: self.group_id.clone(),
            instance: instance.to_owned(),
            failure_mode: self.failure_mode,
            apps: self.members.iter().map(|m| m.app.clone()).collect(),
            total: self.members.len() + self.more,
            resolved: self.resolved.len(),
            projects: projects.into_iter().collect(),
            clusters: clusters.into_iter().collect(),
            first_at: self.opened_at,
            last_at: self.last_at,
        }
    }

    pub(super) fn status(&self) -> Status {
        let total = self.members.len() + self.more;
        let all = total > 0 && self.resolved.len() >= total && self.members.iter().all(|m| self.resolved.contains(&m.incident_id));
        Status {
            state: if all { IncidentState::Resolved } else { IncidentState::NeedsHuman },
            detail: String::new(),
            at: self.last_at,
            snoozed_until: None,
        }
    }
}

/// Who snoozed an app, until when (group `snooze`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct SnoozeRec {
    pub(super) until: DateTime<Utc>,
    pub(super) by: String,
}

/// A failure of the records or of Slack as the escalator's, keeping whether it may pass.
pub(super) fn esc_err(e: impl Into<EscalationError>) -> EscalationError {
    e.into()
}

pub(super) fn parse<T: DeserializeOwned>(v: &Versioned, what: &str) -> Result<T, EscalationError> {
    serde_json::from_value(v.doc.clone()).map_err(|e| EscalationError::invalid(format!("{what}: unreadable record: {e}")).caused_by(e))
}

pub(super) fn to_doc<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("records serialise")
}

// ------------------------------------------------------------------------------------------------
// The escalator
// ------------------------------------------------------------------------------------------------

/// Compare-and-set retries before giving up on a contended record.
pub(super) const CAS_TRIES: usize = 50;

/// The TTL of an open incident's records: as good as never (the stores cap a TTL at ten years).
/// Resolving the incident gives them `record_ttl`.
pub(super) const UNTIL_RESOLVED: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// Records whose life follows an incident's: kept until it resolves, then `record_ttl`.
pub(super) trait Resolvable {
    fn is_resolved(&self) -> bool;
}

impl Resolvable for IncidentRec {
    fn is_resolved(&self) -> bool {
        self.resolved
    }
}

impl Resolvable for GroupRec {
    fn is_resolved(&self) -> bool {
        self.status().state == IncidentState::Resolved
    }
}

/// What the button with opaque id `id` stands for, read straight from the store (the
/// slack-actions function, which holds no Slack token, uses this). `None` when unknown or expired.
pub async fn load_action<S: EscalationStore>(store: &S, id: &str) -> Result<Option<HumanActionRequest>, StoreError> {
    if !medic_core::keys::is_action_id(id) {
        return Ok(None);
    }
    match store.load("action", id).await? {
        Some(v) => serde_json::from_value(v.doc)
            .map(Some)
            .map_err(|e| StoreError::invalid(format!("action {id}: unreadable record: {e}")).caused_by(e)),
        None => Ok(None),
    }
}

/// What the fleet button with opaque id `id` stands for (slack-actions reads it on a click).
/// `None` when unknown or expired.
///
/// Its projects are the outage's latest (the view the last sweep told, kept under the parent's
/// key), not those of the sweep that first posted it: an outage that grew into other projects
/// asks the clicking person to be allowed on those too (M4).
pub async fn load_fleet_button<S: EscalationStore>(store: &S, id: &str) -> Result<Option<medic_core::fleet::FleetButton>, StoreError> {
    if !medic_core::keys::is_fleet_button_id(id) {
        return Ok(None);
    }
    let Some(v) = store.load("fleetbtn", id).await? else { return Ok(None) };
    let mut button: medic_core::fleet::FleetButton = serde_json::from_value(v.doc)
        .map_err(|e| StoreError::invalid(format!("fleet button {id}: unreadable record: {e}")).caused_by(e))?;
    if !button.outage.is_empty()
        && let Some(v) = store.load("outage", &button.outage).await?
    {
        let rec: OutageRec = serde_json::from_value(v.doc)
            .map_err(|e| StoreError::invalid(format!("outage {}: unreadable record: {e}", button.outage)).caused_by(e))?;
        let projects: std::collections::BTreeSet<String> = button.projects.drain(..).chain(rec.view.projects).collect();
        button.projects = projects.into_iter().collect();
    }
    Ok(Some(button))
}

/// What the Slack records say about one incident, for operators (`medic incidents`): its state
/// in Slack, where its thread is, and the incident group it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlackIncidentView {
    pub state: IncidentState,
    /// Who moved it there (`acknowledge by <@U…>`), when set.
    pub detail: String,
    /// Not posted: the app was snoozed when it escalated.
    pub suppressed: bool,
    pub project: String,
    pub failure_mode: FailureMode,
    /// The channel of its messages, once posted.
    pub channel: Option<String>,
    /// The `ts` of the thread's parent (where its replies go): its own parent, or the group's.
    pub thread_ts: Option<String>,
    /// The `ts` of the message that shows it (its parent, or its reply in a group thread).
    pub message_ts: Option<String>,
    /// The incident group it belongs to (serialized `fleet`, the name `medic incidents -o json`
    /// has shown since groups were called fleets).
    #[serde(rename = "fleet")]
    pub group: Option<GroupView>,
}

/// An incident group as [`SlackIncidentView`] names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupView {
    #[serde(rename = "fleet_id")]
    pub group_id: String,
    pub failure_mode: FailureMode,
    /// Apps in it (with a reply of their own or counted), and how many recovered.
    pub apps: usize,
    pub resolved: usize,
    pub opened_at: DateTime<Utc>,
}

/// The Slack records of incident `incident_id` of `app` (`namespace/name`), read straight from
/// the store (no Slack call); `None` when it was never escalated (or its records expired).
pub async fn incident_view<S: EscalationStore>(store: &S, app: &AppId, incident_id: &str) -> Result<Option<SlackIncidentView>, StoreError> {
    let read = medic_core::ports::pass_on::<StoreError>;
    let Some(v) = store.load(&app_group(app), incident_id).await? else { return Ok(None) };
    let rec: IncidentRec = parse(&v, incident_id).map_err(read)?;
    let message = |key: String| async move {
        match store.load("msg", &key).await? {
            Some(v) => parse::<MessageRec>(&v, &key).map(Some).map_err(read),
            None => Ok(None),
        }
    };
    let thread = message(rec.thread_key.clone()).await?;
    let shown = message(rec.message_key.clone()).await?;
    let group = match &rec.group {
        Some(id) => match store.load(stored::GROUP, id).await? {
            Some(v) => {
                let f: GroupRec = parse(&v, id).map_err(read)?;
                Some(GroupView {
                    group_id: f.group_id.clone(),
                    failure_mode: f.failure_mode,
                    apps: f.members.len() + f.more,
                    resolved: f.resolved.len(),
                    opened_at: f.opened_at,
                })
            }
            None => None,
        },
        None => None,
    };
    Ok(Some(SlackIncidentView {
        state: rec.state,
        detail: rec.detail.clone(),
        suppressed: rec.suppressed,
        project: rec.facts.project.clone(),
        failure_mode: rec.facts.failure_mode,
        channel: thread.as_ref().or(shown.as_ref()).map(|m| m.channel.clone()),
        thread_ts: thread.and_then(|m| m.ts),
        message_ts: shown.and_then(|m| m.ts),
        group,
    }))
}

pub(super) fn app_group(app: &AppId) -> String {
    format!("app#{app}")
}

/// The stored names of the incident groups' records and messages. Groups were called fleets when
/// these were first written, and what the deployed release wrote must still read, so they keep
/// the old word: the one "fleet" of this crate that is not an outage.
pub(super) mod stored {
    /// The store group of the incident groups' records.
    pub(crate) const GROUP: &str = "fleet";
    /// The store group of the open group windows, one per failure mode.
    pub(crate) const GROUP_WINDOW: &str = "fleetwin";

    /// The message key of a group's parent.
    pub(crate) fn parent_key(group_id: &str) -> String {
        format!("fleet:{group_id}")
    }

    /// The message key of the note that every app of a group recovered (`members` apps then).
    pub(crate) fn resolved_key(group_id: &str, members: usize) -> String {
        format!("fleetres:{group_id}:{members}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The deployed release wrote incident groups as "fleets": its records must still read, and
    /// what this release writes must read there, so the stored names are pinned here.
    #[test]
    fn group_records_keep_the_stored_names_of_the_deployed_release() {
        assert_eq!((stored::GROUP, stored::GROUP_WINDOW), ("fleet", "fleetwin"));
        assert_eq!(stored::parent_key("flt-1"), "fleet:flt-1");
        assert_eq!(stored::resolved_key("flt-1", 3), "fleetres:flt-1:3");

        let window = json!({"fleet_id": "flt-1", "last_at": "2026-12-01T10:00:00Z", "members": ["i1", "i2"], "count": 2});
        let read: WindowRec = serde_json::from_value(window.clone()).unwrap();
        assert_eq!(read.group_id, "flt-1");
        assert_eq!(serde_json::to_value(&read).unwrap(), window);

        let group = json!({"fleet_id": "flt-1", "failure_mode": "hook-failed", "opened_at": "2026-12-01T10:00:00Z",
            "last_at": "2026-12-01T10:05:00Z", "earlier": ["i1"], "members": []});
        let read: GroupRec = serde_json::from_value(group).unwrap();
        assert_eq!(read.group_id, "flt-1");
        let written = serde_json::to_value(&read).unwrap();
        assert_eq!(written["fleet_id"], "flt-1");
        assert!(written.get("group_id").is_none(), "{written}");

        let app = medic_core::Application::default();
        let decision = medic_core::decision::Decision::nothing(&app.id(), "2026-12-01T10:00:00Z".parse().unwrap());
        let incident = IncidentRec {
            facts: IncidentFacts::new(&app, &decision, None),
            state: IncidentState::NeedsHuman,
            detail: String::new(),
            state_at: "2026-12-01T10:00:00Z".parse().unwrap(),
            generation: 0,
            revision: 0,
            message_key: stored::parent_key("flt-1"),
            member: true,
            thread_key: stored::parent_key("flt-1"),
            window_group: Some("flt-1".into()),
            position: 2,
            group: Some("flt-1".into()),
            suppressed: false,
            resolved: false,
            reported: vec![],
            snoozed_until: None,
            channel: String::new(),
        };
        let written = serde_json::to_value(&incident).unwrap();
        assert_eq!((&written["fleet"], &written["window_fleet"]), (&json!("flt-1"), &json!("flt-1")), "{written}");
        let read: IncidentRec = serde_json::from_value(written).unwrap();
        assert_eq!((read.group.as_deref(), read.window_group.as_deref()), (Some("flt-1"), Some("flt-1")));
    }
}

//! Every key Argo Medic derives, and the only place each is derived: incident ids, idempotency
//! keys, the dedupe keys of notifications and work items, and button ids. All are SHA-256 over
//! NUL-terminated parts that start with a scheme name and version (`argo-medic/action/v1`), so
//! no two kinds of key can collide. Deployed versions have written these into DynamoDB, Argo
//! CD's `operation.info`, SQS and Slack, so `functions/core/tests/key_vectors.rs` pins each byte
//! for byte: a change is a new scheme, never a refactoring. Nothing here depends on the rest of
//! the core but the ladder's names.
//!
//! An idempotency key is `am1-` followed by the first 32 hex digits of SHA-256 over
//! `argo-medic/action/v1`, the incident id and the ladder rung, each part terminated by a NUL byte.
//! The incident id in turn hashes the instance, `namespace/name`, the revision and the moment the
//! episode began (RFC 3339, seconds). Consequences:
//! - the same incident observed twice, by any worker, after any crash, yields the same key for the
//!   same rung, so a redelivered message or a rerun finds the action already recorded;
//! - a new episode (new revision, or trouble beginning again after recovery) yields new keys;
//! - a person's action from an escalation gets its key from the button's opaque id
//!   ([`IdempotencyKey::for_human_action`]), so a double click or a redelivery acts once;
//! - the key carries no secret and no personal data, so it can travel in Argo CD's `infos`, logs
//!   and Slack metadata. 128 bits keep accidental collisions out of reach.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use chrono::{DateTime, SecondsFormat, Utc};

use crate::app::AppId;
use crate::ladder::{FleetControl, HumanAction, Rung};

/// The identity of one incident.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IncidentKey {
    /// The Argo CD instance id from the configuration.
    pub instance: String,
    /// The app in trouble.
    pub app: AppId,
    /// The revision the app was at when the episode began.
    pub revision: String,
    /// When the episode began: the failed operation's start, or the health/sync transition.
    /// `None` when the Application carries no timestamp for it.
    pub began_at: Option<DateTime<Utc>>,
}

impl IncidentKey {
    /// A short stable id, `inc-` and 20 hex digits of SHA-256 over the four parts.
    pub fn id(&self) -> String {
        let began = self.began_at.map_or_else(|| "-".to_owned(), |t| t.to_rfc3339_opts(SecondsFormat::Secs, true));
        format!("inc-{}", &digest(&["argo-medic/incident/v1", &self.instance, self.app.as_str(), &self.revision, &began])[..20])
    }

    /// The idempotency key of taking `rung` in this incident.
    pub fn key_for(&self, rung: Rung) -> IdempotencyKey {
        IdempotencyKey::derive(self, rung)
    }

    /// The idempotency key of the `attempt`-th try of `rung` in this incident (1 for the first):
    /// a rung Argo CD refused (another operation running, a sync window) is tried again under a
    /// fresh key, since its first key is on record as done.
    pub fn key_for_attempt(&self, rung: Rung, attempt: u32) -> IdempotencyKey {
        IdempotencyKey::derive_attempt(self, rung, attempt)
    }
}

/// A key of the dedupe records ([`crate::ports::DedupeStore`]): a marker, or a work item's
/// delivery lease. Made only in this file, so every key the state table holds is derived here
/// and pinned by `tests/key_vectors.rs`; a store reads its text and never makes one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Marker(String);

impl Marker {
    /// The key as the store keeps it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Any key, for a test of a store's own contract; compiled only with the `test-permit`
    /// feature, which no product crate enables.
    #[cfg(any(test, feature = "test-permit"))]
    pub fn for_tests(key: &str) -> Marker {
        Marker(key.to_owned())
    }
}

impl std::fmt::Display for Marker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<&str> for Marker {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for Marker {
    fn eq(&self, other: &String) -> bool {
        self.0 == *other
    }
}

/// The delivery lease (and "handled" record) of a work item, by the item's dedupe key: the same
/// text, which deployed releases wrote as the record's key.
pub fn delivery_marker(dedupe_key: &str) -> Marker {
    Marker(dedupe_key.to_owned())
}

/// The replay marker of a Slack request, by its v0 signature's tag: lower-cased hex, so a copy
/// whose hex differs only in case (which decodes to the same tag and verifies) is the same request.
pub fn slack_replay_marker(signature: &str) -> Marker {
    Marker(format!("slack-request-{}", signature.trim().trim_start_matches("v0=").to_ascii_lowercase()))
}

/// The claim of a clicked button (slack-actions): the first click holds it while its action is
/// enqueued and keeps it once it is, so a second click, from anyone, does nothing.
pub fn click_claim_marker(action_id: &str) -> Marker {
    Marker(format!("slack-action-{action_id}"))
}

/// The marker of a person's action that changed Argo CD, by its idempotency key: written once it
/// is performed and before it is reported, so a redelivered click reports instead of acting again.
pub fn performed_marker(key: &IdempotencyKey) -> Marker {
    Marker(format!("performed-{}", key.as_str()))
}

/// The id of one event of an incident's timeline: its kind and the natural key of what it
/// records (a delivery's dedupe key, an action's idempotency key, a button's id), so the same
/// event written again, by a redelivery or a run that took a claim over, is the same record.
pub fn timeline_event_id(incident_id: &str, kind: &str, natural: &str) -> String {
    format!("{kind}-{}", &digest(&["argo-medic/timeline/v1", incident_id, kind, natural])[..24])
}

/// The key of the reply in an incident's Slack thread that tells the timeline before its
/// escalation: `tl:`, the incident and the escalation's idempotency key, so a retried or resumed
/// escalation finds the reply already posted.
pub fn timeline_reply_key(incident_id: &str, natural: &str) -> String {
    format!("tl:{incident_id}:{natural}")
}

/// The key the weekly shadow report of `instance` made at `now` is told once under: its ISO week
/// (`report-<instance>-2026-W49`), so every run in the same week finds the message already posted.
pub fn weekly_report_key(instance: &str, now: DateTime<Utc>) -> String {
    let week = chrono::Datelike::iso_week(&now);
    format!("report-{instance}-{}-W{:02}", week.year(), week.week())
}

/// The marker of a weekly report not posted yet: written by the report's scheduled run, forgotten
/// once it is posted (or the gate held it). Its run is not retried (the sweeper's one retry policy
/// suits sweeps), so the sweeps that follow a failed run post it.
pub fn weekly_report_due_marker(now: DateTime<Utc>) -> Marker {
    let week = chrono::Datelike::iso_week(&now);
    Marker(format!("weekly-report-due-{}-W{:02}", week.year(), week.week()))
}

/// The dedupe key of a notification (`ev1-`): the state it reports and its episode, hashed
/// (see `NotificationEvent::dedupe_key` for which parts and why).
pub fn notification_dedupe_key(parts: &[&str]) -> String {
    let mut all = Vec::with_capacity(parts.len() + 1);
    all.push("argo-medic/notification/v1");
    all.extend_from_slice(parts);
    format!("ev1-{}", &digest(&all)[..32])
}

/// The dedupe key of a work item that is no notification: `prefix` names its kind (`sw1` sweep,
/// `rc1` recheck, `rq1` requested, `ev1` a notification looked at again), `window` the time
/// window or request it belongs to, so one app is enqueued at most once per window.
pub fn work_dedupe_key(prefix: &str, namespace: &str, name: &str, trigger: &str, window: &str) -> String {
    format!("{prefix}-{}", &digest(&["argo-medic/work/v1", namespace, name, trigger, window])[..32])
}

/// The marker the worker sets when a notification reports `app` (`namespace/name`), one per
/// hour: the sweeper reads this hour's and the previous one's to tell which apps in trouble no
/// notification reported (`MissedNotifications`).
pub fn notified_marker(app: &AppId, at: DateTime<Utc>) -> Marker {
    Marker(format!("notified-{app}-{}", at.format("%Y%m%d%H")))
}

/// The marker the sweeper keeps while a fleet outage's cause (`crate::fleet::CauseScope::key`)
/// holds its apps back; the worker leaves a notification of a covered app to the cause.
pub fn fleet_hold_marker(scope_key: &str) -> Marker {
    Marker(format!("fleet-hold-{scope_key}"))
}

/// The marker of a fleet outage's first sighting ([`crate::ports::DedupeStore::sighted`]): kept
/// by every sweep that sees the cause of `scope_key`, its time is the outage's identity (`since`
/// below), which keys its Slack parent, its buttons, its alert and its controls.
pub fn fleet_sighting_marker(scope_key: &str) -> Marker {
    Marker(format!("fleet-seen-{scope_key}"))
}

/// The marker a person's fleet button leaves for the sweeper: `fleet-pause-<scope>-<since>` holds
/// the wave of the outage first sighted at `since` back, `fleet-release-<scope>-<since>` releases
/// it at the next sweep. Keyed by the outage, so a pause outlives neither it nor its buttons: a
/// later outage of the same scope starts unpaused.
pub fn fleet_control_marker(scope_key: &str, since: &str, control: FleetControl) -> Marker {
    Marker(format!("fleet-{}-{scope_key}-{since}", control.as_str()))
}

/// The marker a recovery wave of the outage first sighted at `since` leaves when most of one of
/// its batches failed again (`fleet::batch_verdict`): the workers hold the rest of the wave, and
/// the sweeper does not release it again while it lasts.
pub fn fleet_relapse_marker(scope_key: &str, since: &str) -> Marker {
    Marker(format!("fleet-relapse-{scope_key}-{since}"))
}

/// The marker the sweeper keeps while it lets an outage's wave go: the wave is enqueued by the
/// sweep that first decides to release it, not again by every later sweep that still sees the
/// cause (M3). Forgotten when a sweep holds the cause again, so a later release sends the wave
/// anew.
pub fn fleet_released_marker(scope_key: &str, since: &str) -> Marker {
    Marker(format!("fleet-released-{scope_key}-{since}"))
}

/// The marker the sweeper keeps while a released recovery wave of the scope `scope_key` is being
/// stepped: the workers leave every other automatic item of a down app of the scope to the wave.
/// Outlives the cause on purpose: as the wave heals apps the cause drops under
/// `FleetRules::min_apps` and the sweep looks at the rest itself, and their last reconcile, from
/// the outage, would escalate them before their wave step refreshed them. Keyed by scope, not by
/// outage: it lapses by itself (the wave's time and two windows), and a hold forgets it.
pub fn fleet_recovering_marker(scope_key: &str) -> Marker {
    Marker(format!("fleet-recovering-{scope_key}"))
}

/// The marker a sweep writes when it decides to release the recovery wave of the scope
/// `scope_key`, and forgets once the wave is on the queue. Found by a later sweep, the release
/// was lost with the sweep that decided it (killed, or its queue refused the batch): its
/// canaries healed then, so the cause may be under `FleetRules::min_apps` now, and that sweep
/// sends the wave itself.
pub fn fleet_release_pending_marker(scope_key: &str) -> Marker {
    Marker(format!("fleet-release-pending-{scope_key}"))
}

/// The markers of the release before outages had an identity (`fleet-pause-<scope>`,
/// `fleet-release-<scope>`, `fleet-relapse-<scope>`): read, never written, so a pause, release
/// or relapse left mid-outage by that release still counts for the outage going on (they lapse
/// within a day).
pub fn legacy_fleet_markers(scope_key: &str) -> [Marker; 3] {
    [format!("fleet-pause-{scope_key}"), format!("fleet-release-{scope_key}"), format!("fleet-relapse-{scope_key}")].map(Marker)
}

/// The markers that pause the wave of `slot`, in order: the wave's own relapse and a person's
/// pause, of its outage, or (an item of the previous release, without `since`) of its scope.
pub fn wave_pause_markers(slot: &crate::ladder::WaveSlot) -> [Marker; 2] {
    if slot.since.is_empty() {
        let [pause, _, relapse] = legacy_fleet_markers(&slot.scope);
        [relapse, pause]
    } else {
        [fleet_relapse_marker(&slot.scope, &slot.since), fleet_control_marker(&slot.scope, &slot.since, FleetControl::Pause)]
    }
}

/// The marker of how one item of a recovery wave went: `fleet-wave-<scope>-<wave>-<index>-<outcome>`.
pub fn wave_outcome_marker(slot: &crate::ladder::WaveSlot, index: u32, outcome: crate::ladder::WaveOutcome) -> Marker {
    Marker(format!("fleet-wave-{}-{}-{index}-{}", slot.scope, slot.wave, outcome.as_str()))
}

const FLEET_BUTTON_PREFIX: &str = "amfleet-";

/// The opaque id of a fleet outage's button: `amfleet-` and 32 hex digits over the cause's scope,
/// when it began and the control. Nothing can be read back from it.
pub fn fleet_button_id(scope_key: &str, began: &str, control: FleetControl) -> String {
    format!("{FLEET_BUTTON_PREFIX}{}", &digest(&["argo-medic/fleet-button/v1", scope_key, began, control.as_str()])[..32])
}

/// True for an id [`fleet_button_id`] makes.
pub fn is_fleet_button_id(s: &str) -> bool {
    s.strip_prefix(FLEET_BUTTON_PREFIX).is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The marker that counts an app as missed by notifications at most once a day.
pub fn missed_marker(app: &AppId, at: DateTime<Utc>) -> Marker {
    Marker(format!("missed-{app}-{}", at.format("%Y%m%d")))
}

/// The prefix of every button id.
pub const ACTION_ID_PREFIX: &str = "amact-";

/// True when `s` has the shape of an id [`action_id`] makes.
pub fn is_action_id(s: &str) -> bool {
    s.strip_prefix(ACTION_ID_PREFIX).is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The opaque id of the button for `action` in `incident_id`, generation `generation`:
/// `amact-` and 32 hex digits. Nothing can be read back from it.
pub fn action_id(incident_id: &str, action: HumanAction, generation: u32) -> String {
    format!("{ACTION_ID_PREFIX}{}", &digest(&["argo-medic/slack-action/v1", incident_id, action.as_str(), &generation.to_string()])[..32])
}

/// The key that makes one action of one incident happen at most once.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Derives the key of taking `rung` in `incident`.
    pub fn derive(incident: &IncidentKey, rung: Rung) -> Self {
        Self(format!("am1-{}", &digest(&["argo-medic/action/v1", &incident.id(), rung.as_str()])[..32]))
    }

    /// The key of the `attempt`-th try of `rung` in `incident`. The first try's key is
    /// [`IdempotencyKey::derive`]'s, so records written before retries existed keep their keys;
    /// a later try hashes its number too (`argo-medic/action/v1/attempt`).
    pub fn derive_attempt(incident: &IncidentKey, rung: Rung, attempt: u32) -> Self {
        if attempt <= 1 {
            return Self::derive(incident, rung);
        }
        let n = attempt.to_string();
        Self(format!("am1-{}", &digest(&["argo-medic/action/v1/attempt", &incident.id(), rung.as_str(), &n])[..32]))
    }

    /// The key of performing the action a person chose on an escalation (the button's opaque
    /// id names the incident, the action and its generation). A sync carries it in Argo CD's
    /// `infos`, so a redelivered request finds the sync it already started.
    pub fn for_human_action(action_id: &str) -> Self {
        Self(format!("am1-{}", &digest(&["argo-medic/human-action/v1", action_id])[..32]))
    }

    /// The key as text: `am1-` and 32 hex digits, as stores, logs and Argo CD's `infos` carry it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Accepts a key read back from storage or from Argo CD's `operation.info`.
    pub fn parse(s: &str) -> Option<Self> {
        let hex = s.strip_prefix("am1-")?;
        (hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then(|| Self(s.to_owned()))
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A freeze's id: `frz-` and 12 hex digits over its scope (as `FreezeScope` displays it) and
/// when it was set.
pub fn freeze_id(scope: &str, at: DateTime<Utc>) -> String {
    format!("frz-{}", &digest(&["argo-medic/freeze/v1", scope, &at.to_rfc3339_opts(SecondsFormat::Millis, true)])[..12])
}

/// The marker of a freeze's reminder: told once while it lives.
pub fn freeze_reminder_marker(freeze_id: &str) -> Marker {
    Marker(format!("freeze-reminder-{freeze_id}"))
}

/// The id of a group of incidents of one failure mode that Slack shows under one parent (the
/// records still say `fleet`, as the deployed releases wrote them): `flt-` and 20 hex digits over
/// the instance, the mode and when the group began (microseconds). Its parts are NUL-separated,
/// not NUL-terminated: the scheme predates `digest`.
pub fn group_id(instance: &str, mode: &str, began: DateTime<Utc>) -> String {
    let digest = Sha256::digest(format!("argo-medic/fleet/v1\0{instance}\0{mode}\0{}", began.timestamp_micros()).as_bytes());
    format!("flt-{}", hex::encode(&digest[..10]))
}

/// The work item of a person's click (slack-actions): `sa1-` and 32 hex digits over the button's
/// id, so a double click or a redelivered interaction is one item. (Its parts are NUL-separated,
/// not NUL-terminated: the scheme predates `digest`.)
pub fn click_work_key(action_id: &str) -> String {
    let digest = Sha256::digest(format!("argo-medic/slack-action-work/v1\0{action_id}").as_bytes());
    format!("sa1-{}", &hex::encode(digest)[..32])
}

/// The dedupe key of the `n`th recheck a work item chains (its requeue after a wait).
pub fn recheck_dedupe_key(dedupe_key: &str, n: u32) -> String {
    format!("{dedupe_key}#{n}")
}

/// The sweeper's marker of an item it enqueued in a window (the worker dedupes on the item's own
/// key; this keeps the sweeper from enqueueing it again in the window).
pub fn sweep_enqueued_marker(dedupe_key: &str) -> Marker {
    Marker(format!("enqueued-{dedupe_key}"))
}

/// The marker of an alert told at most once a day (`alert-<kind>-<YYYYMMDD>`).
pub fn daily_alert_marker(kind: &str, now: DateTime<Utc>) -> Marker {
    Marker(format!("alert-{kind}-{}", now.format("%Y%m%d")))
}

/// The marker of an alert told at most once an hour (`alert-<kind>-<YYYYMMDDHH>`).
pub fn hourly_alert_marker(kind: &str, now: DateTime<Utc>) -> Marker {
    Marker(format!("alert-{kind}-{}", now.format("%Y%m%d%H")))
}

/// The marker of an outage's escalation: once per outage (its scope and sighting), whatever the
/// window and however its start is refined.
pub fn outage_overdue_marker(scope_key: &str, sighted_at: Option<DateTime<Utc>>) -> Marker {
    Marker(format!("alert-outage-overdue-{scope_key}-{}", sighted_at.map_or(0, |t| t.timestamp())))
}

/// Lower-case hex SHA-256 over NUL-terminated parts (so `("ab","c")` and `("a","bc")` differ).
fn digest(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    /// The key of `incident()`'s sync as released versions derived it (computed independently).
    const GOLDEN_SYNC_KEY: &str = "am1-8e1b7e5f4ee5d8dbe4e0e61a5a390585";

    fn incident() -> IncidentKey {
        IncidentKey {
            instance: "prod".into(),
            app: crate::AppId::new("argocd", "payments"),
            revision: "abc123".into(),
            began_at: Some(chrono::Utc.with_ymd_and_hms(2026, 11, 1, 12, 0, 0).unwrap()),
        }
    }

    #[test]
    fn key_is_stable_and_parses_back() {
        let k = IdempotencyKey::derive(&incident(), Rung::Sync);
        assert_eq!(k, IdempotencyKey::derive(&incident(), Rung::Sync));
        assert_eq!(IdempotencyKey::parse(k.as_str()), Some(k.clone()));
        assert!(k.as_str().starts_with("am1-") && k.as_str().len() == 36);
    }

    #[test]
    fn every_part_of_the_incident_and_the_rung_changes_the_key() {
        let base = IdempotencyKey::derive(&incident(), Rung::Refresh);
        assert_ne!(base, IdempotencyKey::derive(&incident(), Rung::HardRefresh));
        let mut i = incident();
        i.instance = "staging".into();
        assert_ne!(base, IdempotencyKey::derive(&i, Rung::Refresh));
        let mut i = incident();
        i.revision = "def456".into();
        assert_ne!(base, IdempotencyKey::derive(&i, Rung::Refresh));
        let mut i = incident();
        i.began_at = None;
        assert_ne!(base, IdempotencyKey::derive(&i, Rung::Refresh));
        let mut i = incident();
        i.app = crate::AppId::new("argocd", "payment");
        assert_ne!(base, IdempotencyKey::derive(&i, Rung::Refresh));
    }

    #[test]
    fn a_retried_rung_gets_a_fresh_key_and_the_first_try_keeps_the_old_one() {
        let first = IdempotencyKey::derive(&incident(), Rung::Sync);
        assert_eq!(IdempotencyKey::derive_attempt(&incident(), Rung::Sync, 1), first);
        assert_eq!(IdempotencyKey::derive_attempt(&incident(), Rung::Sync, 0), first);
        let second = IdempotencyKey::derive_attempt(&incident(), Rung::Sync, 2);
        let third = IdempotencyKey::derive_attempt(&incident(), Rung::Sync, 3);
        assert!(second != first && third != first && third != second);
        assert_eq!(IdempotencyKey::parse(second.as_str()), Some(second.clone()));
        // Pinned: a key on record must never change meaning between releases.
        assert_eq!(first.as_str(), GOLDEN_SYNC_KEY);
    }

    #[test]
    fn parse_rejects_foreign_strings() {
        assert_eq!(IdempotencyKey::parse("INC-1234"), None);
        assert_eq!(IdempotencyKey::parse("am1-xyz"), None);
    }

    /// The weekly report's key is its ISO week, whose year is not always the calendar's.
    #[test]
    fn a_weekly_report_is_keyed_by_its_iso_week() {
        let at = |t: &str| t.parse::<DateTime<Utc>>().unwrap();
        assert_eq!(weekly_report_key("prod", at("2026-12-07T09:00:00Z")), "report-prod-2026-W50");
        assert_eq!(weekly_report_key("prod", at("2026-12-13T23:59:59Z")), "report-prod-2026-W50", "the same week, Sunday night");
        assert_eq!(weekly_report_key("prod", at("2027-01-01T09:00:00Z")), "report-prod-2026-W53", "a Friday in 2026's last week");
        assert_eq!(weekly_report_key("prod", at("2027-01-04T09:00:00Z")), "report-prod-2027-W01");
    }
}

//! [`SlackEscalator`]: post-once messages, incident parents updated in place, thread replies, and
//! the `Escalator` port.

use super::client::*;
use super::records::*;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::blocks::{self, Button, IncidentFacts, METADATA_EVENT_TYPE, Rendered};
use chrono::{DateTime, TimeDelta, Utc};
use medic_core::AppId;
use medic_core::Application;
use medic_core::decision::Decision;
use medic_core::human_action::{HumanActionOutcome, HumanActionRequest, IncidentState};
use medic_core::ladder::HumanAction;
use medic_core::permit::Permit;
use medic_core::ports::{EscalationError, EscalationStore, HumanActions, IncidentChannel, OutageBoard};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The `Escalator` port on Slack (see the module documentation).
pub struct SlackEscalator<S> {
    pub settings: SlackSettings,
    pub client: SlackClient,
    pub store: S,
    /// Whose time snoozes, button offers, states and group windows are judged by (the `Clock`
    /// port: the system clock, or a test's).
    pub clock: std::sync::Arc<dyn medic_core::ports::Clock>,
}

impl<S: EscalationStore> SlackEscalator<S> {
    /// The parent the previous release posted for the same scope and still shows as going on: it
    /// keyed outages by their start (no sighting), so the first sweep of this release finds no
    /// parent under its key. That one is this outage's parent from now on (its record marked ended
    /// without being told over): an upgrade mid-outage neither tells people the outage is over
    /// nor posts a second parent beside the first.
    async fn adopt_previous_parent(&self, view: &medic_core::fleet::OutageView) -> Result<Option<MessageRec>, EscalationError> {
        if view.since.is_none() {
            return Ok(None);
        }
        for (old_key, v) in self.store.list("outage").await.map_err(esc_err)? {
            let Ok(rec) = serde_json::from_value::<OutageRec>(v.doc.clone()) else { continue };
            if rec.ended || rec.view.since.is_some() || rec.view.scope != view.scope {
                continue;
            }
            let Some((_, posted)) = self.load::<MessageRec>("msg", &old_key).await? else { continue };
            if self.save("outage", &old_key, &OutageRec { view: rec.view, ended: true }, Some(v.version), self.settings.action_ttl).await? {
                tracing::info!(cause = %view.scope, previous = %old_key, "the previous release's outage parent is this outage's parent now");
                return Ok(Some(posted));
            }
        }
        Ok(None)
    }

    pub fn new(settings: SlackSettings, token: impl Into<String>, store: S) -> Result<Self, SlackError> {
        Self::with_token_source(settings, medic_adapters::token::TokenSource::fixed(token), store)
    }

    /// An escalator whose bot token is re-read from `token` when Slack rejects it.
    pub fn with_token_source(settings: SlackSettings, token: medic_adapters::token::TokenSource, store: S) -> Result<Self, SlackError> {
        let client = SlackClient::with_token_source(&settings, token)?;
        Ok(Self { settings, client, store, clock: std::sync::Arc::new(medic_adapters::memory::SystemClock) })
    }

    /// The same escalator judging time by `clock`.
    pub fn with_clock(self, clock: std::sync::Arc<dyn medic_core::ports::Clock>) -> Self {
        Self { clock, ..self }
    }

    pub(super) fn metadata(&self, key: &str) -> Value {
        json!({"event_type": METADATA_EVENT_TYPE, "event_payload": {"key": key, "instance": self.settings.instance}})
    }

    /// The TTL of a record whose incident is still open.
    pub(super) fn ttl(&self) -> Duration {
        UNTIL_RESOLVED
    }

    pub(super) fn ttl_of(&self, rec: &impl Resolvable) -> Duration {
        if rec.is_resolved() { self.settings.record_ttl } else { UNTIL_RESOLVED }
    }

    /// Gives records of a resolved incident `record_ttl` from now (a record gone is left gone).
    pub(super) async fn retire(&self, records: &[(&str, &str)]) -> Result<(), EscalationError> {
        self.retire_for(records, self.settings.record_ttl).await
    }

    /// Gives `records` `ttl` from now (a record gone is left gone): buttons once their incident
    /// or outage is over, which lived as long as it did.
    pub(super) async fn retire_for(&self, records: &[(&str, &str)], ttl: Duration) -> Result<(), EscalationError> {
        for (group, id) in records {
            for try_no in 0..=CAS_TRIES {
                let Some(v) = self.store.load(group, id).await.map_err(esc_err)? else { break };
                if self.store.store(group, id, &v.doc, Some(v.version), ttl).await.map_err(esc_err)? {
                    break;
                }
                if try_no == CAS_TRIES {
                    return Err(EscalationError::unavailable(format!("{group}/{id}: too many concurrent writers; retry later")));
                }
            }
        }
        Ok(())
    }

    pub(super) async fn load<T: DeserializeOwned>(&self, group: &str, id: &str) -> Result<Option<(u64, T)>, EscalationError> {
        match self.store.load(group, id).await.map_err(esc_err)? {
            Some(v) => Ok(Some((v.version, parse(&v, &format!("{group}/{id}"))?))),
            None => Ok(None),
        }
    }

    pub(super) async fn save<T: Serialize>(
        &self,
        group: &str,
        id: &str,
        value: &T,
        expected: Option<u64>,
        ttl: Duration,
    ) -> Result<bool, EscalationError> {
        self.store.store(group, id, &to_doc(value), expected, ttl).await.map_err(esc_err)
    }

    /// Reads, changes and writes back a record until the write wins. `change` returns false to
    /// leave the record as it is.
    pub(super) async fn update_rec<T: Serialize + DeserializeOwned + Resolvable>(
        &self,
        group: &str,
        id: &str,
        mut change: impl FnMut(&mut T) -> bool,
    ) -> Result<Option<T>, EscalationError> {
        for _ in 0..CAS_TRIES {
            let Some((version, mut value)) = self.load::<T>(group, id).await? else { return Ok(None) };
            if !change(&mut value) {
                return Ok(Some(value));
            }
            if self.save(group, id, &value, Some(version), self.ttl_of(&value)).await? {
                return Ok(Some(value));
            }
            tokio::time::sleep(Duration::from_millis(5 + rand::random_range(0..20))).await;
        }
        Err(EscalationError::unavailable(format!("{group}/{id}: too many concurrent writers; retry later")))
    }

    /// The `ts` of a posted message.
    pub(super) async fn ts_of(&self, key: &str) -> Result<Option<String>, EscalationError> {
        Ok(self.load::<MessageRec>("msg", key).await?.and_then(|(_, m)| m.ts))
    }

    /// Waits up to `busy_wait` for another worker's message to get its `ts`.
    pub(super) async fn wait_ts(&self, key: &str) -> Result<String, EscalationError> {
        let deadline = Instant::now() + self.settings.busy_wait;
        loop {
            if let Some(ts) = self.ts_of(key).await? {
                return Ok(ts);
            }
            if Instant::now() >= deadline {
                return Err(EscalationError::unavailable(format!("message {key} is not posted yet; retry later")));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Posts `message` once for `key` (in the thread of message `thread_key`, if any); returns
    /// its `ts`. See the module documentation for how a crash at any point posts no second copy.
    pub async fn post_once(&self, key: &str, thread_key: Option<&str>, message: &Rendered) -> Result<String, EscalationError> {
        self.post_once_in(key, None, thread_key, message).await
    }

    /// [`Self::post_once`] in `channel` (empty or `None`: the deployment's). A reply goes to its
    /// thread's channel, wherever that is.
    pub async fn post_once_in(
        &self,
        key: &str,
        channel: Option<&str>,
        thread_key: Option<&str>,
        message: &Rendered,
    ) -> Result<String, EscalationError> {
        let (channel, thread_ts) = match thread_key {
            Some(k) => {
                let ts = self.wait_ts(k).await?;
                let parent = self.load::<MessageRec>("msg", k).await?.map(|(_, r)| r.channel);
                (parent.unwrap_or_else(|| self.settings.channel.clone()), Some(ts))
            }
            None => (channel.filter(|c| !c.is_empty()).unwrap_or(&self.settings.channel).to_owned(), None),
        };
        let deadline = Instant::now() + self.settings.busy_wait;
        let lease = TimeDelta::from_std(self.settings.lease).unwrap_or(TimeDelta::seconds(60));
        let (version, rec) = loop {
            let now = self.clock.now();
            match self.load::<MessageRec>("msg", key).await? {
                Some((_, rec)) if rec.ts.is_some() => return Ok(rec.ts.expect("checked")),
                Some((_, rec)) if rec.lease_until.is_some_and(|u| u > now) => {
                    if Instant::now() >= deadline {
                        return Err(EscalationError::unavailable(format!("another worker is posting {key}; retry later")));
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Some((version, mut rec)) => {
                    // An earlier attempt stopped between its intent and recording the ts: it may
                    // have posted. Take the lease, then look before posting.
                    rec.lease_until = Some(now + lease);
                    rec.tries += 1;
                    if !self.save("msg", key, &rec, Some(version), self.ttl()).await? {
                        continue;
                    }
                    let since = rec.first_intent - TimeDelta::minutes(10);
                    let oldest = since.timestamp() as f64;
                    let found = self
                        .client
                        .messages(&rec.channel, rec.thread_ts.as_deref(), oldest, self.settings.history_pages)
                        .await
                        .map_err(esc_err)?
                        .into_iter()
                        .find(|m| {
                            m.metadata.as_ref().is_some_and(|md| {
                                md.get("event_type").and_then(Value::as_str) == Some(METADATA_EVENT_TYPE)
                                    && md.pointer("/event_payload/key").and_then(Value::as_str) == Some(key)
                            })
                        });
                    if let Some(m) = found {
                        tracing::info!(key, ts = %m.ts, "found the message an earlier attempt posted; not posting again");
                        rec.ts = Some(m.ts.clone());
                        rec.lease_until = None;
                        self.save("msg", key, &rec, Some(version + 1), self.ttl()).await?;
                        return Ok(m.ts);
                    }
                    break (version + 1, rec);
                }
                None => {
                    let rec = MessageRec {
                        channel: channel.clone(),
                        thread_ts: thread_ts.clone(),
                        ts: None,
                        lease_until: Some(now + lease),
                        first_intent: now,
                        tries: 1,
                    };
                    if self.save("msg", key, &rec, None, self.ttl()).await? {
                        break (1, rec);
                    }
                }
            }
        };
        match self.client.post_message(&rec.channel, rec.thread_ts.as_deref(), message, Some(&self.metadata(key))).await {
            Ok(ts) => {
                let posted = MessageRec { ts: Some(ts.clone()), lease_until: None, ..rec };
                if !self.save("msg", key, &posted, Some(version), self.ttl()).await? {
                    tracing::warn!(key, "the message record changed while posting (lease too short?)");
                }
                Ok(ts)
            }
            Err(e) => {
                if e.not_applied() {
                    // Certainly not posted: free the lease so a retry need not wait for it.
                    let released = MessageRec { lease_until: None, ..rec };
                    self.save("msg", key, &released, Some(version), self.ttl()).await.ok();
                }
                Err(esc_err(e))
            }
        }
    }

    /// Rewrites the message posted for `key`.
    pub(super) async fn update_message(&self, key: &str, message: &Rendered) -> Result<(), EscalationError> {
        let Some((_, rec)) = self.load::<MessageRec>("msg", key).await? else {
            return Err(EscalationError::invalid(format!("no message {key} to update")));
        };
        let Some(ts) = rec.ts else { return Err(EscalationError::unavailable(format!("message {key} is not posted yet; retry later"))) };
        self.client.update(&rec.channel, &ts, message).await.map_err(esc_err)
    }

    pub(super) fn render_incident(&self, rec: &IncidentRec) -> Rendered {
        let buttons = blocks::buttons(&rec.facts, rec.generation);
        if rec.member {
            blocks::group_member(&rec.facts, &rec.status(), &buttons, rec.revision, self.settings.render_options())
        } else {
            blocks::incident_parent(&rec.facts, &rec.status(), &buttons, rec.revision, self.settings.render_options())
        }
    }

    /// Stores what the buttons of `rec`'s current generation stand for.
    pub(super) async fn store_actions(
        &self,
        rec: &IncidentRec,
        app: &Application,
        decision: Option<&Decision>,
    ) -> Result<(), EscalationError> {
        let sync = decision.map(|d| blocks::human_sync_plan(app, d));
        self.store_buttons(&rec.facts, &blocks::buttons(&rec.facts, rec.generation), sync, self.clock.now()).await
    }

    pub(super) async fn store_buttons(
        &self,
        facts: &IncidentFacts,
        buttons: &[Button],
        sync: Option<medic_core::decision::SyncPlan>,
        at: DateTime<Utc>,
    ) -> Result<(), EscalationError> {
        for b in buttons {
            let request = HumanActionRequest {
                id: b.id.clone(),
                action: b.action,
                incident_id: facts.incident_id.clone(),
                app: facts.app_ref(),
                failure_mode: facts.failure_mode,
                sync: if b.action == HumanAction::Sync { sync.clone() } else { None },
                idempotency_key: medic_core::human_action::human_action_key(&b.id),
                offered_at: at,
                incident_began: facts.incident_began,
            };
            // Created once; a retry finds it there (same content). Kept while the incident is open,
            // however long (a button that expired while its incident was open answered 410,
            // reliability review L7); resolving gives it `action_ttl`.
            self.save("action", &b.id, &request, None, self.ttl()).await?;
        }
        Ok(())
    }

    pub(super) async fn snoozed(&self, app: &AppId) -> Result<Option<SnoozeRec>, EscalationError> {
        Ok(self.load::<SnoozeRec>("snooze", app.as_str()).await?.map(|(_, s)| s).filter(|s| s.until > self.clock.now()))
    }

    /// The record of an incident, wherever its app (the app is part of the group name).
    pub(super) async fn find_incident(&self, incident_id: &str) -> Result<Option<(AppId, IncidentRec)>, EscalationError> {
        let Some((_, pointer)) = self.load::<AppId>("incident", incident_id).await? else { return Ok(None) };
        Ok(self.load::<IncidentRec>(&app_group(&pointer), incident_id).await?.map(|(_, r)| (pointer, r)))
    }

    /// Rewrites the message that shows `rec` (parent or group reply).
    pub(super) async fn show(&self, rec: &IncidentRec) -> Result<(), EscalationError> {
        if rec.suppressed {
            return Ok(());
        }
        self.update_message(&rec.message_key, &self.render_incident(rec)).await
    }
}

impl<S: EscalationStore> IncidentChannel for SlackEscalator<S> {
    fn takes_approvals(&self) -> bool {
        true
    }

    async fn escalate(&self, _: &Permit, app: &Application, decision: &Decision) -> Result<(), EscalationError> {
        let Some(incident) = decision.incident.as_ref() else {
            return Err(EscalationError::invalid(format!("{}: an escalation without an incident", decision.app)));
        };
        let incident_id = incident.id();
        let name = app.id();
        let group = app_group(&name);
        let facts = IncidentFacts::new(app, decision, self.settings.argocd_url.as_deref());
        let existing = self.load::<IncidentRec>(&group, &incident_id).await?;
        let rec = match existing {
            Some((_, rec)) => rec,
            None => {
                let snooze = self.snoozed(&name).await?;
                let channel = decision.route.as_ref().map(|r| r.channel.clone()).unwrap_or_default();
                // Incidents grouped by failure mode live in the deployment's channel; one routed
                // to its team's channel stays there, on its own.
                let (window_group, position) = if self.settings.group_threshold > 0 && snooze.is_none() && channel.is_empty() {
                    let (group, position) = self.join_window(decision.failure_mode, &incident_id).await?;
                    (Some(group), position)
                } else {
                    (None, 0)
                };
                let rec = IncidentRec {
                    facts: facts.clone(),
                    state: IncidentState::NeedsHuman,
                    detail: String::new(),
                    state_at: decision.decided_at,
                    generation: 0,
                    revision: 0,
                    message_key: format!("inc:{incident_id}"),
                    member: false,
                    thread_key: format!("inc:{incident_id}"),
                    window_group,
                    position,
                    group: None,
                    suppressed: snooze.is_some(),
                    resolved: false,
                    reported: vec![],
                    snoozed_until: snooze.as_ref().map(|s| s.until),
                    channel,
                };
                self.save("incident", &incident_id, &name, None, self.ttl()).await?;
                if !self.save(&group, &incident_id, &rec, None, self.ttl()).await? {
                    // Another worker created it first: continue with theirs.
                    self.load::<IncidentRec>(&group, &incident_id)
                        .await?
                        .map(|(_, r)| r)
                        .ok_or_else(|| EscalationError::invalid("incident record vanished"))?
                } else {
                    rec
                }
            }
        };
        if rec.suppressed {
            tracing::info!(app = %name, incident = %incident_id, "escalation not posted: the app is snoozed (or beyond its group's reply limit)");
            return Ok(());
        }
        self.store_actions(&rec, app, Some(decision)).await?;
        let threshold = self.settings.group_threshold;
        let group = match (&rec.group, &rec.window_group) {
            // Already moved into a group (this is a retry): make sure its reply is there.
            (Some(group_id), _) => Some(group_id.clone()),
            // This incident makes (or joins) a group. The group record names the incidents that
            // came before it in the window, whose parents are taken into the group.
            (None, Some(group_id)) if threshold > 0 && rec.position >= threshold => {
                let earlier: Vec<String> = match self.load::<WindowRec>(stored::GROUP_WINDOW, decision.failure_mode.id()).await? {
                    Some((_, w)) if &w.group_id == group_id => w.members.iter().take(threshold - 1).cloned().collect(),
                    _ => vec![],
                };
                let now = self.clock.now();
                let group = GroupRec {
                    group_id: group_id.clone(),
                    failure_mode: decision.failure_mode,
                    opened_at: now,
                    last_at: now,
                    earlier,
                    members: vec![],
                    more: 0,
                    more_projects: BTreeMap::new(),
                    more_clusters: BTreeMap::new(),
                    resolved: vec![],
                    adopt: None,
                    established: false,
                    migrated: false,
                    revision: 1,
                    shown: 0,
                    updater: None,
                    updating_until: None,
                };
                // The first to get here creates it; the others use that one.
                self.save(stored::GROUP, group_id, &group, None, self.ttl()).await?;
                Some(group_id.clone())
            }
            // An early member whose group formed while it was on its way (or after it crashed).
            (None, Some(group_id)) if self.load::<GroupRec>(stored::GROUP, group_id).await?.is_some() => Some(group_id.clone()),
            _ => None,
        };
        match group {
            Some(group_id) => {
                self.ensure_group(&group_id).await?;
                self.join_group(&group_id, &rec.facts).await?;
            }
            None => {
                self.post_once_in(&rec.message_key, Some(&rec.channel), None, &self.render_incident(&rec)).await?;
            }
        }
        tracing::info!(app = %name, incident = %incident_id, failure_mode = %decision.failure_mode, "escalated to Slack");
        Ok(())
    }

    async fn alert(&self, _: &Permit, summary: &str) -> Result<(), EscalationError> {
        tracing::error!(summary, "service alert");
        let message = blocks::note(":warning:", &format!("Argo Medic ({}): {summary}", self.settings.instance));
        self.client.post_message(&self.settings.channel, None, &message, None).await.map(|_| ()).map_err(esc_err)
    }

    /// One compact reply in the incident's own thread, posted once per `reply.key`: nothing for
    /// an incident not escalated (no record, or its parent not posted yet), snoozed, resolved, or
    /// shown as a reply in a group's thread, where one app's events would bury the others'.
    async fn tell_timeline(&self, _: &Permit, reply: &medic_core::timeline::ThreadReply<'_>) -> Result<(), EscalationError> {
        let Some((_, rec)) = self.find_incident(reply.incident_id).await? else { return Ok(()) };
        if rec.suppressed || rec.resolved || rec.member || rec.group.is_some() || self.ts_of(&rec.thread_key).await?.is_none() {
            return Ok(());
        }
        self.post_once(reply.key, Some(&rec.thread_key), &blocks::timeline_reply(reply.app, reply.events)).await?;
        self.retire_for(&[("msg", reply.key)], self.settings.record_ttl).await
    }

    /// Posted once per ISO week to the deployment's channel ([`Self::post_once`] under
    /// `keys::weekly_report_key`), its record kept eight days: every run of the same week finds
    /// it posted, and nothing of it outlives the week after.
    async fn report(&self, _: &Permit, report: &medic_core::report::Report, now: DateTime<Utc>) -> Result<(), EscalationError> {
        let key = medic_core::keys::weekly_report_key(&self.settings.instance, now);
        self.post_once(&key, None, &blocks::weekly_report(report, &self.settings.instance, now)).await?;
        self.retire_for(&[("msg", key.as_str())], Duration::from_secs(8 * 86_400)).await?;
        tracing::info!(key, decisions = report.decisions, rows = report.rows.len(), "weekly shadow report posted");
        Ok(())
    }

    async fn resolve(&self, _: &Permit, app: &AppId, decision: &Decision) -> Result<(), EscalationError> {
        let group = app_group(app);
        for (incident_id, v) in self.store.list(&group).await.map_err(esc_err)? {
            let rec: IncidentRec = parse(&v, &incident_id)?;
            if rec.resolved {
                continue;
            }
            let mut done = rec.clone();
            done.resolved = true;
            done.state = IncidentState::Resolved;
            let healthy = decision.failure_mode == medic_core::FailureMode::Healthy;
            done.detail = if healthy { "Synced and Healthy again".into() } else { decision.reason.clone() };
            done.state_at = decision.decided_at;
            done.revision += 1;
            if !rec.suppressed {
                self.show(&done).await?;
                let text = if healthy {
                    format!(
                        "Resolved: {} is Synced and Healthy again (seen {}). The incident is closed.",
                        rec.facts.app(),
                        blocks::rfc3339(decision.decided_at)
                    )
                } else {
                    format!(
                        "Closed: {}: {} (seen {}). Argo Medic does nothing more for it.",
                        rec.facts.app(),
                        decision.reason,
                        blocks::rfc3339(decision.decided_at)
                    )
                };
                self.post_once(&format!("res:{incident_id}"), Some(&rec.thread_key), &blocks::note(":white_check_mark:", &text)).await?;
            }
            // The incident's records now last `record_ttl`; its `app#` record gets it when it is
            // marked resolved just below. In this order, so a crash in between retires again.
            // (A group member's message is its reply in the group thread; its own parent, posted
            // before the group formed, may exist too.)
            let mut messages =
                std::collections::BTreeSet::from([format!("inc:{incident_id}"), rec.message_key.clone(), format!("res:{incident_id}")]);
            messages.extend(rec.reported.iter().map(|id| format!("act:{id}")));
            let mut records = vec![("incident", incident_id.as_str())];
            records.extend(messages.iter().map(|key| ("msg", key.as_str())));
            self.retire(&records).await?;
            // Its buttons, of every generation, now last `action_ttl` (they lived as long as it).
            let buttons: Vec<String> = (0..=rec.generation).flat_map(|g| blocks::buttons(&rec.facts, g)).map(|b| b.id).collect();
            self.retire_for(&buttons.iter().map(|id| ("action", id.as_str())).collect::<Vec<_>>(), self.settings.action_ttl).await?;
            self.update_rec::<IncidentRec>(&group, &incident_id, |r| {
                if r.resolved {
                    return false;
                }
                r.resolved = true;
                r.state = IncidentState::Resolved;
                r.detail = done.detail.clone();
                r.state_at = done.state_at;
                r.revision = r.revision.max(done.revision);
                true
            })
            .await?;
            if let Some(group_id) = &rec.group {
                let group = self
                    .update_rec::<GroupRec>(stored::GROUP, group_id, |f| {
                        if f.resolved.contains(&incident_id) {
                            return false;
                        }
                        f.resolved.push(incident_id.clone());
                        f.revision += 1;
                        true
                    })
                    .await?;
                self.refresh_group(group_id).await?;
                if let Some(f) = group.filter(|f| f.status().state == IncidentState::Resolved) {
                    let text = format!("All {} apps of this incident group are Synced and Healthy again.", f.members.len());
                    let key = stored::resolved_key(group_id, f.members.len());
                    self.post_once(&key, Some(&stored::parent_key(group_id)), &blocks::note(":white_check_mark:", &text)).await?;
                    self.retire(&[("msg", &stored::parent_key(group_id)), ("msg", &key)]).await?;
                }
            }
            tracing::info!(app = %app, incident = %incident_id, "escalation resolved in Slack");
        }
        Ok(())
    }
}

impl<S: EscalationStore> OutageBoard for SlackEscalator<S> {
    /// Posts the cause's parent once (its buttons stored first, so a click never meets an
    /// unknown id), then rewrites it in place on every later sweep.
    async fn outage(&self, _: &Permit, view: &medic_core::fleet::OutageView) -> Result<(), EscalationError> {
        let key = view.key();
        // The view as told, for the sweep that finds the cause gone (written each sweep: a
        // concurrent writer's newer view wins, one sweep's is as good as another's).
        let version = self.store.load("outage", &key).await.map_err(esc_err)?.map(|v| v.version);
        let rec = OutageRec { view: view.clone(), ended: false };
        self.save("outage", &key, &rec, version, self.settings.action_ttl).await?;
        let message = blocks::outage_parent(view);
        // Posted: rewritten in place, one read and one chat.update a sweep. Its buttons were
        // stored before it was posted.
        if let Some((_, MessageRec { channel, ts: Some(ts), .. })) = self.load::<MessageRec>("msg", &key).await? {
            return self.client.update(&channel, &ts, &message).await.map_err(esc_err);
        }
        let adopted = self.adopt_previous_parent(view).await?;
        for control in [medic_core::ladder::FleetControl::Pause, medic_core::ladder::FleetControl::Release] {
            let button = medic_core::fleet::FleetButton {
                id: view.button(control),
                control,
                scope: view.scope.clone(),
                projects: view.projects.clone(),
                offered_at: self.clock.now(),
                since: view.since.clone().unwrap_or_default(),
                outage: key.clone(),
            };
            // Created once (a retry after a crash finds it); a click is checked against the
            // outage's latest projects too (`load_fleet_button`). Kept while the outage lasts;
            // its end gives it `action_ttl`.
            self.save("fleetbtn", &button.id, &button, None, self.ttl()).await?;
        }
        if let Some(posted) = adopted {
            // Its message is this outage's now; its buttons are this outage's (stored above).
            self.save("msg", &key, &posted, None, self.ttl()).await?;
            if let Some(ts) = &posted.ts {
                return self.client.update(&posted.channel, ts, &message).await.map_err(esc_err);
            }
        }
        self.post_once(&key, None, &message).await.map(|_| ())
    }

    /// One `Query` of the `outage` group a sweep; for each cause told and no longer seen, one
    /// `chat.update` of its parent (when it was posted) and the record marked ended.
    async fn outages_ended(&self, _: &Permit, current: &[String]) -> Result<usize, EscalationError> {
        let mut ended = 0;
        for (key, v) in self.store.list("outage").await.map_err(esc_err)? {
            let rec: OutageRec = parse(&v, &format!("outage/{key}"))?;
            if rec.ended || current.contains(&key) {
                continue;
            }
            let over = rec.view.recovered();
            if let Some((_, MessageRec { channel, ts: Some(ts), .. })) = self.load::<MessageRec>("msg", &key).await? {
                self.client.update(&channel, &ts, &blocks::outage_parent(&over)).await.map_err(esc_err)?;
            }
            let buttons = [medic_core::ladder::FleetControl::Pause, medic_core::ladder::FleetControl::Release].map(|c| rec.view.button(c));
            // Another sweep that told it first wins; either way it is over.
            if self.save("outage", &key, &OutageRec { view: over, ended: true }, Some(v.version), self.settings.action_ttl).await? {
                ended += 1;
            }
            self.retire_for(&buttons.iter().map(|id| ("fleetbtn", id.as_str())).collect::<Vec<_>>(), self.settings.action_ttl).await?;
        }
        Ok(ended)
    }
}

impl<S: EscalationStore> HumanActions for SlackEscalator<S> {
    /// The one lookup of a button, shared with slack-actions ([`crate::load_action`]).
    async fn human_action(&self, id: &str) -> Result<Option<HumanActionRequest>, EscalationError> {
        Ok(crate::load_action(&self.store, id).await?)
    }

    async fn record_human_action(
        &self,
        _: &Permit,
        request: &HumanActionRequest,
        by: &str,
        outcome: &HumanActionOutcome,
    ) -> Result<(), EscalationError> {
        let app = request.app.id();
        let group = app_group(&app);
        let Some((_, rec)) = self.load::<IncidentRec>(&group, &request.incident_id).await? else {
            tracing::warn!(app = %app, incident = %request.incident_id, "a human action for an incident with no record; nothing to report");
            return Ok(());
        };
        if rec.reported.contains(&request.id) {
            return Ok(());
        }
        let user = by.strip_prefix("slack:").unwrap_or(by);
        let who = blocks::mention(user);
        let verb = match request.action {
            HumanAction::Sync => "sync",
            HumanAction::Refresh => "refresh",
            HumanAction::HardRefresh => "hard refresh",
            HumanAction::TerminateOperation => "terminate operation",
            HumanAction::Snooze => "snooze",
            HumanAction::Acknowledge => "acknowledge",
            HumanAction::Freeze => "freeze",
        };
        let mut next = rec.clone();
        if let Some(state) = outcome.state.filter(|_| !rec.resolved) {
            next.state = state;
            next.state_at = self.clock.now();
            next.detail = format!("{verb} by {who}");
        }
        if outcome.performed {
            next.generation += 1;
        }
        if let Some(until) = outcome.snoozed_until {
            next.snoozed_until = Some(until);
            let snooze = SnoozeRec { until, by: user.to_owned() };
            let ttl = (until - self.clock.now()).to_std().unwrap_or_default() + Duration::from_secs(60);
            match self.load::<SnoozeRec>("snooze", app.as_str()).await? {
                Some((v, _)) => self.save("snooze", app.as_str(), &snooze, Some(v), ttl).await?,
                None => self.save("snooze", app.as_str(), &snooze, None, ttl).await?,
            };
        }
        next.revision += 1;
        if next.generation != rec.generation {
            self.store_buttons(&next.facts, &blocks::buttons(&next.facts, next.generation), request.sync.clone(), self.clock.now()).await?;
        }
        if !rec.suppressed {
            self.show(&next).await?;
            let reply = blocks::action_note(user, verb, &outcome.summary);
            self.post_once(&format!("act:{}", request.id), Some(&rec.thread_key), &reply).await?;
        }
        let id = request.id.clone();
        self.update_rec::<IncidentRec>(&group, &request.incident_id, |r| {
            if r.reported.contains(&id) {
                return false;
            }
            if !r.resolved {
                r.state = next.state;
                r.state_at = next.state_at;
                r.detail = next.detail.clone();
            }
            r.generation = r.generation.max(next.generation);
            r.revision = r.revision.max(next.revision);
            r.snoozed_until = next.snoozed_until.or(r.snoozed_until);
            r.reported.push(id.clone());
            true
        })
        .await?;
        tracing::info!(audit = true, app = %app, action = verb, by = user, summary = %outcome.summary, "human action reported in Slack");
        Ok(())
    }
}

// ------------------------------------------------------------------------------------------------
// Either escalator, chosen at start-up
// ------------------------------------------------------------------------------------------------

//! Incident groups: apps failing the same way within a window share one parent, each app one reply
//! in its thread.

use super::escalator::*;
use super::records::*;
use std::time::{Duration, Instant};

use crate::blocks::{self, IncidentFacts};
use chrono::TimeDelta;
use medic_core::catalogue::FailureMode;
use medic_core::ports::{EscalationError, EscalationStore};

impl<S: EscalationStore> SlackEscalator<S> {
    /// Joins the open group window of `mode` (idempotent): the group id and this incident's
    /// position in it.
    pub(super) async fn join_window(&self, mode: FailureMode, incident_id: &str) -> Result<(String, usize), EscalationError> {
        let kept = self.settings.group_threshold.max(1);
        let window = TimeDelta::from_std(self.settings.group_window).unwrap_or(TimeDelta::minutes(15));
        for _ in 0..CAS_TRIES {
            let now = self.clock.now();
            let current = self.load::<WindowRec>(stored::GROUP_WINDOW, mode.id()).await?;
            let (expected, mut rec) = match current {
                Some((v, rec)) if now < rec.last_at + window || rec.members.iter().any(|m| m == incident_id) => (Some(v), rec),
                Some((v, _)) => (
                    Some(v),
                    WindowRec {
                        group_id: medic_core::keys::group_id(&self.settings.instance, mode.id(), now),
                        last_at: now,
                        members: vec![],
                        count: 0,
                    },
                ),
                None => (
                    None,
                    WindowRec {
                        group_id: medic_core::keys::group_id(&self.settings.instance, mode.id(), now),
                        last_at: now,
                        members: vec![],
                        count: 0,
                    },
                ),
            };
            if let Some(i) = rec.members.iter().position(|m| m == incident_id) {
                return Ok((rec.group_id, i + 1));
            }
            rec.count = rec.count.max(rec.members.len()) + 1;
            rec.last_at = now;
            let position = if rec.members.len() < kept {
                rec.members.push(incident_id.to_owned());
                rec.members.len()
            } else {
                // Past the first few: a group member whatever the exact position (a retry may
                // count it twice; only "past the threshold" matters).
                rec.count.max(kept + 1)
            };
            if self.save(stored::GROUP_WINDOW, mode.id(), &rec, expected, self.settings.record_ttl).await? {
                return Ok((rec.group_id, position));
            }
            tokio::time::sleep(Duration::from_millis(5 + rand::random_range(0..20))).await;
        }
        Err(EscalationError::unavailable(format!("group window of {mode}: too many concurrent writers; retry later")))
    }

    /// Makes sure the group parent of `group_id` exists and the incidents that arrived before the
    /// group was recognised are in its thread; returns the group parent's key.
    pub(super) async fn ensure_group(&self, group_id: &str) -> Result<String, EscalationError> {
        let group_key = stored::parent_key(group_id);
        let Some((_, group)) = self.load::<GroupRec>(stored::GROUP, group_id).await? else {
            return Err(EscalationError::invalid(format!("incident group {group_id} has no record")));
        };
        if !group.established {
            // Adopt the first incident's parent as the group parent, so the channel keeps one
            // message for the whole outage; a new one only if that incident has no record yet
            // (it then joins the group itself when its worker gets there). Decided once.
            let choice = match group.adopt.clone() {
                Some(choice) => choice,
                None => {
                    let candidate = match group.earlier.first() {
                        Some(first) => match self.find_incident(first).await? {
                            Some((_, r)) if !r.suppressed && r.group.is_none() => Some(first.clone()),
                            _ => None,
                        },
                        None => None,
                    };
                    let decided = self
                        .update_rec::<GroupRec>(stored::GROUP, group_id, |f| {
                            if f.adopt.is_some() {
                                return false;
                            }
                            f.adopt = Some(candidate.clone());
                            true
                        })
                        .await?;
                    decided.and_then(|f| f.adopt).unwrap_or(None)
                }
            };
            let summary = group.summary(&self.settings.instance);
            let rendered = blocks::group_parent(&summary, &group.status());
            match choice {
                Some(first) => {
                    let Some((_, r)) = self.find_incident(&first).await? else {
                        return Err(EscalationError::invalid(format!("incident {first} vanished")));
                    };
                    // Its parent exists, is being posted, or was never posted (its worker
                    // stopped): post_once gives its ts in every case, posting at most once.
                    let ts = self.post_once(&format!("inc:{first}"), None, &self.render_incident(&r)).await?;
                    let rec = MessageRec {
                        channel: self.settings.channel.clone(),
                        thread_ts: None,
                        ts: Some(ts),
                        lease_until: None,
                        first_intent: self.clock.now(),
                        tries: 0,
                    };
                    self.save("msg", &group_key, &rec, None, self.ttl()).await?;
                    self.update_message(&group_key, &rendered).await?;
                }
                None => {
                    self.post_once(&group_key, None, &rendered).await?;
                }
            }
            self.update_rec::<GroupRec>(stored::GROUP, group_id, |f| {
                let change = !f.established;
                f.established = true;
                change
            })
            .await?;
        }
        if !group.migrated {
            let first = group.earlier.first().cloned();
            for incident_id in &group.earlier {
                let Some((_, rec)) = self.find_incident(incident_id).await? else { continue };
                if rec.group.is_some() {
                    continue;
                }
                if !rec.suppressed && first.as_deref() != Some(incident_id.as_str()) {
                    self.update_message(&rec.message_key, &blocks::folded(&rec.facts, group.failure_mode)).await?;
                }
                self.join_group(group_id, &rec.facts).await?;
            }
            self.update_rec::<GroupRec>(stored::GROUP, group_id, |f| {
                let change = !f.migrated;
                f.migrated = true;
                change
            })
            .await?;
        }
        Ok(group_key)
    }

    /// Adds the incident to group `group_id`: its reply in the group thread, and its record.
    pub(super) async fn join_group(&self, group_id: &str, facts: &IncidentFacts) -> Result<(), EscalationError> {
        let group_key = stored::parent_key(group_id);
        let member_key = format!("fm:{group_id}:{}", facts.incident_id);
        let group = app_group(&facts.app());
        let Some((_, current)) = self.load::<IncidentRec>(&group, &facts.incident_id).await? else {
            return Err(EscalationError::invalid(format!("incident {} has no record", facts.incident_id)));
        };
        let listed = |f: &GroupRec| f.members.iter().any(|m| m.incident_id == facts.incident_id);
        let room = match self.load::<GroupRec>(stored::GROUP, group_id).await? {
            Some((_, f)) => listed(&f) || f.members.len() < self.settings.max_group_replies,
            None => true,
        };
        // Beyond the reply limit an app is only counted in the parent: thousands of replies
        // would take an hour at one post per second, and nobody fixes an outage app by app.
        let quiet = current.suppressed || (current.group.is_none() && !room);
        let mut as_member = current.clone();
        as_member.member = true;
        as_member.group = Some(group_id.to_owned());
        as_member.message_key = member_key.clone();
        as_member.thread_key = group_key.clone();
        if !quiet {
            self.post_once(&member_key, Some(&group_key), &self.render_incident(&as_member)).await?;
        }
        let mut joined_now = false;
        self.update_rec::<IncidentRec>(&group, &facts.incident_id, |r| {
            let change = r.group.is_none();
            joined_now = change;
            r.member = true;
            r.group = Some(group_id.to_owned());
            r.message_key = member_key.clone();
            r.thread_key = group_key.clone();
            r.suppressed = r.suppressed || quiet;
            change
        })
        .await?;
        let member = GroupMember {
            incident_id: facts.incident_id.clone(),
            app: facts.app(),
            project: facts.project.clone(),
            destination: if facts.destination_name.is_empty() { facts.destination_server.clone() } else { facts.destination_name.clone() },
        };
        self.update_rec::<GroupRec>(stored::GROUP, group_id, |f| {
            if listed(f) {
                return false;
            }
            if quiet {
                if !joined_now {
                    return false;
                }
                f.more += 1;
                *f.more_projects.entry(member.project.clone()).or_default() += 1;
                *f.more_clusters.entry(member.destination.clone()).or_default() += 1;
            } else {
                f.members.push(member.clone());
            }
            f.last_at = self.clock.now();
            f.revision += 1;
            true
        })
        .await?;
        if quiet && joined_now {
            tracing::info!(app = %facts.app(), group = group_id, "group reply limit reached: the app is counted in the group parent only");
        }
        self.refresh_group(group_id).await
    }

    /// Brings the group parent up to date. One worker at a time does it (a lease in the group
    /// record, renewed with each update), and it re-renders until what it showed is the latest,
    /// so concurrent changes never leave an older count on screen; changes arriving meanwhile are
    /// coalesced, at most one update per `group_update_interval` for `group_update_budget`, then
    /// without waiting. It lets the parent go only when it shows the latest revision (a joiner
    /// that met its lease left its change to it): before, past the budget it let go with the last
    /// joiner's change unshown, and the parent said 299 of 300 until the next change (M1).
    pub(super) async fn refresh_group(&self, group_id: &str) -> Result<(), EscalationError> {
        let me: u64 = rand::random();
        let lease = TimeDelta::seconds(30);
        let started = Instant::now();
        let mut held = false;
        let mut last_update: Option<Instant> = None;
        for _ in 0..CAS_TRIES * 4 {
            let Some((version, mut f)) = self.load::<GroupRec>(stored::GROUP, group_id).await? else { return Ok(()) };
            let now = self.clock.now();
            if !held {
                if f.shown >= f.revision || !f.established {
                    return Ok(());
                }
                if f.updater.is_some_and(|u| u != me) && f.updating_until.is_some_and(|t| t > now) {
                    // The holder re-checks after its update and shows this change too.
                    return Ok(());
                }
                f.updater = Some(me);
                f.updating_until = Some(now + lease);
                held = self.save(stored::GROUP, group_id, &f, Some(version), self.ttl_of(&f)).await?;
                continue;
            }
            if f.shown >= f.revision {
                f.updater = None;
                f.updating_until = None;
                // A change that lands between this read and the write fails the write: read again.
                if self.save(stored::GROUP, group_id, &f, Some(version), self.ttl_of(&f)).await? {
                    return Ok(());
                }
                continue;
            }
            // Changes keep coming: at most one update per interval, the latest each time; past
            // the budget, the latest at once.
            if let Some(at) = last_update.filter(|_| started.elapsed() <= self.settings.group_update_budget) {
                let next = at + self.settings.group_update_interval;
                if next > Instant::now() {
                    tokio::time::sleep_until(next.into()).await;
                    continue;
                }
            }
            let showing = f.revision;
            let rendered = blocks::group_parent(&f.summary(&self.settings.instance), &f.status());
            last_update = Some(Instant::now());
            if let Err(e) = self.update_message(&stored::parent_key(group_id), &rendered).await {
                self.release_group(group_id, me).await;
                return Err(e);
            }
            let renewed = self.clock.now() + lease;
            self.update_rec::<GroupRec>(stored::GROUP, group_id, |f| {
                let change = f.shown < showing;
                f.shown = f.shown.max(showing);
                let mine = f.updater == Some(me);
                if mine {
                    f.updating_until = Some(renewed);
                }
                change || mine
            })
            .await?;
        }
        // Out of tries: whoever changes the group next takes it over at once, not after the lease.
        if held {
            self.release_group(group_id, me).await;
        }
        Err(EscalationError::unavailable(format!("incident group {group_id}: too many concurrent writers; retry later")))
    }

    /// Gives the group parent's lease up, when `me` holds it.
    async fn release_group(&self, group_id: &str, me: u64) {
        self.update_rec::<GroupRec>(stored::GROUP, group_id, |f| {
            let mine = f.updater == Some(me);
            if mine {
                f.updater = None;
                f.updating_until = None;
            }
            mine
        })
        .await
        .ok();
    }
}

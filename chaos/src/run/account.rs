//! The account at the end: duplicate actions, lost actions and incidents, stuck incidents,
//! incidents closed while in trouble, extra refreshes, repeated escalations, and what was done
//! after the switch went off; and the DLQ.
//!
//! Every counter is read from what the Argo CD and Slack simulators received and from the
//! simulator's own state (its log of each app's trouble). Argo Medic's table is used only to
//! name what to look for there (a claim's key and time, a close's time), never as the answer.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta};
use medic_sim::{LoggedRequest, SimMessage, TroubleMark};

use super::*;

/// The accepted clicks not answered in their thread.
pub(super) fn unanswered_clicks(slack: &SlackSim, accepted: &BTreeMap<String, DateTime<Utc>>) -> Vec<String> {
    let answered: BTreeSet<String> = slack
        .messages(SLACK_CHANNEL)
        .iter()
        .filter_map(|m| m.payload("key").and_then(|k| k.strip_prefix("act:")).map(str::to_owned))
        .collect();
    accepted.keys().filter(|id| !answered.contains(*id)).cloned().collect()
}

/// Moves every message of the DLQ back to the work queue, as a redrive does.
pub(super) async fn redrive(sqs: &aws_sdk_sqs::Client, dlq: &str, queue: &str) -> usize {
    let mut moved = 0;
    loop {
        let got = sqs.receive_message().queue_url(dlq).max_number_of_messages(10).visibility_timeout(600).send().await;
        let messages = got.ok().and_then(|o| o.messages).unwrap_or_default();
        if messages.is_empty() {
            return moved;
        }
        for m in messages {
            if sqs.send_message().queue_url(queue).message_body(m.body().unwrap_or_default()).send().await.is_ok() {
                sqs.delete_message().queue_url(dlq).set_receipt_handle(m.receipt_handle).send().await.ok();
                moved += 1;
            }
        }
    }
}

/// What ended in the DLQ: kind, app, and for requests what was asked.
pub(super) async fn dead_letters(sqs: &aws_sdk_sqs::Client, url: &str) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..20 {
        let got = sqs.receive_message().queue_url(url).max_number_of_messages(10).visibility_timeout(600).send().await;
        let messages = got.ok().and_then(|o| o.messages).unwrap_or_default();
        if messages.is_empty() {
            break;
        }
        for m in messages {
            let body: serde_json::Value = serde_json::from_str(m.body().unwrap_or("{}")).unwrap_or_default();
            out.push(format!("{} {} {}", body["kind"], body["app"]["name"], body["requestedAction"]));
        }
    }
    out
}

/// Messages visible, in flight and delayed (a requeued item waits out its delay there: the run is
/// not quiet while one is pending).
pub(super) async fn depth(sqs: &aws_sdk_sqs::Client, url: &str) -> (usize, usize, usize) {
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .ok()
        .and_then(|o| o.attributes)
        .unwrap_or_default();
    let n = |a: QueueAttributeName| attrs.get(&a).and_then(|v| v.parse().ok()).unwrap_or(0);
    (
        n(QueueAttributeName::ApproximateNumberOfMessages),
        n(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
        n(QueueAttributeName::ApproximateNumberOfMessagesDelayed),
    )
}

/// Every item of the state table, its string and number attributes as text.
pub(super) async fn table_items(ddb: &aws_sdk_dynamodb::Client, table: &str) -> anyhow::Result<Vec<Item>> {
    let mut items = Vec::new();
    let mut start_key = None;
    loop {
        let out = ddb.scan().table_name(table).set_exclusive_start_key(start_key).send().await?;
        for item in out.items() {
            let text = item
                .iter()
                .filter_map(|(k, v)| match v {
                    AttributeValue::S(s) | AttributeValue::N(s) => Some((k.clone(), s.clone())),
                    _ => None,
                })
                .collect();
            items.push(text);
        }
        start_key = out.last_evaluated_key().cloned().map(|k: HashMap<String, AttributeValue>| k);
        if start_key.is_none() {
            return Ok(items);
        }
    }
}

pub(super) type Item = HashMap<String, String>;

/// An outage the harness made: its apps (`namespace/name`) were down from `from` to `to`.
#[derive(Debug, Clone)]
pub(super) struct OutageWindow {
    pub(super) label: String,
    pub(super) apps: BTreeSet<String>,
    pub(super) from: DateTime<Utc>,
    pub(super) to: Option<DateTime<Utc>>,
}

/// The switch was set `off` at `off` and back to `act` at `on`.
#[derive(Debug, Clone, Copy)]
pub(super) struct SwitchedOff {
    pub(super) off: DateTime<Utc>,
    pub(super) on: Option<DateTime<Utc>>,
    /// How long the functions may take to see it (their switch cache).
    pub(super) takes_effect: Duration,
}

/// Everything the account reads.
pub(super) struct Evidence {
    /// The Argo CD simulator's request log.
    pub(super) requests: Vec<LoggedRequest>,
    /// Every message of the channel.
    pub(super) messages: Vec<SimMessage>,
    /// Successful `chat.update` calls, when.
    pub(super) updates: Vec<DateTime<Utc>>,
    /// The simulator's log of each app's trouble.
    pub(super) trouble: Vec<TroubleMark>,
    /// Each app's state now: `namespace/name` → in trouble.
    pub(super) in_trouble_now: BTreeMap<String, bool>,
    pub(super) table: Vec<Item>,
    /// Clicks answered `accepted`, and signed refreshes answered 202 (app → when).
    pub(super) accepted_clicks: BTreeMap<String, DateTime<Utc>>,
    pub(super) refreshes_requested: BTreeMap<String, Vec<DateTime<Utc>>>,
    pub(super) outages: Vec<OutageWindow>,
    pub(super) switched_off: Option<SwitchedOff>,
    /// How long a ladder may take before its incident must have reached a human.
    pub(super) bound: Duration,
    /// How long one step may take between reading the app and writing its record (the worker's
    /// timeout): a close is judged over that much time either side of its recorded time.
    pub(super) step: Duration,
    /// How often the sweeper runs (canaries are probed once a sweep).
    pub(super) sweep_every: Duration,
    pub(super) now: DateTime<Utc>,
}

impl Evidence {
    /// Reads the simulators and the table at the end of a run.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn gather(
        argo: &ArgoSim,
        slack: &SlackSim,
        ddb: &aws_sdk_dynamodb::Client,
        table: &str,
        names: &[(String, String)],
        tally: &Tally,
        bound: Duration,
        step: Duration,
        sweep_every: Duration,
    ) -> anyhow::Result<Self> {
        let in_trouble_now = names
            .iter()
            .map(|(name, _)| {
                let app = argo.app("argocd", name).unwrap_or_default();
                let calm = app["status"]["sync"]["status"] == "Synced" && app["status"]["health"]["status"] == "Healthy";
                (format!("argocd/{name}"), !calm)
            })
            .collect();
        let started = Instant::now();
        let anchor = Utc::now();
        let at = |i: Instant| anchor - TimeDelta::from_std(started.saturating_duration_since(i)).unwrap_or_default();
        Ok(Self {
            requests: argo.requests(),
            messages: slack.messages(SLACK_CHANNEL),
            updates: slack.calls_of("chat.update").iter().filter(|c| c.http_status == 200 && c.error.is_none()).map(|c| at(c.at)).collect(),
            trouble: argo.trouble_log(),
            in_trouble_now,
            table: table_items(ddb, table).await?,
            accepted_clicks: tally.accepted_clicks.clone(),
            refreshes_requested: tally.refreshes_requested.clone(),
            outages: tally.outages.clone(),
            switched_off: tally.switched_off,
            bound,
            step,
            sweep_every,
            now: Utc::now(),
        })
    }

    fn refreshes(&self) -> impl Iterator<Item = (&LoggedRequest, String, &'static str)> {
        self.requests.iter().filter(|r| r.method == "GET").filter_map(|r| {
            let kind = r.query.iter().find(|(k, _)| k == "refresh").map(|(_, v)| if v == "hard" { "hard_refresh" } else { "refresh" })?;
            let name = r.path.strip_prefix("/api/v1/applications/")?;
            Some((r, format!("argocd/{name}"), kind))
        })
    }

    /// True when the app was in trouble at every moment of `[from, to]`.
    fn in_trouble_throughout(&self, app: &str, from: DateTime<Utc>, to: DateTime<Utc>) -> bool {
        let marks: Vec<&TroubleMark> = self.trouble.iter().filter(|m| format!("{}/{}", m.namespace, m.name) == app).collect();
        let before = marks.iter().rev().find(|m| m.at <= from).map(|m| m.in_trouble).unwrap_or(false);
        before && !marks.iter().any(|m| m.at > from && m.at <= to && !m.in_trouble)
    }

    /// During an outage of the app, or within a sweep of its end: when canaries are probed.
    fn in_outage(&self, app: &str, at: DateTime<Utc>) -> bool {
        let grace = TimeDelta::from_std(self.sweep_every).unwrap_or_default();
        self.outages.iter().any(|o| o.apps.contains(app) && o.from <= at && o.to.is_none_or(|to| at <= to + grace))
    }

    /// Inside the window in which the switch holds everything back.
    fn while_off(&self, at: DateTime<Utc>) -> bool {
        self.switched_off.is_some_and(|s| {
            let effective = s.off + TimeDelta::from_std(s.takes_effect).unwrap_or_default();
            at > effective && s.on.is_none_or(|on| at < on)
        })
    }

    /// Around the switch: from a work item's life before `off` to `on` (what a person asked
    /// then may rightly be dropped, not performed).
    fn near_off(&self, at: DateTime<Utc>) -> bool {
        self.switched_off.is_some_and(|s| {
            let before = TimeDelta::from_std(self.step * 4 + s.takes_effect).unwrap_or_default();
            at >= s.off - before && s.on.is_none_or(|on| at <= on)
        })
    }
}

#[derive(Debug, Default)]
pub(super) struct Account {
    /// D: a second sync under one idempotency key; a second Slack parent for one incident.
    pub(super) duplicates: usize,
    /// L: lost actions (the U list) and lost incidents, clicks and requested refreshes.
    pub(super) lost: usize,
    /// U: actions the ladder claimed that never reached Argo CD or Slack (counted in `lost`).
    pub(super) unperformed: usize,
    /// S: in trouble, not escalated, open longer than the ladder's bound.
    pub(super) stuck: usize,
    /// W: closed while the simulator showed the app in trouble all around the close.
    pub(super) wrongly_closed: usize,
    /// R: refresh requests for one rung beyond its one re-request.
    pub(super) extra_refreshes: usize,
    /// Apps escalated in more than one incident (not a defect by itself: reported apart).
    pub(super) repeated_escalations: usize,
    /// Argo CD mutations and Slack posts (service alerts apart) once the switch was off.
    pub(super) acted_while_off: usize,
    /// T: completed claims whose incident timeline has not exactly one `claimed` and one `acted`
    /// event under the claim's key (a kill or a redelivery lost one, or wrote one twice).
    pub(super) timeline_gaps: usize,
    pub(super) mutations_after_on: usize,
    pub(super) syncs: usize,
    pub(super) parents: usize,
    pub(super) details: Vec<String>,
}

/// A request that changes Argo CD: anything but a read, and a read with `refresh`.
fn mutates(r: &LoggedRequest) -> bool {
    r.method != "GET" || r.query.iter().any(|(k, _)| k == "refresh")
}

/// A service alert about Argo Medic itself: posted in every mode (`core/src/gate.rs`).
fn service_alert(m: &SimMessage) -> bool {
    m.metadata.is_none() && m.text.contains("Argo Medic (")
}

pub(super) fn account(e: &Evidence, names: &[(String, String)]) -> Account {
    let mut a = Account::default();
    let sync_key = |r: &LoggedRequest| {
        r.body
            .as_ref()
            .and_then(|b| b["infos"].as_array().cloned())
            .into_iter()
            .flatten()
            .find(|i| i["name"] == IDEMPOTENCY_INFO_NAME)
            .and_then(|i| i["value"].as_str().map(str::to_owned))
    };

    // D: duplicate syncs and parents.
    let mut by_key: BTreeMap<String, usize> = BTreeMap::new();
    for r in e.requests.iter().filter(|r| r.method == "POST" && r.path.ends_with("/sync")) {
        *by_key.entry(sync_key(r).unwrap_or_else(|| "(no key)".into())).or_default() += 1;
    }
    a.syncs = by_key.values().sum();
    for (key, n) in by_key.iter().filter(|(_, n)| **n > 1) {
        a.details.push(format!("duplicate: {n} syncs under key {key}"));
        a.duplicates += n - 1;
    }
    let parents: Vec<&SimMessage> = e.messages.iter().filter(|m| m.is_parent()).collect();
    a.parents = parents.len();
    let mut by_incident: BTreeMap<&str, usize> = BTreeMap::new();
    for p in &parents {
        *by_incident.entry(p.payload("key").unwrap_or("(no key)")).or_default() += 1;
    }
    for (key, n) in by_incident.iter().filter(|(_, n)| **n > 1) {
        a.details.push(format!("duplicate: {n} Slack parents for {key}"));
        a.duplicates += n - 1;
    }

    // What the table names: the claims, the incidents and their apps, the closes.
    let rec = |i: &Item, k: &str| i.get(k).cloned().unwrap_or_default();
    let time = |i: &Item, k: &str| i.get(k).and_then(|t| t.parse::<DateTime<Utc>>().ok());
    let app_of = |i: &Item| rec(i, "pk").strip_prefix("APP#chaos#").map(str::to_owned);
    let claims: Vec<&Item> = e.table.iter().filter(|i| app_of(i).is_some() && rec(i, "sk").starts_with("ACTION#")).collect();
    let mut incident_apps: BTreeSet<String> = BTreeSet::new();
    let mut escalated: BTreeSet<String> = BTreeSet::new();
    let mut open_since: BTreeMap<String, DateTime<Utc>> = BTreeMap::new();
    let mut closes: Vec<(String, DateTime<Utc>)> = Vec::new();
    for item in &e.table {
        let Some(app) = app_of(item) else { continue };
        incident_apps.insert(app.clone());
        let sk = rec(item, "sk");
        if sk.starts_with("ACTION#") && rec(item, "rung") == "escalate" && rec(item, "status") == "COMPLETED" {
            escalated.insert(app.clone());
        }
        if sk == "INCIDENT"
            && let Some(at) = time(item, "opened_at")
        {
            open_since.insert(app.clone(), at);
        }
        if sk.starts_with("CLOSED#")
            && let Some(at) = time(item, "closed_at")
        {
            closes.push((app, at));
        }
    }

    // U: every claim of the ladder must show at Argo CD (a sync under its key; a refresh of its
    // kind after it) or in Slack (its incident's message), whatever its recorded outcome.
    let posted_keys: BTreeSet<&str> = e.messages.iter().filter_map(|m| m.payload("key")).collect();
    // An escalation shows as its own parent (`inc:<incident>`) or as its reply in a fleet thread
    // (`fm:<fleet>:<incident>`, functions/slack/src/group.rs).
    let escalated_incidents: BTreeSet<&str> = posted_keys
        .iter()
        .filter_map(|k| k.strip_prefix("inc:").or_else(|| k.strip_prefix("fm:").and_then(|rest| rest.split_once(':').map(|(_, id)| id))))
        .collect();
    let sync_keys: BTreeSet<String> =
        e.requests.iter().filter(|r| r.method == "POST" && r.path.ends_with("/sync")).filter_map(sync_key).collect();
    for claim in &claims {
        let app = app_of(claim).unwrap_or_default();
        let (rung, key, at) = (rec(claim, "rung"), rec(claim, "idempotency_key"), time(claim, "at").unwrap_or(e.now));
        let performed = match rung.as_str() {
            "sync" => sync_keys.contains(&key),
            // A resumed claim is written again with the resuming run's time, and is verified by
            // `reconciledAt` having moved since it was first made, whoever's refresh moved it (a
            // person's signed refresh counts): so any refresh since the app's previous rung.
            "refresh" | "hard_refresh" => {
                let previous = claims
                    .iter()
                    .filter(|c| app_of(c).as_deref() == Some(app.as_str()))
                    .filter_map(|c| time(c, "at"))
                    .filter(|t| *t < at)
                    .max();
                e.refreshes().any(|(r, a, kind)| a == app && (kind == rung || kind == "hard_refresh") && previous.is_none_or(|p| r.at >= p))
            }
            "escalate" => escalated_incidents.contains(rec(claim, "incident_id").as_str()),
            _ => true,
        };
        if !performed {
            a.details.push(format!(
                "lost action (U): {app}: the {rung} claimed at {at} under {key} ({}, {}) never reached {}",
                rec(claim, "status"),
                rec(claim, "outcome"),
                if rung == "escalate" { "Slack" } else { "Argo CD" }
            ));
            a.unperformed += 1;
        }
    }
    a.lost += a.unperformed;

    // T: every completed claim is in its incident's timeline once: one `claimed` and one `acted`
    // event under its key, whatever kills and redeliveries came between (issue 30).
    let mut events: BTreeMap<(String, String), usize> = BTreeMap::new();
    for item in e.table.iter().filter(|i| rec(i, "sk").starts_with("EVENT#")) {
        let Some(event) = item.get("event").and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok()) else { continue };
        if let (Some(key), Some(kind)) = (event["key"].as_str(), event["kind"].as_str()) {
            *events.entry((key.to_owned(), kind.to_owned())).or_default() += 1;
        }
    }
    for claim in claims.iter().filter(|c| rec(c, "status") == "COMPLETED") {
        let key = rec(claim, "idempotency_key");
        for kind in ["claimed", "acted"] {
            let n = events.get(&(key.clone(), kind.to_owned())).copied().unwrap_or(0);
            if n != 1 {
                a.details.push(format!(
                    "timeline (T): {}: the {} under {key} has {n} `{kind}` events",
                    app_of(claim).unwrap_or_default(),
                    rec(claim, "rung")
                ));
                a.timeline_gaps += 1;
            }
        }
    }

    // R: per refresh rung, the requests of its kind from its claim to the app's next claim (or
    // close): one, and one re-request when `reconciledAt` did not move. Canary probes during an
    // outage of the app and the signed refreshes a person asked for are not the rung's.
    let mut by_app: BTreeMap<String, Vec<(DateTime<Utc>, String)>> = BTreeMap::new();
    for claim in &claims {
        by_app.entry(app_of(claim).unwrap_or_default()).or_default().push((time(claim, "at").unwrap_or(e.now), rec(claim, "rung")));
    }
    for (app, list) in by_app.iter_mut() {
        list.sort();
        for (i, (at, rung)) in list.iter().enumerate().filter(|(_, (_, r))| r == "refresh" || r == "hard_refresh") {
            let next_claim = list.get(i + 1).map(|(t, _)| *t);
            let next_close = closes.iter().filter(|(c, t)| c == app && t > at).map(|(_, t)| *t).min();
            let end = [next_claim, next_close].into_iter().flatten().min().unwrap_or(e.now);
            let asked = e.refreshes_requested.get(app).cloned().unwrap_or_default();
            let n = e
                .refreshes()
                .filter(|(r, a, kind)| a == app && kind == rung && r.at >= *at && r.at < end)
                .filter(|(r, a, _)| !e.in_outage(a, r.at))
                .filter(|(r, _, _)| !asked.iter().any(|t| (r.at - *t).abs() <= TimeDelta::from_std(e.step * 2).unwrap_or_default()))
                .count();
            if n > 2 {
                a.details.push(format!("extra refreshes (R): {app}: {n} {rung} requests for the rung claimed at {at}"));
                a.extra_refreshes += n - 2;
            }
        }
    }

    // W: a close the simulator contradicts all around its time.
    let around = TimeDelta::from_std(e.step).unwrap_or_default();
    for (app, at) in &closes {
        if e.in_trouble_throughout(app, *at - around, *at + around) {
            a.details.push(format!("closed in trouble (W): {app}: closed at {at}, in trouble from {} to {}", *at - around, *at + around));
            a.wrongly_closed += 1;
        }
    }

    // Lost and stuck incidents.
    for (name, _) in names {
        let app = format!("argocd/{name}");
        if !e.in_trouble_now.get(&app).copied().unwrap_or(false) {
            continue;
        }
        if !incident_apps.contains(&app) {
            a.details.push(format!("lost: {app} is in trouble and no incident covers it"));
            a.lost += 1;
        } else if !escalated.contains(&app) && open_since.get(&app).is_some_and(|t| (e.now - *t).to_std().unwrap_or_default() > e.bound) {
            a.details.push(format!("stuck: {app} has been open since {} without reaching a human", open_since[&app]));
            a.stuck += 1;
        }
    }
    // Every accepted click is answered in its thread, but for those the switch held back
    // ("off": nothing is posted, not even a reply).
    let answered: BTreeSet<&str> = posted_keys.iter().filter_map(|k| k.strip_prefix("act:")).collect();
    for (id, _) in e.accepted_clicks.iter().filter(|(id, at)| !answered.contains(id.as_str()) && !e.near_off(**at)) {
        a.details.push(format!("lost: the click on {id} was accepted and never answered"));
        a.lost += 1;
    }
    // Every accepted signed refresh reached Argo CD after it was asked (the switch's window
    // apart: a refresh asked while Argo Medic is off is rightly not made).
    for (app, times) in &e.refreshes_requested {
        for t in times.iter().filter(|t| !e.near_off(**t)) {
            if !e.refreshes().any(|(r, a, _)| a == *app && r.at >= *t) {
                a.details.push(format!("lost: the refresh of {app} requested at {t} never reached Argo CD"));
                a.lost += 1;
            }
        }
    }

    // Repeated escalations: apps with parents or replies of more than one incident.
    let incident_app: BTreeMap<String, String> = claims.iter().map(|c| (rec(c, "incident_id"), app_of(c).unwrap_or_default())).collect();
    let mut escalations: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for id in &escalated_incidents {
        if let Some(app) = incident_app.get(*id) {
            escalations.entry(app.as_str()).or_default().insert(id);
        }
    }
    for (app, incidents) in escalations.iter().filter(|(_, i)| i.len() > 1) {
        a.details.push(format!("escalated again: {app} in {} incidents", incidents.len()));
        a.repeated_escalations += 1;
    }

    // The switch: nothing changed and nothing posted once it took effect; work again after `act`.
    if let Some(s) = e.switched_off {
        for r in e.requests.iter().filter(|r| mutates(r) && e.while_off(r.at)) {
            a.details.push(format!("acted while off: {} {} at {}", r.method, r.path, r.at));
            a.acted_while_off += 1;
        }
        for m in e.messages.iter().filter(|m| !service_alert(m) && e.while_off(m.posted_at)) {
            a.details.push(format!("posted while off: {:?} at {}", m.payload("key"), m.posted_at));
            a.acted_while_off += 1;
        }
        for at in e.updates.iter().filter(|t| e.while_off(**t)) {
            a.details.push(format!("updated a message while off, at {at}"));
            a.acted_while_off += 1;
        }
        a.mutations_after_on = s.on.map_or(0, |on| e.requests.iter().filter(|r| mutates(r) && r.at >= on).count());
    }
    a
}

#[cfg(test)]
mod tests {
    //! The harness tested: a tiny run whose Argo CD and Slack traffic is real (the simulators,
    //! over HTTP) and whose table says what Argo Medic recorded; clean, it counts nothing, and
    //! each defect injected into it moves its own counter to 1.

    use super::*;

    const APP: &str = "checkout-0";
    const BASE: &str = "argocd/checkout-0";

    struct Tiny {
        argo: ArgoSim,
        slack: SlackSim,
        http: reqwest::Client,
        table: Vec<Item>,
        /// Between the refresh and the sync: the app in trouble all around.
        before_sync: DateTime<Utc>,
    }

    fn item(pairs: &[(&str, String)]) -> Item {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
    }

    impl Tiny {
        /// An app in trouble, refreshed once, synced under its key, healed, escalated and closed:
        /// what a clean ladder leaves in both simulators and in the table.
        async fn clean() -> Self {
            let argo = ArgoSim::start(SimConfig::default()).await.unwrap();
            let slack = SlackSim::start(SlackSimConfig::default()).await.unwrap();
            argo.insert_app(serde_json::json!({
                "metadata": {"name": APP, "namespace": "argocd"},
                "spec": {"project": "default", "source": {"repoURL": "https://git.example.com/a.git"}, "destination": {"server": "https://kubernetes.default.svc"}},
                "status": {"sync": {"status": "OutOfSync"}, "health": {"status": "Degraded"}},
            }));
            argo.set_outcomes(
                APP,
                Outcomes {
                    refresh: RefreshOutcome::Noop,
                    hard_refresh: RefreshOutcome::Noop,
                    sync: SyncOutcome::Succeed,
                    lost_syncs: 0,
                    comparison_error: None,
                },
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
            let t = Tiny { argo, slack, http: reqwest::Client::new(), table: Vec::new(), before_sync: Utc::now() };
            let pk = format!("APP#chaos#{BASE}");
            let claim = |rung: &str, key: &str| {
                item(&[
                    ("pk", pk.clone()),
                    ("sk", format!("ACTION#i1#{key}")),
                    ("rung", rung.into()),
                    ("idempotency_key", key.into()),
                    ("incident_id", "i1".into()),
                    ("at", Utc::now().to_rfc3339()),
                    ("status", "COMPLETED".into()),
                    ("outcome", "succeeded".into()),
                ])
            };
            let event = |kind: &str, key: &str| {
                let event = serde_json::json!({"id": format!("{kind}-{key}"), "kind": kind, "key": key, "what": kind});
                item(&[("pk", pk.clone()), ("sk", format!("EVENT#i1#{kind}-{key}")), ("event", event.to_string())])
            };
            let mut t = t;
            t.table.push(claim("refresh", "k-refresh"));
            t.refresh("normal").await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            t.before_sync = Utc::now();
            tokio::time::sleep(Duration::from_millis(50)).await;
            t.table.push(claim("sync", "k-sync"));
            t.sync("k-sync").await;
            // The sync's operation ends after the simulator's operation time.
            for _ in 0..50 {
                if t.argo.app("argocd", APP).unwrap()["status"]["sync"]["status"] == "Synced" {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            t.table.push(claim("escalate", "k-esc"));
            t.post("inc:i1").await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            t.table.push(item(&[("pk", pk.clone()), ("sk", "CLOSED#i1".into()), ("closed_at", Utc::now().to_rfc3339())]));
            // Each claim's timeline: claimed and acted (after the claims: tests index them).
            for key in ["k-refresh", "k-sync", "k-esc"] {
                t.table.extend([event("claimed", key), event("acted", key)]);
            }
            t
        }

        async fn refresh(&self, kind: &str) {
            let url = format!("{}?refresh={kind}", self.argo.api_url(&format!("/api/v1/applications/{APP}")));
            self.http.get(url).bearer_auth(&SimConfig::default().tokens[0].token).send().await.unwrap();
        }

        async fn sync(&self, key: &str) {
            let body = serde_json::json!({"name": APP, "infos": [{"name": IDEMPOTENCY_INFO_NAME, "value": key}]});
            let url = self.argo.api_url(&format!("/api/v1/applications/{APP}/sync"));
            self.http.post(url).bearer_auth(&SimConfig::default().tokens[0].token).json(&body).send().await.unwrap();
        }

        async fn post(&self, key: &str) {
            let body = serde_json::json!({
                "channel": SLACK_CHANNEL, "text": "escalated",
                "metadata": {"event_type": "argo_medic", "event_payload": {"key": key}},
            });
            let answer = self
                .http
                .post(format!("{}chat.postMessage", self.slack.api_url()))
                .bearer_auth(SLACK_BOT_TOKEN)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert!(answer.status().is_success());
        }

        fn evidence(&self, switched_off: Option<SwitchedOff>) -> Evidence {
            let app = self.argo.app("argocd", APP).unwrap();
            let calm = app["status"]["sync"]["status"] == "Synced" && app["status"]["health"]["status"] == "Healthy";
            Evidence {
                requests: self.argo.requests(),
                messages: self.slack.messages(SLACK_CHANNEL),
                updates: Vec::new(),
                trouble: self.argo.trouble_log(),
                in_trouble_now: [(BASE.to_owned(), !calm)].into(),
                table: self.table.clone(),
                accepted_clicks: BTreeMap::new(),
                refreshes_requested: BTreeMap::new(),
                outages: Vec::new(),
                switched_off,
                bound: Duration::from_secs(3600),
                step: Duration::from_millis(10),
                sweep_every: Duration::from_millis(10),
                now: Utc::now(),
            }
        }

        fn account(&self, switched_off: Option<SwitchedOff>) -> Account {
            account(&self.evidence(switched_off), &[(APP.to_owned(), "default".to_owned())])
        }
    }

    fn counters(a: &Account) -> [usize; 7] {
        [a.duplicates, a.lost, a.unperformed, a.wrongly_closed, a.extra_refreshes, a.acted_while_off, a.timeline_gaps]
    }

    #[tokio::test]
    async fn a_clean_tiny_run_counts_nothing() {
        let t = Tiny::clean().await;
        let a = t.account(None);
        assert_eq!(counters(&a), [0; 7], "{:?}", a.details);
        assert_eq!(a.syncs, 1);
    }

    #[tokio::test]
    async fn a_completed_claim_missing_its_acted_event_or_claimed_twice_is_counted_t() {
        let mut t = Tiny::clean().await;
        t.table.retain(|i| i.get("sk").map(String::as_str) != Some("EVENT#i1#acted-k-sync"));
        let mut again = t.table.iter().find(|i| i.get("sk").map(String::as_str) == Some("EVENT#i1#claimed-k-esc")).unwrap().clone();
        again.insert("sk".into(), "EVENT#i1#claimed-k-esc-other-id".into());
        t.table.push(again);
        let a = t.account(None);
        assert_eq!(a.timeline_gaps, 2, "{:?}", a.details);
    }

    #[tokio::test]
    async fn a_claim_never_sent_is_a_lost_action() {
        let mut t = Tiny::clean().await;
        let mut claim = t.table[1].clone();
        claim.insert("sk".into(), "ACTION#i1#k-sync-2".into());
        claim.insert("idempotency_key".into(), "k-sync-2".into());
        t.table.push(claim);
        let a = t.account(None);
        assert_eq!((a.unperformed, a.lost), (1, 1), "{:?}", a.details);
    }

    #[tokio::test]
    async fn an_early_close_is_counted_w() {
        let mut t = Tiny::clean().await;
        // Closed before the sync healed it: in trouble all around that moment.
        t.table.push(item(&[("pk", format!("APP#chaos#{BASE}")), ("sk", "CLOSED#i0".into()), ("closed_at", t.before_sync.to_rfc3339())]));
        let a = t.account(None);
        assert_eq!(a.wrongly_closed, 1, "{:?}", a.details);
    }

    #[tokio::test]
    async fn a_doubled_refresh_beyond_the_re_request_is_counted_r() {
        let mut t = Tiny::clean().await;
        // A later refresh rung, requested three times: once, once again, and once too many.
        let mut claim = t.table[0].clone();
        claim.insert("sk".into(), "ACTION#i1#k-refresh-2".into());
        claim.insert("idempotency_key".into(), "k-refresh-2".into());
        claim.insert("at".into(), Utc::now().to_rfc3339());
        t.table.push(claim);
        for _ in 0..3 {
            t.refresh("normal").await;
        }
        let a = t.account(None);
        assert_eq!(a.extra_refreshes, 1, "{:?}", a.details);
    }

    #[tokio::test]
    async fn a_post_after_off_is_counted() {
        let t = Tiny::clean().await;
        let off = SwitchedOff { off: Utc::now(), on: None, takes_effect: Duration::from_millis(10) };
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert_eq!(t.account(Some(off)).acted_while_off, 0);
        t.post("inc:i9").await;
        let a = t.account(Some(off));
        assert_eq!(a.acted_while_off, 1, "{:?}", a.details);
    }
}

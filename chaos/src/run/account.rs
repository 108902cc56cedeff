//! The account at the end: duplicate actions, lost incidents, stuck incidents; and the DLQ.

use super::*;

/// The accepted clicks not answered in their thread.
pub(super) fn unanswered_clicks(slack: &SlackSim, accepted: &BTreeSet<String>) -> Vec<String> {
    let answered: BTreeSet<String> = slack
        .messages(SLACK_CHANNEL)
        .iter()
        .filter_map(|m| m.payload("key").and_then(|k| k.strip_prefix("act:")).map(str::to_owned))
        .collect();
    accepted.iter().filter(|id| !answered.contains(*id)).cloned().collect()
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

pub(super) async fn depth(sqs: &aws_sdk_sqs::Client, url: &str) -> (usize, usize) {
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
    (n(QueueAttributeName::ApproximateNumberOfMessages), n(QueueAttributeName::ApproximateNumberOfMessagesNotVisible))
}

pub(super) struct Account {
    pub(super) duplicates: usize,
    pub(super) lost: usize,
    pub(super) stuck: usize,
    pub(super) syncs: usize,
    pub(super) parents: usize,
    pub(super) details: Vec<String>,
}

/// Duplicate actions (a second sync under one idempotency key; a second Slack parent for one
/// incident), lost incidents (an app in trouble no incident ever covered; a click neither acted on
/// nor answered; a requested refresh never made) and stuck ones (in trouble, not escalated, and
/// open longer than the ladder's bound).
pub(super) async fn account(
    argo: &ArgoSim,
    slack: &SlackSim,
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    names: &[(String, String)],
    tally: &Tally,
    bound: Duration,
) -> anyhow::Result<Account> {
    let mut details = Vec::new();
    let requests = argo.requests();
    let mut by_key: BTreeMap<String, usize> = BTreeMap::new();
    for r in requests.iter().filter(|r| r.method == "POST" && r.path.ends_with("/sync")) {
        let key = r
            .body
            .as_ref()
            .and_then(|b| b["infos"].as_array().cloned())
            .into_iter()
            .flatten()
            .find(|i| i["name"] == IDEMPOTENCY_INFO_NAME)
            .and_then(|i| i["value"].as_str().map(str::to_owned))
            .unwrap_or_else(|| "(no key)".into());
        *by_key.entry(key).or_default() += 1;
    }
    let syncs: usize = by_key.values().sum();
    let mut duplicates = 0;
    for (key, n) in by_key.iter().filter(|(_, n)| **n > 1) {
        details.push(format!("duplicate: {n} syncs under key {key}"));
        duplicates += n - 1;
    }
    let parents = slack.parents(SLACK_CHANNEL);
    let mut by_incident: BTreeMap<String, usize> = BTreeMap::new();
    for p in &parents {
        *by_incident.entry(p.payload("key").unwrap_or("(no key)").to_owned()).or_default() += 1;
    }
    for (key, n) in by_incident.iter().filter(|(_, n)| **n > 1) {
        details.push(format!("duplicate: {n} Slack parents for {key}"));
        duplicates += n - 1;
    }

    // The table: which apps had an incident, and which were escalated (a completed escalate).
    let mut incident_apps: BTreeSet<String> = BTreeSet::new();
    let mut escalated: BTreeSet<String> = BTreeSet::new();
    let mut open_since: BTreeMap<String, chrono::DateTime<Utc>> = BTreeMap::new();
    let mut start_key = None;
    loop {
        let out = ddb.scan().table_name(table).set_exclusive_start_key(start_key).send().await?;
        for item in out.items() {
            let s = |a: &str| item.get(a).and_then(|v| v.as_s().ok()).cloned().unwrap_or_default();
            let pk = s("pk");
            let Some(app) = pk.strip_prefix("APP#chaos#") else { continue };
            incident_apps.insert(app.to_owned());
            let sk = s("sk");
            if sk.starts_with("ACTION#") && s("rung") == "escalate" && s("status") == "COMPLETED" {
                escalated.insert(app.to_owned());
            }
            if sk == "INCIDENT" {
                if let Ok(at) = s("opened_at").parse() {
                    open_since.insert(app.to_owned(), at);
                }
            }
        }
        start_key = out.last_evaluated_key().cloned().map(|k: HashMap<String, AttributeValue>| k);
        if start_key.is_none() {
            break;
        }
    }
    let now = Utc::now();
    let (mut lost, mut stuck) = (0, 0);
    for (name, _) in names {
        let app = format!("argocd/{name}");
        let state = argo.app("argocd", name).unwrap_or_default();
        let calm = state["status"]["sync"]["status"] == "Synced" && state["status"]["health"]["status"] == "Healthy";
        if calm {
            continue;
        }
        if !incident_apps.contains(&app) {
            details.push(format!("lost: {app} is in trouble and no incident covers it"));
            lost += 1;
        } else if !escalated.contains(&app) && open_since.get(&app).is_some_and(|t| (now - *t).to_std().unwrap_or_default() > bound) {
            details.push(format!("stuck: {app} has been open since {} without reaching a human", open_since[&app]));
            stuck += 1;
        }
    }
    // Every accepted click is answered in its thread.
    for id in unanswered_clicks(slack, &tally.accepted_clicks) {
        details.push(format!("lost: the click on {id} was accepted and never answered"));
        lost += 1;
    }
    // Every accepted signed refresh reached Argo CD.
    let refreshed: BTreeSet<String> = requests
        .iter()
        .filter(|r| r.method == "GET" && r.query.iter().any(|(k, _)| k == "refresh"))
        .filter_map(|r| r.path.strip_prefix("/api/v1/applications/").map(|n| format!("argocd/{n}")))
        .collect();
    for app in tally.refreshes_requested.iter().filter(|a| !refreshed.contains(*a)) {
        details.push(format!("lost: the requested refresh of {app} never reached Argo CD"));
        lost += 1;
    }
    Ok(Account { duplicates, lost, stuck, syncs, parents: parents.len(), details })
}

//! The events fed to the stack: notifications through ingest, signed refreshes, Slack clicks,
//! and fresh trouble.

use super::*;

pub(super) enum Event {
    Webhook(String),
    Refresh { name: String, project: String },
    Click,
}

/// How many times a caller sends a request whose answer it never got (the process handling it
/// was killed: a Function URL's 502) or that was answered 5xx: argocd-notifications' webhook
/// retries, the refresh endpoint's callers retry, a person clicks again.
const TRIES: usize = 3;

/// Calls `pool` (a new `call()` each try: a person clicking again signs anew) until it answers something other than a 5xx, at most [`TRIES`] times; the last
/// answer, or None when every try was killed.
async fn call_until_answered(pool: &FunctionPool, call: impl Fn() -> Call) -> anyhow::Result<Option<crate::function::Answer>> {
    let mut last = None;
    for _ in 0..TRIES {
        match pool.call(&call()).await? {
            Called::Answered(a) if a.status < 500 => return Ok(Some(a)),
            Called::Answered(a) => last = Some(a),
            Called::Killed => {}
        }
    }
    Ok(last)
}

/// Delivers a notification or a signed refresh request to ingest, as its callers would.
pub(super) async fn send(ingest: &FunctionPool, event: Event, tally: &Shared) -> anyhow::Result<()> {
    match event {
        Event::Webhook(body) => {
            let call = http_call(
                "POST",
                "https://ingest.lambda-url.us-east-1.on.aws/v1/events",
                &[("content-type", "application/json".into()), ("authorization", format!("Bearer {WEBHOOK_SECRET}"))],
                body,
            );
            let answer = call_until_answered(ingest, || call.clone()).await?;
            {
                let mut t = tally.lock().unwrap();
                t.events += 1;
                *t.delivered.entry("notification").or_default() += 1;
            }
            if answer.as_ref().is_none_or(|a| a.status != 202) {
                eprintln!("chaos: a webhook was not accepted after {TRIES} tries ({:?})", answer.map(|a| a.status));
            }
        }
        Event::Refresh { name, project } => {
            let body = serde_json::json!({
                "apps": [{"name": name, "namespace": "argocd", "project": project}],
                "requestedAt": Utc::now().to_rfc3339(),
                "requestedBy": "chaos",
            })
            .to_string();
            let signature = medic_ingest::WebhookSecrets::new(REFRESH_SECRET, None).sign(body.as_bytes());
            let asked_at = Utc::now();
            let call = http_call(
                "POST",
                "https://ingest.lambda-url.us-east-1.on.aws/v1/refresh",
                &[("content-type", "application/json".into()), (medic_ingest::SIGNATURE_HEADER, signature)],
                body,
            );
            let answer = call_until_answered(ingest, || call.clone()).await?;
            {
                let mut t = tally.lock().unwrap();
                t.events += 1;
                *t.delivered.entry("refresh").or_default() += 1;
            }
            if answer.is_some_and(|a| a.status == 202) {
                tally.lock().unwrap().refreshes_requested.entry(format!("argocd/{name}")).or_default().push(asked_at);
            }
        }
        Event::Click => {}
    }
    Ok(())
}

/// Clicks one button not clicked yet (any button when `again`: a person clicking once more), twice
/// (a double click), as a person in Slack would; false when there is none.
pub(super) async fn click_one(
    slack: &SlackSim,
    actions: &FunctionPool,
    clicked: &mut BTreeSet<String>,
    tally: &Shared,
    rng: &mut StdRng,
    again: bool,
) -> anyhow::Result<bool> {
    let mut buttons: Vec<String> = Vec::new();
    for m in slack.messages(SLACK_CHANNEL) {
        for block in m.blocks.as_array().into_iter().flatten().filter(|b| b["type"] == "actions") {
            for e in block["elements"].as_array().into_iter().flatten() {
                let label = e["text"]["text"].as_str().unwrap_or_default();
                let id = e["value"].as_str().unwrap_or_default();
                if ["Acknowledge", "Hard refresh", "Sync"].iter().any(|l| label.starts_with(l)) && (again || !clicked.contains(id)) {
                    buttons.push(id.to_owned());
                }
            }
        }
    }
    let Some(id) = buttons.choose(rng).cloned() else { return Ok(false) };
    clicked.insert(id.clone());
    for _ in 0..2 {
        let answer = call_until_answered(actions, || signed_click(&id)).await?;
        {
            let mut t = tally.lock().unwrap();
            t.events += 1;
            *t.delivered.entry("click").or_default() += 1;
        }
        let Some(answer) = answer else { continue };
        let body: serde_json::Value = serde_json::from_str(&answer.body).unwrap_or_default();
        if answer.status == 200 && body["accepted"] == true {
            tally.lock().unwrap().accepted_clicks.entry(id.clone()).or_insert_with(Utc::now);
        }
    }
    Ok(true)
}

/// A new app in the trouble of `tpl`, loaded into the simulator with its timestamps moved to the
/// present: its name and project.
pub(super) async fn fresh_app(argo: &ArgoSim, tpl: &Template, n: usize) -> anyhow::Result<(String, String)> {
    let dir = std::env::temp_dir().join(unique("medic-chaos-fresh"));
    std::fs::create_dir_all(&dir)?;
    let mut app: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(events_dir().join("apps").join(tpl.file))?)?;
    let name = format!("{}-fresh-{n}", app["metadata"]["name"].as_str().unwrap_or("app"));
    app["metadata"]["name"] = name.clone().into();
    std::fs::write(dir.join(format!("{name}.json")), serde_json::to_vec(&app)?)?;
    argo.load_dir(&dir, Some(Rebase::samples_to(Utc::now())))?;
    argo.set_outcomes(&name, tpl.outcomes.clone());
    std::fs::remove_dir_all(&dir).ok();
    Ok((name, app["spec"]["project"].as_str().unwrap_or_default().to_owned()))
}

/// A Slack `block_actions` request for button `id`, signed as Slack signs it.
pub(super) fn signed_click(id: &str) -> Call {
    let payload = serde_json::json!({
        "type": "block_actions",
        "user": {"id": CLICKER, "username": "chaos"},
        "team": {"id": "T0CHAOS"},
        "actions": [{"action_id": id, "value": id, "type": "button"}],
    });
    let body: String = form_urlencoded::Serializer::new(String::new()).append_pair("payload", &payload.to_string()).finish();
    let ts = Utc::now().timestamp().to_string();
    let signature = medic_slack_actions::SigningSecret::new(SIGNING_SECRET, None).sign(&ts, body.as_bytes());
    http_call(
        "POST",
        "https://actions.lambda-url.us-east-1.on.aws/",
        &[
            ("content-type", "application/x-www-form-urlencoded".into()),
            (medic_slack_actions::TIMESTAMP_HEADER, ts),
            (medic_slack_actions::SIGNATURE_HEADER, signature),
        ],
        body,
    )
}

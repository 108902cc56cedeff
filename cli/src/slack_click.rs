//! `medic slack click APP BUTTON`: presses a button of an app's escalation as Slack would, for
//! `medic serve` with the Slack simulator (or behind a tunnel). It reads the thread's parent from
//! Slack's Web API (`conversations.history`, the bot's token), builds the `block_actions`
//! payload Slack posts for that button, signs it with the signing secret (Slack's v0 scheme) and
//! posts it to serve's `/slack/actions`; then it waits a little for the reply in the thread. By
//! hand this took reading the source for the token and channel and an HMAC in a shell (newcomer
//! review row 35).

use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// Where and as whom to click.
pub struct Click {
    /// `namespace/name`, or `name`.
    pub app: String,
    /// The button's label (`Sync`, `Hard refresh`, `Acknowledge`: case and spaces ignored, a
    /// prefix is enough) or its action id.
    pub button: String,
    /// Slack's Web API (`.../api/`).
    pub slack_api: String,
    pub token: String,
    pub channel: String,
    pub signing_secret: String,
    pub user: String,
    /// `medic serve`'s `/slack/actions` URL.
    pub to: String,
    /// How long to wait for the reply in the thread (0: do not wait).
    pub wait: Duration,
}

fn squash(s: &str) -> String {
    s.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

/// Slack Web API method `method` with `query`, as the bot.
async fn slack(http: &reqwest::Client, c: &Click, method: &str, query: &[(&str, &str)]) -> Result<Value> {
    let url = format!("{}/{method}", c.slack_api.trim_end_matches('/'));
    let answer: Value = http
        .get(&url)
        .bearer_auth(&c.token)
        .query(query)
        .send()
        .await
        .with_context(|| format!("calling {url}"))?
        .json()
        .await
        .with_context(|| format!("reading {method}'s answer"))?;
    if answer["ok"] != true {
        bail!("{method}: {}", answer["error"].as_str().unwrap_or("not ok"));
    }
    Ok(answer)
}

/// The newest parent message of `app`'s escalation that has buttons.
fn thread_of<'a>(messages: &'a [Value], app: &str) -> Option<&'a Value> {
    let named = |m: &&Value| {
        let text = m["text"].as_str().unwrap_or_default();
        let full = if app.contains('/') { text.contains(&format!("{app} ")) } else { text.contains(&format!("/{app} ")) };
        full && m["thread_ts"].as_str().is_none_or(|t| Some(t) == m["ts"].as_str())
    };
    // conversations.history lists the newest first.
    messages.iter().filter(named).find(|m| buttons(m).next().is_some())
}

fn buttons(message: &Value) -> impl Iterator<Item = (&Value, &Value)> {
    message["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "actions")
        .flat_map(|b| b["elements"].as_array().into_iter().flatten().map(move |e| (b, e)))
        .filter(|(_, e)| e["type"] == "button")
}

/// Presses the button; returns serve's answer (status and body) and the reply in the thread.
pub async fn click(c: &Click) -> Result<(u16, String, Option<String>)> {
    let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().context("building the HTTP client")?;
    let history = slack(&http, c, "conversations.history", &[("channel", &c.channel), ("limit", "200")]).await?;
    let messages = history["messages"].as_array().cloned().unwrap_or_default();
    let Some(parent) = thread_of(&messages, &c.app) else {
        bail!("no escalation of {} with buttons in channel {} (is it escalated yet? `medic incidents` lists them)", c.app, c.channel);
    };
    let wanted = squash(&c.button);
    let found = buttons(parent).find(|(_, e)| {
        let label = squash(e["text"]["text"].as_str().unwrap_or_default());
        e["action_id"].as_str() == Some(c.button.as_str()) || (!wanted.is_empty() && label.starts_with(&wanted))
    });
    let Some((block, button)) = found else {
        let offered: Vec<&str> = buttons(parent).filter_map(|(_, e)| e["text"]["text"].as_str()).collect();
        bail!("{}'s escalation offers no button `{}`; it offers: {}", c.app, c.button, offered.join(", "));
    };
    let ts = parent["ts"].as_str().unwrap_or_default();
    let now = chrono::Utc::now();
    let action_ts = format!("{}.{:06}", now.timestamp(), now.timestamp_subsec_micros());
    // The fields of Slack's block_actions payload that a handler reads.
    let payload = json!({
        "type": "block_actions",
        "user": {"id": c.user, "username": "medic-slack-click"},
        "team": {"id": "T0MEDICCLI"},
        "container": {"type": "message", "message_ts": ts, "channel_id": c.channel},
        "channel": {"id": c.channel},
        "message": parent,
        "actions": [{
            "type": "button",
            "block_id": block["block_id"],
            "action_id": button["action_id"],
            "value": button["value"],
            "text": button["text"],
            "action_ts": action_ts,
        }],
    });
    let body: String = form_urlencoded::Serializer::new(String::new()).append_pair("payload", &payload.to_string()).finish();
    let timestamp = now.timestamp().to_string();
    let signature = medic_slack_actions::SigningSecret::new(c.signing_secret.clone(), None).sign(&timestamp, body.as_bytes());
    let before = replies(&http, c, ts).await.unwrap_or_default().len();
    let answer = http
        .post(&c.to)
        .header("content-type", "application/x-www-form-urlencoded")
        .header(medic_slack_actions::TIMESTAMP_HEADER, &timestamp)
        .header(medic_slack_actions::SIGNATURE_HEADER, signature)
        .body(body)
        .send()
        .await
        .with_context(|| format!("posting the click to {}", c.to))?;
    let status = answer.status().as_u16();
    let text = answer.text().await.unwrap_or_default();
    let mut reply = None;
    if status == 200 && !c.wait.is_zero() {
        let deadline = tokio::time::Instant::now() + c.wait;
        while reply.is_none() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let thread = replies(&http, c, ts).await.unwrap_or_default();
            reply = thread.get(before..).and_then(|new| new.iter().find_map(|m| m["text"].as_str().map(str::to_owned)));
        }
    }
    Ok((status, text, reply))
}

/// The thread's replies (the parent excluded), oldest first.
async fn replies(http: &reqwest::Client, c: &Click, ts: &str) -> Result<Vec<Value>> {
    let answer = slack(http, c, "conversations.replies", &[("channel", &c.channel), ("ts", ts)]).await?;
    Ok(answer["messages"].as_array().into_iter().flatten().filter(|m| m["ts"].as_str() != Some(ts)).cloned().collect())
}

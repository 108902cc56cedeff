//! Where an incident's thread goes: the owning team's Slack channel, with an optional user-group
//! mention, instead of the one channel every escalation went to. The policy's `routing` maps
//! projects to channels; an app's own annotations name its channel and mention. An app with
//! neither goes to the deployment's channel (`SLACK_CHANNEL`), as before.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::app::Application;

/// The annotation naming an app's Slack channel (a channel id, `C0123456789`).
pub const CHANNEL_ANNOTATION: &str = "argo-medic.io/slack-channel";
/// The annotation naming who to mention in its threads (a user group id `S0123456789`, or a
/// user id `U0123456789`).
pub const MENTION_ANNOTATION: &str = "argo-medic.io/slack-mention";

/// A channel and whom to mention there.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Route {
    /// A Slack channel id; empty: the deployment's channel.
    pub channel: String,
    /// A user group (`S…`) or user (`U…`) to mention in the incident's first message.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub mention: String,
}

impl Route {
    /// The mention as Slack writes it (`<!subteam^S0123>`, `<@U0123>`); empty without one.
    pub fn mention_markup(&self) -> String {
        let id = self.mention.trim();
        // An id only: an annotation must not smuggle markup (`<!channel>`) into the message.
        if !id.chars().all(|c| c.is_ascii_alphanumeric()) {
            return String::new();
        }
        match id.chars().next() {
            Some('S') => format!("<!subteam^{id}>"),
            Some('U' | 'W') => format!("<@{id}>"),
            _ => String::new(),
        }
    }
}

/// The policy configuration's `routing`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RoutingConfig {
    /// Project name → its team's route.
    pub projects: BTreeMap<String, Route>,
}

impl RoutingConfig {
    /// The route of `app`'s incidents: its annotations first (a mention without a channel of its
    /// own joins the project's channel), then its project's; `None` for the deployment's channel.
    pub fn route_for(&self, app: &Application) -> Option<Route> {
        let by_project = self.projects.get(&app.spec.project);
        let annotation = |key: &str| app.metadata.annotations.get(key).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let channel = annotation(CHANNEL_ANNOTATION).or_else(|| by_project.map(|r| r.channel.clone())).unwrap_or_default();
        let mention = annotation(MENTION_ANNOTATION).or_else(|| by_project.map(|r| r.mention.clone())).unwrap_or_default();
        (!channel.is_empty() || !mention.is_empty()).then_some(Route { channel, mention })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(project: &str, annotations: &[(&str, &str)]) -> Application {
        let mut app = Application::default();
        app.spec.project = project.into();
        app.metadata.annotations = annotations.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        app
    }

    #[test]
    fn an_app_routes_by_its_annotations_then_its_project_then_the_default() {
        let config: RoutingConfig =
            serde_json::from_str(r#"{"projects": {"payments": {"channel": "C0PAY", "mention": "S0ONCALL"}}}"#).unwrap();
        assert_eq!(config.route_for(&app("payments", &[])), Some(Route { channel: "C0PAY".into(), mention: "S0ONCALL".into() }));
        assert_eq!(config.route_for(&app("platform", &[])), None, "the deployment's channel");
        let own = app("payments", &[(CHANNEL_ANNOTATION, "C0LEDGER")]);
        assert_eq!(config.route_for(&own), Some(Route { channel: "C0LEDGER".into(), mention: "S0ONCALL".into() }));
        let mention_only = app("platform", &[(MENTION_ANNOTATION, "U0BOB")]);
        assert_eq!(config.route_for(&mention_only), Some(Route { channel: String::new(), mention: "U0BOB".into() }));
        assert!(serde_json::from_str::<RoutingConfig>(r#"{"project": {}}"#).is_err(), "unknown keys are refused");
    }

    #[test]
    fn mentions_are_written_as_slack_does() {
        let m = |id: &str| Route { channel: String::new(), mention: id.into() }.mention_markup();
        assert_eq!(m("S0ONCALL"), "<!subteam^S0ONCALL>");
        assert_eq!(m("U0BOB"), "<@U0BOB>");
        assert_eq!(m("here"), "", "anything else is not a mention (no @here or @channel from an annotation)");
        assert_eq!(m("S0<!channel>"), "", "markup is refused");
    }
}

//! Timed freezes: "hands off this app (project, selector) for 4 hours, because …". Argo CD users
//! have asked for a timed pause with a reason and an automatic restore for years
//! (argoproj/argo-cd#26392, #16922, #9344); a freeze is Argo Medic's.
//!
//! While a freeze covers an app, every action the ladder would take on it is taken at trust level
//! `observe` ([`crate::trust`]): decided and recorded, not performed. Escalations still reach
//! people, and a person's button still works (its reply says the scope is frozen). At `until` it
//! lifts by itself; the sweeper reminds the channel before it ends.
//!
//! A freeze stops Argo Medic, not Argo CD's auto-sync: editing an app's `syncPolicy` would be
//! reverted by an app-of-apps parent or an ApplicationSet, so Argo Medic does not touch it.
//!
//! Freezes live with the instant switch (`medic switch`): written by `medic freeze`, read through
//! the same per-container cache ([`crate::switch::Switch::freezes`]).

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::app::{AppId, Application};
use crate::trust::{AppliedTrust, TrustLevel};

/// What a freeze covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FreezeScope {
    /// One app, `namespace/name`.
    App(AppId),
    /// Every app of a project.
    Project(String),
    /// Every app whose labels match (`k=v`, `k!=v`, `k`, `!k`, comma = and).
    Selector(String),
}

impl FreezeScope {
    /// True when this scope takes in `app`: its id, its project, or its labels.
    pub fn covers(&self, app: &Application) -> bool {
        match self {
            FreezeScope::App(id) => *id == app.id(),
            FreezeScope::Project(p) => *p == app.spec.project,
            FreezeScope::Selector(s) => crate::app::selector_matches(s, &app.metadata.labels),
        }
    }

    /// Whether it covers the app `id` of `project` (a selector cannot tell without the labels,
    /// and says no).
    pub fn covers_ref(&self, id: &AppId, project: Option<&str>) -> bool {
        match self {
            FreezeScope::App(a) => a == id,
            FreezeScope::Project(p) => Some(p.as_str()) == project,
            FreezeScope::Selector(_) => false,
        }
    }
}

impl fmt::Display for FreezeScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FreezeScope::App(id) => write!(f, "app {id}"),
            FreezeScope::Project(p) => write!(f, "project {p}"),
            FreezeScope::Selector(s) => write!(f, "apps with labels {s}"),
        }
    }
}

/// One freeze: its scope, until when, why, who set it and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Freeze {
    /// `frz-` and 12 hex digits ([`crate::keys::freeze_id`]).
    pub id: String,
    /// What the freeze covers: an app, a project, or the apps a label selector matches.
    pub scope: FreezeScope,
    /// When the freeze lifts by itself.
    pub until: DateTime<Utc>,
    /// Why, as the person who set it wrote it; shown in details and replies.
    pub reason: String,
    /// Who set it: `medic freeze (<user>)`, or the Slack user (`slack:<id>`) who pressed "Freeze 4h".
    pub by: String,
    /// When it was set, and so when it begins.
    pub at: DateTime<Utc>,
}

impl Freeze {
    /// A freeze of `scope` from `at` for `length`.
    pub fn new(scope: FreezeScope, at: DateTime<Utc>, length: chrono::TimeDelta, reason: &str, by: &str) -> Self {
        let id = crate::keys::freeze_id(&scope.to_string(), at);
        Freeze { id, scope, until: at + length, reason: reason.trim().to_owned(), by: by.to_owned(), at }
    }

    /// True when the freeze is in force at `now`: set at or before it and not yet lifted.
    pub fn active(&self, now: DateTime<Utc>) -> bool {
        self.at <= now && now < self.until
    }

    /// `frozen until 2026-12-07T16:00:00Z by alice: the payments migration` (for details and replies).
    pub fn describe(&self) -> String {
        let until = self.until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        format!("{} is frozen until {until} by {}: {}", self.scope, self.by, self.reason)
    }
}

/// The active freeze that covers `app` now, the one ending last when several do.
pub fn covering<'a>(freezes: &'a [Freeze], app: &Application, now: DateTime<Utc>) -> Option<&'a Freeze> {
    freezes.iter().filter(|f| f.active(now) && f.scope.covers(app)).max_by_key(|f| f.until)
}

/// The trust level of an action on `app` with `freezes` in force: `observe`, saying why, while a
/// freeze covers it; `applied` otherwise. A freeze only ever makes it stricter.
pub fn with_freezes(applied: AppliedTrust, freezes: &[Freeze], app: &Application, now: DateTime<Utc>) -> AppliedTrust {
    match covering(freezes, app, now) {
        Some(f) => AppliedTrust { level: applied.level.strictest(TrustLevel::Observe), why: f.describe() },
        None => applied,
    }
}

/// The level of a fleet outage's canary probe of `app` (a refresh), with the freezes in force:
/// `observe` while one covers it. The app cannot be compared, so its failure mode is
/// `comparison-error-transient`; it is a listed item, whose labels, annotations and project the
/// sweep's list keeps.
pub fn canary_level(config: &crate::trust::TrustConfig, freezes: &[Freeze], app: &Application, now: DateTime<Utc>) -> TrustLevel {
    match covering(freezes, app, now) {
        Some(_) => TrustLevel::Observe,
        None => config.applied(app, crate::catalogue::FailureMode::ComparisonErrorTransient, crate::actions::ActionKind::Refresh).level,
    }
}

/// Freezes that end within `lead` of `now` and are still on: the sweeper reminds of each once.
pub fn ending_soon(freezes: &[Freeze], now: DateTime<Utc>, lead: chrono::TimeDelta) -> impl Iterator<Item = &Freeze> {
    freezes.iter().filter(move |f| f.active(now) && f.until - now <= lead)
}

/// The reminder the sweeper posts before `freeze` ends.
pub fn reminder(freeze: &Freeze) -> String {
    let until = freeze.until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    format!(
        ":snowflake: {}. At {until} Argo Medic resumes its automatic actions there by itself; `medic freeze` sets a new freeze to keep it. A freeze stops Argo Medic, not Argo CD's own auto-sync.",
        freeze.describe()
    )
}

/// How long the "Freeze 4h" button of an incident's thread freezes its app.
pub const BUTTON_FREEZE_HOURS: i64 = 4;

/// How long before a freeze ends the sweeper reminds the channel.
pub const REMINDER_LEAD: chrono::TimeDelta = chrono::TimeDelta::minutes(30);

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 7, h, 0, 0).single().expect("time")
    }

    fn app(project: &str, labels: &[(&str, &str)]) -> Application {
        let mut app = Application::default();
        app.metadata.name = "web".into();
        app.metadata.namespace = "argocd".into();
        app.spec.project = project.into();
        app.metadata.labels = labels.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        app
    }

    #[test]
    fn a_freeze_covers_its_scope_until_it_ends_and_only_tightens_the_level() {
        let freezes = vec![
            Freeze::new(FreezeScope::Project("payments".into()), at(10), chrono::TimeDelta::hours(4), "the migration", "alice"),
            Freeze::new(FreezeScope::Selector("tier=db".into()), at(10), chrono::TimeDelta::hours(1), "a failover", "bob"),
            Freeze::new(FreezeScope::App(AppId::new("argocd", "web")), at(12), chrono::TimeDelta::hours(1), "later", "carol"),
        ];
        let payments = app("payments", &[]);
        assert_eq!(covering(&freezes, &payments, at(11)).map(|f| f.by.as_str()), Some("alice"));
        assert_eq!(covering(&freezes, &payments, at(14)), None, "lifted by itself at `until`");
        assert_eq!(covering(&freezes, &app("other", &[("tier", "db")]), at(10)).map(|f| f.by.as_str()), Some("bob"));
        assert_eq!(covering(&freezes, &app("other", &[]), at(11)), None, "a freeze of an app starts at its own time");
        assert_eq!(covering(&freezes, &app("other", &[]), at(12)).map(|f| f.by.as_str()), Some("carol"));

        let act = AppliedTrust { level: TrustLevel::Act, why: "the default".into() };
        let frozen = with_freezes(act.clone(), &freezes, &payments, at(11));
        assert_eq!(frozen.level, TrustLevel::Observe);
        assert!(frozen.why.contains("project payments is frozen until 2026-12-07T14:00:00Z by alice: the migration"), "{}", frozen.why);
        assert_eq!(with_freezes(act.clone(), &freezes, &payments, at(15)), act);
        assert!(freezes[0].id.starts_with("frz-") && freezes[0].id != freezes[1].id);
    }

    #[test]
    fn a_reminder_is_due_in_the_last_half_hour() {
        let f = vec![Freeze::new(FreezeScope::Project("p".into()), at(10), chrono::TimeDelta::hours(1), "r", "a")];
        let due = |t| ending_soon(&f, t, REMINDER_LEAD).count();
        assert_eq!(due(at(10)), 0);
        assert_eq!(due(at(10) + chrono::TimeDelta::minutes(35)), 1);
        assert_eq!(due(at(11)), 0, "over: nothing to remind of");
    }

    #[test]
    fn a_freeze_reads_back_as_written() {
        let f = Freeze::new(FreezeScope::App(AppId::new("argocd", "web")), at(10), chrono::TimeDelta::hours(4), " why ", "me");
        let json = serde_json::to_string(&f).unwrap();
        assert!(json.contains(r#""scope":{"app":"argocd/web"}"#), "{json}");
        assert_eq!(serde_json::from_str::<Freeze>(&json).unwrap(), f);
        assert_eq!(f.reason, "why");
    }
}

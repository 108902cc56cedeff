//! Sample scenarios: an Application from `events/apps/` plus the trigger, time and history it is
//! judged with, and the decision expected. They feed the golden tests and `medic demo`.

use std::path::Path;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use medic_core::{Action, Application, FailureMode, History, PolicyConfig, Trigger};
use serde::Deserialize;

use crate::input::{json_files, parse_apps, parse_json, read};

/// The moment the sample Applications were captured; scenarios are judged at this time unless
/// they say otherwise.
pub use medic_sim::SAMPLES_CAPTURED_AT;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// File name under `events/apps/`, or `corpus/<class>/<id>.json`: the Application of a case of
    /// the decision-quality corpus (`events/corpus/`), so a golden scenario can pin a real-world
    /// state without adding it to the sample fleet.
    pub app: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "default_trigger")]
    pub trigger: Trigger,
    #[serde(default)]
    pub now: Option<DateTime<Utc>>,
    #[serde(default)]
    pub history: History,
    #[serde(default)]
    pub config: Option<PolicyConfig>,
    pub expect: Expectation,
}

fn default_trigger() -> Trigger {
    Trigger::sweep()
}

/// What the golden test checks.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    pub action: Action,
    pub failure_mode: FailureMode,
    /// Fragments the reason must contain.
    #[serde(default)]
    pub reason_contains: Vec<String>,
    #[serde(default)]
    pub retry_after_secs: Option<i64>,
    #[serde(default)]
    pub sync_prune: Option<bool>,
    #[serde(default)]
    pub resolves_incident: Option<bool>,
}

/// A scenario ready to decide.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub file: ScenarioFile,
    pub app: Application,
    pub now: DateTime<Utc>,
    pub config: PolicyConfig,
}

/// Where a scenario's `app` names a corpus case instead of a sample app.
const CORPUS_PREFIX: &str = "corpus/";

/// The Application of a corpus case (its `app` member).
fn corpus_app(path: &Path) -> Result<Application> {
    let source = path.display().to_string();
    let case: serde_json::Value = parse_json(&read(path)?, &source)?;
    let app = case.get("app").with_context(|| format!("{source}: a corpus case without `app`"))?;
    let mut apps = parse_apps(&app.to_string(), &format!("{source}#app"))?;
    Ok(apps.pop().with_context(|| format!("{source}: `app` holds no Application"))?.app)
}

/// Loads every scenario under `<events>/scenarios/`, with its app from `<events>/apps/`.
pub fn load_all(events: &Path) -> Result<Vec<Scenario>> {
    let captured: DateTime<Utc> = SAMPLES_CAPTURED_AT.parse().expect("constant is RFC 3339");
    json_files(&events.join("scenarios"))?
        .into_iter()
        .map(|path| {
            let source = path.display().to_string();
            let file: ScenarioFile = parse_json(&read(&path)?, &source)?;
            let app = match file.app.strip_prefix(CORPUS_PREFIX) {
                Some(case) => corpus_app(&events.join("corpus").join(case))?,
                None => {
                    let app_path = events.join("apps").join(&file.app);
                    let mut apps = parse_apps(&read(&app_path)?, &app_path.display().to_string())?;
                    apps.pop().with_context(|| format!("{source}: {} holds no Application", file.app))?.app
                }
            };
            let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            Ok(Scenario { name, now: file.now.unwrap_or(captured), config: file.config.clone().unwrap_or_default(), app, file })
        })
        .collect()
}

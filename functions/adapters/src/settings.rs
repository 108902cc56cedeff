//! Every environment variable Argo Medic reads, declared once: its name, who sets it, its default,
//! which functions (and whether the CLI) read it, and what it means.
//!
//! One row per variable, as ripgrep has one row per flag: adding a setting touches this table and
//! the code that uses it, nothing else. [`crate::config::Settings`] reads a declared [`Var`], never
//! a string, so nothing can be read that is not here. `tests/settings.rs` holds the table against
//! `template.yaml` (each function is given exactly the template variables it reads, with the same
//! defaults) and against docs/configuration.md's table; `tests/iam.rs` runs the four functions
//! and checks that each reads what its row says.

/// Who reads a variable: one of the four functions, or the `medic` CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reader {
    Ingest,
    Worker,
    Sweeper,
    SlackActions,
    Cli,
}

impl Reader {
    /// The four functions, in the template's order.
    pub const FUNCTIONS: [Reader; 4] = [Reader::Ingest, Reader::Worker, Reader::Sweeper, Reader::SlackActions];

    /// The function's resource in template.yaml (`None` for the CLI).
    pub fn resource(self) -> Option<&'static str> {
        match self {
            Reader::Ingest => Some("IngestFunction"),
            Reader::Worker => Some("WorkerFunction"),
            Reader::Sweeper => Some("SweeperFunction"),
            Reader::SlackActions => Some("SlackActionsFunction"),
            Reader::Cli => None,
        }
    }

    /// The name the docs use: the function's binary, or `medic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reader::Ingest => "ingest",
            Reader::Worker => "worker",
            Reader::Sweeper => "sweeper",
            Reader::SlackActions => "slack-actions",
            Reader::Cli => "medic",
        }
    }
}

/// Who sets a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// template.yaml, for every function that reads it (and nothing else).
    Template,
    /// Lambda itself (the log level and format from `LoggingConfig`).
    Lambda,
    /// A person, for the CLI and local runs: the template never sets it.
    Local,
}

/// What a value is, for the reader's grammar and the docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    /// `true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off`, any case.
    Flag,
    /// A whole number.
    Number,
    /// A JSON document.
    Json,
    /// A Secrets Manager ARN, or `ARN#key` for one key of a JSON secret.
    Secret,
}

/// A variable's value when it is unset or blank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarDefault {
    /// Reading it unset is an error that names it.
    Required,
    /// No value; the reader says what that means.
    Unset,
    /// This value, in the variable's grammar.
    Value(&'static str),
}

/// One environment variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Var {
    pub name: &'static str,
    pub kind: Kind,
    pub origin: Origin,
    pub default: VarDefault,
    pub readers: &'static [Reader],
    pub doc: &'static str,
}

impl Var {
    pub fn read_by(&self, reader: Reader) -> bool {
        self.readers.contains(&reader)
    }
}

/// Declares each variable as a constant and lists them all in [`ALL`], so a variable cannot be
/// declared and left out of the table the tests and docs are held to.
macro_rules! vars {
    ($( $name:ident: $kind:ident, $origin:ident, $default:expr, [$($reader:ident),*], $doc:literal; )*) => {
        $(
            #[doc = $doc]
            pub const $name: Var = Var {
                name: stringify!($name),
                kind: Kind::$kind,
                origin: Origin::$origin,
                default: $default,
                readers: &[$(Reader::$reader),*],
                doc: $doc,
            };
        )*
        /// Every variable, in the order of docs/configuration.md.
        pub const ALL: &[Var] = &[$($name),*];
    };
}

use VarDefault::{Required, Unset, Value};

vars! {
    // What every function needs.
    MEDIC_INSTANCE_ID: Text, Template, Required, [Ingest, Worker, Sweeper, SlackActions],
        "The Argo CD instance (`InstanceId`): part of every key, so two instances can share an account.";
    QUEUE_URL: Text, Template, Required, [Ingest, Worker, Sweeper, SlackActions],
        "The work queue every function sends to.";
    TABLE_NAME: Text, Template, Required, [Worker, Sweeper, SlackActions],
        "The state table: incidents, claims, leases, the switch, the shared budgets.";
    MEDIC_FUNCTION_TIMEOUT_SECONDS: Number, Template, Value("60"), [Ingest, Worker, Sweeper, SlackActions],
        "The function's own timeout, again: every lease and the Argo CD client's retry budget derive from it.";
    WORK_ITEM_KEY_SECRET_ARN: Secret, Template, Unset, [Ingest, Worker, Sweeper, SlackActions],
        "The key that signs work items carrying a person's request or a fleet privilege (the stack generates it).";
    MEDIC_WORK_ITEM_KEY: Text, Local, Unset, [Ingest, Worker, Sweeper, SlackActions],
        "Local runs: the work-item key itself, when `WORK_ITEM_KEY_SECRET_ARN` is unset.";
    AWS_ENDPOINT_URL: Text, Local, Unset, [Ingest, Worker, Sweeper, SlackActions],
        "Local runs and tests: one endpoint for every AWS client (moto_server).";
    // Argo CD: the argocd CLI's names where it has them.
    ARGOCD_SERVER: Text, Template, Unset, [Ingest, Worker, Sweeper, Cli],
        "Argo CD's address, `host[:port]` or a full URL (`ArgoCdServer`).";
    ARGOCD_INSECURE: Flag, Template, Value("false"), [Ingest, Worker, Sweeper, Cli],
        "Skip TLS verification (self-signed test instances only).";
    ARGOCD_PLAINTEXT: Flag, Template, Value("false"), [Ingest, Worker, Sweeper, Cli],
        "Plain HTTP, no TLS.";
    ARGOCD_ROOT_PATH: Text, Template, Unset, [Ingest, Worker, Sweeper, Cli],
        "The root path when Argo CD is served under a prefix (`server.rootpath`), e.g. `/argocd`.";
    ARGOCD_CA_BUNDLE: Text, Template, Unset, [Ingest, Worker, Sweeper, Cli],
        "CA certificates to trust besides the public roots: PEM text (a literal `\\n` for a line break) or a file's path.";
    ARGOCD_AUTH_TOKEN_SECRET_ARN: Secret, Template, Unset, [Ingest, Worker, Sweeper],
        "The secret holding Argo Medic's Argo CD API token; re-read when Argo CD rejects it.";
    ARGOCD_AUTH_TOKEN: Text, Local, Unset, [Ingest, Worker, Sweeper, Cli],
        "The Argo CD API token itself: the CLI's, and the functions' in local runs without `ARGOCD_AUTH_TOKEN_SECRET_ARN`.";
    ARGOCD_OPTS: Text, Local, Unset, [Cli],
        "The argocd CLI's default flags (`--server`, `--auth-token`, `--plaintext`, ...), read by `medic` as argocd reads them: below the command line's, above the variables they stand for.";
    ARGOCD_UI_URL: Text, Template, Unset, [Worker, Sweeper],
        "The Argo CD UI's base URL for links in Slack (default: from `ARGOCD_SERVER` and the root path).";
    // Ingest.
    WEBHOOK_SECRET_ARN: Secret, Template, Unset, [Ingest],
        "The webhook's bearer token (`{\"current\": ..., \"previous\": ...}` during a rotation).";
    MEDIC_WEBHOOK_SECRET: Text, Local, Unset, [Ingest, Cli],
        "Local runs: the webhook's bearer token itself.";
    REFRESH_SECRET_ARN: Secret, Template, Unset, [Ingest],
        "The key signed refresh requests are checked with; unset, `/v1/refresh` is off.";
    MEDIC_REFRESH_SECRET: Text, Local, Unset, [Ingest, Cli],
        "Local runs: the refresh signing key itself.";
    MEDIC_MAX_BODY_BYTES: Number, Template, Value("65536"), [Ingest],
        "The largest request body ingest accepts (413 above it).";
    // The worker and the sweeper: what they may do, and how fast.
    MEDIC_DRY_RUN: Flag, Template, Value("true"), [Worker, Sweeper],
        "Decide and record, change nothing (`DryRun`). A deployment that says nothing acts on nothing.";
    MEDIC_KILL_SWITCH: Flag, Template, Value("false"), [Worker, Sweeper],
        "Stop every action at the next cold start (`KillSwitch`); `medic switch` is the instant one.";
    MEDIC_POLICY_CONFIG: Json, Template, Value("{}"), [Worker, Sweeper],
        "The policy (`PolicyConfig`): the keys of the table above.";
    MEDIC_WORKER_MAX_CONCURRENCY: Number, Template, Value("5"), [Worker, Sweeper],
        "Most workers at once (`WorkerMaxConcurrency`): each spends its share of the budgets.";
    MEDIC_REFRESH_PER_MINUTE: Number, Template, Value("300"), [Worker, Sweeper],
        "The instance's refresh budget (`RefreshPerMinute`).";
    MEDIC_HARD_REFRESH_PER_MINUTE: Number, Template, Value("10"), [Worker, Sweeper],
        "The instance's hard-refresh budget (`HardRefreshPerMinute`).";
    MEDIC_SYNC_PER_MINUTE: Number, Template, Value("30"), [Worker, Sweeper],
        "The instance's sync budget (`SyncPerMinute`).";
    MEDIC_RECHECK_SECONDS: Number, Template, Value("300"), [Worker, Sweeper],
        "Longest an open incident goes unchecked by the sweeper (`RecheckSeconds`); the worker holds a relapse twice as long.";
    MEDIC_HISTORY_DAYS: Number, Template, Value("7"), [Worker, Sweeper, Cli],
        "Days the state table keeps a closed incident and every decision, at every trust level and in a dry run (`HistoryDays`): what `medic incidents --closed` and `medic report` can show (docs/cost.md prices it).";
    MEDIC_TOKEN_EXPIRY_WARNING_DAYS: Number, Template, Value("7"), [Sweeper, Cli],
        "Days before the Argo CD token expires (its JWT `exp`) that the sweeper warns in Slack, once a day, and `ArgoTokenExpiringAlarm` fires (`TokenExpiryWarningDays`); `medic check` warns from then too.";
    MEDIC_MAX_RECEIVE_COUNT: Number, Template, Value("5"), [Worker],
        "The work queue's `maxReceiveCount`: a click still failing on its last receive is answered in its thread.";
    // Slack.
    SLACK_CHANNEL: Text, Template, Unset, [Worker, Sweeper, Cli],
        "The channel escalations go to; with a token, Slack replaces the log.";
    SLACK_TOKEN_SECRET_ARN: Secret, Template, Unset, [Worker, Sweeper],
        "The secret holding the Slack bot token; re-read when Slack answers `invalid_auth`.";
    SLACK_TOKEN: Text, Local, Unset, [Worker, Sweeper, Cli],
        "The Slack bot token itself: the CLI's, and the functions' in local runs.";
    SLACK_API_URL: Text, Local, Value("https://slack.com/api/"), [Worker, Sweeper, Cli],
        "The Slack Web API's base URL (a simulator's in local runs).";
    SLACK_POST_INTERVAL_MS: Number, Local, Value("1000"), [Worker, Sweeper],
        "Slack's pacing of posts to one channel; a time-scaled test run scales it.";
    SLACK_FLEET_THRESHOLD: Number, Template, Value("2"), [Worker, Sweeper],
        "Incidents of one failure mode close together that are grouped under one Slack parent (0: never).";
    SLACK_SIGNING_SECRET_ARN: Secret, Template, Unset, [SlackActions],
        "The Slack app's signing secret: every click is verified with it.";
    SLACK_SIGNING_SECRET: Text, Local, Unset, [SlackActions, Cli],
        "Local runs: the signing secret itself (`medic serve`'s `/slack/actions`).";
    SLACK_ALLOWED_USERS: Json, Template, Value("{}"), [SlackActions, Cli],
        "Who may click, per project: `{\"<project>\": [\"<Slack user id>\"], \"*\": [...]}`; empty, every click is refused.";
    SLACK_WORKSPACE_URL: Text, Local, Unset, [Cli],
        "The Slack workspace's URL, for links to incident threads in `medic incidents`.";
    // Logging.
    AWS_LAMBDA_LOG_LEVEL: Text, Lambda, Unset, [Ingest, Worker, Sweeper, SlackActions],
        "The log level, set by Lambda from the template's `LogLevel`.";
    AWS_LAMBDA_LOG_FORMAT: Text, Lambda, Unset, [Ingest, Worker, Sweeper, SlackActions],
        "`JSON` for JSON log lines, set by Lambda from `LoggingConfig`.";
    RUST_LOG: Text, Local, Unset, [Ingest, Worker, Sweeper, SlackActions],
        "Per-target log directives (`medic_worker=debug,warn`) when Lambda sets no level.";
}

/// The variables `reader` reads.
pub fn read_by(reader: Reader) -> impl Iterator<Item = &'static Var> {
    ALL.iter().filter(move |v| v.read_by(reader))
}

/// docs/configuration.md's table of variables, as the declarations say it.
pub fn markdown_table() -> String {
    let mut out = String::from("| variable | set by | default | read by | meaning |\n| --- | --- | --- | --- | --- |\n");
    for v in ALL {
        let origin = match v.origin {
            Origin::Template => "template",
            Origin::Lambda => "Lambda",
            Origin::Local => "you (local runs, CLI)",
        };
        let default = match v.default {
            VarDefault::Required => "required".to_owned(),
            VarDefault::Unset => "unset".to_owned(),
            VarDefault::Value(value) => format!("`{value}`"),
        };
        let readers: Vec<&str> = v.readers.iter().map(|r| r.as_str()).collect();
        out.push_str(&format!("| `{}` | {origin} | {default} | {} | {} |\n", v.name, readers.join(", "), v.doc.replace('|', "\\|")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_bool;

    #[test]
    fn every_default_is_in_its_variable_s_grammar() {
        for v in ALL {
            let VarDefault::Value(value) = v.default else { continue };
            match v.kind {
                Kind::Flag => assert!(parse_bool(value).is_some(), "{}: `{value}` is not a flag", v.name),
                Kind::Number => assert!(value.parse::<u64>().is_ok(), "{}: `{value}` is not a number", v.name),
                Kind::Json => assert!(serde_json::from_str::<serde_json::Value>(value).is_ok(), "{}: `{value}` is not JSON", v.name),
                Kind::Text | Kind::Secret => {}
            }
        }
    }

    #[test]
    fn names_are_unique_and_every_variable_has_a_reader() {
        let mut names: Vec<&str> = ALL.iter().map(|v| v.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "a variable is declared twice");
        for v in ALL {
            assert!(!v.readers.is_empty(), "{} is read by nobody", v.name);
            assert!(
                v.origin != Origin::Template || v.readers.iter().any(|r| *r != Reader::Cli),
                "{}: the template gives only functions",
                v.name
            );
        }
    }

    #[test]
    fn the_code_s_defaults_are_the_declared_ones() {
        let rates = crate::budget::BudgetRates::default();
        assert_eq!(MEDIC_REFRESH_PER_MINUTE.default, VarDefault::Value(leak(rates.refresh_per_minute)));
        assert_eq!(MEDIC_HARD_REFRESH_PER_MINUTE.default, VarDefault::Value(leak(rates.hard_refresh_per_minute)));
        assert_eq!(MEDIC_SYNC_PER_MINUTE.default, VarDefault::Value(leak(rates.sync_per_minute)));
        assert_eq!(MEDIC_MAX_BODY_BYTES.default, VarDefault::Value(leak(medic_core::event::MAX_EVENT_BYTES)));
    }

    fn leak(n: impl ToString) -> &'static str {
        Box::leak(n.to_string().into_boxed_str())
    }
}

//! The command line: its flags, subcommands and what each runs. The binaries `medic` and
//! `argocd-medic` (the argocd CLI's plugin name) are this [`main`].

use std::path::PathBuf;
use std::process::ExitCode;

use crate::output::{CheckOutput, DecisionOutput, Document, IncidentsOutput, ReferenceOutput, SweepOutput, document, json_lines};
use crate::{input, render, scenario};
use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use clap::{Parser, Subcommand};
use medic_core::{CATALOGUE, Decision, DecisionPolicy, History, PolicyConfig, Trigger};

#[derive(Parser)]
#[command(name = "medic", version, about = "Keeps Argo CD Applications healthy: decide, remediate, escalate.")]
// The last of a flag given twice wins, as in argocd: ARGOCD_OPTS's flags come first.
#[command(args_override_self = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Argo CD's connection, as the argocd CLI takes it.
    #[command(flatten)]
    argo: crate::argocd_flags::ArgoFlags,
}

#[derive(Subcommand)]
enum Command {
    /// Decide what to do about Applications (as `GET /api/v1/applications/{name}` returns them).
    Decide {
        /// An Application JSON file, a list response `{"items": [...]}`, a directory of them, or `-` for stdin.
        #[arg(long)]
        app: String,
        /// What prompted the look: an argocd-notifications trigger of Argo Medic's templates
        /// (on-sync-failed, on-health-degraded, ...), `sweep`, `fleet-recovery` or `manual`.
        #[arg(long, default_value = Trigger::MANUAL, value_parser = known_trigger)]
        trigger: String,
        /// The time to judge at (RFC 3339); defaults to now.
        #[arg(long)]
        now: Option<String>,
        /// The open incident and what was already done about it (JSON).
        #[arg(long)]
        history: Option<String>,
        /// Policy configuration (JSON); absent keys take their defaults.
        #[arg(long)]
        config: Option<String>,
        #[arg(short = 'o', long, value_enum, default_value = "json")]
        output: DecisionOutput,
    },
    /// Print the failure-mode catalogue.
    Catalogue {
        #[arg(short = 'o', long, value_enum, default_value = "table")]
        output: ReferenceOutput,
    },
    /// Print the map of the Application: every field, annotation, label, condition, phase and code Argo
    /// CD's controller reads, and what Argo Medic's policy does with it.
    Map {
        #[arg(short = 'o', long, value_enum, default_value = "table")]
        output: ReferenceOutput,
    },
    /// One pass over a fleet: list apps, re-read the candidates, act within budgets, record.
    Sweep(SweepArgs),
    /// The serverless pipeline in one process: ingest on HTTP, the worker on a queue in the state file,
    /// the sweeper on a timer; against Argo CD or --simulate.
    Serve(ServeArgs),
    /// Run only the Argo CD simulator, loaded like --simulate, until interrupted (for cargo lambda
    /// watch, curl, or a second medic). Prints its URL and token as `export` lines for a shell.
    Sim {
        #[command(flatten)]
        fleet: FleetArgs,
        /// The port on 127.0.0.1 (default: any free one).
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
    /// List the open incidents in the state store (the SQLite file of sweep and serve, or a
    /// stack's DynamoDB table with --table): rungs taken, next step, Slack thread, fleet. `show APP`
    /// prints one app's incidents in full with the evidence of the last decision.
    Incidents(IncidentsArgs),
    /// The shadow report: from the decisions the state store recorded (at every trust level and
    /// in a dry run), per failure mode and project, how many, what each level would have done,
    /// and what happened next: Argo Medic acted, a person acted, healed by itself, still broken.
    Report(ReportArgs),
    /// Decide the recorded decisions again with the policy and configuration given (--config; the
    /// defaults without it) and print those decided otherwise: a policy change judged on the
    /// fleet's own history before it is deployed.
    Replay(ReplayArgs),
    /// Show or flip a deployed stack's instant switch (`act`, `dry-run` or `off`), kept in its
    /// state table: workers see a change within 30 seconds, no stack update needed. The stack's
    /// DryRun and KillSwitch parameters still apply: the switch can only make Argo Medic more
    /// careful than they say.
    Switch(SwitchArgs),
    /// Freeze an app, a project or a label selector for a while, with a reason: Argo Medic takes
    /// no automatic action there until it ends, then resumes by itself (a reminder is posted
    /// before). It stops Argo Medic, not Argo CD's auto-sync. `list` shows the freezes, `lift`
    /// ends one early. Kept in a deployed stack's table, with its switch.
    #[command(args_conflicts_with_subcommands = true)]
    Freeze(FreezeArgs),
    /// Decide every sample scenario under events/ and print the decisions as a table.
    Demo {
        /// The events directory holding apps/ and scenarios/.
        #[arg(long, default_value = "events")]
        events: PathBuf,
        #[arg(short = 'o', long, value_enum, default_value = "table")]
        output: DecisionOutput,
    },
    /// Preflight a deployment, as `flux check` does: Argo CD reachable over TLS, its version, the
    /// token (and when it expires), its RBAC on the projects in scope, argocd-notifications'
    /// service and triggers. Reads ARGOCD_SERVER, ARGOCD_AUTH_TOKEN and the other ARGOCD_*
    /// settings; changes nothing. Exit status 1 when a check fails.
    Check(CheckArgs),
    /// Slack without Slack: `click` presses an escalation's button as Slack would.
    Slack {
        #[command(subcommand)]
        command: SlackCommand,
    },
    /// Print medic's version and, as `argocd version` does, the Argo CD server's (when one is
    /// given: --server or ARGOCD_SERVER, with a token).
    Version {
        /// medic's version only.
        #[arg(long)]
        client: bool,
    },
    /// Print the shell completion script for medic, e.g.
    /// `medic completions bash > ~/.local/share/bash-completion/completions/medic`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

/// `medic check`'s options.
#[derive(clap::Args)]
struct CheckArgs {
    /// A project in scope (repeat it); default: `projects` of --config, or every project.
    #[arg(long = "project")]
    projects: Vec<String>,
    /// The policy configuration (JSON, the stack's PolicyConfig): its `projects` are the scope.
    #[arg(long)]
    config: Option<String>,
    /// The deployment never syncs (DryRun): only `get` is needed.
    #[arg(long)]
    no_sync: bool,
    /// The argocd-notifications route the apps use.
    #[arg(long, value_enum, default_value = "any")]
    route: crate::check::Route,
    /// Check a deployed stack too: its status, secrets, switch, queues and table. Argo CD is then
    /// reached as the stack reaches it (its ArgoCdServer parameters, the token in its secret) and
    /// the scope is its PolicyConfig. AWS credentials and region as the AWS CLI finds them.
    #[arg(long)]
    stack: Option<String>,
    /// With --stack: another AWS endpoint (moto).
    #[arg(long, requires = "stack")]
    endpoint_url: Option<String>,
    /// Warn when the token expires within this many days (the stack's `TokenExpiryWarningDays`).
    #[arg(long, env = "MEDIC_TOKEN_EXPIRY_WARNING_DAYS", default_value_t = 7)]
    warn_days: u64,
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    output: CheckOutput,
}

/// Which Argo CD, and where state lives.
#[derive(clap::Args)]
struct TargetArgs {
    /// Run against the built-in Argo CD simulator loaded with the sample apps (no Argo CD needed).
    #[arg(long)]
    simulate: bool,
    #[command(flatten)]
    fleet: FleetArgs,
    /// Decide and report, act on nothing.
    #[arg(long)]
    dry_run: bool,
    /// State file remembering incidents and actions between runs. Defaults to
    /// $XDG_STATE_HOME/argo-medic/state.db (in memory with --simulate).
    #[arg(long)]
    state: Option<PathBuf>,
    /// Policy configuration (JSON).
    #[arg(long)]
    config: Option<String>,
    /// Days the state file keeps a closed incident and every decision (`medic report`, `medic
    /// replay`), as the stack's `HistoryDays`.
    #[arg(long, env = "MEDIC_HISTORY_DAYS", default_value_t = 7)]
    history_days: u64,
}

/// The simulator's fleet: what `--simulate` (sweep, serve) and `medic sim` load.
#[derive(clap::Args)]
struct FleetArgs {
    /// Simulator only: the Application files to load (the sample fleet, compiled in when not here).
    #[arg(long, default_value = crate::samples::DEFAULT_APPS)]
    apps: PathBuf,
    /// Simulator only: what refresh and sync do per app (JSON); skipped, and said, when absent.
    #[arg(long, default_value = crate::samples::DEFAULT_OUTCOMES)]
    outcomes: PathBuf,
    /// Simulator only: a synthetic fleet of this many apps instead of the sample apps.
    #[arg(long)]
    synthetic: Option<usize>,
    /// Simulator only, with --synthetic: how many of them are stale.
    #[arg(long, default_value_t = 0)]
    stale: usize,
}

impl TargetArgs {
    fn into_target(self, argo: &crate::argocd_flags::ArgoFlags) -> Result<crate::sweep_cmd::Target> {
        Ok(crate::sweep_cmd::Target {
            simulate: self.simulate,
            apps: self.fleet.apps,
            outcomes: self.fleet.outcomes,
            synthetic: self.fleet.synthetic,
            stale: self.fleet.stale,
            dry_run: self.dry_run,
            state: self.state,
            config: self.config.as_deref().map(input::read_config).transpose()?,
            history: std::time::Duration::from_secs(self.history_days.saturating_mul(86_400)),
            argo: argo.clone(),
        })
    }
}

/// Per-instance budgets for the actions that load Argo CD.
#[derive(clap::Args)]
struct BudgetArgs {
    /// Refreshes per minute, at least 1 (0 would wait for ever).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u32).range(1..))]
    refresh_per_minute: u32,
    /// Hard refreshes per minute, at least 1.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    hard_refresh_per_minute: u32,
    /// Syncs per minute, at least 1.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..))]
    sync_per_minute: u32,
}

impl BudgetArgs {
    fn rates(&self) -> medic_adapters::budget::BudgetRates {
        medic_adapters::budget::BudgetRates {
            refresh_per_minute: self.refresh_per_minute,
            hard_refresh_per_minute: self.hard_refresh_per_minute,
            sync_per_minute: self.sync_per_minute,
            // Pace, never defer: a sweep that has read an app waits for its budget token (the
            // rate bounds the whole pass) rather than dropping the app to the next sweep, which
            // would read it again. Only a Lambda, which must not sit idle, defers (2 s).
            max_wait: std::time::Duration::from_secs(600),
        }
    }
}

#[derive(clap::Args)]
struct SweepArgs {
    #[command(flatten)]
    target: TargetArgs,
    #[command(flatten)]
    budgets: BudgetArgs,
    /// Only these projects (repeatable), as argocd's -p.
    #[arg(short = 'p', long = "project")]
    projects: Vec<String>,
    /// Only apps matching this label selector (`env=prod,team in (a,b)`), as argocd's -l.
    #[arg(short = 'l', long, default_value = "", hide_default_value = true)]
    selector: String,
    /// Apps handled at once, at least 1.
    #[arg(long, default_value_t = 8, value_parser = at_least_one)]
    concurrency: usize,
    /// Sweep this many times back to back with the same state (a rerun must repeat no action); at least 1.
    #[arg(long, default_value_t = 1, value_parser = at_least_one)]
    passes: usize,
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    output: SweepOutput,
}

/// The decisions a state store recorded, and how far back: what `medic report` and `medic
/// replay` read.
#[derive(clap::Args)]
struct RecordedArgs {
    /// How far back: the decisions taken in this time (90m, 24h, 7d). The store keeps them for
    /// its retention (`MEDIC_HISTORY_DAYS`, 7 days unless the stack says otherwise).
    #[arg(long, default_value = "7d")]
    since: String,
    /// The SQLite state file (default: the one `medic sweep` and `medic serve` use).
    #[arg(long)]
    state: Option<PathBuf>,
    /// Read a deployed stack's DynamoDB state table instead (its StateTableName output).
    #[arg(long, conflicts_with = "state")]
    table: Option<String>,
    /// With --table: another DynamoDB endpoint (moto, DynamoDB Local).
    #[arg(long)]
    endpoint_url: Option<String>,
    /// With --table: the stack's InstanceId.
    #[arg(long, default_value = "default")]
    instance: String,
}

impl RecordedArgs {
    /// The start of the span asked for, and the decisions recorded since.
    async fn read(&self) -> Result<(DateTime<Utc>, Vec<medic_core::record::DecisionRecord>)> {
        use medic_core::ports::IncidentLedger;
        let back = crate::incidents::parse_duration(&self.since)?;
        let since = Utc::now() - chrono::Duration::from_std(back).context("--since is too long")?;
        let records = match &self.table {
            Some(table) => {
                let sdk = medic_adapters::aws::sdk_config(self.endpoint_url.as_deref()).await;
                let store = medic_adapters::dynamodb::DynamoDbStore::new(aws_sdk_dynamodb::Client::new(&sdk), table, &self.instance);
                store.decisions(since).await?
            }
            None => {
                let path = self.state.clone().unwrap_or_else(crate::sweep_cmd::default_state_path);
                if !path.exists() {
                    anyhow::bail!(
                        "no state file at {}: `medic sweep` and `medic serve` create it (or name one with --state)",
                        path.display()
                    );
                }
                crate::store::SqliteIncidentStore::open(&path)?.decisions(since).await?
            }
        };
        Ok((since, records))
    }
}

#[derive(clap::Args)]
struct ReportArgs {
    #[command(flatten)]
    recorded: RecordedArgs,
    /// Policy configuration (JSON): its settle_secs is how soon a healing counts as "by itself".
    #[arg(long)]
    config: Option<String>,
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    output: ReportOutput,
}

#[derive(clap::Args)]
struct ReplayArgs {
    #[command(flatten)]
    recorded: RecordedArgs,
    /// The policy configuration to decide with (JSON, a file or `-`; as `medic decide --config`):
    /// the stack's own reproduces its records, a candidate shows what it would change.
    #[arg(long)]
    config: Option<String>,
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    output: ReportOutput,
}

/// `medic report` and `medic replay`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ReportOutput {
    /// Aligned columns: the report's row per failure mode and project (and what the columns
    /// mean), the replay's row per decision taken otherwise.
    Table,
    /// One JSON document: the report's `since`, `decisions` and `rows`; the replay's counts and
    /// `differences`.
    Json,
}

#[derive(clap::Args)]
struct IncidentsArgs {
    #[command(subcommand)]
    command: Option<IncidentsCommand>,
    /// The SQLite state file (default: the one `medic sweep` and `medic serve` use,
    /// $XDG_STATE_HOME/argo-medic/state.db).
    #[arg(long, global = true)]
    state: Option<PathBuf>,
    /// Read a deployed stack's DynamoDB state table instead (its name: the stack's StateTableName
    /// output); AWS credentials and region as the AWS CLI finds them.
    #[arg(long, global = true, conflicts_with = "state")]
    table: Option<String>,
    /// With --table: another DynamoDB endpoint (moto, DynamoDB Local).
    #[arg(long, global = true)]
    endpoint_url: Option<String>,
    /// With --table: the stack's InstanceId.
    #[arg(long, global = true, default_value = "default")]
    instance: String,
    /// Also list incidents closed in the last 7 days.
    #[arg(long, global = true)]
    closed: bool,
    /// Only apps of these Argo CD projects (repeatable).
    #[arg(long = "project", global = true)]
    projects: Vec<String>,
    /// Only these failure modes (repeatable; `medic catalogue` lists them).
    #[arg(long = "mode", global = true)]
    modes: Vec<String>,
    /// Only incidents in trouble for longer than this (90s, 30m, 2h, 7d).
    #[arg(long, global = true)]
    older_than: Option<String>,
    /// Policy configuration (JSON) for the forecast: settle_secs, max_actions_per_incident.
    #[arg(long, global = true)]
    config: Option<String>,
    /// The Slack workspace's URL (https://acme.slack.com), to print links to the threads.
    #[arg(long, env = "SLACK_WORKSPACE_URL", global = true)]
    slack_url: Option<String>,
    #[arg(short = 'o', long, value_enum, default_value = "table", global = true)]
    output: IncidentsOutput,
}

#[derive(clap::Args)]
struct SwitchArgs {
    #[command(flatten)]
    stack: StackTable,
    /// The new mode: `act`, `dry-run` or `off`. Without it, the current one is shown.
    mode: Option<String>,
}

#[derive(clap::Args)]
struct FreezeArgs {
    #[command(subcommand)]
    command: Option<FreezeCommand>,
    /// The app to freeze, `name` or `namespace/name` (the namespace `argocd` when omitted).
    app: Option<String>,
    /// Freeze every app of this project instead.
    #[arg(long, conflicts_with_all = ["app", "selector"])]
    project: Option<String>,
    /// Freeze every app whose labels match (`k=v`, `k!=v`, `k`, `!k`, comma = and) instead.
    #[arg(long, conflicts_with = "app")]
    selector: Option<String>,
    /// How long: `4h`, `90m`, `2d`.
    #[arg(long = "for", value_name = "DURATION")]
    length: Option<String>,
    /// Why, for the people who will wonder (shown in Slack and `medic freeze list`).
    #[arg(long)]
    reason: Option<String>,
    /// The stack's DynamoDB state table (its StateTableName output); AWS credentials and region
    /// as the AWS CLI finds them.
    #[arg(long, global = true)]
    table: Option<String>,
    /// The stack's InstanceId.
    #[arg(long, global = true, default_value = "default")]
    instance: String,
    /// Another DynamoDB endpoint (moto, DynamoDB Local).
    #[arg(long, global = true)]
    endpoint_url: Option<String>,
}

impl FreezeArgs {
    fn stack(&self) -> Result<StackTable> {
        let table = self.table.clone().context("name the stack's state table: --table <StateTableName>")?;
        Ok(StackTable { table, instance: self.instance.clone(), endpoint_url: self.endpoint_url.clone() })
    }
}

#[derive(Subcommand)]
enum FreezeCommand {
    /// The freezes in force and those ended in the last day.
    List,
    /// End a freeze before its time.
    Lift {
        /// Its id (`frz-…`, as `medic freeze list` shows it).
        id: String,
    },
}

/// A deployed stack's state table, as `medic switch` names it.
#[derive(clap::Args)]
struct StackTable {
    /// The stack's DynamoDB state table (its StateTableName output); AWS credentials and region
    /// as the AWS CLI finds them.
    #[arg(long)]
    table: String,
    /// The stack's InstanceId.
    #[arg(long, default_value = "default")]
    instance: String,
    /// Another DynamoDB endpoint (moto, DynamoDB Local).
    #[arg(long)]
    endpoint_url: Option<String>,
}

impl StackTable {
    async fn store(&self) -> medic_adapters::dynamodb::DynamoDbStore {
        let sdk = medic_adapters::aws::sdk_config(self.endpoint_url.as_deref()).await;
        medic_adapters::dynamodb::DynamoDbStore::new(aws_sdk_dynamodb::Client::new(&sdk), &self.table, &self.instance)
    }
}

#[derive(Subcommand)]
enum SlackCommand {
    /// Press BUTTON on APP's escalation as Slack would, for `medic serve` (which prints this
    /// command with its settings): the thread is read from Slack's Web API at SLACK_API_URL (as
    /// SLACK_TOKEN in SLACK_CHANNEL; the simulator's token and channel when unset), the
    /// block_actions payload is signed with SLACK_SIGNING_SECRET and posted to --to; then the
    /// thread's reply is printed.
    Click {
        /// `namespace/name`, or `name`.
        app: String,
        /// The button's label (`sync`, `hard-refresh`, `acknowledge`: a prefix, case and spaces
        /// ignored) or its action id.
        button: String,
        /// `medic serve`'s Slack interactivity URL.
        #[arg(long, default_value = "http://127.0.0.1:8787/slack/actions")]
        to: String,
        /// The Slack user id who clicks (the allow-list decides what they may do).
        #[arg(long, default_value = LOCAL_SLACK_USER)]
        user: String,
        /// How long to wait for the reply in the thread: 10s, 1m (0 does not wait).
        #[arg(long, default_value = "10s", value_parser = crate::argocd_flags::duration_arg)]
        wait: std::time::Duration,
    },
}

#[derive(Subcommand)]
enum IncidentsCommand {
    /// One app's incidents (open and recently closed) in full, with the evidence of the last decision.
    Show {
        /// `namespace/name`, or `name` when only one namespace has it.
        app: String,
    },
}

#[derive(clap::Args)]
struct ServeArgs {
    #[command(flatten)]
    target: TargetArgs,
    #[command(flatten)]
    budgets: BudgetArgs,
    /// Where ingest listens (POST /v1/events, POST /v1/refresh, GET /healthz). Not 8080, where
    /// `kubectl port-forward svc/argocd-server` usually puts Argo CD.
    #[arg(long, default_value = "127.0.0.1:8787")]
    listen: std::net::SocketAddr,
    /// The shared secret webhooks must present (`Authorization: Bearer ...`); MEDIC_WEBHOOK_SECRET.
    #[arg(long, env = "MEDIC_WEBHOOK_SECRET", hide_env_values = true)]
    webhook_secret: Option<String>,
    /// The key signed `POST /v1/refresh` requests are checked with (HMAC-SHA256, at least 16
    /// characters); MEDIC_REFRESH_SECRET. Without it the refresh route is off.
    #[arg(long, env = "MEDIC_REFRESH_SECRET", hide_env_values = true)]
    refresh_secret: Option<String>,
    /// Time between sweeps: 60s, 5m (a bare number is seconds).
    #[arg(long, default_value = "60s", value_parser = crate::argocd_flags::duration_arg)]
    sweep_every: std::time::Duration,
    /// Stop after this long: 30s, 10m (a bare number is seconds; default: run until interrupted).
    #[arg(long, value_parser = crate::argocd_flags::duration_arg)]
    run_for: Option<std::time::Duration>,
    /// Escalate to a built-in Slack simulator on 127.0.0.1 (its messages are summarised at the
    /// end). Without it, escalations go to real Slack when SLACK_TOKEN and SLACK_CHANNEL are set
    /// (SLACK_API_URL overrides the Web API address), else to log lines. With Slack, button
    /// clicks are taken on POST /slack/actions (SLACK_SIGNING_SECRET, SLACK_ALLOWED_USERS as on
    /// Lambda; with --slack-simulate a local-only secret and allow-list are made and printed).
    #[arg(long)]
    slack_simulate: bool,
}

/// What the binaries run: `medic`'s, and `argocd-medic`'s when the argocd CLI runs it as `argocd
/// medic` (Argo CD >= 3.1's plugins: `argocd medic ARGS` execs `argocd-medic ARGS` found on the
/// PATH; cmd/argocd/commands/plugin.go at v3.5.1).
pub fn main() -> ExitCode {
    let args = std::env::args_os().collect();
    let opts = medic_adapters::config::Settings::from_env()
        .for_reader(medic_adapters::settings::Reader::Cli)
        .text(&medic_adapters::settings::ARGOCD_OPTS);
    let args = match crate::argocd_flags::with_argocd_opts(args, opts.as_deref()) {
        Ok((args, notes)) => {
            for note in notes {
                crate::note!("{note}");
            }
            args
        }
        Err(e) => {
            crate::note!("medic: error: {e}");
            return ExitCode::from(crate::exit::USAGE);
        }
    };
    let cli = Cli::parse_as_invoked(args);
    init_logs(cli.argo.loglevel.as_deref());
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            crate::note!("medic: error: {e:#}");
            ExitCode::from(crate::exit::of(&e))
        }
    }
}

/// Logs go to stderr so stdout stays the report: warnings by default; `--loglevel` (argocd's
/// flag) over `MEDIC_LOG` (which also takes per-target directives) says more or less.
fn init_logs(level: Option<&str>) {
    let filter = match level {
        Some(level) => tracing_subscriber::EnvFilter::new(level),
        None => tracing_subscriber::EnvFilter::try_from_env("MEDIC_LOG").unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(filter)
        .with_target(false)
        // Its own report of a failed write is an `eprintln!`, which panics on a closed stderr.
        .log_internal_errors(false)
        .init();
}

impl Cli {
    /// Parses `args`; run as `argocd-medic`, the help and usage say `argocd medic`, which is how
    /// argocd's users call it.
    fn parse_as_invoked(args: Vec<std::ffi::OsString>) -> Self {
        use clap::{CommandFactory, FromArgMatches};
        let invoked = args.first().and_then(|a| std::path::Path::new(a).file_name()).and_then(|n| n.to_str()).unwrap_or("medic");
        let name = if invoked.starts_with(PLUGIN_BINARY) { "argocd medic" } else { "medic" };
        let matches = Self::command().bin_name(name).get_matches_from(args);
        Self::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }
}

/// The name under which Argo CD's CLI (>= 3.1) finds `medic` as its plugin `argocd medic`.
pub const PLUGIN_BINARY: &str = "argocd-medic";

fn run(cli: Cli) -> Result<ExitCode> {
    let argo = cli.argo;
    match cli.command {
        Command::Decide { app, trigger, now, history, config, output } => {
            let trigger: Trigger = trigger.parse()?;
            let given = now.is_some();
            let now = parse_now(now.as_deref())?;
            let history = history.as_deref().map(input::read_history).transpose()?.unwrap_or_default();
            let config = config.as_deref().map(input::read_config).transpose()?.unwrap_or_default();
            let apps = input::read_apps(&app)?;
            if given {
                warn_if_before(&apps, now);
            } else {
                warn_if_exported(&apps, now);
            }
            decide_all(apps, &trigger, &history, now, config, output)
        }
        Command::Check(args) => {
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
            let output = args.output;
            let findings = runtime.block_on(check(args, &argo))?;
            let text = match output {
                CheckOutput::Json => document(&findings, Document::Json)?,
                CheckOutput::Yaml => document(&findings, Document::Yaml)?,
                CheckOutput::Jsonl => json_lines(&findings)?,
                CheckOutput::Text => crate::check::render(&findings),
            };
            emit(&text)?;
            let failed = findings.iter().any(|f| f.status == crate::check::Status::Fail);
            Ok(if failed { ExitCode::from(crate::exit::PARTIAL) } else { ExitCode::SUCCESS })
        }
        Command::Slack { command: SlackCommand::Click { app, button, to, user, wait } } => {
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
            runtime.block_on(slack_click(app, button, to, user, wait))
        }
        Command::Version { client } => {
            emit(&format!("medic: {}\n", env!("CARGO_PKG_VERSION")))?;
            let configured = argo.server.is_some() || std::env::var_os("ARGOCD_SERVER").is_some();
            if client || !configured {
                return Ok(ExitCode::SUCCESS);
            }
            let settings = argo
                .settings()
                .context("reading the Argo CD settings (--server and --auth-token, or ARGOCD_SERVER and ARGOCD_AUTH_TOKEN)")?;
            let url = settings.base_url().map(|u| u.to_string()).unwrap_or_else(|_| settings.server.clone());
            let plaintext = settings.plaintext;
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
            let client = medic_adapters::argocd::HttpArgoClient::new(settings).context("building the Argo CD client")?;
            match runtime.block_on(client.version_info()) {
                Ok(v) => {
                    emit(&format!("argocd-server: {} ({url})\n", v.version))?;
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => Err(crate::check::Unreached::new(&url, plaintext, e).into()),
            }
        }
        Command::Completions { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(shell, &mut Cli::command(), "medic", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Catalogue { output } => {
            let text = match output {
                ReferenceOutput::Json => document(CATALOGUE, Document::Json)?,
                ReferenceOutput::Yaml => document(CATALOGUE, Document::Yaml)?,
                ReferenceOutput::Jsonl => json_lines(CATALOGUE)?,
                ReferenceOutput::Markdown => render::catalogue_markdown(),
                ReferenceOutput::Table => render::catalogue_table(),
            };
            emit(&text)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Map { output } => {
            let text = match output {
                ReferenceOutput::Json => document(&render::map_values(), Document::Json)?,
                ReferenceOutput::Yaml => document(&render::map_values(), Document::Yaml)?,
                ReferenceOutput::Jsonl => json_lines(render::map_values())?,
                ReferenceOutput::Markdown => medic_core::app_map::render_markdown(),
                ReferenceOutput::Table => render::map_table(),
            };
            emit(&text)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Sweep(args) => {
            let output = args.output;
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
            runtime.block_on(crate::sweep_cmd::run(crate::sweep_cmd::SweepCommand {
                target: args.target.into_target(&argo)?,
                projects: args.projects,
                selector: args.selector,
                concurrency: args.concurrency,
                rates: args.budgets.rates(),
                passes: args.passes,
                output,
            }))
        }
        Command::Sim { fleet: FleetArgs { apps, outcomes, synthetic, stale }, port } => {
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
            runtime.block_on(async {
                let target = crate::sweep_cmd::Target {
                    simulate: true,
                    apps,
                    outcomes,
                    synthetic,
                    stale,
                    dry_run: false,
                    state: None,
                    config: None,
                    history: medic_core::record::DEFAULT_RETENTION,
                    argo: crate::argocd_flags::ArgoFlags::default(),
                };
                let stop = crate::serve::stop_signal();
                let sim = crate::sweep_cmd::start_simulator_on(&target, port).await?;
                let token = medic_sim::SimConfig::default().tokens[0].token.clone();
                // Shell lines, to paste into the shell another medic runs in.
                emit(&format!("export ARGOCD_SERVER={}\nexport ARGOCD_AUTH_TOKEN={token}\n", sim.base_url()))?;
                crate::note!("medic: Argo CD simulator at {} (plain HTTP); Ctrl-C stops it", sim.base_url());
                stop.await;
                sim.shutdown().await;
                Ok::<_, anyhow::Error>(ExitCode::SUCCESS)
            })
        }
        Command::Serve(args) => {
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
            runtime.block_on(serve(args, &argo))
        }
        Command::Switch(args) => {
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
            runtime.block_on(switch(args))
        }
        Command::Freeze(args) => {
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
            runtime.block_on(freeze(args, &argo))
        }
        Command::Incidents(args) => {
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
            runtime.block_on(incidents(args))
        }
        Command::Report(args) => {
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
            runtime.block_on(report(args, &argo))
        }
        Command::Replay(args) => {
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
            runtime.block_on(replay(args))
        }
        Command::Demo { events, output } => {
            let scenarios = scenario::load_all(&events).with_context(|| {
                // The scenarios are the repository's test fixtures, not compiled in (the sample
                // fleet is: `medic sweep --simulate` works anywhere).
                let hint = if events.exists() {
                    String::new()
                } else {
                    " (run it from the repository's root, or give --events <repository>/events)".into()
                };
                format!("loading scenarios from {}{hint}", events.display())
            })?;
            let mut rows = Vec::new();
            for s in &scenarios {
                let d = DecisionPolicy::new(s.config.clone())
                    .decide(&s.app, &s.file.trigger, &s.file.history, s.now)
                    .with_context(|| format!("scenario {}", s.name))?;
                rows.push((s.name.clone(), d));
            }
            print_decisions(&rows, output)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn parse_now(now: Option<&str>) -> Result<DateTime<Utc>> {
    match now {
        None => Ok(Utc::now()),
        Some(s) => DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&Utc))
            .with_context(|| format!("--now `{s}` is not an RFC 3339 time such as 2026-11-01T12:30:00Z")),
    }
}

/// Without `--now`, an app is judged as of this moment: right for an app just read from Argo CD,
/// wrong for an exported file, whose apps then all look stale (a month-old export came out as 28
/// of 33 `stale-reconcile`, with no word why). Says so when the newest time an app carries is
/// more than a day old, and which `--now` would judge it as of its export.
fn warn_if_exported(apps: &[input::LoadedApp], now: DateTime<Utc>) {
    let Some((source, at)) = apps.iter().filter_map(|l| newest_time(&l.app).map(|t| (&l.source, t))).min_by_key(|(_, t)| *t) else {
        return;
    };
    if now - at > chrono::TimeDelta::days(1) {
        crate::note!(
            "medic: warning: {source} shows nothing newer than {} ({} days ago) and no --now was given: it is judged as of now, so it may look stale; to judge an export as of when it was taken, give --now {}",
            at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            (now - at).num_days(),
            at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        );
    }
}

/// The newest time an app carries: its reconcile, health change, operation and conditions.
fn newest_time(a: &medic_core::Application) -> Option<DateTime<Utc>> {
    let s = &a.status;
    let operation = s.operation_state.as_deref().map(|o| [o.started_at, o.finished_at]).unwrap_or_default();
    [s.reconciled_at, s.health.as_ref().and_then(|h| h.last_transition_time)]
        .into_iter()
        .chain(operation)
        .chain(s.conditions.iter().map(|c| c.last_transition_time))
        .flatten()
        .max()
}

/// A `--now` before the app's own newest time judges a moment the app had not reached (the
/// newcomer review gave `1970-01-01T00:00:00Z` and got a confident `wait`): said, not refused.
fn warn_if_before(apps: &[input::LoadedApp], now: DateTime<Utc>) {
    if let Some((source, at)) =
        apps.iter().filter_map(|l| newest_time(&l.app).map(|t| (&l.source, t))).filter(|(_, t)| *t > now).max_by_key(|(_, t)| *t)
    {
        crate::note!(
            "medic: warning: --now {} is before {source}'s own time {}: it is judged as of a moment it had not reached",
            now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        );
    }
}

fn decide_all(
    apps: Vec<input::LoadedApp>,
    trigger: &Trigger,
    history: &History,
    now: DateTime<Utc>,
    config: PolicyConfig,
    output: DecisionOutput,
) -> Result<ExitCode> {
    let policy = DecisionPolicy::new(config);
    let mut rows = Vec::new();
    let mut failed = 0;
    for loaded in apps {
        match policy.decide(&loaded.app, trigger, history, now) {
            Ok(d) => rows.push((d.app.to_string(), d)),
            Err(e) => {
                failed += 1;
                crate::note!("medic: {}: {e}", loaded.source);
            }
        }
    }
    print_decisions(&rows, output)?;
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(crate::exit::PARTIAL) })
}

fn print_decisions(rows: &[(String, Decision)], output: DecisionOutput) -> Result<()> {
    let values = || rows.iter().map(|(_, d)| render::decision_value(d)).collect::<serde_json::Result<Vec<_>>>();
    let text = match output {
        // One app: its decision on one line, as before lists were taken; several: one array, a
        // decision a line.
        DecisionOutput::Json => match values()?.as_slice() {
            [one] => serde_json::to_string(one)? + "\n",
            many => format!("[{}]\n", json_lines(many)?.trim_end().replace('\n', ",\n")),
        },
        DecisionOutput::Jsonl => json_lines(values()?)?,
        DecisionOutput::Yaml => match values()?.as_slice() {
            [one] => document(one, Document::Yaml)?,
            many => document(many, Document::Yaml)?,
        },
        DecisionOutput::Text => rows.iter().map(|(_, d)| render::decision_text(d)).collect::<Vec<_>>().join("\n"),
        DecisionOutput::Table => render::decisions_table(&rows.iter().map(|(l, d)| (l.clone(), d)).collect::<Vec<_>>()),
        DecisionOutput::Wide => render::decisions_wide(&rows.iter().map(|(l, d)| (l.clone(), d)).collect::<Vec<_>>()),
        DecisionOutput::Name => rows.iter().map(|(l, _)| format!("{l}\n")).collect(),
    };
    emit(&text)
}

fn emit(text: &str) -> Result<()> {
    crate::emit(text).context("writing to stdout")
}

async fn serve(args: ServeArgs, argo: &crate::argocd_flags::ArgoFlags) -> Result<ExitCode> {
    let rates = args.budgets.rates();
    let target = args.target.into_target(argo)?;
    let dry_run = target.dry_run;
    // Subscribed before anything announces readiness (see `stop_signal`).
    let stop = crate::serve::stop_signal();
    let crate::sweep_cmd::Connection { client, sim, policy, store, state_path } =
        crate::sweep_cmd::connect(&target, crate::sweep_cmd::Unanswered::Continue).await?;
    let secret = match args.webhook_secret {
        Some(s) if s.len() >= 16 => s,
        Some(_) => anyhow::bail!("the webhook secret must be at least 16 characters"),
        None => {
            // No secret configured: make one for this run and say it, rather than accept anyone.
            let s = format!("{:032x}", rand::random::<u128>());
            crate::note!("medic: no MEDIC_WEBHOOK_SECRET set; this run accepts `Authorization: Bearer {s}`");
            s
        }
    };
    if args.refresh_secret.as_ref().is_some_and(|s| s.len() < 16) {
        anyhow::bail!("the refresh secret must be at least 16 characters");
    }
    let store = std::sync::Arc::new(store);
    let (escalator, slack_sim) = local_escalator(args.slack_simulate, &policy.instance_id, std::sync::Arc::clone(&store)).await?;
    let (slack_actions, made_secret) = match &escalator {
        medic_slack::AnyEscalator::Slack(_) => slack_actions_options(args.slack_simulate)?,
        medic_slack::AnyEscalator::Log(_) => (None, None),
    };
    let clicks = slack_actions.is_some();
    if let Some(note) = policy.trust.unapprovable_note(clicks) {
        crate::note!("medic: {note}");
    }
    let served = crate::serve::start(
        client,
        crate::serve::ServeOptions {
            escalator: std::sync::Arc::new(escalator),
            listen: args.listen,
            webhook_secret: secret,
            refresh_secret: args.refresh_secret,
            sweep_every: args.sweep_every.max(std::time::Duration::from_secs(1)),
            dry_run,
            policy,
            rates,
            store,
            slack_actions,
            http: crate::serve::HttpLimits::default(),
        },
    )
    .await?;
    if clicks {
        let to = format!("http://{}{}", served.addr, crate::serve::SLACK_ACTIONS_PATH);
        crate::note!("medic: Slack button clicks on {to}");
        if let Some(slack) = &slack_sim {
            // The whole line, so pressing a button needs nothing from the source.
            let secret = made_secret.as_deref().unwrap_or("\"$SLACK_SIGNING_SECRET\"");
            crate::note!(
                "medic: press a button: SLACK_API_URL={} SLACK_SIGNING_SECRET={secret} medic slack click APP BUTTON --to {to}",
                slack.api_url()
            );
        }
    }
    crate::note!("medic: ingest listening on http://{}/v1/events and /v1/refresh", served.addr);
    match args.run_for {
        Some(d) => tokio::time::sleep(d).await,
        None => stop.await,
    }
    let handled = served.handled.load(std::sync::atomic::Ordering::Relaxed);
    // Dead letters stay in the state file (with --simulate and no --state, in memory).
    let dead = served.queue.dead_letters().map(|d| d.len()).unwrap_or_default();
    let escalator = std::sync::Arc::clone(&served.escalator);
    let queue = std::sync::Arc::clone(&served.queue);
    if !served.shutdown().await {
        crate::note!(
            "medic: the worker or the sweeper did not finish within {}s of the stop and was cut off; what it held stays queued in the state file",
            crate::serve::SHUTDOWN_GRACE.as_secs()
        );
    }
    // What is still queued stays in the state file for the next start (an in-memory state, with
    // --simulate and no --state, keeps nothing).
    match (queue.len(), &state_path) {
        (Ok(0), _) => {}
        (Ok(n), Some(path)) => crate::note!("medic: {n} queued messages stay in {} for the next start", path.display()),
        (Ok(n), None) => crate::note!("medic: {n} queued messages dropped: the simulation's state is in memory (give --state to keep it)"),
        (Err(e), _) => crate::note!("medic: warning: the queue in the state file cannot be read: {}", e.what()),
    }
    let escalations = match (&*escalator, &slack_sim) {
        (medic_slack::AnyEscalator::Log(log), _) => log.escalations().len(),
        (_, Some(slack)) => slack.parents(medic_sim::SLACK_CHANNEL).len(),
        _ => 0,
    };
    let to = if slack_sim.is_some() { " (Slack threads in the simulator)" } else { "" };
    crate::note!("medic: handled {handled} messages, {escalations} escalations{to}, {dead} dead letters");
    if let Some(slack) = slack_sim {
        for m in slack.parents(medic_sim::SLACK_CHANNEL) {
            crate::note!("medic: slack thread: {}", m.text.lines().next().unwrap_or_default());
        }
        slack.shutdown().await;
    }
    if let Some(sim) = sim {
        crate::note!("medic: Argo CD calls {}", crate::sweep_cmd::calls(&Default::default(), &sim.counts()));
        sim.shutdown().await;
    }
    Ok(ExitCode::SUCCESS)
}

/// A count flag that 0 would make meaningless (a sweep of no passes, no app at a time).
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("`{text}` is not a whole number: {e}")),
    }
}

/// A trigger Argo Medic knows: a bogus one was decided as if it were real (newcomer review row
/// 24), while ingest refuses it.
fn known_trigger(text: &str) -> Result<String, String> {
    let own = [Trigger::SWEEP, Trigger::RECOVERY, Trigger::MANUAL];
    if Trigger::NOTIFICATIONS.contains(&text) || own.contains(&text) {
        Ok(text.to_owned())
    } else {
        let known: Vec<&str> = Trigger::NOTIFICATIONS.iter().chain(&own).copied().collect();
        Err(format!("not a trigger Argo Medic knows; one of {}", known.join(", ")))
    }
}

/// `medic check`: the flags as a [`crate::check_stack::Preflight`].
async fn check(args: CheckArgs, argo: &crate::argocd_flags::ArgoFlags) -> Result<Vec<crate::check::Finding>> {
    let config_projects = args.config.as_deref().map(input::read_config).transpose()?.map(|c| c.projects);
    let preflight = crate::check_stack::Preflight {
        stack: args.stack,
        endpoint_url: args.endpoint_url,
        projects: if args.projects.is_empty() { config_projects } else { Some(args.projects) },
        no_sync: args.no_sync,
        route: args.route,
        expiry_warning: std::time::Duration::from_secs(args.warn_days * 86_400),
        now: chrono::Utc::now(),
    };
    crate::check_stack::preflight(preflight, || {
        argo.settings().context("reading the Argo CD settings (--server and --auth-token, or ARGOCD_SERVER and ARGOCD_AUTH_TOKEN)")
    })
    .await
}

async fn switch(args: SwitchArgs) -> Result<ExitCode> {
    use medic_core::switch::{Mode, SwitchStore};
    let mode = args.mode.as_deref().map(str::parse::<Mode>).transpose()?;
    let store = args.stack.store().await;
    if let Some(mode) = mode {
        store.write_mode(mode, &operator("switch")).await?;
        crate::note!("switched to {mode}; workers see it within 30 seconds");
    }
    match store.switch_record().await? {
        Some(r) => println!("{} (set by {} at {})", r.mode, r.set_by, r.set_at),
        None => println!("act (never set: the stack's DryRun and KillSwitch parameters decide)"),
    }
    Ok(ExitCode::SUCCESS)
}

/// Who is acting, for the audit: `medic <what> (<$USER>)`.
fn operator(what: &str) -> String {
    std::env::var("USER").ok().filter(|u| !u.is_empty()).map_or_else(|| format!("medic {what}"), |u| format!("medic {what} ({u})"))
}

async fn freeze(args: FreezeArgs, argo: &crate::argocd_flags::ArgoFlags) -> Result<ExitCode> {
    use medic_core::freeze::{Freeze, FreezeScope};
    use medic_core::switch::SwitchStore;
    let now = chrono::Utc::now();
    let stack = args.stack()?;
    match args.command {
        Some(FreezeCommand::List) => {
            let freezes = stack.store().await.read_freezes().await?;
            print!("{}", crate::render::freezes_table(&freezes, now));
            argo_cd_sync_windows(argo).await
        }
        Some(FreezeCommand::Lift { id }) => {
            if !stack.store().await.lift_freeze(&id).await? {
                anyhow::bail!("no freeze {id} (`medic freeze list` shows them)");
            }
            crate::note!("lifted {id}; workers see it within 30 seconds");
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let scope = match (args.app, args.project, args.selector) {
                (Some(app), None, None) => {
                    let (namespace, name) = app.split_once('/').unwrap_or(("argocd", app.as_str()));
                    FreezeScope::App(medic_core::AppId::new(namespace, name))
                }
                (None, Some(project), None) => FreezeScope::Project(project),
                (None, None, Some(selector)) => FreezeScope::Selector(selector),
                _ => anyhow::bail!("name what to freeze: an APP, --project P or --selector S"),
            };
            let length = args.length.as_deref().context("say how long: --for 4h")?;
            let length = chrono::TimeDelta::from_std(crate::incidents::parse_duration(length)?).context("a duration that long")?;
            if length <= chrono::TimeDelta::zero() || length > chrono::TimeDelta::days(14) {
                anyhow::bail!("a freeze lasts more than nothing and at most 14 days; set a new one to keep it longer");
            }
            let reason = args.reason.filter(|r| !r.trim().is_empty()).context("say why: --reason \"…\" (people will ask)")?;
            let freeze = Freeze::new(scope, now, length, &reason, &operator("freeze"));
            stack.store().await.write_freeze(&freeze).await?;
            crate::note!("{}; workers see it within 30 seconds. It stops Argo Medic, not Argo CD's auto-sync.", freeze.describe());
            println!("{}", freeze.id);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `medic freeze list`'s second half: Argo CD's own sync windows, which hold Argo CD's syncs
/// (and, without `manualSync`, Argo Medic's too). Read with the operator's Argo CD token when
/// one is given: Argo Medic's own token may not read projects, by design. The freezes are printed
/// first whatever happens here; a failed read of the windows exits as a failed sweep would
/// (3: Argo CD unreachable, 4: the token refused).
async fn argo_cd_sync_windows(argo: &crate::argocd_flags::ArgoFlags) -> Result<ExitCode> {
    if !argo.server_given() {
        crate::note!(
            "Argo CD's own sync windows are not shown: give --server and --auth-token (or ARGOCD_SERVER and ARGOCD_AUTH_TOKEN), with a token that may get projects (role:readonly may)"
        );
        return Ok(ExitCode::SUCCESS);
    }
    let settings =
        argo.settings().context("reading the Argo CD settings (--server and --auth-token, or ARGOCD_SERVER and ARGOCD_AUTH_TOKEN)")?;
    let client = medic_adapters::argocd::HttpArgoClient::new(settings).context("building the Argo CD client")?;
    match client.project_sync_windows().await {
        Ok(found) => {
            println!();
            print!("{}", crate::render::sync_windows_table(&found.projects));
            if found.visible_projects == 0 {
                crate::note!(
                    "this token may get no AppProject, so Argo CD's sync windows are unknown: use a token with `projects, get` (role:readonly has it)"
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            crate::note!("medic: could not read Argo CD's sync windows: {e}");
            Ok(ExitCode::from(crate::exit::of(&anyhow::Error::from(e))))
        }
    }
}

async fn report(args: ReportArgs, argo: &crate::argocd_flags::ArgoFlags) -> Result<ExitCode> {
    let policy: medic_core::PolicyConfig = args.config.as_deref().map(input::read_config).transpose()?.unwrap_or_default();
    let (since, records) = args.recorded.read().await?;
    let now = if argo.server_given() {
        let settings =
            argo.settings().context("reading the Argo CD settings (--server and --auth-token, or ARGOCD_SERVER and ARGOCD_AUTH_TOKEN)")?;
        let client = medic_adapters::argocd::HttpArgoClient::new(settings).context("building the Argo CD client")?;
        crate::report::apps_now(&client, &records).await?
    } else {
        crate::note!(
            "medic: the apps' state now is not read (give --server and --auth-token, or ARGOCD_SERVER and ARGOCD_AUTH_TOKEN): what no later record shows is UNSEEN"
        );
        Default::default()
    };
    let report = medic_core::report::report_with_now(&records, since, chrono::Duration::seconds(policy.settle_secs), &now);
    let text = match args.output {
        ReportOutput::Table => crate::report::table(&report, Utc::now()),
        ReportOutput::Json => document(&report, Document::Json)?,
    };
    emit(&text)?;
    Ok(ExitCode::SUCCESS)
}

async fn replay(args: ReplayArgs) -> Result<ExitCode> {
    let policy = medic_core::DecisionPolicy::new(args.config.as_deref().map(input::read_config).transpose()?.unwrap_or_default());
    let (_, records) = args.recorded.read().await?;
    let replay = medic_core::replay::replay(&records, &policy);
    let text = match args.output {
        ReportOutput::Table => crate::report::replay_table(&replay),
        ReportOutput::Json => document(&replay, Document::Json)?,
    };
    emit(&text)?;
    Ok(ExitCode::SUCCESS)
}

async fn incidents(args: IncidentsArgs) -> Result<ExitCode> {
    use crate::incidents::{self, Query};
    for mode in &args.modes {
        mode.parse::<medic_core::FailureMode>()
            .map_err(|_| anyhow::anyhow!("--mode `{mode}` is not a failure mode (`medic catalogue` lists them)"))?;
    }
    let show = args.command.as_ref().map(|IncidentsCommand::Show { app }| app.clone());
    let query = Query {
        closed: args.closed,
        projects: args.projects,
        modes: args.modes,
        older_than: args.older_than.as_deref().map(incidents::parse_duration).transpose()?,
        app: show.clone(),
        policy: args.config.as_deref().map(input::read_config).transpose()?.unwrap_or_default(),
        slack_url: args.slack_url.filter(|u| !u.is_empty()),
    };
    let now = Utc::now();
    let views = match &args.table {
        Some(table) => {
            let sdk = medic_adapters::aws::sdk_config(args.endpoint_url.as_deref()).await;
            let client = aws_sdk_dynamodb::Client::new(&sdk);
            let store = medic_adapters::dynamodb::DynamoDbStore::new(client.clone(), table, &args.instance);
            let slack = medic_slack::DynamoDbEscalationStore::new(client, table, &args.instance);
            // The scopes frozen now, said first (stderr: the listing's own format stays as it was).
            let freezes = medic_core::switch::SwitchStore::read_freezes(&store).await?;
            for freeze in freezes.iter().filter(|f| f.active(now)) {
                crate::note!("medic: {} ({})", freeze.describe(), freeze.id);
            }
            incidents::collect(&store, &slack, &query, now).await?
        }
        None => {
            let path = args.state.unwrap_or_else(crate::sweep_cmd::default_state_path);
            if !path.exists() {
                anyhow::bail!(
                    "no state file at {}: `medic sweep` and `medic serve` create it (or name one with --state); with --simulate they keep state in memory unless given --state",
                    path.display()
                );
            }
            let store = crate::store::SqliteIncidentStore::open(&path)?;
            incidents::collect(&store, &store, &query, now).await?
        }
    };
    if let (Some(app), true) = (&show, views.is_empty()) {
        // As `kubectl get` of a missing object: said on stderr, and a status a script can test.
        let (open, hint) = if args.closed { ("", "") } else { (" open", " (--closed also shows those closed in the last 7 days)") };
        crate::note!("medic: no{open} incidents of {app}{hint}");
        return Ok(ExitCode::from(crate::exit::PARTIAL));
    }
    let text = match (args.output, &show) {
        (IncidentsOutput::Json, _) => document(&views, Document::Json)?,
        (IncidentsOutput::Yaml, _) => document(&views, Document::Yaml)?,
        (IncidentsOutput::Jsonl, _) => incidents::json_lines(&views)?,
        (IncidentsOutput::Name, _) => views.iter().map(|v| format!("{}\n", v.app)).collect(),
        (IncidentsOutput::Text, _) | (IncidentsOutput::Table, Some(_)) => {
            if views.is_empty() {
                format!("no incidents{}\n", show.map(|a| format!(" of {a}")).unwrap_or_default())
            } else {
                views.iter().map(|v| incidents::details(v, now)).collect::<Vec<_>>().join("\n")
            }
        }
        (IncidentsOutput::Table, None) => incidents::table(&views, now),
    };
    emit(&text)?;
    Ok(ExitCode::SUCCESS)
}

async fn slack_click(app: String, button: String, to: String, user: String, wait: std::time::Duration) -> Result<ExitCode> {
    use medic_adapters::settings::{SLACK_API_URL, SLACK_CHANNEL, SLACK_SIGNING_SECRET, SLACK_TOKEN};
    let settings = medic_adapters::config::Settings::from_env().for_reader(medic_adapters::settings::Reader::Cli);
    let env = |var| settings.text(var);
    let click = crate::slack_click::Click {
        app,
        button,
        slack_api: env(&SLACK_API_URL).context("SLACK_API_URL is not set: `medic serve --slack-simulate` prints the simulator's")?,
        token: env(&SLACK_TOKEN).unwrap_or_else(|| medic_sim::SLACK_BOT_TOKEN.to_owned()),
        channel: env(&SLACK_CHANNEL).unwrap_or_else(|| medic_sim::SLACK_CHANNEL.to_owned()),
        signing_secret: env(&SLACK_SIGNING_SECRET)
            .context("SLACK_SIGNING_SECRET is not set: `medic serve` prints the one it checks clicks with")?,
        user,
        to,
        wait,
    };
    let (status, body, reply) = crate::slack_click::click(&click).await?;
    emit(&format!("{status} {body}\n"))?;
    if let Some(reply) = reply {
        emit(&format!("reply in the thread: {reply}\n"))?;
    }
    Ok(if status == 200 { ExitCode::SUCCESS } else { ExitCode::from(crate::exit::PARTIAL) })
}

/// The Slack user the local-only allow-list of `--slack-simulate` admits (on every project).
const LOCAL_SLACK_USER: &str = "ULOCALUSER";

/// `/slack/actions`' signing secret and allow-list: SLACK_SIGNING_SECRET and SLACK_ALLOWED_USERS
/// as on Lambda; with --slack-simulate and no secret set, a secret made for this run and an
/// allow-list of the local user, both printed and good for this process only.
/// Also returns the secret made for this run, if one was.
fn slack_actions_options(simulate: bool) -> Result<(Option<crate::serve::SlackActionsOptions>, Option<String>)> {
    use medic_adapters::settings::{SLACK_ALLOWED_USERS, SLACK_SIGNING_SECRET};
    use medic_slack_actions::{AllowList, SigningSecret};
    let settings = medic_adapters::config::Settings::from_env().for_reader(medic_adapters::settings::Reader::Cli);
    let env = |var| settings.text(var);
    let allow = |default: Option<String>| -> Result<AllowList> {
        match env(&SLACK_ALLOWED_USERS).or(default) {
            Some(json) => Ok(AllowList::from_json(&json)?),
            None => {
                crate::note!("medic: SLACK_ALLOWED_USERS is not set: every click is refused (unauthorised)");
                Ok(AllowList::default())
            }
        }
    };
    match env(&SLACK_SIGNING_SECRET) {
        Some(secret) => {
            Ok((Some(crate::serve::SlackActionsOptions { secret: SigningSecret::from_secret(&secret)?, allow: allow(None)? }), None))
        }
        None if simulate => {
            let secret = format!("{:032x}", rand::random::<u128>());
            let default = format!(r#"{{"*": ["{LOCAL_SLACK_USER}"]}}"#);
            let allow = allow(Some(default))?;
            crate::note!(
                "medic: LOCAL ONLY: Slack clicks must be signed with the signing secret {secret} (made for this run; SLACK_SIGNING_SECRET overrides it)"
            );
            if env(&SLACK_ALLOWED_USERS).is_none() {
                crate::note!("medic: LOCAL ONLY: user {LOCAL_SLACK_USER} may click on every project (SLACK_ALLOWED_USERS overrides it)");
            }
            Ok((Some(crate::serve::SlackActionsOptions { secret: SigningSecret::new(secret.clone(), None), allow }), Some(secret)))
        }
        None => {
            crate::note!("medic: SLACK_SIGNING_SECRET is not set: the escalations' buttons do nothing here (/slack/actions answers 404)");
            Ok((None, None))
        }
    }
}

/// Slack (simulated, or real when SLACK_TOKEN and SLACK_CHANNEL are set) or the log.
async fn local_escalator(
    simulate: bool,
    instance: &str,
    store: std::sync::Arc<crate::store::SqliteIncidentStore>,
) -> Result<(crate::serve::LocalEscalator, Option<medic_sim::SlackSim>)> {
    use medic_adapters::settings::{SLACK_API_URL, SLACK_CHANNEL, SLACK_TOKEN};
    use medic_slack::{AnyEscalator, SlackEscalator, SlackSettings};
    let settings = medic_adapters::config::Settings::from_env().for_reader(medic_adapters::settings::Reader::Cli);
    let env = |var| settings.text(var);
    let (settings, token, sim) = if simulate {
        let sim = medic_sim::SlackSim::start(medic_sim::SlackSimConfig::default()).await.context("starting the Slack simulator")?;
        let mut settings = SlackSettings::new(medic_sim::SLACK_CHANNEL, instance);
        settings.api_url = sim.api_url();
        crate::note!("medic: escalating to the Slack simulator at {}", sim.api_url());
        (settings, medic_sim::SLACK_BOT_TOKEN.to_owned(), Some(sim))
    } else if let (Some(token), Some(channel)) = (env(&SLACK_TOKEN), env(&SLACK_CHANNEL)) {
        let mut settings = SlackSettings::new(channel, instance);
        if let Some(url) = env(&SLACK_API_URL) {
            settings.api_url = url;
        }
        (settings, token, None)
    } else {
        return Ok((AnyEscalator::Log(medic_adapters::memory::LogEscalator::default()), None));
    };
    let slack = SlackEscalator::new(settings, token, store).context("configuring Slack")?;
    Ok((AnyEscalator::Slack(Box::new(slack)), sim))
}

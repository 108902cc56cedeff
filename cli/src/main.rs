//! `medic`: Argo Medic on the command line.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use clap::{Parser, Subcommand, ValueEnum};
use medic::{input, render, scenario};
use medic_core::{CATALOGUE, Decision, DecisionPolicy, History, PolicyConfig, Trigger};

#[derive(Parser)]
#[command(name = "medic", version, about = "Keeps Argo CD Applications healthy: decide, remediate, escalate.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum Output {
    /// One JSON object per line.
    Json,
    /// A block per decision, for humans.
    Text,
    /// One row per decision.
    Table,
    /// A Markdown table (catalogue only; decisions print as a table).
    Markdown,
}

#[derive(Subcommand)]
enum Command {
    /// Decide what to do about Applications (as `GET /api/v1/applications/{name}` returns them).
    Decide {
        /// An Application JSON file, a list response `{"items": [...]}`, a directory of them, or `-` for stdin.
        #[arg(long)]
        app: String,
        /// What prompted the look (a notification trigger name, `sweep` or `manual`).
        #[arg(long, default_value = Trigger::MANUAL)]
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
        output: Output,
    },
    /// Print the failure-mode catalogue.
    Catalogue {
        #[arg(short = 'o', long, value_enum, default_value = "table")]
        output: Output,
    },
    /// Decide every sample scenario under events/ and print the decisions as a table.
    Demo {
        /// The events directory holding apps/ and scenarios/.
        #[arg(long, default_value = "events")]
        events: PathBuf,
        #[arg(short = 'o', long, value_enum, default_value = "table")]
        output: Output,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("medic: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Decide { app, trigger, now, history, config, output } => {
            let trigger: Trigger = trigger.parse()?;
            let now = parse_now(now.as_deref())?;
            let history = history.as_deref().map(input::read_history).transpose()?.unwrap_or_default();
            let config = config.as_deref().map(input::read_config).transpose()?.unwrap_or_default();
            let apps = input::read_apps(&app)?;
            decide_all(apps, &trigger, &history, now, config, output)
        }
        Command::Catalogue { output } => {
            let text = match output {
                Output::Json => CATALOGUE.iter().map(|e| serde_json::to_string(e).map(|s| s + "\n")).collect::<Result<String, _>>()?,
                Output::Markdown => render::catalogue_markdown(),
                Output::Table | Output::Text => render::catalogue_table(),
            };
            emit(&text)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo { events, output } => {
            let scenarios = scenario::load_all(&events).with_context(|| format!("loading scenarios from {}", events.display()))?;
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

fn decide_all(
    apps: Vec<input::LoadedApp>,
    trigger: &Trigger,
    history: &History,
    now: DateTime<Utc>,
    config: PolicyConfig,
    output: Output,
) -> Result<ExitCode> {
    let policy = DecisionPolicy::new(config);
    let mut rows = Vec::new();
    let mut failed = 0;
    for loaded in apps {
        match policy.decide(&loaded.app, trigger, history, now) {
            Ok(d) => rows.push((d.app.clone(), d)),
            Err(e) => {
                failed += 1;
                eprintln!("medic: {}: {e}", loaded.source);
            }
        }
    }
    print_decisions(&rows, output)?;
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn print_decisions(rows: &[(String, Decision)], output: Output) -> Result<()> {
    let text = match output {
        Output::Json => rows.iter().map(|(_, d)| serde_json::to_string(d).map(|s| s + "\n")).collect::<Result<String, _>>()?,
        Output::Text => rows.iter().map(|(_, d)| render::decision_text(d)).collect::<Vec<_>>().join("\n"),
        Output::Table | Output::Markdown => render::decisions_table(&rows.iter().map(|(l, d)| (l.clone(), d)).collect::<Vec<_>>()),
    };
    emit(&text)
}

/// Writes to stdout; a closed pipe (`medic ... | head`) is not an error.
fn emit(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to stdout"),
    }
}

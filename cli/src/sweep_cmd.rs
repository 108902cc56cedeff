//! Wiring for `medic sweep`: settings, the simulator when asked, the adapters, output.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use chrono::Utc;
use medic_adapters::argocd::HttpArgoClient;
use medic_adapters::budget::{BudgetRates, LocalBudget};
use medic_adapters::config::ArgoSettings;
use medic_adapters::memory::LogEscalator;
use medic_core::step::StepResult;
use medic_core::sweep::SweepScope;
use medic_core::{DecisionPolicy, PolicyConfig};
use medic_service::remediate::StepConfig;
use medic_sim::{ArgoSim, CallCounts, Rebase, SimConfig};

use crate::samples;
use crate::store::SqliteIncidentStore;
use crate::sweep::{SweepOptions, SweepSummary, sweep};
use crate::sweep_out::{Paced, StopFlag, SweepPrinter};

/// Which Argo CD to talk to, and where state lives: shared by `medic sweep` and `medic serve`.
pub struct Target {
    pub simulate: bool,
    pub apps: PathBuf,
    pub outcomes: PathBuf,
    pub synthetic: Option<usize>,
    pub stale: usize,
    pub dry_run: bool,
    pub state: Option<PathBuf>,
    pub config: Option<PolicyConfig>,
    /// How long the state file keeps closed incidents and decisions (`MEDIC_HISTORY_DAYS`).
    pub history: std::time::Duration,
    /// Argo CD's connection flags (over the ARGOCD_* environment variables).
    pub argo: crate::argocd_flags::ArgoFlags,
}

/// Everything `medic sweep` was asked to do.
pub struct SweepCommand {
    pub target: Target,
    pub projects: Vec<String>,
    pub selector: String,
    pub concurrency: usize,
    pub rates: BudgetRates,
    pub passes: usize,
    pub output: crate::output::SweepOutput,
}

/// A connected Argo CD (live or simulated), the policy configuration and the state store.
pub struct Connection {
    pub client: HttpArgoClient,
    pub sim: Option<ArgoSim>,
    pub policy: PolicyConfig,
    pub store: SqliteIncidentStore,
    /// The state file `store` keeps; `None` when the state is in memory (a simulation without
    /// `--state`).
    pub state_path: Option<PathBuf>,
}

/// Starts the simulator when asked, builds the client, reads the Argo CD version once, opens the
/// state store.
/// When Argo CD does not answer at start (`connect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unanswered {
    /// Stop with the error: a sweep has nothing to do without Argo CD.
    Fail,
    /// Say so and go on: `serve` exists for the hours Argo CD is down, and its webhooks, worker
    /// and sweeper retry until it is back (it refused to start then).
    Continue,
}

pub async fn connect(target: &Target, unanswered: Unanswered) -> Result<Connection> {
    let mut policy = target.config.clone().unwrap_or_default();
    let sim = if target.simulate { Some(start_simulator(target).await?) } else { None };
    let settings = match &sim {
        Some(sim) => {
            if policy.instance_id == PolicyConfig::default().instance_id {
                policy.instance_id = "simulator".into();
            }
            let token = SimConfig::default().tokens.first().map(|t| t.token.clone()).unwrap_or_default();
            ArgoSettings::new(sim.base_url(), token)
        }
        None => target.argo.settings().context(
            "connecting to Argo CD: give --server and --auth-token, or set ARGOCD_SERVER and ARGOCD_AUTH_TOKEN (or use --simulate)",
        )?,
    };
    let url = settings.base_url().map(|u| u.to_string()).unwrap_or_else(|_| settings.server.clone());
    let plaintext = settings.plaintext;
    let client = HttpArgoClient::new(settings).context("building the Argo CD client")?;
    match (client.version_info().await, unanswered) {
        (Ok(version), _) => {
            // Rules that differ between Argo CD versions read it from the policy (a configured version wins).
            if policy.argocd_version.is_none() && !version.version.is_empty() {
                policy.argocd_version = Some(version.version.clone());
            }
            crate::note!(
                "medic: Argo CD {} ({}){}",
                version.version,
                if sim.is_some() { "simulator" } else { "live" },
                if target.dry_run { ", dry run" } else { "" }
            );
            if let Some(note) = medic_core::versions::note(&version.version) {
                crate::note!("medic: {note}");
            }
        }
        (Err(e), Unanswered::Fail) => {
            // The same words as `medic check`: what went wrong, and what to change.
            return Err(crate::check::Unreached::new(&url, plaintext, e).into());
        }
        (Err(e), Unanswered::Continue) => crate::note!(
            "medic: warning: Argo CD does not answer ({e}); serving anyway: webhooks are accepted, and the worker and the sweeper retry until it does"
        ),
    }
    let state_path = match (&target.state, &sim) {
        (Some(path), _) => Some(path.clone()),
        (None, Some(_)) => None,
        (None, None) => Some(default_state_path()),
    };
    let store = match &state_path {
        Some(path) => SqliteIncidentStore::open(path)?,
        None => SqliteIncidentStore::in_memory()?,
    }
    .with_retention(target.history);
    Ok(Connection { client, sim, policy, store, state_path })
}

/// `$XDG_STATE_HOME/argo-medic/state.db` (else `~/.local/state/...`): where `sweep`, `serve` and `incidents` keep state.
pub fn default_state_path() -> PathBuf {
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("argo-medic/state.db")
}

/// Starts the simulator with the sample apps (timestamps moved to the present) or a synthetic fleet.
pub async fn start_simulator(cmd: &Target) -> Result<ArgoSim> {
    start_simulator_on(cmd, 0).await
}

/// [`start_simulator`] on `127.0.0.1:port` (0: any free port).
pub async fn start_simulator_on(cmd: &Target, port: u16) -> Result<ArgoSim> {
    let sim = ArgoSim::start_on(SimConfig::default(), port)
        .await
        .with_context(|| format!("starting the Argo CD simulator on 127.0.0.1:{port}"))?;
    match cmd.synthetic {
        Some(n) => {
            for (app, outcomes) in medic_sim::synthetic_fleet(n, cmd.stale, Utc::now()) {
                let name = app["metadata"]["name"].as_str().unwrap_or_default().to_owned();
                sim.insert_app(app);
                sim.set_outcomes(&name, outcomes);
            }
        }
        None => {
            let rebase = Some(Rebase::samples_to(Utc::now()));
            let defaults = cmd.apps == Path::new(samples::DEFAULT_APPS) && !cmd.apps.exists();
            if defaults {
                // Not run from the repository's root: the sample fleet compiled in.
                crate::note!("medic: the sample fleet compiled into medic ({} is not here)", samples::DEFAULT_APPS);
                let files: Vec<(PathBuf, String)> = samples::SAMPLE_APPS
                    .iter()
                    .map(|(name, text)| (Path::new(samples::DEFAULT_APPS).join(name), (*text).to_owned()))
                    .collect();
                sim.load_files(&files, rebase).context("loading the compiled-in sample fleet")?;
            } else {
                sim.load_dir(&cmd.apps, rebase).with_context(|| format!("loading {} into the simulator", cmd.apps.display()))?;
            }
            if cmd.outcomes.exists() {
                sim.load_outcomes(&cmd.outcomes).with_context(|| format!("loading {}", cmd.outcomes.display()))?;
            } else if defaults && cmd.outcomes == Path::new(samples::DEFAULT_OUTCOMES) {
                sim.load_outcomes_text(samples::SAMPLE_OUTCOMES, &cmd.outcomes).context("loading the compiled-in outcomes")?;
            } else {
                // Said, not skipped in silence (newcomer review row 2).
                crate::note!(
                    "medic: no outcomes file at {}: refresh and sync do what the simulator does by default (give --outcomes FILE)",
                    cmd.outcomes.display()
                );
            }
        }
    }
    Ok(sim)
}

pub async fn run(cmd: SweepCommand) -> Result<ExitCode> {
    let Connection { client, sim, policy, store, .. } = connect(&cmd.target, Unanswered::Fail).await?;
    let stop = StopFlag::default();
    let signals = tokio::spawn(stop_on_signal(stop.clone()));
    let budget = Paced::new(LocalBudget::new(cmd.rates), stop.clone());
    // The table shows each escalation; the log line is for MEDIC_LOG=info.
    let escalator = LogEscalator::reported();
    if let Some(note) = policy.trust.unapprovable_note(false) {
        crate::note!("medic: {note}");
    }
    let policy = DecisionPolicy::new(policy);
    // The run's markers (alerts told once, a person's performed action) are kept in memory.
    let ports = medic_stack::adapters::inline(client, store, escalator, budget);
    let step = StepConfig { dry_run: cmd.target.dry_run, kill_switch: false, claim_timeout: Duration::from_secs(600) };
    let remediator = ports.by_ref().step(&policy, step);
    let opts = SweepOptions {
        scope: SweepScope { projects: cmd.projects.clone(), selector: cmd.selector.clone(), ..SweepScope::default() },
        concurrency: cmd.concurrency,
        refresh_per_minute: cmd.rates.refresh_per_minute,
        ..SweepOptions::default()
    };
    let printer = SweepPrinter::new(cmd.output, cmd.passes, cmd.rates, cmd.concurrency, ports.budget.waiting());

    let mut failed = false;
    let mut outcome = Ok(());
    for pass in 1..=cmd.passes {
        if stop.is_stopped() {
            break;
        }
        let before = sim.as_ref().map(ArgoSim::counts);
        let summary = match sweep(&remediator, &opts, &printer.pass(pass), &|| stop.is_stopped()).await {
            Ok(summary) => summary,
            Err(e) => {
                outcome = Err(e);
                break;
            }
        };
        printer.pass_done(pass, &summary);
        crate::note!("medic: pass {pass}: {}", totals(&summary));
        if let (Some(sim), Some(before)) = (&sim, before) {
            crate::note!("medic: pass {pass}: Argo CD calls {}", calls(&before, &sim.counts()));
        }
        failed |= !summary.errors.is_empty();
    }
    signals.abort();
    let interrupted = stop.is_stopped();
    printer.finish(interrupted)?;
    if let Some(sim) = sim {
        sim.shutdown().await;
    }
    outcome?;
    Ok(if interrupted {
        crate::note!("medic: interrupted: the apps not looked at are the next sweep's");
        ExitCode::from(crate::exit::INTERRUPTED)
    } else if failed {
        ExitCode::from(crate::exit::PARTIAL)
    } else {
        ExitCode::SUCCESS
    })
}

/// The first SIGINT or SIGTERM stops the sweep as [`StopFlag`] says; a second quits at once.
async fn stop_on_signal(stop: StopFlag) {
    crate::serve::stop_signal().await;
    crate::note!("medic: stopping: no new app is started and the steps under way finish; Ctrl-C again quits at once");
    stop.stop();
    crate::serve::stop_signal().await;
    crate::note!("medic: quit at once: steps under way were cut short (their claims are taken over by the next run)");
    std::process::exit(i32::from(crate::exit::INTERRUPTED));
}

fn totals(s: &SweepSummary) -> String {
    let mut parts = vec![format!("{} listed, {} looked at", s.listed, s.candidates - s.interrupted)];
    // A hard refresh is a refresh of another budget: said apart.
    let hard = s.reports.iter().filter(|r| r.result == StepResult::Refreshed && r.action == Some(medic_core::Action::HardRefresh)).count();
    for (label, result) in [
        ("refreshed", StepResult::Refreshed),
        ("refresh unverified", StepResult::RefreshUnverified),
        ("synced", StepResult::Synced),
        ("escalated", StepResult::Escalated),
        ("already done", StepResult::AlreadyDone),
        ("resolved", StepResult::Resolved),
        ("waiting", StepResult::Waiting),
        ("deferred", StepResult::Deferred),
        ("failed", StepResult::Failed),
        ("dry run", StepResult::DryRun),
    ] {
        let n = s.count(result) - if result == StepResult::Refreshed { hard } else { 0 };
        if n > 0 {
            parts.push(format!("{n} {label}"));
        }
        if result == StepResult::Refreshed && hard > 0 {
            parts.push(format!("{hard} hard refreshed"));
        }
    }
    let mut would: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for r in s.reports.iter().filter(|r| r.result == StepResult::DryRun) {
        if let Some(action) = r.action.filter(|a| *a != medic_core::Action::None) {
            *would.entry(action.as_str()).or_default() += 1;
        }
    }
    if !would.is_empty() {
        let would: Vec<String> = would.iter().map(|(action, n)| format!("{n} {action}")).collect();
        parts.push(format!("would have done {}", would.join(", ")));
    }
    if !s.errors.is_empty() {
        parts.push(format!("{} errors", s.errors.len()));
    }
    if s.interrupted > 0 {
        parts.push(format!("{} not started (interrupted)", s.interrupted));
    }
    for o in &s.outages {
        let wave = match (o.healed, o.paused) {
            (0, _) if o.overdue => "held back, past its time bound: escalated".to_owned(),
            (0, _) => "held back".to_owned(),
            (_, false) => format!("{} released", o.released),
            (_, true) => format!("{} released, then paused", o.released),
        };
        parts.push(format!("outage {}: {} of {} apps Unknown, {}/{} canaries healed, {wave}", o.cause, o.apps, o.of, o.healed, o.probed));
    }
    parts.push(format!("{} ms", s.elapsed_ms));
    parts.join(", ")
}

/// Calls by kind between two snapshots of the simulator's counters.
pub fn calls(before: &CallCounts, after: &CallCounts) -> String {
    let d = |a: usize, b: usize| b.saturating_sub(a);
    format!(
        "list {}, get {}, refresh {}, hard refresh {}, sync {}, terminate {}, version {}, rejected {}",
        d(before.list, after.list),
        d(before.get, after.get),
        d(before.refresh, after.refresh),
        d(before.hard_refresh, after.hard_refresh),
        d(before.sync, after.sync),
        d(before.terminate, after.terminate),
        d(before.version, after.version),
        d(before.rejected, after.rejected)
    )
}

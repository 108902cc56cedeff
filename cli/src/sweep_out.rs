//! What `medic sweep` shows while it runs: its plan and an estimate up front, a progress bar on a
//! terminal (a line every few seconds elsewhere), a row as each app finishes, and a summary, also
//! when it is stopped half way. A sweep at the default budgets can run for many minutes (5,000
//! stale apps at 300 refreshes a minute is 17), and a run that says nothing looks hung.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use medic_adapters::budget::BudgetRates;
use medic_core::event::AppRef;
use medic_core::ladder::BudgetKind;
use medic_core::ports::{Budget, BudgetExhausted};
use medic_core::step::{StepError, StepReport, StepResult};
use serde::Serialize;
use serde_json::Value;

use crate::output::{Document, SweepOutput, document};
use crate::sweep::{Planned, SweepObserver, SweepSummary};

/// Off a terminal, a progress line this often.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(3);

/// Asked to stop (SIGINT, SIGTERM): no new app is started, and budget waits end at once.
#[derive(Clone)]
pub struct StopFlag(Arc<tokio::sync::watch::Sender<bool>>);

impl Default for StopFlag {
    fn default() -> Self {
        Self(Arc::new(tokio::sync::watch::channel(false).0))
    }
}

impl StopFlag {
    pub fn stop(&self) {
        self.0.send_replace(true);
    }

    pub fn is_stopped(&self) -> bool {
        *self.0.borrow()
    }

    pub async fn stopped(&self) {
        let mut rx = self.0.subscribe();
        // The sender lives as long as `self`: `wait_for` ends only when stopped.
        let _ = rx.wait_for(|stopped| *stopped).await;
    }
}

/// A budget that counts the steps waiting for a token (the progress line's "waiting for
/// budget") and stops waiting when the sweep is asked to stop: such a step defers, as it would
/// past the budget's longest wait, and its app is looked at by the next sweep. Nothing was
/// claimed yet (the actuator takes the budget first), so nothing is lost.
pub struct Paced<B> {
    inner: B,
    waiting: Arc<AtomicUsize>,
    stop: StopFlag,
}

impl<B> Paced<B> {
    pub fn new(inner: B, stop: StopFlag) -> Self {
        Self { inner, waiting: Arc::default(), stop }
    }

    pub fn waiting(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.waiting)
    }
}

struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<B: Budget> Budget for Paced<B> {
    async fn acquire(&self, kind: BudgetKind) -> Result<(), BudgetExhausted> {
        if self.stop.is_stopped() {
            return Err(BudgetExhausted { kind, retry_after: Duration::ZERO });
        }
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let _waiting = Waiting(&self.waiting);
        tokio::select! {
            acquired = self.inner.acquire(kind) => acquired,
            () = self.stop.stopped() => Err(BudgetExhausted { kind, retry_after: Duration::ZERO }),
        }
    }
}

/// `1h 2m`, `6m 40s`, `12s`.
pub fn human(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m {s}s"),
        (h, m, _) => format!("{h}h {m}m"),
    }
}

/// Counts of one pass, shared with the ticker that draws them.
struct Counts {
    pass: usize,
    total: AtomicUsize,
    started: AtomicUsize,
    finished: AtomicUsize,
    /// Steps that took (or wanted) a refresh or sync token: the share the budget paces.
    paced: AtomicUsize,
    waiting: Arc<AtomicUsize>,
    began: Instant,
    refresh_per_minute: u32,
}

impl Counts {
    /// The time left: what the pace so far says, and at least what the refresh budget allows for
    /// the share of steps that needed a token so far (all of them before any finished).
    fn eta(&self) -> Duration {
        let (total, done) = (self.total.load(Ordering::Relaxed), self.finished.load(Ordering::Relaxed));
        let left = total.saturating_sub(done) as f64;
        let share = if done == 0 { 1.0 } else { self.paced.load(Ordering::Relaxed) as f64 / done as f64 };
        let by_budget = left * share * 60.0 / f64::from(self.refresh_per_minute.max(1));
        let by_pace = if done == 0 { 0.0 } else { self.began.elapsed().as_secs_f64() / done as f64 * left };
        Duration::from_secs_f64(by_budget.max(by_pace))
    }

    fn line(&self) -> String {
        let (started, done) = (self.started.load(Ordering::Relaxed), self.finished.load(Ordering::Relaxed));
        let waiting = self.waiting.load(Ordering::Relaxed);
        let acting = started.saturating_sub(done).saturating_sub(waiting);
        format!(
            "{done}/{} done, {acting} acting, {waiting} waiting for budget, {} elapsed, about {} left",
            self.total.load(Ordering::Relaxed),
            human(self.began.elapsed()),
            human(self.eta())
        )
    }
}

/// One row of the sweep's output: a step's report, or an app whose step failed.
fn row(pass: usize, app: &AppRef, result: &Result<StepReport, StepError>) -> Value {
    let mut row = match result {
        Ok(report) => serde_json::to_value(report).unwrap_or_default(),
        Err(e) => serde_json::json!({"app": app.id().to_string(), "result": "error", "detail": e.to_string()}),
    };
    if let Some(object) = row.as_object_mut() {
        object.insert("pass".into(), pass.into());
    }
    row
}

fn cell(row: &Value, key: &str) -> String {
    match &row[key] {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The summary of a pass as the JSON and YAML documents carry it.
#[derive(Serialize)]
struct PassSummary {
    pass: usize,
    listed: usize,
    looked_at: usize,
    results: std::collections::BTreeMap<String, usize>,
    errors: usize,
    not_started: usize,
    outages: Vec<crate::sweep::OutageReport>,
    argo_calls: u64,
    elapsed_ms: u128,
}

/// Rows as apps finish, the progress of the pass under way, and the document at the end.
pub struct SweepPrinter {
    output: SweepOutput,
    passes: usize,
    rates: BudgetRates,
    concurrency: usize,
    waiting: Arc<AtomicUsize>,
    terminal: bool,
    state: Mutex<PrinterState>,
}

#[derive(Default)]
struct PrinterState {
    /// The table's columns, fixed when the first pass is planned (rows stream: no later row may
    /// widen them).
    widths: Option<Vec<usize>>,
    rows: Vec<Value>,
    summaries: Vec<PassSummary>,
    pass: Option<Arc<Counts>>,
    bar: Option<ProgressBar>,
    ticker: Option<tokio::task::JoinHandle<()>>,
}

impl SweepPrinter {
    pub fn new(output: SweepOutput, passes: usize, rates: BudgetRates, concurrency: usize, waiting: Arc<AtomicUsize>) -> Self {
        Self { output, passes, rates, concurrency, waiting, terminal: std::io::stderr().is_terminal(), state: Mutex::default() }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, PrinterState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Begins pass `pass`: what [`SweepObserver`] is told goes to it.
    pub fn pass(&self, pass: usize) -> PassObserver<'_> {
        PassObserver { printer: self, pass }
    }

    fn columns(&self) -> Vec<&'static str> {
        let mut columns = if self.passes > 1 { vec!["PASS"] } else { vec![] };
        columns.extend(["APP", "FAILURE MODE", "ACTION", "RESULT"]);
        if self.output == SweepOutput::Wide {
            columns.extend(["CALLS", "IDEMPOTENCY KEY"]);
        }
        columns.push("DETAIL");
        columns
    }

    fn cells(&self, row: &Value) -> Vec<String> {
        let mut cells = if self.passes > 1 { vec![cell(row, "pass")] } else { vec![] };
        cells.extend(["app", "failure_mode", "action", "result"].map(|k| cell(row, k)));
        let detail = cell(row, "detail");
        if self.output == SweepOutput::Wide {
            cells.push(cell(row, "argo_calls"));
            cells.push(cell(row, "idempotency_key"));
            cells.push(detail);
        } else {
            cells.push(crate::render::truncate(&detail, 100));
        }
        cells
    }

    /// Writes to stdout above the bar, if any.
    fn emit(&self, state: &PrinterState, text: &str) {
        match &state.bar {
            Some(bar) => bar.suspend(|| crate::emit(text).ok()),
            None => crate::emit(text).ok(),
        };
    }

    fn planned(&self, pass: usize, plan: &Planned) {
        let mut state = self.state();
        let r = &self.rates;
        let upper = Duration::from_secs_f64(plan.apps as f64 * 60.0 / f64::from(r.refresh_per_minute.max(1)));
        crate::note!(
            "medic: pass {pass}: {} listed, {} to look at{}, {} at most at once; paced at {} refreshes, {} hard refreshes and {} syncs a minute: up to {} if each needs a refresh; Ctrl-C stops and prints what is done",
            plan.listed,
            plan.apps,
            if plan.canaries > 0 { format!(" after {} canaries", plan.canaries) } else { String::new() },
            self.concurrency,
            r.refresh_per_minute,
            r.hard_refresh_per_minute,
            r.sync_per_minute,
            human(upper),
        );
        let counts = Arc::new(Counts {
            pass,
            total: AtomicUsize::new(plan.apps),
            started: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            paced: AtomicUsize::new(0),
            waiting: Arc::clone(&self.waiting),
            began: Instant::now(),
            refresh_per_minute: r.refresh_per_minute,
        });
        if matches!(self.output, SweepOutput::Table | SweepOutput::Wide) && state.widths.is_none() {
            let columns = self.columns();
            let widths: Vec<usize> = columns
                .iter()
                .map(|c| match *c {
                    "PASS" => 4,
                    "APP" => plan.longest_name.max(3),
                    "FAILURE MODE" => medic_core::CATALOGUE.iter().map(|e| e.id.to_string().len()).max().unwrap_or(12),
                    "ACTION" => 12,
                    "RESULT" => 18,
                    "CALLS" => 5,
                    "IDEMPOTENCY KEY" => 20,
                    _ => 0,
                })
                .collect();
            let header = crate::render::row(&columns.iter().map(|c| (*c).to_owned()).collect::<Vec<_>>(), &widths);
            state.widths = Some(widths);
            self.emit(&state, &header);
        }
        if self.terminal {
            let bar = ProgressBar::new(plan.apps as u64);
            bar.set_style(
                ProgressStyle::with_template(&format!("{{spinner}} pass {pass} {{pos}}/{{len}} {{wide_bar}} {{msg}}"))
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            state.bar = Some(bar);
        }
        let (bar, ticking) = (state.bar.clone(), Arc::clone(&counts));
        state.ticker = Some(tokio::spawn(async move {
            let every = if bar.is_some() { Duration::from_millis(250) } else { PROGRESS_EVERY };
            // The first line a second in, then every few: a pipe sees the sweep moving at once.
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every.min(Duration::from_secs(1)), every);
            loop {
                tick.tick().await;
                match &bar {
                    Some(bar) => {
                        bar.set_position(ticking.finished.load(Ordering::Relaxed) as u64);
                        bar.set_message(ticking.line());
                        bar.tick();
                    }
                    None => crate::note!("medic: pass {}: {}", ticking.pass, ticking.line()),
                }
            }
        }));
        state.pass = Some(counts);
    }

    fn finished(&self, pass: usize, app: &AppRef, result: &Result<StepReport, StepError>) {
        let row = row(pass, app, result);
        let mut state = self.state();
        if let Some(counts) = &state.pass {
            counts.finished.fetch_add(1, Ordering::Relaxed);
            let paced = matches!(
                result,
                Ok(StepReport {
                    result: StepResult::Refreshed | StepResult::RefreshUnverified | StepResult::Synced | StepResult::Deferred,
                    ..
                })
            );
            if paced {
                counts.paced.fetch_add(1, Ordering::Relaxed);
            }
        }
        match self.output {
            SweepOutput::Table | SweepOutput::Wide => {
                let line = crate::render::row(&self.cells(&row), state.widths.as_deref().unwrap_or_default());
                self.emit(&state, &line);
            }
            SweepOutput::Jsonl => {
                let line = serde_json::to_string(&row).unwrap_or_default() + "\n";
                self.emit(&state, &line);
            }
            SweepOutput::Name => {
                let line = cell(&row, "app") + "\n";
                self.emit(&state, &line);
            }
            SweepOutput::Json | SweepOutput::Yaml => state.rows.push(row),
        }
    }

    /// Ends pass `pass` with its summary: the bar and the ticker stop.
    pub fn pass_done(&self, pass: usize, summary: &SweepSummary) {
        let mut state = self.state();
        if let Some(ticker) = state.ticker.take() {
            ticker.abort();
        }
        if let Some(bar) = state.bar.take() {
            bar.finish_and_clear();
        }
        state.pass = None;
        let mut results = std::collections::BTreeMap::new();
        for r in &summary.reports {
            let name = serde_json::to_value(r.result).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
            *results.entry(name).or_insert(0) += 1;
        }
        state.summaries.push(PassSummary {
            pass,
            listed: summary.listed,
            looked_at: summary.candidates - summary.interrupted,
            results,
            errors: summary.errors.len(),
            not_started: summary.interrupted,
            outages: summary.outages.clone(),
            argo_calls: summary.argo_calls(),
            elapsed_ms: summary.elapsed_ms,
        });
    }

    /// The document of `json` and `yaml` (nothing for the streamed formats): every row and a
    /// summary of each pass; `interrupted` when a signal stopped the sweep.
    pub fn finish(&self, interrupted: bool) -> anyhow::Result<()> {
        let state = self.state();
        if let Some(bar) = &state.bar {
            bar.finish_and_clear();
        }
        let format = match self.output {
            SweepOutput::Json => Document::Json,
            SweepOutput::Yaml => Document::Yaml,
            _ => return Ok(()),
        };
        let doc = serde_json::json!({
            "rows": state.rows,
            "summary": {"interrupted": interrupted, "passes": state.summaries},
        });
        crate::emit(&document(&doc, format)?)?;
        Ok(())
    }
}

/// [`SweepObserver`] for one pass of a [`SweepPrinter`].
pub struct PassObserver<'a> {
    printer: &'a SweepPrinter,
    pass: usize,
}

impl SweepObserver for PassObserver<'_> {
    fn planned(&self, plan: &Planned) {
        self.printer.planned(self.pass, plan);
    }

    fn started(&self, _app: &AppRef) {
        if let Some(counts) = &self.printer.state().pass {
            counts.started.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn finished(&self, app: &AppRef, result: &Result<StepReport, StepError>) {
        self.printer.finished(self.pass, app, result);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(human(Duration::from_secs(12)), "12s");
        assert_eq!(human(Duration::from_secs(400)), "6m 40s");
        assert_eq!(human(Duration::from_secs(3720)), "1h 2m");
    }

    #[tokio::test]
    async fn a_budget_wait_ends_when_the_sweep_is_stopped_and_counts_while_it_lasts() {
        let stop = StopFlag::default();
        let rates =
            BudgetRates { refresh_per_minute: 1, hard_refresh_per_minute: 1, sync_per_minute: 1, max_wait: Duration::from_secs(600) };
        let budget = Arc::new(Paced::new(medic_adapters::budget::LocalBudget::new(rates), stop.clone()));
        budget.acquire(BudgetKind::Refresh).await.expect("the burst's one token");
        let waiting = budget.waiting();
        let second = tokio::spawn({
            let budget = Arc::clone(&budget);
            async move { budget.acquire(BudgetKind::Refresh).await }
        });
        while waiting.load(Ordering::Relaxed) == 0 {
            tokio::task::yield_now().await;
        }
        stop.stop();
        let ended = second.await.unwrap();
        assert!(ended.is_err(), "a stopped sweep's budget wait defers: {ended:?}");
        assert_eq!(waiting.load(Ordering::Relaxed), 0);
        assert!(budget.acquire(BudgetKind::Sync).await.is_err(), "after the stop nothing new waits");
    }
}

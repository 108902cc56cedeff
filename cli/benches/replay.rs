//! Replay at scale: 10,000 decisions recorded from the corpus's Applications (events/corpus/),
//! written to a SQLite state file, then read back and decided again by the same policy, as
//! `medic replay --state FILE` does. Issue 30's target: at least 10,000 recorded decisions
//! replayed in under 60 s on a 2-core machine with the release build.
//!
//! `cargo bench -p medic --bench replay` (release); prints the figures docs/benchmarks.md records.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use medic::store::SqliteIncidentStore;
use medic_core::incident::History;
use medic_core::ports::IncidentStore;
use medic_core::record::DecisionRecord;
use medic_core::{Application, DecisionPolicy, PolicyConfig, Trigger};

const DECISIONS: usize = 10_000;

/// Every corpus case's Application (as Argo CD sent it), trigger and time.
fn corpus() -> Vec<(serde_json::Value, Trigger, DateTime<Utc>)> {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a bench"));
    let mut files = Vec::new();
    collect(&root.join("../events/corpus"), &mut files);
    files
        .iter()
        .filter_map(|f| {
            let case: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(f).ok()?).ok()?;
            let trigger: Trigger = case["trigger"].as_str()?.parse().ok()?;
            let now: DateTime<Utc> = case["now"].as_str()?.parse().ok()?;
            Some((case.get("app")?.clone(), trigger, now))
        })
        .collect()
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("events/corpus is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument is a filter this bench has no use for.
    let cases = corpus();
    assert!(!cases.is_empty(), "the corpus has cases");
    let policy = DecisionPolicy::new(PolicyConfig::default());
    let path = std::env::temp_dir().join(format!("medic-replay-bench-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    // Kept long enough that the corpus's dates (November 2026) are still in the file.
    let store = SqliteIncidentStore::open(&path).expect("the state file opens").with_retention(Duration::from_secs(3650 * 86_400));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");

    // The history: decision i is case i mod N's app under its own name, decided at the case's
    // time plus i milliseconds, as the worker records it (from the model it holds).
    let started = Instant::now();
    let mut records = Vec::with_capacity(DECISIONS);
    for i in 0..DECISIONS {
        let (raw, trigger, now) = &cases[i % cases.len()];
        let mut raw = raw.clone();
        medic_core::app::strip_nulls(&mut raw);
        raw["metadata"]["name"] = format!("{}-{i}", raw["metadata"]["name"].as_str().unwrap_or("app")).into();
        let Ok(app) = serde_json::from_value::<Application>(raw) else { continue };
        let at = *now + TimeDelta::milliseconds(i as i64);
        let Ok(decision) = policy.decide(&app, trigger, &History::default(), at) else { continue };
        let json = serde_json::to_value(&app).expect("an Application serialises");
        records.push(DecisionRecord::new(&decision, &json, &app.spec.project, trigger.as_str(), "dry-run", &History::default()));
    }
    let made = started.elapsed();
    let bytes: usize = records.iter().map(|r| serde_json::to_vec(r).expect("a record serialises").len()).sum();
    let started = Instant::now();
    for record in &records {
        runtime.block_on(store.record_decision(record)).expect("the record is written");
    }
    let written = started.elapsed();

    let started = Instant::now();
    let since: DateTime<Utc> = "2000-01-01T00:00:00Z".parse().unwrap();
    let replay = runtime.block_on(medic::report::replay(&store, since, &policy)).expect("the records read back");
    let replayed = started.elapsed();
    let _ = std::fs::remove_file(&path);
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }

    println!(
        "replay: {} decisions from {} corpus cases, {:.1} KB a record on average; decided and recorded (the parts read) in {:.2} s ({:.0} µs each), written to SQLite in {:.1} s ({:.2} ms each)",
        replay.decisions,
        cases.len(),
        bytes as f64 / records.len().max(1) as f64 / 1024.0,
        made.as_secs_f64(),
        made.as_micros() as f64 / records.len().max(1) as f64,
        written.as_secs_f64(),
        written.as_secs_f64() * 1000.0 / records.len().max(1) as f64
    );
    println!(
        "replay: read back and decided again in {:.2} s ({:.0} µs a decision): {} decided again, {} cut, {} unreadable, {} decided otherwise",
        replayed.as_secs_f64(),
        replayed.as_micros() as f64 / replay.decisions.max(1) as f64,
        replay.replayed,
        replay.truncated,
        replay.unreadable,
        replay.differences.len()
    );
    assert!(replay.decisions >= DECISIONS, "{} decisions recorded", replay.decisions);
    assert!(
        replay.differences.is_empty(),
        "the same policy decides the same: {:#?}",
        &replay.differences[..replay.differences.len().min(3)]
    );
    assert!(replayed < Duration::from_secs(60), "issue 30's bound: 10,000 decisions replayed in under 60 s");
}

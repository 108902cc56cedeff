//! What deciding costs next to reading: `decide()` on the largest Applications of the corpus
//! (`events/corpus/`), against parsing them alone. Issue 10's target: parse + decide within 1.5x
//! of parse. Run with `cargo bench -p medic-core --bench decide`; figures in docs/benchmarks.md.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use medic_core::app::strip_nulls;
use medic_core::incident::History;
use medic_core::{Application, DecisionPolicy, Trigger};

/// The `app` of the three largest corpus cases, as the JSON text Argo CD would send.
fn largest_apps() -> Vec<(String, String)> {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a bench"));
    let mut files = Vec::new();
    collect(&root.join("../../events/corpus"), &mut files);
    let mut apps: Vec<(String, String)> = files
        .iter()
        .filter_map(|f| {
            let case: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(f).ok()?).ok()?;
            Some((case["id"].as_str()?.to_owned(), case.get("app")?.to_string()))
        })
        .collect();
    apps.sort_by_key(|(_, text)| std::cmp::Reverse(text.len()));
    apps.truncate(3);
    apps
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

fn parse(text: &str) -> Application {
    let mut value: serde_json::Value = serde_json::from_str(text).expect("a corpus app parses");
    strip_nulls(&mut value);
    serde_json::from_value(value).expect("a corpus app is an Application")
}

fn bench(c: &mut Criterion) {
    let policy = DecisionPolicy::default();
    let now = "2026-11-01T12:30:00Z".parse().expect("RFC 3339");
    let trigger = Trigger::sweep();
    for (id, text) in largest_apps() {
        let mut group = c.benchmark_group(format!("{id} ({} bytes)", text.len()));
        group.bench_function("parse", |b| b.iter(|| parse(black_box(&text))));
        group.bench_function("parse+decide", |b| {
            b.iter(|| {
                let app = parse(black_box(&text));
                policy.decide(&app, &trigger, &History::default(), now).expect("decidable")
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);

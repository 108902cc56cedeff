//! Only the composition root assembles the application's handlers from their collaborators.
//!
//! The worker's `Work`, the sweeper's `Sweep` and ingest's `Intake` are built by this crate's
//! builders (`Adapters::work`, `::sweep`, `::intake`, and `lambda::`, `local::`, `twins::` on top
//! of them); the ingest handler is made with `Ingest::new` over such an intake; the per-app step
//! that `medic sweep` and the tests run, `Remediator`, by `Adapters::step` over borrowed adapters
//! (`adapters::inline` for a sweep in one process), with `with_arrival` for a delivery. Anywhere else, a
//! struct literal of one of them names its collaborators one by one, which is how the same
//! handler came to be written out six ways (../shared/reviews/2026-12-02-architecture.md). This
//! test reads every Rust source of the workspace outside this crate and the types' own modules
//! and fails on such a literal, a struct-update one (`Intake { metrics, ..built }`) included:
//! swap one collaborator with `with_queue`/`with_metrics`/`map_intake` instead.

use std::path::{Path, PathBuf};

/// The handler types (and the per-app step they and `medic sweep` run) whose literals belong to
/// the composition root, and where each may be built besides: the module that defines it, or for
/// the step the service crate, whose work item builds one from its own collaborators.
const ASSEMBLED: &[(&str, &str)] = &[
    ("Work", "functions/service/src/work.rs"),
    ("Sweep", "functions/service/src/sweep.rs"),
    ("Intake", "functions/service/src/intake.rs"),
    ("Ingest", "functions/ingest/src/lib.rs"),
    ("Remediator", "functions/service/src/"),
];

fn workspace() -> PathBuf {
    let here = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test");
    Path::new(&here).ancestors().nth(2).expect("functions/stack sits two levels below the workspace").to_path_buf()
}

fn rust_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            // Build output and vendored trees are not ours.
            if !matches!(name.as_str(), "target" | ".git" | "node_modules" | ".venv") && !name.starts_with('.') {
                rust_sources(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// Whether `line` holds a struct literal (or pattern) of `ty`: the name, then ` {`, with no
/// identifier character before the name (`MyWork {` is another type).
fn literal_of(line: &str, ty: &str) -> bool {
    let needle = format!("{ty} {{");
    line.match_indices(&needle).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let is_path = before == Some(':');
        let plain = before.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        // A definition, an impl header or a destructuring `let` is not an assembly.
        let head = line.trim_start();
        let definition = ["pub struct ", "struct ", "impl", "pub enum ", "enum "].iter().any(|k| head.starts_with(k));
        let destructuring = head.starts_with("let ") && !line[..at].contains('=') && line[at..].contains("} =");
        let declares = definition || destructuring;
        (plain || is_path) && !declares
    })
}

#[test]
fn only_the_composition_root_assembles_the_handlers() {
    let root = workspace();
    let mut files = Vec::new();
    rust_sources(&root, &mut files);
    assert!(files.len() > 50, "the workspace's sources were found ({} files under {})", files.len(), root.display());
    // The root itself, and this test's own examples.
    let stack = root.join("functions/stack");
    let mut found = Vec::new();
    for file in files.iter().filter(|f| !f.starts_with(&stack)) {
        let rel = file.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for (ty, home) in ASSEMBLED {
                if !rel.starts_with(home) && literal_of(line, ty) {
                    found.push(format!("{rel}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "handlers assembled outside the composition root:\n{}", found.join("\n"));
}

#[test]
fn the_check_sees_a_literal_and_its_struct_update_form_and_nothing_else() {
    assert!(literal_of("    let ingest = Ingest { secrets, refresh_secrets: None, intake };", "Ingest"));
    assert!(literal_of("let i = medic_ingest::Intake { metrics: quiet(), ..built.intake };", "Intake"));
    assert!(literal_of("        Work {", "Work"));
    assert!(!literal_of("pub struct Work {", "Work"));
    assert!(!literal_of("impl<Q, A, C, T> Intake<Q, A, C, T> {", "Intake"));
    assert!(!literal_of("let LocalWork { a, b } = x;", "Work"));
    assert!(!literal_of("        let Intake { config, argo, clock, metrics, .. } = self;", "Intake"));
    assert!(!literal_of("let sweep = Sweep::from(ports);", "Sweep"));
    assert!(literal_of("let first = Remediator { arrival: Some(&arrival), ..parts.step(&argo) };", "Remediator"));
}

//! The core's modules form no import circle: vocabulary (`ladder`, `keys`, `app`) at the bottom,
//! the catalogue and decisions above it, the policy and the per-app step on top. A circle is how
//! scattered vocabulary shows (it once ran catalogue → decision → idempotency → incident →
//! catalogue); this test reads the sources and fails on any.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module name → the modules of the crate it refers to (`crate::<module>`), comments ignored.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test")).join("src");
    let mut graph = BTreeMap::new();
    for entry in walk(&src) {
        let rel = entry.strip_prefix(&src).unwrap();
        let module = rel.iter().next().unwrap().to_string_lossy().trim_end_matches(".rs").to_owned();
        if module == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&entry).unwrap();
        let deps: &mut BTreeSet<String> = graph.entry(module.clone()).or_default();
        for line in text.lines().map(str::trim_start).filter(|l| !l.starts_with("//")) {
            for part in line.split("crate::").skip(1) {
                let name: String = part.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !name.is_empty() && name != module && name.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
                    deps.insert(name);
                }
            }
        }
    }
    graph
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// A circle through `start`, if any (depth-first search over the graph).
fn circle(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    fn visit(
        graph: &BTreeMap<String, BTreeSet<String>>,
        node: &str,
        path: &mut Vec<String>,
        start: &str,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in graph.get(node).into_iter().flatten() {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if visit(graph, next, path, start, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_owned()];
    visit(graph, start, &mut path, start, &mut BTreeSet::new()).then_some(path)
}

#[test]
fn the_core_modules_import_no_circle() {
    let graph = imports();
    assert!(graph.contains_key("policy") && graph.contains_key("keys"), "the walk found the modules: {:?}", graph.keys());
    for module in graph.keys() {
        if let Some(c) = circle(&graph, module) {
            panic!("import circle: {}", c.join(" → "));
        }
    }
    assert!(graph["ladder"].is_empty(), "the ladder's vocabulary depends on nothing: {:?}", graph["ladder"]);
    assert!(graph["app"].is_empty(), "Argo CD's types, the app's identity among them, depend on nothing: {:?}", graph["app"]);
    assert_eq!(
        graph["keys"],
        BTreeSet::from(["app".to_owned(), "ladder".to_owned()]),
        "key derivations depend on the app's identity and the ladder's names only"
    );
}

/// One actuator: inside the core, only `actuator.rs` issues the permit that the mutating Argo CD
/// calls and the Slack posts take (outside the core it cannot be made at all).
#[test]
fn only_the_actuator_issues_a_permit() {
    let src = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test")).join("src");
    let mut issuers: Vec<String> = walk(&src)
        .into_iter()
        .filter(|f| std::fs::read_to_string(f).unwrap().lines().any(|l| !l.trim_start().starts_with("//") && l.contains("Permit::issue()")))
        .map(|f| f.strip_prefix(&src).unwrap().to_string_lossy().into_owned())
        .collect();
    issuers.sort();
    assert_eq!(issuers, ["actuator.rs"], "a permit issued outside the actuator is a second way to change Argo CD");
}

/// No port method has a default body: a forwarding or wrapping adapter that forgot one would
/// silently do the default (an `Arc` forwarder once dropped `resolve`; a fixed default once hid
/// `Switch::take_alert`). Reads every `pub trait` of the core and fails on a method with a body.
#[test]
fn no_trait_of_the_core_has_a_method_with_a_default_body() {
    let src = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test")).join("src");
    let mut defaults = Vec::new();
    let mut traits = 0;
    for file in walk(&src) {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut in_trait: Option<String> = None;
        // A signature spread over lines: where it began, until a line ends it with `;` or `{`.
        let mut signature: Option<String> = None;
        for line in text.lines() {
            if let Some(name) = line.strip_prefix("pub trait ") {
                traits += 1;
                in_trait = Some(name.split([':', ' ', '<', '{']).next().unwrap_or_default().to_owned());
                continue;
            }
            if line == "}" {
                in_trait = None;
            }
            if let Some(t) = &in_trait {
                let l = line.trim();
                if l.starts_with("fn ") {
                    signature = Some(l.to_owned());
                }
                if let Some(begun) = &signature {
                    if l.ends_with('{') {
                        defaults.push(format!("{}: {t}: {begun}", file.file_name().unwrap().to_string_lossy()));
                    }
                    if l.ends_with('{') || l.ends_with(';') {
                        signature = None;
                    }
                }
            }
        }
    }
    assert!(traits >= 10, "the walk found the ports: {traits}");
    assert!(defaults.is_empty(), "default bodies: {defaults:#?}");
}

/// Each item has one path: only lib.rs, the crate's face, re-exports (a module that re-exported
/// another's items made `Rung` reachable as `medic_core::Rung`, `catalogue::Rung` and
/// `ladder::Rung`, and `policy` re-exported all of `classify` with a glob).
#[test]
fn no_module_of_the_core_re_exports_another_s_items() {
    let src = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test")).join("src");
    let mut aliases = Vec::new();
    for file in walk(&src).into_iter().filter(|f| !f.ends_with("lib.rs")) {
        let text = std::fs::read_to_string(&file).unwrap();
        for line in text.lines().filter(|l| l.trim_start().starts_with("pub use ")) {
            aliases.push(format!("{}: {}", file.strip_prefix(&src).unwrap().display(), line.trim()));
        }
    }
    assert!(aliases.is_empty(), "re-exports outside lib.rs: {aliases:#?}");
}

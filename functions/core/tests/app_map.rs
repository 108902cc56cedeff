//! The map of the Application (`medic_core::app_map`) proves each of its claims on the corpus:
//!
//! - a row with a rule names cases and a flip of its field; the flipped near miss must be decided
//!   differently (action, failure mode or rule);
//! - a row that is carried or not relevant is flipped in every case whose Application has its
//!   field, and no decision may change; a modelled row that no case has fails (its claim would be
//!   unmeasured), unless the row gives a probe: where to put the field in one case;
//! - a field the model keeps (present when a case's `Application` is written back out) must be in
//!   a row that says it is modelled.
//!
//! That every leaf of the swagger's `v1alpha1Application` has a row is checked against Argo CD's
//! own swagger in tests/app_map.rs of the workspace's test crate.

mod support;

use std::collections::BTreeMap;

use medic_core::app_map::{self, Flip, MapRow, RowKind, Use};
use serde_json::Value;
use support::{Case, application, cases, decide};

/// What a flip may change and what must stay: the decision's action, mode and rule.
fn verdict(case: &Case, app: &Value) -> (String, String, String) {
    let d = decide(case, app);
    (d.action.to_string(), d.failure_mode.to_string(), d.rule)
}

/// `app` with `flip` applied; `None` when the pointer's parent is not in the case.
fn flipped(app: &Value, flip: &Flip) -> Option<Value> {
    let mut out = app.clone();
    let (parent, last) = flip.pointer.rsplit_once('/')?;
    let last = last.replace("~1", "/").replace("~0", "~");
    let to: Value = serde_json::from_str(flip.to).unwrap_or_else(|e| panic!("{}: `{}` is not JSON: {e}", flip.pointer, flip.to));
    match out.pointer_mut(parent)? {
        Value::Object(map) if to.is_null() => {
            map.remove(&last)?;
        }
        Value::Object(map) => {
            map.insert(last, to);
        }
        Value::Array(items) => *items.get_mut(last.parse::<usize>().ok()?)? = to,
        _ => return None,
    }
    Some(out)
}

/// Every (swagger-style path, JSON pointer) of the values in an Application's JSON: objects add
/// `.member`, lists `[]`. A map the swagger keeps as one leaf (annotations, labels, `fieldsV1`) is
/// not walked into: its members are data, not fields.
fn fields(value: &Value, path: &str, pointer: &str, out: &mut Vec<(String, String)>) {
    out.push((path.to_owned(), pointer.to_owned()));
    let exact_leaf = app_map::row_for_field(path).is_some_and(|r| r.key == path);
    match value {
        Value::Object(map) if !exact_leaf || path.is_empty() => {
            for (k, v) in map {
                let at = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                fields(v, &at, &format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        Value::Array(items) if !exact_leaf => {
            for (i, v) in items.iter().enumerate() {
                fields(v, &format!("{path}[]"), &format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// A different value of the same type: a string gains a suffix (a time moves an hour back), a
/// number grows by one, a flag turns, a map gains a member, a list of strings an item.
fn other_value(v: &Value) -> Option<Value> {
    Some(match v {
        Value::String(s) => match chrono::DateTime::parse_from_rfc3339(s) {
            Ok(t) => Value::String((t - chrono::TimeDelta::hours(1)).to_utc().format("%Y-%m-%dT%H:%M:%SZ").to_string()),
            Err(_) => Value::String(format!("{s}-flipped")),
        },
        Value::Number(n) => match n.as_i64() {
            Some(i) => Value::from(i + 1),
            None => Value::from(n.as_f64()? + 1.0),
        },
        Value::Bool(b) => Value::Bool(!b),
        Value::Object(map) => {
            let mut map = map.clone();
            map.insert("example.com/map-flip".into(), Value::String("flipped".into()));
            Value::Object(map)
        }
        Value::Array(items) if items.iter().all(Value::is_string) => {
            let mut items = items.clone();
            items.push(Value::String("flipped".into()));
            Value::Array(items)
        }
        _ => return None,
    })
}

#[test]
fn each_rule_row_s_flip_changes_the_decision() {
    let cases: BTreeMap<String, Case> = cases().into_iter().map(|c| (c.key(), c)).collect();
    let mut failures = Vec::new();
    let mut flips = 0;
    for row in app_map::rows() {
        let Use::Rule { flips: row_flips, .. } = row.used else { continue };
        for flip in row_flips {
            flips += 1;
            let Some(case) = cases.get(flip.case) else {
                failures.push(format!("{}: no corpus case `{}`", row.name(), flip.case));
                continue;
            };
            let Some(near_miss) = flipped(&case.app, flip) else {
                failures.push(format!("{}: {} has nothing at {}", row.name(), flip.case, flip.pointer));
                continue;
            };
            let before = verdict(case, &case.app);
            let after = verdict(case, &near_miss);
            if before == after {
                failures.push(format!(
                    "{}: setting {} of {} to {} left the decision {:?}",
                    row.name(),
                    flip.pointer,
                    flip.case,
                    flip.to,
                    before
                ));
            }
        }
    }
    assert!(flips >= 20, "{flips} flips: the rows with rules name their near misses");
    assert!(failures.is_empty(), "{} rule rows whose field does not decide:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn flipping_a_carried_or_irrelevant_field_changes_no_decision() {
    let cases = cases();
    let mut flipped_rows: BTreeMap<(RowKind, &str), usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for case in &cases {
        let before = verdict(case, &case.app);
        let mut at = Vec::new();
        fields(&case.app, "", "", &mut at);
        for (path, pointer) in at.iter().skip(1) {
            let Some(row) = app_map::row_for_field(path) else { continue };
            if matches!(row.used, Use::Rule { .. }) {
                continue;
            }
            // A subtree row is flipped at its leaves; an exact row at its field.
            let value = case.app.pointer(pointer).expect("walked");
            let leaf = row.key == path.as_str() || !(value.is_object() || value.is_array());
            let Some(other) = other_value(value).filter(|_| leaf) else { continue };
            let mut near_miss = case.app.clone();
            *near_miss.pointer_mut(pointer).expect("walked") = other;
            *flipped_rows.entry((row.kind, row.key)).or_default() += 1;
            let after = verdict(case, &near_miss);
            if before != after {
                failures.push(format!("{} ({}): changing {pointer} of {} changed {before:?} to {after:?}", row.name(), path, case.key()));
            }
        }
    }
    for row in app_map::rows().filter(|r| !matches!(r.used, Use::Rule { .. })) {
        let Some(probe) = row.probe else { continue };
        let case =
            cases.iter().find(|c| c.key() == probe.case).unwrap_or_else(|| panic!("{}: no corpus case `{}`", row.name(), probe.case));
        let Some(near_miss) = flipped(&case.app, &probe) else {
            failures.push(format!("{}: {} has nothing at {}", row.name(), probe.case, probe.pointer));
            continue;
        };
        *flipped_rows.entry((row.kind, row.key)).or_default() += 1;
        let (before, after) = (verdict(case, &case.app), verdict(case, &near_miss));
        if before != after {
            failures.push(format!("{}: probe {} of {} changed {before:?} to {after:?}", row.name(), probe.pointer, probe.case));
        }
    }
    // A claim nothing measured: a modelled field no case has, or a constant without a probe.
    let unmeasured: Vec<String> = app_map::rows()
        .filter(|r| !matches!(r.used, Use::Rule { .. }))
        .filter(|r| r.kind != RowKind::Field || !r.modelled.is_empty())
        .filter(|r| !flipped_rows.contains_key(&(r.kind, r.key)))
        .map(MapRow::name)
        .collect();
    let flips: usize = flipped_rows.values().sum();
    println!("{flips} flips of carried or not-relevant fields over {} cases, {} rows measured", cases.len(), flipped_rows.len());
    // The walk itself has to reach the corpus's fields: a walker that flipped nothing would pass.
    assert!(flips > 1000 && flipped_rows.len() > 50, "only {flips} flips over {} rows", flipped_rows.len());
    assert!(
        failures.is_empty(),
        "{} flips of fields the map calls carried or not relevant changed a decision:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(unmeasured.is_empty(), "rows no case measures (give the field to a case, or a probe): {}", unmeasured.join(", "));
}

#[test]
fn every_field_the_model_keeps_is_in_a_row_that_says_so() {
    let mut wrong = BTreeMap::new();
    for case in cases() {
        let kept = serde_json::to_value(application(&case, &case.app)).expect("an Application serialises");
        let mut at = Vec::new();
        fields(&kept, "", "", &mut at);
        for (path, pointer) in at.iter().skip(1) {
            let value = kept.pointer(pointer).expect("walked");
            let row = app_map::row_for_field(path);
            // Objects and lists on the way to a field are not fields themselves.
            if (value.is_object() || value.is_array()) && row.is_none_or(|r| r.key != path.as_str()) {
                continue;
            }
            match row {
                None => {
                    wrong.insert(path.clone(), "no row".to_owned());
                }
                Some(row) if row.modelled.is_empty() => {
                    wrong.insert(path.clone(), format!("row {} says it is not modelled", row.key));
                }
                Some(_) => {}
            }
        }
    }
    let wrong: Vec<String> = wrong.into_iter().map(|(p, why)| format!("{p}: {why}")).collect();
    assert!(wrong.is_empty(), "fields `Application` keeps that the map does not say it models:\n{}", wrong.join("\n"));
}

#[test]
fn the_rows_a_case_was_drawn_from_are_rows_of_the_map() {
    for case in cases() {
        for row in &case.map_rows {
            assert!(app_map::rows().any(|r| &r.name() == row), "{}: no map row `{row}`", case.key());
        }
    }
}

/// The annotation and label keys Argo CD v3.5.1 declares in `common/common.go` and
/// `pkg/apis/application/v1alpha1/`, extracted with
/// `git grep -hoE '(Annotation|Label)Key\w*\s*(\w+\s*)?=\s*"[^"]*"|(Annotation|Label)(Compare|Installation|ClientSide|IgnoreHealth|ApplicationSet)\w*\s*=\s*"[^"]*"' v3.5.1 -- common/common.go pkg/apis/application/v1alpha1/`
/// (values such as `LabelValueSecretTypeCluster` are not keys), and the condition types, operation
/// phases, sync and health codes of `types.go` and gitops-engine.
const ARGOCD_V3_5_1_KEYS: &[&str] = &[
    "argocd.argoproj.io/application-set-refresh",
    "argocd.argoproj.io/client-side-apply-migration-manager",
    "argocd.argoproj.io/compare-options",
    "argocd.argoproj.io/ignore-healthcheck",
    "argocd.argoproj.io/installation-id",
    "argocd.argoproj.io/tracking-id",
    "argocd.argoproj.io/skip-reconcile",
    "argocd.argoproj.io/hydrate",
    "argocd.argoproj.io/ignore-default-links",
    "link.argocd.argoproj.io/",
    "managed-by",
    "argocd.argoproj.io/managed-by-url",
    "argocd.argoproj.io/manifest-generate-paths",
    "argocd.argoproj.io/refresh",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/name",
    "argocd.argoproj.io/auto-label-cluster-info",
    "argocd.argoproj.io/kubernetes-version",
    "app.kubernetes.io/component",
    "applications.argoproj.io/app-name",
    "argocd.argoproj.io/secret-type",
];
const ARGOCD_V3_5_1_CODES: &[(RowKind, &str)] = &[
    (RowKind::Condition, "DeletionError"),
    (RowKind::Condition, "InvalidSpecError"),
    (RowKind::Condition, "ComparisonError"),
    (RowKind::Condition, "SyncError"),
    (RowKind::Condition, "UnknownError"),
    (RowKind::Condition, "SharedResourceWarning"),
    (RowKind::Condition, "RepeatedResourceWarning"),
    (RowKind::Condition, "ExcludedResourceWarning"),
    (RowKind::Condition, "OrphanedResourceWarning"),
    (RowKind::Phase, "Running"),
    (RowKind::Phase, "Terminating"),
    (RowKind::Phase, "Failed"),
    (RowKind::Phase, "Error"),
    (RowKind::Phase, "Succeeded"),
    (RowKind::SyncCode, "Synced"),
    (RowKind::SyncCode, "OutOfSync"),
    (RowKind::SyncCode, "Unknown"),
    (RowKind::HealthCode, "Healthy"),
    (RowKind::HealthCode, "Progressing"),
    (RowKind::HealthCode, "Degraded"),
    (RowKind::HealthCode, "Suspended"),
    (RowKind::HealthCode, "Missing"),
    (RowKind::HealthCode, "Unknown"),
];

#[test]
fn every_annotation_label_condition_phase_and_code_of_argo_cd_has_a_row() {
    let missing_keys: Vec<&str> = ARGOCD_V3_5_1_KEYS
        .iter()
        .copied()
        .filter(|k| !app_map::rows().any(|r| matches!(r.kind, RowKind::Annotation | RowKind::Label) && r.key == *k))
        .collect();
    let missing_codes: Vec<String> = ARGOCD_V3_5_1_CODES
        .iter()
        .filter(|(kind, key)| !app_map::rows().any(|r| r.kind == *kind && r.key == *key))
        .map(|(kind, key)| format!("{} {key}", kind.as_str()))
        .collect();
    assert!(missing_keys.is_empty() && missing_codes.is_empty(), "no row for {missing_keys:?} {missing_codes:?}");
}

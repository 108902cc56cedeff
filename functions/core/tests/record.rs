//! A decision's record keeps the parts of the Application the policy reads
//! (`medic_core::record::fields_read`): on every case of the corpus the policy decides the same
//! on them as on the whole object, and a record stays under its size bound.

mod support;

use medic_core::record::{MAX_RECORD_BYTES, fields_read};
use support::{cases, decide};

/// Replay rests on this: a record is as good as the object for the policy. A row wrongly marked
/// not relevant (or a field the map misses) shows here as a case decided otherwise.
#[test]
fn every_case_is_decided_the_same_on_the_fields_read_as_on_the_whole_application() {
    let mut differ = Vec::new();
    let mut largest = (0, String::new());
    let (mut total, mut count) = (0, 0);
    for case in cases() {
        let fields = fields_read(&case.app);
        assert!(!fields.truncated, "{}: a corpus app fits a record", case.key());
        let size = serde_json::to_vec(&fields.app).unwrap().len();
        (total, count) = (total + size, count + 1);
        if size > largest.0 {
            largest = (size, case.key());
        }
        let whole = serde_json::to_value(decide(&case, &case.app)).unwrap();
        let recorded = serde_json::to_value(decide(&case, &fields.app)).unwrap();
        if whole != recorded {
            differ.push(format!("{}:\n  whole:    {whole}\n  recorded: {recorded}", case.key()));
        }
        // The worker records the Application as the model holds it, not as Argo CD sent it.
        let modelled = serde_json::to_value(support::application(&case, &case.app)).unwrap();
        let from_model = serde_json::to_value(decide(&case, &fields_read(&modelled).app)).unwrap();
        if whole != from_model {
            differ.push(format!("{} (from the model):\n  whole:    {whole}\n  recorded: {from_model}", case.key()));
        }
    }
    println!("largest record: {} bytes ({}); {} bytes on average", largest.0, largest.1, total / count.max(1));
    assert!(differ.is_empty(), "{} cases decided otherwise on their record:\n{}", differ.len(), differ.join("\n"));
}

/// What is not read is not kept: a field the map marks not relevant, an annotation no row names,
/// a field Argo CD does not serve; what a rule reads is.
#[test]
fn a_record_keeps_what_rules_read_and_drops_the_rest() {
    let app = serde_json::json!({
        "metadata": {
            "name": "a", "namespace": "argocd", "uid": "1b2c",
            "annotations": {"argocd.argoproj.io/refresh": "hard", "kubectl.kubernetes.io/last-applied-configuration": "{…}"},
            "labels": {"team": "payments"}
        },
        "spec": {"project": "p", "source": {"repoURL": "https://git.example.com/a.git", "helm": {"values": "big: yes"}}},
        "status": {"sync": {"status": "OutOfSync"}, "health": {"status": "Healthy"}, "notAField": 1}
    });
    let kept = fields_read(&app).app;
    assert_eq!(kept["metadata"]["name"], "a");
    assert_eq!(kept["status"]["sync"]["status"], "OutOfSync", "a rule reads the sync status");
    assert_eq!(kept["metadata"]["annotations"]["argocd.argoproj.io/refresh"], "hard", "a rule reads the refresh annotation");
    assert!(kept["metadata"]["annotations"].get("kubectl.kubernetes.io/last-applied-configuration").is_none(), "{kept}");
    assert_eq!(kept["metadata"]["labels"]["team"], "payments", "a scope's selector may read any label");
    assert!(kept["spec"]["source"].get("helm").is_none(), "Helm values are not relevant: {kept}");
    assert!(kept["metadata"].get("uid").is_none(), "{kept}");
    assert!(kept["status"].get("notAField").is_none(), "{kept}");
}

/// An app of thousands of resources is cut to the bound, marked, and keeps its identity.
#[test]
fn a_record_of_a_huge_app_is_cut_to_its_bound_and_says_so() {
    let resources: Vec<serde_json::Value> = (0..2000)
        .map(|i| serde_json::json!({"kind": "ConfigMap", "name": format!("cm-{i}"), "status": "Synced", "health": {"status": "Healthy"}}))
        .collect();
    let app = serde_json::json!({
        "metadata": {"name": "huge", "namespace": "argocd"},
        "status": {"sync": {"status": "Synced"}, "resources": resources}
    });
    let fields = fields_read(&app);
    assert!(fields.truncated);
    assert!(serde_json::to_vec(&fields.app).unwrap().len() <= MAX_RECORD_BYTES);
    assert_eq!(fields.app["metadata"]["name"], "huge");
    assert!(!fields.app["status"]["resources"].as_array().unwrap().is_empty(), "cut, not emptied");
}

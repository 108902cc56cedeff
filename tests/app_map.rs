//! The map of the Application (`medic_core::app_map`) against Argo CD's own swagger (v3.5.1): every
//! leaf of `v1alpha1Application` falls under a row, and every field row covers a leaf, so no field
//! is left out silently and no row describes a field Argo CD does not have. What each row claims
//! is proven on the corpus by functions/core/tests/app_map.rs.

use std::collections::BTreeMap;

use medic_core::app_map::{self, RowKind};

#[test]
fn every_leaf_of_the_swagger_s_application_has_a_row_and_every_field_row_a_leaf() {
    let Some(spec) = medic_sim::swagger::reference_spec("every_leaf_of_the_swagger_s_application_has_a_row_and_every_field_row_a_leaf")
    else {
        return;
    };
    let leaves = spec.leaves("v1alpha1Application");
    assert!(leaves.len() > 1000, "{} leaves: the walk reaches the whole Application", leaves.len());
    assert!(leaves.iter().any(|(p, t)| p == "status.operationState.syncResult.resources[].hookPhase" && t == "string"));
    assert!(leaves.iter().any(|(p, _)| p == "spec.sources[].helm.parameters[].name"), "lists of objects are walked");
    let mut uncovered = Vec::new();
    let mut won: BTreeMap<&str, usize> = BTreeMap::new();
    for (path, _) in &leaves {
        match app_map::row_for_field(path) {
            Some(row) => *won.entry(row.key).or_default() += 1,
            None => uncovered.push(path.as_str()),
        }
    }
    let dead: Vec<&str> = app_map::rows().filter(|r| r.kind == RowKind::Field && !won.contains_key(r.key)).map(|r| r.key).collect();
    assert!(uncovered.is_empty(), "{} leaves of v1alpha1Application have no row in the map:\n{}", uncovered.len(), uncovered.join("\n"));
    assert!(
        dead.is_empty(),
        "field rows that decide for no leaf of the swagger (misspelt, or shadowed by narrower rows): {}",
        dead.join(", ")
    );
}

//! The policy on every Argo CD version Argo Medic knows (`medic_core::versions::PROFILES`): each
//! corpus case decided as if that version served the app. A case that names its own version (the
//! `version` class: what changed between versions) is decided on that one only; every other case
//! must be right on all five, or carry what is right on each (`by_profile`): a case whose answer
//! depends on the version says so per profile, and cannot pass on one answer by chance.

mod support;

use medic_core::policy::DecisionPolicy;
use medic_core::versions::PROFILES;
use support::{cases, config_of};

#[test]
fn every_case_that_names_no_version_is_decided_alike_and_right_on_every_profile() {
    let mut decided = 0;
    let mut wrong = Vec::new();
    for case in cases().into_iter().filter(|c| c.argocd_version.is_none() && c.known_failing.is_none()) {
        let app = support::application(&case, &case.app);
        for profile in PROFILES {
            let mut config = config_of(&case);
            config.argocd_version = Some(format!("{}+0000000", profile.tag));
            let policy = DecisionPolicy::new(config);
            let history = match &case.history {
                None => medic_core::History::default(),
                Some(h) => {
                    let fresh = policy.decide(&app, &case.trigger, &medic_core::History::default(), case.now).unwrap();
                    medic_core::History { incident: fresh.incident.filter(|_| h.derive_incident), attempts: h.attempts.clone() }
                }
            };
            let d = policy.decide(&app, &case.trigger, &history, case.now).unwrap_or_else(|e| panic!("{}: {e}", case.id));
            decided += 1;
            let accept = case.by_profile.get(profile.tag).unwrap_or(&case.accept);
            if !case.by_profile.is_empty() && !case.by_profile.contains_key(profile.tag) {
                wrong.push(format!("{}: labels some profiles, not {}", case.key(), profile.tag));
            }
            if !accept.contains(&d.action) {
                wrong.push(format!("{} on {}: {} by {}", case.key(), profile.tag, d.action, d.rule));
            }
        }
    }
    println!("{decided} decisions: every versionless case on {} profiles", PROFILES.len());
    assert!(decided > 500, "{decided}");
    assert!(wrong.is_empty(), "decided wrong on a profile:\n{}", wrong.join("\n"));
}

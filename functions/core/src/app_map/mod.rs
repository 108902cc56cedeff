//! The map of the Application: every field of Argo CD's `v1alpha1Application`, and every
//! annotation, label, condition type, operation phase, sync code and health code its controller
//! reads or writes, with what it means, when the controller touches it, whether [`Application`]
//! models it, and what Argo Medic's policy does with it.
//!
//! The policy decides from the state Argo CD's controller reads, so this table is the method, not
//! its documentation: `sim/tests/api/swagger.rs` checks that every leaf of the swagger's
//! `v1alpha1Application` falls under exactly one row (no field is left out silently);
//! `functions/core/tests/app_map.rs` makes each row prove its claim on the corpus — a row with a
//! rule names a case and a flip of its field that changes the decision, and a row marked not
//! relevant is flipped in every case that has it without changing any decision; docs/decisions.md
//! carries the table as [`render_markdown`] prints it, and `medic decide` names the rows its rule
//! read ([`rows_read_by`]).
//!
//! Sources are cited as `path:line` in argoproj/argo-cd v3.5.1 (and gitops-engine, vendored at
//! `gitops-engine/` in that tree) unless a row names another version.
//!
//! [`Application`]: crate::Application

mod causes;
mod constants;
mod metadata;
mod operation;
mod spec;
mod status;

/// What a row covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RowKind {
    /// A field of `v1alpha1Application`, named by its swagger path: `spec.source.repoURL`, `[]`
    /// for a list's items, and a trailing `.*` for the whole subtree under a field.
    Field,
    /// A key of `metadata.annotations` (the constants of `common/common.go` and
    /// `pkg/apis/application/v1alpha1`, and Argo Medic's own).
    Annotation,
    /// A key of `metadata.labels`.
    Label,
    /// A `status.conditions[].type`.
    Condition,
    /// A `status.operationState.phase` (gitops-engine `pkg/sync/common/types.go`).
    Phase,
    /// A `status.sync.status` code.
    SyncCode,
    /// A `status.health.status` code (gitops-engine `pkg/health/health.go`).
    HealthCode,
    /// A `status.operationState.syncResult.resources[]` result or hook phase.
    ResultCode,
    /// A class of the cause beneath an error message (`crate::cause::CauseClass`): the rules
    /// read conditions, operation and hydration messages through it.
    Cause,
}

impl RowKind {
    /// The kind's name in the rendered map and in row names (`sync code`).
    pub fn as_str(self) -> &'static str {
        match self {
            RowKind::Field => "field",
            RowKind::Annotation => "annotation",
            RowKind::Label => "label",
            RowKind::Condition => "condition",
            RowKind::Phase => "phase",
            RowKind::SyncCode => "sync code",
            RowKind::HealthCode => "health code",
            RowKind::ResultCode => "result code",
            RowKind::Cause => "cause",
        }
    }
}

/// A near miss made from a corpus case by changing one field: `pointer` (a JSON pointer into the
/// case's Application) is set to `to` (JSON text; `null` removes the member).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flip {
    /// `<class>/<id>` of a case in `events/corpus/`.
    pub case: &'static str,
    /// The JSON pointer of the field to change (`/metadata/finalizers`).
    pub pointer: &'static str,
    /// The JSON text to set it to; `null` removes the member.
    pub to: &'static str,
}

/// What Argo Medic does with a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Policy rules read it: each is a prefix of a decision's rule (`failed-operation`,
    /// `failed-operation/hook-failed`, `opt-out`, `sync-gate`). Each flip turns one corpus case into
    /// a near miss whose decision (action, failure mode or rule) must differ.
    Rule {
        /// The rules that read the row, each a prefix of a decision's rule.
        rules: &'static [&'static str],
        /// The near misses that show it: each must change its case's decision.
        flips: &'static [Flip],
    },
    /// Read by Argo Medic outside the policy's choice (the app's identity, the actuator's
    /// idempotency keys, the sweep's field mask): changing it changes no decision.
    Carried(&'static str),
    /// Not relevant to a remediator, for the reason given: changing it changes no decision.
    NotRelevant(&'static str),
}

/// One row of the map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapRow {
    /// What the row covers: a field, an annotation or label key, a condition type, a code or a cause class.
    pub kind: RowKind,
    /// For [`RowKind::Field`], the swagger path (see there); otherwise the constant's value.
    pub key: &'static str,
    /// What it means.
    pub meaning: &'static str,
    /// When Argo CD's controller (or API server, repo-server) reads or writes it, with the source
    /// line.
    pub controller: &'static str,
    /// The field of [`crate::Application`] that models it (`status.operation_state.phase`), or
    /// `""` when it is not modelled.
    pub modelled: &'static str,
    /// What Argo Medic does with it: a rule reads it, it is carried, or it is not relevant.
    pub used: Use,
    /// For a non-field row, or a field row marked not relevant whose field no corpus case has:
    /// where to put it in a case to show it changes nothing. Unused for rule rows (their flips
    /// say it).
    pub probe: Option<Flip>,
}

/// Every row, in order: metadata, spec, operation, status, the constants, then the cause classes.
pub fn rows() -> impl Iterator<Item = &'static MapRow> {
    metadata::ROWS.iter().chain(spec::ROWS).chain(operation::ROWS).chain(status::ROWS).chain(constants::ROWS).chain(causes::ROWS)
}

impl MapRow {
    /// True when this field row covers the swagger path `path` (`spec.sources[].helm.values`).
    pub fn covers(&self, path: &str) -> bool {
        if self.kind != RowKind::Field {
            return false;
        }
        match self.key.strip_suffix(".*") {
            Some(prefix) => path == prefix || path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with(['.', '['])),
            None => path == self.key,
        }
    }

    /// How specific the row is for a path it covers: an exact row beats any subtree, a deeper
    /// subtree beats a shallower one.
    fn specificity(&self) -> usize {
        match self.key.strip_suffix(".*") {
            Some(prefix) => prefix.len(),
            None => usize::MAX,
        }
    }

    /// The rules of the policy that read this row.
    pub fn rules(&self) -> &'static [&'static str] {
        match self.used {
            Use::Rule { rules, .. } => rules,
            _ => &[],
        }
    }

    /// True when a decision made by `rule` (`failed-operation/hook-failed → ladder:escalate`)
    /// read this row: one of the row's rules is the classifier's rule or a `/`-prefix of it, or
    /// is the step after the arrow (`ladder:sync`, `sync-gate:escalate`).
    pub fn read_by(&self, rule: &str) -> bool {
        let (classifier, step) = rule.split_once(" → ").unwrap_or((rule, ""));
        self.rules().iter().any(|r| {
            classifier == *r || classifier.strip_prefix(r).is_some_and(|rest| rest.starts_with('/')) || (!step.is_empty() && step == *r)
        })
    }

    /// `field spec.source.repoURL`, `annotation argocd.argoproj.io/refresh`.
    pub fn name(&self) -> String {
        format!("{} {}", self.kind.as_str(), self.key)
    }
}

/// The field row that decides for the swagger path `path`: the most specific that covers it.
pub fn row_for_field(path: &str) -> Option<&'static MapRow> {
    rows().filter(|r| r.covers(path)).max_by_key(|r| r.specificity())
}

/// The rows a decision's rule read, in map order.
pub fn rows_read_by(rule: &str) -> Vec<&'static MapRow> {
    rows().filter(|r| r.read_by(rule)).collect()
}

/// The map as docs/decisions.md carries it, between its `app-map` markers.
pub fn render_markdown() -> String {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut out = String::from("| kind | key | meaning | Argo CD | modelled as | Argo Medic |\n|---|---|---|---|---|---|\n");
    for r in rows() {
        let used = match r.used {
            Use::Rule { rules, .. } => format!("rule: {}", rules.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", ")),
            Use::Carried(why) => format!("carried: {why}"),
            Use::NotRelevant(why) => format!("not relevant: {why}"),
        };
        let modelled = if r.modelled.is_empty() { "–".to_owned() } else { format!("`{}`", r.modelled) };
        out += &format!(
            "| {} | `{}` | {} | {} | {} | {} |\n",
            r.kind.as_str(),
            r.key,
            cell(r.meaning),
            cell(r.controller),
            modelled,
            cell(&used)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subtree_row_covers_its_field_and_below_and_an_exact_row_wins() {
        let subtree = MapRow {
            kind: RowKind::Field,
            key: "spec.source.helm.*",
            meaning: "",
            controller: "",
            modelled: "",
            used: Use::NotRelevant(""),
            probe: None,
        };
        assert!(subtree.covers("spec.source.helm"));
        assert!(subtree.covers("spec.source.helm.values"));
        assert!(subtree.covers("spec.source.helm.parameters[].name"));
        assert!(!subtree.covers("spec.source.helmfoo"));
        assert!(!subtree.covers("spec.source"));
        let exact = MapRow { key: "spec.source.helm.values", ..subtree };
        assert!(exact.specificity() > subtree.specificity());
    }

    #[test]
    fn a_row_is_read_by_its_rule_and_the_rules_beneath_it_only() {
        let row = MapRow {
            kind: RowKind::Phase,
            key: "Failed",
            meaning: "",
            controller: "",
            modelled: "",
            used: Use::Rule { rules: &["failed-operation"], flips: &[] },
            probe: None,
        };
        assert!(row.read_by("failed-operation/hook-failed → ladder:escalate"));
        assert!(row.read_by("failed-operation → ladder:escalate"));
        assert!(!row.read_by("failed-operation-x → ladder:escalate"));
        assert!(!row.read_by("conditions → ladder:escalate"));
        let gate = MapRow { used: Use::Rule { rules: &["ladder:sync"], flips: &[] }, ..row };
        assert!(gate.read_by("crd-race → ladder:sync"));
        assert!(!gate.read_by("crd-race → ladder:escalate"));
    }

    #[test]
    fn every_cause_class_has_a_row() {
        use crate::cause::CauseClass::*;
        for class in [RateLimited, Access, Permission, KindNotFound, Configuration, Rejected, Transient, Unknown] {
            assert!(rows().any(|r| r.kind == RowKind::Cause && r.key == class.as_str()), "cause {class} has no row");
        }
    }

    #[test]
    fn every_row_key_is_unique_within_its_kind() {
        let mut seen = std::collections::BTreeSet::new();
        for r in rows() {
            assert!(seen.insert((r.kind, r.key)), "{} appears twice", r.name());
            assert!(!r.meaning.is_empty() && !r.controller.is_empty(), "{}: meaning and controller are filled in", r.name());
            if let Use::Rule { rules, flips } = r.used {
                assert!(!rules.is_empty() && !flips.is_empty(), "{}: a rule row names its rules and at least one flip", r.name());
            }
        }
    }
}

//! `status` except `status.operationState`: what the controller last compared, the health it
//! aggregated, the conditions it raised, the managed resources, the deployments it recorded and the
//! source hydrator's state.

use super::{Flip, MapRow, RowKind::Field, Use};

pub(super) const ROWS: &[MapRow] = &[
    // status.sync
    MapRow {
        kind: Field,
        key: "status.sync.status",
        meaning: "`Synced`, `OutOfSync` or `Unknown`: whether the live resources match what the source renders at `status.sync.revision(s)`.",
        controller: "Computed by `CompareAppState` (`controller/state.go:927`-`1040`: OutOfSync when any non-hook resource differs, Unknown when the target state could not be loaded) and stored at `controller/appcontroller.go:1976`; set to Unknown on a spec error (`:1870`); `autoSync` acts only on OutOfSync (`:2347`).",
        modelled: "status.sync.status",
        used: Use::Rule {
            rules: &["prune-risk", "stale-status", "failed-operation", "self-heal-loop", "health-and-sync"],
            flips: &[
                // why it changes: prune-risk fires only on an OutOfSync app; a Synced one with nothing else wrong is healthy.
                Flip { case: "modes/prune-blast-radius", pointer: "/status/sync/status", to: "\"Synced\"" },
                // why it changes: OutOfSync with automated sync is held as awaiting auto-sync; Synced and Healthy is calm.
                Flip { case: "modes/out-of-sync-awaiting-auto-sync", pointer: "/status/sync/status", to: "\"Synced\"" },
                // why it changes: a Synced and Healthy app is calm, so a status never reconciled is not stale.
                Flip { case: "staleness/never-reconciled", pointer: "/status/sync/status", to: "\"Synced\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.sync.revision",
        meaning: "The commit (or chart version) a single-source app was last compared at; empty for a multi-source app, whose revisions are in `status.sync.revisions`.",
        controller: "Set by `CompareAppState` for a single source only (`controller/state.go:654`, resolved at `:1045`); `autoSync` syncs to it (`controller/appcontroller.go:2367`) and a `CompareWithRecent` reconcile compares at it (`:1916`).",
        modelled: "status.sync.revision",
        used: Use::Rule {
            rules: &["running-operation", "failed-operation", "stale-status", "sync-gate:escalate"],
            flips: &[
                // why it changes: with the target equal to the retried revision the retries are not pinned to an old one.
                Flip {
                    case: "version/unlimited-retries-without-refresh-on-3-5",
                    pointer: "/status/sync/revision",
                    to: "\"ccb3193f68bc6fd0a46490ba80314f9fe445e8eb\"",
                },
                // why it changes: a failed operation whose result is at another revision is history, and the app is Synced and Healthy.
                Flip {
                    case: "hooks/postsync-smoke-test-failed-app-synced-healthy",
                    pointer: "/status/sync/revision",
                    to: "\"0000000000000000000000000000000000000000\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.sync.revisions",
        meaning: "The revisions of a multi-source app's sources, in `spec.sources` order, as last compared.",
        controller: "Set by `CompareAppState` for multiple sources only, and then `status.sync.revision` stays empty (`controller/state.go:645`-`647`, resolved at `:1043`); `autoSync` syncs to them (`controller/appcontroller.go:2370`).",
        modelled: "status.sync.revisions",
        used: Use::Rule {
            // A multi-source app's revision: the controller writes only this list
            // (controller/state.go:645-656); `Application::revision` joins it, so a change in any
            // source is a new revision, and old failures and pinned retries are told by it.
            rules: &["failed-operation", "running-operation", "health-and-sync"],
            flips: &[
                // why it changes: at the revisions the hook failed at, the failure is current
                Flip {
                    case: "map/multi-source-hook-failed-at-revisions-since-replaced",
                    pointer: "/status/sync/revisions",
                    to: "[\"4.2.1\", \"e287ea4197234a05736ee8db6aa1d5d15a56dd98\"]",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.sync.comparedTo.*",
        meaning: "The source or sources the last comparison rendered: a copy of `spec.source`/`spec.sources` as they were.",
        controller: "Written with every comparison (`controller/state.go:638`-`651`); `needRefreshAppStatus` refreshes at once when the spec's sources differ from it (`controller/appcontroller.go:2119`, `currentSourceEqualsSyncedSource` at `:2093`).",
        modelled: "",
        used: Use::NotRelevant(
            "a spec change is compared on the controller's next pass (it forces a refresh level that resolves revisions), which moves `status.reconciledAt`; Argo Medic never edits the source",
        ),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.sync.comparedTo.destination.*",
        meaning: "The destination the last comparison used: a copy of `spec.destination`.",
        controller: "Written with every comparison (`controller/state.go:640`); a differing `spec.destination` triggers a refresh (`controller/appcontroller.go:2138`).",
        modelled: "",
        used: Use::NotRelevant(
            "a destination change is compared on the controller's next pass; the incident follows the revision, not the destination",
        ),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.sync.comparedTo.ignoreDifferences.*",
        meaning: "The `ignoreDifferences` the last comparison applied: a copy of `spec.ignoreDifferences`.",
        controller: "Written with every comparison (`controller/state.go:641`); a differing `spec.ignoreDifferences` triggers a refresh (`controller/appcontroller.go:2142`).",
        modelled: "",
        used: Use::NotRelevant("diff normalisation is the controller's; its outcome shows in `status.sync.status`, which the rules read"),
        probe: None,
    },
    // status.health
    MapRow {
        kind: Field,
        key: "status.health.status",
        meaning: "The app's aggregated health: the worst health of its non-hook resources (`Healthy`, `Progressing`, `Degraded`, `Suspended`, `Missing`, `Unknown`).",
        controller: "Aggregated by `setApplicationHealth` (`controller/health.go:20`-`93`: hooks, ignored resources and a child app's Missing/Unknown do not count) and stored at `controller/appcontroller.go:1977`; Unknown on a spec error (`:1871`).",
        modelled: "status.health.status",
        used: Use::Rule {
            rules: &["stale-status", "failed-operation", "health-and-sync"],
            flips: &[
                // why it changes: Degraded escalates; Healthy and Synced is calm.
                Flip { case: "modes/health-degraded", pointer: "/status/health/status", to: "\"Healthy\"" },
                // why it changes: a stale Synced and Healthy status is calm, so it is not refreshed.
                Flip { case: "staleness/degraded-status-two-hours-old", pointer: "/status/health/status", to: "\"Healthy\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.health.message",
        meaning: "Deprecated: a message for the app's health; the controller no longer writes it (`pkg/apis/application/v1alpha1/types.go:1957`-`1960`).",
        controller: "Not written since `setApplicationHealth` returns only a code (`controller/health.go:20`).",
        modelled: "status.health.message",
        used: Use::NotRelevant("deprecated and empty; the resources' own health messages are what explain a health"),
        probe: Some(Flip {
            case: "modes/health-degraded",
            pointer: "/status/health/message",
            to: "\"Deployment web has 0 of 3 available replicas\"",
        }),
    },
    MapRow {
        kind: Field,
        key: "status.health.lastTransitionTime",
        meaning: "When `status.health.status` last changed.",
        controller: "Set by `persistAppStatus` when the health code changes and carried over otherwise (`controller/appcontroller.go:2245`-`2256`), the one place it is written.",
        modelled: "status.health.last_transition_time",
        used: Use::Rule {
            rules: &["health-and-sync"],
            flips: &[
                // why it changes: Progressing for a minute is a rollout still in its window, not a stale Progressing.
                Flip { case: "modes/stale-progressing", pointer: "/status/health/lastTransitionTime", to: "\"2026-11-01T12:29:00Z\"" },
            ],
        },
        probe: None,
    },
    // status.conditions
    MapRow {
        kind: Field,
        key: "status.conditions[].type",
        meaning: "The kind of condition (`ComparisonError`, `SyncError`, `SharedResourceWarning`, …); the types the map knows have rows of kind condition.",
        controller: "Each writer replaces only its own types (`ApplicationStatus.SetConditions`, `pkg/apis/application/v1alpha1/types.go:3712`): comparison (`controller/state.go:1108`), spec validation (`controller/appcontroller.go:2186`), auto-sync (`:1958`), orphaned resources (`:689`); sorted by type, message and time (`types.go:3739`).",
        modelled: "status.conditions[].kind",
        used: Use::Rule {
            rules: &["stale-status", "failed-operation", "conditions"],
            flips: &[
                // why it changes: without the ComparisonError the Unknown sync status is held as a transient comparison error.
                Flip { case: "modes/source-config-error", pointer: "/status/conditions/0/type", to: "\"OrphanedResourceWarning\"" },
                // why it changes: an orphaned-resources warning leaves the app calm; a shared resource escalates.
                Flip {
                    case: "conflicts/orphaned-resources-warning-only",
                    pointer: "/status/conditions/0/type",
                    to: "\"SharedResourceWarning\"",
                },
                // why it changes: without a SyncError condition the transient failure is not an auto-sync that gave up.
                Flip {
                    case: "version/retries-exhausted-message-3-5",
                    pointer: "/status/conditions/0/type",
                    to: "\"OrphanedResourceWarning\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.conditions[].message",
        meaning: "What the condition reports: a ComparisonError's wrapped repo-server or Git error, a SyncError's reason.",
        controller: "Written with the condition (`controller/state.go:698`, `controller/appcontroller.go:2398`, `:2439`); a condition keeps its `lastTransitionTime` while its message stays the same (`pkg/apis/application/v1alpha1/types.go:3729`-`3737`).",
        modelled: "status.conditions[].message",
        used: Use::Rule {
            rules: &["failed-operation", "conditions"],
            flips: &[
                // why it changes: a missing repository is a configuration error to escalate, not throttling to wait out.
                Flip {
                    case: "rate-limit/github-git-429",
                    pointer: "/status/conditions/0/message",
                    to: "\"Failed to load target state: rpc error: code = Unknown desc = repository not found\"",
                },
                // why it changes: a SyncError that does not say the retries were spent leaves a plain transient sync failure.
                Flip {
                    case: "version/retries-exhausted-message-3-5",
                    pointer: "/status/conditions/0/message",
                    to: "\"some other sync error\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.conditions[].lastTransitionTime",
        meaning: "When the condition appeared or its message last changed.",
        controller: "Set to now for a new condition or a changed message, kept otherwise (`pkg/apis/application/v1alpha1/types.go:3724`-`3737`).",
        modelled: "status.conditions[].last_transition_time",
        used: Use::Rule {
            rules: &["conditions"],
            flips: &[
                // why it changes: a transient comparison error older than the grace period is no longer held; the controller's later reconciles count as the refresh, so it escalates.
                Flip {
                    case: "modes/comparison-error-transient",
                    pointer: "/status/conditions/0/lastTransitionTime",
                    to: "\"2026-11-01T11:00:00Z\"",
                },
            ],
        },
        probe: None,
    },
    // status.resources
    MapRow {
        kind: Field,
        key: "status.resources[].group",
        meaning: "The API group of a managed resource (`\"\"` for the core group).",
        controller: "From the live object, else the target (`controller/state.go:948`); resources are sorted by group, kind, namespace and name (`controller/appcontroller.go:1979`).",
        modelled: "status.resources[].group",
        used: Use::Rule {
            rules: &["health-and-sync"],
            flips: &[
                // why it changes: a Progressing resource of a built-in group is not a custom health check that never turns Healthy.
                Flip { case: "custom-health/kafka-progressing-three-hours", pointer: "/status/resources/8/group", to: "\"apps\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.resources[].version",
        meaning: "The API version of a managed resource.",
        controller: "From the live object, else the target (`controller/state.go:947`).",
        modelled: "status.resources[].version",
        used: Use::NotRelevant("a removed API version shows in the sync result's message, which the kind-not-found rules read"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.resources[].kind",
        meaning: "The kind of a managed resource.",
        controller: "From the live object, else the target (`controller/state.go:946`).",
        modelled: "status.resources[].kind",
        used: Use::Rule {
            rules: &["prune-risk", "sync-gate:escalate", "failed-operation", "health-and-sync"],
            flips: &[
                // why it changes: pruning one ConfigMap is within the blast radius; pruning a Namespace is not, so the transient failure is re-synced.
                Flip {
                    case: "modes/transient-failure-but-namespace-would-be-pruned",
                    pointer: "/status/resources/8/kind",
                    to: "\"ConfigMap\"",
                },
                // why it changes: without the CustomResourceDefinition among its resources the app does not ship the CRD, so the kind is not served.
                Flip { case: "kind-not-found/crd-in-app-retries-exhausted", pointer: "/status/resources/0/kind", to: "\"ConfigMap\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.resources[].namespace",
        meaning: "The namespace of a managed resource; empty for a cluster-scoped one.",
        controller: "From the live object, else the target (`controller/state.go:944`); a namespaced resource without one raises an InvalidSpecError condition (`:1006`).",
        modelled: "status.resources[].namespace",
        used: Use::NotRelevant("rules name resources by kind and name; where they live decides nothing"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.resources[].name",
        meaning: "The name of a managed resource.",
        controller: "From the live object, else the target (`controller/state.go:945`).",
        modelled: "status.resources[].name",
        used: Use::Rule {
            rules: &["failed-operation"],
            flips: &[
                // why it changes: a CRD named for another group does not define the missing kind, so the kind is not served.
                Flip {
                    case: "kind-not-found/crd-in-app-retries-exhausted",
                    pointer: "/status/resources/0/name",
                    to: "\"prometheuses.example.com\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.resources[].status",
        meaning: "The resource's own sync status; empty for hooks and ignored resources.",
        controller: "Set by `CompareAppState` (`controller/state.go:980`-`1013`); `autoSync` skips an app whose only out-of-sync resources need pruning while automated prune is off (`controller/appcontroller.go:2352`-`2363`).",
        modelled: "status.resources[].status",
        used: Use::Rule {
            rules: &["prune-risk", "health-and-sync/prune-only-pending"],
            flips: &[
                // why it changes: a resource out of sync that is not an extra one: automated sync
                // runs, and with it the prune-risk rule
                Flip { case: "map/automated-prune-off-only-extra-resources", pointer: "/status/resources/0/status", to: "\"OutOfSync\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.resources[].health.status",
        meaning: "The health of one managed resource, from the built-in checks or a Lua health script.",
        controller: "Written into the Application only with `--persist-resource-health` (`controller/health.go:68`-`73`; off by default since v3.0, `cmd/argocd-application-controller/commands/argocd_application_controller.go:293`, on in v2.14); the API server's GET fills it from the resource tree otherwise (`server/application/application.go:801`, `:2905`).",
        modelled: "status.resources[].health.status",
        used: Use::Rule {
            rules: &["health-and-sync"],
            flips: &[
                // why it changes: with no custom resource Progressing, a long Progressing app is stale status, refreshed rather than escalated.
                Flip {
                    case: "custom-health/kafka-progressing-three-hours",
                    pointer: "/status/resources/8/health/status",
                    to: "\"Healthy\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.resources[].health.message",
        meaning: "The health check's explanation (`Waiting for Ready condition`).",
        controller: "Written with the resource's health (`controller/health.go:69`), or filled by the API server from the resource tree (`server/application/application.go:2912`).",
        modelled: "status.resources[].health.message",
        used: Use::Carried("quoted in the evidence of a custom health that never turns Healthy"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.resources[].health.lastTransitionTime",
        meaning: "Deprecated and unused for resources (`pkg/apis/application/v1alpha1/types.go:1971`-`1974`).",
        controller: "Never written: the persisted health carries only status and message (`controller/health.go:69`).",
        modelled: "status.resources[].health.last_transition_time",
        used: Use::NotRelevant("never written; the app's own `status.health.lastTransitionTime` is the one that moves"),
        probe: Some(Flip {
            case: "custom-health/kafka-progressing-three-hours",
            pointer: "/status/resources/8/health/lastTransitionTime",
            to: "\"2026-11-01T09:00:00Z\"",
        }),
    },
    MapRow {
        kind: Field,
        key: "status.resources[].hook",
        meaning: "True for a live hook resource (a Job or Pod annotated `argocd.argoproj.io/hook` or `helm.sh/hook`) still in the cluster.",
        controller: "`isHook` (`controller/state.go:949`, `controller/hook.go:60`); hooks count neither toward the sync status (`controller/state.go:981`) nor toward health (`controller/health.go:30`).",
        modelled: "status.resources[].hook",
        used: Use::Rule {
            rules: &["running-operation", "sync-gate:escalate"],
            flips: &[
                // why it changes: without a hook waiting behind the health gate the long operation is just running too long.
                Flip { case: "modes/postsync-blocked-by-health", pointer: "/status/resources/8/hook", to: "false" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.resources[].requiresPruning",
        meaning: "True for a live resource the source no longer renders: a sync with prune deletes it.",
        controller: "`targetObj == nil && liveObj != nil` for an object this app tracks (`controller/state.go:950`); `autoSync` refuses to prune every resource of the app (`controller/appcontroller.go:2431`-`2441`) and skips prune-only differences while automated prune is off (`:2352`-`2363`).",
        modelled: "status.resources[].requires_pruning",
        used: Use::Rule {
            rules: &["prune-risk", "sync-gate:escalate"],
            flips: &[
                // why it changes: with no Namespace to prune the transient failure is re-synced.
                Flip {
                    case: "modes/transient-failure-but-namespace-would-be-pruned",
                    pointer: "/status/resources/8/requiresPruning",
                    to: "false",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.resources[].syncWave",
        meaning: "The resource's `argocd.argoproj.io/sync-wave` (0 when unset).",
        controller: "From the target, or for a live hook from its manifest (`controller/state.go:953`-`962`); the sync itself orders by the manifests' waves, not by this field.",
        modelled: "status.resources[].sync_wave",
        used: Use::NotRelevant("the order of a sync is Argo CD's; the result's messages say which wave failed"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.resources[].requiresDeletionConfirmation",
        meaning: "True when deleting or pruning the resource waits for a person (`Delete=confirm` or `Prune=confirm`).",
        controller: "`isObjRequiresDeletionConfirmation` reads the resource's sync-options annotation, else the app's sync options (`controller/state.go:951`, `:1171`-`1192`).",
        modelled: "status.resources[].requires_deletion_confirmation",
        used: Use::Rule {
            rules: &["running-operation"],
            flips: &[
                // why it changes: without a resource awaiting confirmation the running operation is simply in progress.
                Flip { case: "modes/prune-confirm-pending", pointer: "/status/resources/8/requiresDeletionConfirmation", to: "false" },
            ],
        },
        probe: None,
    },
    // status, top level
    MapRow {
        kind: Field,
        key: "status.reconciledAt",
        meaning: "When the controller last compared the app with the latest state of its source.",
        controller: "Moved only by a comparison at `CompareWithLatest` or above (periodic expiry, spec change, refresh annotation) or when unset (`controller/appcontroller.go:1973`-`1975`); resource events reconcile at `CompareWithRecent` without moving it (`:475`-`478`), and neither a spec error (`:1869`-`1882`) nor a repo error within the grace period (`:1927`, `controller/state.go:700`-`711`) moves it.",
        modelled: "status.reconciled_at",
        used: Use::Rule {
            rules: &["stale-status", "health-and-sync", "ladder:refresh", "ladder:escalate"],
            flips: &[
                // why it changes: a fresh Degraded status is believed and escalated instead of refreshed.
                Flip { case: "staleness/degraded-status-two-hours-old", pointer: "/status/reconciledAt", to: "\"2026-11-01T12:28:00Z\"" },
                // why it changes: a fresh Unknown sync status is held for the repo-error grace period instead of refreshed.
                Flip { case: "staleness/unknown-status-an-hour-old", pointer: "/status/reconciledAt", to: "\"2026-11-01T12:28:00Z\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.observedAt",
        meaning: "Deprecated: when the live state was last observed without comparing the source.",
        controller: "No longer written (`pkg/apis/application/v1alpha1/types.go:1228`-`1231`).",
        modelled: "",
        used: Use::NotRelevant("never written by a supported controller; `status.reconciledAt` is the freshness Argo Medic reads"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.sourceType",
        meaning: "How a single source is rendered: `Helm`, `Kustomize`, `Directory` or `Plugin`.",
        controller: "Reported by the repo-server with the manifests (`controller/state.go:1103`) and stored at `controller/appcontroller.go:1982`.",
        modelled: "",
        used: Use::NotRelevant("how the source renders does not change what a failure needs; the cause beneath a render error does"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.sourceTypes",
        meaning: "The render type of each of a multi-source app's sources.",
        controller: "Reported by the repo-server (`controller/state.go:1099`) and stored at `controller/appcontroller.go:1983`.",
        modelled: "",
        used: Use::NotRelevant("as `status.sourceType`"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.controllerNamespace",
        meaning: "The namespace of the application controller that reconciles the app.",
        controller: "Stored with every full reconcile (`controller/appcontroller.go:1984`).",
        modelled: "",
        used: Use::NotRelevant("Argo Medic talks to the API server, not to a controller"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.resourceHealthSource",
        meaning: "Where resource health lives: empty (inline, in `status.resources[].health`) or `appTree` (the controller's cache only).",
        controller: "Set by `setApplicationHealth` from `--persist-resource-health` (`controller/health.go:95`-`99`); with `appTree` the API server fills `status.resources[].health` from the tree on GET and watch (`server/application/application.go:2905`-`2925`).",
        modelled: "",
        used: Use::NotRelevant(
            "Argo Medic decides on the API server's GET, which carries the resources' health either way; a tree missing from the cache leaves the health absent, which reads as no custom resource Progressing",
        ),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.summary.externalURLs",
        meaning: "The external URLs of the app's resources (ingress hosts, `link.argocd.argoproj.io/*` annotations).",
        controller: "`ApplicationTree.GetSummary` (`pkg/apis/application/v1alpha1/types.go:2140`), stored on every reconcile (`controller/appcontroller.go:1851`, `:1944`).",
        modelled: "status.summary.external_urls",
        used: Use::NotRelevant("informational links for people"),
        probe: Some(Flip { case: "modes/healthy", pointer: "/status/summary/externalURLs", to: "[\"https://web.example.com\"]" }),
    },
    MapRow {
        kind: Field,
        key: "status.summary.images",
        meaning: "The container images the app's resources run.",
        controller: "`ApplicationTree.GetSummary` (`pkg/apis/application/v1alpha1/types.go:2152`), stored on every reconcile (`controller/appcontroller.go:1944`).",
        modelled: "status.summary.images",
        used: Use::NotRelevant("an image that cannot be pulled shows as a Degraded resource, which the rules read"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.summary.isAppOfApps",
        meaning: "True when the app's resource tree holds an `argoproj.io` Application: a parent of other apps.",
        controller: "`ApplicationTree.GetSummary` (`pkg/apis/application/v1alpha1/types.go:2155`).",
        modelled: "",
        used: Use::NotRelevant(
            "not read: a child Application that requires pruning counts toward the prune limits like any resource, although pruning it deletes the child's workloads when it carries the resources finalizer",
        ),
        probe: None,
    },
    // status.history
    MapRow {
        kind: Field,
        key: "status.history[].deployStartedAt",
        meaning: "When the operation that produced this deployment started.",
        controller: "`persistRevisionHistory` copies the operation's `startedAt` (`controller/state.go:1212`, `:1222`); an entry is added only for a successful, non-dry-run, full sync (`controller/sync.go:408`) and the list is cut to `spec.revisionHistoryLimit`, 10 by default (`controller/state.go:1229`).",
        modelled: "status.history[].deploy_started_at",
        used: Use::Carried(
            "the actuator's `operation_started_after`: a resumed sync claim whose key Argo CD no longer shows is not sent again when a deployment started after it",
        ),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.history[].deployedAt",
        meaning: "When the deployment finished.",
        controller: "Set to the time the entry is recorded (`controller/state.go:1211`, `:1221`).",
        modelled: "status.history[].deployed_at",
        used: Use::Carried("the actuator's fallback when an entry has no `deployStartedAt` (entries older than that field)"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.history[].id",
        meaning: "The deployment's number, one more than the last; what `argocd app rollback` takes.",
        controller: "`persistRevisionHistory` (`controller/state.go:1204`-`1207`).",
        modelled: "status.history[].id",
        // Which entry is the last deployment; Argo Medic never rolls back.
        used: Use::Rule {
            rules: &["sync-gate:escalate"],
            flips: &[
                // why it changes: numbered after the newer one, the older revision is the last deployment.
                Flip { case: "version/target-older-than-the-last-deployment", pointer: "/status/history/0/id", to: "18" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.history[].revision",
        meaning: "The revision a single-source app was deployed at.",
        controller: "The comparison's resolved revision at the end of the sync (`controller/state.go:1220`, from `controller/sync.go:409`); empty for a multi-source app.",
        modelled: "status.history[].revision",
        used: Use::Rule {
            rules: &["sync-gate:escalate"],
            flips: &[
                // why it changes: a target never deployed before is no move back.
                Flip {
                    case: "version/target-older-than-the-last-deployment",
                    pointer: "/status/history/0/revision",
                    to: "\"0000000000000000000000000000000000000000\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.history[].revisions",
        meaning: "The revisions a multi-source app was deployed at.",
        controller: "`persistRevisionHistory` for multiple sources (`controller/state.go:1215`).",
        modelled: "status.history[].revisions",
        used: Use::Rule {
            rules: &["sync-gate:escalate"],
            flips: &[
                // why it changes: a target never deployed before is no move back.
                Flip {
                    case: "version/target-older-than-the-last-deployment-multi-source",
                    pointer: "/status/history/0/revisions",
                    to: "[\"4.2.1\", \"0000000000000000000000000000000000000000\"]",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.history[].initiatedBy.*",
        meaning: "Who started the deployment: a user name, or `automated` for auto-sync.",
        controller: "Copied from the operation (`controller/state.go:1216`, `:1225`).",
        modelled: "status.history[].initiated_by",
        used: Use::NotRelevant("who started the last operation is read from `status.operationState`, not from history"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.history[].source.*",
        meaning: "The single source as it was deployed: a copy of `spec.source` at the time.",
        controller: "`persistRevisionHistory` (`controller/state.go:1224`); `argocd app rollback` syncs it again.",
        modelled: "",
        used: Use::NotRelevant("rendering input of a past deployment; Argo Medic never rolls back or edits sources"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.history[].sources.*",
        meaning: "The sources of a multi-source app as deployed.",
        controller: "`persistRevisionHistory` (`controller/state.go:1214`).",
        modelled: "",
        used: Use::NotRelevant("as `status.history[].source.*`"),
        probe: None,
    },
    // status.sourceHydrator (Argo CD ≥3.1)
    MapRow {
        kind: Field,
        key: "status.sourceHydrator.currentOperation.phase",
        meaning: "The last hydration's phase: `Hydrating`, `Failed` or `Hydrated` (`pkg/apis/application/v1alpha1/types.go:1299`).",
        controller: "`Hydrating` when a run starts (`controller/hydrator/hydrator.go:312`), `Failed` on an error (`:324`), `Hydrated` on success (`:267`); a failure is retried after 2 minutes or on a refresh (`:650`-`659`), and the app keeps syncing the last hydrated commit meanwhile.",
        modelled: "status.source_hydrator.current_operation.phase",
        used: Use::Rule {
            rules: &["hydration"],
            flips: &[
                // why it changes: a hydration that succeeded leaves a Synced and Healthy app with nothing to do.
                Flip {
                    case: "causes/hydration-failed-render-error",
                    pointer: "/status/sourceHydrator/currentOperation/phase",
                    to: "\"Hydrated\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.sourceHydrator.currentOperation.message",
        meaning: "`Failed to hydrate: <the error>` after a failure; empty otherwise.",
        controller: "Set by `setAppHydratorError` (`controller/hydrator/hydrator.go:327`), cleared on success (`:268`).",
        modelled: "status.source_hydrator.current_operation.message",
        used: Use::Rule {
            rules: &["hydration"],
            flips: &[
                // why it changes: a refused connection to the commit server passes; the hydrator retries by itself, so nothing is escalated.
                Flip {
                    case: "causes/hydration-failed-render-error",
                    pointer: "/status/sourceHydrator/currentOperation/message",
                    to: "\"Failed to hydrate: failed to commit and push: rpc error: code = Unavailable desc = connection error: desc = \\\"transport: Error while dialing: dial tcp 10.20.5.9:8086: connect: connection refused\\\"\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.sourceHydrator.currentOperation.finishedAt",
        meaning: "When the last hydration failed or finished.",
        controller: "Set on failure (`controller/hydrator/hydrator.go:326`) and on success (`:266`); the 2-minute retry cool-down counts from it (`:651`-`652`).",
        modelled: "status.source_hydrator.current_operation.finished_at",
        used: Use::Carried(
            "when a failed hydration's incident began (the incident key); a failed hydration that needs a person escalates at once",
        ),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.sourceHydrator.currentOperation.*",
        meaning: "The rest of the last hydration: when it started, the dry and hydrated commits, and the hydrator settings it ran with.",
        controller: "Written by `markAppsHydrating` (`controller/hydrator/hydrator.go:309`-`314`) and on success (`:264`-`273`); a run `Hydrating` longer than the refresh timeout is queued again (`:148`-`150`), and a spec change starts a new one (`:648`).",
        modelled: "",
        used: Use::NotRelevant("which commits were hydrated is the hydrator's bookkeeping; its phase and message say whether it is stuck"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.sourceHydrator.lastSuccessfulOperation.*",
        meaning: "The dry and hydrated commits and settings of the last hydration that succeeded.",
        controller: "Written on success (`controller/hydrator/hydrator.go:275`-`279`); a dry commit equal to its `drySHA` is not hydrated again (`:441`-`443`).",
        modelled: "",
        used: Use::NotRelevant("the app syncs the hydrated branch; which commit it came from decides nothing Argo Medic does"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.sourceHydrator.lastComparedDryRevision",
        meaning: "The dry source's revision as of the hydrator's last check, updated even when nothing needed hydrating.",
        controller: "Set after each check (`controller/hydrator/hydrator.go:134`-`137`) and on success (`:274`); empty means hydrate now (`:614`-`616`).",
        modelled: "",
        used: Use::NotRelevant("hydrator bookkeeping"),
        probe: None,
    },
];

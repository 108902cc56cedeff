//! `spec`: what the app deploys, where to, and how Argo CD syncs it.

use super::{Flip, MapRow, RowKind::Field, Use};

/// Why a source field is no business of Argo Medic's.
const RENDERING: &str = "rendering input the repo-server reads; a source that does not render shows as a ComparisonError condition, which the conditions rule reads, and Argo Medic never edits the source";

pub(super) const ROWS: &[MapRow] = &[
    MapRow {
        kind: Field,
        key: "spec.project",
        meaning: "The AppProject the app belongs to (empty means `default`, `pkg/apis/application/v1alpha1/types.go:3828`); its source repos, destinations, sync windows and roles bound the app.",
        controller: "Loaded for every reconcile and operation (`controller/appcontroller.go:417`, `getAppProj`); a missing project is an InvalidSpecError condition (`:2744`) and its sync windows gate automated sync (`:1947`). The controller writes `default` into an empty one (`:2196`, `util/argo/argo.go:1018`).",
        modelled: "spec.project",
        used: Use::Rule {
            rules: &["scope"],
            flips: &[
                // why it changes: `team-a` is one of the case's configured projects, so the scope gate
                // passes and the Degraded app is classified instead of left alone.
                Flip { case: "modes/out-of-scope", pointer: "/spec/project", to: "\"team-a\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.destination.server",
        meaning: "The destination cluster by API server URL (exclusive with `name`).",
        controller: "Resolved to a cluster at each reconcile (`controller/appcontroller.go:1884`, `argo.GetDestinationCluster`) and recorded in `status.sync.comparedTo`, so a change forces a refresh (`:2138`); if the cluster is gone, deletion drops the finalizers without deleting anything (`:1298`-`1308`).",
        modelled: "spec.destination.server",
        used: Use::Carried(
            "the fleet's cluster scope (`fleet::scopes_of`: apps down together on one cluster are one cause) and the escalation's Destination line; the sweep lists it",
        ),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.destination.name",
        meaning: "The destination cluster by its Argo CD cluster name (exclusive with `server`).",
        controller: "Resolved through the cluster secrets like `server` (`controller/appcontroller.go:1884`); compared with `status.sync.comparedTo.destination` (`:2138`).",
        modelled: "spec.destination.name",
        used: Use::Carried("the fleet's cluster scope when `server` is empty (`fleet::scopes_from`) and the escalation's Destination line"),
        probe: Some(Flip { case: "modes/healthy", pointer: "/spec/destination/name", to: "\"in-cluster\"" }),
    },
    MapRow {
        kind: Field,
        key: "spec.destination.namespace",
        meaning: "The namespace of namespaced resources that name none, and the one `CreateNamespace=true` creates.",
        controller: "Set on target objects before the diff (`controller/state.go:744`) and handed to the sync (`controller/sync.go:347`); orphaned-resource monitoring watches it (`controller/appcontroller.go:587`).",
        modelled: "spec.destination.namespace",
        used: Use::Carried("the escalation's Destination line and the runbooks' `<namespace>` placeholder"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.source.repoURL",
        meaning: "The Git, Helm or OCI repository of a single-source app.",
        controller: "Fetched by the repo-server at each comparison (`controller/state.go:206`, `GetRepoObjs`); the project must permit it, else an InvalidSpecError condition (`controller/appcontroller.go:2176`). Ignored when `spec.sources` or `spec.sourceHydrator` is set (`pkg/apis/application/v1alpha1/types.go:246`-`258`).",
        modelled: "spec.source.repo_url",
        used: Use::Carried(
            "the fleet's repo-host scope (`fleet::scopes_of`: apps whose Git host is down together are one cause); the sweep lists it",
        ),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.source.targetRevision",
        meaning: "The branch, tag, semver range or commit to deploy (`HEAD` when empty).",
        controller: "Resolved to a commit at each comparison (`controller/appcontroller.go:1915`, `controller/state.go:418`); automated sync syncs the resolved `status.sync.revision` (`controller/appcontroller.go:2376`), and the API server refuses a sync to any other revision while automated sync is on (`server/application/application.go:2252`-`2256`).",
        modelled: "spec.source.target_revision",
        // Also `Application::revision`'s last fallback and the escalation's target revision.
        used: Use::Rule {
            rules: &["sync-gate:escalate", "ladder:sync"],
            flips: &[
                // why it changes: a spec naming the older revision is a person's rollback; moved
                // elsewhere, syncing that revision would move the app back (argoproj/argo-cd#29716).
                Flip { case: "version/rollback-pinned-in-the-spec", pointer: "/spec/source/targetRevision", to: "\"main\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.source.path",
        meaning: "The directory of the repository that holds the manifests (Git sources).",
        controller: "Rendering input; the whole source is compared with `status.sync.comparedTo.source`, so an edit forces a refresh (`controller/appcontroller.go:2119`), and with the last sync's source, so an edit lets automated sync try again after a failed attempt (`:2508`, `alreadyAttemptedSync`).",
        modelled: "spec.source.path",
        used: Use::NotRelevant(RENDERING),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.source.chart",
        meaning: "The chart of a Helm-repository source.",
        controller: "Rendering input, compared like `path` (`controller/appcontroller.go:2119`, `:2508`).",
        modelled: "spec.source.chart",
        used: Use::NotRelevant(RENDERING),
        probe: Some(Flip { case: "modes/healthy", pointer: "/spec/source/chart", to: "\"web\"" }),
    },
    MapRow {
        kind: Field,
        key: "spec.source.*",
        meaning: "The rest of a single source: the `helm`, `kustomize`, `directory` (jsonnet) and `plugin` rendering options, `ref` and `name` (for multi-source apps), and `tagPrefix` (the tags a semver `targetRevision` considers).",
        controller: "Read by the repo-server when it renders (`controller/state.go:206`); compared like `path`, so any edit forces a refresh and a new automated sync attempt (`controller/appcontroller.go:2119`, `:2508`).",
        modelled: "",
        used: Use::NotRelevant(RENDERING),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.sources[].repoURL",
        meaning: "One source's repository in a multi-source app.",
        controller: "A non-empty `sources` replaces `source` (`pkg/apis/application/v1alpha1/types.go:294`, `HasMultipleSources`); each source is fetched and rendered at each comparison (`controller/appcontroller.go:1904`-`1908`).",
        modelled: "spec.sources[].repo_url",
        used: Use::Carried("the fleet's repo-host scope (`fleet::scopes_of`), every source's host; the sweep lists it"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.sources[].targetRevision",
        meaning: "One source's branch, tag, semver range or commit.",
        controller: "Resolved per source at each comparison (`controller/appcontroller.go:1909`), into `status.sync.revisions`; the API server refuses a sync of a source to another revision while automated sync is on (`server/application/application.go:2227`-`2231`).",
        modelled: "spec.sources[].target_revision",
        // Also `Application::revision`'s last fallback (the first source) and the escalation's
        // target revision.
        used: Use::Rule {
            rules: &["sync-gate:escalate"],
            flips: &[
                // why it changes: naming the older commit in the spec makes it a person's rollback.
                Flip {
                    case: "version/target-older-than-the-last-deployment-multi-source",
                    pointer: "/spec/sources/1/targetRevision",
                    to: "\"3953d166d67e642f7bfcae47bb4259c38b330da6\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.sources[].path",
        meaning: "One source's directory in its repository.",
        controller: "Rendering input; `sources` is compared with `status.sync.comparedTo.sources` and the last sync's sources (`controller/appcontroller.go:2094`-`2095`, `:2505`-`2506`).",
        modelled: "spec.sources[].path",
        used: Use::NotRelevant(RENDERING),
        probe: Some(Flip {
            case: "hooks/postsync-reindex-failed-multi-source-synced-healthy",
            pointer: "/spec/sources/1/path",
            to: "\"values\"",
        }),
    },
    MapRow {
        kind: Field,
        key: "spec.sources[].chart",
        meaning: "One source's Helm chart.",
        controller: "Rendering input, compared like `path` (`controller/appcontroller.go:2094`, `:2505`).",
        modelled: "spec.sources[].chart",
        used: Use::NotRelevant(RENDERING),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.sources[].*",
        meaning: "The rest of each source: rendering options (`helm`, `kustomize`, `directory`, `plugin`), `ref` (the name other sources use for its files, `$<ref>/values.yaml`), `name` and `tagPrefix`.",
        controller: "Read by the repo-server when it renders (`controller/state.go:299`, `argo.GetRefSources`, in `GetRepoObjs`); compared like `path`.",
        modelled: "",
        used: Use::NotRelevant(RENDERING),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.sourceHydrator.drySource.*",
        meaning: "The source hydrator's dry source: repository, revision, path and rendering options of the manifests the hydrator renders and commits to the sync branch.",
        controller: "Read by the hydrator when it is enabled (`controller/hydrator/hydrator.go:126`, `:552`); a change hydrates again (`:648`). Hydration state is in `status.sourceHydrator`.",
        modelled: "",
        used: Use::NotRelevant(
            "Argo Medic does not read the hydrator, spec or status: the app deploys the hydrated `syncSource`, whose comparison and sync show in the status the rules read",
        ),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.sourceHydrator.syncSource.*",
        meaning: "Where a hydrated app syncs from: repository (the dry source's when empty), path and branch.",
        controller: "With a hydrator this is the app's source: `GetSource`/`GetSources` return it and `spec.source`/`spec.sources` are ignored (`pkg/apis/application/v1alpha1/types.go:246`-`249`, `:281`-`284`, `:439`-`450`).",
        modelled: "",
        used: Use::NotRelevant(
            "not read: what the app deploys shows in `status.sync` and `status.operationState`; the fleet scope and `Application::revision`'s fallback read `spec.source(s)` instead, which a hydrated app need not have",
        ),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.sourceHydrator.hydrateTo.targetBranch",
        meaning: "A staging branch the hydrator pushes to instead of the sync branch; a process outside Argo CD (a pull request) promotes it.",
        controller: "Until then a missing path is a ComparisonError ending `waiting for an external process to update <sync branch> from <hydrateTo branch>` (`controller/state.go:378`-`379`).",
        modelled: "spec.source_hydrator.hydrate_to.target_branch",
        used: Use::Rule {
            rules: &["conditions/awaiting-promotion"],
            flips: &[
                // why it changes: without a staging branch, a missing path is the source's error
                Flip { case: "map/hydrate-to-waiting-for-promotion", pointer: "/spec/sourceHydrator/hydrateTo", to: "null" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.syncPolicy.automated.*",
        meaning: "The automated sync block: present, and from Argo CD v3.1 `enabled` not `false`, the controller syncs the app when it is OutOfSync (`pkg/apis/application/v1alpha1/types.go:1531`-`1536`); `enabled` does not exist before v3.1.0.",
        controller: "`autoSync` returns at once without it (`controller/appcontroller.go:2332`); with it, it still skips while an operation runs or the app is deleting, unless the app is OutOfSync, when only pruning is pending and prune is off (`:2352`-`2364`), and after an attempt at the same revision and source (`:2395`-`2404`). Turning it on forces a refresh (`:2695`, `:2763`).",
        modelled: "spec.sync_policy.automated",
        used: Use::Rule {
            rules: &["health-and-sync", "self-heal-loop", "ladder:sync", "sync-gate:escalate"],
            flips: &[
                // why it changes: without automated sync an OutOfSync app is out-of-sync-manual (nothing
                // to do) instead of out-of-sync-awaiting-auto-sync (hold, then refresh).
                Flip { case: "modes/out-of-sync-awaiting-auto-sync", pointer: "/spec/syncPolicy/automated", to: "null" },
                // why it changes: the sync gate re-runs an automated app's sync under its policy; without
                // it only a failed sync a person started may be re-run, and this one was automated, so
                // `ladder:sync` becomes `sync-gate:escalate`.
                Flip { case: "staleness/failed-transient-status-fresh", pointer: "/spec/syncPolicy/automated", to: "null" },
                // why it changes: the self-heal loop needs automated sync on; without it the app is
                // out-of-sync-manual (nothing to do) instead of an escalated ownership conflict.
                Flip { case: "conflicts/self-heal-fights-mutating-webhook", pointer: "/spec/syncPolicy/automated", to: "null" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.syncPolicy.automated.prune",
        meaning: "Automated sync also deletes resources that left Git (default false).",
        controller: "Sets the automated operation's `prune` (`controller/appcontroller.go:2377`); off while only pruning is pending, automated sync does not run at all (`:2352`-`2364`); on without `allowEmpty`, it refuses to prune every resource (`:2431`-`2442`).",
        modelled: "spec.sync_policy.automated.prune",
        used: Use::Rule {
            // Copied into the sync Argo Medic starts for an automated app (`SyncPlan.prune`); off
            // with only pruning pending, nothing is at risk and automated sync leaves the app.
            rules: &["prune-risk", "health-and-sync/prune-only-pending"],
            flips: &[
                // why it changes: prune on, the eight extra ConfigMaps are a prune beyond the limit
                Flip { case: "map/automated-prune-off-only-extra-resources", pointer: "/spec/syncPolicy/automated/prune", to: "true" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.syncPolicy.automated.selfHeal",
        meaning: "Automated sync also reverts drift at a revision it already synced (default false).",
        controller: "Without it `autoSync` stops at a successful attempt at the same revision and source (`controller/appcontroller.go:2401`-`2404`); with it each such sync counts `autoHealAttemptsCount` up after the self-heal backoff (`:2408`-`2418`). Turning it on forces a refresh (`:2763`).",
        modelled: "spec.sync_policy.automated.self_heal",
        used: Use::Rule {
            rules: &["self-heal-loop"],
            flips: &[
                // why it changes: without self-heal 37 re-applies are not a loop Argo Medic reports; the
                // app is out-of-sync-awaiting-auto-sync on hold instead of an escalated ownership conflict.
                Flip { case: "conflicts/self-heal-fights-hpa", pointer: "/spec/syncPolicy/automated/selfHeal", to: "false" },
                // why it changes: the same for 12 re-applies against a mutating webhook.
                Flip { case: "conflicts/self-heal-fights-mutating-webhook", pointer: "/spec/syncPolicy/automated/selfHeal", to: "false" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.syncPolicy.automated.allowEmpty",
        meaning: "Lets automated sync with prune delete every resource of the app (default false).",
        controller: "Without it an automated sync that would prune every resource is skipped with the SyncError `auto-sync will wipe out all resources` (`controller/appcontroller.go:2431`-`2442`).",
        modelled: "spec.sync_policy.automated.allow_empty",
        used: Use::NotRelevant(
            "the refusal shows as that SyncError condition, which the conditions rule reads; a prune beyond the blast radius is escalated by the prune-risk rule whether the guard is on or off",
        ),
        probe: Some(Flip { case: "modes/out-of-sync-awaiting-auto-sync", pointer: "/spec/syncPolicy/automated/allowEmpty", to: "true" }),
    },
    MapRow {
        kind: Field,
        key: "spec.syncPolicy.syncOptions",
        meaning: "App-wide sync options: `CreateNamespace`, `ServerSideApply`, `ApplyOutOfSyncOnly`, `PruneLast`, `Prune=false|confirm`, `Delete=false|confirm`, `FailOnSharedResource`, `RespectIgnoreDifferences`, `Replace`, `Validate=false`, ….",
        controller: "Copied into each automated operation (`controller/appcontroller.go:2378`) and into API syncs that name none (`server/application/application.go:2121`-`2131`); the sync reads the operation's copy (`controller/sync.go:157`, `:320`-`338`), while `Prune=confirm` and `Delete=confirm` also mark `status.resources[].requiresDeletionConfirmation` at every comparison (`controller/state.go:1171`-`1191`).",
        modelled: "spec.sync_policy.sync_options",
        used: Use::Rule {
            // Copied into the sync Argo Medic starts for an automated app and the sync an
            // escalation offers; `Prune=confirm` with a resource to prune makes the sync unsafe to
            // start unattended (gitops-engine/pkg/sync/sync_context.go:458-460).
            rules: &["ladder:sync", "sync-gate:escalate"],
            flips: &[
                // why it changes: without Prune=confirm the CRD race is re-synced
                Flip { case: "map/crd-race-with-prune-confirm", pointer: "/spec/syncPolicy/syncOptions", to: "[\"CreateNamespace=true\"]" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.syncPolicy.retry.limit",
        meaning: "How many times a failed sync is retried; negative retries for ever, 0 never.",
        controller: "Copied with the rest of `retry` into each automated operation (`controller/appcontroller.go:2385`-`2387`; limit 5 without a `retry` block, `:2383`) and into API syncs that name no strategy, Argo Medic's included (`server/application/application.go:2121`-`2129`); the retry loop reads the operation's copy (`controller/appcontroller.go:1620`).",
        modelled: "spec.sync_policy.retry.limit",
        used: Use::NotRelevant(
            "the running operation carries its own copy (`status.operationState.operation.retry`), which `running-operation/retries-pinned-to-old-revision` reads; an edit of the spec reaches only the next operation",
        ),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.syncPolicy.retry.refresh",
        meaning: "Argo CD ≥3.2: a retry drops the operation's pinned revision and syncs the latest one (`pkg/apis/application/v1alpha1/types.go:1549`); absent before v3.2.0.",
        controller: "Copied into the operation like `limit` (`controller/appcontroller.go:2385`-`2387`); before a retry `processRequestedAppOperation` clears `sync.revision(s)` when the operation's copy says so (`:1567`-`1570`).",
        modelled: "spec.sync_policy.retry.refresh",
        used: Use::NotRelevant(
            "the running operation carries its own copy, which `running-operation/retry-picks-latest-revision` reads; an edit of the spec reaches only the next operation",
        ),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.syncPolicy.retry.backoff.*",
        meaning: "The wait between retries: `duration` (seconds when unitless), `factor`, `maxDuration` (`pkg/apis/application/v1alpha1/types.go:1598`-`1605`).",
        controller: "Read from the operation's copy by `NextRetryAt` (`controller/appcontroller.go:1550`, `:1622`).",
        modelled: "spec.sync_policy.retry.backoff",
        used: Use::NotRelevant(
            "a retrying operation shows as Running with its `startedAt` and message, which the running-operation rule judges against its own timeout",
        ),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.syncPolicy.managedNamespaceMetadata.*",
        meaning: "Labels and annotations Argo CD keeps on the destination namespace it creates with `CreateNamespace=true`.",
        controller: "Applied during a sync (`controller/sync.go:337`-`338`, `controller/sync_namespace.go:14`) and recorded in `syncResult.managedNamespaceMetadata` (`controller/sync.go:369`-`370`); while the spec differs from that record the app is OutOfSync (`controller/state.go:1036`) and refreshed (`controller/appcontroller.go:2140`).",
        modelled: "",
        used: Use::NotRelevant("its effect is `status.sync.status`, which the rules read"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.ignoreDifferences[].*",
        meaning: "Fields of matching resources (by group, kind, name, namespace; as JSON pointers, jq paths or field managers) left out of the diff.",
        controller: "Applied when diffing (`controller/state.go:876`, `WithDiffSettings`) and recorded in `status.sync.comparedTo` (`:641`), so an edit forces a refresh (`controller/appcontroller.go:2142`); the sync honours it only with `RespectIgnoreDifferences=true` (`controller/sync.go:239`).",
        modelled: "",
        used: Use::NotRelevant(
            "its effect is the sync status of the app and its resources, which the rules read; a self-heal loop it would end is escalated to the owner, who adds it",
        ),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.info[].*",
        meaning: "Free name/value pairs (links, contacts) shown with the app.",
        controller: "Not read by the controller; the UI shows and edits it (`ui/src/app/applications/components/application-summary/application-summary.tsx:636`).",
        modelled: "",
        used: Use::NotRelevant("descriptive only"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "spec.revisionHistoryLimit",
        meaning: "How many entries `status.history` keeps (default 10; 0 keeps none).",
        controller: "Applied when a sync records its deployment (`controller/state.go:1229`; default at `pkg/apis/application/v1alpha1/types.go:3836`-`3841`).",
        modelled: "",
        used: Use::NotRelevant(
            "the limit is not read; with 0 the actuator's resume check (`Application::operation_started_after`) has only `status.operationState.startedAt` to go on",
        ),
        probe: None,
    },
];

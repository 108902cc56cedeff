//! The constants: annotation and label keys, condition types, operation phases, sync and health
//! codes, and the codes of a sync result's resources.
//!
//! Annotation and label keys are those of Argo CD's `common/common.go`,
//! `pkg/apis/application/v1alpha1/application_annotations.go`, gitops-engine's
//! `pkg/sync/common/types.go` and the controller's own, plus Argo Medic's. A `probe` puts a constant
//! the policy does not decide on into a corpus case whose decision must stay the same. "Gap:" in a
//! reason marks a constant the policy ignores although a remediator should act on it. A condition
//! type is read by `Application::is_calm()` too, which keeps a stale app in `stale-status` and
//! decides whether a non-trouble answer resolves the open incident (`resolved`, `nothing-to-do`).

use super::{Flip, MapRow, RowKind, Use};

/// The rules that read a hook type or a hook's phase in `syncResult.resources[]`: `failed_hook`
/// (hook-conflict, hook-failed), `has_hooks` (the sync gate, PostSync held by health), `is_calm`.
const HOOK_RULES: &[&str] = &[
    "failed-operation/hook-conflict",
    "failed-operation/hook-failed",
    "running-operation",
    "ladder:sync",
    "sync-gate:escalate",
    "stale-status",
];

/// The rules that read a hook's failed phase: `failed_hook`, the sync gate, `is_calm`.
const FAILED_HOOK_RULES: &[&str] = &["failed-operation/hook-failed", "ladder:sync", "sync-gate:escalate", "stale-status"];

pub(super) const ROWS: &[MapRow] = &[
    // ---- Annotations: Argo Medic's own ----
    MapRow {
        kind: RowKind::Annotation,
        key: "argo-medic.io/opt-out",
        meaning: "Argo Medic's opt-out: an app owner sets it (`\"true\"`, `\"yes\"` or `\"1\"`) to keep Argo Medic away from the app.",
        controller: "Not read by Argo CD. On an ApplicationSet-generated app it must be set in the template: the ApplicationSet controller reverts hand-set annotations except those it preserves (`applicationset/controllers/applicationset_controller.go:84`).",
        modelled: "metadata.annotations[\"argo-medic.io/opt-out\"]",
        used: Use::Rule {
            rules: &["opt-out"],
            flips: &[
                // why it changes: without its only opt-out the Degraded app is classified and escalated.
                Flip { case: "modes/opted-out", pointer: "/metadata/annotations/argo-medic.io~1opt-out", to: "null" },
                // why it changes: the opt-out gate answers `none` before the transient failure's sync.
                Flip { case: "transient/broken-pipe", pointer: "/metadata/annotations", to: "{\"argo-medic.io/opt-out\": \"true\"}" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::Annotation,
        key: "argo-medic.io/hooks-idempotent",
        meaning: "The app owner declares the app's hooks safe to run again (`\"true\"`), so a sync that re-runs every hook may be started automatically.",
        controller: "Not read by Argo CD; a sync re-runs every PreSync/Sync/PostSync hook (gitops-engine `pkg/sync/hook/hook.go:26`).",
        modelled: "metadata.annotations[\"argo-medic.io/hooks-idempotent\"]",
        used: Use::Rule {
            rules: &["ladder:sync", "sync-gate:escalate"],
            flips: &[
                // why it changes: the PreSync hook that ran is no longer declared idempotent, so the sync gate escalates.
                Flip {
                    case: "hooks/presync-ran-then-transient-failure-idempotent",
                    pointer: "/metadata/annotations/argo-medic.io~1hooks-idempotent",
                    to: "null",
                },
                // why it changes: declared idempotent, the person's failed sync is re-run instead of escalated.
                Flip {
                    case: "hooks/presync-ran-then-transient-failure-not-idempotent",
                    pointer: "/metadata/annotations",
                    to: "{\"argo-medic.io/hooks-idempotent\": \"true\"}",
                },
            ],
        },
        probe: None,
    },
    // ---- Annotations Argo CD reads on the Application itself ----
    MapRow {
        kind: RowKind::Annotation,
        key: "argocd.argoproj.io/refresh",
        meaning: "A refresh request (`normal` or `hard`) set through the API and removed by the controller once it has compared the app; one that stays means the controller is not processing the app.",
        controller: "Set by `RefreshApp` (`util/argo/argo.go:240`), read by `needRefreshAppStatus` (`controller/appcontroller.go:2113`, `pkg/apis/application/v1alpha1/types.go:3586`), removed by `persistReconciliationStatus` (`controller/appcontroller.go:2233`); the API server's refresh waits for it to go (`server/application/application.go:888`).",
        modelled: "metadata.annotations[\"argocd.argoproj.io/refresh\"]",
        used: Use::Rule {
            // Also read by the actuator, so a resumed refresh still waiting is not sent twice.
            rules: &["stale-status/refresh-pending"],
            flips: &[
                // why it changes: without a pending request, a stale status is refreshed first
                Flip { case: "map/refresh-annotation-pending-status-three-hours-old", pointer: "/metadata/annotations", to: "{}" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::Annotation,
        key: "argocd.argoproj.io/hydrate",
        meaning: "A request (`normal` or `hard`) to run the source hydrator for an app with `spec.sourceHydrator`; removed once hydrated.",
        controller: "Read by `appNeedsHydration` (`controller/hydrator/hydrator.go:636`, `pkg/apis/application/v1alpha1/types.go:3603`), removed by `PersistHydrationStatus` (`controller/hydrator_dependencies.go:105`), set with a refresh (`util/argo/argo.go:249`).",
        modelled: "",
        used: Use::NotRelevant("Argo Medic never asks for hydration; the hydrator's outcome shows in `status.sourceHydrator`"),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/metadata/annotations/argocd.argoproj.io~1hydrate",
            to: "\"normal\"",
        }),
    },
    MapRow {
        kind: RowKind::Annotation,
        key: "argocd.argoproj.io/skip-reconcile",
        meaning: "When it parses as true (Go `strconv.ParseBool`: `1`, `t`, `T`, `true`, `TRUE`, `True`), the application controller does not process the app at all: no comparison, no auto-sync, no operation, and its status stays frozen.",
        controller: "`canProcessApp` returns false for it (`controller/appcontroller.go:2564`), so the informer never queues the app; the same key on a cluster secret skips the cluster (`controller/sharding/cache.go:66`).",
        modelled: "metadata.annotations[\"argocd.argoproj.io/skip-reconcile\"]",
        used: Use::Rule {
            rules: &["skip-reconcile"],
            flips: &[
                // why it changes: without the annotation the controller reconciles the app, so its four-hour-old status is stale and refreshed.
                Flip {
                    case: "map/skip-reconcile-annotation-as-one",
                    pointer: "/metadata/annotations/argocd.argoproj.io~1skip-reconcile",
                    to: "null",
                },
                // why it changes: the skip-reconcile gate answers `none` before the stale Degraded status is refreshed.
                Flip {
                    case: "staleness/degraded-status-two-hours-old",
                    pointer: "/metadata/annotations",
                    to: "{\"argocd.argoproj.io/skip-reconcile\": \"true\"}",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::Annotation,
        key: "argocd.argoproj.io/manifest-generate-paths",
        meaning: "Semicolon-separated paths whose changes affect the app's manifests; a new commit touching none of them reuses the last manifests.",
        controller: "Read by the comparison (`controller/state.go:457`, `util/app/path/path.go:116`) to call the repo-server's `UpdateRevisionForPaths`. Before v3.4.5/v3.5.0 it could also skip auto-sync and leave the app OutOfSync (fixed by always comparing revisions when OutOfSync, `controller/appcontroller.go:1949`, #27875).",
        modelled: "",
        used: Use::NotRelevant(
            "a rendering optimisation; an app it left OutOfSync on an old version is waited out and escalated as `out-of-sync-awaiting-auto-sync` from its sync status",
        ),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/metadata/annotations/argocd.argoproj.io~1manifest-generate-paths",
            to: "\".;../shared\"",
        }),
    },
    MapRow {
        kind: RowKind::Annotation,
        key: "argocd.argoproj.io/compare-options",
        meaning: "Comparison options: on the app `ServerSideDiff=true|false` and `IncludeMutationWebhook=true`; on a managed resource `IgnoreExtraneous` (an extra resource needing pruning does not make the app OutOfSync).",
        controller: "Read for the app in `CompareAppState` (`controller/state.go:865`, `:869`, `:885`) and per resource (`controller/state.go:994`).",
        modelled: "",
        used: Use::NotRelevant(
            "it shapes how the controller computes `status.sync` and `status.resources`, which the rules read; an `IgnoreExtraneous` resource still shows `requiresPruning`",
        ),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/metadata/annotations/argocd.argoproj.io~1compare-options",
            to: "\"ServerSideDiff=true\"",
        }),
    },
    MapRow {
        kind: RowKind::Annotation,
        key: "argocd.argoproj.io/client-side-apply-migration-manager",
        meaning: "The field manager whose client-side-applied fields a server-side-apply sync migrates (default `kubectl-client-side-apply`). Argo CD v3.1+.",
        controller: "Read when a sync starts (`controller/sync.go:230`) and passed to gitops-engine's `WithClientSideApplyMigration`.",
        modelled: "",
        used: Use::NotRelevant("sync mechanics; Argo Medic starts syncs with the app's own options and never changes them"),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/metadata/annotations/argocd.argoproj.io~1client-side-apply-migration-manager",
            to: "\"helm\"",
        }),
    },
    MapRow {
        kind: RowKind::Annotation,
        key: "argocd.argoproj.io/managed-by-url",
        meaning: "The URL of the Argo CD instance that manages the app, for deep links across instances. Argo CD v3.3+.",
        controller: "Validated on the app (`util/argo/argo.go:414`; an invalid URL gives an InvalidSpecError), shown for child apps (`controller/cache/info.go:788`).",
        modelled: "",
        used: Use::NotRelevant("a UI link; an invalid value surfaces as an InvalidSpecError condition, which has its own row"),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/metadata/annotations/argocd.argoproj.io~1managed-by-url",
            to: "\"https://argocd.example.com\"",
        }),
    },
    MapRow {
        kind: RowKind::Annotation,
        key: "argocd.argoproj.io/deletion-approved",
        meaning: "An RFC 3339 time set by `argocd app confirm-deletion`: resources marked `Prune=confirm`/`Delete=confirm` may be deleted by an operation started (or a deletion requested) at or before it.",
        controller: "Set by the CLI (`cmd/argocd/commands/app.go:3276`); read by `IsDeletionConfirmed` (`pkg/apis/application/v1alpha1/types.go:4174`) for a sync (`controller/sync.go:332`, since the operation's `startedAt`) and a cascade delete (`controller/appcontroller.go:1345`). Key in gitops-engine `pkg/sync/common/types.go:19`.",
        modelled: "",
        used: Use::NotRelevant(
            "Gap: not read today. `prune-confirm-pending` escalates for a human to confirm even when the approval is already there and the operation is about to prune (`status.resources[].requiresDeletionConfirmation` stays true until the resource is gone, `controller/state.go:1170`)",
        ),
        probe: Some(Flip {
            case: "modes/prune-confirm-pending",
            pointer: "/metadata/annotations",
            to: "{\"argocd.argoproj.io/deletion-approved\": \"2026-11-01T12:29:00Z\"}",
        }),
    },
    MapRow {
        kind: RowKind::Annotation,
        key: "link.argocd.argoproj.io/",
        meaning: "A prefix: each `link.argocd.argoproj.io/<name>` annotation adds an external link (`url` or `title|url`) to the app or resource in the UI.",
        controller: "The app's own become `status.summary.externalURLs` (`pkg/apis/application/v1alpha1/types.go:2162`); a resource's are read into its info (`controller/cache/info.go:45`). Key in `common/common.go:241`.",
        modelled: "",
        used: Use::NotRelevant("UI links only"),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/metadata/annotations/link.argocd.argoproj.io~1grafana",
            to: "\"https://grafana.example.com/d/billing\"",
        }),
    },
    MapRow {
        kind: RowKind::Annotation,
        key: "notified.notifications.argoproj.io",
        meaning: "The notifications controller's record of which triggers it has already sent for the app (its deduplication state).",
        controller: "Written by the notifications controller (notifications-engine); preserved by the ApplicationSet controller (`applicationset/controllers/applicationset_controller.go:70`, `:85`) and ignored as a resource update (`manifests/base/config/argocd-cm.yaml:20`).",
        modelled: "",
        used: Use::NotRelevant("notification bookkeeping; Argo Medic's triggers arrive as events and it keeps its own incident record"),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/metadata/annotations/notified.notifications.argoproj.io",
            to: "\"{\\\"on-sync-failed:2026-11-01T12:20:00Z:slack:ops\\\":1761999600}\"",
        }),
    },
    // ---- Annotations Argo CD reads on managed resources (on an Application only when a parent app manages it) ----
    MapRow {
        kind: RowKind::Annotation,
        key: "argocd.argoproj.io/tracking-id",
        meaning: "The resource-tracking annotation (`<app>:<group>/<kind>:<namespace>/<name>`) that ties a live resource to its app; the default tracking method since v3.0 (v2.14 tracked by label).",
        controller: "Set when applying (`util/argo/resource_tracking.go:158`) and read to find a resource's app (`util/argo/resource_tracking.go:57`), which yields SharedResourceWarning (`controller/state.go:810`); default method `util/settings/settings.go:911`.",
        modelled: "",
        used: Use::NotRelevant(
            "on the Application it only means a parent app tracks it; ownership conflicts reach the policy as SharedResourceWarning",
        ),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/metadata/annotations/argocd.argoproj.io~1tracking-id",
            to: "\"root:argoproj.io/Application:argocd/billing-v2\"",
        }),
    },
    MapRow {
        kind: RowKind::Annotation,
        key: "argocd.argoproj.io/installation-id",
        meaning: "The installation id of the Argo CD instance that tracks the resource, so two instances on one cluster do not claim each other's resources.",
        controller: "Set with the tracking annotation (`util/argo/resource_tracking.go:150`) and compared when reading it (`util/argo/resource_tracking.go:54`).",
        modelled: "",
        used: Use::NotRelevant("resource tracking between Argo CD instances"),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/metadata/annotations/argocd.argoproj.io~1installation-id",
            to: "\"prod-eu\"",
        }),
    },
    MapRow {
        kind: RowKind::Annotation,
        key: "argocd.argoproj.io/sync-options",
        meaning: "Per-resource sync options: `Prune=false|confirm`, `Delete=false|confirm`, `Replace=true`, `ServerSideApply=true`, `Force=true`, `Validate=false`, `SkipDryRunOnMissingResource=true`, `PruneLast=true`.",
        controller: "Read by gitops-engine while syncing (`gitops-engine/pkg/sync/sync_context.go:325` prune confirmation, `:336` prune disabled, `:1400`), by the comparison for `requiresDeletionConfirmation` (`controller/state.go:1175`, `:1183`) and by cascade delete (`controller/appcontroller.go:1253`).",
        modelled: "",
        used: Use::NotRelevant(
            "its effects show in `status.resources` (requiresDeletionConfirmation) and the operation; note a `Prune=false` resource still shows `requiresPruning` and counts toward prune-risk (the safe side)",
        ),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/metadata/annotations/argocd.argoproj.io~1sync-options",
            to: "\"Prune=false\"",
        }),
    },
    MapRow {
        kind: RowKind::Annotation,
        key: "argocd.argoproj.io/sync-wave",
        meaning: "The integer wave a resource or hook is applied in within its phase (default 0; Helm's `helm.sh/hook-weight` when absent).",
        controller: "Read by gitops-engine `Wave` (`gitops-engine/pkg/sync/syncwaves/waves.go:12`); reported as `status.resources[].syncWave`. Key in `gitops-engine/pkg/sync/common/types.go:14`.",
        modelled: "",
        used: Use::NotRelevant(
            "ordering within a sync; a wave that never becomes healthy shows as `waiting for healthy state of` in the operation message",
        ),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/metadata/annotations/argocd.argoproj.io~1sync-wave",
            to: "\"-1\"",
        }),
    },
    MapRow {
        kind: RowKind::Annotation,
        key: "argocd.argoproj.io/hook",
        meaning: "Makes a resource a hook: `PreSync`, `Sync`, `PostSync`, `SyncFail`, `Skip`, or (run by the controller on deletion) `PreDelete`, `PostDelete`; Helm hook annotations map to the same.",
        controller: "Read by gitops-engine (`gitops-engine/pkg/sync/hook/hook.go:26`, `:43`) and the controller (`controller/hook.go:33`, `:73`); reported as `status.resources[].hook` (`controller/state.go:949`) and `syncResult.resources[].hookType`.",
        modelled: "",
        used: Use::NotRelevant(
            "the policy sees hooks through `status.resources[].hook` and the result's `hookType`, which have their own rows; on the Application itself it only means a parent app runs it as a hook",
        ),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/metadata/annotations/argocd.argoproj.io~1hook",
            to: "\"PostSync\"",
        }),
    },
    MapRow {
        kind: RowKind::Annotation,
        key: "argocd.argoproj.io/hook-delete-policy",
        meaning: "When a hook resource is deleted: `HookSucceeded`, `HookFailed`, `BeforeHookCreation` (the default when none is set).",
        controller: "Read by gitops-engine `DeletePolicies` (`gitops-engine/pkg/sync/hook/delete_policy.go:11`, default `:23`); a kept hook of an earlier sync makes the next one fail with `already exists`.",
        modelled: "",
        used: Use::NotRelevant(
            "its consequence, a leftover hook, is recognised from the result message (`failed-operation/hook-conflict`)",
        ),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/metadata/annotations/argocd.argoproj.io~1hook-delete-policy",
            to: "\"HookSucceeded\"",
        }),
    },
    MapRow {
        kind: RowKind::Annotation,
        key: "argocd.argoproj.io/ignore-healthcheck",
        meaning: "Set to `\"true\"` on a managed resource so its health is not aggregated into the app's health.",
        controller: "Skipped by `setApplicationHealth` (`controller/health.go:41`).",
        modelled: "",
        used: Use::NotRelevant("already applied in `status.health`, which the rules read"),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/metadata/annotations/argocd.argoproj.io~1ignore-healthcheck",
            to: "\"true\"",
        }),
    },
    MapRow {
        kind: RowKind::Annotation,
        key: "argocd.argoproj.io/ignore-default-links",
        meaning: "Set to `\"true\"` on an Ingress or similar so its spec-derived URLs are not added to the app's external URLs. Argo CD v3.3+.",
        controller: "Read when building a resource's networking info (`controller/cache/info.go:251`, `:460`).",
        modelled: "",
        used: Use::NotRelevant("UI links only"),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/metadata/annotations/argocd.argoproj.io~1ignore-default-links",
            to: "\"true\"",
        }),
    },
    MapRow {
        kind: RowKind::Annotation,
        key: "argocd.argoproj.io/ignore-resource-updates",
        meaning: "On an untracked resource, `\"true\"` lets its updates be hashed and ignored by the configured `ignoreResourceUpdates` rules.",
        controller: "Read by the cluster cache (`controller/cache/cache.go:81`, `:415`).",
        modelled: "",
        used: Use::NotRelevant("controller cache tuning"),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/metadata/annotations/argocd.argoproj.io~1ignore-resource-updates",
            to: "\"true\"",
        }),
    },
    // ---- Annotations Argo CD reads on other objects ----
    MapRow {
        kind: RowKind::Annotation,
        key: "argocd.argoproj.io/application-set-refresh",
        meaning: "Set on an ApplicationSet (by a Git webhook) to make the ApplicationSet controller regenerate its apps; removed after.",
        controller: "Set by `applicationset/webhook/webhook.go:621`, removed by `applicationset/controllers/applicationset_controller.go:379`. Key in `common/common.go:445`.",
        modelled: "",
        used: Use::NotRelevant("applies to ApplicationSets, not Applications"),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/metadata/annotations/argocd.argoproj.io~1application-set-refresh",
            to: "\"true\"",
        }),
    },
    MapRow {
        kind: RowKind::Annotation,
        key: "managed-by",
        meaning: "`managed-by: argocd.argoproj.io` marks a cluster or repository Secret Argo CD created and may delete.",
        controller: "Set and checked by `util/db/secrets.go:93`, `:104`. Key in `common/common.go:229`.",
        modelled: "",
        used: Use::NotRelevant("applies to Argo CD's Secrets, not Applications"),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/metadata/annotations/managed-by",
            to: "\"argocd.argoproj.io\"",
        }),
    },
    // ---- Labels ----
    MapRow {
        kind: RowKind::Label,
        key: "argo-medic.io/opt-out",
        meaning: "Argo Medic's opt-out as a label (same values as the annotation); selectable, so the sweep's list can exclude it (`!argo-medic.io/opt-out`).",
        controller: "Not read by Argo CD.",
        modelled: "metadata.labels[\"argo-medic.io/opt-out\"]",
        used: Use::Rule {
            rules: &["opt-out"],
            flips: &[
                // why it changes: the opt-out gate answers `none` before the transient failure's sync.
                Flip { case: "transient/broken-pipe", pointer: "/metadata/labels/argo-medic.io~1opt-out", to: "\"true\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::Label,
        key: "app.kubernetes.io/instance",
        meaning: "The default app-instance label key: the tracking label Argo CD puts on managed resources under the `label` tracking method (the default before v3.0).",
        controller: "Default of `application.instanceLabelKey` (`util/settings/settings.go:899`); removed when tracking by annotation (`util/argo/resource_tracking.go:195`). Key in `common/common.go:190`.",
        modelled: "",
        used: Use::NotRelevant(
            "resource tracking; on the Application only a parent app's label. Only a configured scope selector could name it (none by default)",
        ),
        probe: Some(Flip { case: "transient/broken-pipe", pointer: "/metadata/labels/app.kubernetes.io~1instance", to: "\"root\"" }),
    },
    MapRow {
        kind: RowKind::Label,
        key: "applications.argoproj.io/app-name",
        meaning: "The legacy (v0.10 and older) app-instance label, superseded by `app.kubernetes.io/instance`.",
        controller: "Special-cased when labelling pod templates (`util/kube/kube.go:33`). Key in `common/common.go:196`.",
        modelled: "",
        used: Use::NotRelevant("legacy resource tracking"),
        probe: Some(Flip { case: "transient/broken-pipe", pointer: "/metadata/labels/applications.argoproj.io~1app-name", to: "\"root\"" }),
    },
    MapRow {
        kind: RowKind::Label,
        key: "app.kubernetes.io/name",
        meaning: "The standard name label; Argo CD's constant selects its own components (repo-server, redis, controller pods).",
        controller: "Used by the CLI's admin and headless modes to find Argo CD's pods (`cmd/argocd/commands/admin/app.go:298`). Key in `common/common.go:192`.",
        modelled: "",
        used: Use::NotRelevant("identifies Argo CD's own components, not Applications"),
        probe: Some(Flip { case: "transient/broken-pipe", pointer: "/metadata/labels/app.kubernetes.io~1name", to: "\"broken\"" }),
    },
    MapRow {
        kind: RowKind::Label,
        key: "app.kubernetes.io/component",
        meaning: "The standard component label; Argo CD's constant (with value `repo-server`) finds the repo-server Service.",
        controller: "Used by the CLI's admin and headless modes (`cmd/argocd/commands/admin/app.go:290`). Key in `common/common.go:252`.",
        modelled: "",
        used: Use::NotRelevant("identifies Argo CD's own components, not Applications"),
        probe: Some(Flip { case: "transient/broken-pipe", pointer: "/metadata/labels/app.kubernetes.io~1component", to: "\"web\"" }),
    },
    MapRow {
        kind: RowKind::Label,
        key: "argocd.argoproj.io/secret-type",
        meaning: "Marks a Secret as a cluster, repository, repo-creds, repository-write, repo-write-creds or scm-creds Secret.",
        controller: "Selected by the settings and the ApplicationSet cluster generator (`applicationset/generators/cluster.go:168`). Key in `common/common.go:198`.",
        modelled: "",
        used: Use::NotRelevant("applies to Argo CD's Secrets, not Applications"),
        probe: Some(Flip { case: "transient/broken-pipe", pointer: "/metadata/labels/argocd.argoproj.io~1secret-type", to: "\"cluster\"" }),
    },
    MapRow {
        kind: RowKind::Label,
        key: "argocd.argoproj.io/auto-label-cluster-info",
        meaning: "`\"true\"` on a cluster Secret makes the controller keep its Kubernetes-version label up to date.",
        controller: "Read by `controller/clusterinfoupdater.go:174`. Key in `common/common.go:194`.",
        modelled: "",
        used: Use::NotRelevant("applies to cluster Secrets"),
        probe: Some(Flip {
            case: "transient/broken-pipe",
            pointer: "/metadata/labels/argocd.argoproj.io~1auto-label-cluster-info",
            to: "\"true\"",
        }),
    },
    MapRow {
        kind: RowKind::Label,
        key: "argocd.argoproj.io/kubernetes-version",
        meaning: "The cluster's Kubernetes version, written on a cluster Secret that opted in with `auto-label-cluster-info`.",
        controller: "Written by `controller/clusterinfoupdater.go:175`. Key in `common/common.go:200`.",
        modelled: "",
        used: Use::NotRelevant("applies to cluster Secrets"),
        probe: Some(Flip {
            case: "transient/broken-pipe",
            pointer: "/metadata/labels/argocd.argoproj.io~1kubernetes-version",
            to: "\"v1.33.1\"",
        }),
    },
    // ---- Condition types (`pkg/apis/application/v1alpha1/types.go:1900`-`1916`) ----
    MapRow {
        kind: RowKind::Condition,
        key: "ComparisonError",
        meaning: "The controller could not compare the app: manifest generation failed (also served from the repo-server's cache), live state could not be loaded, or signature verification failed.",
        controller: "Set by `CompareAppState` (`controller/state.go:699`, `:722`, `:749`, `:778`, `:923`) and replaced on every comparison (`controller/state.go:1109`); a sync started while it is present errors at once (`controller/sync.go:163`).",
        modelled: "status.conditions[].kind",
        used: Use::Rule {
            rules: &["conditions", "stale-status", "resolved", "nothing-to-do"],
            flips: &[
                // why it changes: without the cached error only the Unknown sync status is left, which health-and-sync holds as transient instead of the conditions stage escalating a configuration error.
                Flip { case: "modes/cached-manifest-error", pointer: "/status/conditions", to: "[]" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::Condition,
        key: "InvalidSpecError",
        meaning: "The app's spec is invalid for its project: a missing project, a source or destination the project does not permit, a missing namespace, an invalid managed-by URL.",
        controller: "Set by `refreshAppConditions` (`controller/appcontroller.go:2187`, from `util/argo/argo.go` validation) and `projectErrorToCondition` (`controller/appcontroller.go:2743`), which also set sync and health to Unknown (`controller/appcontroller.go:1870`); a sync errors at once (`controller/sync.go:166`).",
        modelled: "status.conditions[].kind",
        used: Use::Rule {
            rules: &["conditions", "stale-status", "resolved", "nothing-to-do"],
            flips: &[
                // why it changes: without the spec error, the unstamped status is refreshed as stale
                Flip {
                    case: "map/invalid-spec-error-destination-not-permitted-status-looks-stale",
                    pointer: "/status/conditions",
                    to: "[]",
                },
                // why it changes: the manual OutOfSync app (none) becomes a source-config error that escalates.
                Flip {
                    case: "modes/out-of-sync-manual",
                    pointer: "/status/conditions",
                    to: "[{\"type\": \"InvalidSpecError\", \"message\": \"Application referencing project team-x which does not exist\", \"lastTransitionTime\": \"2026-11-01T12:20:00Z\"}]",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::Condition,
        key: "SharedResourceWarning",
        meaning: "A live resource of this app is tracked by another app too (`<kind>/<name> is part of applications a and b`).",
        controller: "Set by `CompareAppState` (`controller/state.go:810`); with `FailOnSharedResource=true` a sync fails on it (`controller/sync.go:157`, `:595`).",
        modelled: "status.conditions[].kind",
        used: Use::Rule {
            rules: &["conditions/shared-resource", "stale-status", "resolved", "nothing-to-do"],
            flips: &[
                // why it changes: without the warning the Synced, Healthy app is healthy, not an ownership conflict.
                Flip { case: "conflicts/shared-configmap-this-side-synced", pointer: "/status/conditions", to: "[]" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::Condition,
        key: "SyncError",
        meaning: "Automated sync did not start: the last attempt at this revision failed and will not be retried, auto-sync would wipe out every resource, or setting the operation failed.",
        controller: "Returned by `autoSync` (`controller/appcontroller.go:2399`, `:2441`, `:2460`) and set or cleared after every comparison (`controller/appcontroller.go:1958`-`1966`).",
        modelled: "status.conditions[].kind",
        used: Use::Rule {
            rules: &["conditions", "failed-operation/transient-retries-exhausted", "stale-status", "resolved", "nothing-to-do"],
            flips: &[
                // why it changes: without `auto-sync will wipe out all resources` the app is judged as OutOfSync awaiting auto-sync, not a prune beyond the blast radius.
                Flip { case: "modes/auto-sync-will-wipe-out", pointer: "/status/conditions", to: "[]" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::Condition,
        key: "DeletionError",
        meaning: "Deleting the app's resources failed (cluster unreachable, a PreDelete hook failed, permissions); the controller retries.",
        controller: "Set when `finalizeApplicationDeletion` returns an error (`controller/appcontroller.go:1141`), cleared when it succeeds (`:1149`); a failed PreDelete/PostDelete hook gives `<type> hook(s) failed` (`controller/hook.go:227`).",
        modelled: "status.conditions[].kind",
        used: Use::Carried(
            "read only by `is_calm()` (not calm: it keeps a stale app in `stale-status`, keeps an incident open, makes the sweep look); no corpus case is stale and otherwise calm, so no flip shows it. Gap: a deleting app with this error waits `deletion_timeout_secs` and escalates without the condition's message",
        ),
        probe: Some(Flip {
            case: "modes/app-deleting",
            pointer: "/status/conditions",
            to: "[{\"type\": \"DeletionError\", \"message\": \"error executing pre-delete hooks: PreDelete hook(s) failed: web/cleanup\", \"lastTransitionTime\": \"2026-11-01T12:29:00Z\"}]",
        }),
    },
    MapRow {
        kind: RowKind::Condition,
        key: "UnknownError",
        meaning: "An error the controller cannot classify: the project could not be read, permissions could not be validated, the GVK parser or server-side diff failed, or (v3.5.0+) the status is too large to persist.",
        controller: "Set by `refreshAppConditions` (`controller/appcontroller.go:2179`), which also sets sync and health Unknown (`:1870`); `projectErrorToCondition` (`:2747`); `CompareAppState` (`controller/state.go:891`, `:902`); the status-too-large fallback (`controller/appcontroller.go:2280`, v3.5.0+), after which the stored status is stale.",
        modelled: "status.conditions[].kind",
        used: Use::Rule {
            // Like a spec error, it leaves reconciledAt unstamped, so stale-status stands aside.
            // Gap: no mode names it, so its Unknown status reads as `comparison-error-transient`.
            rules: &["stale-status"],
            flips: &[
                // why it changes: an hour-old status with UnknownError is not taken for a stale one
                Flip {
                    case: "staleness/unknown-status-an-hour-old",
                    pointer: "/status/conditions",
                    to: "[{\"type\": \"UnknownError\", \"message\": \"Application status exceeds the Kubernetes resource size limit and could not be persisted. The displayed status may be stale.\", \"lastTransitionTime\": \"2026-11-01T11:30:00Z\"}]",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::Condition,
        key: "RepeatedResourceWarning",
        meaning: "The rendered manifests hold the same group/kind/namespace/name more than once; Argo CD silently keeps the last one.",
        controller: "Set by the deduplication in `CompareAppState` (`controller/state.go:566`), replaced on every comparison (`controller/state.go:1111`).",
        modelled: "status.conditions[].kind",
        used: Use::Rule {
            rules: &["conditions/repeated-resource"],
            flips: &[
                // why it changes: without the warning the Synced and Healthy app is calm
                Flip { case: "map/repeated-resource-warning-on-a-synced-healthy-app", pointer: "/status/conditions", to: "[]" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::Condition,
        key: "ExcludedResourceWarning",
        meaning: "A rendered resource is excluded by `resource.exclusions`, so Argo CD never applies it.",
        controller: "Set by `CompareAppState` (`controller/state.go:759`), replaced on every comparison (`controller/state.go:1112`).",
        modelled: "status.conditions[].kind",
        used: Use::Rule {
            rules: &["conditions/excluded-resource"],
            flips: &[
                // why it changes: without the warning the Synced and Healthy app is calm
                Flip { case: "map/excluded-resource-warning-on-a-synced-healthy-app", pointer: "/status/conditions", to: "[]" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::Condition,
        key: "OrphanedResourceWarning",
        meaning: "Top-level resources in the destination namespace belong to no app (reported only when the project's `orphanedResources.warn` is on).",
        controller: "Set while building the resource tree (`controller/appcontroller.go:684`, replaced at `:689`).",
        modelled: "status.conditions[].kind",
        used: Use::NotRelevant(
            "`is_calm()` exempts it by name: resources no app owns are not this app's trouble and no sync of this app removes them",
        ),
        probe: Some(Flip {
            case: "modes/healthy",
            pointer: "/status/conditions",
            to: "[{\"type\": \"OrphanedResourceWarning\", \"message\": \"Application has 3 orphaned resources\", \"lastTransitionTime\": \"2026-11-01T11:40:00Z\"}]",
        }),
    },
    // ---- Operation phases (`gitops-engine/pkg/sync/common/types.go:77`-`81`) ----
    MapRow {
        kind: RowKind::Phase,
        key: "Running",
        meaning: "The operation is in progress, or failed and waits for its next retry (then `finishedAt` is set and the message says `Retrying attempt #n`).",
        controller: "Set when the operation starts (`controller/sync.go:73`) and by gitops-engine while tasks run (`gitops-engine/pkg/sync/sync_context.go:666`); a failed attempt with retries left goes back to Running (`controller/appcontroller.go:1628`).",
        modelled: "status.operation_state.phase",
        used: Use::Rule {
            rules: &["running-operation", "prune-risk", "stale-status"],
            flips: &[
                // why it changes: a running operation is judged by the running-operation stage, not as the failed one.
                Flip { case: "modes/sync-failed", pointer: "/status/operationState/phase", to: "\"Running\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::Phase,
        key: "Terminating",
        meaning: "Termination was requested; gitops-engine stops the running hooks and ends the operation Failed (`Operation terminated`) or Error.",
        controller: "Set by the API server's `TerminateOperation` (`server/application/application.go:2520`) and by the controller's sync timeout (`controller/appcontroller.go:1543`); finished by gitops-engine (`gitops-engine/pkg/sync/sync_context.go:742`).",
        modelled: "status.operation_state.phase",
        used: Use::Rule {
            rules: &["running-operation", "prune-risk", "stale-status"],
            flips: &[
                // why it changes: a terminating operation is still in progress, so the running-operation stage judges the app.
                Flip { case: "modes/sync-failed", pointer: "/status/operationState/phase", to: "\"Terminating\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::Phase,
        key: "Failed",
        meaning: "The operation ran and failed (a resource failed to apply, a hook failed, termination) and has no retries left.",
        controller: "Set by gitops-engine (`gitops-engine/pkg/sync/sync_context.go:499`, `:921`) and the controller (`controller/sync.go:158`); auto-sync will not retry the same revision (`controller/appcontroller.go:2396`-`2399`, SyncError).",
        modelled: "status.operation_state.phase",
        used: Use::Rule {
            rules: &["failed-operation", "stale-status", "ladder:sync", "sync-gate:escalate"],
            flips: &[
                // why it changes: without the failure the OutOfSync app waits for auto-sync instead of escalating the sync failure.
                Flip { case: "modes/sync-failed", pointer: "/status/operationState/phase", to: "\"Succeeded\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::Phase,
        key: "Error",
        meaning: "The operation could not run or ended in an error: comparison or spec errors at its start, cluster or project lookup failures, a SyncWaveHook or termination error.",
        controller: "Set by `SyncAppState` (`controller/sync.go:105`-`197`, e.g. `:168` for ComparisonError conditions), by `processRequestedAppOperation` (`controller/appcontroller.go:1519`, `:1600`) and gitops-engine (`gitops-engine/pkg/sync/sync_context.go:677`, `:744`).",
        modelled: "status.operation_state.phase",
        used: Use::Rule {
            rules: &["failed-operation", "stale-status", "ladder:sync", "sync-gate:escalate"],
            flips: &[
                // why it changes: an errored operation at the app's revision is judged by the failed-operation stage instead of as a rollout in progress.
                Flip { case: "modes/rollout-progressing", pointer: "/status/operationState/phase", to: "\"Error\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::Phase,
        key: "Succeeded",
        meaning: "The operation finished successfully (all tasks run, hooks succeeded).",
        controller: "Set by gitops-engine (`gitops-engine/pkg/sync/sync_context.go:655`, `:712`); `finishedAt` is set with every completed phase (`controller/appcontroller.go:1674`); auto-sync treats the revision as attempted (`controller/appcontroller.go:2396`).",
        modelled: "status.operation_state.phase",
        used: Use::Rule {
            rules: &["health-and-sync"],
            flips: &[
                // why it changes: without a succeeded sync the wait for auto-sync counts from the app's creation a month ago, so it escalates instead of holding.
                Flip { case: "modes/out-of-sync-awaiting-auto-sync", pointer: "/status/operationState/phase", to: "null" },
            ],
        },
        probe: None,
    },
    // ---- Sync status codes (`pkg/apis/application/v1alpha1/types.go:1885`-`1889`) ----
    MapRow {
        kind: RowKind::SyncCode,
        key: "Synced",
        meaning: "Every managed resource matches its desired state.",
        controller: "The comparison's default code (`controller/state.go:927`); auto-sync does nothing unless OutOfSync (`controller/appcontroller.go:2347`).",
        modelled: "status.sync.status",
        used: Use::Rule {
            rules: &["stale-status", "failed-operation", "health-and-sync", "resolved", "nothing-to-do"],
            flips: &[
                // why it changes: the healthy app becomes OutOfSync with automated sync on.
                Flip { case: "modes/healthy", pointer: "/status/sync/status", to: "\"OutOfSync\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::SyncCode,
        key: "OutOfSync",
        meaning: "A managed resource differs from its desired state, is missing, or needs pruning (unless `IgnoreExtraneous`).",
        controller: "Set by `CompareAppState` (`controller/state.go:995`, `:1037`); the only code that starts automated sync (`controller/appcontroller.go:2347`).",
        modelled: "status.sync.status",
        used: Use::Rule {
            rules: &["prune-risk", "self-heal-loop", "health-and-sync"],
            flips: &[
                // why it changes: the manual OutOfSync app becomes Synced and healthy.
                Flip { case: "modes/out-of-sync-manual", pointer: "/status/sync/status", to: "\"Synced\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::SyncCode,
        key: "Unknown",
        meaning: "The comparison could not be made: live state failed to load, or the spec or project is invalid.",
        controller: "Set when live objects fail to load (`controller/state.go:1035`), on spec or project errors (`controller/appcontroller.go:1870`) and as the initial state (`controller/state.go:643`); auto-sync does not run.",
        modelled: "status.sync.status",
        used: Use::Rule {
            rules: &["health-and-sync", "stale-status"],
            flips: &[
                // why it changes: Synced and Healthy the stale app is calm, so the stale status is not refreshed.
                Flip { case: "staleness/unknown-status-an-hour-old", pointer: "/status/sync/status", to: "\"Synced\"" },
            ],
        },
        probe: None,
    },
    // ---- Health codes (`gitops-engine/pkg/health/health.go:18`-`30`) ----
    MapRow {
        kind: RowKind::HealthCode,
        key: "Healthy",
        meaning: "Every managed resource with a health check is healthy.",
        controller: "The starting value of the aggregation (`controller/health.go:25`), lowered to the worst resource's code in the order Healthy < Suspended < Progressing < Missing < Degraded < Unknown (`gitops-engine/pkg/health/health.go:45`).",
        modelled: "status.health.status",
        used: Use::Rule {
            rules: &["stale-status", "failed-operation", "health-and-sync", "resolved", "nothing-to-do"],
            flips: &[
                // why it changes: the healthy app becomes health-degraded.
                Flip { case: "modes/healthy", pointer: "/status/health/status", to: "\"Degraded\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::HealthCode,
        key: "Suspended",
        meaning: "A resource is suspended or paused on purpose (a suspended CronJob, a paused Rollout).",
        controller: "Aggregated by `setApplicationHealth` (`controller/health.go:86`); a hook that is Suspended counts as Running (`gitops-engine/pkg/sync/sync_context.go:360`).",
        modelled: "status.health.status",
        used: Use::Rule {
            rules: &["stale-status", "failed-operation", "health-and-sync", "resolved", "nothing-to-do"],
            flips: &[
                // why it changes: Suspended is read as a deliberate steady state; Missing is treated as a possible comparison error (`comparison-error-transient`).
                Flip { case: "modes/suspended-by-design", pointer: "/status/health/status", to: "\"Missing\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::HealthCode,
        key: "Progressing",
        meaning: "A resource is not healthy yet but may become so (a rollout, a custom resource still reconciling).",
        controller: "Aggregated by `setApplicationHealth` (`controller/health.go:86`); per resource in `status.resources[].health` when persisted (`controller/health.go:69`).",
        modelled: "status.health.status",
        used: Use::Rule {
            rules: &["health-and-sync"],
            flips: &[
                // why it changes: the rollout in progress becomes a healthy app.
                Flip { case: "modes/rollout-progressing", pointer: "/status/health/status", to: "\"Healthy\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::HealthCode,
        key: "Degraded",
        meaning: "A resource failed or did not become healthy in time (a Deployment past its progress deadline, a failed Job).",
        controller: "Aggregated by `setApplicationHealth` (`controller/health.go:86`); a Degraded hook ends its operation Failed (`gitops-engine/pkg/sync/sync_context.go:360`).",
        modelled: "status.health.status",
        used: Use::Rule {
            rules: &["health-and-sync"],
            flips: &[
                // why it changes: the degraded app becomes healthy.
                Flip { case: "modes/health-degraded", pointer: "/status/health/status", to: "\"Healthy\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::HealthCode,
        key: "Missing",
        meaning: "The app expects resources but none of them exists live.",
        controller: "Set when no target resource is live (`controller/health.go:92`); a single missing resource does not lower the app's health (`controller/health.go:76`).",
        modelled: "status.health.status",
        used: Use::Rule {
            rules: &["health-and-sync"],
            flips: &[
                // why it changes: a Synced app whose health is Missing is treated as a possible comparison error (`comparison-error-transient`).
                Flip { case: "modes/healthy", pointer: "/status/health/status", to: "\"Missing\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::HealthCode,
        key: "Unknown",
        meaning: "Health could not be assessed: a health check errored, or the spec or project is invalid.",
        controller: "Set on spec or project errors (`controller/appcontroller.go:1871`) and by a resource's health check; the worst code in the aggregation order (`gitops-engine/pkg/health/health.go:45`).",
        modelled: "status.health.status",
        used: Use::Rule {
            rules: &["health-and-sync"],
            flips: &[
                // why it changes: a Synced app whose health is Unknown is treated as a possible comparison error (`comparison-error-transient`).
                Flip { case: "modes/healthy", pointer: "/status/health/status", to: "\"Unknown\"" },
            ],
        },
        probe: None,
    },
    // ---- Sync result codes (`gitops-engine/pkg/sync/common/types.go:107`-`110`) ----
    MapRow {
        kind: RowKind::ResultCode,
        key: "status:Synced",
        meaning: "The resource was applied (or would be, in a dry run).",
        controller: "Returned by gitops-engine's apply task (`gitops-engine/pkg/sync/sync_context.go:1450`).",
        modelled: "status.operation_state.sync_result.resources[].status",
        used: Use::NotRelevant("the policy reads a result's message, hook type and hook phase, never its result code"),
        probe: Some(Flip {
            case: "transient/broken-pipe",
            pointer: "/status/operationState/syncResult/resources/1/status",
            to: "\"Synced\"",
        }),
    },
    MapRow {
        kind: RowKind::ResultCode,
        key: "status:SyncFailed",
        meaning: "The resource failed to apply or to prune; its message says why.",
        controller: "Set by gitops-engine (`gitops-engine/pkg/sync/sync_context.go:1442`, `:1468`, `:1216`); their messages make the operation message (`:489`).",
        modelled: "status.operation_state.sync_result.resources[].status",
        used: Use::Carried(
            "the escalation lists the resources that failed (`functions/slack/src/blocks.rs`); the policy reads their messages, not the code",
        ),
        probe: Some(Flip {
            case: "transient/broken-pipe",
            pointer: "/status/operationState/syncResult/resources/0/status",
            to: "\"SyncFailed\"",
        }),
    },
    MapRow {
        kind: RowKind::ResultCode,
        key: "status:Pruned",
        meaning: "The resource was deleted because it is no longer in the desired state.",
        controller: "Returned by gitops-engine's prune task (`gitops-engine/pkg/sync/sync_context.go:1471`).",
        modelled: "status.operation_state.sync_result.resources[].status",
        used: Use::NotRelevant(
            "what a past sync pruned; the prune rules read what a next sync would prune (`status.resources[].requiresPruning`)",
        ),
        probe: Some(Flip {
            case: "transient/broken-pipe",
            pointer: "/status/operationState/syncResult/resources/0/status",
            to: "\"Pruned\"",
        }),
    },
    MapRow {
        kind: RowKind::ResultCode,
        key: "status:PruneSkipped",
        meaning: "The resource needed pruning but was left: the sync did not prune, or the resource says `Prune=false`.",
        controller: "Returned by gitops-engine's prune task (`gitops-engine/pkg/sync/sync_context.go:1456`, `:1458`).",
        modelled: "status.operation_state.sync_result.resources[].status",
        used: Use::NotRelevant("what a past sync left; the prune rules read `status.resources[].requiresPruning`"),
        probe: Some(Flip {
            case: "transient/broken-pipe",
            pointer: "/status/operationState/syncResult/resources/0/status",
            to: "\"PruneSkipped\"",
        }),
    },
    // ---- Hook phases in `syncResult.resources[].hookPhase` (the OperationPhase values) ----
    MapRow {
        kind: RowKind::ResultCode,
        key: "hookPhase:Running",
        meaning: "The hook (or, for a plain resource, its apply) is still in progress: a hook whose health is Progressing or Suspended; a Synced plain resource before its health is known.",
        controller: "`getOperationPhase` (`gitops-engine/pkg/sync/sync_context.go:363`) and the result-code mapping (`:1569`).",
        modelled: "status.operation_state.sync_result.resources[].hook_phase",
        used: Use::Carried(
            "named by `pending_post_sync_hooks` (a PostSync hook not yet finished), but `has_hooks()` takes the same branch, so no decision turns on it; the policy tells only Failed and Error from the rest",
        ),
        probe: Some(Flip {
            case: "transient/broken-pipe",
            pointer: "/status/operationState/syncResult/resources/0/hookPhase",
            to: "\"Running\"",
        }),
    },
    MapRow {
        kind: RowKind::ResultCode,
        key: "hookPhase:Terminating",
        meaning: "An OperationPhase value that gitops-engine never records for a single resource or hook.",
        controller: "`setResourceResult` is only called with Running, Succeeded, Failed or Error (`gitops-engine/pkg/sync/sync_context.go:1735`); a terminated hook is recorded Failed or Succeeded `Terminated` (`:810`, `:843`).",
        modelled: "status.operation_state.sync_result.resources[].hook_phase",
        used: Use::NotRelevant("never written for a resource"),
        probe: Some(Flip {
            case: "transient/broken-pipe",
            pointer: "/status/operationState/syncResult/resources/1/hookPhase",
            to: "\"Terminating\"",
        }),
    },
    MapRow {
        kind: RowKind::ResultCode,
        key: "hookPhase:Failed",
        meaning: "The hook failed (its health Degraded or Unknown, e.g. a Job past its backoff limit), or a plain resource failed to apply or became Degraded.",
        controller: "`getOperationPhase` (`gitops-engine/pkg/sync/sync_context.go:360`), a Degraded resource (`:566`), a failed delete (`:832`), termination (`:843`).",
        modelled: "status.operation_state.sync_result.resources[].hook_phase",
        used: Use::Rule {
            rules: FAILED_HOOK_RULES,
            flips: &[
                // why it changes: with the PreSync Job succeeded only the operation message names the backoff limit (hook-failed-message, not hook-failed).
                Flip {
                    case: "hooks/presync-failed-app-degraded",
                    pointer: "/status/operationState/syncResult/resources/0/hookPhase",
                    to: "\"Succeeded\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::ResultCode,
        key: "hookPhase:Error",
        meaning: "The hook or resource could not be assessed or handled: its health check errored, it went missing, its finalizer could not be removed, or it could not be created.",
        controller: "Set by gitops-engine (`gitops-engine/pkg/sync/sync_context.go:549`, `:591`, `:616`, `:1216`).",
        modelled: "status.operation_state.sync_result.resources[].hook_phase",
        used: Use::Rule {
            rules: FAILED_HOOK_RULES,
            flips: &[
                // why it changes: without the errored Sync hook the Synced, Healthy app's failure is settled and it is healthy (none, not escalate).
                Flip {
                    case: "hooks/sync-hook-error-deadline-exceeded",
                    pointer: "/status/operationState/syncResult/resources/0/hookPhase",
                    to: "\"Succeeded\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::ResultCode,
        key: "hookPhase:Succeeded",
        meaning: "The hook completed (health Healthy or no health check), or a plain resource was applied and is healthy, or was pruned.",
        controller: "`getOperationPhase` (`gitops-engine/pkg/sync/sync_context.go:366`), a healthy resource (`:560`, `:564`), the result-code mapping (`:1571`).",
        modelled: "status.operation_state.sync_result.resources[].hook_phase",
        used: Use::Carried(
            "named by `pending_post_sync_hooks` as finished, but `has_hooks()` takes the same branch, so no decision turns on it; a succeeded hook still counts as a hook for the sync gate",
        ),
        probe: Some(Flip {
            case: "transient/broken-pipe",
            pointer: "/status/operationState/syncResult/resources/0/hookPhase",
            to: "\"Succeeded\"",
        }),
    },
    // ---- Hook types in `syncResult.resources[].hookType` (`gitops-engine/pkg/sync/common/types.go:116`-`120`, `controller/hook.go:28`) ----
    MapRow {
        kind: RowKind::ResultCode,
        key: "hookType:PreSync",
        meaning: "A hook run before the sync's resources are applied (database migrations, checks).",
        controller: "Run by gitops-engine in the PreSync phase (`gitops-engine/pkg/sync/common/types.go:116`); its result carries the type (`gitops-engine/pkg/sync/sync_context.go:1753`).",
        modelled: "status.operation_state.sync_result.resources[].hook_type",
        used: Use::Rule {
            rules: HOOK_RULES,
            flips: &[
                // why it changes: the failed Job is no longer a hook, so only the operation message names the backoff limit (hook-failed-message).
                Flip {
                    case: "hooks/presync-failed-app-degraded",
                    pointer: "/status/operationState/syncResult/resources/0/hookType",
                    to: "null",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::ResultCode,
        key: "hookType:Sync",
        meaning: "A hook run in the Sync phase, with the resources, after PreSync hooks.",
        controller: "Run by gitops-engine in the Sync phase (`gitops-engine/pkg/sync/common/types.go:117`).",
        modelled: "status.operation_state.sync_result.resources[].hook_type",
        used: Use::Rule {
            rules: HOOK_RULES,
            flips: &[
                // why it changes: the errored Job is no longer a hook, so the Synced, Healthy app's failure is settled (none, not escalate).
                Flip {
                    case: "hooks/sync-hook-error-deadline-exceeded",
                    pointer: "/status/operationState/syncResult/resources/0/hookType",
                    to: "null",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::ResultCode,
        key: "hookType:PostSync",
        meaning: "A hook run after every resource is applied and healthy (smoke tests, notifications); it never runs while a resource stays unhealthy.",
        controller: "Run by gitops-engine in the PostSync phase (`gitops-engine/pkg/sync/common/types.go:118`) once the Sync phase is healthy.",
        modelled: "status.operation_state.sync_result.resources[].hook_type",
        used: Use::Rule {
            rules: HOOK_RULES,
            flips: &[
                // why it changes: the failed Job is no longer a hook, so only the operation message names the backoff limit (hook-failed-message).
                Flip {
                    case: "hooks/postsync-smoke-test-failed-app-synced-healthy",
                    pointer: "/status/operationState/syncResult/resources/1/hookType",
                    to: "null",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::ResultCode,
        key: "hookType:SyncFail",
        meaning: "A hook run only when the sync failed (cleanup, alerts).",
        controller: "Run by gitops-engine after a failed sync (`gitops-engine/pkg/sync/sync_context.go:921`-`932`); its failure reads `one or more SyncFail hooks failed`.",
        modelled: "status.operation_state.sync_result.resources[].hook_type",
        used: Use::Rule {
            rules: HOOK_RULES,
            flips: &[
                // why it changes: the failed Job is no longer a hook, so only the operation message names the SyncFail failure (hook-failed-message).
                Flip {
                    case: "hooks/syncfail-hook-failed-too",
                    pointer: "/status/operationState/syncResult/resources/1/hookType",
                    to: "null",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: RowKind::ResultCode,
        key: "hookType:Skip",
        meaning: "`argocd.argoproj.io/hook: Skip` keeps a resource out of the sync altogether.",
        controller: "gitops-engine skips such resources (`gitops-engine/pkg/sync/hook/hook.go:34`) and the app's health ignores them (`controller/health.go:27`), so no result carries this type.",
        modelled: "status.operation_state.sync_result.resources[].hook_type",
        used: Use::NotRelevant("never recorded in a sync result"),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/status/operationState/syncResult/resources/0/hookType",
            to: "\"Skip\"",
        }),
    },
    MapRow {
        kind: RowKind::ResultCode,
        key: "hookType:PreDelete",
        meaning: "A hook the controller runs when the app is deleted, before its resources are deleted. Argo CD v3.3+.",
        controller: "Run by `finalizeApplicationDeletion` (`controller/appcontroller.go:1323`, `controller/hook.go:316`) and kept out of syncs (`controller/state.go:613`); a failure shows only as a DeletionError condition (`controller/hook.go:227`).",
        modelled: "status.operation_state.sync_result.resources[].hook_type",
        used: Use::NotRelevant("never recorded in a sync result; its failure reaches the policy as a deletion that does not finish"),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/status/operationState/syncResult/resources/0/hookType",
            to: "\"PreDelete\"",
        }),
    },
    MapRow {
        kind: RowKind::ResultCode,
        key: "hookType:PostDelete",
        meaning: "A hook the controller runs after the app's resources are deleted (present in v2.14; `controller/hook.go:21` there).",
        controller: "Run during deletion (`controller/hook.go:324`) and kept out of syncs (`controller/state.go:619`); a failure shows only as a DeletionError condition (`controller/hook.go:227`).",
        modelled: "status.operation_state.sync_result.resources[].hook_type",
        used: Use::NotRelevant("never recorded in a sync result; its failure reaches the policy as a deletion that does not finish"),
        probe: Some(Flip {
            case: "hooks/presync-ran-then-transient-failure-idempotent",
            pointer: "/status/operationState/syncResult/resources/0/hookType",
            to: "\"PostDelete\"",
        }),
    },
];

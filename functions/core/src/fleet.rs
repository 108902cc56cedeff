//! Fleet outages: many apps failing at once for one shared cause.
//!
//! When Git, a Git host, the repo-server or a destination cluster is down, every app that depends
//! on it shows the same thing in a list: sync status `Unknown` (Argo CD could not compare it,
//! docs/argo-cd-behaviour.md §3). Acting app by app then only adds load to what is down and opens
//! hundreds of incidents for one cause. This module finds such causes in a field-masked list and
//! says what a sweep does about each: it holds the covered apps back, probes a few canaries, and
//! once a canary heals releases the rest as one wave in priority order.
//!
//! Covering follows Alertmanager-style inhibition: an app is covered only when it is down *and*
//! depends on the cause's scope (its repo host, its cluster, or Argo CD itself). Apps failing for
//! their own reasons during an outage keep their own handling, and two scopes down at once make
//! two causes. Pure: the sweep plan, `medic sweep` and the sweeper use it; see docs/fleet.md.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};

use serde::{Deserialize, Serialize};

use crate::app::{AppId, Application, sync_status};
use crate::ladder::FleetControl;

/// Annotation (or label) an app owner sets to order the recovery wave: an integer, higher first
/// (default 0).
pub const PRIORITY_KEY: &str = "argo-medic.io/priority";

/// What many apps can depend on together.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CauseScope {
    /// Argo CD itself (the repo-server or the application controller): apps of every source and
    /// every cluster cannot be compared.
    Instance,
    /// One Git, Helm or OCI host (`github.com`, `git.example.com`).
    RepoHost(String),
    /// One destination cluster, by API server URL or by name.
    Cluster(String),
}

impl CauseScope {
    /// A stable key for markers and alerts: `instance`, `repo:<host>`, `cluster:<server or name>`.
    pub fn key(&self) -> String {
        match self {
            CauseScope::Instance => "instance".into(),
            CauseScope::RepoHost(host) => format!("repo:{host}"),
            CauseScope::Cluster(cluster) => format!("cluster:{cluster}"),
        }
    }

    /// For people: "Argo CD (repo-server or controller)", "Git host git.example.com", ...
    pub fn describe(&self) -> String {
        match self {
            CauseScope::Instance => "Argo CD itself (repo-server or application controller)".into(),
            CauseScope::RepoHost(host) => format!("source host {host}"),
            CauseScope::Cluster(cluster) => format!("destination cluster {cluster}"),
        }
    }
}

impl std::fmt::Display for CauseScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.key())
    }
}

/// The host of a source's `repoURL`: `https://host/...`, `oci://host/...`, `ssh://git@host/...`,
/// scp-like `git@host:org/repo`, or a bare Helm/OCI `host/path`. Lowercase, without user or port.
pub fn repo_host(repo_url: &str) -> Option<String> {
    let url = repo_url.trim();
    if url.is_empty() {
        return None;
    }
    let rest = match url.split_once("://") {
        Some((_, rest)) => rest,
        // scp-like syntax: user@host:path (a colon before any slash).
        None => match url.split_once(':') {
            Some((before, _)) if !before.contains('/') => before,
            _ => url,
        },
    };
    let authority = rest.split('/').next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    let host = if host.starts_with('[') {
        host.split(']').next().map(|h| format!("{h}]")).unwrap_or_default()
    } else {
        host.split(':').next().unwrap_or("").to_owned()
    };
    Some(host.to_ascii_lowercase()).filter(|h| !h.is_empty())
}

/// The scopes an app depends on: the hosts of its sources and its destination cluster.
pub fn scopes_of(app: &Application) -> Vec<CauseScope> {
    let destination = &app.spec.destination;
    scopes_from(app.spec.source.iter().chain(&app.spec.sources).map(|s| s.repo_url.as_str()), &destination.server, &destination.name)
}

/// The scopes of an app from its sources' `repoURL`s and its destination (server URL, else name):
/// what [`scopes_of`] reads from an Application, from a notification's fields.
pub fn scopes_from<'a>(repo_urls: impl IntoIterator<Item = &'a str>, server: &str, name: &str) -> Vec<CauseScope> {
    let hosts: BTreeSet<String> = repo_urls.into_iter().filter_map(repo_host).collect();
    let mut scopes: Vec<CauseScope> = hosts.into_iter().map(CauseScope::RepoHost).collect();
    let cluster = if server.is_empty() { name } else { server };
    if !cluster.is_empty() {
        scopes.push(CauseScope::Cluster(cluster.trim_end_matches('/').to_owned()));
    }
    scopes
}

/// An app an outage shows as down: not opted out, and Argo CD cannot compare it (`Unknown`).
pub fn is_down(app: &Application) -> bool {
    !app.opted_out() && app.sync_status() == sync_status::UNKNOWN
}

/// True when a canary a normal refresh left down shows the repo-server's cached generation failure
/// (`Manifest generation error (cached)`): the repo-server replays a failed generation for up to
/// an hour without trying again (catalogue: `cached-manifest-error`), so a normal refresh cannot
/// tell whether the source is back. The probe hard-refreshes it, which bypasses that cache.
pub fn needs_hard_probe(app: &Application) -> bool {
    is_down(app) && app.status.conditions.iter().any(|c| crate::cause::cause_of(&c.message).cached)
}

/// When apps failing together are one cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetRules {
    /// A cause covers at least this many apps...
    pub min_apps: usize,
    /// ...and this share (percent) of the listed apps of its scope are down.
    pub min_scope_percent: usize,
    /// Argo CD itself is the cause when this share (percent) of the whole fleet is down across
    /// several hosts and several clusters.
    pub min_instance_percent: usize,
    /// Apps of a cause probed while it lasts; the first to heal releases the wave.
    pub canaries: usize,
    /// The wave is released in batches of this many; it pauses when more than
    /// [`FleetRules::pause_percent`] of a batch does not heal.
    pub wave_batch: usize,
    /// The share (percent) of a batch's judged apps that may fail again; more than this pauses the wave (`should_pause`).
    pub pause_percent: usize,
    /// The fleet incident's own time bound: a cause still down this long after its first app
    /// went down is escalated to a person, once per cause. Its apps' own ladders, which it holds
    /// back, would have escalated each of them by then (an `Unknown` app is refreshed, hard
    /// refreshed, then handed over within the ladder's bound), so the cause must not stay
    /// quieter than they would have been.
    pub escalate_after_secs: i64,
}

impl Default for FleetRules {
    fn default() -> Self {
        Self {
            min_apps: 10,
            min_scope_percent: 50,
            min_instance_percent: 20,
            canaries: 3,
            wave_batch: 20,
            pause_percent: 50,
            escalate_after_secs: 3600,
        }
    }
}

/// One shared cause and the apps it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetCause {
    /// What the covered apps depend on together: a repo host, a cluster, or Argo CD itself.
    pub scope: CauseScope,
    /// Listed apps of the scope (down or not).
    pub listed: usize,
    /// The covered apps, in wave order: [`PRIORITY_KEY`] first (higher first), then the most
    /// recently failed, then by id. The first [`FleetRules::canaries`] are the canaries.
    pub apps: Vec<AppId>,
    /// How many of `apps` are canaries.
    pub canaries: usize,
    /// When the sweeper first saw the cause (its sighting marker, kept while the cause is seen):
    /// the outage's identity, stable as apps join and leave. `None` until the sweep times the
    /// cause ([`FleetCause::timed`]).
    pub sighted_at: Option<DateTime<Utc>>,
    /// When the outage began as far as the sweep can tell: its sighting, or earlier when a canary
    /// just read shows a `ComparisonError` older than that. What the time bound counts from.
    pub began_at: Option<DateTime<Utc>>,
}

impl FleetCause {
    /// The canaries: the first `canaries` apps in wave order, probed while the cause lasts.
    pub fn canaries(&self) -> &[AppId] {
        &self.apps[..self.canaries.min(self.apps.len())]
    }

    /// The rest of the covered apps, in wave order.
    pub fn wave(&self) -> &[AppId] {
        &self.apps[self.canaries.min(self.apps.len())..]
    }

    /// True when `app` is one of the apps this cause covers.
    pub fn covers(&self, app: &AppId) -> bool {
        self.apps.contains(app)
    }

    /// The cause timed by the sweep: `sighted` is its first sighting (the outage's identity);
    /// its start is that, or the oldest `ComparisonError` among the canaries just `read`
    /// ([`comparison_error_since`]) when older.
    ///
    /// Not from the list: a comparison error leaves health as it was (Argo CD computes health
    /// from the live resources whatever the comparison result, `controller/state.go`
    /// `CompareAppState`), so `health.lastTransitionTime` of a Git outage's apps is days old, and
    /// the list mask cannot carry `status.conditions` (docs/fleet.md, "When an outage began").
    pub fn timed(self, sighted: DateTime<Utc>, read: &[Application]) -> Self {
        let canaries: BTreeSet<AppId> = self.canaries().iter().cloned().collect();
        let condition = read.iter().filter(|a| canaries.contains(&a.id())).filter_map(comparison_error_since).min();
        let began = condition.map_or(sighted, |c| c.min(sighted));
        Self { sighted_at: Some(sighted), began_at: Some(began), ..self }
    }

    /// The outage's identity as markers and keys spell it: its sighting (RFC 3339, seconds).
    pub fn since(&self) -> Option<String> {
        self.sighted_at.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
    }

    /// True when the cause has outlived its time bound ([`FleetRules::escalate_after_secs`]) at
    /// `now`: a person must hear of it. A cause whose start the list does not show is timed from
    /// when it was first found, which the caller knows; here it is never overdue.
    pub fn overdue(&self, rules: &FleetRules, now: DateTime<Utc>) -> bool {
        self.began_at.is_some_and(|began| (now - began).num_seconds() >= rules.escalate_after_secs)
    }

    /// Seconds the recovery wave takes at `refresh_per_minute` (the estimate the alert gives).
    pub fn wave_secs(&self, refresh_per_minute: u32) -> u64 {
        (self.wave().len() as u64 * 60).div_ceil(u64::from(refresh_per_minute.max(1)))
    }
}

/// The priority an app's owners gave it ([`PRIORITY_KEY`], annotation before label), 0 when unset
/// or not an integer.
pub fn priority(app: &Application) -> i64 {
    let m = &app.metadata;
    m.annotations.get(PRIORITY_KEY).or_else(|| m.labels.get(PRIORITY_KEY)).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// Since when Argo CD has failed to compare an app it cannot compare: its `ComparisonError`
/// condition's `lastTransitionTime`. Argo CD keeps that time while the condition's message stays
/// the same (`ApplicationStatus.SetConditions`, pkg/apis/application/v1alpha1/types.go), so it
/// is the error's start as long as the error reads the same.
pub fn comparison_error_since(app: &Application) -> Option<DateTime<Utc>> {
    if !is_down(app) {
        return None;
    }
    app.status.conditions.iter().filter(|c| c.kind == "ComparisonError").filter_map(|c| c.last_transition_time).min()
}

/// When the app last changed for the worse, as far as a list shows: its health transition or its
/// last operation's end, whichever is later.
fn failed_at(app: &Application) -> Option<DateTime<Utc>> {
    let health = app.status.health.as_ref().and_then(|h| h.last_transition_time);
    let operation = app.status.operation_state.as_ref().and_then(|o| o.finished_at);
    health.max(operation)
}

/// Finds the shared causes in a listed fleet. Each down app is covered by at most one cause: the
/// declared scope of its own that explains the failure best (the largest down share of its
/// listed apps; a repo host before a cluster on a tie). A scope left with fewer than
/// [`FleetRules::min_apps`] covered apps is not a cause, and its apps keep their own handling.
pub fn detect(listed: &[Application], rules: &FleetRules) -> Vec<FleetCause> {
    let down: Vec<&Application> = listed.iter().filter(|a| is_down(a)).collect();
    if down.len() < rules.min_apps.max(1) {
        return Vec::new();
    }
    let mut listed_in: BTreeMap<CauseScope, usize> = BTreeMap::new();
    let mut down_in: BTreeMap<CauseScope, usize> = BTreeMap::new();
    for app in listed.iter().filter(|a| !a.opted_out()) {
        for scope in scopes_of(app) {
            *listed_in.entry(scope.clone()).or_default() += 1;
            if is_down(app) {
                *down_in.entry(scope).or_default() += 1;
            }
        }
    }
    let share = |scope: &CauseScope| down_in.get(scope).copied().unwrap_or(0) * 1000 / listed_in.get(scope).copied().unwrap_or(1).max(1);
    let declared = |scope: &CauseScope| {
        let d = down_in.get(scope).copied().unwrap_or(0);
        d >= rules.min_apps && d * 100 >= rules.min_scope_percent * listed_in.get(scope).copied().unwrap_or(0)
    };
    // Argo CD itself: a large share of the fleet down, across several hosts *and* several clusters
    // (what they share is Argo CD: a repo-server or controller outage fails every source at once),
    // or down apps whose list items name no source or destination at all.
    let listed_count = listed.iter().filter(|a| !a.opted_out()).count();
    let declared_hosts = down_in.keys().filter(|s| matches!(s, CauseScope::RepoHost(_)) && declared(s)).count();
    let declared_clusters = down_in.keys().filter(|s| matches!(s, CauseScope::Cluster(_)) && declared(s)).count();
    let unplaced = down.iter().all(|a| scopes_of(a).is_empty());
    let mut covered: BTreeMap<CauseScope, Vec<&Application>> = BTreeMap::new();
    if down.len() * 100 >= rules.min_instance_percent * listed_count.max(1) && (unplaced || (declared_hosts >= 2 && declared_clusters >= 2))
    {
        covered.insert(CauseScope::Instance, down);
    } else {
        for app in down {
            let best = scopes_of(app).into_iter().filter(|s| declared(s)).max_by(|a, b| {
                share(a).cmp(&share(b)).then_with(|| matches!(a, CauseScope::RepoHost(_)).cmp(&matches!(b, CauseScope::RepoHost(_))))
            });
            if let Some(scope) = best {
                covered.entry(scope).or_default().push(app);
            }
        }
        covered.retain(|_, apps| apps.len() >= rules.min_apps);
    }
    covered
        .into_iter()
        .map(|(scope, mut apps)| {
            apps.sort_by(|a, b| {
                priority(b).cmp(&priority(a)).then_with(|| failed_at(b).cmp(&failed_at(a))).then_with(|| a.id().cmp(&b.id()))
            });
            let listed = if scope == CauseScope::Instance { listed_count } else { listed_in.get(&scope).copied().unwrap_or(0) };
            let apps: Vec<AppId> = apps.iter().map(|a| a.id()).collect();
            // Untimed: the list shows no time an outage moves (see `FleetCause::timed`).
            FleetCause { canaries: rules.canaries.min(apps.len()), scope, listed, apps, sighted_at: None, began_at: None }
        })
        .collect()
}

/// The Argo CD projects of a cause's apps: a person pressing a fleet button must be allowed on
/// every one of them, since the button acts on all its apps at once.
pub fn cause_projects(listed: &[Application], cause: &FleetCause) -> Vec<String> {
    let covered: BTreeSet<&AppId> = cause.apps.iter().collect();
    let projects: BTreeSet<String> = listed.iter().filter(|a| covered.contains(&a.id())).map(|a| a.spec.project.clone()).collect();
    projects.into_iter().collect()
}

/// Where a cause's recovery wave stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaveState {
    /// No canary has healed: the apps are held back, the canaries probed each sweep.
    Held,
    /// A person paused it: held back even if a canary heals.
    Paused,
    /// Most of a released batch failed again (the cause is probably back): the rest of the wave
    /// is held, and it is not released again until the relapse marker lapses and a canary heals.
    Relapsed,
    /// Released to the workers (a canary healed, or a person released it).
    Released,
    /// Over: the sweep no longer finds the cause (its apps can be compared again, or too few are
    /// left down to be one). Told once, the parent's last rewrite.
    Recovered,
}

/// What a fleet outage's Slack parent shows, rewritten in place each sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutageView {
    /// [`CauseScope::key`] and [`CauseScope::describe`].
    pub scope: String,
    /// The cause in words, for people (`source host git.example.com`).
    pub describe: String,
    /// When the outage began ([`FleetCause::began_at`], RFC 3339, seconds).
    pub began: Option<String>,
    /// The sweeper's first sighting of it ([`FleetCause::since`]): its identity. Absent on views
    /// of the release before outages had one, which were keyed by `began`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Covered apps, and the listed apps of the scope.
    pub covered: usize,
    /// The listed apps of the scope, down or not.
    pub listed: usize,
    /// How many of the covered apps are canaries.
    pub canaries: usize,
    /// This sweep's probes, and how many canaries came back.
    pub probed: usize,
    /// How many of the probed canaries can be compared again.
    pub healed: usize,
    /// Where the recovery wave stands.
    pub state: WaveState,
    /// Apps released as the wave (this sweep), and the seconds the refresh budget needs for them.
    pub released: usize,
    /// Seconds the refresh budget needs for the released apps (`FleetCause::wave_secs`).
    pub eta_secs: u64,
    /// A person's button set the state (pause, or release before a canary healed).
    pub by_person: bool,
    /// Past its time bound with no canary healed.
    pub overdue: bool,
    /// The projects of its apps (see [`cause_projects`]).
    pub projects: Vec<String>,
}

impl OutageView {
    /// The same view, told as over ([`WaveState::Recovered`]).
    pub fn recovered(&self) -> Self {
        Self { state: WaveState::Recovered, overdue: false, by_person: false, ..self.clone() }
    }

    /// The outage's identity: its sighting (or, on a view of the previous release, its start).
    fn identity(&self) -> &str {
        self.since.as_deref().or(self.began.as_deref()).unwrap_or("-")
    }

    /// The key of its Slack parent: one per cause and sighting, so a later outage of the same
    /// scope gets a parent of its own, and apps joining or leaving this one never move it.
    pub fn key(&self) -> String {
        format!("outage:{}:{}", self.scope, self.identity())
    }

    /// The id of its button for `control`.
    pub fn button(&self, control: FleetControl) -> String {
        crate::keys::fleet_button_id(&self.scope, self.identity(), control)
    }
}

/// What a fleet button stands for, stored when its parent is posted and read on the click.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetButton {
    /// The button's opaque id (`amfleet-…`, `keys::fleet_button_id`).
    pub id: String,
    /// What the button does to the wave: pause it or release it.
    pub control: FleetControl,
    /// The cause's [`CauseScope::key`], and its projects when the parent was first posted (the
    /// click is checked against the outage's latest view, [`FleetButton::outage`], when there is one).
    pub scope: String,
    /// The projects of the cause's apps when the parent was first posted; the person clicking must be allowed on every one.
    pub projects: Vec<String>,
    /// When the parent offered the button.
    pub offered_at: DateTime<Utc>,
    /// The outage it belongs to: its sighting (keys the markers a click leaves) and its parent's
    /// key ([`OutageView::key`]). Empty on buttons of the release before outages had one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub since: String,
    /// The key of the outage's Slack parent (`OutageView::key`); empty on older buttons.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub outage: String,
}

impl FleetButton {
    /// The marker a click of `control` leaves for the sweeper: of its outage, or (a button of the
    /// previous release) of its scope.
    pub fn marker(&self, control: FleetControl) -> crate::keys::Marker {
        if self.since.is_empty() {
            let [pause, release, _] = crate::keys::legacy_fleet_markers(&self.scope);
            if control == FleetControl::Pause { pause } else { release }
        } else {
            crate::keys::fleet_control_marker(&self.scope, &self.since, control)
        }
    }
}

/// How one release batch of a wave went: `healed` of `released` apps are calm after their step.
/// True when the wave should pause (the cause is probably back).
pub fn should_pause(rules: &FleetRules, released: usize, healed: usize) -> bool {
    released > 0 && (released - healed.min(released)) * 100 > rules.pause_percent * released
}

use crate::ladder::WaveOutcome;

/// The verdict on one batch of a wave from the outcomes recorded for its items (an item with
/// several, stepped again after a failure, counts as its best): `None` while an item of the batch
/// has none yet, else whether the wave should pause ([`should_pause`]).
pub fn batch_verdict(rules: &FleetRules, outcomes: &[Vec<WaveOutcome>]) -> Option<bool> {
    let best: Option<Vec<WaveOutcome>> = outcomes.iter().map(|o| o.iter().min().copied()).collect();
    let best = best?;
    let healed = best.iter().filter(|o| **o == WaveOutcome::Healed).count();
    let failed = best.iter().filter(|o| **o == WaveOutcome::Failed).count();
    Some(should_pause(rules, healed + failed, healed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::{ApplicationSource, HealthStatus, SyncStatus};

    fn app(name: &str, repo: &str, cluster: &str, sync: &str) -> Application {
        let mut a = Application::default();
        a.metadata.name = name.into();
        a.metadata.namespace = "argocd".into();
        a.spec.project = "default".into();
        a.spec.source = Some(ApplicationSource { repo_url: repo.into(), ..Default::default() });
        a.spec.destination.server = cluster.into();
        a.status.sync = Some(SyncStatus { status: sync.into(), ..Default::default() });
        a.status.health = Some(HealthStatus { status: if sync == "Unknown" { "Unknown" } else { "Healthy" }.into(), ..Default::default() });
        a
    }

    const IN: &str = "https://kubernetes.default.svc";

    #[test]
    fn repo_hosts_are_read_from_every_url_form_argo_cd_accepts() {
        for (url, host) in [
            ("https://github.com/org/repo.git", "github.com"),
            ("https://user@Git.Example.com:8443/org/repo", "git.example.com"),
            ("git@github.com:org/repo.git", "github.com"),
            ("ssh://git@gitlab.example.com:2222/org/repo.git", "gitlab.example.com"),
            ("oci://registry.example.com/charts", "registry.example.com"),
            ("registry-1.docker.io/bitnamicharts", "registry-1.docker.io"),
            ("https://[2001:db8::1]:443/repo", "[2001:db8::1]"),
        ] {
            assert_eq!(repo_host(url).as_deref(), Some(host), "{url}");
        }
        assert_eq!(repo_host("  "), None);
    }

    #[test]
    fn one_host_down_is_one_cause_covering_only_its_down_apps() {
        let mut fleet = Vec::new();
        for i in 0..40 {
            // 40 apps on a small host (8 % of the fleet), 30 of them down.
            fleet.push(app(&format!("small-{i:02}"), "https://git.small.example.com/r", IN, if i < 30 { "Unknown" } else { "Synced" }));
        }
        for i in 0..460 {
            // Noise elsewhere: OutOfSync or a few Unknown of their own, on another host.
            let sync = if i % 20 == 0 {
                "Unknown"
            } else if i % 7 == 0 {
                "OutOfSync"
            } else {
                "Synced"
            };
            fleet.push(app(&format!("big-{i:03}"), "https://github.com/org/big", IN, sync));
        }
        let causes = detect(&fleet, &FleetRules::default());
        assert_eq!(causes.len(), 1, "{causes:?}");
        let c = &causes[0];
        assert_eq!((c.scope.clone(), c.listed, c.apps.len()), (CauseScope::RepoHost("git.small.example.com".into()), 40, 30));
        assert!(c.apps.iter().all(|a| a.name().starts_with("small-")), "the other host's own Unknown apps are not covered");
        assert_eq!(c.canaries().len(), 3);
        assert_eq!(c.wave().len(), 27);
    }

    #[test]
    fn two_scopes_down_at_once_are_two_causes_and_a_cluster_explains_apps_of_many_hosts() {
        let mut fleet = Vec::new();
        for i in 0..30 {
            fleet.push(app(&format!("gh-{i}"), "https://github.com/org/a", IN, "Unknown"));
        }
        for i in 0..60 {
            // Every app on cluster east is down, whatever its host.
            let host = if i % 2 == 0 { "https://gitlab.example.com/x" } else { "https://bitbucket.example.com/y" };
            fleet.push(app(&format!("east-{i}"), host, "https://east.example.com", "Unknown"));
        }
        for i in 0..200 {
            let host = if i % 2 == 0 { "https://gitlab.example.com/x" } else { "https://bitbucket.example.com/y" };
            fleet.push(app(&format!("ok-{i}"), host, IN, "Synced"));
        }
        // 90 of 290 apps are down (31 %), but one host and one cluster explain them: not Argo CD.
        let scopes: Vec<(String, usize)> =
            detect(&fleet, &FleetRules::default()).into_iter().map(|c| (c.scope.key(), c.apps.len())).collect();
        assert_eq!(scopes, [("repo:github.com".to_owned(), 30), ("cluster:https://east.example.com".to_owned(), 60)]);
    }

    #[test]
    fn a_fleet_wide_failure_spread_over_hosts_and_clusters_is_argo_cd_itself() {
        let fleet: Vec<Application> = (0..100)
            .map(|i| {
                let host = ["https://github.com/a", "https://gitlab.example.com/b", "oci://registry.example.com/c"][i % 3];
                let cluster = ["https://east.example.com", "https://west.example.com"][i % 2];
                app(&format!("app-{i:03}"), host, cluster, if i < 70 { "Unknown" } else { "Synced" })
            })
            .collect();
        let causes = detect(&fleet, &FleetRules::default());
        assert_eq!(causes.len(), 1);
        assert_eq!((causes[0].scope.clone(), causes[0].apps.len(), causes[0].listed), (CauseScope::Instance, 70, 100));
    }

    #[test]
    fn too_few_apps_or_too_small_a_share_is_no_cause() {
        let few: Vec<Application> = (0..9).map(|i| app(&format!("a{i}"), "https://github.com/x", IN, "Unknown")).collect();
        assert!(detect(&few, &FleetRules::default()).is_empty(), "9 apps are handled one by one");
        // 12 of 100 apps of one host down: 12 %, under the host's 50 %.
        let thin: Vec<Application> =
            (0..100).map(|i| app(&format!("a{i}"), "https://github.com/x", IN, if i < 12 { "Unknown" } else { "Synced" })).collect();
        assert!(detect(&thin, &FleetRules::default()).is_empty());
        let mut opted: Vec<Application> = (0..20).map(|i| app(&format!("a{i}"), "https://github.com/x", IN, "Unknown")).collect();
        for a in &mut opted {
            a.metadata.annotations.insert(crate::app::OPT_OUT_KEY.into(), "true".into());
        }
        assert!(detect(&opted, &FleetRules::default()).is_empty(), "opted-out apps are nobody's business");
    }

    #[test]
    fn the_wave_goes_by_priority_then_most_recently_failed() {
        let t = |m: i64| Some(DateTime::<Utc>::from_timestamp(1_700_000_000 + m * 60, 0).unwrap());
        let mut fleet: Vec<Application> = (0..12).map(|i| app(&format!("a{i:02}"), "https://github.com/x", IN, "Unknown")).collect();
        for (i, a) in fleet.iter_mut().enumerate() {
            a.status.health.as_mut().unwrap().last_transition_time = t(i as i64);
        }
        fleet[3].metadata.annotations.insert(PRIORITY_KEY.into(), "10".into());
        fleet[5].metadata.labels.insert(PRIORITY_KEY.into(), "5".into());
        fleet[7].metadata.annotations.insert(PRIORITY_KEY.into(), "not a number".into());
        let order: Vec<String> = detect(&fleet, &FleetRules::default())[0].apps.iter().map(|a| a.name().to_owned()).collect();
        assert_eq!(&order[..4], ["a03", "a05", "a11", "a10"], "priority first, then the latest failure");
    }

    /// H3: the list's health times say nothing of a Git outage (health stays `Healthy` with its
    /// old transition, as in events/apps/comparison-error-persisting.json), so the cause is
    /// timed from the sweep's first sighting, refined by a canary's `ComparisonError` once read.
    #[test]
    fn a_cause_is_timed_from_its_sighting_or_a_canary_s_comparison_error_never_from_health() {
        let t = |m: i64| DateTime::<Utc>::from_timestamp(1_700_000_000 + m * 60, 0).unwrap();
        let mut fleet: Vec<Application> = (0..12).map(|i| app(&format!("a{i:02}"), "https://github.com/x", IN, "Unknown")).collect();
        for (i, a) in fleet.iter_mut().enumerate() {
            // Healthy since days before the outage: a comparison error leaves health alone.
            a.status.health =
                Some(HealthStatus { status: "Healthy".into(), last_transition_time: Some(t(-5000 + i as i64)), ..Default::default() });
        }
        let rules = FleetRules::default();
        let untimed = detect(&fleet, &rules).remove(0);
        assert_eq!((untimed.sighted_at, untimed.began_at), (None, None), "a list shows no time an outage moves");
        assert!(!untimed.overdue(&rules, t(10_000)));
        let cause = untimed.clone().timed(t(10), &[]);
        assert_eq!((cause.sighted_at, cause.began_at), (Some(t(10)), Some(t(10))), "unread canaries: the sighting");
        assert_eq!(cause.since().as_deref(), Some("2023-11-14T22:23:20Z"));
        assert!(!cause.overdue(&rules, t(10 + 59)), "not at once, though health changed 5,000 minutes ago");
        assert!(cause.overdue(&rules, t(10 + 60)), "an hour after the sweep first saw it");
        // A canary read shows the error began before the sweep saw it: that counts, the key does not move.
        let mut canaries: Vec<Application> = fleet.iter().filter(|a| cause.canaries().contains(&a.id())).cloned().collect();
        let condition = |at| crate::app::ApplicationCondition {
            kind: "ComparisonError".into(),
            message: "failed to list refs: connection refused".into(),
            last_transition_time: Some(at),
        };
        canaries[0].status.conditions = vec![condition(t(4))];
        canaries[1].status.conditions = vec![condition(t(7))];
        let refined = untimed.clone().timed(t(10), &canaries);
        assert_eq!((refined.sighted_at, refined.began_at), (Some(t(10)), Some(t(4))));
        // A non-canary's read, a later condition, or a canary that is comparable again refine nothing.
        let mut other = fleet.iter().find(|a| !cause.canaries().contains(&a.id())).unwrap().clone();
        other.status.conditions = vec![condition(t(1))];
        canaries[0].status.conditions = vec![condition(t(12))];
        canaries[1].status.sync.as_mut().unwrap().status = "Synced".into();
        canaries[1].status.conditions = vec![condition(t(2))];
        canaries.push(other);
        assert_eq!(untimed.timed(t(10), &canaries).began_at, Some(t(10)));
    }

    #[test]
    fn a_canary_is_hard_refreshed_only_when_argo_cd_answers_from_the_failed_generation_cache() {
        let condition = |message: &str| crate::app::ApplicationCondition {
            kind: "ComparisonError".into(),
            message: message.into(),
            ..Default::default()
        };
        let mut cached = app("c", "https://github.com/x", IN, "Unknown");
        // Argo CD's words (reposerver/repository/repository.go): the cached error is prefixed so.
        cached.status.conditions = vec![condition(
            "Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = Manifest generation error (cached): `kustomize build` failed exit status 1",
        )];
        assert!(needs_hard_probe(&cached));
        let mut unreachable = app("u", "https://github.com/x", IN, "Unknown");
        unreachable.status.conditions =
            vec![condition("rpc error: code = Unknown desc = failed to list refs: dial tcp: connect: connection refused")];
        assert!(!needs_hard_probe(&unreachable), "a normal refresh asks the host again");
        let mut back = cached.clone();
        back.status.sync.as_mut().unwrap().status = "Synced".into();
        assert!(!needs_hard_probe(&back), "comparable again: healed, nothing more to ask");
    }

    #[test]
    fn a_wave_pauses_when_most_of_a_batch_fails_again() {
        let rules = FleetRules::default();
        assert!(!should_pause(&rules, 20, 20));
        assert!(!should_pause(&rules, 20, 10), "half healed: go on");
        assert!(should_pause(&rules, 20, 9));
        assert!(!should_pause(&rules, 0, 0));
    }

    #[test]
    fn a_wave_slot_knows_its_batch_and_a_batch_is_judged_once_every_item_has_an_outcome() {
        let slot =
            |index, len| crate::ladder::WaveSlot { scope: "repo:git.example.com".into(), since: "s".into(), wave: "w".into(), index, len };
        assert_eq!(slot(0, 37).batch(20), 0..20);
        assert_eq!(slot(19, 37).batch(20), 0..20);
        assert_eq!(slot(20, 37).batch(20), 20..37, "the last batch is shorter");
        assert_eq!(slot(36, 37).batch(20), 20..37);
        assert_eq!(slot(3, 4).batch(0), 3..4, "a batch of zero is a batch of one");
        // L12: an index and length no sweeper writes (an unsigned message's) cannot overflow.
        assert_eq!(slot(u32::MAX, 0).batch(20), (u32::MAX / 20) * 20..u32::MAX);
        let rules = FleetRules::default();
        use WaveOutcome::*;
        let batch = |healed: usize, failed: usize, neither: usize| -> Vec<Vec<WaveOutcome>> {
            [vec![vec![Healed]; healed], vec![vec![Failed]; failed], vec![vec![Neither]; neither]].concat()
        };
        assert_eq!(batch_verdict(&rules, &batch(5, 15, 0)), Some(true));
        assert_eq!(batch_verdict(&rules, &batch(10, 10, 0)), Some(false), "half healed: go on");
        assert_eq!(batch_verdict(&rules, &batch(2, 3, 15)), Some(true), "waits and deferrals are not counted");
        assert_eq!(batch_verdict(&rules, &batch(0, 0, 20)), Some(false));
        let mut unfinished = batch(0, 19, 0);
        unfinished.push(vec![]);
        assert_eq!(batch_verdict(&rules, &unfinished), None, "an item without an outcome: not yet");
        let retried: Vec<Vec<WaveOutcome>> = vec![vec![Failed, Healed]; 20];
        assert_eq!(batch_verdict(&rules, &retried), Some(false), "a failed step that healed on its retry counts as healed");
    }
}

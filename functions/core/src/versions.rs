//! The Argo CD versions Argo Medic knows the behaviour of: a profile per version people run, one
//! row each (as ripgrep's flags), every difference the policy or the client depends on cited at
//! its tag. The simulator serves each profile (`medic_sim::SimConfig::for_version`), and the
//! client and policy tests run on all of them (`make test`).
//!
//! What Argo Medic decides never reads a profile as a whole: each behaviour that changed is a
//! question of the version Argo CD reports (`GET /api/version`), answered by the version it
//! changed in ([`Version::at_least`]). The profiles say which versions were tried, and let a
//! deployment say when its Argo CD is none of them.

use std::fmt;

/// An Argo CD version, `major.minor.patch` (the build and pre-release parts ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// The major version: the 3 of v3.5.1.
    pub major: u64,
    /// The minor version: the 5 of v3.5.1.
    pub minor: u64,
    /// The patch version: the 1 of v3.5.1; 0 when the text gave none.
    pub patch: u64,
}

impl Version {
    /// The version `major.minor.patch`.
    pub const fn new(major: u64, minor: u64, patch: u64) -> Self {
        Self { major, minor, patch }
    }

    /// `v3.5.1+109ca7c`, `3.3.7`, `v2.14.21-rc1` (a missing patch is 0).
    pub fn parse(text: &str) -> Option<Self> {
        let core = text.trim().trim_start_matches('v').split(['+', '-']).next()?;
        let mut parts = core.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = parts.next().map(str::parse).transpose().ok()?.unwrap_or(0);
        Some(Self { major, minor, patch })
    }

    /// True when this version is `major.minor.patch` or later: how a behaviour that changed is asked about.
    pub fn at_least(self, major: u64, minor: u64, patch: u64) -> bool {
        self >= Self::new(major, minor, patch)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// One Argo CD version as Argo Medic knows it.
#[derive(Debug, Clone, Copy)]
pub struct Profile {
    /// The release tag the behaviours were read at.
    pub tag: &'static str,
    /// Why this version is one to know.
    pub why: &'static str,
    /// List's `fields` whitelist knows the parts of `spec` (`spec.project`, `spec.source`,
    /// `spec.sources`, `spec.destination`, `spec.syncPolicy`) and `status.sync.revision`; before,
    /// only the whole `spec`, and a part asked for is dropped without a word.
    pub list_spec_parts: bool,
    /// `spec.syncPolicy.retry.refresh` exists: a retry resolves the latest revision.
    pub retry_refresh: bool,
    /// A sync window's `syncOverrun` lets a running sync go on past the window.
    pub sync_overrun: bool,
    /// The controller compares apps on its informer's resync; the #25290 cherry-picks stopped that
    /// (apps re-checked Git only on a refresh), and the next patches reverted them (#27344).
    pub periodic_refresh: bool,
    /// `status.resources[].health` is kept in the Application (v2); from v3.0 it is not
    /// (`status.resourceHealthSource: appTree`), and only Get fills it from the resource tree.
    pub resource_health_in_status: bool,
    /// Where each behaviour is, at `tag` (`path:line`).
    pub cites: &'static [(&'static str, &'static str)],
}

impl Profile {
    /// The profile's version, read from its tag.
    pub fn version(&self) -> Version {
        Version::parse(self.tag).expect("a profile's tag is a version")
    }
}

/// Argo CD 3.5.0 (argoproj/argo-cd 566c622599, #25451) taught List's whitelist the parts of `spec`.
pub const LIST_SPEC_PARTS_SINCE: Version = Version::new(3, 5, 0);
/// `retry.refresh` came with 3.2.0 (argoproj/argo-cd 5a8b427322, #23038).
pub const RETRY_REFRESH_SINCE: Version = Version::new(3, 2, 0);

/// The versions Argo Medic is tested against, oldest first. The research behind each row:
/// docs/argo-cd-versions.md.
pub const PROFILES: &[Profile] = &[
    Profile {
        tag: "v2.14.21",
        why: "the newest 2.x, still common",
        list_spec_parts: false,
        retry_refresh: false,
        sync_overrun: false,
        periodic_refresh: true,
        resource_health_in_status: true,
        cites: &[
            ("list fields", "pkg/apiclient/application/forwarder_overwrite.go:21 (spec whole, no parts)"),
            ("retry strategy", "pkg/apis/application/v1alpha1/types.go:1449 (Limit, Backoff; no Refresh)"),
            ("periodic refresh", "controller/appcontroller.go:2414 (UpdateFunc: every update refreshes, resync with jitter :2434)"),
            ("sync windows", "pkg/apis/application/v1alpha1/types.go:2569 (no SyncOverrun), :2772 CanSync(isManual)"),
            ("refresh annotation", "controller/appcontroller.go:2020-2021 (removed at the end of the reconcile)"),
        ],
    },
    Profile {
        tag: "v3.1.16",
        why: "the newest of 3.0 and 3.1",
        list_spec_parts: false,
        retry_refresh: false,
        sync_overrun: false,
        periodic_refresh: true,
        resource_health_in_status: false,
        cites: &[
            ("list fields", "pkg/apiclient/application/forwarder_overwrite.go:21 (spec whole, no parts)"),
            ("retry strategy", "pkg/apis/application/v1alpha1/types.go:1462 (no Refresh)"),
            ("periodic refresh", "controller/appcontroller.go:2439 (UpdateFunc as in v2.14)"),
            ("sync windows", "pkg/apis/application/v1alpha1/types.go:2731 (no SyncOverrun)"),
            ("resource health", "status.resourceHealthSource appTree by default since v3.0.0: not kept in status"),
        ],
    },
    Profile {
        tag: "v3.3.7",
        why: "the 3.3 patch with the refresh change (#25290, cherry-pick 99e88e0963)",
        list_spec_parts: false,
        retry_refresh: true,
        sync_overrun: false,
        periodic_refresh: false,
        resource_health_in_status: false,
        cites: &[
            ("list fields", "pkg/apiclient/application/forwarder_overwrite.go:21 (spec whole, no parts)"),
            (
                "retry strategy",
                "pkg/apis/application/v1alpha1/types.go:1507 Refresh; controller/appcontroller.go:1503 clears the pinned revisions",
            ),
            ("periodic refresh", "controller/appcontroller.go:2597-2602 (resync events return without a refresh; #27230)"),
            ("sync windows", "pkg/apis/application/v1alpha1/types.go:2779 (no SyncOverrun)"),
        ],
    },
    Profile {
        tag: "v3.3.8",
        why: "the 3.3 patch that reverted it (fb727cf7c1, #27400, for regression #27344)",
        list_spec_parts: false,
        retry_refresh: true,
        sync_overrun: false,
        periodic_refresh: true,
        resource_health_in_status: false,
        cites: &[
            ("list fields", "pkg/apiclient/application/forwarder_overwrite.go:21 (spec whole, no parts)"),
            ("retry strategy", "pkg/apis/application/v1alpha1/types.go:1507 Refresh; controller/appcontroller.go:1480"),
            ("periodic refresh", "controller/appcontroller.go:2530 (UpdateFunc as in v2.14 again: fb727cf7c1)"),
        ],
    },
    Profile {
        tag: "v3.5.1",
        why: "the newest release",
        list_spec_parts: true,
        retry_refresh: true,
        sync_overrun: true,
        periodic_refresh: true,
        resource_health_in_status: false,
        cites: &[
            ("list fields", "pkg/apiclient/application/forwarder_overwrite.go:21 (the parts of spec since 566c622599, v3.5.0)"),
            ("retry strategy", "pkg/apis/application/v1alpha1/types.go:1550 Refresh; controller/appcontroller.go:1567"),
            ("sync windows", "pkg/apis/application/v1alpha1/types.go:2949 SyncOverrun, :3181 CanSync(isManual, opStart)"),
            ("refresh annotation", "controller/appcontroller.go:2233 (removed at the end of the reconcile; #28414 not in v3.5.1)"),
        ],
    },
];

/// How a reported version relates to the profiles.
#[derive(Debug, Clone, Copy)]
pub struct Known {
    /// The profile tried nearest below the version (the oldest, for a version older than all).
    pub profile: &'static Profile,
    /// The version is in a profile's own `major.minor` line.
    pub exact: bool,
}

/// The profile a reported version goes with, or `None` when the text is no version.
pub fn profile_for(version: &str) -> Option<Known> {
    let v = Version::parse(version)?;
    // The same patch when there is one (3.3.7 is not 3.3.8), else the newest of its line, else the
    // nearest below, else the oldest.
    let same_line = |p: &&Profile| (p.version().major, p.version().minor) == (v.major, v.minor);
    let profile = PROFILES
        .iter()
        .find(|p| p.version() == v)
        .or_else(|| PROFILES.iter().filter(same_line).filter(|p| p.version() <= v).max_by_key(|p| p.version()))
        .or_else(|| PROFILES.iter().filter(same_line).min_by_key(|p| p.version()))
        .or_else(|| PROFILES.iter().filter(|p| p.version() <= v).max_by_key(|p| p.version()))
        .unwrap_or(&PROFILES[0]);
    Some(Known { profile, exact: PROFILES.iter().any(|p| same_line(&p)) })
}

/// What to say once at start about the Argo CD version: nothing when a profile covers its line,
/// else which profile is nearest and that the behaviours known to have changed are still judged
/// by the version itself.
pub fn note(version: &str) -> Option<String> {
    match profile_for(version) {
        None => Some(format!(
            "Argo CD reports version `{version}`, which is no version: behaviours are assumed as in {}",
            PROFILES[PROFILES.len() - 1].tag
        )),
        Some(Known { exact: true, .. }) => None,
        Some(Known { profile, .. }) => Some(format!(
            "Argo CD {version} has no profile of its own (tested: {}); the nearest, {}, is assumed, and what is known to have changed between versions is judged by the version itself",
            PROFILES.iter().map(|p| p.tag).collect::<Vec<_>>().join(", "),
            profile.tag
        )),
    }
}

/// The List `fields` to send to an Argo CD of `version` for the `wanted` ones: before 3.5.0 the
/// whitelist does not know the parts of `spec` (they would be dropped, leaving items without
/// project, sources or destination: no scope, no fleet grouping), so the whole `spec` is asked
/// for instead, and `status.sync.revision` (unknown before 3.5.0 too) is not sent. An unknown
/// version keeps `wanted`.
pub fn list_fields(version: Option<Version>, wanted: &[String]) -> Vec<String> {
    if version.is_none_or(|v| v >= LIST_SPEC_PARTS_SINCE) {
        return wanted.to_vec();
    }
    let mut out: Vec<String> = Vec::with_capacity(wanted.len());
    for field in wanted {
        let sent = match field.as_str() {
            f if f.starts_with("items.spec.") => "items.spec".to_owned(),
            "items.status.sync.revision" => continue,
            f => f.to_owned(),
        };
        if !out.contains(&sent) {
            out.push(sent);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_as_argo_cd_reports_them() {
        assert_eq!(Version::parse("v3.5.1+109ca7c"), Some(Version::new(3, 5, 1)));
        assert_eq!(Version::parse("2.14.21"), Some(Version::new(2, 14, 21)));
        assert_eq!(Version::parse("v3.4.0-rc5"), Some(Version::new(3, 4, 0)));
        assert_eq!(Version::parse("v3.2"), Some(Version::new(3, 2, 0)));
        assert_eq!(Version::parse("devel"), None);
        assert!(Version::new(3, 3, 7) < Version::new(3, 3, 8) && Version::new(2, 14, 21) < Version::new(3, 0, 0));
    }

    #[test]
    fn each_version_goes_with_its_profile_or_the_nearest_below() {
        let tag = |v: &str| profile_for(v).map(|k| (k.profile.tag, k.exact));
        assert_eq!(tag("v3.3.7+abc"), Some(("v3.3.7", true)), "the patch with the refresh change is its own profile");
        assert_eq!(tag("v3.3.9"), Some(("v3.3.8", true)));
        assert_eq!(tag("v3.3.2"), Some(("v3.3.7", true)), "the line's nearest when no patch below is tried");
        assert_eq!(tag("v3.5.0"), Some(("v3.5.1", true)));
        assert_eq!(tag("v3.6.0"), Some(("v3.5.1", false)), "newer than all: the newest, and said");
        assert_eq!(tag("v3.2.4"), Some(("v3.1.16", false)));
        assert_eq!(tag("v2.9.3"), Some(("v2.14.21", false)), "older than all: the oldest");
        assert!(note("v3.5.1+109ca7c").is_none());
        let said = note("v3.6.0").unwrap();
        assert!(said.contains("v3.6.0 has no profile") && said.contains("v3.5.1, is assumed"), "{said}");
    }

    #[test]
    fn before_3_5_the_list_asks_for_the_whole_spec_instead_of_its_parts() {
        let wanted: Vec<String> =
            ["items.metadata.name", "items.spec.project", "items.spec.source", "items.status.sync.revision", "items.spec.destination"]
                .map(String::from)
                .to_vec();
        assert_eq!(list_fields(Version::parse("v3.5.1"), &wanted), wanted);
        assert_eq!(list_fields(None, &wanted), wanted);
        assert_eq!(list_fields(Version::parse("v3.4.7"), &wanted), ["items.metadata.name", "items.spec"]);
        assert_eq!(list_fields(Version::parse("v2.14.21"), &wanted), ["items.metadata.name", "items.spec"]);
    }

    #[test]
    fn every_profile_parses_and_the_thresholds_agree_with_the_rows() {
        for p in PROFILES {
            let v = p.version();
            assert_eq!(p.list_spec_parts, v >= LIST_SPEC_PARTS_SINCE, "{}", p.tag);
            assert_eq!(p.retry_refresh, v >= RETRY_REFRESH_SINCE, "{}", p.tag);
            assert!(!p.cites.is_empty(), "{}", p.tag);
        }
        assert!(PROFILES.windows(2).all(|w| w[0].version() < w[1].version()), "oldest first");
    }
}

//! Injected faults: what an ingress, a load balancer or a flaky network does to API calls.
//!
//! Faults are checked before any normal handling (before the content-type and auth checks), in
//! insertion order. The first fault that matches a request and has uses left is consumed and
//! applied; at most one fault applies per request.

use std::time::Duration;

/// A fault that applies to the next `times` matching requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// Matches when the request path (without the root path), followed by `?query` when there is
    /// one, contains this string. `None` matches every path.
    pub path_contains: Option<String>,
    /// Matches this HTTP method (case-insensitive). `None` matches every method.
    pub method: Option<String>,
    /// What happens to a matching request.
    pub kind: FaultKind,
    /// How many matching requests it applies to.
    pub times: usize,
}

/// What an injected fault does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultKind {
    /// Answer with this status and a grpc-gateway-like JSON error body (code 8 for 429, 14 for
    /// 5xx), plus `Retry-After: <secs>` when given.
    Status {
        /// The HTTP status.
        code: u16,
        /// The `Retry-After` header, in seconds.
        retry_after_secs: Option<u64>,
    },
    /// Wait this long, then handle the request normally.
    Latency(Duration),
    /// Close the connection without any HTTP response.
    Drop,
    /// Handle the request (a sync starts, a refresh happens), then close the connection without
    /// an answer: the effect happened, the caller cannot know.
    AppliedThenDrop,
    /// Handle the request, then answer with this status instead (a proxy's 504 after argocd-server
    /// started the operation).
    AppliedThenStatus { code: u16 },
}

/// The queue of faults with their remaining uses.
#[derive(Debug, Default)]
pub(crate) struct FaultQueue {
    faults: Vec<Fault>,
}

impl FaultQueue {
    pub(crate) fn push(&mut self, fault: Fault) {
        self.faults.push(fault);
    }

    /// Consumes one use of the first fault matching the request.
    pub(crate) fn take(&mut self, method: &str, target: &str) -> Option<FaultKind> {
        let fault = self.faults.iter_mut().find(|f| f.times > 0 && f.matches(method, target))?;
        fault.times -= 1;
        let kind = fault.kind.clone();
        self.faults.retain(|f| f.times > 0);
        Some(kind)
    }
}

impl Fault {
    fn matches(&self, method: &str, target: &str) -> bool {
        let method_ok = self.method.as_deref().is_none_or(|m| m.eq_ignore_ascii_case(method));
        let path_ok = self.path_contains.as_deref().is_none_or(|p| target.contains(p));
        method_ok && path_ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, times: usize, path: Option<&str>) -> Fault {
        Fault { path_contains: path.map(str::to_string), method: None, kind: FaultKind::Status { code, retry_after_secs: None }, times }
    }

    #[test]
    fn faults_apply_in_insertion_order_and_run_out() {
        let mut queue = FaultQueue::default();
        queue.push(status(503, 1, Some("/sync")));
        queue.push(status(429, 2, None));
        let first = queue.take("POST", "/api/v1/applications/a/sync");
        assert_eq!(first, Some(FaultKind::Status { code: 503, retry_after_secs: None }));
        let second = queue.take("POST", "/api/v1/applications/a/sync");
        assert_eq!(second, Some(FaultKind::Status { code: 429, retry_after_secs: None }));
        assert!(queue.take("GET", "/api/version").is_some());
        assert_eq!(queue.take("GET", "/api/version"), None);
    }

    #[test]
    fn a_fault_for_another_method_does_not_match() {
        let mut queue = FaultQueue::default();
        queue.push(Fault { method: Some("post".into()), ..status(500, 1, None) });
        assert_eq!(queue.take("GET", "/api/v1/applications"), None);
        assert!(queue.take("POST", "/api/v1/applications/a/sync").is_some());
    }
}

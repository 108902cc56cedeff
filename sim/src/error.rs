//! Argo CD's error responses: a gRPC status rendered by grpc-gateway v1.16.
//!
//! Argo CD's handlers return gRPC statuses; the gateway turns each into an HTTP status with the
//! fixed table of `runtime/errors.go` and a body `{"error":msg,"code":n,"message":msg}` (the
//! `details` array is omitted when empty). See docs/argo-cd-behaviour.md §1.9.

use serde_json::{Value, json};

/// The gRPC status codes Argo CD's API answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GrpcCode {
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    Unavailable = 14,
    Unauthenticated = 16,
}

impl GrpcCode {
    /// grpc-gateway v1.16 `HTTPStatusFromCode`. FailedPrecondition is 400 there, not 412.
    pub(crate) fn http_status(self) -> u16 {
        http_status_for_code(self as i64).unwrap_or(500)
    }

    /// The code an injected HTTP status pretends to come from, so a faulted answer still looks
    /// like something grpc-gateway could have produced: 429 is kube-apiserver throttling passed
    /// through (ResourceExhausted) and every 5xx is Unavailable.
    pub(crate) fn for_injected_status(status: u16) -> GrpcCode {
        match status {
            429 => GrpcCode::ResourceExhausted,
            500..=599 => GrpcCode::Unavailable,
            401 => GrpcCode::Unauthenticated,
            403 => GrpcCode::PermissionDenied,
            404 => GrpcCode::NotFound,
            408 => GrpcCode::DeadlineExceeded,
            409 => GrpcCode::Aborted,
            _ => GrpcCode::InvalidArgument,
        }
    }
}

/// The HTTP status grpc-gateway v1.16 gives a numeric gRPC code; `None` for unknown codes.
pub(crate) fn http_status_for_code(code: i64) -> Option<u16> {
    Some(match code {
        0 => 200,
        1 => 408,
        2 | 13 | 15 => 500,
        3 | 9 | 11 => 400,
        4 => 504,
        5 => 404,
        6 | 10 => 409,
        7 => 403,
        8 => 429,
        12 => 501,
        14 => 503,
        16 => 401,
        _ => return None,
    })
}

/// An error answer of the simulated API. Every bad input ends here, never in a panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct ApiError {
    pub(crate) code: GrpcCode,
    pub(crate) message: String,
}

impl ApiError {
    pub(crate) fn new(code: GrpcCode, message: impl Into<String>) -> Self {
        ApiError { code, message: message.into() }
    }

    /// No usable bearer token (server/server.go `ErrNoSession`).
    pub(crate) fn no_session() -> Self {
        Self::new(GrpcCode::Unauthenticated, "no session information")
    }

    /// The generic denial that hides whether an app exists (common/common.go).
    pub(crate) fn permission_denied() -> Self {
        Self::new(GrpcCode::PermissionDenied, "permission denied")
    }

    /// The Kubernetes NotFound for an Application, passed through as gRPC NotFound.
    pub(crate) fn app_not_found(name: &str) -> Self {
        Self::new(GrpcCode::NotFound, format!("applications.argoproj.io \"{name}\" not found"))
    }

    pub(crate) fn http_status(&self) -> u16 {
        self.code.http_status()
    }

    /// The grpc-gateway v1 body.
    pub(crate) fn body(&self) -> Value {
        json!({"error": self.message, "code": self.code as i32, "message": self.message})
    }
}

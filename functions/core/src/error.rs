//! Errors of the core crate.

use thiserror::Error;

/// Why the policy cannot judge its input.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PolicyError {
    /// The Application is partial (for example a field-masked list item); absent fields prove
    /// nothing, so the policy refuses to decide on it.
    #[error("application `{app}` is incomplete: {why}; decide needs the full object as `GET /api/v1/applications/{{name}}` returns it")]
    IncompleteApplication {
        /// The app whose object is partial.
        app: crate::app::AppId,
        /// Which field is missing and what that suggests, from `Application::incompleteness`.
        why: &'static str,
    },
}

/// Why a trigger name is not acceptable.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("invalid trigger `{0}`: use 1-63 characters of a-z, 0-9, `-` and `.`")]
pub struct InvalidTrigger(pub String);

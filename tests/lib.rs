//! Shared helpers for the integration tests live in `support/`; this library is intentionally empty.

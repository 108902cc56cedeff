//! Adapters (being built).

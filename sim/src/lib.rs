//! Argo CD API simulator (being built).

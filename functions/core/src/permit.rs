//! The capability to make a call that changes Argo CD or posts to Slack. The mutating methods of
//! `ArgoApi` (refresh, sync, terminate) and the posting methods of `Escalator` take one, and only
//! the actuator ([`crate::actuator`]) issues one, so no other code in the product compiles a call
//! to them:
//! - outside this crate a permit cannot be made at all (its field is private and `Permit::issue`
//!   is `pub(crate)`); adapters receive it and may forward it (a decorator wrapping a client);
//! - inside it, `tests/layering.rs` holds `Permit::issue` to `actuator.rs`;
//! - tests of an adapter's own calls get one from `Permit::for_tests`, behind the `test-permit`
//!   feature that no product crate enables (`make lint` checks the product crates alone).
//!
//! Its own module at the bottom of the core, so the ports can name it without importing the
//! actuator that uses them.

/// See the module's documentation.
#[derive(Debug)]
pub struct Permit(());

impl Permit {
    /// For the actuator only (held there by `tests/layering.rs`).
    pub(crate) fn issue() -> Permit {
        Permit(())
    }

    /// A permit for the tests of an adapter's own calls (the HTTP client, the Slack escalator):
    /// compiled only with the `test-permit` feature, which no product crate enables.
    #[cfg(any(test, feature = "test-permit"))]
    pub fn for_tests() -> &'static Permit {
        static TESTS: Permit = Permit(());
        &TESTS
    }
}

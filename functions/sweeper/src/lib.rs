//! The sweeper function: on a schedule, one sweep ([`medic_service::sweep`]), the safety net
//! under argocd-notifications. The scheduled event's payload is not needed.

use std::ops::{Deref, DerefMut};

use medic_service::Ports;
pub use medic_service::sweep::{Sweep, SweepRun, SweeperConfig, SweeperError, window};

/// The sweeper's handler over one [`Sweep`].
pub struct Sweeper<P: Ports> {
    pub sweep: Sweep<P>,
}

impl<P: Ports> From<Sweep<P>> for Sweeper<P> {
    fn from(sweep: Sweep<P>) -> Self {
        Self { sweep }
    }
}

/// The handler is its sweep: its collaborators are the sweep's.
impl<P: Ports> Deref for Sweeper<P> {
    type Target = Sweep<P>;
    fn deref(&self) -> &Sweep<P> {
        &self.sweep
    }
}

impl<P: Ports> DerefMut for Sweeper<P> {
    fn deref_mut(&mut self) -> &mut Sweep<P> {
        &mut self.sweep
    }
}

/// The sweeper as the Lambda runs it.
pub type LambdaSweeper = Sweeper<medic_stack::lambda::LambdaPorts>;

impl LambdaSweeper {
    /// Builds the sweeper from the function's settings (what `main` runs; tests build it the same way).
    pub async fn from_env(env: &medic_adapters::lambda_env::LambdaEnv) -> Result<Self, medic_adapters::lambda_env::EnvError> {
        Ok(Sweeper::from(medic_stack::lambda::sweep(env).await?))
    }
}

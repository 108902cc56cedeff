//! The slack-actions function: Slack's interactivity Request URL (a Function URL). What a request
//! means (its method, media type and size, the signature, its freshness and replay, the button,
//! the allow-list, one work item per button) is [`medic_slack::interaction`]'s; the composition
//! root builds it ([`medic_stack::lambda::interactions`]); `main` serves it.

use medic_adapters::memory::SystemClock;
use medic_adapters::telemetry::Metrics;
pub use medic_slack::interaction::{
    ActionsConfig, AllowList, AllowListError, SIGNATURE_HEADER, SecretFormatError, SigningSecret, TIMESTAMP_HEADER, work_item,
};
pub use medic_stack::lambda::ActionsInitError;

/// The function: Slack's interactivity endpoint over a queue `Q`, markers `D`, the buttons'
/// records `S` and a clock `C`, publishing its metrics.
pub type SlackActions<Q, D, S, C = SystemClock> = medic_slack::interaction::Interactions<Q, D, S, C, Metrics>;

/// slack-actions as the Lambda runs it ([`medic_stack::lambda::interactions`]).
pub type LambdaSlackActions = medic_stack::lambda::LambdaInteractions;

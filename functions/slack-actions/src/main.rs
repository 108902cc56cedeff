//! Lambda entry point: wiring only.

use std::sync::Arc;

use lambda_http::{Error, run, service_fn};
use medic_adapters::lambda_env::LambdaEnv;
use medic_slack_actions::LambdaSlackActions;

#[tokio::main]
async fn main() -> Result<(), Error> {
    medic_adapters::logging::init();
    let env = LambdaEnv::load(medic_adapters::settings::Reader::SlackActions).await?;
    let actions = Arc::new(LambdaSlackActions::from_env(&env).await?);
    run(service_fn(move |req| {
        let actions = Arc::clone(&actions);
        async move { Ok::<_, Error>(actions.handle(req).await) }
    }))
    .await
}

//! Lambda entry point: wiring only.

use std::sync::Arc;

use lambda_http::{Body, Error, run, service_fn};
use medic_adapters::lambda_env::LambdaEnv;

#[tokio::main]
async fn main() -> Result<(), Error> {
    medic_adapters::logging::init();
    let env = LambdaEnv::load(medic_adapters::settings::Reader::SlackActions).await?;
    let actions = Arc::new(medic_stack::lambda::interactions(&env).await?);
    run(service_fn(move |req| {
        let actions = Arc::clone(&actions);
        async move { Ok::<_, Error>(actions.handle(req).await.map(Body::from)) }
    }))
    .await
}

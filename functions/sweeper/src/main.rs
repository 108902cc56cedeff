//! Lambda entry point: wiring only. Any JSON is accepted (EventBridge rules and EventBridge
//! Scheduler send different shapes); the report schedule's input asks for the weekly report.

use std::sync::Arc;

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use medic_adapters::lambda_env::LambdaEnv;
use medic_sweeper::LambdaSweeper;

#[tokio::main]
async fn main() -> Result<(), Error> {
    medic_adapters::logging::init();
    let env = LambdaEnv::load(medic_adapters::settings::Reader::Sweeper).await?;
    let sweeper = Arc::new(LambdaSweeper::from_env(&env).await?);
    run(service_fn(move |event: LambdaEvent<serde_json::Value>| {
        let sweeper = Arc::clone(&sweeper);
        async move { sweeper.handle(&event.payload).await.map_err(Error::from) }
    }))
    .await
}

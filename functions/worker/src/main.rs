//! Lambda entry point: wiring only.

use std::sync::Arc;

use aws_lambda_events::event::sqs::SqsEvent;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use medic_adapters::lambda_env::LambdaEnv;
use medic_worker::LambdaWorker;

#[tokio::main]
async fn main() -> Result<(), Error> {
    medic_adapters::logging::init();
    let env = LambdaEnv::load(medic_adapters::settings::Reader::Worker).await?;
    let worker = Arc::new(LambdaWorker::from_env(&env).await?);
    run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let worker = Arc::clone(&worker);
        async move { worker.handle_batch(event.payload).await.map_err(Error::from) }
    }))
    .await
}

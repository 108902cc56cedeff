//! Lambda entry point: wiring only.

use std::sync::Arc;

use lambda_http::{Error, run, service_fn};
use medic_adapters::lambda_env::LambdaEnv;
use medic_ingest::LambdaIngest;

#[tokio::main]
async fn main() -> Result<(), Error> {
    medic_adapters::logging::init();
    let env = LambdaEnv::load(medic_adapters::settings::Reader::Ingest).await?;
    let ingest = Arc::new(LambdaIngest::from_env(&env).await?);
    run(service_fn(move |req| {
        let ingest = Arc::clone(&ingest);
        async move { Ok::<_, Error>(ingest.handle(req).await) }
    }))
    .await
}

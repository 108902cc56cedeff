//! The envelope's yardstick (`medic-chaos envelope`): the smallest `lambda_runtime` function, built
//! with the same release profile as the functions. It answers every event with a constant.

use lambda_http::lambda_runtime::{self, Error, LambdaEvent, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::run(service_fn(|_: LambdaEvent<serde_json::Value>| async { Ok::<_, Error>(serde_json::json!({"hello": "world"})) }))
        .await
}

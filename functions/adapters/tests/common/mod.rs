//! Test helpers: this test binary's moto_server (from `medic_sim::moto`) and SDK clients for it.

#![allow(dead_code)] // each test binary uses part of this module

pub use medic_sim::moto::{moto, unique};

use medic_adapters::aws::sdk_config;

pub async fn dynamodb() -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::new(&sdk_config(Some(&moto().url)).await)
}

pub async fn sqs() -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::new(&sdk_config(Some(&moto().url)).await)
}

//! A function process other than the worker: ingest, slack-actions or the sweeper, built exactly
//! as its Lambda `main` builds it (`from_env`), fed one call per stdin line by the harness and
//! answering each on stdout, so the harness can SIGKILL it in the middle of a call as Lambda
//! stops an instance. One call at a time, as a Lambda instance takes them.

use medic_adapters::lambda_env::LambdaEnv;
use medic_adapters::settings::Reader;
use medic_adapters::telemetry::Metrics;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::worker::READY;

/// Which function a process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum, Serialize, Deserialize)]
pub enum Kind {
    Ingest,
    SlackActions,
    Sweeper,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Ingest => "ingest",
            Kind::SlackActions => "slack-actions",
            Kind::Sweeper => "sweeper",
        }
    }
}

/// One call: an HTTP request for ingest and slack-actions (as a Function URL hands it over), or
/// a scheduled sweep.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Call {
    Http { method: String, uri: String, headers: Vec<(String, String)>, body: String },
    Sweep,
}

/// The answer: the HTTP status and body; a sweep answers 200, or 500 with its error.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answer {
    pub status: u16,
    pub body: String,
}

fn request(method: &str, uri: &str, headers: &[(String, String)], body: String) -> anyhow::Result<lambda_http::Request> {
    let mut builder = lambda_http::http::Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        builder = builder.header(k, v);
    }
    Ok(builder.body(lambda_http::Body::from(body))?)
}

fn answer(response: lambda_http::Response<lambda_http::Body>) -> Answer {
    Answer { status: response.status().as_u16(), body: String::from_utf8_lossy(response.body().as_ref()).into_owned() }
}

pub async fn run(kind: Kind) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("MEDIC_CHAOS_LOG").unwrap_or_else(|_| "error".into()))
        .init();
    let reader = match kind {
        Kind::Ingest => Reader::Ingest,
        Kind::SlackActions => Reader::SlackActions,
        Kind::Sweeper => Reader::Sweeper,
    };
    let env = LambdaEnv::load(reader).await?;
    // EMF lines go to stdout on Lambda; here stdout is the call channel.
    let quiet = || Metrics::quiet(&env.instance_id);
    enum Built {
        Ingest(Box<medic_ingest::LambdaIngest>),
        Actions(Box<medic_slack_actions::LambdaSlackActions>),
        Sweeper(Box<medic_sweeper::LambdaSweeper>),
    }
    let built = match kind {
        Kind::Ingest => {
            let built = medic_ingest::LambdaIngest::from_env(&env).await?;
            Built::Ingest(Box::new(built.map_intake(|intake| intake.with_metrics(quiet()))))
        }
        Kind::SlackActions => Built::Actions(Box::new(medic_slack_actions::SlackActions {
            metrics: quiet(),
            ..medic_stack::lambda::interactions(&env).await?
        })),
        Kind::Sweeper => {
            let (adapters, config) = medic_stack::lambda::sweeper_parts(&env).await?;
            Built::Sweeper(Box::new(medic_sweeper::Sweeper::from(adapters.with_metrics(quiet()).sweep(config))))
        }
    };
    let mut out = tokio::io::stdout();
    out.write_all(format!("{READY}\n").as_bytes()).await?;
    out.flush().await?;
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines.next_line().await? {
        let call: Call = serde_json::from_str(&line)?;
        let answered = match (call, &built) {
            (Call::Http { method, uri, headers, body }, Built::Ingest(f)) => {
                answer(f.handle(request(&method, &uri, &headers, body)?).await)
            }
            (Call::Http { method, uri, headers, body }, Built::Actions(f)) => {
                answer(f.handle(request(&method, &uri, &headers, body)?).await.map(lambda_http::Body::from))
            }
            (Call::Sweep, Built::Sweeper(f)) => match f.run().await {
                // The run's counts: what the harness prints of the outage's turns when an outage
                // app is left in trouble.
                Ok(run) => Answer { status: 200, body: serde_json::to_string(&run).unwrap_or_default() },
                Err(e) => Answer { status: 500, body: e.to_string() },
            },
            (call, _) => anyhow::bail!("a {} process cannot take {call:?}", kind.as_str()),
        };
        out.write_all(format!("{}\n", serde_json::to_string(&answered)?).as_bytes()).await?;
        out.flush().await?;
    }
    Ok(())
}

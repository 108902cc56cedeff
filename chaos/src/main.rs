//! `medic-chaos`: Argo Medic's pipeline under the faults production has, and an account of what
//! went wrong. Worker processes run the real Lambda worker (`LambdaWorker::from_env`) behind an
//! event source that behaves like Lambda's (batches, delete only after the handler returns, partial
//! batch failures honoured, SIGKILL at the function timeout) and are SIGKILLed at named boundaries
//! and at random moments, against moto (SQS, DynamoDB), the Argo CD simulator and the Slack
//! simulator with injected faults. Ingest, slack-actions and the sweeper run their real handlers in
//! processes of their own, fed one call at a time, and are SIGKILLed in the middle of calls too.
//!
//! Every production timing is divided by one factor, `--scale`: the worker timeout, the queue's
//! visibility timeout, every lease derived from them, the policy's waits, the sweeper's window and
//! Slack's pacing. The last line is
//! `chaos: E events, K kills, F faults, D duplicate actions, L lost incidents, S stuck incidents,
//! W closed in trouble, R extra refreshes; U lost actions (in L), apps escalated again; the switch;
//! T timeline gaps` and the exit status is non-zero unless D = L = S = W = R = T = 0 (and the
//! switch's count, when the run switches off).

mod envelope;
mod failpoints;
mod function;
mod proxy;
mod run;
mod storm;
mod storm_aws;
mod worker;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "medic-chaos", about = "Argo Medic under real faults, with an account of duplicate, lost and stuck incidents")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the harness.
    Run(run::Options),
    /// A worker process (started by the harness).
    Worker,
    /// An ingest, slack-actions or sweeper process (started by the harness).
    Function {
        #[arg(value_enum)]
        kind: function::Kind,
    },
    /// The storm benchmark: the morning after an outage through the real handlers, in one
    /// process, beside the cron script's approach (`make storm`).
    Storm(storm::Options),
    /// The Lambda envelope: cold start, warm invocation, peak RSS and size of the release
    /// bootstraps under a Runtime API stub, beside a hello world (`make envelope`).
    Envelope(envelope::Options),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().thread_stack_size(8 << 20).build()?;
    match cli.command {
        Command::Worker => runtime.block_on(worker::run()),
        Command::Function { kind } => runtime.block_on(function::run(kind)),
        Command::Storm(options) => {
            let ok = match options.moto {
                true => runtime.block_on(storm_aws::run(options))?,
                false => runtime.block_on(storm::run(options))?,
            };
            std::process::exit(if ok { 0 } else { 1 });
        }
        Command::Envelope(options) => runtime.block_on(envelope::run(options)),
        Command::Run(options) => {
            let ok = runtime.block_on(run::run(options))?;
            std::process::exit(if ok { 0 } else { 1 });
        }
    }
}

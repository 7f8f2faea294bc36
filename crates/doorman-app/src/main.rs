//! `doorman`: the service and its operator commands.

use clap::Parser;
use doorman_app::{cli, telemetry};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let parsed = cli::Cli::parse();
    telemetry::init(parsed.log_format);
    // Boxed: the command futures are large (each holds its connections' TLS state).
    match Box::pin(cli::run(parsed.command)).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) if error.is::<cli::Unsuccessful>() => {
            // The command has printed its answer; the exit status carries the rest.
            eprintln!("{error}");
            std::process::ExitCode::FAILURE
        }
        Err(error) => {
            // `{:#}` prints the context chain on one line; none of it carries a secret.
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

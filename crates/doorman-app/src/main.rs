//! `doorman`: the service and its operator commands.

use clap::Parser;
use doorman_app::{cli, commands, telemetry};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = cli::Cli::parse();
    telemetry::init(cli.log_format);
    // Boxed: the command futures are large (each holds its connections' TLS state).
    match Box::pin(commands::run(cli.command)).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) if error.is::<commands::Unsuccessful>() => {
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

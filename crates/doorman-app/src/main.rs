//! `doorman`: the service and its operator commands.

mod cli;
mod commands;
mod telemetry;

use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = cli::Cli::parse();
    telemetry::init(cli.log_format);
    match commands::run(cli.command).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            // `{:#}` prints the context chain on one line; none of it carries a secret.
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

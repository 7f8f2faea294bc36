//! One module per subcommand.

mod migrate;

use crate::cli::Command;

pub async fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Migrate(db) => migrate::run(&db).await,
    }
}

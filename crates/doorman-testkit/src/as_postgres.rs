//! Running PostgreSQL's own tools (and PgBouncer), which refuse to run as root: as the
//! `postgres` OS user (created by the PostgreSQL package) when the tests run as root, as
//! whoever runs them otherwise.

use std::path::Path;
use std::process::Command;

/// `program`, to be run as the `postgres` user when the tests run as root.
pub(crate) fn command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    if is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

/// Makes `dir` (and what it holds) the `postgres` user's when the tests run as root.
pub(crate) fn hand_over(dir: &Path) {
    if is_root() {
        let status = Command::new("chown").args(["-R", "postgres:postgres"]).arg(dir).status();
        assert!(status.is_ok_and(|s| s.success()), "chown {} to postgres", dir.display());
    }
}

/// Readable by its owner alone (PostgreSQL refuses a private key others can read), if it is
/// there.
pub(crate) fn private_key(file: &Path) {
    if file.exists() {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600)).expect("chmod 600 a key");
    }
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

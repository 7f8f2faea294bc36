//! A PostgreSQL primary and a streaming standby of a test's own, for failover tests.
//!
//! Built with the server's own tools, as an operator would: `initdb` for the primary,
//! `pg_basebackup -R` for the standby, each on a free loopback port, in a temporary directory.
//! The tools refuse to run as root, so when the tests do they run as the `postgres` OS user
//! (`runuser`), which the PostgreSQL package creates. The binaries are found in `PG_BIN`, or
//! else in the newest `/usr/lib/postgresql/*/bin`. Both servers are stopped, and the directory
//! removed, when the [`Cluster`] is dropped.

use std::path::PathBuf;
use std::process::Command;

use crate::as_postgres;
use crate::server::{
    append, path, pg_bin, psql, run_as_postgres, start_on_a_free_port, stop_immediately, wait_for,
};

/// How the standby confirms commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replication {
    /// `synchronous_standby_names = '*'`: a commit returns once the standby has it.
    Synchronous,
    /// A commit returns once the primary has it; the standby follows a moment later.
    Asynchronous,
}

/// The database the cluster's tests use.
pub const DATABASE: &str = "doorman";

/// One server of the cluster.
#[derive(Debug)]
struct Node {
    port: u16,
    data: PathBuf,
}

/// A primary and its standby, running.
#[derive(Debug)]
pub struct Cluster {
    root: PathBuf,
    bin: PathBuf,
    primary: Node,
    standby: Node,
    /// The primary's WAL sender, while [held back](Cluster::hold_back_wal).
    held_sender: std::sync::Mutex<Option<String>>,
}

impl Cluster {
    /// Starts a primary with a `doorman` database and a standby streaming from it, and waits
    /// until the standby is streaming (and, when synchronous, confirming commits).
    pub fn start(replication: Replication) -> Self {
        let bin = pg_bin();
        let root = std::env::temp_dir().join(format!("doorman-cluster-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&root).expect("create the cluster's directory");
        as_postgres::hand_over(&root);
        // Each node's port is chosen when it starts (`start_on_a_free_port`).
        let mut cluster = Self {
            primary: Node { port: 0, data: root.join("primary") },
            standby: Node { port: 0, data: root.join("standby") },
            root,
            bin,
            held_sender: std::sync::Mutex::default(),
        };

        crate::server::initdb(&cluster.bin, &cluster.primary.data);
        let standby_names = match replication {
            Replication::Synchronous => "*",
            Replication::Asynchronous => "",
        };
        append(
            &cluster.primary.data.join("postgresql.conf"),
            &format!(
                "listen_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
                 wal_level = replica\nmax_wal_senders = 4\nmax_connections = 80\nshared_buffers = 32MB\n\
                 synchronous_standby_names = '{standby_names}'\nsynchronous_commit = on\n\
                 # A test machine, not a durable one: a server crash (not the OS) loses nothing.\n\
                 fsync = off\nlog_min_messages = warning\n",
                cluster.root.display(),
            ),
        );
        cluster.primary.port = start_on_a_free_port(&cluster.bin, &cluster.primary.data);

        let port = cluster.primary.port.to_string();
        run_as_postgres(
            &cluster.bin,
            "pg_basebackup",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "postgres",
                "-D",
                path(&cluster.standby.data),
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
                "--no-sync",
            ],
        );
        // Promoted, it has no standby of its own: it must not wait for one to confirm commits
        // (a failover manager turns synchronous replication off the same way).
        append(
            &cluster.standby.data.join("postgresql.conf"),
            // And it notices a lost primary (and a promotion) within 200 ms, not the default 5 s.
            "synchronous_standby_names = ''\nwal_retrieve_retry_interval = 200ms\n",
        );
        cluster.standby.port = start_on_a_free_port(&cluster.bin, &cluster.standby.data);

        let wanted = match replication {
            Replication::Synchronous => "sync",
            Replication::Asynchronous => "async",
        };
        wait_for("the standby to stream", || {
            cluster
                .primary_sql("SELECT sync_state FROM pg_stat_replication WHERE state = 'streaming'")
                .as_deref()
                == Some(wanted)
        });
        cluster.primary_sql(&format!("CREATE DATABASE {DATABASE}"));
        cluster
    }

    /// Migrates the `doorman` database and creates the tests' login roles, on the primary.
    pub async fn migrate(&self) {
        let owner = self.primary_url("postgres");
        doorman_adapters::postgres::migrations::run_pending(&owner).await.expect("migrate the cluster");
        let mut admin = <diesel_async::AsyncPgConnection as diesel_async::AsyncConnection>::establish(&owner)
            .await
            .expect("connect to the primary");
        crate::database::create_login_roles(&mut admin).await;
    }

    /// A URL naming both servers, the way libpq does, that connects only to the one accepting
    /// writes: what Doorman is given.
    pub fn url(&self, user: &str) -> String {
        format!(
            "postgres://{user}@127.0.0.1:{},127.0.0.1:{}/{DATABASE}?target_session_attrs=read-write",
            self.primary.port, self.standby.port
        )
    }

    /// A URL for the standby alone (the new primary once promoted).
    pub fn standby_url(&self, user: &str) -> String {
        format!("postgres://{user}@127.0.0.1:{}/{DATABASE}", self.standby.port)
    }

    /// A URL for the primary alone.
    pub fn primary_url(&self, user: &str) -> String {
        format!("postgres://{user}@127.0.0.1:{}/{DATABASE}", self.primary.port)
    }

    /// Runs `sql` on the primary (as `postgres`, in the `postgres` database); its output.
    pub fn primary_sql(&self, sql: &str) -> Option<String> {
        psql(&self.bin, self.primary.port, "postgres", sql)
    }

    /// Runs `sql` on the standby; its output.
    pub fn standby_sql(&self, database: &str, sql: &str) -> Option<String> {
        psql(&self.bin, self.standby.port, database, sql)
    }

    /// How many sessions on the primary wait for the standby to confirm their commit.
    pub fn commits_waiting_for_standby(&self) -> usize {
        self.primary_sql("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }

    /// Stops the standby's WAL receiver (`SIGSTOP`): what the primary sends waits, unread, in
    /// its socket, and a synchronous primary's commits wait for it. Resumed by
    /// [`Cluster::resume_standby`].
    pub fn pause_standby(&self) {
        self.signal_wal_receiver("STOP");
    }

    pub fn resume_standby(&self) {
        self.signal_wal_receiver("CONT");
    }

    /// Stops the primary's WAL sender (`SIGSTOP`): from now on WAL is not sent, so an
    /// asynchronous standby falls behind by every commit made meanwhile. It dies with the
    /// primary ([`Cluster::stop_primary_immediately`]) without sending any of it.
    pub fn hold_back_wal(&self) {
        let pid = self
            .primary_sql("SELECT pid FROM pg_stat_replication")
            .filter(|pid| !pid.is_empty())
            .expect("the primary's WAL sender");
        signal(&pid, "STOP");
        *self.held_sender.lock().unwrap() = Some(pid);
    }

    /// `pg_ctl stop -m immediate`: the primary dies at once, as in a crash. Its clients'
    /// connections close; commits in flight may or may not have reached the standby.
    pub fn stop_primary_immediately(&self) {
        let data = path(&self.primary.data);
        run_as_postgres(&self.bin, "pg_ctl", &["-D", data, "-m", "immediate", "--no-wait", "stop"]);
        if let Some(sender) = self.held_sender.lock().unwrap().take() {
            // Woken, it finds its order to quit before anything else: it sends nothing more.
            signal(&sender, "CONT");
        }
        wait_for("the primary to stop", || !self.primary.data.join("postmaster.pid").exists());
    }

    /// `pg_ctl promote`, waiting until the standby accepts writes.
    pub fn promote_standby(&self) {
        run_as_postgres(&self.bin, "pg_ctl", &["-D", path(&self.standby.data), "-w", "-t", "30", "promote"]);
        wait_for("the standby to accept writes", || {
            psql(&self.bin, self.standby.port, "postgres", "SELECT pg_is_in_recovery()").as_deref()
                == Some("f")
        });
    }

    fn signal_wal_receiver(&self, name: &str) {
        let pid = self
            .standby_sql("postgres", "SELECT pid FROM pg_stat_wal_receiver")
            .filter(|pid| !pid.is_empty())
            .expect("the standby's WAL receiver");
        signal(&pid, name);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for node in [&self.primary, &self.standby] {
            stop_immediately(&node.data);
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn signal(pid: &str, name: &str) {
    let status = Command::new("kill").args([&format!("-{name}"), pid]).status();
    assert!(status.is_ok_and(|s| s.success()), "kill -{name} {pid}");
}

//! A `doorman serve` (or `doorman admin serve`) child process on a random loopback port, for
//! tests of the binary itself (several processes, signals, what it logs) and for the load
//! generator.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `doorman serve`; killed when dropped.
#[derive(Debug)]
pub struct ServeProcess {
    child: Child,
    base: String,
    metrics: Option<String>,
    logs: Arc<Mutex<Vec<u8>>>,
}

impl ServeProcess {
    /// Starts `binary serve --bind 127.0.0.1:0 ARGS` with `env` (on top of this process's own
    /// environment) and waits for the line that says where it listens. Everything it writes
    /// to stderr (its logs) is kept for [`ServeProcess::logs`], and echoed when `TEST_LOG` is
    /// set.
    pub fn spawn(binary: &Path, env: &[(&str, &str)], args: &[&str]) -> std::io::Result<Self> {
        Self::start(binary, &["serve"], "doorman listening on ", env, args)
    }

    /// The same for `binary admin serve` (the admin API).
    pub fn spawn_admin(binary: &Path, env: &[(&str, &str)], args: &[&str]) -> std::io::Result<Self> {
        Self::start(binary, &["admin", "serve"], "doorman admin API listening on ", env, args)
    }

    fn start(
        binary: &Path,
        command: &[&str],
        banner: &str,
        env: &[(&str, &str)],
        args: &[&str],
    ) -> std::io::Result<Self> {
        let mut child = Command::new(binary)
            .args(command)
            .args(["--bind", "127.0.0.1:0"])
            .args(args)
            // A release before metrics had an address of their own ignores these.
            .env("DOORMAN_METRICS_BIND", "127.0.0.1:0")
            .env("DOORMAN_ADMIN_METRICS_BIND", "127.0.0.1:0")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let logs = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().expect("stderr is piped");
        let sink = logs.clone();
        std::thread::spawn(move || collect(stderr, &sink));

        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout is piped")).read_line(&mut line)?;
        let Some(said) = line.trim().strip_prefix(banner) else {
            let _ = child.kill();
            let _ = child.wait();
            let logs = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
            return Err(std::io::Error::other(format!("doorman serve did not start: {line:?}\n{logs}")));
        };
        // `http://… (metrics on http://…/metrics)`; an earlier release says the first part only.
        let (base, metrics) = match said.split_once(" (metrics on ") {
            Some((base, rest)) => {
                (base, Some(rest.trim_end_matches(')').trim_end_matches("/metrics").to_owned()))
            }
            None => (said, None),
        };
        Ok(Self { base: base.to_owned(), metrics, child, logs })
    }

    /// `http://127.0.0.1:PORT`
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Where its `/metrics` answers: `http://127.0.0.1:PORT` of its metrics listener (an
    /// earlier release, which served them on its one listener: [`ServeProcess::base`]).
    pub fn metrics_base(&self) -> &str {
        self.metrics.as_deref().unwrap_or(&self.base)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a signal by name (`TERM`, `KILL`, …).
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill").args([&format!("-{name}"), &self.child.id().to_string()]).status();
        assert!(status.is_ok_and(|s| s.success()), "kill -{name} failed");
    }

    /// The exit status, or `None` if it is still running after `timeout`.
    pub async fn wait_for_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().ok().flatten() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// SIGTERM, then wait for the drain (killed after `timeout`).
    pub async fn stop(mut self, timeout: Duration) -> Option<ExitStatus> {
        self.signal("TERM");
        let status = self.wait_for_exit(timeout).await;
        if status.is_none() {
            let _ = self.child.kill();
        }
        status
    }

    /// Everything the process has logged so far.
    pub fn logs(&self) -> String {
        String::from_utf8_lossy(&self.logs.lock().unwrap()).into_owned()
    }

    /// Peak resident set size so far (`VmHWM`), in KiB.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn collect(mut from: impl Read, into: &Mutex<Vec<u8>>) {
    let echo = std::env::var_os("TEST_LOG").is_some();
    let mut buffer = [0u8; 8192];
    while let Ok(n) = from.read(&mut buffer) {
        if n == 0 {
            return;
        }
        into.lock().unwrap().extend_from_slice(&buffer[..n]);
        if echo {
            let _ = std::io::stderr().write_all(&buffer[..n]);
        }
    }
}

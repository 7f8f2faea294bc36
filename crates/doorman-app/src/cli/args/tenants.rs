//! The operator commands about tenants and what is set up for them: tenants, their workspace
//! links, their agents, and the Slack app's installs.

use clap::{Args, Subcommand, ValueEnum};
use doorman_domain::usecases::operator::installs::LinkLifetime;

use super::{DatabaseArgs, DestinationArgs, KeysArgs, Secret, SlackAppArgs};

#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Create a tenant; prints its id alone on stdout.
    Add {
        #[arg(long)]
        name: String,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// List tenants, oldest first.
    List {
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Keep (on) or stop keeping (off) the payloads of the tenant's claimed events until they
    /// are handled, so `receipts replay` can send them again. Off by default. Payloads are
    /// sealed like other secrets and deleted when handled or pruned.
    RetainPayloads {
        #[arg(long)]
        tenant: String,
        setting: OnOff,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Send the tenant's events that were not handled (failed or stranded) again on a schedule
    /// (on), or stop (off). Off by default. While on, their payloads are kept (sealed) from the
    /// claim until they are handled or the schedule is spent.
    Redelivery {
        #[arg(long)]
        tenant: String,
        setting: OnOff,
        /// Only with on: the delays before each redelivery, `5s,5m,30m,2h` (s, m or h; 1 to 20
        /// of them, each at most 24h), or `standard` (5s,5m,30m,2h,5h,10h,10h), the default.
        #[arg(long)]
        schedule: Option<String>,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Let the tenant's read-only portal keys made with `--read-payloads` read its kept payloads
    /// (on), or stop them (off). Off by default. Other keys' permission is their own.
    ReadOnlyPortalsReadPayloads {
        #[arg(long)]
        tenant: String,
        setting: OnOff,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Rename a tenant.
    Rename {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        name: String,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Offboard a customer: delete the tenant, its workspace links (its next event is answered
    /// as an unknown workspace's), installations and tokens, agent, kept payloads, scoped keys
    /// and receipts. The audit trail keeps its entries. Asks for --yes.
    Delete {
        #[arg(long)]
        tenant: String,
        /// Delete without asking: there is no undo.
        #[arg(long)]
        yes: bool,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// Link a Slack team (optionally inside an enterprise), or with only --enterprise-id an
    /// org-wide install, to a tenant.
    Link {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        team_id: Option<String>,
        #[arg(long)]
        enterprise_id: Option<String>,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// List a tenant's workspace links.
    List {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Remove a tenant's link (and the app's installation there, if any): a team by its id, an
    /// org-wide install by its enterprise id.
    Unlink {
        #[arg(long)]
        tenant: String,
        /// A team id, or an org-wide install's enterprise id.
        #[arg(long)]
        id: String,
        #[command(flatten)]
        db: DatabaseArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Set a tenant's agent URL and dispatch signing secret (`whsec_` + base64).
    Set {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        url: String,
        /// Prefer the environment variable: a flag is visible in the process list.
        #[arg(long, env = "DOORMAN_AGENT_SECRET", hide_env_values = true)]
        secret: Secret,
        #[command(flatten)]
        keys: KeysArgs,
        #[command(flatten)]
        destinations: DestinationArgs,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Show a tenant's agent (never its secret).
    Show {
        #[command(flatten)]
        target: TenantTarget,
        #[arg(long)]
        json: bool,
    },
    /// Pause a tenant's agent: deliveries are answered 503 and Slack retries them later.
    Pause(TenantTarget),
    /// Resume a paused agent.
    Resume(TenantTarget),
    /// Remove a tenant's agent (and its secret): deliveries are answered 503 (no agent) until
    /// one is set again.
    Remove(TenantTarget),
}

/// A command that acts on one tenant and nothing else.
#[derive(Debug, Clone, Args)]
pub struct TenantTarget {
    #[arg(long)]
    pub tenant: String,
    #[command(flatten)]
    pub db: DatabaseArgs,
}

#[derive(Debug, Subcommand)]
pub enum SlackCommand {
    /// Print an install link for a tenant's customer: `{DOORMAN_PUBLIC_URL}/slack/install/…`,
    /// usable for several installs until it expires.
    InstallLink {
        #[arg(long)]
        tenant: String,
        #[arg(long, default_value_t = LinkLifetime::DEFAULT.into())]
        expires_in: humantime::Duration,
        #[command(flatten)]
        slack_app: SlackAppArgs,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// List installations (never their tokens).
    Installations {
        #[arg(long)]
        tenant: Option<String>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Remove a tenant's installation of a workspace and the workspace's link.
    Uninstall {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        team_id: Option<String>,
        /// With no --team-id: an org-wide install.
        #[arg(long)]
        enterprise_id: Option<String>,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Delete every tenant's expired or consumed install states, in bounded batches.
    PruneStates {
        #[arg(long, default_value_t = 1000)]
        batch: u32,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
}

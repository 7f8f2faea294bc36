//! What each command takes: every setting is a flag with an environment variable behind it (the
//! README lists them with their defaults), one module per concern.

mod admin;
mod receipts;
mod serve;
mod storage;
mod tenants;

pub use self::admin::{AdminCommand, AdminServeArgs, ApiKeysCommand};
pub use self::receipts::{ReceiptsCommand, ReplayArgs};
pub use self::serve::{
    DestinationArgs, DispatchArgs, OperationalWebhookArgs, RedeliveryArgs, ServeArgs, SlackAppArgs,
};
pub use self::storage::{CitusWritesArg, DatabaseArgs, DbPoolMode, KeysArgs, Secret, SecretsCommand};
pub use self::tenants::{AgentCommand, OnOff, SlackCommand, TenantCommand, TenantTarget, WorkspaceCommand};

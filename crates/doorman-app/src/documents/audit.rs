//! The audit trail's entries.

use chrono::{DateTime, Utc};
use doorman_domain::AuditRecord;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::words;

super::page_of!(
    /// A page of audit entries, newest first.
    AuditPage,
    AuditDoc
);

/// One audit entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AuditDoc {
    pub id: i64,
    pub at: DateTime<Utc>,
    #[schema(value_type = words::ActorKind)]
    pub actor_kind: String,
    /// The key's id, or the OS user who ran the command.
    pub actor_id: String,
    /// The key's name, or `cli`.
    pub actor_name: String,
    #[schema(value_type = words::AuditAction)]
    pub action: String,
    pub tenant_id: Option<Uuid>,
    pub target: Option<String>,
    pub request_id: String,
}

impl From<AuditRecord> for AuditDoc {
    fn from(r: AuditRecord) -> Self {
        Self {
            id: r.id,
            at: r.at,
            actor_kind: r.actor_kind,
            actor_id: r.actor_id,
            actor_name: r.actor_name,
            action: r.action,
            tenant_id: r.tenant.map(|t| *t.as_uuid()),
            target: r.target,
            request_id: r.request_id,
        }
    }
}

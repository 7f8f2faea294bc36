//! Maintenance runs (re-sealing secrets, pruning receipts and install states): long, in
//! batches of their own so they can be stopped and run again, and so not one transaction
//! with their audit entry. The rule instead: a run is recorded before it changes anything,
//! and its result (what it did, or why it stopped) after. A run stopped halfway, even by a
//! killed process, is never unaudited: its first entry says it began.

use std::future::Future;

use super::Operator;
use crate::errors::{OperatorError, StorageError};
use crate::model::{AuditAction, AuditEntry, Caller, TenantId};
use crate::ports::{AuditTrail, OperatorPorts};

impl<P: OperatorPorts> Operator<P> {
    /// Runs `run` (one maintenance job over every tenant) between its two audit entries;
    /// `done` says what it did, for the second. Only for a caller that may change every tenant.
    pub async fn maintain<T: Send>(
        &self,
        caller: &Caller,
        action: AuditAction,
        run: impl Future<Output = Result<T, StorageError>> + Send,
        done: impl FnOnce(&T) -> String + Send,
    ) -> Result<T, OperatorError> {
        if !caller.actor.may_write() || caller.actor.only_tenant().is_some() {
            return Err(OperatorError::Forbidden("maintenance acts on every tenant"));
        }
        self.recorded_run(caller, action, None, run, done).await
    }

    /// Runs `run` between its two audit entries (under `tenant`, if the run is one tenant's):
    /// `started` before it changes anything (a run whose start cannot be recorded does not
    /// run), then what `done` says it did, or why it stopped. The caller's permission is the
    /// caller's to check.
    pub(super) async fn recorded_run<T: Send>(
        &self,
        caller: &Caller,
        action: AuditAction,
        tenant: Option<TenantId>,
        run: impl Future<Output = Result<T, StorageError>> + Send,
        done: impl FnOnce(&T) -> String + Send,
    ) -> Result<T, OperatorError> {
        let audit = self.ports.audit();
        audit.record(&AuditEntry::new(caller, action, tenant, Some("started".into()))).await?;
        match run.await {
            Ok(value) => {
                audit.record(&AuditEntry::new(caller, action, tenant, Some(done(&value)))).await?;
                Ok(value)
            }
            Err(error) => {
                let stopped = AuditEntry::new(caller, action, tenant, Some(format!("stopped: {error}")));
                if let Err(unrecorded) = audit.record(&stopped).await {
                    tracing::warn!(error = %unrecorded, "could not record that a maintenance run stopped; its start is recorded");
                }
                Err(error.into())
            }
        }
    }
}

//! The documents only the admin API answers with; those the command line and the console
//! show too are `crate::documents`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::documents::{InstallationDoc, KeyDoc, ReplayJobDoc, list_of, page_of};

page_of!(
    /// A page of replay jobs, newest first.
    ReplayJobPage,
    ReplayJobDoc
);
list_of!(
    /// Installations, oldest first.
    InstallationList,
    InstallationDoc
);
list_of!(
    /// Admin API keys, oldest first.
    KeyList,
    KeyDoc
);

/// Whether a tenant keeps payloads for replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RetainPayloadsDoc {
    pub enabled: bool,
}

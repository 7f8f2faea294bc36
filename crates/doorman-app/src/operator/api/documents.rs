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

/// Whether a tenant lets its read-only portal keys made with `read_payloads` read its kept
/// payloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadOnlyPortalsReadPayloadsDoc {
    pub enabled: bool,
}

/// Whether a tenant's events that were not handled are sent again, and on which schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RedeliverySettingDoc {
    pub enabled: bool,
    /// The delays before each redelivery, comma-separated, each a whole number followed by `s`,
    /// `m` or `h` (1 to 20 of them, each at most 24h), or `standard`
    /// (`5s,5m,30m,2h,5h,10h,10h`, the default when `enabled` is true and this is left out).
    /// With `enabled` false it is checked, not kept. (The pattern is what the server accepts,
    /// each delay at most 24 h; it also takes spaces around the commas.) Answered in the same words, `standard`
    /// spelled out; null when off.
    #[serde(default)]
    #[schema(
        example = "5s,5m,30m",
        pattern = r"^(standard|(([0-9]{1,4}|[0-7][0-9]{4}|8[0-5][0-9]{3}|86[0-3][0-9]{2}|86400)s|([0-9]{1,3}|1[0-3][0-9]{2}|14[0-3][0-9]|1440)m|(0?[0-9]|1[0-9]|2[0-4])h)(,(([0-9]{1,4}|[0-7][0-9]{4}|8[0-5][0-9]{3}|86[0-3][0-9]{2}|86400)s|([0-9]{1,3}|1[0-3][0-9]{2}|14[0-3][0-9]|1440)m|(0?[0-9]|1[0-9]|2[0-4])h)){0,19})$"
    )]
    pub schedule: Option<String>,
}

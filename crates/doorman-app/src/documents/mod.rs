//! The documents the operator's faces share: the admin API's JSON bodies and the command
//! line's `--json` output are the same types, so a script can move from one face to the other,
//! and the console's pages show them. Their schemas are generated from these types into the
//! OpenAPI document (`docs/admin-api.json`). One module per subject; a document only one face
//! answers with lives with that face (the admin API's in its `documents` module, the command
//! line's `tenant list` beside that command).
//!
//! Never a secret: an agent's URL is shown whole but without credentials, its secret only as
//! `signing_secret_set`, installations without tokens, keys without their secret, the request
//! sent to an agent without its signature, and a kept payload only to a key allowed to read it,
//! without Slack's verification token.

mod activity;
mod audit;
mod events;
mod keys;
mod tenants;
pub mod words;

pub use self::activity::{
    ActivityDoc, ActivityHourDoc, FailingTenantDoc, OverviewDoc, StrandedTenantDoc, TroubledAgentDoc,
};
pub use self::audit::{AuditDoc, AuditPage};
pub use self::events::{
    ActorDoc, AttemptDoc, EventDetailDoc, EventDoc, EventMatchDoc, EventMatchList, EventPage, FailureDoc,
    HeaderDoc, JobEventDoc, ReplayJobDoc, ReplayReport, ReplayedDoc, RequestDoc, indented,
};
pub use self::keys::{KeyDoc, NewKeyDoc, SignInLinkDoc, sign_in_link_lifetime};
pub use self::tenants::{
    AgentDoc, InstallLinkDoc, InstallationDoc, OffboardedDoc, RedeliveryDoc, TenantDoc, TenantPage,
    WorkspaceDoc, WorkspaceList,
};

/// A page of a listing, one named type per item type: generated clients get `TenantPage`
/// whose `items` are `TenantDoc`s (a `$ref`), not an anonymous copy of the item's schema.
macro_rules! page_of {
    ($(#[$doc:meta])* $page:ident, $item:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, ::serde::Serialize, ::serde::Deserialize, ::utoipa::ToSchema)]
        pub struct $page {
            pub items: Vec<$item>,
            /// Pass it as `cursor` for the next page; `null` on the last.
            pub next_cursor: Option<String>,
        }

        impl $page {
            /// The documents of a use case's page, and its next cursor as opaque text.
            pub fn of<D, C: doorman_domain::Cursor>(page: doorman_domain::Page<D, C>) -> Self
            where
                $item: From<D>,
            {
                Self {
                    items: page.items.into_iter().map(<$item>::from).collect(),
                    next_cursor: page.next.map(|c| c.encode()),
                }
            }
        }
    };
}

/// A page of a listing that also says how many it selects in all ([`doorman_domain::Total`]):
/// `total`, exact up to 1,000, and `total_is_lower_bound` when there are more than `total`.
/// Fields added to the page: a client that reads `items` and `next_cursor` reads them as before.
macro_rules! counted_page_of {
    ($(#[$doc:meta])* $page:ident, $item:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, ::serde::Serialize, ::serde::Deserialize, ::utoipa::ToSchema)]
        pub struct $page {
            pub items: Vec<$item>,
            /// Pass it as `cursor` for the next page; `null` on the last.
            pub next_cursor: Option<String>,
            /// How many the listing selects over all its pages (the cursor aside), counted up
            /// to 1,000: beyond that `1000` with `total_is_lower_bound`.
            #[serde(default)]
            #[schema(minimum = 0, maximum = 1000)]
            pub total: u64,
            /// There are more than `total`.
            #[serde(default)]
            pub total_is_lower_bound: bool,
        }

        impl $page {
            /// The documents of a use case's page, its next cursor as opaque text, and the
            /// listing's total.
            pub fn of<D, C: doorman_domain::Cursor>(
                page: doorman_domain::Page<D, C>,
                total: doorman_domain::Total,
            ) -> Self
            where
                $item: From<D>,
            {
                Self {
                    items: page.items.into_iter().map(<$item>::from).collect(),
                    next_cursor: page.next.map(|c| c.encode()),
                    total: total.count,
                    total_is_lower_bound: total.lower_bound,
                }
            }
        }
    };
}

/// A list never long enough to page, one named type per item type.
macro_rules! list_of {
    ($(#[$doc:meta])* $list:ident, $item:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, ::serde::Serialize, ::serde::Deserialize, ::utoipa::ToSchema)]
        pub struct $list {
            pub items: Vec<$item>,
        }

        impl<D> FromIterator<D> for $list
        where
            $item: From<D>,
        {
            fn from_iter<I: IntoIterator<Item = D>>(items: I) -> Self {
                Self { items: items.into_iter().map(<$item>::from).collect() }
            }
        }
    };
}

pub(crate) use {counted_page_of, list_of, page_of};

//! Identities that are UUIDs: one definition of how they are made, parsed and printed.

/// A UUID identity: `from_uuid`, `generate` (v4), `as_uuid`, parsed from text (refused with
/// `what` "is not a UUID") and printed as the UUID.
macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(uuid::Uuid);

        impl $name {
            pub const fn from_uuid(id: uuid::Uuid) -> Self {
                Self(id)
            }

            /// A fresh random one.
            pub fn generate() -> Self {
                Self(uuid::Uuid::new_v4())
            }

            pub const fn as_uuid(&self) -> &uuid::Uuid {
                &self.0
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::model::ValidationError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                uuid::Uuid::parse_str(s)
                    .map(Self)
                    .map_err(|_| $crate::model::ValidationError::new($what, "is not a UUID"))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

pub(crate) use uuid_id;

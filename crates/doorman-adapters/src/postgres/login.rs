//! What a process checks of its login when it starts: that the login exists, its password is
//! accepted, the role its process acts as exists (migrations ran) and the login may act as it.
//! Any of these wrong, every request would fail for as long as the process runs (a pool that
//! never opens a connection answers 503 after its wait, logging only a timeout), so the
//! process refuses to start and says which. A database that cannot be reached at all is not
//! refused: the process starts, answers 503, and serves once the database is back.
//!
//! A login that is a superuser, or owns the tables, passes row-level security by its own
//! right: the process starts, with a warning (acting as the role still applies the policies,
//! but a login that can `RESET ROLE` is more than the process needs).
//!
//! On Citus the login must inherit the role (`CREATE ROLE … LOGIN INHERIT`, a member of it):
//! Citus connects to the workers as the role a statement runs as, so a process that took the
//! role with `SET ROLE` would log in to the workers as the group role itself, which may not log
//! in (it is `NOLOGIN`, so that nobody can connect to a worker as it). A login that would have
//! to take the role there is refused; a group role still allowed to log in (by an earlier
//! release's `doorman migrate`) is warned about.
//!
//! It also reads the language of the server's messages (`lc_messages`). Doorman tells what
//! waiting fixes (a deadlock, a lock or statement timeout, a server going down: 503) from a bug
//! (500) partly by the message's English words, because diesel-async keeps the SQLSTATE to
//! itself ([`super::errors`]). When the messages are not in English, the process's sessions set
//! `lc_messages = 'C'` if the login may ([`Login::Ready::c_messages`]); if it may not, the
//! process starts with a warning naming the consequence and the fix.

use diesel::sql_types::{Bool, Text};
use diesel_async::RunQueryDsl;

use super::connect::{SessionLimits, Target};

/// The login, as the check found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Login {
    /// It may act as the role; `warnings` say what it has beyond that, or what it lacks.
    Ready {
        user: String,
        warnings: Vec<String>,
        /// The server's messages for this login are not in English and it may set
        /// `lc_messages`: each of the process's sessions sets it to `C` (`PoolSettings`).
        c_messages: bool,
    },
    /// The database did not answer (refused, timed out, TLS): nothing could be checked.
    Unreachable(String),
}

/// Why the process must not start, in words an operator can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

#[derive(diesel::QueryableByName)]
struct Found {
    #[diesel(sql_type = Text)]
    user: String,
    #[diesel(sql_type = Bool)]
    superuser: bool,
    #[diesel(sql_type = Bool)]
    role_exists: bool,
    #[diesel(sql_type = Bool)]
    member: bool,
    #[diesel(sql_type = Bool)]
    owner: bool,
    /// The database is a Citus coordinator (the extension is installed).
    #[diesel(sql_type = Bool)]
    citus: bool,
    /// The login acts as the role by inheritance, under the policies, without `SET ROLE`
    /// (what `pool::act_as` checks as each connection opens).
    #[diesel(sql_type = Bool)]
    inherits: bool,
    /// The role itself may log in.
    #[diesel(sql_type = Bool)]
    role_can_login: bool,
    #[diesel(sql_type = Text)]
    lc_messages: String,
}

/// How long the check may take: a database that answers nothing in time is `Unreachable`.
const CHECK_WITHIN: std::time::Duration = std::time::Duration::from_secs(3);

/// Checks the login `database_url` names against `role` (`doorman_app` or `doorman_admin`).
pub async fn check(database_url: &str, role: &str) -> Result<Login, Refused> {
    match tokio::time::timeout(CHECK_WITHIN, check_now(database_url, role)).await {
        Ok(checked) => checked,
        Err(_) => Ok(Login::Unreachable(format!("the database did not answer within {CHECK_WITHIN:?}"))),
    }
}

async fn check_now(database_url: &str, role: &str) -> Result<Login, Refused> {
    let target = Target::parse(database_url).map_err(|e| Refused(format!("DATABASE_URL: {e}")))?;
    let mut conn = match target.establish(&SessionLimits::default()).await {
        Ok(conn) => conn,
        Err(error) => return refused_or_unreachable(&error.to_string(), role),
    };
    let found = diesel::sql_query(
        "SELECT current_user::text AS user, \
                coalesce((SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = current_user), false) AS superuser, \
                EXISTS (SELECT FROM pg_roles r WHERE r.rolname = $1) AS role_exists, \
                CASE WHEN EXISTS (SELECT FROM pg_roles r WHERE r.rolname = $1) \
                     THEN pg_has_role(current_user, $1, 'MEMBER') ELSE false END AS member, \
                coalesce((SELECT t.tableowner = current_user FROM pg_tables t \
                           WHERE t.schemaname = 'public' AND t.tablename = 'tenants'), false) AS owner, \
                EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') AS citus, \
                CASE WHEN EXISTS (SELECT FROM pg_roles r WHERE r.rolname = $1) \
                     THEN pg_has_role(current_user, $1, 'USAGE') ELSE false END \
                  AND NOT coalesce((SELECT r.rolsuper OR r.rolbypassrls FROM pg_roles r WHERE r.rolname = current_user), false) \
                  AND NOT coalesce((SELECT pg_has_role(current_user, c.relowner, 'USAGE') FROM pg_class c \
                                     WHERE c.oid = to_regclass('public.tenants')), false) AS inherits, \
                coalesce((SELECT r.rolcanlogin FROM pg_roles r WHERE r.rolname = $1), false) AS role_can_login, \
                current_setting('lc_messages') AS lc_messages",
    )
    .bind::<Text, _>(role)
    .get_result::<Found>(&mut conn)
    .await;
    let found = match found {
        Ok(found) => found,
        Err(error) => return Ok(Login::Unreachable(format!("checking the login: {error}"))),
    };
    if !found.role_exists {
        return Err(Refused(format!(
            "the role {role} does not exist in this database: run `doorman migrate` (as the tables' owner) first"
        )));
    }
    if !found.member {
        return Err(Refused(format!(
            "the login {user:?} is not a member of {role}: `GRANT {role} TO \"{user}\"` as the tables' owner \
             (docs/operations.md, \"Security model\")",
            user = found.user
        )));
    }
    if found.citus && !found.inherits && !found.role_can_login {
        return Err(Refused(format!(
            "on Citus the login must inherit {role}: {user:?} would take it with SET ROLE, and Citus would then \
             log in to the workers as {role}, which may not log in. Log in as a role of its own that inherits it \
             (`CREATE ROLE … LOGIN INHERIT; GRANT {role} TO …`; docs/operations.md, \"Running on Citus\")",
            user = found.user
        )));
    }
    let mut warnings = Vec::new();
    if found.citus && found.role_can_login {
        warnings.push(format!(
            "{role} may log in on this Citus cluster (an earlier release's migrate allowed it), so anyone who \
             can reach a worker as {role} can name any tenant: once every process logs in as a role that \
             inherits it, run `ALTER ROLE {role} NOLOGIN` on the coordinator (docs/operations.md, \"Running on Citus\")"
        ));
    }
    if found.superuser {
        warnings.push(format!(
            "logged in as {:?}, a superuser: use a login whose only membership is {role} (docs/operations.md, \"Security model\")",
            found.user
        ));
    } else if found.owner {
        warnings.push(format!(
            "logged in as {:?}, the tables' owner: use a login whose only membership is {role} (docs/operations.md, \"Security model\")",
            found.user
        ));
    }
    let c_messages = match messages(&mut conn, &found.lc_messages).await {
        Messages::English => false,
        Messages::SetToC => {
            tracing::info!(
                lc_messages = %found.lc_messages,
                "the server's messages for this login are not in English; each session sets lc_messages = 'C'"
            );
            true
        }
        Messages::NotEnglish => {
            warnings.push(not_english_warning(&found.user, &found.lc_messages));
            false
        }
    };
    Ok(Login::Ready { user: found.user, warnings, c_messages })
}

/// The language of the server's messages for the login, and whether it can be made English.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Messages {
    English,
    /// Not English, and the login may set `lc_messages` (a superuser, or `GRANT SET ON
    /// PARAMETER lc_messages`).
    SetToC,
    NotEnglish,
}

async fn messages(conn: &mut diesel_async::AsyncPgConnection, lc_messages: &str) -> Messages {
    if is_english(lc_messages) {
        return Messages::English;
    }
    // Tried on this connection, which is closed after the check.
    match diesel_async::SimpleAsyncConnection::batch_execute(conn, "SET lc_messages = 'C'").await {
        Ok(()) => Messages::SetToC,
        Err(_) => Messages::NotEnglish,
    }
}

/// Whether `lc_messages` names English messages: `C`, `POSIX`, or an English locale (`en_US.UTF-8`,
/// `English_United States.1252`). Empty (the server's environment) is not known to be.
fn is_english(lc_messages: &str) -> bool {
    let name = lc_messages.to_ascii_lowercase();
    let language = name.split(['.', '@']).next().unwrap_or_default();
    matches!(language, "c" | "posix" | "en") || language.starts_with("en_") || language.starts_with("english")
}

/// What a login whose messages are not in English, and that may not change that, costs, and
/// the one line that fixes it (docs/operations.md, "Server messages").
fn not_english_warning(user: &str, lc_messages: &str) -> String {
    format!(
        "the server's messages for the login {user:?} are not in English (lc_messages = {lc_messages:?}) and it may \
         not set lc_messages, so Doorman cannot recognise a deadlock, a lock or statement timeout or a server \
         shutting down (it reads their English words): they will be answered 500 instead of 503, and a claim \
         committed as the server shut down taken as not written. Fix, as a superuser: \
         ALTER ROLE \"{}\" SET lc_messages = 'C'; (docs/operations.md, \"Server messages\")",
        user.replace('"', "\"\"")
    )
}

/// A connection that failed: refused for good when the server said who the login is not
/// (no such role, a wrong password, no `pg_hba.conf` entry, no such database); unreachable
/// otherwise.
fn refused_or_unreachable(said: &str, role: &str) -> Result<Login, Refused> {
    let refusal = if said.contains("password authentication failed") {
        Some("the database refused the login's password (password authentication failed)".to_owned())
    } else if said.contains("role \"") && said.contains("does not exist") {
        Some(format!(
            "the login does not exist on the database server ({}): create it, a member of {role} only",
            fatal(said)
        ))
    } else if said.contains("database \"") && said.contains("does not exist") {
        Some(format!("the database does not exist ({}): create it and run `doorman migrate`", fatal(said)))
    } else if said.contains("no pg_hba.conf entry") {
        Some(format!(
            "the database server's pg_hba.conf lets this login in from nowhere here ({})",
            fatal(said)
        ))
    } else {
        None
    };
    match refusal {
        Some(why) => Err(Refused(why)),
        None => Ok(Login::Unreachable(said.to_owned())),
    }
}

/// The server's own sentence (from `FATAL:` on), without the layers around it.
fn fatal(said: &str) -> &str {
    said.find("FATAL:").map_or(said, |at| said[at..].trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_messages_are_c_posix_or_an_english_locale() {
        for english in ["C", "C.UTF-8", "POSIX", "en_US.UTF-8", "en_GB", "en", "English_United States.1252"] {
            assert!(is_english(english), "{english}");
        }
        for other in ["de_DE.UTF-8", "fr_FR", "German_Germany.1252", "", "cs_CZ.UTF-8", "es"] {
            assert!(!is_english(other), "{other:?}");
        }
    }

    #[test]
    fn the_server_saying_who_the_login_is_not_refuses_and_anything_else_waits() {
        let refused = |said: &str| refused_or_unreachable(said, "doorman_admin").unwrap_err().0;
        assert!(
            refused("db error: FATAL: password authentication failed for user \"x\"").contains("password")
        );
        assert!(
            refused("db error: FATAL: role \"ghost\" does not exist")
                .contains("FATAL: role \"ghost\" does not exist")
        );
        assert!(
            refused("db error: FATAL: database \"nope\" does not exist").contains("database does not exist")
        );
        assert!(
            refused("db error: FATAL: no pg_hba.conf entry for host \"1.2.3.4\"").contains("pg_hba.conf")
        );
        for waits in [
            "error connecting to server: Connection refused (os error 111)",
            "the server did not complete the connection (TLS, authentication) within 5s",
        ] {
            assert_eq!(
                refused_or_unreachable(waits, "doorman_app"),
                Ok(Login::Unreachable(waits.to_owned()))
            );
        }
    }
}

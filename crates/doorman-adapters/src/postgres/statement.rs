//! Statements kept prepared: the batch writers' calls.
//!
//! Diesel prepares a `sql_query` anew every time it runs (it cannot know the text is fixed),
//! which costs a parse, a plan and a round trip per batch. A [`Kept`] statement is made of
//! fixed text and binds, so Diesel prepares it once per connection, keyed by its text, and
//! only binds and executes it afterwards. Through a transaction pooler
//! ([`super::pool::PoolMode::Transaction`]) the connection keeps nothing, and it is prepared
//! each time as before.

use std::marker::PhantomData;

use diesel::QueryResult;
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::{HasSqlType, Untyped};

/// One value to bind, with its SQL type. `Send` as well as `Sync`: a statement travels with the
/// future that runs it.
pub(crate) trait Bind: Send + Sync {
    fn push<'b>(&'b self, out: AstPass<'_, 'b, Pg>) -> QueryResult<()>;
}

struct Bound<'a, ST, V: ?Sized>(&'a V, PhantomData<fn() -> ST>);

impl<ST, V> Bind for Bound<'_, ST, V>
where
    Pg: HasSqlType<ST>,
    V: ToSql<ST, Pg> + Sync + ?Sized,
{
    fn push<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_bind_param::<ST, V>(self.0)
    }
}

/// `value` bound as SQL type `ST`.
pub(crate) fn bind<ST, V>(value: &V) -> Box<dyn Bind + '_>
where
    Pg: HasSqlType<ST> + 'static,
    ST: 'static,
    V: ToSql<ST, Pg> + Sync + ?Sized,
{
    Box::new(Bound::<ST, V>(value, PhantomData))
}

struct Owned<ST, V>(V, PhantomData<fn() -> ST>);

impl<ST, V> Bind for Owned<ST, V>
where
    Pg: HasSqlType<ST>,
    V: ToSql<ST, Pg> + Send + Sync,
{
    fn push<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_bind_param::<ST, V>(&self.0)
    }
}

/// `value`, owned by the statement, bound as SQL type `ST` (an array gathered for it alone).
pub(crate) fn bind_owned<'a, ST, V>(value: V) -> Box<dyn Bind + 'a>
where
    Pg: HasSqlType<ST> + 'static,
    ST: 'static,
    V: ToSql<ST, Pg> + Send + Sync + 'a,
{
    Box::new(Owned::<ST, V>(value, PhantomData))
}

/// A piece of a kept statement.
pub(crate) enum Part<'a> {
    Sql(&'static str),
    /// Text made at run time from Doorman's own values (a Citus shard's table name), never
    /// from input: each distinct text is a statement of its own.
    Text(String),
    Bind(Box<dyn Bind + 'a>),
}

/// A statement of fixed text and binds, in order.
pub(crate) struct Kept<'a>(pub Vec<Part<'a>>);

impl QueryFragment<Pg> for Kept<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        for part in &self.0 {
            match part {
                Part::Sql(sql) => out.push_sql(sql),
                Part::Text(sql) => out.push_sql(sql),
                Part::Bind(value) => value.push(out.reborrow())?,
            }
        }
        Ok(())
    }
}

impl QueryId for Kept<'_> {
    // Keyed by its text, which is fixed: Diesel caches the prepared statement under it.
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl Query for Kept<'_> {
    type SqlType = Untyped;
}

impl<'a> Kept<'a> {
    /// `{select_from}({args, …})`: a call of a set-returning function, its arguments bound
    /// in order (`select_from` is `SELECT … FROM function`).
    pub(crate) fn call(select_from: &'static str, args: Vec<Box<dyn Bind + 'a>>) -> Self {
        let mut parts = vec![Part::Sql(select_from), Part::Sql("(")];
        for (i, arg) in args.into_iter().enumerate() {
            if i > 0 {
                parts.push(Part::Sql(", "));
            }
            parts.push(Part::Bind(arg));
        }
        parts.push(Part::Sql(")"));
        Kept(parts)
    }

    /// This statement, then `other`'s rows after its own (`UNION ALL`): one statement, so
    /// one transaction and one commit for both.
    pub(crate) fn union_all(mut self, other: Kept<'a>) -> Self {
        self.0.push(Part::Sql(" UNION ALL "));
        self.0.extend(other.0);
        self
    }
}

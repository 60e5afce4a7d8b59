//! One way to run SQL on either engine: the store's queries are written once
//! against [`Db`], which runs them on an SQLite connection or a PostgreSQL
//! session, and read back as engine-neutral [`Row`]s.
//!
//! # Decisions
//!
//! - **One SQL text per query.** Queries use SQLite's numbered placeholders
//!   (`?1`, `?2`); for PostgreSQL they are rewritten to `$1`, `$2` (no query
//!   of the store has a `?` anywhere else). Where the dialects differ the
//!   store says so at the query (the schema, how a database is recognised);
//!   everything else is the common subset: `ON CONFLICT ... DO UPDATE`
//!   rather than `INSERT OR REPLACE` (no table written that way is the
//!   target of a foreign key, so the two agree), `IS DISTINCT FROM` rather
//!   than `IS NOT`, an explicit `CAST` where PostgreSQL cannot infer a
//!   parameter's type.
//! - **Values are copied out.** A query returns its rows as owned values
//!   ([`Value`]); the store reads at most a page of rows at a time, and the
//!   largest value, a snapshot blob, was copied before too.
//! - **Round trips (PostgreSQL).** Each round trip to the server costs both
//!   sides system calls and wake-ups: about two fifths of PostgreSQL's CPU
//!   per check went to sending, receiving and waiting, the rest to running
//!   statements (measured with `perf`, BENCHMARKS "Scale-out on PostgreSQL"). So a
//!   transaction holds back what need not go out at once ([`Held`]): its
//!   `BEGIN`, sent with its first statement; the writes whose row count
//!   nobody reads ([`Db::defer`]), sent with the next statement; its
//!   `COMMIT`, sent with the last writes. They are pipelined (tokio-postgres
//!   sends requests in the order they are first polled, each prepared
//!   first, so they run in order) and the first error is the one reported,
//!   the transaction then rolling back as before. SQLite, in process, runs
//!   each at once.
//! - **Types.** Integers are `i64` on both sides (PostgreSQL columns are
//!   `BIGINT`), reals `f64` (`DOUBLE PRECISION`), blobs `BYTEA`, and flags
//!   `BOOLEAN` in PostgreSQL, `INTEGER` 0/1 in SQLite; [`Row::get`] reads a
//!   flag from either.

use std::cell::{Cell, RefCell};
use std::error::Error as StdError;
use std::panic::{AssertUnwindSafe, catch_unwind};

use bytes::BytesMut;
use rusqlite::types::{ToSqlOutput, ValueRef};
use tokio_postgres::types::{IsNull, ToSql as PgToSql, Type};

/// An error of the database engine underneath the store, whichever it is.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DbError {
    /// SQLite's error.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// PostgreSQL's (or the connection's) error.
    #[error(transparent)]
    Postgres(#[from] tokio_postgres::Error),
    /// No connection could be had from the pool.
    #[error("cannot connect to PostgreSQL")]
    Pool(#[from] deadpool_postgres::PoolError),
    /// A value read does not have the type the store expects.
    #[error("column {column}: {message}")]
    Value {
        /// The column's position in the result.
        column: usize,
        /// What was found instead.
        message: String,
    },
    /// The connection could not be set up (its runtime, TLS or pool).
    #[error("cannot set up the connection")]
    Setup(#[source] std::io::Error),
    /// A query that returns one row returned none.
    #[error("the query returned no row")]
    NoRow,
    /// The PostgreSQL store was called from an async task, where it cannot
    /// block (see [`super::pg`]).
    #[error(
        "the PostgreSQL store was called from an async task; \
         call it from a blocking thread (StorePool::run)"
    )]
    AsyncContext,
    /// Records that cannot be written in one group (see
    /// [`super::replicas::Replicas::write_records`]); each is written alone instead.
    #[error("cannot write these records together: {0}")]
    Group(&'static str),
}

impl DbError {
    /// SQLite's error code, if this is an SQLite error.
    pub(crate) fn sqlite_code(&self) -> Option<rusqlite::ErrorCode> {
        match self {
            DbError::Sqlite(e) => e.sqlite_error_code(),
            _ => None,
        }
    }
}

/// A value bound to a placeholder.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg<'a> {
    Int(Option<i64>),
    Real(Option<f64>),
    Text(Option<&'a str>),
    Blob(&'a [u8]),
    Bool(bool),
}

impl From<i64> for Arg<'_> {
    fn from(v: i64) -> Self {
        Arg::Int(Some(v))
    }
}
impl From<Option<i64>> for Arg<'_> {
    fn from(v: Option<i64>) -> Self {
        Arg::Int(v)
    }
}
impl From<f64> for Arg<'_> {
    fn from(v: f64) -> Self {
        Arg::Real(Some(v))
    }
}
impl From<Option<f64>> for Arg<'_> {
    fn from(v: Option<f64>) -> Self {
        Arg::Real(v)
    }
}
impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Self {
        Arg::Text(Some(v))
    }
}
impl<'a> From<&'a String> for Arg<'a> {
    fn from(v: &'a String) -> Self {
        Arg::Text(Some(v))
    }
}
impl<'a> From<&'a Option<String>> for Arg<'a> {
    fn from(v: &'a Option<String>) -> Self {
        Arg::Text(v.as_deref())
    }
}
impl<'a> From<&'a [u8]> for Arg<'a> {
    fn from(v: &'a [u8]) -> Self {
        Arg::Blob(v)
    }
}
impl From<bool> for Arg<'_> {
    fn from(v: bool) -> Self {
        Arg::Bool(v)
    }
}

/// The arguments of a query: `args![watch, at_ms]`.
macro_rules! args {
    ($($arg:expr),* $(,)?) => {
        &[$($crate::store::sql::Arg::from($arg)),*]
    };
}
pub(crate) use args;

impl rusqlite::ToSql for Arg<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match *self {
            Arg::Int(v) => v.map_or(ToSqlOutput::from(rusqlite::types::Null), ToSqlOutput::from),
            Arg::Real(v) => v.map_or(ToSqlOutput::from(rusqlite::types::Null), ToSqlOutput::from),
            Arg::Text(v) => v.map_or(ToSqlOutput::from(rusqlite::types::Null), ToSqlOutput::from),
            Arg::Blob(v) => ToSqlOutput::from(v),
            Arg::Bool(v) => ToSqlOutput::from(v),
        })
    }
}

type BoxError = Box<dyn StdError + Sync + Send>;

impl PgToSql for Arg<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        match self {
            Arg::Int(v) => v.to_sql(ty, out),
            Arg::Real(v) => v.to_sql(ty, out),
            Arg::Text(v) => v.to_sql(ty, out),
            Arg::Blob(v) => v.to_sql(ty, out),
            Arg::Bool(v) => v.to_sql(ty, out),
        }
    }

    /// Every type is accepted here; [`Arg::to_sql_checked`] checks the
    /// inner value's.
    fn accepts(_: &Type) -> bool {
        true
    }

    fn to_sql_checked(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        match self {
            Arg::Int(v) => v.to_sql_checked(ty, out),
            Arg::Real(v) => v.to_sql_checked(ty, out),
            Arg::Text(v) => v.to_sql_checked(ty, out),
            Arg::Blob(v) => v.to_sql_checked(ty, out),
            Arg::Bool(v) => v.to_sql_checked(ty, out),
        }
    }
}

/// An [`Arg`] copied, for a write sent later ([`Db::defer`]).
#[derive(Debug, Clone)]
enum OwnedArg {
    Int(Option<i64>),
    Real(Option<f64>),
    Text(Option<String>),
    Blob(Vec<u8>),
    Bool(bool),
}

impl OwnedArg {
    fn of(arg: &Arg<'_>) -> OwnedArg {
        match *arg {
            Arg::Int(v) => OwnedArg::Int(v),
            Arg::Real(v) => OwnedArg::Real(v),
            Arg::Text(v) => OwnedArg::Text(v.map(str::to_owned)),
            Arg::Blob(v) => OwnedArg::Blob(v.to_vec()),
            Arg::Bool(v) => OwnedArg::Bool(v),
        }
    }

    fn arg(&self) -> Arg<'_> {
        match self {
            OwnedArg::Int(v) => Arg::Int(*v),
            OwnedArg::Real(v) => Arg::Real(*v),
            OwnedArg::Text(v) => Arg::Text(v.as_deref()),
            OwnedArg::Blob(v) => Arg::Blob(v),
            OwnedArg::Bool(v) => Arg::Bool(*v),
        }
    }
}

/// A write a PostgreSQL transaction holds back ([`Db::defer`]).
#[derive(Debug)]
pub(crate) struct Deferred {
    sql: &'static str,
    args: Vec<OwnedArg>,
}

/// What a PostgreSQL transaction holds back, in order: its `BEGIN` until
/// its first statement goes out with it, its writes ([`Db::defer`]), and
/// at the end its `COMMIT`, sent with the last writes.
#[derive(Debug)]
pub(crate) struct Held {
    statements: RefCell<Vec<Deferred>>,
    sent: Cell<bool>,
}

impl Held {
    /// A transaction not begun yet: its `BEGIN` is held.
    pub(crate) fn begin() -> Held {
        Held {
            statements: RefCell::new(vec![Deferred {
                sql: "BEGIN",
                args: Vec::new(),
            }]),
            sent: Cell::new(false),
        }
    }

    /// Holds `COMMIT` after the writes.
    pub(crate) fn commit(&self) {
        self.statements.borrow_mut().push(Deferred {
            sql: "COMMIT",
            args: Vec::new(),
        });
    }

    /// Whether anything went out (the transaction began on the server).
    pub(crate) fn sent(&self) -> bool {
        self.sent.get()
    }

    fn take(&self) -> Vec<Deferred> {
        let taken = std::mem::take(&mut *self.statements.borrow_mut());
        if !taken.is_empty() {
            self.sent.set(true);
        }
        taken
    }
}

/// A value read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
    Bool(bool),
}

impl Value {
    fn kind(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Int(_) => "an integer",
            Value::Real(_) => "a real",
            Value::Text(_) => "text",
            Value::Blob(_) => "a blob",
            Value::Bool(_) => "a boolean",
        }
    }
}

/// A row read: its values in column order.
#[derive(Debug, Clone)]
pub(crate) struct Row(Vec<Value>);

/// A Rust type a column reads as.
pub(crate) trait FromValue: Sized {
    /// The value as this type, or `None` if it is not one.
    fn from_value(value: Value) -> Result<Self, Value>;
    /// What the type is, for errors.
    const EXPECTED: &'static str;
}

/// `FromValue` for a type one variant holds.
macro_rules! from_variant {
    ($($t:ty => $variant:ident, $expected:literal;)*) => {$(
        impl FromValue for $t {
            const EXPECTED: &'static str = $expected;
            fn from_value(value: Value) -> Result<Self, Value> {
                match value {
                    Value::$variant(v) => Ok(v),
                    other => Err(other),
                }
            }
        }
    )*};
}

from_variant! {
    i64 => Int, "an integer";
    String => Text, "text";
    Vec<u8> => Blob, "a blob";
}

impl FromValue for f64 {
    const EXPECTED: &'static str = "a real";
    fn from_value(value: Value) -> Result<Self, Value> {
        match value {
            Value::Real(v) => Ok(v),
            // As rusqlite reads an integer as a real (whole numbers up to
            // 2^53 exactly).
            Value::Int(v) => Ok(v as f64),
            other => Err(other),
        }
    }
}
impl FromValue for bool {
    const EXPECTED: &'static str = "a flag";
    fn from_value(value: Value) -> Result<Self, Value> {
        match value {
            Value::Bool(v) => Ok(v),
            Value::Int(v) => Ok(v != 0),
            other => Err(other),
        }
    }
}
impl FromValue for Value {
    const EXPECTED: &'static str = "any value";
    fn from_value(value: Value) -> Result<Self, Value> {
        Ok(value)
    }
}
impl<T: FromValue> FromValue for Option<T> {
    const EXPECTED: &'static str = T::EXPECTED;
    fn from_value(value: Value) -> Result<Self, Value> {
        match value {
            Value::Null => Ok(None),
            other => T::from_value(other).map(Some),
        }
    }
}

impl Row {
    /// Column `i` as `T`.
    pub(crate) fn get<T: FromValue>(&mut self, i: usize) -> Result<T, DbError> {
        let value = self.0.get_mut(i).map(|v| std::mem::replace(v, Value::Null));
        let Some(value) = value else {
            return Err(DbError::Value {
                column: i,
                message: "no such column".to_owned(),
            });
        };
        T::from_value(value).map_err(|found| DbError::Value {
            column: i,
            message: format!("expected {}, found {}", T::EXPECTED, found.kind()),
        })
    }

    fn from_sqlite(row: &rusqlite::Row<'_>, columns: usize) -> rusqlite::Result<Row> {
        (0..columns)
            .map(|i| {
                Ok(match row.get_ref(i)? {
                    ValueRef::Null => Value::Null,
                    ValueRef::Integer(v) => Value::Int(v),
                    ValueRef::Real(v) => Value::Real(v),
                    ValueRef::Text(_) => Value::Text(row.get(i)?),
                    ValueRef::Blob(v) => Value::Blob(v.to_vec()),
                })
            })
            .collect::<rusqlite::Result<Vec<_>>>()
            .map(Row)
    }

    fn from_postgres(row: &tokio_postgres::Row) -> Result<Row, DbError> {
        row.columns()
            .iter()
            .enumerate()
            .map(|(i, column)| {
                let ty = column.type_();
                let value = if *ty == Type::INT8 {
                    row.try_get::<_, Option<i64>>(i)?.map(Value::Int)
                } else if *ty == Type::INT4 {
                    row.try_get::<_, Option<i32>>(i)?
                        .map(|v| Value::Int(i64::from(v)))
                } else if *ty == Type::INT2 {
                    row.try_get::<_, Option<i16>>(i)?
                        .map(|v| Value::Int(i64::from(v)))
                } else if *ty == Type::FLOAT8 {
                    row.try_get::<_, Option<f64>>(i)?.map(Value::Real)
                } else if *ty == Type::BOOL {
                    row.try_get::<_, Option<bool>>(i)?.map(Value::Bool)
                } else if *ty == Type::BYTEA {
                    row.try_get::<_, Option<Vec<u8>>>(i)?.map(Value::Blob)
                } else if [Type::TEXT, Type::VARCHAR, Type::NAME, Type::BPCHAR].contains(ty) {
                    row.try_get::<_, Option<String>>(i)?.map(Value::Text)
                } else {
                    return Err(DbError::Value {
                        column: i,
                        message: format!("unsupported type {ty}"),
                    });
                };
                Ok(value.unwrap_or(Value::Null))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Row)
    }
}

/// A PostgreSQL session: a pooled client, or a transaction on one with the
/// writes it holds back.
#[derive(Clone, Copy)]
pub(crate) enum PgSession<'a> {
    Client(&'a deadpool_postgres::ClientWrapper),
    Tx(&'a deadpool_postgres::ClientWrapper, &'a Held),
}

type Params<'a> = Vec<&'a (dyn PgToSql + Sync)>;

fn params<'a>(args: &'a [Arg<'_>]) -> Params<'a> {
    args.iter().map(|a| a as &(dyn PgToSql + Sync)).collect()
}

impl PgSession<'_> {
    fn client(&self) -> &deadpool_postgres::ClientWrapper {
        match self {
            PgSession::Client(c) | PgSession::Tx(c, _) => c,
        }
    }

    async fn prepare(&self, sql: &str) -> Result<tokio_postgres::Statement, tokio_postgres::Error> {
        let sql = postgres_text(sql);
        self.client().prepare_cached(&sql).await
    }

    /// The writes held back, taken.
    fn take_held(&self) -> Vec<Deferred> {
        match self {
            PgSession::Client(_) => Vec::new(),
            PgSession::Tx(_, held) => held.take(),
        }
    }

    /// Sends `held` with their statements `stmts`, in order. Each request
    /// goes out at its future's first poll, so callers poll this before
    /// any statement that must run after them.
    async fn send_held(
        &self,
        held: &[Deferred],
        stmts: &[tokio_postgres::Statement],
    ) -> Result<(), DbError> {
        let args: Vec<Vec<Arg<'_>>> = held
            .iter()
            .map(|d| d.args.iter().map(OwnedArg::arg).collect())
            .collect();
        let params: Vec<Params<'_>> = args.iter().map(|a| params(a)).collect();
        let sends = stmts
            .iter()
            .zip(&params)
            .map(|(stmt, params)| self.execute_prepared(stmt, params));
        futures::future::try_join_all(sends).await?;
        Ok(())
    }

    /// Prepares `held`'s statements (a cached one at once, the others in
    /// one pipelined round trip) and `sql`'s.
    async fn prepare_with_held(
        &self,
        held: &[Deferred],
        sql: &str,
    ) -> Result<(Vec<tokio_postgres::Statement>, tokio_postgres::Statement), DbError> {
        let held_stmts = futures::future::try_join_all(held.iter().map(|d| self.prepare(d.sql)));
        Ok(futures::future::try_join(held_stmts, self.prepare(sql)).await?)
    }

    async fn execute_prepared(
        &self,
        stmt: &tokio_postgres::Statement,
        params: &[&(dyn PgToSql + Sync)],
    ) -> Result<u64, tokio_postgres::Error> {
        self.client().execute(stmt, params).await
    }

    /// Runs `sql` after the writes held back, all sent at once: one round
    /// trip. A held write's error is the one reported (the transaction is
    /// aborted from there, so `sql`'s own error would only say that).
    async fn query(
        &self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> Result<Vec<tokio_postgres::Row>, DbError> {
        let held = self.take_held();
        let (held_stmts, stmt) = self.prepare_with_held(&held, sql).await?;
        let params = params(args);
        let run = self.client().query(&stmt, &params);
        let (sent, rows) = futures::future::join(self.send_held(&held, &held_stmts), run).await;
        sent?;
        Ok(rows?)
    }

    /// Runs `a` then `b` after the writes held back, all sent at once: one
    /// round trip, each statement on its own (outside a transaction, each
    /// its own, `b` seeing what `a` did).
    async fn query_both(
        &self,
        (a, a_args): (&str, &[Arg<'_>]),
        (b, b_args): (&str, &[Arg<'_>]),
    ) -> Result<(Vec<tokio_postgres::Row>, Vec<tokio_postgres::Row>), DbError> {
        let held = self.take_held();
        let ((held_stmts, a), b) =
            futures::future::try_join(self.prepare_with_held(&held, a), async {
                Ok::<_, DbError>(self.prepare(b).await?)
            })
            .await?;
        let (a_params, b_params) = (params(a_args), params(b_args));
        let (sent, a_rows, b_rows) = futures::future::join3(
            self.send_held(&held, &held_stmts),
            self.client().query(&a, &a_params),
            self.client().query(&b, &b_params),
        )
        .await;
        sent?;
        Ok((a_rows?, b_rows?))
    }

    /// As [`PgSession::query`], for the number of rows changed.
    async fn execute(&self, sql: &str, args: &[Arg<'_>]) -> Result<u64, DbError> {
        let held = self.take_held();
        let (held_stmts, stmt) = self.prepare_with_held(&held, sql).await?;
        let params = params(args);
        let (sent, n) = futures::future::join(
            self.send_held(&held, &held_stmts),
            self.execute_prepared(&stmt, &params),
        )
        .await;
        sent?;
        Ok(n?)
    }

    /// Sends the writes held back (before a commit).
    pub(crate) async fn flush(&self) -> Result<(), DbError> {
        let held = self.take_held();
        if held.is_empty() {
            return Ok(());
        }
        let stmts = futures::future::try_join_all(held.iter().map(|d| self.prepare(d.sql))).await?;
        self.send_held(&held, &stmts).await
    }

    async fn batch(&self, sql: &str) -> Result<(), DbError> {
        self.flush().await?;
        self.client().batch_execute(sql).await?;
        Ok(())
    }
}

/// `?N` placeholders as PostgreSQL's `$N`.
fn postgres_text(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

/// Where a query runs: an SQLite connection (or transaction), or a
/// PostgreSQL session with the runtime that drives it.
#[derive(Clone, Copy)]
pub(crate) enum Db<'a> {
    Sqlite(&'a rusqlite::Connection),
    Postgres(PgSession<'a>, &'a PgRuntime),
}

impl Db<'_> {
    /// Every row of two queries, `a` then `b`: on PostgreSQL in one round
    /// trip ([`PgSession::query_both`]).
    pub(crate) fn query_both(
        self,
        a: (&str, &[Arg<'_>]),
        b: (&str, &[Arg<'_>]),
    ) -> Result<(Vec<Row>, Vec<Row>), DbError> {
        match self {
            Db::Sqlite(_) => Ok((self.query(a.0, a.1)?, self.query(b.0, b.1)?)),
            Db::Postgres(session, rt) => {
                let (a, b) = rt.block_on(session.query_both(a, b))??;
                let rows = |rows: Vec<tokio_postgres::Row>| -> Result<Vec<Row>, DbError> {
                    rows.iter().map(Row::from_postgres).collect()
                };
                Ok((rows(a)?, rows(b)?))
            }
        }
    }

    /// Every row of a query.
    pub(crate) fn query(self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<Row>, DbError> {
        match self {
            Db::Sqlite(conn) => {
                let mut stmt = conn.prepare_cached(sql)?;
                let columns = stmt.column_count();
                let rows = stmt
                    .query_map(rusqlite::params_from_iter(args), |row| {
                        Row::from_sqlite(row, columns)
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                Ok(rows)
            }
            Db::Postgres(session, rt) => {
                let rows = rt.block_on(session.query(sql, args))??;
                rows.iter().map(Row::from_postgres).collect()
            }
        }
    }

    /// Every row of a query, each read by `read`.
    pub(crate) fn query_map<T>(
        self,
        sql: &str,
        args: &[Arg<'_>],
        read: impl FnMut(Row) -> Result<T, DbError>,
    ) -> Result<Vec<T>, DbError> {
        self.query(sql, args)?.into_iter().map(read).collect()
    }

    /// The first row of a query, if any.
    pub(crate) fn query_opt(self, sql: &str, args: &[Arg<'_>]) -> Result<Option<Row>, DbError> {
        Ok(self.query(sql, args)?.into_iter().next())
    }

    /// The first row of a query that always returns one.
    pub(crate) fn query_one(self, sql: &str, args: &[Arg<'_>]) -> Result<Row, DbError> {
        self.query_opt(sql, args)?.ok_or(DbError::NoRow)
    }

    /// Runs a statement; returns the number of rows it changed.
    pub(crate) fn execute(self, sql: &str, args: &[Arg<'_>]) -> Result<usize, DbError> {
        match self {
            Db::Sqlite(conn) => Ok(conn
                .prepare_cached(sql)?
                .execute(rusqlite::params_from_iter(args))?),
            Db::Postgres(session, rt) => {
                let n = rt.block_on(session.execute(sql, args))??;
                Ok(usize::try_from(n).unwrap_or(usize::MAX))
            }
        }
    }

    /// Runs a write whose count of rows changed is not needed. In a
    /// PostgreSQL transaction it is held back and sent with the
    /// transaction's next statement, or before its commit, in the same
    /// round trip (an error it meets is reported there, and the whole
    /// transaction rolls back as with any error); elsewhere it runs now.
    pub(crate) fn defer(self, sql: &'static str, args: &[Arg<'_>]) -> Result<(), DbError> {
        match self {
            Db::Postgres(PgSession::Tx(_, held), _) => {
                held.statements.borrow_mut().push(Deferred {
                    sql,
                    args: args.iter().map(OwnedArg::of).collect(),
                });
                Ok(())
            }
            Db::Sqlite(_) | Db::Postgres(PgSession::Client(_), _) => {
                self.execute(sql, args).map(drop)
            }
        }
    }

    /// Runs several statements without arguments (a migration).
    pub(crate) fn batch(self, sql: &str) -> Result<(), DbError> {
        match self {
            Db::Sqlite(conn) => Ok(conn.execute_batch(sql)?),
            Db::Postgres(session, rt) => rt.block_on(session.batch(sql))?,
        }
    }
}

/// Runs `f`, turning a panic of tokio's "cannot block here" check into
/// [`DbError::AsyncContext`] (tokio's panic message is still printed by the
/// panic hook, so the misuse is never silent).
pub(crate) fn guard_block<T>(f: impl FnOnce() -> T) -> Result<T, DbError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|_| DbError::AsyncContext)
}

/// The runtime that drives the PostgreSQL engine's connections (see
/// [`super::pg`]'s module doc).
/// Dropped from anywhere, even an async task: it shuts down in the
/// background rather than block.
#[derive(Debug)]
pub(crate) struct PgRuntime(Option<tokio::runtime::Runtime>);

impl PgRuntime {
    pub(crate) fn new() -> std::io::Result<PgRuntime> {
        // Current-thread: a blocked caller drives its own connection's I/O
        // (see `super::pg`'s module doc).
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map(|rt| PgRuntime(Some(rt)))
    }

    /// Runs `future` to completion on this runtime, blocking the calling
    /// thread; [`DbError::AsyncContext`] when that thread runs an async task.
    pub(crate) fn block_on<F: Future>(&self, future: F) -> Result<F::Output, DbError> {
        let Some(rt) = &self.0 else {
            return Err(DbError::AsyncContext);
        };
        guard_block(|| rt.block_on(future))
    }
}

impl Drop for PgRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_dollars_for_postgres() {
        assert_eq!(
            postgres_text("SELECT a FROM t WHERE b = ?1 AND c IN (?2, ?12) AND d = '?'"),
            "SELECT a FROM t WHERE b = $1 AND c IN ($2, $12) AND d = '?'"
        );
    }

    #[test]
    fn a_flag_reads_from_a_boolean_or_an_integer_and_a_text_is_no_integer() {
        let mut row = Row(vec![
            Value::Bool(true),
            Value::Int(0),
            Value::Text("x".into()),
            Value::Null,
        ]);
        assert_eq!(row.get::<bool>(0).ok(), Some(true));
        assert_eq!(row.get::<bool>(1).ok(), Some(false));
        let err = row.get::<i64>(2).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("column 2: expected an integer, found text")
        );
        assert_eq!(row.get::<Option<i64>>(3).ok(), Some(None));
        assert!(row.get::<i64>(4).is_err());
    }
}

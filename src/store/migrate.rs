//! Moving up: an SQLite store copied into an empty PostgreSQL one
//! (`semclip migrate --to postgres://...`), history, states and pending
//! alerts included, so that a user who outgrows one machine keeps them.
//!
//! # Decisions
//!
//! - **Rows, not meanings.** Every table is copied row for row, ids
//!   included, blobs as stored (the compressed snapshot formats are the same
//!   on both engines). A change event keeps pointing at its snapshot, a
//!   pending alert keeps its `alert_id` (the delivery id receivers see, so a
//!   receiver that already got it from the old store can drop it), and the
//!   identity sequences are moved past the copied ids.
//! - **All or nothing.** The source is read in one transaction (SQLite's
//!   write lock: nothing changes it while it is copied; stop the daemon
//!   first, or its checks wait and then fail for that moment), the target
//!   written in one. Each table's rows are counted on both sides before the
//!   target commits; a difference rolls everything back.
//! - **Only into an empty store.** Merging two histories would make ids
//!   clash and alerts repeat, so a target holding any row is refused and
//!   left as it was.
//! - **Every table, or a failing test.** [`TABLES`] lists the columns
//!   copied; a test compares it with the schema, so a table or column
//!   added to the store without being added here fails the build's tests
//!   rather than being left behind silently.

use super::core::{Store, StoreError};
use super::database::Database;
use super::sql::{Arg, Db, DbError, Value};

/// The type of a copied column, for its NULLs and flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Col {
    Int,
    Real,
    Text,
    Blob,
    /// SQLite `INTEGER` 0/1, PostgreSQL `BOOLEAN`.
    Flag,
}

/// One table copied: its name, its columns (the identity column first when
/// it has one) and whether the first column is an identity to carry over.
pub(crate) struct Table {
    pub(crate) name: &'static str,
    pub(crate) columns: &'static [(&'static str, Col)],
    pub(crate) identity: bool,
}

/// Every table of the store but `meta` (and PostgreSQL's `schema_version`
/// and [`NOT_COPIED`]),
/// in an order that satisfies the foreign keys.
pub(crate) const TABLES: &[Table] = {
    use Col::*;
    &[
        Table {
            name: "watch",
            columns: &[("id", Text), ("created_at", Int), ("last_checked", Int)],
            identity: false,
        },
        Table {
            name: "snapshot",
            columns: &[
                ("id", Int),
                ("watch", Text),
                ("taken_at", Int),
                ("hash", Text),
                ("size", Int),
                ("xml", Blob),
                ("format", Int),
            ],
            identity: true,
        },
        Table {
            name: "change_event",
            columns: &[
                ("id", Int),
                ("watch", Text),
                ("snapshot_id", Int),
                ("at", Int),
                ("kind", Text),
                ("body", Text),
            ],
            identity: true,
        },
        Table {
            name: "watch_status",
            columns: &[
                ("watch", Text),
                ("next_run", Int),
                ("etag", Text),
                ("last_modified", Text),
                ("last_attempt", Int),
                ("last_success", Int),
                ("failures", Int),
                ("failing_alerted", Flag),
                ("last_error", Text),
                ("evaluated", Text),
                ("body_hash", Text),
                ("rejected_body", Text),
                ("blocked", Text),
            ],
            identity: false,
        },
        Table {
            name: "threshold_state",
            columns: &[
                ("watch", Text),
                ("name", Text),
                ("state", Text),
                ("value", Real),
                ("node", Text),
                ("since", Int),
            ],
            identity: false,
        },
        Table {
            name: "threshold_value",
            columns: &[
                ("id", Int),
                ("watch", Text),
                ("name", Text),
                ("at", Int),
                ("value", Real),
            ],
            identity: true,
        },
        Table {
            name: "series",
            columns: &[
                ("id", Int),
                ("watch", Text),
                ("node", Text),
                ("source", Text),
                ("value", Real),
                ("at", Int),
            ],
            identity: true,
        },
        Table {
            name: "series_point",
            columns: &[("series", Int), ("at", Int), ("value", Real)],
            identity: false,
        },
        Table {
            name: "outbox",
            columns: &[
                ("id", Int),
                ("alert_id", Text),
                ("watch", Text),
                ("notifier", Text),
                ("created_at", Int),
                ("next_attempt", Int),
                ("attempts", Int),
                ("digest", Int),
                ("state", Text),
                ("last_error", Text),
                ("body", Text),
            ],
            identity: true,
        },
        Table {
            name: "digest_sent",
            columns: &[("watch", Text), ("notifier", Text), ("at", Int)],
            identity: false,
        },
        Table {
            name: "layout_state",
            columns: &[("watch", Text), ("state", Text)],
            identity: false,
        },
        Table {
            name: "session_jar",
            columns: &[
                ("name", Text),
                ("jar", Text),
                ("revision", Int),
                ("updated_at", Int),
                ("logged_in_at", Int),
            ],
            identity: false,
        },
        Table {
            name: "template_set",
            columns: &[
                ("name", Text),
                ("learned_at", Int),
                ("pages", Int),
                ("body", Text),
            ],
            identity: false,
        },
    ]
};

/// PostgreSQL's tables that are not copied: the replicas' coordination
/// (leases on runs, each host's next request start and request slots, see
/// [`super::replicas`]; the live replicas, see [`super::replicas::watch_set`]). SQLite has no counterpart, and a fresh database
/// starts with none held.
pub const NOT_COPIED: &[&str] = &[
    "watch_claim",
    "host_turn",
    "host_slot",
    "host_wait",
    "replica",
];

/// Rows read from the source at a time (snapshot blobs are the large ones).
const PAGE_ROWS: i64 = 256;

/// Why a store could not be copied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MigrateError {
    /// The source is not an SQLite store.
    #[error("the store to copy must be an SQLite file; `{0}` is a PostgreSQL database")]
    SourceNotSqlite(String),
    /// The target is not a PostgreSQL database.
    #[error("the target must be a PostgreSQL URL (postgres://...), not `{0}`")]
    TargetNotPostgres(String),
    /// The target already holds data.
    #[error(
        "the target database is not empty ({table} holds {rows} rows): \
         semclip migrate copies into an empty store only, and left it as it was"
    )]
    NotEmpty {
        /// The first table found with rows.
        table: &'static str,
        /// How many.
        rows: i64,
    },
    /// A table's rows could not be counted, read or written.
    #[error("cannot copy table {table}")]
    Table {
        /// The table.
        table: &'static str,
        /// The engine's error.
        #[source]
        source: DbError,
    },
    /// The counts differ after copying (nothing was committed).
    #[error(
        "table {table}: {source_rows} rows in the SQLite store but {copied} copied; nothing was committed"
    )]
    Mismatch {
        /// The table.
        table: &'static str,
        /// Rows in the source.
        source_rows: i64,
        /// Rows in the target after the copy.
        copied: i64,
    },
    /// Opening, or a transaction of, either store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What was copied: each table's name and row count, verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    /// `(table, rows)` in copy order.
    pub tables: Vec<(&'static str, i64)>,
}

impl Copied {
    /// Rows copied from `table`.
    pub fn rows(&self, table: &str) -> Option<i64> {
        self.tables
            .iter()
            .find(|(t, _)| *t == table)
            .map(|&(_, n)| n)
    }
}

/// Copies the SQLite store `from` into `to`, a PostgreSQL store that must
/// be empty; see the module's decisions. `progress` hears each table once
/// it is copied.
pub fn copy_store(
    from: &mut Store,
    to: &mut Store,
    mut progress: impl FnMut(&'static str, i64),
) -> Result<Copied, MigrateError> {
    if !from.is_sqlite() {
        return Err(MigrateError::SourceNotSqlite(
            from.path().display().to_string(),
        ));
    }
    if to.is_sqlite() {
        return Err(MigrateError::TargetNotPostgres(
            to.path().display().to_string(),
        ));
    }
    let from_path = from.path().to_owned();
    let to_path = to.path().to_owned();
    // The copy's own error is carried out of both transactions (each rolls
    // back on any `Err`, whose text then does not matter).
    let mut failure = None;
    let result = from.transaction(
        |source| StoreError::Database {
            path: from_path.clone(),
            action: "read every table".to_owned(),
            source,
        },
        |src| {
            to.transaction(
                |source| StoreError::Database {
                    path: to_path.clone(),
                    action: "write the copy".to_owned(),
                    source,
                },
                |dst| {
                    copy_all(src, dst, &mut progress).map_err(|e| {
                        failure = Some(e);
                        StoreError::Database {
                            path: to_path.clone(),
                            action: "copy the store".to_owned(),
                            source: DbError::NoRow,
                        }
                    })
                },
            )
        },
    );
    match failure {
        Some(e) => Err(e),
        None => Ok(result?),
    }
}

/// The copy itself, inside both transactions.
fn copy_all(
    src: Db<'_>,
    dst: Db<'_>,
    progress: &mut impl FnMut(&'static str, i64),
) -> Result<Copied, MigrateError> {
    for table in TABLES {
        let rows = count(dst, table.name)?;
        if rows > 0 {
            return Err(MigrateError::NotEmpty {
                table: table.name,
                rows,
            });
        }
    }
    let mut tables = Vec::with_capacity(TABLES.len());
    for table in TABLES {
        let source_rows = count(src, table.name)?;
        copy_table(src, dst, table)?;
        let copied = count(dst, table.name)?;
        if copied != source_rows {
            return Err(MigrateError::Mismatch {
                table: table.name,
                source_rows,
                copied,
            });
        }
        progress(table.name, copied);
        tables.push((table.name, copied));
    }
    Ok(Copied { tables })
}

fn count(db: Db<'_>, table: &'static str) -> Result<i64, MigrateError> {
    let err = |source| MigrateError::Table { table, source };
    db.query_one(&format!("SELECT COUNT(*) FROM {table}"), &[])
        .and_then(|mut row| row.get::<i64>(0))
        .map_err(err)
}

/// Copies one table page by page in SQLite's row order, then moves an
/// identity past the copied ids.
fn copy_table(src: Db<'_>, dst: Db<'_>, table: &Table) -> Result<(), MigrateError> {
    let err = |source| MigrateError::Table {
        table: table.name,
        source,
    };
    let names: Vec<&str> = table.columns.iter().map(|(n, _)| *n).collect();
    let select = format!(
        "SELECT rowid, {} FROM {} WHERE rowid > ?1 ORDER BY rowid LIMIT {PAGE_ROWS}",
        names.join(", "),
        table.name
    );
    let placeholders: Vec<String> = (1..=names.len()).map(|i| format!("?{i}")).collect();
    let insert = format!(
        "INSERT INTO {} ({}){} VALUES ({})",
        table.name,
        names.join(", "),
        if table.identity {
            " OVERRIDING SYSTEM VALUE"
        } else {
            ""
        },
        placeholders.join(", ")
    );
    let mut after = i64::MIN;
    loop {
        let rows = src.query(&select, &[Arg::Int(Some(after))]).map_err(err)?;
        let Some(last) = rows.len().checked_sub(1) else {
            break;
        };
        for (i, mut row) in rows.into_iter().enumerate() {
            let rowid: i64 = row.get(0).map_err(err)?;
            if i == last {
                after = rowid;
            }
            let values = (1..=names.len())
                .map(|c| row.get::<Value>(c))
                .collect::<Result<Vec<_>, _>>()
                .map_err(err)?;
            let args = values
                .iter()
                .zip(table.columns)
                .enumerate()
                .map(|(c, (v, &(_, col)))| arg(v, col, c + 1))
                .collect::<Result<Vec<_>, _>>()
                .map_err(err)?;
            dst.execute(&insert, &args).map_err(err)?;
        }
    }
    if table.identity {
        let id = table.columns[0].0;
        dst.query_one(
            &format!(
                "SELECT setval(pg_get_serial_sequence('{t}', '{id}'), \
                 COALESCE((SELECT MAX({id}) FROM {t}), 0) + 1, false)",
                t = table.name
            ),
            &[],
        )
        .map_err(err)?;
    }
    Ok(())
}

/// A value read from SQLite as the argument for a column of type `col`.
fn arg(value: &Value, col: Col, column: usize) -> Result<Arg<'_>, DbError> {
    let wrong = || DbError::Value {
        column,
        message: format!("{value:?} does not fit a {col:?} column"),
    };
    Ok(match (value, col) {
        (Value::Null, Col::Int) => Arg::Int(None),
        (Value::Null, Col::Real) => Arg::Real(None),
        (Value::Null, Col::Text) => Arg::Text(None),
        (Value::Int(v), Col::Int) => Arg::Int(Some(*v)),
        (Value::Int(v), Col::Real) => Arg::Real(Some(*v as f64)),
        (Value::Real(v), Col::Real) => Arg::Real(Some(*v)),
        (Value::Text(t), Col::Text) => Arg::Text(Some(t)),
        (Value::Blob(b), Col::Blob) => Arg::Blob(b),
        (Value::Int(v), Col::Flag) => Arg::Bool(*v != 0),
        (Value::Bool(v), Col::Flag) => Arg::Bool(*v),
        _ => return Err(wrong()),
    })
}

/// Opens the target named by `database` for [`copy_store`]: PostgreSQL
/// only, migrated to the current schema (an empty database gets it).
pub fn open_target(database: &Database) -> Result<Store, MigrateError> {
    match database {
        Database::Sqlite(path) => Err(MigrateError::TargetNotPostgres(path.display().to_string())),
        Database::Postgres(_) => Ok(Store::open_database(database)?),
    }
}

/// The tables and columns [`copy_store`] copies, in copy order (for tests
/// that hold them against a schema).
pub fn copied_tables() -> impl Iterator<Item = (&'static str, Vec<&'static str>)> {
    TABLES
        .iter()
        .map(|t| (t.name, t.columns.iter().map(|(n, _)| *n).collect()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]
mod tests {
    use super::*;

    #[test]
    fn the_copied_tables_are_every_table_and_column_of_the_sqlite_schema() {
        let store = Store::open_in_memory().unwrap();
        let db = store.db();
        let mut schema: Vec<(String, Vec<String>)> = Vec::new();
        let names = db
            .query(
                "SELECT name FROM sqlite_master WHERE type = 'table' \
                 AND name NOT IN ('meta', 'sqlite_sequence') ORDER BY name",
                &[],
            )
            .unwrap();
        for mut row in names {
            let name: String = row.get(0).unwrap();
            let columns = db
                .query(
                    "SELECT name FROM pragma_table_info(?1) ORDER BY cid",
                    &[Arg::Text(Some(&name))],
                )
                .unwrap()
                .into_iter()
                .map(|mut r| r.get::<String>(0).unwrap())
                .collect();
            schema.push((name, columns));
        }
        let mut copied: Vec<(String, Vec<String>)> = copied_tables()
            .map(|(t, cols)| (t.to_owned(), cols.into_iter().map(str::to_owned).collect()))
            .collect();
        copied.sort();
        assert_eq!(copied, schema);
    }

    #[test]
    fn values_take_their_column_s_type_flags_and_nulls_included() {
        assert!(matches!(
            arg(&Value::Int(1), Col::Flag, 1),
            Ok(Arg::Bool(true))
        ));
        assert!(matches!(
            arg(&Value::Int(0), Col::Flag, 1),
            Ok(Arg::Bool(false))
        ));
        assert!(matches!(arg(&Value::Null, Col::Int, 1), Ok(Arg::Int(None))));
        assert!(matches!(
            arg(&Value::Null, Col::Real, 1),
            Ok(Arg::Real(None))
        ));
        assert!(matches!(
            arg(&Value::Null, Col::Text, 1),
            Ok(Arg::Text(None))
        ));
        assert!(matches!(arg(&Value::Int(3), Col::Real, 1), Ok(Arg::Real(Some(v))) if v == 3.0));
        let e = arg(&Value::Text("x".into()), Col::Int, 4).unwrap_err();
        assert!(e.to_string().starts_with("column 4:"), "{e}");
        assert!(arg(&Value::Null, Col::Blob, 1).is_err());
    }
}

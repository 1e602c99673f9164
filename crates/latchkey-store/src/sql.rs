//! Statements written once for both engines, and the values bound to them.
//!
//! A [`Sql`] holds one statement in a portable form: PostgreSQL's `$N` placeholders, and the few words that
//! differ between the engines written as tokens. [`Sql::sqlite`] and [`Sql::postgres`] translate it once, on
//! first use, and keep the result: every difference of text between the engines is in [`translate`].
//!
//! The differences of type are in [`Value`]: a grant id is bound as text on SQLite (its encoded form, as the
//! earlier schemas stored it) and as its 16 raw bytes on PostgreSQL; booleans are integers on SQLite. Rows are
//! read back by column name through [`StoreRow`](crate::rows::StoreRow), written once for both.

use latchkey_core::access_token::GrantId;
use latchkey_core::time::UnixTime;
use std::borrow::Cow;
use std::sync::OnceLock;

/// The token for the order in which grants were issued: SQLite's `rowid`, PostgreSQL's `seq` column (neither
/// engine has the other's).
const ISSUE_ORDER: &str = "{issue_order}";

/// The token for the first single-use value kept without its expiry in front (the byte 0xFF), a literal so that
/// each engine's planner matches it with the partial index over those values.
const UNTIMED_FROM: &str = "{untimed_from}";

/// One statement, written once; a `static` item, so that its translations are made once.
#[derive(Debug)]
pub(crate) struct Sql {
    text: &'static str,
    /// How PostgreSQL runs it when it reads one row ([`Sql::scanning`], [`Sql::by_key`]).
    read: Read,
    sqlite: OnceLock<String>,
    postgres: OnceLock<String>,
}

/// How a read of one row runs on PostgreSQL (`postgres/shared.rs`, `postgres/batch.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Read {
    /// On a shared connection, pipelined with other requests' statements.
    Shared,
    /// On a pooled connection ([`Sql::scanning`]).
    Scanning,
    /// With other requests' reads of the same statement, in one statement ([`Sql::by_key`]).
    ByKey,
}

/// An engine, for the translation of a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// SQLite: `?N` placeholders; grants ordered by `rowid`.
    Sqlite,
    /// PostgreSQL: `$N` placeholders; grants ordered by `seq`.
    Postgres,
}

impl Sql {
    /// A statement in the portable form.
    pub(crate) const fn new(text: &'static str) -> Self {
        Self::of(text, Read::Shared)
    }

    /// A read of one row that may scan many to find it (a count, a search through a backlog): PostgreSQL runs it
    /// on a pooled connection, not ahead of other requests' reads on a shared one (`postgres/shared.rs`).
    pub(crate) const fn scanning(text: &'static str) -> Self {
        Self::of(text, Read::Scanning)
    }

    /// A read of at most one row found by one key, `$1`, its only parameter, bound as bytes (a grant by its id, a
    /// code by its hash): the hot paths' reads. PostgreSQL answers the reads of it that many requests make at once
    /// in one statement (`postgres/batch.rs`); SQLite runs it as written.
    pub(crate) const fn by_key(text: &'static str) -> Self {
        Self::of(text, Read::ByKey)
    }

    const fn of(text: &'static str, read: Read) -> Self {
        Self { text, read, sqlite: OnceLock::new(), postgres: OnceLock::new() }
    }

    /// How PostgreSQL runs it as a read of one row.
    pub(crate) const fn read(&self) -> Read {
        self.read
    }

    /// The statement for SQLite.
    pub(crate) fn sqlite(&'static self) -> &'static str {
        self.sqlite.get_or_init(|| translate(self.text, Dialect::Sqlite))
    }

    /// The statement for PostgreSQL.
    pub(crate) fn postgres(&'static self) -> &'static str {
        self.postgres.get_or_init(|| translate(self.text, Dialect::Postgres))
    }
}

/// Words only PostgreSQL reads (row locks for its writers side by side; SQLite's single writer needs none):
/// `{pg: FOR UPDATE SKIP LOCKED}`.
const PG_ONLY: &str = "{pg:";

/// `{pg: words}` as the engine reads it: the words on PostgreSQL, nothing on SQLite.
fn pg_only(text: &str, dialect: Dialect) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(PG_ONLY) {
        out.push_str(&rest[..start]);
        let inner = &rest[start + PG_ONLY.len()..];
        let end = inner.find('}').unwrap_or(inner.len());
        if dialect == Dialect::Postgres {
            out.push_str(inner[..end].trim());
        }
        rest = inner.get(end + 1..).unwrap_or("");
    }
    out.push_str(rest);
    out
}

/// The portable text in an engine's dialect: `$N` becomes `?N` for SQLite, and the tokens their engine's words.
pub(crate) fn translate(text: &str, dialect: Dialect) -> String {
    let text = pg_only(text, dialect);
    let text = text.replace(
        ISSUE_ORDER,
        match dialect {
            Dialect::Sqlite => "rowid",
            Dialect::Postgres => "seq",
        },
    );
    let text = text.replace(
        UNTIMED_FROM,
        match dialect {
            Dialect::Sqlite => "X'FF'",
            Dialect::Postgres => "'\\xff'::bytea",
        },
    );
    match dialect {
        Dialect::Postgres => text,
        Dialect::Sqlite => {
            let mut out = String::with_capacity(text.len());
            let mut chars = text.chars().peekable();
            while let Some(c) = chars.next() {
                let placeholder = c == '$' && chars.peek().is_some_and(char::is_ascii_digit);
                out.push(if placeholder { '?' } else { c });
            }
            out
        }
    }
}

/// A value bound to a statement. Every variant carries its type even when null, so that PostgreSQL is told
/// the type of each parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    /// An integer (times are Unix seconds).
    Int(Option<i64>),
    /// A boolean.
    Bool(Option<bool>),
    /// Text.
    Text(Option<Cow<'a, str>>),
    /// Bytes (hashes).
    Bytes(Option<Cow<'a, [u8]>>),
    /// A grant id, in each engine's column type.
    Grant(GrantId),
}

/// The values bound to one statement, in placeholder order.
pub(crate) type Args<'a> = Vec<Value<'a>>;

/// The values of a statement: `args![a, b, c]`.
macro_rules! args {
    ($($v:expr),* $(,)?) => { vec![$($crate::sql::Value::from($v)),*] };
}
pub(crate) use args;

impl Value<'_> {
    /// The value with its own copy of borrowed data.
    pub(crate) fn into_owned(self) -> Value<'static> {
        match self {
            Self::Int(v) => Value::Int(v),
            Self::Bool(v) => Value::Bool(v),
            Self::Text(v) => Value::Text(v.map(|t| Cow::Owned(t.into_owned()))),
            Self::Bytes(v) => Value::Bytes(v.map(|b| Cow::Owned(b.into_owned()))),
            Self::Grant(g) => Value::Grant(g),
        }
    }
}

/// Every value of a statement with its own copy of borrowed data (for a write sent to another thread).
pub(crate) fn owned(args: Args<'_>) -> Args<'static> {
    args.into_iter().map(Value::into_owned).collect()
}

macro_rules! value_from {
    ($variant:ident: $($t:ty => $f:expr),* $(,)?) => {$(
        impl<'a> From<$t> for Value<'a> {
            fn from(v: $t) -> Self {
                Self::$variant($f(v))
            }
        }
    )*};
}

value_from!(Int:
    i64 => Some,
    Option<i64> => std::convert::identity,
    UnixTime => |t: UnixTime| Some(t.0),
    Option<UnixTime> => |t: Option<UnixTime>| t.map(|t| t.0),
);
value_from!(Bool: bool => Some, Option<bool> => std::convert::identity);
value_from!(Text:
    &'a str => |s| Some(Cow::Borrowed(s)),
    &'a String => |s: &'a String| Some(Cow::Borrowed(s.as_str())),
    String => |s| Some(Cow::Owned(s)),
    Option<&'a str> => |s: Option<&'a str>| s.map(Cow::Borrowed),
    &'a Option<String> => |s: &'a Option<String>| s.as_deref().map(Cow::Borrowed),
    Option<String> => |s: Option<String>| s.map(Cow::Owned),
);
value_from!(Bytes:
    &'a [u8] => |b| Some(Cow::Borrowed(b)),
    &'a Vec<u8> => |b: &'a Vec<u8>| Some(Cow::Borrowed(b.as_slice())),
    Vec<u8> => |b| Some(Cow::Owned(b)),
    Option<&'a [u8]> => |b: Option<&'a [u8]>| b.map(Cow::Borrowed),
);
value_from!(Grant: &GrantId => |g: &GrantId| *g);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_for_postgresql_only_are_left_out_on_sqlite() {
        let text = "SELECT id FROM t LIMIT $1 {pg: FOR UPDATE SKIP LOCKED}) AND x";
        assert_eq!(translate(text, Dialect::Sqlite), "SELECT id FROM t LIMIT ?1 ) AND x");
        assert_eq!(translate(text, Dialect::Postgres), "SELECT id FROM t LIMIT $1 FOR UPDATE SKIP LOCKED) AND x");
    }

    #[test]
    fn sqlite_placeholders_are_numbered_as_postgres_ones() {
        let text = "UPDATE t SET a = $2 WHERE b = $1 AND c = $12 AND d = '$' ORDER BY {issue_order}";
        assert_eq!(
            translate(text, Dialect::Sqlite),
            "UPDATE t SET a = ?2 WHERE b = ?1 AND c = ?12 AND d = '$' ORDER BY rowid"
        );
        assert_eq!(
            translate(text, Dialect::Postgres),
            "UPDATE t SET a = $2 WHERE b = $1 AND c = $12 AND d = '$' ORDER BY seq"
        );
    }

    #[test]
    fn a_statement_is_translated_once_per_engine() {
        static S: Sql = Sql::new("SELECT $1");
        assert!(std::ptr::eq(S.sqlite(), S.sqlite()));
        assert_eq!(S.sqlite(), "SELECT ?1");
        assert_eq!(S.postgres(), "SELECT $1");
    }

    #[test]
    fn nulls_keep_their_type() {
        let none: Option<&str> = None;
        assert_eq!(args![none, None::<UnixTime>], vec![Value::Text(None), Value::Int(None)]);
    }
}

//! The store's values as PostgreSQL parameters: each declared with its type when its statement is prepared
//! (`INT8`, `BOOL`, `TEXT`, `BYTEA`), so that the server casts where a column differs, and written in the binary
//! format.

use crate::sql::Value;
use bytes::BytesMut;
use std::error::Error;
use tokio_postgres::types::{to_sql_checked, IsNull, ToSql, Type};

impl Value<'_> {
    /// The type the value is declared as.
    pub(super) fn pg_type(&self) -> Type {
        match self {
            Value::Int(_) => Type::INT8,
            Value::Bool(_) => Type::BOOL,
            Value::Text(_) => Type::TEXT,
            Value::Bytes(_) | Value::Grant(_) => Type::BYTEA,
        }
    }
}

impl ToSql for Value<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            Value::Int(v) => v.to_sql(ty, out),
            Value::Bool(v) => v.to_sql(ty, out),
            Value::Text(v) => v.as_deref().to_sql(ty, out),
            Value::Bytes(v) => v.as_deref().to_sql(ty, out),
            Value::Grant(g) => (&g.0[..]).to_sql(ty, out),
        }
    }

    /// Any type: the statement was prepared with the value's own ([`Value::pg_type`]).
    fn accepts(_ty: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

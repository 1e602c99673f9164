//! APIs registered as resources, with their scopes. A registration and each change to its scopes is one unit:
//! the checks that a resource identifier and scope names are free, and the choice of each new scope's bit, are
//! made where they are written, so two registrations at once cannot take the same name or bit.

use crate::db::{rows as rows_of, BoxFuture, Db, Durability, Engine, Outcome, Tx};
use crate::rows::{secrets_from_json, secrets_json, StoreRow};
use crate::sql::{args, Sql};
use crate::{StoreError, StoreResult};
use async_trait::async_trait;
use latchkey_core::client::ClientSecret;
use latchkey_core::resource::{
    free_bit, Resource, ResourceRefusal, ResourceScope, TokenFormat, Visibility, BIT_QUARANTINE,
};
use latchkey_core::time::UnixTime;

/// A change to a registered API: each field given is changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceUpdate {
    /// A new name.
    pub name: Option<String>,
    /// Who may now ask for its scopes.
    pub visibility: Option<Visibility>,
    /// The access-token format it now wants.
    pub token_format: Option<TokenFormat>,
    /// Scopes to add (name, description), or whose description to change.
    pub scopes: Vec<(String, String)>,
    /// Scopes to take away, by name: retired, their bits held back from new scopes for a while.
    pub remove_scopes: Vec<String>,
}

/// Registered APIs.
#[async_trait]
pub trait Resources: Send + Sync {
    /// Registers an API with its scopes (`resource.scopes`' bits are chosen here, the lowest free ones): the
    /// registration as stored, or why not.
    async fn create_resource(
        &self,
        resource: &Resource,
        now: UnixTime,
    ) -> StoreResult<Result<Resource, ResourceRefusal>>;
    /// An API by its id.
    async fn resource(&self, id: &str) -> StoreResult<Option<Resource>>;
    /// Every API of a project, oldest first.
    async fn project_resources(&self, project_id: &str) -> StoreResult<Vec<Resource>>;
    /// Every API of the deployment, oldest first (what the scope registry is built from).
    async fn all_resources(&self) -> StoreResult<Vec<Resource>>;
    /// Changes an API: `None` for an unknown one.
    async fn update_resource(
        &self,
        id: &str,
        update: &ResourceUpdate,
        now: UnixTime,
    ) -> StoreResult<Result<Option<Resource>, ResourceRefusal>>;
    /// Deletes an API and retires its scopes: false for an unknown one.
    async fn delete_resource(&self, id: &str, now: UnixTime) -> StoreResult<bool>;
    /// Replaces an API's introspection secrets with `after`, only if they are still `before`.
    async fn set_resource_secrets(
        &self,
        id: &str,
        before: &[ClientSecret],
        after: &[ClientSecret],
    ) -> StoreResult<bool>;
}

/// The columns [`resource_from_row`] reads, and the table.
macro_rules! select_resources {
    ($rest:literal) => {
        concat!(
            "SELECT id, project_id, uri, name, visibility, token_format, secrets, created_at FROM resources ",
            $rest
        )
    };
}
static BY_ID: Sql = Sql::new(select_resources!("WHERE id = $1"));
static OF_PROJECT: Sql = Sql::new(select_resources!("WHERE project_id = $1 ORDER BY created_at, id"));
static ALL: Sql = Sql::new(select_resources!("ORDER BY created_at, id"));
static SCOPES_OF: Sql =
    Sql::new("SELECT bit, resource_id, name, description FROM resource_scopes WHERE resource_id = $1 ORDER BY bit");
static LIVE_SCOPES: Sql = Sql::new(
    "SELECT bit, resource_id, name, description FROM resource_scopes WHERE resource_id IS NOT NULL ORDER BY bit",
);
static URI_TAKEN: Sql = Sql::new("SELECT COUNT(*) FROM resources WHERE uri = $1");
static NAME_HOLDER: Sql = Sql::new("SELECT bit, resource_id, name, description FROM resource_scopes WHERE name = $1");
/// Rows of bits free again: retired long enough ago, or left without their API (a project removed for good).
static FORGET_FREE: Sql =
    Sql::new("DELETE FROM resource_scopes WHERE resource_id IS NULL AND (retired_at IS NULL OR retired_at <= $1)");
static HELD_BITS: Sql = Sql::new("SELECT bit, retired_at FROM resource_scopes");
static INSERT: Sql = Sql::new(
    "INSERT INTO resources (id, project_id, uri, name, visibility, token_format, secrets, created_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
);
static INSERT_SCOPE: Sql =
    Sql::new("INSERT INTO resource_scopes (bit, resource_id, name, description) VALUES ($1, $2, $3, $4)");
static DESCRIBE: Sql = Sql::new("UPDATE resource_scopes SET description = $3 WHERE resource_id = $1 AND name = $2");
static RETIRE: Sql = Sql::new(
    "UPDATE resource_scopes SET resource_id = NULL, name = NULL, retired_at = $3 WHERE resource_id = $1 AND name = $2",
);
static RETIRE_ALL: Sql =
    Sql::new("UPDATE resource_scopes SET resource_id = NULL, name = NULL, retired_at = $2 WHERE resource_id = $1");
/// The bits of one scope of an API (`$1`, `$2` its name) and of all of them (`$1`), as one mask.
static BITS_OF_ONE: Sql = Sql::new(
    "SELECT COALESCE(CAST(SUM(CAST(1 AS BIGINT) << CAST(bit AS INTEGER)) AS BIGINT), 0) FROM resource_scopes \
     WHERE resource_id = $1 AND name = $2",
);
static BITS_OF_ALL: Sql = Sql::new(
    "SELECT COALESCE(CAST(SUM(CAST(1 AS BIGINT) << CAST(bit AS INTEGER)) AS BIGINT), 0) FROM resource_scopes \
     WHERE resource_id = $1",
);
/// Every scope set a retired bit may stand in (`$1` the bits, `$2` their complement): grants (so that no refresh
/// carries it on), codes and device codes not yet redeemed, organisations' restrictions and app settings.
static FORGET_BITS: [Sql; 5] = [
    Sql::new("UPDATE grants SET scopes = scopes & $2 WHERE (scopes & $1) <> 0"),
    Sql::new("UPDATE auth_codes SET scopes = scopes & $2 WHERE (scopes & $1) <> 0"),
    Sql::new("UPDATE device_codes SET scopes = scopes & $2 WHERE (scopes & $1) <> 0"),
    Sql::new("UPDATE orgs SET restricted_scopes = restricted_scopes & $2 WHERE (restricted_scopes & $1) <> 0"),
    Sql::new("UPDATE org_apps SET scopes = scopes & $2 WHERE (scopes & $1) <> 0"),
];
static SET_FIELDS: Sql = Sql::new(
    "UPDATE resources SET name = COALESCE($2, name), visibility = COALESCE($3, visibility), \
     token_format = COALESCE($4, token_format) WHERE id = $1",
);
static DELETE: Sql = Sql::new("DELETE FROM resources WHERE id = $1");
static SET_SECRETS: Sql = Sql::new("UPDATE resources SET secrets = $3 WHERE id = $1 AND secrets = $2");

fn resource_from_row(r: &dyn StoreRow) -> StoreResult<Resource> {
    let bad = |what: &str, v: String| StoreError::Other(format!("resource {what} {v}"));
    let visibility = r.text("visibility")?;
    let token_format = r.text("token_format")?;
    Ok(Resource {
        id: r.text("id")?,
        project_id: r.text("project_id")?,
        uri: r.text("uri")?,
        name: r.text("name")?,
        visibility: Visibility::parse(&visibility).ok_or_else(|| bad("visibility", visibility.clone()))?,
        token_format: TokenFormat::parse(&token_format).ok_or_else(|| bad("token format", token_format.clone()))?,
        scopes: Vec::new(),
        secrets: secrets_from_json(&r.text("secrets")?)?,
        created_at: UnixTime(r.int("created_at")?),
    })
}

/// A live scope row: its API's id and the scope.
fn scope_from_row(r: &dyn StoreRow) -> StoreResult<(String, ResourceScope)> {
    let bit = u32::try_from(r.int("bit")?).map_err(|_| StoreError::Other("scope bit out of range".into()))?;
    let scope = ResourceScope { bit, name: r.text("name")?, description: r.text("description")? };
    Ok((r.opt_text("resource_id")?.unwrap_or_default(), scope))
}

fn held_from_row(r: &dyn StoreRow) -> StoreResult<(u32, Option<UnixTime>)> {
    let bit = u32::try_from(r.int("bit")?).map_err(|_| StoreError::Other("scope bit out of range".into()))?;
    Ok((bit, r.opt_int("retired_at")?.map(UnixTime)))
}

/// Hands each API its scopes.
fn with_scopes(mut resources: Vec<Resource>, scopes: Vec<(String, ResourceScope)>) -> Vec<Resource> {
    for (id, scope) in scopes {
        if let Some(r) = resources.iter_mut().find(|r| r.id == id) {
            r.scopes.push(scope);
        }
    }
    resources
}

/// Inside a unit: adds `scopes` to the API `id`, each on the lowest free bit; a description given again for a
/// scope the API has is its new description. Refused for a name another API holds.
async fn add_scopes(
    tx: &mut dyn Tx,
    id: &str,
    scopes: &[(String, String)],
    now: UnixTime,
) -> StoreResult<Result<(), ResourceRefusal>> {
    tx.exec(&FORGET_FREE, args![now.0 - BIT_QUARANTINE]).await?;
    let held = rows_of(tx, &HELD_BITS, args![], held_from_row).await?;
    let mut used: Vec<u32> = held.iter().filter(|(_, retired)| retired.is_none()).map(|(bit, _)| *bit).collect();
    let retired: Vec<(u32, UnixTime)> = held.iter().filter_map(|(bit, at)| at.map(|at| (*bit, at))).collect();
    for (name, description) in scopes {
        match rows_of(tx, &NAME_HOLDER, args![name], scope_from_row).await?.pop() {
            Some((holder, _)) if holder == id => {
                tx.exec(&DESCRIBE, args![id, name, description]).await?;
            }
            Some(_) => return Ok(Err(ResourceRefusal::ScopeTaken(name.clone()))),
            None => {
                let Some(bit) = free_bit(&used, &retired, now) else { return Ok(Err(ResourceRefusal::NoFreeBit)) };
                tx.exec(&INSERT_SCOPE, args![i64::from(bit), id, name, description]).await?;
                used.push(bit);
            }
        }
    }
    Ok(Ok(()))
}

/// The unit of a registration.
fn create<'t>(
    tx: &'t mut dyn Tx,
    (r, now): &'t (Resource, UnixTime),
) -> BoxFuture<'t, StoreResult<Outcome<Result<(), ResourceRefusal>>>> {
    Box::pin(async move {
        if tx.scalar(&URI_TAKEN, args![&r.uri]).await?.unwrap_or(0) > 0 {
            return Ok(Outcome::Discard(Err(ResourceRefusal::UriTaken)));
        }
        let secrets = secrets_json(&r.secrets)?;
        let mut row = args![&r.id, &r.project_id, &r.uri, &r.name, r.visibility.as_str(), r.token_format.as_str()];
        row.extend(args![&secrets, r.created_at]);
        tx.exec(&INSERT, row).await?;
        let scopes: Vec<(String, String)> = r.scopes.iter().map(|s| (s.name.clone(), s.description.clone())).collect();
        Ok(match add_scopes(tx, &r.id, &scopes, *now).await? {
            Ok(()) => Outcome::Keep(Ok(())),
            Err(refusal) => Outcome::Discard(Err(refusal)),
        })
    })
}

/// The unit of a change.
fn update<'t>(
    tx: &'t mut dyn Tx,
    (id, u, now): &'t (String, ResourceUpdate, UnixTime),
) -> BoxFuture<'t, StoreResult<Outcome<Result<bool, ResourceRefusal>>>> {
    Box::pin(async move {
        let fields = args![id, &u.name, u.visibility.map(Visibility::as_str), u.token_format.map(TokenFormat::as_str)];
        if tx.exec(&SET_FIELDS, fields).await? == 0 {
            return Ok(Outcome::Discard(Ok(false)));
        }
        for name in &u.remove_scopes {
            let bits = tx.scalar(&BITS_OF_ONE, args![id, name]).await?;
            forget(tx, bits).await?;
            tx.exec(&RETIRE, args![id, name, *now]).await?;
        }
        Ok(match add_scopes(tx, id, &u.scopes, *now).await? {
            Ok(()) => Outcome::Keep(Ok(true)),
            Err(refusal) => Outcome::Discard(Err(refusal)),
        })
    })
}

/// The unit of a deletion: the scopes retired, then the API.
fn delete<'t>(tx: &'t mut dyn Tx, (id, now): &'t (String, UnixTime)) -> BoxFuture<'t, StoreResult<Outcome<bool>>> {
    Box::pin(async move {
        let bits = tx.scalar(&BITS_OF_ALL, args![id]).await?;
        forget(tx, bits).await?;
        tx.exec(&RETIRE_ALL, args![id, *now]).await?;
        Ok(Outcome::Keep(tx.exec(&DELETE, args![id]).await? > 0))
    })
}

/// Takes retired bits out of every scope set that holds them, in the unit that retires them: a bit given to a new
/// scope later never stands for it in what was granted, asked for or set before.
async fn forget(tx: &mut dyn Tx, bits: Option<i64>) -> StoreResult<()> {
    let Some(bits) = bits.filter(|b| *b != 0) else { return Ok(()) };
    for sql in &FORGET_BITS {
        tx.exec(sql, args![bits, !bits]).await?;
    }
    Ok(())
}

#[async_trait]
impl<E: Engine> Resources for Db<E> {
    async fn create_resource(&self, r: &Resource, now: UnixTime) -> StoreResult<Result<Resource, ResourceRefusal>> {
        let made = self.engine.unit(Durability::Durable, create, (r.clone(), now)).await;
        match made {
            Ok(Ok(())) => {}
            Ok(Err(refusal)) => return Ok(Err(refusal)),
            // Another registration took the identifier or a name between the check and the write.
            Err(StoreError::Conflict(_)) => return Ok(Err(ResourceRefusal::UriTaken)),
            Err(e) => return Err(e),
        }
        let stored = self.resource(&r.id).await?;
        stored.map(Ok).ok_or_else(|| StoreError::Other("a registered API vanished".into()))
    }

    async fn resource(&self, id: &str) -> StoreResult<Option<Resource>> {
        let Some(r) = self.engine.one(&BY_ID, args![id], resource_from_row).await? else { return Ok(None) };
        let scopes = self.engine.all(&SCOPES_OF, args![id], scope_from_row).await?;
        Ok(with_scopes(vec![r], scopes).pop())
    }

    async fn project_resources(&self, project_id: &str) -> StoreResult<Vec<Resource>> {
        let resources = self.engine.all(&OF_PROJECT, args![project_id], resource_from_row).await?;
        let scopes = self.engine.all(&LIVE_SCOPES, args![], scope_from_row).await?;
        Ok(with_scopes(resources, scopes))
    }

    async fn all_resources(&self) -> StoreResult<Vec<Resource>> {
        let resources = self.engine.all(&ALL, args![], resource_from_row).await?;
        let scopes = self.engine.all(&LIVE_SCOPES, args![], scope_from_row).await?;
        Ok(with_scopes(resources, scopes))
    }

    async fn update_resource(
        &self,
        id: &str,
        u: &ResourceUpdate,
        now: UnixTime,
    ) -> StoreResult<Result<Option<Resource>, ResourceRefusal>> {
        match self.engine.unit(Durability::Durable, update, (id.to_owned(), u.clone(), now)).await? {
            Ok(true) => Ok(Ok(self.resource(id).await?)),
            Ok(false) => Ok(Ok(None)),
            Err(refusal) => Ok(Err(refusal)),
        }
    }

    async fn delete_resource(&self, id: &str, now: UnixTime) -> StoreResult<bool> {
        self.engine.unit(Durability::Durable, delete, (id.to_owned(), now)).await
    }

    async fn set_resource_secrets(
        &self,
        id: &str,
        before: &[ClientSecret],
        after: &[ClientSecret],
    ) -> StoreResult<bool> {
        let (before, after) = (secrets_json(before)?, secrets_json(after)?);
        self.exec_one(&SET_SECRETS, args![id, &before, &after]).await
    }
}

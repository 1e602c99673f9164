//! People: user accounts with the channel each has, their browser sessions, and the throttling of failed
//! sign-ins. Changes to an account (disable, enable, delete, a new password) are `Accounts::change_account`'s,
//! which records their events.

use crate::db::{BoxFuture, Db, Durability, Engine, Outcome, Tx};
use crate::records::{Channel, NewUser, Session, User};
use crate::rows::{self, StoreRow};
use crate::sql::{args, Sql};
use crate::StoreResult;
use async_trait::async_trait;
use latchkey_core::time::UnixTime;

/// Users, their sessions and sign-in throttling.
#[async_trait]
pub trait Users: Send + Sync {
    /// Creates a user with the channel every account has.
    async fn create_user(&self, user: &NewUser, channel: &Channel) -> StoreResult<()>;
    /// A user by id.
    async fn user(&self, id: &str) -> StoreResult<Option<User>>;
    /// A user by e-mail address (case-insensitive).
    async fn user_by_email(&self, email: &str) -> StoreResult<Option<User>>;
    /// Every user.
    async fn users(&self) -> StoreResult<Vec<User>>;
    /// The user's channel.
    async fn channel_of(&self, user_id: &str) -> StoreResult<Option<Channel>>;

    /// Stores a browser session.
    async fn create_session(&self, session: &Session) -> StoreResult<()>;
    /// A live session by the hash of its token.
    async fn session(&self, token_hash: &[u8], now: UnixTime) -> StoreResult<Option<Session>>;
    /// Ends a session.
    async fn delete_session(&self, token_hash: &[u8]) -> StoreResult<()>;

    /// Counts a sign-in attempt under each key, before its password is checked, in one write: each count is the
    /// attempt's number in its key's window, so concurrent attempts never share one. A window that reached its
    /// limit is followed by one twice as long (see [`LoginWindows`]).
    async fn record_login_attempts(
        &self,
        keys: &[(&str, u32)],
        now: UnixTime,
        windows: LoginWindows,
    ) -> StoreResult<Vec<LoginCount>>;
    /// Attempts counted under `key` in its current window.
    async fn login_failures(&self, key: &str, now: UnixTime) -> StoreResult<u32>;
    /// Takes one attempt back from each key (one that succeeded, or that was never checked).
    async fn forgive_login_attempts(&self, keys: &[&str]) -> StoreResult<()>;
    /// Forgets the attempts under `key`.
    async fn clear_login_failures(&self, key: &str) -> StoreResult<()>;
}

/// The longest a throttling window may last: a day.
pub const LONGEST_LOGIN_WINDOW: i64 = 86_400;

/// How long throttling windows last: `base` seconds, and after a window that reached its limit, twice the last
/// one, up to `longest`. A key left alone for a window's length after its window ends starts again at `base`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginWindows {
    /// The first window's length, in seconds.
    pub base: i64,
    /// The longest window, in seconds.
    pub longest: i64,
}

/// An attempt's place in its key's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginCount {
    /// The attempts in the window, this one included.
    pub count: u32,
    /// When the window ends.
    pub until: UnixTime,
}

/// Inserts a user (and, by its address's domain, its membership of an organisation).
pub(crate) static INSERT_USER: Sql =
    Sql::new("INSERT INTO users (id, email, name, password_hash, created_at) VALUES ($1, $2, $3, $4, $5)");
/// Inserts a channel.
pub(crate) static INSERT_CHANNEL: Sql =
    Sql::new("INSERT INTO channels (id, user_id, title, description, created_at) VALUES ($1, $2, $3, $4, $5)");
/// A new account joins the organisation that claimed its address's domain, if any.
static JOIN_BY_DOMAIN: Sql = Sql::new(
    "INSERT INTO org_members (user_id, org_id, admin, via, added_at) \
     SELECT $1, org_id, $4, 'domain', $3 FROM org_domains WHERE domain = $2",
);
static USER: Sql = Sql::new("SELECT * FROM users WHERE id = $1");
/// Both engines index `lower(email)`.
static USER_BY_EMAIL: Sql = Sql::new("SELECT * FROM users WHERE lower(email) = lower($1)");
static USERS: Sql = Sql::new("SELECT * FROM users ORDER BY created_at, id");
static CHANNEL_OF: Sql =
    Sql::new("SELECT id, user_id, title, description, created_at FROM channels WHERE user_id = $1");

static CREATE_SESSION: Sql =
    Sql::new("INSERT INTO sessions (token_hash, user_id, created_at, expires_at, method) VALUES ($1, $2, $3, $4, $5)");
static SESSION: Sql = Sql::new(
    "SELECT s.token_hash, s.user_id, s.created_at, s.expires_at, s.method FROM sessions s JOIN users u ON u.id = s.user_id \
     WHERE s.token_hash = $1 AND s.expires_at > $2 AND u.disabled_at IS NULL",
);
static DELETE_SESSION: Sql = Sql::new("DELETE FROM sessions WHERE token_hash = $1");

/// `$3` the base window, `$4` the key's limit, `$5` the longest window. Every expression reads the row as it was.
static RECORD_LOGIN_ATTEMPT: Sql = Sql::new(
    "INSERT INTO login_failures AS f (key, count, window_start, window_secs) VALUES ($1, 1, $2, $3) \
     ON CONFLICT (key) DO UPDATE SET \
     count = CASE WHEN f.window_start + f.window_secs <= $2 THEN 1 ELSE f.count + 1 END, \
     window_secs = CASE WHEN f.window_start + f.window_secs > $2 THEN f.window_secs \
       WHEN f.count >= $4 AND f.window_start + 2 * f.window_secs > $2 \
         THEN CASE WHEN 2 * f.window_secs < $5 THEN 2 * f.window_secs ELSE $5 END \
       ELSE $3 END, \
     window_start = CASE WHEN f.window_start + f.window_secs <= $2 THEN $2 ELSE f.window_start END \
     RETURNING count, window_start + window_secs AS until",
);
static LOGIN_FAILURES: Sql =
    Sql::new("SELECT count FROM login_failures WHERE key = $1 AND window_start + window_secs > $2");
static FORGIVE_LOGIN_ATTEMPT: Sql =
    Sql::new("UPDATE login_failures SET count = count - 1 WHERE key = $1 AND count > 0");
static CLEAR_LOGIN_FAILURES: Sql = Sql::new("DELETE FROM login_failures WHERE key = $1");

/// Inserts a user and their channel.
pub(crate) async fn insert_user(tx: &mut dyn Tx, u: &NewUser, ch: &Channel) -> StoreResult<()> {
    tx.exec(&INSERT_USER, args![&u.id, &u.email, &u.name, &u.password_hash, u.created_at]).await?;
    tx.exec(&INSERT_CHANNEL, args![&ch.id, &ch.user_id, &ch.title, &ch.description, ch.created_at]).await?;
    let domain = latchkey_core::org::email_domain(&u.email);
    tx.exec(&JOIN_BY_DOMAIN, args![&u.id, domain, u.created_at, false]).await?;
    Ok(())
}

fn create<'t>(tx: &'t mut dyn Tx, (u, ch): &'t (NewUser, Channel)) -> BoxFuture<'t, StoreResult<Outcome<()>>> {
    Box::pin(async move { insert_user(tx, u, ch).await.map(Outcome::Keep) })
}

/// The keys to count an attempt under (each with its limit), the time and the windows.
type Attempts = (Vec<(String, u32)>, UnixTime, LoginWindows);

fn record_attempts<'t>(
    tx: &'t mut dyn Tx,
    (keys, now, w): &'t Attempts,
) -> BoxFuture<'t, StoreResult<Outcome<Vec<LoginCount>>>> {
    Box::pin(async move {
        let mut counts = Vec::with_capacity(keys.len());
        for (key, limit) in keys {
            let mut counted = None;
            let args = args![key, *now, w.base, i64::from(*limit), w.longest];
            tx.each(&RECORD_LOGIN_ATTEMPT, args, &mut |r| {
                counted = Some(LoginCount { count: count(r.int("count")?), until: UnixTime(r.int("until")?) });
                Ok(())
            })
            .await?;
            counts.push(counted.ok_or_else(|| crate::StoreError::Other("an attempt was not counted".into()))?);
        }
        Ok(Outcome::Keep(counts))
    })
}

fn forgive<'t>(tx: &'t mut dyn Tx, keys: &'t Vec<String>) -> BoxFuture<'t, StoreResult<Outcome<()>>> {
    Box::pin(async move {
        for key in keys {
            tx.exec(&FORGIVE_LOGIN_ATTEMPT, args![key]).await?;
        }
        Ok(Outcome::Keep(()))
    })
}

/// A count, saturated into a `u32`.
fn count(n: i64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[async_trait]
impl<E: Engine> Users for Db<E> {
    async fn create_user(&self, u: &NewUser, ch: &Channel) -> StoreResult<()> {
        self.engine.unit(Durability::Durable, create, (u.clone(), ch.clone())).await
    }

    async fn user(&self, id: &str) -> StoreResult<Option<User>> {
        self.engine.one(&USER, args![id], rows::user_from_row).await
    }

    async fn user_by_email(&self, email: &str) -> StoreResult<Option<User>> {
        self.engine.one(&USER_BY_EMAIL, args![email], rows::user_from_row).await
    }

    async fn users(&self) -> StoreResult<Vec<User>> {
        self.engine.all(&USERS, args![], rows::user_from_row).await
    }

    async fn channel_of(&self, user_id: &str) -> StoreResult<Option<Channel>> {
        self.engine.one(&CHANNEL_OF, args![user_id], rows::channel_from_row).await
    }

    async fn create_session(&self, s: &Session) -> StoreResult<()> {
        self.exec(&CREATE_SESSION, args![&s.token_hash, &s.user_id, s.created_at, s.expires_at, s.method.as_str()])
            .await?;
        Ok(())
    }

    async fn session(&self, token_hash: &[u8], now: UnixTime) -> StoreResult<Option<Session>> {
        self.engine.one(&SESSION, args![token_hash, now], rows::session_from_row).await
    }

    async fn delete_session(&self, token_hash: &[u8]) -> StoreResult<()> {
        self.exec(&DELETE_SESSION, args![token_hash]).await?;
        Ok(())
    }

    async fn record_login_attempts(
        &self,
        keys: &[(&str, u32)],
        now: UnixTime,
        windows: LoginWindows,
    ) -> StoreResult<Vec<LoginCount>> {
        let keys = keys.iter().map(|(k, limit)| ((*k).to_owned(), *limit)).collect();
        self.engine.unit(Durability::Ephemeral, record_attempts, (keys, now, windows)).await
    }

    async fn login_failures(&self, key: &str, now: UnixTime) -> StoreResult<u32> {
        let n = self.engine.one(&LOGIN_FAILURES, args![key, now], |r: &dyn StoreRow| r.int("count"));
        Ok(n.await?.map_or(0, count))
    }

    async fn forgive_login_attempts(&self, keys: &[&str]) -> StoreResult<()> {
        let keys = keys.iter().map(|k| (*k).to_owned()).collect();
        self.engine.unit(Durability::Ephemeral, forgive, keys).await
    }

    async fn clear_login_failures(&self, key: &str) -> StoreResult<()> {
        self.exec_ephemeral(&CLEAR_LOGIN_FAILURES, args![key]).await?;
        Ok(())
    }
}

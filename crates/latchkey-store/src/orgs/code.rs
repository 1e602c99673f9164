//! An authorization code stored only if the policy, read under the locks every organisation change takes, still
//! allows it: the check and the insert are one unit of work, so no change slips between them.
//!
//! The locks are taken where writers run side by side (PostgreSQL), always in the order account, organisation,
//! project, which every change follows too: a change to one account's membership holds the account's row
//! (`FOR UPDATE`), a change to an organisation its row, a placement the organisation's then the project's. This
//! unit holds them shared (`FOR KEY SHARE`), so it waits for a change in flight and a change waits for it: either
//! the code is stored under the new policy's judgement, or it is stored first and the change finds it among the
//! pending codes. SQLite's single writer already runs the two one after the other.

use super::{membership_from_row, MEMBER_POLICY};
use crate::db::{rows, BoxFuture, Outcome, Tx};
use crate::grants::{code_args, INSERT_CODE};
use crate::rows::StoreRow;
use crate::sql::{args, Sql};
use crate::StoreResult;
use latchkey_core::org::{self, Audience, Placement, Refusal};
use latchkey_core::token::AuthCode;

static SHARE_USER: Sql = Sql::new("SELECT id FROM users WHERE id = $1 FOR KEY SHARE");
static SHARE_ORG: Sql =
    Sql::new("SELECT id FROM orgs WHERE id = (SELECT org_id FROM org_members WHERE user_id = $1) FOR KEY SHARE");
static SHARE_PROJECT: Sql = Sql::new("SELECT id FROM projects WHERE id = $1 FOR KEY SHARE");
/// The project's placement, and whether the client (`$2`) registered itself.
static PLACEMENT: Sql = Sql::new(
    "SELECT org_id, audience, EXISTS (SELECT 1 FROM clients WHERE client_id = $2 AND registration IS NOT NULL) \
     AS self_registered FROM projects WHERE id = $1",
);

fn placement_from_row(r: &dyn StoreRow) -> StoreResult<(Option<String>, Audience, bool)> {
    Ok((r.opt_text("org_id")?, crate::rows::audience(r)?, r.flag("self_registered")?))
}

/// The unit: locks, reads the placement and the member's policy, judges the code's scopes, stores it if allowed.
pub(super) fn insert_if_allowed<'t>(
    tx: &'t mut dyn Tx,
    (code, project): &'t (AuthCode, String),
) -> BoxFuture<'t, StoreResult<Outcome<Result<(), Refusal>>>> {
    Box::pin(async move {
        if let Err(refusal) = allowed(tx, code, project).await? {
            return Ok(Outcome::Discard(Err(refusal)));
        }
        tx.exec(&INSERT_CODE, code_args(code)).await?;
        Ok(Outcome::Keep(Ok(())))
    })
}

/// Inside a unit: takes the locks, reads the placement and the member's policy, and judges the code's scopes
/// (whether a code is refused does not depend on the client's assured identity, only how consent is asked).
pub(crate) async fn allowed(tx: &mut dyn Tx, code: &AuthCode, project: &str) -> StoreResult<Result<(), Refusal>> {
    let user = code.user_id.as_str();
    tx.lock(&SHARE_USER, args![user]).await?;
    tx.lock(&SHARE_ORG, args![user]).await?;
    tx.lock(&SHARE_PROJECT, args![project]).await?;
    let placed = rows(tx, &PLACEMENT, args![project, &code.client_id], placement_from_row).await?.pop();
    let (org_id, audience, self_registered) = placed.unwrap_or((None, Audience::Internal, false));
    let member = rows(tx, &MEMBER_POLICY, args![user, &code.client_id], membership_from_row).await?.pop().flatten();
    let placement = Placement { org_id: org_id.as_deref(), audience, identity_assured: false, self_registered };
    Ok(org::decide(placement, member.as_ref(), code.scopes).map(|_| ()))
}

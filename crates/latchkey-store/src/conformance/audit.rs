//! A unit of work's two outcomes (a reused code's grants revoked with their audit records), checked on each engine with its own way of making the second statement fail.

use super::{fixture, issue, T0};
use crate::prelude::*;
use crate::{AuditRecord, GrantLimits};

/// A reused code's revocation and its audit record commit together: both rows, or, once `break_audit` has made
/// the audit log refuse every insert (an engine-specific trigger), neither. Each engine's tests call it with its own way
/// of breaking the log.
pub async fn a_revocation_and_its_audit_record_commit_together<F: std::future::Future<Output = ()>>(
    store: &dyn Store,
    break_audit: F,
) {
    let (client_id, user_id) = fixture(store).await;
    let kept = issue(store, &client_id, &user_id, GrantLimits::default()).await;
    assert_eq!(store.revoke_grants_of_code(&kept.code_hash, T0.plus(5)).await.expect("revoke"), 1);
    let records = store.audit_records(&user_id).await.expect("audit");
    let expected = AuditRecord {
        at: T0.plus(5),
        action: "code_reused".into(),
        user_id: Some(user_id.clone()),
        client_id: Some(client_id.clone()),
    };
    assert_eq!(records, vec![expected.clone()], "the revocation wrote its record");
    assert_eq!(store.grant(&kept.id).await.expect("grant").expect("kept").grant.revoked_at, Some(T0.plus(5)));

    let other = issue(store, &client_id, &user_id, GrantLimits::default()).await;
    break_audit.await;
    let refused = store.revoke_grants_of_code(&other.code_hash, T0.plus(6)).await;
    assert!(refused.is_err(), "the audit record could not be written");
    let state = store.grant(&other.id).await.expect("grant").expect("other");
    assert_eq!(state.grant.revoked_at, None, "the revocation rolled back with its record");
    assert_eq!(store.audit_records(&user_id).await.expect("audit"), vec![expected], "no record either");
}

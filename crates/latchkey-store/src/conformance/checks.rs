//! The list of checks, each registered once, for a harness to run on every backend.

use super::accounts::*;
use super::clients::*;
use super::codes::*;
use super::device_codes::*;
use super::members::*;
use super::orgs::*;
use super::passkeys::*;
use super::registration::*;
use super::resources::*;
use super::rotation::*;
use super::served::*;
use super::service_accounts::*;
use super::streams::*;
use super::throttle::*;
use super::together::*;
use super::two_step::*;
use super::*;
use std::future::Future;
use std::pin::Pin;

/// One check of the suite, as a test harness registers it: one test per check per backend.
#[derive(Debug)]
pub struct Check {
    /// The check's name: its function's.
    pub name: &'static str,
    /// Runs the check against a store.
    pub run: Run,
}

/// How a check runs: against a store, to its end; a failed expectation panics.
pub type Run = fn(Arc<dyn crate::seed::SeedStore>) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// Lists each check once: `by_ref` checks take `&dyn Store`, `shared` ones an `Arc` to spawn tasks on.
macro_rules! checks {
    ($($check:ident: $takes:ident),* $(,)?) => {
        /// Every check of the suite. Each is to run on a fresh store of its own, so that they may run at once and in
        /// any order (`client_lifecycle`, for one, deletes and purges every unused client of its database).
        pub const CHECKS: &[Check] =
            &[$(Check { name: stringify!($check), run: |store| checks!(@$takes $check store) }),*];
    };
    (@by_ref $check:ident $store:ident) => { Box::pin(async move { $check(&*$store).await }) };
    (@shared $check:ident $store:ident) => { Box::pin($check($store)) };
}

checks! {
    projects_and_clients: by_ref,
    client_secrets_change_only_while_unchanged: by_ref,
    users_channels_and_sessions: by_ref,
    login_failures_count_in_a_window: by_ref,
    a_window_that_reached_its_limit_is_followed_by_a_longer_one: by_ref,
    concurrent_attempts_each_take_their_own_number: shared,
    a_jti_is_single_use_whatever_expiry_it_comes_with: by_ref,
    a_code_redeems_once: by_ref,
    a_disabled_accounts_codes_are_not_redeemed: by_ref,
    a_code_is_redeemed_only_with_the_scopes_the_store_holds: by_ref,
    concurrent_redemption_issues_one_grant: shared,
    concurrent_reads_by_key_each_get_their_own_row: shared,
    concurrent_proofs_record_each_value_once: shared,
    refresh_token_limits_invalidate_the_oldest: by_ref,
    refresh_token_limits_hold_under_concurrent_issuance: shared,
    grant_state_follows_user_and_client: by_ref,
    keys_are_kept_newest_first: by_ref,
    a_key_secret_is_replaced_only_while_it_is_unchanged: by_ref,
    single_use_values_are_recorded_once: shared,
    expired_single_use_values_are_purged: by_ref,
    app_check_and_ownership: by_ref,
    listings_are_kept_by_item_id: by_ref,
    project_members_keep_an_owner: by_ref,
    owners_removing_each_other_at_once_leave_one: shared,
    api_keys_are_kept_per_user: by_ref,
    seeded_users_and_grants_are_stored_as_they_are: by_ref,
    client_lifecycle: by_ref,
    account_changes_record_one_event_each: by_ref,
    removing_an_apps_access_revokes_its_grants_and_only_those: by_ref,
    last_use_days_move_forward_and_ended_grants_are_not_live: by_ref,
    organisations_keep_members_by_domain_and_by_name: by_ref,
    a_members_policy_is_read_for_one_client: by_ref,
    a_policy_change_revokes_what_it_no_longer_allows: by_ref,
    an_internal_project_keeps_only_its_members_grants: by_ref,
    account_changes_queue_sets_only_for_apps_with_access: by_ref,
    an_email_subject_needs_the_email_scope: by_ref,
    deliveries_are_claimed_in_order_under_a_lease: by_ref,
    a_push_past_its_lease_leaves_the_next_lease_alone: by_ref,
    claims_take_turns_by_project_and_released_ones_come_back: by_ref,
    polls_acknowledge_and_verification_is_rate_limited: by_ref,
    concurrent_claims_never_share_a_delivery: shared,
    new_deliveries_are_announced_where_the_engine_can: by_ref,
    content_owners_manage_linked_channels_and_grant_service_accounts: by_ref,
    service_accounts_hold_at_most_ten_public_keys: by_ref,
    concurrent_key_additions_stop_at_ten: shared,
    the_served_urls_are_the_last_recorded: by_ref,
    passkeys_are_added_used_and_removed_with_their_events: by_ref,
    ceremonies_are_taken_once_before_they_expire: by_ref,
    two_step_verification_is_turned_on_used_and_off_with_its_events: by_ref,
    totp_secrets_are_reencrypted_only_as_read: by_ref,
    passkey_only_accounts_keep_a_way_in_and_a_reset_removes_second_steps: by_ref,
    device_codes_are_polled_at_their_pace_and_decided_once: by_ref,
    apis_hold_their_identifier_and_scope_names_once_each_on_its_own_bit: by_ref,
    a_retired_scope_leaves_every_grant_and_code_that_held_its_bit: by_ref,
    a_rotation_retires_the_token_once_and_its_reuse_revokes_the_grant: by_ref,
    concurrent_rotations_of_one_token_rotate_it_once: shared,
    one_project_collects_self_registered_clients_which_rotate_and_expire_on_their_own_days: by_ref,
    metadata_documents_are_cached_replaced_and_purged: by_ref,
}

//! `latchkey admin org`: organisations, their members and administrators, and the API access controls their
//! administrators set; and `project update --org --audience`, which places a project in one.

use super::out;
use clap::{Args, Subcommand};
use latchkey_admin::orgs::{self, app_access, data_scopes};
use latchkey_admin::{self as ops, Actor, AdminError, AdminResult};
use latchkey_config::Config;
use latchkey_core::org::{Audience, OrgChange};
use latchkey_core::scope::ScopeRegistry;
use latchkey_core::time::UnixTime;
use latchkey_store::{ProjectSetting, Store};

/// Names an organisation.
#[derive(Args)]
pub(super) struct OrgRef {
    /// The organisation id (`org_...`), as `org create` printed it.
    #[arg(long)]
    org: String,
}

#[derive(Subcommand)]
pub(super) enum OrgCmd {
    /// Creates an organisation with its verified domains (accounts at them join); prints its `org_id`.
    Create {
        /// Its name.
        #[arg(long)]
        name: String,
        /// A verified domain (repeatable).
        #[arg(long = "domain")]
        domains: Vec<String>,
    },
    /// Lists organisations.
    List,
    /// Shows an organisation: domains, members, policy and listed apps.
    Show(OrgRef),
    /// Adds a verified domain: accounts at it that belong to no organisation join, now and when created.
    AddDomain {
        #[command(flatten)]
        org: OrgRef,
        /// The domain (like example.com).
        #[arg(long)]
        domain: String,
    },
    /// Adds an account as a member (a user belongs to at most one organisation).
    AddMember {
        #[command(flatten)]
        org: OrgRef,
        /// The account, by e-mail address or id.
        #[arg(long, visible_alias = "user")]
        email: String,
    },
    /// Removes a member; the grants its organisation's internal apps had are revoked.
    RemoveMember {
        #[command(flatten)]
        org: OrgRef,
        /// The account, by e-mail address or id.
        #[arg(long, visible_alias = "user")]
        email: String,
    },
    /// Makes an account an administrator (adding it as a member if it is none yet).
    AddAdmin {
        #[command(flatten)]
        org: OrgRef,
        /// The account, by e-mail address or id.
        #[arg(long, visible_alias = "user")]
        email: String,
    },
    /// Disables a member's account (as `user disable`, on the administrator's authority).
    DisableMember {
        #[command(flatten)]
        org: OrgRef,
        /// The account, by e-mail address or id.
        #[arg(long, visible_alias = "user")]
        email: String,
    },
    /// Sets an app's access: trusted (every scope, all or none), limited (unrestricted scopes), specific (the
    /// scopes listed with --scope), blocked; `default` removes the listing so that it follows the default.
    AppAccess {
        #[command(flatten)]
        org: OrgRef,
        /// The client id.
        #[arg(long)]
        client: String,
        /// trusted, limited, specific, blocked or default.
        #[arg(long)]
        access: String,
        /// A scope of a specific access (repeatable).
        #[arg(long = "scope")]
        scopes: Vec<String>,
    },
    /// The access of apps not listed (limited unless changed).
    DefaultAccess {
        #[command(flatten)]
        org: OrgRef,
        /// trusted, limited or blocked.
        #[arg(long)]
        access: String,
    },
    /// Restricts a data-API scope (only trusted or specifically allowed apps may have it), or lifts that.
    ScopeAccess {
        #[command(flatten)]
        org: OrgRef,
        /// The scope (repeatable).
        #[arg(long = "scope", required = true)]
        scopes: Vec<String>,
        /// Restrict it.
        #[arg(long, conflicts_with = "unrestricted", required_unless_present = "unrestricted")]
        restricted: bool,
        /// Lift its restriction.
        #[arg(long)]
        unrestricted: bool,
    },
    /// Trusts every client of the organisation's own projects (`on`), or stops (`off`).
    TrustInternalApps {
        #[command(flatten)]
        org: OrgRef,
        /// on or off.
        #[arg(value_parser = ["on", "off"])]
        state: String,
    },
    /// Blocks every app that registered itself (dynamic registration, metadata documents) for the members (`on`),
    /// or stops (`off`): such apps are otherwise treated as apps not listed.
    BlockSelfRegisteredApps {
        #[command(flatten)]
        org: OrgRef,
        /// on or off.
        #[arg(value_parser = ["on", "off"])]
        state: String,
    },
    /// The members' sign-in policy: 2-step verification required, passkeys only. Each flag given changes; the
    /// other stays.
    Policy {
        #[command(flatten)]
        org: OrgRef,
        /// Members who sign in with a password need a second step (on or off).
        #[arg(long = "require-2sv", value_parser = ["on", "off"])]
        require_2sv: Option<String>,
        /// Members sign in with passkeys only (on or off); it wins over --require-2sv.
        #[arg(long, value_parser = ["on", "off"], required_unless_present = "require_2sv")]
        passkeys_only: Option<String>,
    },
    /// Domain-wide delegation: the client may have these scopes for every member without a consent page.
    Delegate {
        #[command(flatten)]
        org: OrgRef,
        /// The client id.
        #[arg(long)]
        client: String,
        /// A delegated scope (repeatable).
        #[arg(long = "scope", required_unless_present = "remove")]
        scopes: Vec<String>,
        /// Ends the client's delegation instead.
        #[arg(long, conflicts_with = "scopes")]
        remove: bool,
    },
}

/// Runs a `latchkey admin org` command.
pub(super) async fn org(store: &dyn Store, config: &Config, cmd: OrgCmd, now: UnixTime) -> AdminResult {
    let op = &Actor::Operator;
    let registry = ScopeRegistry::new(&config.scope_base);
    let change =
        |org: OrgRef, change: OrgChange| async move { out(orgs::org_change(store, op, &org.org, change, now).await) };
    match cmd {
        OrgCmd::Create { name, domains } => out(orgs::org_create(store, op, &name, &domains, now).await),
        OrgCmd::List => out(orgs::org_list(store, op).await),
        OrgCmd::Show(org) => out(orgs::org_show(store, op, &org.org, &registry).await),
        OrgCmd::AddDomain { org, domain } => change(org, OrgChange::AddDomain(domain)).await,
        OrgCmd::AddMember { org, email } => out(orgs::org_add_member(store, op, &org.org, &email, false, now).await),
        OrgCmd::AddAdmin { org, email } => out(orgs::org_add_member(store, op, &org.org, &email, true, now).await),
        OrgCmd::RemoveMember { org, email } => out(orgs::org_remove_member(store, op, &org.org, &email, now).await),
        OrgCmd::DisableMember { org, email } => {
            out(orgs::org_member_set_disabled(store, op, &org.org, &email, true, now).await)
        }
        OrgCmd::AppAccess { org, client, access, scopes } => {
            let access = match access.as_str() {
                "default" if scopes.is_empty() => None,
                "default" => return Err(AdminError::Invalid("default access takes no scopes".into())),
                name => Some(app_access(&registry, name, &scopes)?),
            };
            change(org, OrgChange::AppAccess { client_id: client, access }).await
        }
        OrgCmd::DefaultAccess { org, access } => match app_access(&registry, &access, &[])? {
            latchkey_core::org::AppAccess::Specific(_) => unreachable!("specific access needs scopes"),
            a => change(org, OrgChange::DefaultAccess(a)).await,
        },
        OrgCmd::ScopeAccess { org, scopes, restricted, .. } => {
            let scopes = data_scopes(&registry, &scopes)?;
            change(org, OrgChange::ScopeAccess { scopes, restricted }).await
        }
        OrgCmd::TrustInternalApps { org, state } => change(org, OrgChange::TrustInternalApps(state == "on")).await,
        OrgCmd::BlockSelfRegisteredApps { org, state } => {
            change(org, OrgChange::BlockSelfRegisteredApps(state == "on")).await
        }
        OrgCmd::Policy { org, require_2sv, passkeys_only } => {
            let on = |v: Option<String>| v.map(|v| v == "on");
            change(org, OrgChange::SignInPolicy { require_two_step: on(require_2sv), passkeys_only: on(passkeys_only) })
                .await
        }
        OrgCmd::Delegate { org, client, scopes, remove } => {
            let scopes = if remove { None } else { Some(data_scopes(&registry, &scopes)?) };
            change(org, OrgChange::Delegate { client_id: client, scopes }).await
        }
    }
}

/// `project update`: its settings switched `on` or `off`, and its organisation (`none` for none) and audience.
pub(super) async fn project_update(
    store: &dyn Store,
    project: &str,
    switches: &[(ProjectSetting, Option<String>)],
    org: Option<&str>,
    audience: Option<&str>,
    now: UnixTime,
) -> AdminResult {
    let op = &Actor::Operator;
    let audience = match audience {
        Some(a) => Some(Audience::parse(a).ok_or_else(|| AdminError::Invalid(format!("audience {a:?}")))?),
        None => None,
    };
    for (setting, on) in switches {
        if let Some(on) = on {
            ops::project_set(store, op, project, *setting, on == "on").await?;
        }
    }
    if org.is_some() || audience.is_some() {
        let org = org.map(|o| Some(o).filter(|o| *o != "none"));
        return out(orgs::project_place(store, op, project, org, audience, now).await);
    }
    out(ops::project_show(store, op, project).await.map(|d| d.project))
}

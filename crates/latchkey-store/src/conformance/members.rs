//! Project members (an owner always kept, even when owners remove each other at once) and console API keys.

use super::*;

fn member(project_id: &str, user_id: &str, role: ProjectRole, at: i64) -> ProjectMember {
    ProjectMember { project_id: project_id.into(), user_id: user_id.into(), role, added_at: T0.plus(at) }
}

pub(super) async fn project_members_keep_an_owner(store: &dyn Store) {
    let (client_id, owner) = fixture(store).await;
    let project = store.client(&client_id).await.expect("get").expect("c").project_id;
    let editor = another_user(store).await;
    let stranger = another_user(store).await;
    assert!(store.add_project_member(&member(&project, &owner, ProjectRole::Owner, 0)).await.expect("add"));
    assert!(store.add_project_member(&member(&project, &editor, ProjectRole::Editor, 1)).await.expect("add"));
    assert!(!store.add_project_member(&member(&project, &editor, ProjectRole::Owner, 2)).await.expect("again"));
    assert_eq!(store.project_role(&project, &owner).await.expect("role"), Some(ProjectRole::Owner));
    assert_eq!(store.project_role(&project, &editor).await.expect("role"), Some(ProjectRole::Editor), "unchanged");
    assert_eq!(store.project_role(&project, &stranger).await.expect("role"), None);
    let members = store.project_members(&project).await.expect("members");
    assert_eq!(
        members.iter().map(|m| (m.user_id.as_str(), m.role)).collect::<Vec<_>>(),
        vec![(owner.as_str(), ProjectRole::Owner), (editor.as_str(), ProjectRole::Editor)]
    );
    assert!(members[0].email.ends_with("@example.com"));
    let mine = store.projects_of(&editor).await.expect("projects");
    assert_eq!(mine.len(), 1);
    assert_eq!((mine[0].0.id.as_str(), mine[0].1), (project.as_str(), ProjectRole::Editor));
    assert!(store.projects_of(&stranger).await.expect("none").is_empty());

    // The last owner can be neither removed nor demoted.
    assert_eq!(store.remove_project_member(&project, &owner).await.expect("rm"), MemberChange::LastOwner);
    assert_eq!(
        store.set_project_member_role(&project, &owner, ProjectRole::Editor).await.expect("demote"),
        MemberChange::LastOwner
    );
    assert_eq!(store.remove_project_member(&project, &stranger).await.expect("rm"), MemberChange::NotMember);
    assert_eq!(
        store.set_project_member_role(&project, &stranger, ProjectRole::Owner).await.expect("promote"),
        MemberChange::NotMember
    );
    // With a second owner, the first may go.
    assert_eq!(
        store.set_project_member_role(&project, &editor, ProjectRole::Owner).await.expect("promote"),
        MemberChange::Done
    );
    assert_eq!(store.remove_project_member(&project, &owner).await.expect("rm"), MemberChange::Done);
    assert_eq!(store.project_role(&project, &owner).await.expect("role"), None);
    assert_eq!(store.remove_project_member(&project, &editor).await.expect("rm"), MemberChange::LastOwner);
    // Deleting the project or the user takes the memberships along.
    assert!(store.add_project_member(&member(&project, &stranger, ProjectRole::Editor, 3)).await.expect("add"));
    assert_eq!(store.change_account(&stranger, &AccountChange::Delete, T0).await.expect("delete user"), Some(1));
    assert_eq!(store.project_members(&project).await.expect("members").len(), 1);
    assert!(store.delete_project(&project).await.expect("delete project"));
    assert!(store.projects_of(&editor).await.expect("none").is_empty());
    assert!(store.client(&client_id).await.expect("get").is_none(), "the project's clients go with it");
}

pub(super) async fn owners_removing_each_other_at_once_leave_one(store: Arc<dyn Store>) {
    let (client_id, a) = fixture(&*store).await;
    let project = store.client(&client_id).await.expect("get").expect("c").project_id;
    let b = another_user(&*store).await;
    for _ in 0..5 {
        store.add_project_member(&member(&project, &a, ProjectRole::Owner, 0)).await.expect("add a");
        store.add_project_member(&member(&project, &b, ProjectRole::Owner, 0)).await.expect("add b");
        let (s1, s2, p1, p2, a1, b1) =
            (store.clone(), store.clone(), project.clone(), project.clone(), a.clone(), b.clone());
        let one = tokio::spawn(async move { s1.remove_project_member(&p1, &b1).await.expect("rm b") });
        let two = tokio::spawn(async move { s2.remove_project_member(&p2, &a1).await.expect("rm a") });
        let outcomes = [one.await.expect("join"), two.await.expect("join")];
        assert_eq!(outcomes.iter().filter(|o| **o == MemberChange::Done).count(), 1, "{outcomes:?}");
        let owners = store.project_members(&project).await.expect("members");
        assert_eq!(owners.len(), 1, "one owner remains");
    }
}

pub(super) async fn api_keys_are_kept_per_user(store: &dyn Store) {
    let (_, user) = fixture(store).await;
    let other = another_user(store).await;
    let key = ApiKey {
        id: random_b64(9).to_lowercase(),
        user_id: user.clone(),
        name: "ci".into(),
        secret_hash: vec![9; 32],
        created_at: T0,
        last_used_at: None,
    };
    store.create_api_key(&key).await.expect("create");
    assert!(matches!(store.create_api_key(&key).await, Err(StoreError::Conflict(_))), "ids are unique");
    assert_eq!(store.api_key(&key.id).await.expect("get"), Some(key.clone()));
    assert_eq!(store.api_keys_of(&user).await.expect("list"), vec![key.clone()]);
    assert!(store.api_keys_of(&other).await.expect("list").is_empty());
    assert!(store.touch_api_key(&key.id, T0.plus(10)).await.expect("touch"));
    assert!(!store.touch_api_key(&key.id, T0.plus(20)).await.expect("not again within the hour"));
    assert_eq!(store.api_key(&key.id).await.expect("get").expect("k").last_used_at, Some(T0.plus(10)));
    assert!(!store.delete_api_key(&key.id, &other).await.expect("not theirs"));
    assert!(store.delete_api_key(&key.id, &user).await.expect("revoke"));
    assert!(store.api_key(&key.id).await.expect("get").is_none());
    assert!(!store.delete_api_key(&key.id, &user).await.expect("gone"));
}

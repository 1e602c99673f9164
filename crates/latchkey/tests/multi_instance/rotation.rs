//! Refresh-token rotation on many instances: a token rotated at one instance is retired at the other, and when
//! both instances are sent the same refresh token at the same moment, exactly one rotates it; the other finds it
//! retired, which (without a grace period) revokes the grant everywhere.

use crate::instance::*;
use crate::Cluster;
use latchkey_store::test_database::Unreachable;

pub(crate) async fn a_refresh_token_rotated_at_one_instance_is_retired_at_the_other_and_rotates_once_when_both_refresh_it(
) -> Result<(), Unreachable> {
    let c = Cluster::start(&[]).await?;
    let url = &c.db.url;
    let projects = admin_ok(url, &["project", "list"], "").await;
    let project = projects["projects"].as_array().expect("projects").iter().find_map(|p| {
        Some(p["project_id"].as_str()?).filter(|id| *id != latchkey_core::registration::DOCUMENTS_PROJECT)
    });
    let project = project.expect("the cluster's project").to_owned();
    admin_ok(url, &["project", "update", "--project", &project, "--rotate-refresh-tokens", "on"], "").await;
    let http = http(&c.tls, false);
    let first = c.tokens_via(&c.a.base).await.refresh_token.expect("refresh token");

    let (status, body) = refresh(&http, &c.b.base, &c.client_id, &first).await.expect("refresh at B");
    assert_eq!(status, 200, "{body}");
    let second = body["refresh_token"].as_str().expect("rotated at B").to_owned();
    let (status, body) = refresh(&http, &c.a.base, &c.client_id, &second).await.expect("refresh at A");
    assert_eq!(status, 200, "A refreshes with the token B issued: {body}");
    let third = body["refresh_token"].as_str().expect("rotated at A").to_owned();

    let (to_a, to_b) = (http.clone(), crate::instance::http(&c.tls, false));
    for (h, base) in [(&to_a, &c.a.base), (&to_b, &c.b.base)] {
        h.get(format!("{base}/healthz")).send().await.expect("warm up");
    }
    let (ra, rb) =
        tokio::join!(refresh(&to_a, &c.a.base, &c.client_id, &third), refresh(&to_b, &c.b.base, &c.client_id, &third));
    let answers = [ra.expect("answer from A"), rb.expect("answer from B")];
    let won: Vec<_> = answers.iter().filter(|(s, _)| *s == 200).collect();
    assert_eq!(won.len(), 1, "exactly one instance rotates the token: {answers:?}");
    let lost = answers.iter().find(|(s, _)| *s != 200).expect("a refusal");
    assert_eq!((lost.0, lost.1["error"].as_str()), (400, Some("invalid_grant")), "{answers:?}");
    let newest = won[0].1["refresh_token"].as_str().expect("the one new token").to_owned();
    for base in [&c.a.base, &c.b.base] {
        let (status, body) = refresh(&http, base, &c.client_id, &newest).await.expect("refresh");
        assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "the grant is revoked at {base}");
    }
    Ok(())
}

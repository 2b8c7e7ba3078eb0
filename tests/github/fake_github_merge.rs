//! The fake GitHub's pull-request merge over real HTTP, as GitHub answers it: the three methods
//! on the real bare repository, the `sha` guard, and branch protection — required approving
//! reviews (each reviewer's latest, write access, not the author), required checks, "up to
//! date" when strict — with GitHub's 405/409 answers; and protected branches refusing ref
//! updates and git pushes that bypass pull requests. Every request must fit GitHub's OpenAPI
//! description.

use crate::support;

use crate::harness::*;
use serde_json::{Value, json};
use support::fake_github::Protection;

/// The pull request's merge, with `extra` fields beside `merge_method`.
async fn merge(w: &World, pr: u64, method: &str, extra: Value) -> (u16, Value) {
    let mut body = json!({ "merge_method": method });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    w.call("PUT", &format!("/pulls/{pr}/merge"), Some(body))
        .await
}

fn commit(w: &World, sha: &str) -> (Vec<String>, String, String, String) {
    let git = git2::Repository::open_bare(w.gh.bare_path(REPO)).unwrap();
    let c = git.find_commit(git2::Oid::from_str(sha).unwrap()).unwrap();
    (
        c.parent_ids().map(|p| p.to_string()).collect(),
        c.message().unwrap_or_default().to_owned(),
        c.committer().name().unwrap_or_default().to_owned(),
        c.tree_id().to_string(),
    )
}

fn tree_of(w: &World, sha: &str) -> String {
    commit(w, sha).3
}

#[tokio::test]
async fn each_method_lands_the_pull_request_and_closes_what_it_closes() {
    for method in ["merge", "squash", "rebase"] {
        let w = world().await;
        let issue = w.gh.add_issue(REPO, "Two in a.txt", "");
        let base = w.gh.branch_sha(REPO, "main").unwrap();
        let head = w.feature();
        let pr = json!({ "title": "T-1: feature", "head": "feature", "base": "main", "body": format!("Closes #{issue}.") });
        let (s, v) = w.post("/pulls", pr).await;
        assert_eq!(s, 201, "{v}");
        let pr = v["number"].as_u64().unwrap();
        // main moved on elsewhere: every method still lands cleanly.
        w.gh.push_commit(REPO, "main", &[("b.txt", "changed\n")], "Main moves on");
        let moved = w.gh.branch_sha(REPO, "main").unwrap();
        let (s, v) = merge(&w, pr, method, json!({ "sha": head })).await;
        assert_eq!((s, &v["merged"]), (200, &json!(true)), "{method}: {v}");
        let landed = v["sha"].as_str().unwrap().to_owned();
        assert_eq!(w.gh.branch_sha(REPO, "main"), Some(landed.clone()));
        assert_eq!(
            w.gh.file_on_branch(REPO, "main", "c.txt").as_deref(),
            Some("new\nfile\n")
        );
        assert_eq!(
            w.gh.file_on_branch(REPO, "main", "b.txt").as_deref(),
            Some("changed\n")
        );
        let (parents, message, committer, _) = commit(&w, &landed);
        match method {
            "merge" => {
                assert_eq!(parents, [moved.clone(), head.clone()]);
                assert!(
                    message.starts_with(&format!("Merge pull request #{pr} from acme/feature"))
                );
            }
            "squash" => {
                assert_eq!(parents, std::slice::from_ref(&moved));
                assert!(
                    message.starts_with(&format!("T-1: feature (#{pr})")),
                    "{message}"
                );
            }
            _ => {
                // Replayed on the new base and committed anew, as GitHub's rebase does.
                assert_eq!(parents, std::slice::from_ref(&moved));
                assert_eq!(message, "Feature work");
                assert_ne!(landed, head);
            }
        }
        assert_eq!(committer, "GitHub");
        let (_, p) = w.get(&format!("/pulls/{pr}")).await;
        assert_eq!(
            (&p["merged"], &p["state"], &p["merge_commit_sha"]),
            (&json!(true), &json!("closed"), &json!(landed)),
            "{method}"
        );
        assert_eq!(w.get(&format!("/pulls/{pr}/merge")).await.0, 204);
        assert_eq!(
            w.get(&format!("/issues/{issue}")).await.1["state"],
            "closed"
        );
        // Merged once: again is "not mergeable".
        refused(
            merge(&w, pr, method, json!({})).await,
            405,
            "Pull Request is not mergeable",
        );
        assert_ne!(base, landed);
        w.assert_valid_except(|_| false);
    }
}

#[tokio::test]
async fn a_moved_head_a_conflict_and_a_forbidden_method_are_refused() {
    let w = world().await;
    let old_head = w.feature();
    let pr = w.bot_pull().await;
    assert_eq!(w.get(&format!("/pulls/{pr}/merge")).await.0, 404);
    let new_head =
        w.gh.push_commit(REPO, "feature", &[("d.txt", "d\n")], "More");
    refused(
        merge(&w, pr, "rebase", json!({ "sha": old_head })).await,
        409,
        "Head branch was modified. Review and try the merge again.",
    );
    // main rewrites the line the feature changed: no method can land it.
    let a = "1\nTWO\n3\n4\n5\n6\n7\n8\n";
    w.gh.push_commit(REPO, "main", &[("a.txt", a)], "Conflicting");
    for method in ["merge", "squash", "rebase"] {
        refused(
            merge(&w, pr, method, json!({ "sha": new_head })).await,
            405,
            "Pull Request is not mergeable",
        );
    }
    w.gh.forbid_merge_method(REPO, "squash");
    refused(
        merge(&w, pr, "squash", json!({})).await,
        405,
        "Squash merges are not allowed on this repository.",
    );
    let bad = merge(&w, pr, "octopus", json!({})).await;
    assert_eq!(bad.0, 422, "{}", bad.1);
    // The octopus is sent invalid on purpose.
    w.assert_valid_except(|r| {
        r.body
            .as_ref()
            .is_some_and(|b| b["merge_method"] == "octopus")
    });
}

#[tokio::test]
async fn protection_counts_reviews_by_writers_and_wants_its_checks_on_an_up_to_date_head() {
    let w = world().await;
    // Reviews are delivered as webhooks too; nobody listens here.
    w.gh.set_webhook(&format!("http://127.0.0.1:{}", support::free_port()), "s");
    let head = w.feature();
    let pr = w.bot_pull().await;
    w.gh.protect(REPO, "main", Protection::like_main(1, &["hive/test"], true));
    let (_, rule) = w.get("/branches/main/protection").await;
    assert_eq!(
        (
            &rule["required_pull_request_reviews"]["required_approving_review_count"],
            &rule["required_status_checks"]["strict"]
        ),
        (&json!(1), &json!(true))
    );
    let needs_review = "At least 1 approving review is required by reviewers with write access.";
    refused(merge(&w, pr, "rebase", json!({})).await, 405, needs_review);
    // A reader's approval does not count; a writer's does, until their own later veto.
    w.gh.set_permission(REPO, "reader", "read");
    w.gh.set_permission(REPO, "alice", "write");
    w.gh.review_pull(REPO, pr, "reader", "approved", "").await;
    refused(merge(&w, pr, "rebase", json!({})).await, 405, needs_review);
    w.gh.review_pull(REPO, pr, "alice", "approved", "").await;
    w.gh.review_pull(REPO, pr, "alice", "changes_requested", "Wait.")
        .await;
    refused(merge(&w, pr, "rebase", json!({})).await, 405, needs_review);
    w.gh.review_pull(REPO, pr, "alice", "approved", "Now yes.")
        .await;
    // A comment after an approval leaves the approval standing.
    w.gh.review_pull(REPO, pr, "alice", "commented", "Nit.")
        .await;
    let expected = "Required status check \"hive/test\" is expected.";
    refused(merge(&w, pr, "rebase", json!({})).await, 405, expected);
    let run = |c: &str| json!({ "name": "hive/test", "head_sha": head, "status": "completed", "conclusion": c });
    w.post("/check-runs", run("failure")).await;
    refused(
        merge(&w, pr, "rebase", json!({})).await,
        405,
        "Required status check \"hive/test\" is failing.",
    );
    w.post("/check-runs", run("success")).await;
    // Strict: main moved, so the head is behind and its checks count as expected again.
    w.gh.push_commit(REPO, "main", &[("b.txt", "changed\n")], "Main moves on");
    refused(merge(&w, pr, "rebase", json!({})).await, 405, expected);
    w.gh.protect(
        REPO,
        "main",
        Protection::like_main(1, &["hive/test"], false),
    );
    let (s, v) = merge(&w, pr, "rebase", json!({ "sha": head })).await;
    assert_eq!(s, 200, "{v}");
    w.assert_valid_except(|_| false);
}

#[tokio::test]
async fn a_branch_that_requires_pull_requests_refuses_ref_updates_and_pushes() {
    let w = world().await;
    let head = w.feature();
    w.gh.protect(REPO, "main", Protection::like_main(1, &[], false));
    refused(
        w.patch("/git/refs/heads/main", json!({ "sha": head }))
            .await,
        422,
        "Protected branch update failed for refs/heads/main. Changes must be made through a pull request.",
    );
    // A git push over HTTP, with the installation token, as the bot's workspace pushes.
    let dir = tempfile::tempdir().unwrap();
    let clone = dir.path().join("c");
    let url = format!(
        "http://x-access-token:{}@{}/{REPO}.git",
        w.token,
        w.gh.url.trim_start_matches("http://")
    );
    // Through tokio's process: the fake serves the push on this test's own runtime.
    let git = |args: &[&str], dir: &std::path::Path| {
        let mut cmd = tokio::process::Command::new("git");
        cmd.args(args).current_dir(dir);
        async move { cmd.output().await.unwrap() }
    };
    assert!(
        git(&["clone", "-q", &url, "c"], dir.path())
            .await
            .status
            .success()
    );
    let push = git(
        &["push", "origin", "origin/feature:refs/heads/main"],
        &clone,
    )
    .await;
    let said = String::from_utf8_lossy(&push.stderr);
    assert!(!push.status.success(), "{said}");
    assert!(
        said.contains("GH006: Protected branch update failed for refs/heads/main.")
            && said.contains("Changes must be made through a pull request."),
        "{said}"
    );
    assert_ne!(w.gh.branch_sha(REPO, "main"), Some(head.clone()));
    // Other branches take pushes as before.
    let push = git(
        &["push", "origin", "origin/feature:refs/heads/other"],
        &clone,
    )
    .await;
    assert!(
        push.status.success(),
        "{}",
        String::from_utf8_lossy(&push.stderr)
    );
    assert_eq!(
        tree_of(&w, &head),
        tree_of(&w, &w.gh.branch_sha(REPO, "other").unwrap())
    );
    w.assert_valid_except(|_| false);
}

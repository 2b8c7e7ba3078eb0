//! Tests of the fake GitHub itself, over real HTTP: labels, permissions, user comments and
//! reactions, pull requests (files, reviews, review comments), and the webhooks it sends (its
//! git database is tested in `fake_github_git.rs`). Every recorded request must fit GitHub's
//! OpenAPI description.

use crate::support;

use crate::harness::*;
use serde_json::{Value, json};
use support::fake_github::{BOT_LOGIN, Fault};
use support::{inbox, payloads};

#[tokio::test]
async fn labels_are_added_as_object_or_array_and_removed() {
    let w = world().await;
    let n = w.gh.add_issue(REPO, "Bug", "");
    let path = format!("/issues/{n}/labels");
    let (s, v) = w.post(&path, json!({ "labels": ["hive", "bug"] })).await;
    assert_eq!((s, names(&v)), (200, vec!["hive", "bug"]));
    let (s, v) = w.post(&path, json!(["bug", "needs review"])).await;
    assert_eq!((s, names(&v)), (200, vec!["hive", "bug", "needs review"]));
    let (s, v) = w.post(&path, json!([{ "name": "p1" }])).await;
    assert_eq!((s, v.as_array().unwrap().len()), (200, 4));
    let (s, v) = w.delete(&format!("{path}/needs%20review")).await;
    assert_eq!((s, names(&v)), (200, vec!["hive", "bug", "p1"]));
    assert_eq!(w.gh.labels(REPO, n), ["hive", "bug", "p1"]);
    let (_, issue) = w.get(&format!("/issues/{n}")).await;
    assert_eq!(names(&issue["labels"]), ["hive", "bug", "p1"]);
    // GitHub: 404 for a label the issue does not have, and for an unknown issue.
    refused(
        w.delete(&format!("{path}/nope")).await,
        404,
        "Label does not exist",
    );
    assert_eq!(w.post("/issues/99/labels", json!(["x"])).await.0, 404);
    // An empty list is refused (it breaks the spec's minItems too: left out of the check).
    assert_eq!(w.post(&path, json!({ "labels": [] })).await.0, 422);
    w.assert_valid_except(|r| r.status == 422);
}

#[tokio::test]
async fn collaborator_permission_maps_roles_to_base_permissions() {
    let w = world().await;
    let roles = [
        ("alice", "admin"),
        ("bob", "maintain"),
        ("carol", "triage"),
        ("dan", "read"),
    ];
    for (user, role) in roles {
        w.gh.set_permission(REPO, user, role);
    }
    w.gh.add_user("eve");
    for (user, permission, role) in [
        ("alice", "admin", "admin"),
        ("bob", "write", "maintain"),
        ("carol", "read", "triage"),
        ("dan", "read", "read"),
        ("eve", "none", "none"),
    ] {
        let (s, v) = w.get(&format!("/collaborators/{user}/permission")).await;
        assert_eq!(s, 200, "{user}");
        assert_eq!(
            (&v["permission"], &v["role_name"]),
            (&json!(permission), &json!(role))
        );
        assert_eq!(
            (&v["user"]["login"], &v["user"]["type"]),
            (&json!(user), &json!("User"))
        );
    }
    refused(
        w.get("/collaborators/ghost/permission").await,
        404,
        "ghost is not a user",
    );
    w.assert_valid_except(|_| false);
}

#[tokio::test]
async fn user_comments_are_listed_edited_and_reacted_to() {
    let w = world().await;
    let n = w.gh.add_issue(REPO, "Bug", "");
    let id = w.gh.user_comment(REPO, n, "alice", "/hive retry");
    let (_, list) = w.get(&format!("/issues/{n}/comments")).await;
    assert_eq!(
        (&list[0]["user"]["login"], &list[0]["body"]),
        (&json!("alice"), &json!("/hive retry"))
    );
    assert_eq!(w.gh.edit_user_comment(id, "/hive stop"), "/hive retry");
    let (_, list) = w.get(&format!("/issues/{n}/comments")).await;
    assert_eq!(list[0]["body"], "/hive stop");
    let path = format!("/issues/comments/{id}/reactions");
    let (s, v) = w.post(&path, json!({ "content": "eyes" })).await;
    assert_eq!((s, v["content"].as_str()), (201, Some("eyes")));
    assert_eq!(
        w.post(&path, json!({ "content": "eyes" })).await.0,
        200,
        "exists"
    );
    assert_eq!(w.post(&path, json!({ "content": "+1" })).await.0, 201);
    assert_eq!(w.gh.comment_reactions(REPO, id), ["eyes", "+1"]);
    let unknown = w.post("/issues/comments/1/reactions", json!({ "content": "eyes" }));
    assert_eq!(unknown.await.0, 404);
    // Not a reaction type: 422 (outside the spec's enum too, so left out of the check).
    assert_eq!(w.post(&path, json!({ "content": "wow" })).await.0, 422);
    w.assert_valid_except(|r| r.status == 422);
}

#[tokio::test]
async fn pull_requests_get_update_and_keep_draft() {
    let w = world().await;
    let head = w.feature();
    let pr = json!({ "title": "T", "head": "feature", "base": "main", "body": "b", "draft": true });
    let (s, pr) = w.post("/pulls", pr).await;
    assert_eq!(s, 201, "{pr}");
    let n = pr["number"].as_u64().unwrap();
    assert_eq!(
        (&pr["draft"], &pr["head"]["sha"]),
        (&json!(true), &json!(head))
    );
    assert_eq!(pr["user"]["login"], BOT_LOGIN);
    let path = format!("/pulls/{n}");
    let (s, v) = w
        .patch(
            &path,
            json!({ "title": "T2", "body": "b2", "draft": false }),
        )
        .await;
    assert_eq!(
        (s, &v["title"], &v["body"]),
        (200, &json!("T2"), &json!("b2"))
    );
    assert_eq!(v["draft"], true, "draft is not settable by PATCH on GitHub");
    assert_eq!(
        w.patch(&path, json!({ "state": "closed" })).await.1["state"],
        "closed"
    );
    assert_eq!(w.gh.pull(REPO, n).unwrap().state, "closed");
    // Reopened, its head follows the branch.
    w.patch(&path, json!({ "state": "open" })).await;
    let newer =
        w.gh.push_commit(REPO, "feature", &[("d.txt", "d\n")], "More");
    assert_eq!(w.get(&path).await.1["head"]["sha"], newer.as_str());
    assert_eq!(w.get("/pulls/999").await.0, 404);
    // GitHub refuses a pull request without commits.
    let main = w.gh.branch_sha(REPO, "main").unwrap();
    w.post(
        "/git/refs",
        json!({ "ref": "refs/heads/empty", "sha": main }),
    )
    .await;
    let empty = w.post(
        "/pulls",
        json!({ "title": "E", "head": "empty", "base": "main" }),
    );
    refused(empty.await, 422, "No commits between main and empty");
    w.assert_valid_except(|_| false);
}

#[tokio::test]
async fn pull_request_files_come_from_the_real_diff() {
    let w = world().await;
    let head = w.feature();
    let n = w.bot_pull().await;
    // A later change on main is not part of the pull request (diff from the merge base).
    w.gh.push_commit(REPO, "main", &[("b.txt", "changed\n")], "Main moves on");
    let (s, files) = w.get(&format!("/pulls/{n}/files")).await;
    assert_eq!((s, files.as_array().unwrap().len()), (200, 2), "{files}");
    let a = &files[0];
    assert_eq!(
        (&a["filename"], &a["status"]),
        (&json!("a.txt"), &json!("modified"))
    );
    let counts = |f: &Value| {
        (
            f["additions"].as_u64(),
            f["deletions"].as_u64(),
            f["changes"].as_u64(),
        )
    };
    assert_eq!(counts(a), (Some(1), Some(1), Some(2)));
    let patch = a["patch"].as_str().unwrap();
    assert!(patch.starts_with("@@ -1,5 +1,5 @@"), "{patch}");
    assert!(patch.contains("\n-2\n+two\n"), "{patch}");
    assert!(
        a["contents_url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("?ref={head}"))
    );
    let c = &files[1];
    assert_eq!(
        (&c["filename"], &c["status"]),
        (&json!("c.txt"), &json!("added"))
    );
    assert_eq!(counts(c), (Some(2), Some(0), Some(2)));
    assert_eq!(c["patch"], "@@ -0,0 +1,2 @@\n+new\n+file");
    w.assert_valid_except(|_| false);
}

#[tokio::test]
async fn reviews_refuse_approving_own_pull_and_check_lines() {
    let w = world().await;
    w.feature();
    let n = w.bot_pull().await;
    let reviews = format!("/pulls/{n}/reviews");
    let own = "Can not approve your own pull request";
    refused(
        w.post(&reviews, json!({ "event": "APPROVE" })).await,
        422,
        own,
    );
    let changes = w.post(
        &reviews,
        json!({ "event": "REQUEST_CHANGES", "body": "no" }),
    );
    refused(
        changes.await,
        422,
        "Can not request changes on your own pull request",
    );
    let at = |path: &str, line: u64, side: &str| json!({ "path": path, "line": line, "side": side, "body": "here" });
    let review = |c: Vec<Value>| json!({ "event": "COMMENT", "body": "Looks odd", "comments": c });
    let far = w.post(&reviews, review(vec![at("a.txt", 20, "RIGHT")]));
    refused(far.await, 422, "Line could not be resolved");
    let elsewhere = w.post(&reviews, review(vec![at("zzz.txt", 1, "RIGHT")]));
    refused(elsewhere.await, 422, "Path could not be resolved");
    let three = vec![
        at("a.txt", 2, "RIGHT"),
        at("a.txt", 2, "LEFT"),
        at("a.txt", 5, "RIGHT"),
    ];
    let (s, v) = w.post(&reviews, review(three)).await;
    assert_eq!((s, v["state"].as_str()), (200, Some("COMMENTED")), "{v}");
    assert_eq!(w.gh.review_comments(REPO, n).len(), 3);
    // One review comment alone; outside the diff it is refused.
    let head = w.gh.branch_sha(REPO, "feature").unwrap();
    let single = |l: u64| json!({ "body": "nit", "commit_id": head, "path": "c.txt", "line": l, "side": "RIGHT" });
    let (s, v) = w.post(&format!("/pulls/{n}/comments"), single(2)).await;
    assert_eq!(
        (s, &v["diff_hunk"]),
        (201, &json!("@@ -0,0 +1,2 @@\n+new\n+file")),
        "{v}"
    );
    let outside = w.post(&format!("/pulls/{n}/comments"), single(9)).await;
    refused(
        outside,
        422,
        "pull_request_review_thread.line must be part of the diff",
    );
    let (_, list) = w.get(&reviews).await;
    let list = list.as_array().unwrap();
    let states: Vec<&str> = list.iter().map(|r| r["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["COMMENTED", "COMMENTED"]);
    // A person's pull request can be approved by the bot.
    let human = w.gh.open_pull(REPO, "alice", "feature", "main", "Alice's");
    let path = format!("/pulls/{human}/reviews");
    let (s, v) = w.post(&path, json!({ "event": "APPROVE" })).await;
    assert_eq!(
        (s, &v["state"], &v["commit_id"]),
        (200, &json!("APPROVED"), &json!(head))
    );
    let no_body = w.post(&path, json!({ "event": "REQUEST_CHANGES" }));
    refused(no_body.await, 422, "Body is required");
    assert_eq!(w.gh.reviews(REPO, human)[0].state, "APPROVED");
    w.assert_valid_except(|_| false);
}

#[tokio::test]
async fn new_routes_need_a_token_take_faults_and_are_recorded() {
    let w = world().await;
    let new = w.feature();
    let url = format!("{}{R}/git/ref/heads/main", w.gh.url);
    assert_eq!(w.http.get(&url).send().await.unwrap().status(), 401);
    w.gh.inject(Fault::new("PATCH", "/git/refs/heads/main", 502).after_effect());
    assert_eq!(
        w.patch("/git/refs/heads/main", json!({ "sha": new }))
            .await
            .0,
        502
    );
    assert_eq!(
        w.gh.branch_sha(REPO, "main"),
        Some(new),
        "the update happened"
    );
    let last = w.gh.requests().pop().unwrap();
    assert_eq!((last.method.as_str(), last.status), ("PATCH", 502));
    w.assert_valid_except(|_| false);
}

#[tokio::test]
async fn people_helpers_store_and_send_signed_webhooks() {
    let w = world().await;
    let (url, inbox) = inbox::start("s3cret").await;
    w.gh.set_webhook(&url, "s3cret");
    w.gh.set_permission(REPO, "alice", "write");
    let n = w.gh.add_issue(REPO, "Bug", "body");
    let (id, sent) = w.gh.comment_on(REPO, n, "alice", "/hive go").await;
    assert_eq!(sent.status, 202);
    assert_eq!(w.gh.comments(REPO, n)[0].user, "alice");
    w.gh.edit_comment(REPO, id, "/hive stop").await;
    w.gh.edit_issue(REPO, n, "Bug!", "body").await;
    w.feature();
    let pr = w.bot_pull().await;
    w.gh.review_pull(REPO, pr, "alice", "changes_requested", "Please fix")
        .await;
    let head = w.gh.branch_sha(REPO, "feature").unwrap();
    let actions = json!([{ "label": "Retry", "description": "Run again", "identifier": "retry" }]);
    let run = json!({ "name": "hive/test", "head_sha": head, "actions": actions });
    let (_, run) = w.post("/check-runs", run).await;
    w.gh.press_button(REPO, run["id"].as_u64().unwrap(), "retry", "alice")
        .await;
    let got = inbox.deliveries();
    let events: Vec<(&str, &str)> = got
        .iter()
        .map(|(e, v)| (e.as_str(), v["action"].as_str().unwrap()))
        .collect();
    assert_eq!(
        events,
        [
            ("issue_comment", "created"),
            ("issue_comment", "edited"),
            ("issues", "edited"),
            ("pull_request_review", "submitted"),
            ("check_run", "requested_action")
        ]
    );
    let (c, comment) = (&got[0].1, &got[0].1["comment"]);
    assert_eq!(
        (&comment["id"], &comment["user"]["login"]),
        (&json!(id), &json!("alice"))
    );
    assert_eq!(
        (&comment["author_association"], &c["issue"]["title"]),
        (&json!("COLLABORATOR"), &json!("Bug"))
    );
    assert_eq!(
        (&c["installation"]["id"], &c["repository"]["full_name"]),
        (&json!(7), &json!(REPO))
    );
    assert!(c["issue"].get("pull_request").is_none());
    assert_eq!(got[1].1["changes"]["body"]["from"], "/hive go");
    assert_eq!(got[2].1["changes"], json!({ "title": { "from": "Bug" } }));
    let r = &got[3].1;
    assert_eq!(
        (&r["review"]["state"], &r["review"]["body"]),
        (&json!("changes_requested"), &json!("Please fix"))
    );
    assert_eq!(
        (
            &r["pull_request"]["number"],
            &r["pull_request"]["head"]["sha"]
        ),
        (&json!(pr), &json!(head))
    );
    assert_eq!(w.gh.reviews(REPO, pr)[0].state, "CHANGES_REQUESTED");
    let b = &got[4].1["check_run"];
    assert_eq!(
        (&got[4].1["requested_action"]["identifier"], &b["head_sha"]),
        (&json!("retry"), &json!(head))
    );
    assert_eq!(
        (&b["app"]["id"], &b["pull_requests"][0]["number"]),
        (&json!(99), &json!(pr))
    );
    // What the senders deliver parses too.
    for (event, v) in &got {
        let body = serde_json::to_vec(v).unwrap();
        assert!(
            vibeloop::webhook::event::parse(event, &body).is_ok(),
            "{event}"
        );
    }
    // A comment on a pull request says so, as GitHub's `issue.pull_request` does.
    w.gh.comment_on(REPO, pr, "alice", "nice").await;
    let (_, last) = inbox.last().unwrap();
    assert!(last["issue"]["pull_request"]["url"].is_string(), "{last}");
    w.assert_valid_except(|_| false);
}

#[test]
fn octocrab_parses_every_payload_built() {
    let sha = "a".repeat(40);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "issue_comment",
            payloads::issue_comment_created(REPO, 7, 3, "alice", 11, "/hive go", false),
        ),
        (
            "issue_comment",
            payloads::issue_comment_created(REPO, 7, 4, "alice", 12, "lgtm", true),
        ),
        (
            "issue_comment",
            payloads::issue_comment_edited(
                REPO,
                7,
                3,
                "alice",
                11,
                "/hive stop",
                false,
                "/hive go",
            ),
        ),
        (
            "issues",
            payloads::issues_edited(REPO, 7, 3, "Title", "Body"),
        ),
        (
            "pull_request_review",
            payloads::pull_request_review_submitted(REPO, 7, 4, "alice", "approved", &sha),
        ),
        (
            "pull_request_review",
            payloads::pull_request_review_submitted(REPO, 7, 4, "bob", "commented", &sha),
        ),
        (
            "pull_request_review",
            payloads::pull_request_review_submitted(REPO, 7, 4, "bob", "changes_requested", &sha),
        ),
        (
            "check_run",
            payloads::check_run_requested_action(REPO, 7, "hive/test", "T-1", &sha, "retry"),
        ),
    ];
    for (event, body) in cases {
        // Events the bot does not act on yet come back as `NotActionable`: parsed all the same.
        if let Err(e) = vibeloop::webhook::event::parse(event, &body) {
            panic!("{event}: {e}");
        }
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            (&v["installation"]["id"], &v["repository"]["full_name"]),
            (&json!(7), &json!(REPO))
        );
    }
    let pr = payloads::issue_comment_created(REPO, 7, 4, "alice", 12, "x", true);
    let pr: Value = serde_json::from_slice(&pr).unwrap();
    assert_eq!(
        pr["issue"]["pull_request"]["url"],
        "https://api.github.com/repos/acme/widgets/pulls/4"
    );
}

//! Tests of the fake GitHub's git database over real HTTP: refs read, created, updated and
//! deleted in the real bare repository, branch protection, annotated tags, commits and
//! comparisons from the real history. Every recorded request must fit GitHub's OpenAPI
//! description.

use crate::support;

use crate::harness::*;
use serde_json::{Value, json};
use support::fake_github::Protection;

#[tokio::test]
async fn refs_are_read_created_and_deleted_in_the_bare_repository() {
    let w = world().await;
    let main = w.gh.branch_sha(REPO, "main").unwrap();
    let (s, v) = w.get("/git/ref/heads/main").await;
    assert_eq!(
        (s, &v["ref"], &v["object"]["sha"]),
        (200, &json!("refs/heads/main"), &json!(main))
    );
    assert_eq!(w.get("/git/ref/heads/nope").await.0, 404);
    let create = json!({ "ref": "refs/heads/hive/T-1", "sha": main });
    assert_eq!(w.post("/git/refs", create.clone()).await.0, 201);
    assert_eq!(w.gh.branch_sha(REPO, "hive/T-1"), Some(main.clone()));
    assert_eq!(
        w.get("/git/ref/heads/hive/T-1").await.1["object"]["type"],
        "commit"
    );
    refused(
        w.post("/git/refs", create).await,
        422,
        "Reference already exists",
    );
    let short = w
        .post("/git/refs", json!({ "ref": "heads/x", "sha": main }))
        .await;
    let why = "Reference name must contain at least three slash-separated components.";
    refused(short, 422, why);
    let ghost = json!({ "ref": "refs/heads/x", "sha": "0".repeat(40) });
    refused(
        w.post("/git/refs", ghost).await,
        422,
        "Object does not exist",
    );
    assert_eq!(w.delete("/git/refs/heads/hive/T-1").await.0, 204);
    assert_eq!(w.gh.branch_sha(REPO, "hive/T-1"), None);
    refused(
        w.delete("/git/refs/heads/hive/T-1").await,
        422,
        "Reference does not exist",
    );
    w.assert_valid_except(|_| false);
}

#[tokio::test]
async fn ref_updates_fast_forward_or_need_force() {
    let w = world().await;
    let old = w.gh.branch_sha(REPO, "main").unwrap();
    let new = w.feature();
    let (s, v) = w.patch("/git/refs/heads/main", json!({ "sha": new })).await;
    assert_eq!((s, &v["object"]["sha"]), (200, &json!(new)));
    assert_eq!(w.gh.branch_sha(REPO, "main"), Some(new.clone()));
    let back = w.patch(
        "/git/refs/heads/main",
        json!({ "sha": old, "force": false }),
    );
    refused(back.await, 422, "Update is not a fast forward");
    assert_eq!(w.gh.branch_sha(REPO, "main"), Some(new));
    let forced = w.patch("/git/refs/heads/main", json!({ "sha": old, "force": true }));
    assert_eq!(forced.await.0, 200);
    assert_eq!(w.gh.branch_sha(REPO, "main"), Some(old));
    let gone = w.patch("/git/refs/heads/gone", json!({ "sha": "0".repeat(40) }));
    refused(gone.await, 422, "Reference does not exist");
    w.assert_valid_except(|_| false);
}

#[tokio::test]
async fn protected_branches_need_their_checks_and_refuse_force_and_delete() {
    let w = world().await;
    let old = w.gh.branch_sha(REPO, "main").unwrap();
    let new = w.feature();
    refused(
        w.get("/branches/main/protection").await,
        404,
        "Branch not protected",
    );
    refused(
        w.get("/branches/nope/protection").await,
        404,
        "Branch not found",
    );
    w.gh.protect(REPO, "main", Protection::checks(&["hive/test"]));
    let (s, v) = w.get("/branches/main/protection").await;
    assert_eq!(
        (s, &v["required_status_checks"]["contexts"]),
        (200, &json!(["hive/test"]))
    );
    let update = |sha: &str| w.patch("/git/refs/heads/main", json!({ "sha": sha }));
    refused(
        update(&new).await,
        422,
        "Required status check \"hive/test\" is expected.",
    );
    let run = |c: &str| json!({ "name": "hive/test", "head_sha": new, "status": "completed", "conclusion": c });
    w.post("/check-runs", run("failure")).await;
    refused(
        update(&new).await,
        422,
        "Required status check \"hive/test\" is failing.",
    );
    w.post("/check-runs", run("success")).await;
    assert_eq!(update(&new).await.0, 200);
    assert_eq!(w.gh.branch_sha(REPO, "main"), Some(new.clone()));
    let force = w.patch("/git/refs/heads/main", json!({ "sha": old, "force": true }));
    refused(
        force.await,
        422,
        "Cannot force-push to this protected branch",
    );
    // A commit status works as a required check as well.
    let newer = w.gh.push_commit(REPO, "feature", &[("e.txt", "e\n")], "E");
    w.gh.set_status(REPO, &newer, "hive/test", "success");
    assert_eq!(update(&newer).await.0, 200);
    w.gh.protect(REPO, "feature", Protection::locked());
    let locked = w.patch(
        "/git/refs/heads/feature",
        json!({ "sha": newer, "force": true }),
    );
    refused(locked.await, 422, "Cannot change this locked branch");
    refused(
        w.delete("/git/refs/heads/feature").await,
        422,
        "Cannot delete this protected branch",
    );
    w.gh.protect(REPO, "main", Protection::pull_requests_only(1));
    let next = w.gh.push_commit(REPO, "next", &[("f.txt", "f\n")], "F");
    refused(
        update(&next).await,
        422,
        "Protected branch update failed for refs/heads/main. Changes must be made through a pull request.",
    );
    w.gh.unprotect(REPO, "main");
    assert_eq!(update(&next).await.0, 200);
    w.assert_valid_except(|_| false);
}

#[tokio::test]
async fn annotated_tags_land_in_the_bare_repository() {
    let w = world().await;
    let main = w.gh.branch_sha(REPO, "main").unwrap();
    let tagger =
        json!({ "name": "Vibeloop", "email": "bot@example.com", "date": "2026-01-02T03:04:05Z" });
    let body = json!({
        "tag": "auto-v0.0.1", "message": "Release 0.0.1", "object": main, "type": "commit", "tagger": tagger,
    });
    let (s, tag) = w.post("/git/tags", body).await;
    assert_eq!((s, &tag["object"]["sha"]), (201, &json!(main)), "{tag}");
    assert_eq!(tag["tagger"]["date"], "2026-01-02T03:04:05Z");
    let tag_sha = tag["sha"].as_str().unwrap().to_owned();
    // A tag object alone is no tag yet, as on GitHub.
    assert!(w.gh.tags(REPO).is_empty());
    let tag_ref = json!({ "ref": "refs/tags/auto-v0.0.1", "sha": tag_sha });
    let (s, r) = w.post("/git/refs", tag_ref).await;
    assert_eq!((s, &r["object"]["type"]), (201, &json!("tag")));
    let got = w.get("/git/ref/tags/auto-v0.0.1").await.1;
    assert_eq!(got["object"]["sha"], tag_sha.as_str());
    assert_eq!(w.gh.tags(REPO), [("auto-v0.0.1".to_owned(), main.clone())]);
    // In the real repository: an annotated tag with the message and tagger given.
    let git = git2::Repository::open_bare(w.gh.bare_path(REPO)).unwrap();
    let t = git.find_reference("refs/tags/auto-v0.0.1").unwrap();
    let t = t.peel_to_tag().unwrap();
    assert_eq!(
        (t.name(), t.message().map(str::trim_end)),
        (Some("auto-v0.0.1"), Some("Release 0.0.1"))
    );
    assert_eq!(
        (t.tagger().unwrap().name(), t.target_id().to_string()),
        (Some("Vibeloop"), main)
    );
    let ghost = json!({ "tag": "x", "message": "m", "object": "1".repeat(40), "type": "commit" });
    refused(
        w.post("/git/tags", ghost).await,
        422,
        "Object does not exist",
    );
    w.assert_valid_except(|_| false);
}

#[tokio::test]
async fn commits_and_comparisons_come_from_the_real_history() {
    let w = world().await;
    let base = w.gh.branch_sha(REPO, "main").unwrap();
    let head = w.feature();
    let (s, c) = w.get("/commits/feature").await;
    assert_eq!(
        (s, &c["sha"], &c["commit"]["message"]),
        (200, &json!(head), &json!("Feature work"))
    );
    assert_eq!(c["parents"][0]["sha"], base.as_str());
    assert_eq!(c["files"].as_array().unwrap().len(), 2);
    assert_eq!(
        w.get(&format!("/commits/{base}")).await.1["parents"],
        json!([])
    );
    refused(
        w.get("/commits/nope").await,
        422,
        "No commit found for SHA: nope",
    );
    let w = &w;
    let cmp = |b: &str, h: &str| {
        let path = format!("/compare/{b}...{h}");
        async move { w.get(&path).await }
    };
    let by = |v: &Value| {
        (
            v["status"].clone(),
            v["ahead_by"].as_u64(),
            v["behind_by"].as_u64(),
        )
    };
    let (s, v) = cmp("main", "feature").await;
    assert_eq!((s, by(&v)), (200, (json!("ahead"), Some(1), Some(0))));
    assert_eq!(v["merge_base_commit"]["sha"], base.as_str());
    assert_eq!(v["files"].as_array().unwrap().len(), 2);
    assert_eq!(v["commits"][0]["sha"], head.as_str());
    assert_eq!(cmp("feature", "main").await.1["status"], "behind");
    assert_eq!(cmp("main", "main").await.1["status"], "identical");
    w.gh.push_commit(REPO, "main", &[("b.txt", "changed\n")], "Main moves on");
    let (_, v) = cmp("main", &head).await;
    assert_eq!(by(&v), (json!("diverged"), Some(1), Some(1)));
    assert_eq!(v["merge_base_commit"]["sha"], base.as_str());
    assert_eq!(cmp("main", "nope").await.0, 404);
    w.assert_valid_except(|_| false);
}

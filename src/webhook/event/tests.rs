//! Parsing the real payload examples (and GitHub's documented shapes) into [`Event`]s.

use super::*;
use std::path::Path;

fn fixture(rel: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/github/webhooks")
            .join(rel),
    )
    .unwrap()
}

#[test]
fn issues_labeled_parses() {
    let e = parse("issues", &fixture("issues/labeled.payload.json")).unwrap();
    let Event::IssueLabeled(l) = e else {
        panic!("{e:?}")
    };
    assert_eq!(l.repo.as_str(), "Codertocat/Hello-World");
    assert_eq!(l.number, 1);
    assert_eq!(l.label, "bug");
    assert_eq!(l.default_branch, "master");
    assert_eq!(l.installation, None);
}

#[test]
fn rerequests_parse() {
    let e = parse("check_run", &fixture("check_run/rerequested.payload.json")).unwrap();
    let Event::ChecksRerequested(r) = e else {
        panic!("{e:?}")
    };
    assert_eq!(r.head_sha, "d6fde92930d4715a2b49857d24b940956b26d2d3");
    assert_eq!(
        r.check_run.as_ref().map(|c| c.0.as_str()),
        Some("randscape")
    );
    let e = parse(
        "check_suite",
        &fixture("check_suite/rerequested.payload.json"),
    )
    .unwrap();
    let Event::ChecksRerequested(r) = e else {
        panic!("{e:?}")
    };
    assert_eq!(
        (r.check_run, r.head_branch.as_deref()),
        (None, Some("changes"))
    );
}

#[test]
fn completed_checks_and_statuses_parse() {
    let e = parse("check_run", &fixture("check_run/completed.payload.json")).unwrap();
    let Event::CheckCompleted(c) = e else {
        panic!("{e:?}")
    };
    assert_eq!(c.head_sha, "ec26c3e57ca3a959ca5aad62de7213c562f8c821");
    assert_eq!(c.branches, ["changes"]);
    // GitHub's documented `status` payload (the collection has no example of it).
    let status = serde_json::json!({
        "id": 1, "sha": "ec26c3e57ca3a959ca5aad62de7213c562f8c821", "name": "acme/widgets",
        "target_url": null, "avatar_url": null, "context": "ci/legacy", "description": null,
        "state": "success", "commit": {}, "created_at": "2026-11-24T12:00:00Z",
        "updated_at": "2026-11-24T12:00:00Z",
        "branches": [{ "name": "feat/T-3", "commit": { "sha": "ec26c3e" }, "protected": false }],
        "repository": serde_json::from_slice::<serde_json::Value>(&fixture("check_run/completed.payload.json")).unwrap()["repository"],
    });
    let e = parse("status", status.to_string().as_bytes()).unwrap();
    let Event::CheckCompleted(c) = e else {
        panic!("{e:?}")
    };
    assert_eq!(
        (c.name.as_str(), c.branches.as_slice()),
        ("ci/legacy", &["feat/T-3".to_owned()][..])
    );
    let mut pending = status.clone();
    pending["state"] = "pending".into();
    assert!(matches!(
        parse("status", pending.to_string().as_bytes()).unwrap(),
        Event::NotActionable(_)
    ));
}

#[test]
fn installation_events_parse() {
    let e = parse(
        "installation",
        &fixture("installation/created.payload.json"),
    )
    .unwrap();
    assert!(matches!(e, Event::InstallationCreated { .. }), "{e:?}");
    let e = parse(
        "installation",
        &fixture("installation/deleted.payload.json"),
    )
    .unwrap();
    assert!(matches!(e, Event::InstallationDeleted { .. }), "{e:?}");
}

#[test]
fn new_actions_are_unparsed_not_fatal() {
    for f in [
        "issues/typed.from-octokit-webhooks.net.payload.json",
        "issues/untyped.from-octokit-webhooks.net.payload.json",
    ] {
        let err = parse("issues", &fixture(f)).unwrap_err();
        assert!(err.reason.contains("typed"), "{err}");
    }
}

/// Every real payload example parses into our type, except the two that octocrab cannot
/// parse (new `issues` actions), which come back as [`Unparsed`].
#[test]
fn every_example_payload_parses_or_is_cleanly_unparsed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/github/webhooks");
    let mut seen = 0;
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        let event = dir.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(HANDLED_EVENTS.contains(&event.as_str()), "{event}");
        for file in std::fs::read_dir(&dir).unwrap() {
            let file = file.unwrap().path();
            if file.extension().is_none_or(|e| e != "json") {
                continue;
            }
            seen += 1;
            let body = std::fs::read(&file).unwrap();
            let name = file.file_name().unwrap().to_str().unwrap();
            match parse(&event, &body) {
                Ok(_) => assert!(!name.contains("typed"), "{name} parsed"),
                Err(e) => assert!(name.contains("typed"), "{event}/{name}: {e}"),
            }
            // The receiver's envelope reads every example too.
            serde_json::from_slice::<Envelope>(&body).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
    assert_eq!(seen, 59, "payload examples found");
}

#[test]
fn pushes_parse() {
    let e = parse("push", &fixture("push/with-new-branch.payload.json")).unwrap();
    let Event::Pushed(p) = e else { panic!("{e:?}") };
    assert_eq!(p.repo.as_str(), "Codertocat/Hello-World");
    assert!(p.installation.is_some());
    assert!(!p.sender_is_bot && !p.deleted);
    let raw: serde_json::Value =
        serde_json::from_slice(&fixture("push/with-new-branch.payload.json")).unwrap();
    assert_eq!(p.after, raw["after"].as_str().unwrap());
    assert_eq!(p.branch.as_deref(), Some("master"));

    // A tag is no branch; a bot's push is not a person's.
    let mut tag = raw.clone();
    tag["ref"] = "refs/tags/v1".into();
    tag["sender"]["login"] = "vibeloop[bot]".into();
    let Event::Pushed(p) = parse("push", tag.to_string().as_bytes()).unwrap() else {
        panic!()
    };
    assert_eq!((p.branch, p.sender_is_bot), (None, true));
}

/// GitHub's documented `pull_request_review_comment` shape (the collection has no example):
/// the pull request as in a review's payload, a comment on a line, and a reply in its thread.
#[test]
fn review_thread_comments_are_comments_in_a_thread() {
    let review: serde_json::Value =
        serde_json::from_slice(&fixture("pull_request_review/submitted.payload.json")).unwrap();
    let comment = |id: u64, reply_to: Option<u64>, body: &str| {
        serde_json::json!({
            "url": format!("https://api.github.com/repos/Codertocat/Hello-World/pulls/comments/{id}"),
            "pull_request_review_id": 7, "id": id, "node_id": "PRRC_x",
            "diff_hunk": "@@ -1 +1 @@\n-# Hello-World", "path": "README.md",
            "position": 1, "original_position": 1,
            "commit_id": "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
            "original_commit_id": "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
            "in_reply_to_id": reply_to,
            "user": review["review"]["user"].clone(), "body": body,
            "created_at": "2026-11-24T12:00:00Z", "updated_at": "2026-11-24T12:00:00Z",
            "html_url": format!("https://github.com/Codertocat/Hello-World/pull/2#discussion_r{id}"),
            "pull_request_url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/2",
            "author_association": "OWNER",
            "_links": {
                "self": { "href": "https://api.github.com/repos/Codertocat/Hello-World/pulls/comments/1" },
                "html": { "href": "https://github.com/Codertocat/Hello-World/pull/2#discussion_r1" },
                "pull_request": { "href": "https://api.github.com/repos/Codertocat/Hello-World/pulls/2" }
            },
            "start_line": null, "original_start_line": null, "start_side": null,
            "line": 3, "original_line": 3, "side": "RIGHT"
        })
    };
    let payload = |action: &str, c: serde_json::Value| {
        serde_json::json!({
            "action": action, "comment": c, "pull_request": review["pull_request"].clone(),
            "repository": review["repository"].clone(), "sender": review["sender"].clone(),
            "installation": { "id": 42, "node_id": "x" },
        })
    };
    let e = parse(
        "pull_request_review_comment",
        payload("created", comment(11, None, "/hive status"))
            .to_string()
            .as_bytes(),
    )
    .unwrap();
    let Event::Comment(c) = e else {
        panic!("{e:?}")
    };
    assert_eq!(
        (c.number, c.is_pull_request),
        (review["pull_request"]["number"].as_u64().unwrap(), true)
    );
    assert_eq!(
        (c.comment_id, c.thread, c.body.as_str()),
        (11, Some(11), "/hive status")
    );
    assert_eq!(c.installation, Some(InstallationId(42)));

    let reply = payload("created", comment(12, Some(11), "/hive retry"));
    let Event::Comment(c) =
        parse("pull_request_review_comment", reply.to_string().as_bytes()).unwrap()
    else {
        panic!()
    };
    assert_eq!(
        (c.comment_id, c.thread),
        (12, Some(11)),
        "a reply names its thread's first comment"
    );

    let mut edited = payload("edited", comment(12, Some(11), "/hive retry builder"));
    edited["changes"] = serde_json::json!({ "body": { "from": "/hive retry" } });
    let Event::Comment(c) =
        parse("pull_request_review_comment", edited.to_string().as_bytes()).unwrap()
    else {
        panic!()
    };
    assert_eq!(c.old_body.as_deref(), Some("/hive retry"));

    let deleted = payload("deleted", comment(12, Some(11), "/hive retry"));
    assert!(matches!(
        parse(
            "pull_request_review_comment",
            deleted.to_string().as_bytes()
        )
        .unwrap(),
        Event::NotActionable(_)
    ));
}

/// A payload written from GitHub's documentation (`tests/fixtures/documented/`).
fn documented(rel: &str) -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/documented");
    std::fs::read(root.join(rel)).unwrap()
}

#[test]
fn a_merge_groups_check_request_names_its_pull_request_and_base() {
    let body = documented("merge_group/checks_requested.payload.json");
    let Event::GroupChecks(g) = parse("merge_group", &body).unwrap() else {
        panic!("not a group")
    };
    assert_eq!(g.repo.as_str(), "Codertocat/Hello-World");
    assert_eq!(g.pull, 2);
    assert_eq!(g.head_sha, "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678");
    assert_eq!(
        g.base_sha.as_deref(),
        Some("f95f852bd8fca8fcc58a9a2d6c842781e32a215e")
    );
    assert_eq!(g.base_branch, "master");
    assert_eq!(g.installation, Some(InstallationId(1)));
    // A destroyed group asks nothing; a group whose ref names no pull request is unparsed.
    let body = documented("merge_group/destroyed.payload.json");
    assert!(matches!(
        parse("merge_group", &body),
        Ok(Event::NotActionable(_))
    ));
    // Older deliveries carry no base commit.
    let mut v: serde_json::Value = serde_json::from_slice(&body_of_checks()).unwrap();
    v["merge_group"].as_object_mut().unwrap().remove("base_sha");
    let Event::GroupChecks(g) = parse("merge_group", &serde_json::to_vec(&v).unwrap()).unwrap()
    else {
        panic!("not a group")
    };
    assert_eq!((g.pull, g.base_sha), (2, None));
    v["merge_group"]["head_ref"] = "refs/heads/main".into();
    let e = parse("merge_group", &serde_json::to_vec(&v).unwrap()).unwrap_err();
    assert!(e.reason.contains("names no pull request"), "{e}");
}

fn body_of_checks() -> Vec<u8> {
    documented("merge_group/checks_requested.payload.json")
}

#[test]
fn a_pull_request_out_of_the_queue_says_why() {
    let mut v: serde_json::Value =
        serde_json::from_slice(&fixture("pull_request/closed.payload.json")).unwrap();
    v["action"] = "dequeued".into();
    v["reason"] = "MERGE_CONFLICT".into();
    let Event::Dequeued(d) = parse("pull_request", &serde_json::to_vec(&v).unwrap()).unwrap()
    else {
        panic!("not dequeued")
    };
    assert_eq!((d.number, d.reason.as_str()), (2, "MERGE_CONFLICT"));
    assert_eq!(
        d.head_sha,
        v["pull_request"]["head"]["sha"].as_str().unwrap()
    );
    assert_eq!(d.sender, "Codertocat");
}

//! Webhook payloads built from GitHub's real examples in `tests/fixtures/github/webhooks/`, and
//! a sender that signs them as GitHub does.

use std::path::PathBuf;

use serde_json::{Value, json};

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/github")
}

/// A payload written from GitHub's documentation (`tests/fixtures/documented/`), as bytes.
pub fn documented(rel: &str) -> Vec<u8> {
    let path = fixtures().with_file_name("documented").join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// A payload example, as bytes.
pub fn example(rel: &str) -> Vec<u8> {
    std::fs::read(fixtures().join("webhooks").join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Points a payload's `repository` at `full_name` and adds `installation` when given.
pub fn retarget(v: &mut Value, full_name: &str, installation: Option<u64>) {
    let (owner, name) = full_name.split_once('/').unwrap();
    let repo = &mut v["repository"];
    repo["full_name"] = json!(full_name);
    repo["name"] = json!(name);
    repo["owner"]["login"] = json!(owner);
    repo["default_branch"] = json!("main");
    // The id the fake GitHub gives the repository first made under the name.
    repo["id"] = json!(vibeloop::forge::repository_id(full_name, 0));
    if let Some(id) = installation {
        v["installation"] =
            json!({ "id": id, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==" });
    }
}

/// `issues.labeled` for issue `number` of `repo`, from GitHub's example.
pub fn issues_labeled(
    repo: &str,
    installation: Option<u64>,
    number: u64,
    title: &str,
    body: &str,
    label: &str,
) -> Vec<u8> {
    issues_labeled_by(repo, installation, number, title, body, label, "Codertocat")
}

/// [`issues_labeled`] with `sender` as who put the label on.
pub fn issues_labeled_by(
    repo: &str,
    installation: Option<u64>,
    number: u64,
    title: &str,
    body: &str,
    label: &str,
    sender: &str,
) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&example("issues/labeled.payload.json")).unwrap();
    retarget(&mut v, repo, installation);
    v["issue"]["number"] = json!(number);
    v["issue"]["title"] = json!(title);
    v["issue"]["body"] = json!(body);
    v["label"]["name"] = json!(label);
    v["sender"]["login"] = json!(sender);
    v["sender"]["type"] = json!(if sender.ends_with("[bot]") {
        "Bot"
    } else {
        "User"
    });
    serde_json::to_vec(&v).unwrap()
}

/// A fresh delivery GUID.
pub fn delivery_id() -> String {
    let n: u128 = rand::random();
    let h = format!("{n:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// `X-Hub-Signature-256` of `body`.
pub fn sign(secret: &str, body: &[u8]) -> String {
    vibeloop::webhook::signature::sign(&secrecy::SecretString::from(secret.to_owned()), body)
}

/// An answer of the receiver.
#[derive(Debug)]
pub struct Sent {
    pub status: u16,
    pub text: String,
    pub delivery: String,
}

/// Sends `body` to `url` as GitHub would: event, delivery id and signature headers.
pub async fn send(url: &str, secret: &str, event: &str, body: &[u8]) -> Sent {
    let delivery = delivery_id();
    send_with(
        url,
        &[
            ("X-GitHub-Event", event),
            ("X-GitHub-Delivery", &delivery),
            ("X-Hub-Signature-256", &sign(secret, body)),
        ],
        body,
        &delivery,
    )
    .await
}

/// Sends `body` with exactly these headers (plus a JSON content type).
pub async fn send_with(url: &str, headers: &[(&str, &str)], body: &[u8], delivery: &str) -> Sent {
    let mut req = reqwest::Client::new()
        .post(format!("{url}/webhook"))
        .header("content-type", "application/json")
        .header("user-agent", "GitHub-Hookshot/test")
        .body(body.to_vec());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    // A receiver that is down is an answer too (GitHub logs it as a failed delivery): status 0.
    match req.send().await {
        Ok(resp) => Sent {
            status: resp.status().as_u16(),
            text: resp.text().await.unwrap_or_default(),
            delivery: delivery.to_owned(),
        },
        Err(e) => Sent {
            status: 0,
            text: format!("failed to connect: {e}"),
            delivery: delivery.to_owned(),
        },
    }
}

/// `check_run.rerequested` for one of the bot's check runs, from GitHub's example.
pub fn check_run_rerequested(
    repo: &str,
    installation: u64,
    name: &str,
    external_id: &str,
    sha: &str,
) -> Vec<u8> {
    let mut v: Value =
        serde_json::from_slice(&example("check_run/rerequested.payload.json")).unwrap();
    retarget(&mut v, repo, Some(installation));
    v["check_run"]["name"] = json!(name);
    v["check_run"]["external_id"] = json!(external_id);
    v["check_run"]["head_sha"] = json!(sha);
    serde_json::to_vec(&v).unwrap()
}

/// `check_run.completed` of another App's check `name` on `sha` (of `branch`), from GitHub's
/// example.
pub fn check_run_completed(
    repo: &str,
    installation: u64,
    name: &str,
    sha: &str,
    branch: &str,
    conclusion: &str,
) -> Vec<u8> {
    let mut v: Value =
        serde_json::from_slice(&example("check_run/completed.payload.json")).unwrap();
    retarget(&mut v, repo, Some(installation));
    let c = &mut v["check_run"];
    c["name"] = json!(name);
    c["head_sha"] = json!(sha);
    c["status"] = json!("completed");
    c["conclusion"] = json!(conclusion);
    c["external_id"] = json!("");
    c["check_suite"]["head_sha"] = json!(sha);
    c["check_suite"]["head_branch"] = json!(branch);
    serde_json::to_vec(&v).unwrap()
}

/// `status`: commit status `context` = `state` on `sha`, the head of `branches`. The collection
/// has no example of this event; it is built on the repository and sender of the
/// `check_run.completed` example, with the fields GitHub documents for it.
pub fn status(
    repo: &str,
    installation: u64,
    sha: &str,
    context: &str,
    state: &str,
    branches: &[String],
) -> Vec<u8> {
    let base: Value = serde_json::from_slice(&example("check_run/completed.payload.json")).unwrap();
    let mut v = json!({
        "id": 6_805_126_730u64, "sha": sha, "name": repo, "target_url": null, "avatar_url": null,
        "context": context, "description": null, "state": state,
        "commit": { "sha": sha, "url": format!("https://api.github.com/repos/{repo}/commits/{sha}") },
        "branches": branches
            .iter()
            .map(|b| json!({ "name": b, "commit": { "sha": sha }, "protected": false }))
            .collect::<Vec<_>>(),
        "created_at": "2026-11-24T12:00:00Z", "updated_at": "2026-11-24T12:00:00Z",
        "repository": base["repository"], "sender": base["sender"],
    });
    retarget(&mut v, repo, Some(installation));
    serde_json::to_vec(&v).unwrap()
}

/// `check_suite.rerequested` for `branch` at `sha`, from GitHub's example.
pub fn check_suite_rerequested(repo: &str, installation: u64, sha: &str, branch: &str) -> Vec<u8> {
    let mut v: Value =
        serde_json::from_slice(&example("check_suite/rerequested.payload.json")).unwrap();
    retarget(&mut v, repo, Some(installation));
    v["check_suite"]["head_sha"] = json!(sha);
    v["check_suite"]["head_branch"] = json!(branch);
    serde_json::to_vec(&v).unwrap()
}

/// Rewrites a built payload: `f` edits it as JSON.
pub fn edit(payload: &[u8], f: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(payload).expect("JSON payload");
    f(&mut v);
    serde_json::to_vec(&v).unwrap()
}

/// Sets the `issue` of a payload to `title`, `body` and `labels` (URLs pointed at `repo`).
pub fn describe_issue(v: &mut Value, repo: &str, title: &str, body: &str, labels: &[String]) {
    let issue = &mut v["issue"];
    issue["title"] = json!(title);
    issue["body"] = json!(body);
    issue["labels"] = labels
        .iter()
        .map(|l| {
            json!({
                "id": 1, "node_id": "LA_1", "url": format!("https://api.github.com/repos/{repo}/labels/{l}"),
                "name": l, "color": "ededed", "default": false, "description": null,
            })
        })
        .collect();
}

/// Points `issue` of a payload at number `n` of `repo`, a pull request when `is_pr`.
fn set_issue(v: &mut Value, repo: &str, n: u64, is_pr: bool) {
    let api = format!("https://api.github.com/repos/{repo}/issues/{n}");
    let issue = &mut v["issue"];
    issue["number"] = json!(n);
    issue["url"] = json!(api);
    issue["repository_url"] = json!(format!("https://api.github.com/repos/{repo}"));
    issue["comments_url"] = json!(format!("{api}/comments"));
    issue["labels_url"] = json!(format!("{api}/labels{{/name}}"));
    issue["events_url"] = json!(format!("{api}/events"));
    let kind = if is_pr { "pull" } else { "issues" };
    issue["html_url"] = json!(format!("https://github.com/{repo}/{kind}/{n}"));
    let obj = issue.as_object_mut().unwrap();
    if is_pr {
        obj.insert(
            "pull_request".into(),
            json!({
                "url": format!("https://api.github.com/repos/{repo}/pulls/{n}"),
                "html_url": format!("https://github.com/{repo}/pull/{n}"),
                "diff_url": format!("https://github.com/{repo}/pull/{n}.diff"),
                "patch_url": format!("https://github.com/{repo}/pull/{n}.patch"),
                "merged_at": null,
            }),
        );
    } else {
        obj.remove("pull_request");
    }
}

/// An `issue_comment` payload from `file`, for comment `comment_id` by `user`.
#[allow(clippy::too_many_arguments)]
fn comment_payload(
    file: &str,
    repo: &str,
    installation: u64,
    issue: u64,
    user: &str,
    comment_id: u64,
    body: &str,
    is_pull_request: bool,
) -> Value {
    let mut v: Value = serde_json::from_slice(&example(file)).unwrap();
    retarget(&mut v, repo, Some(installation));
    set_issue(&mut v, repo, issue, is_pull_request);
    let kind = if is_pull_request { "pull" } else { "issues" };
    let c = &mut v["comment"];
    c["id"] = json!(comment_id);
    c["node_id"] = json!(format!("IC_{comment_id}"));
    c["body"] = json!(body);
    c["user"] = crate::support::fake_github::user_json(user);
    c["author_association"] = json!("NONE");
    c["url"] = json!(format!(
        "https://api.github.com/repos/{repo}/issues/comments/{comment_id}"
    ));
    c["html_url"] = json!(format!(
        "https://github.com/{repo}/{kind}/{issue}#issuecomment-{comment_id}"
    ));
    c["issue_url"] = json!(format!(
        "https://api.github.com/repos/{repo}/issues/{issue}"
    ));
    v["sender"] = crate::support::fake_github::user_json(user);
    v
}

/// `issue_comment.created`: `user` commented `body` on issue (or pull request) `issue`, from
/// GitHub's example (the comment's `author_association` is `NONE`; edit it for members).
pub fn issue_comment_created(
    repo: &str,
    installation: u64,
    issue: u64,
    user: &str,
    comment_id: u64,
    body: &str,
    is_pull_request: bool,
) -> Vec<u8> {
    let v = comment_payload(
        "issue_comment/created.with-installation.payload.json",
        repo,
        installation,
        issue,
        user,
        comment_id,
        body,
        is_pull_request,
    );
    serde_json::to_vec(&v).unwrap()
}

/// `issue_comment.edited`: comment `comment_id` now reads `body`, was `old_body`.
#[allow(clippy::too_many_arguments)]
pub fn issue_comment_edited(
    repo: &str,
    installation: u64,
    issue: u64,
    user: &str,
    comment_id: u64,
    body: &str,
    is_pull_request: bool,
    old_body: &str,
) -> Vec<u8> {
    let mut v = comment_payload(
        "issue_comment/edited.payload.json",
        repo,
        installation,
        issue,
        user,
        comment_id,
        body,
        is_pull_request,
    );
    v["changes"] = json!({ "body": { "from": old_body } });
    serde_json::to_vec(&v).unwrap()
}

/// `issues.edited` for issue `issue`, now titled `title` with `body` (`changes` is empty:
/// add `title.from`/`body.from` with [`edit`]).
pub fn issues_edited(
    repo: &str,
    installation: u64,
    issue: u64,
    title: &str,
    body: &str,
) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&example("issues/edited.payload.json")).unwrap();
    retarget(&mut v, repo, Some(installation));
    set_issue(&mut v, repo, issue, false);
    v["issue"]["title"] = json!(title);
    v["issue"]["body"] = json!(body);
    serde_json::to_vec(&v).unwrap()
}

/// `pull_request_review.submitted`: `user` reviewed pull request `pr_number` at `head_sha`;
/// `state` as webhooks spell it: `approved`, `commented`, `changes_requested`.
pub fn pull_request_review_submitted(
    repo: &str,
    installation: u64,
    pr_number: u64,
    user: &str,
    state: &str,
    head_sha: &str,
) -> Vec<u8> {
    let mut v: Value =
        serde_json::from_slice(&example("pull_request_review/submitted.payload.json")).unwrap();
    retarget(&mut v, repo, Some(installation));
    let pr_api = format!("https://api.github.com/repos/{repo}/pulls/{pr_number}");
    let pr_web = format!("https://github.com/{repo}/pull/{pr_number}");
    let review_id = v["review"]["id"].as_u64().unwrap_or(1);
    let r = &mut v["review"];
    r["user"] = crate::support::fake_github::user_json(user);
    r["state"] = json!(state);
    r["commit_id"] = json!(head_sha);
    r["pull_request_url"] = json!(pr_api);
    r["html_url"] = json!(format!("{pr_web}#pullrequestreview-{review_id}"));
    r["_links"] = json!({
        "html": { "href": format!("{pr_web}#pullrequestreview-{review_id}") },
        "pull_request": { "href": pr_api },
    });
    let p = &mut v["pull_request"];
    p["number"] = json!(pr_number);
    p["url"] = json!(pr_api);
    p["html_url"] = json!(pr_web);
    p["issue_url"] = json!(format!(
        "https://api.github.com/repos/{repo}/issues/{pr_number}"
    ));
    p["head"]["sha"] = json!(head_sha);
    v["sender"] = crate::support::fake_github::user_json(user);
    serde_json::to_vec(&v).unwrap()
}

/// `check_run.requested_action`: someone pressed button `identifier` of check run `name` at
/// `sha`, from GitHub's example (`pull_requests` empty: the sender fills it).
pub fn check_run_requested_action(
    repo: &str,
    installation: u64,
    name: &str,
    external_id: &str,
    sha: &str,
    identifier: &str,
) -> Vec<u8> {
    let mut v: Value =
        serde_json::from_slice(&example("check_run/requested_action.payload.json")).unwrap();
    retarget(&mut v, repo, Some(installation));
    if let Some(o) = v.as_object_mut() {
        o.remove("organization");
    }
    let c = &mut v["check_run"];
    c["name"] = json!(name);
    c["external_id"] = json!(external_id);
    c["head_sha"] = json!(sha);
    c["check_suite"]["head_sha"] = json!(sha);
    c["check_suite"]["after"] = json!(sha);
    c["check_suite"]["pull_requests"] = json!([]);
    c["pull_requests"] = json!([]);
    v["requested_action"] = json!({ "identifier": identifier });
    serde_json::to_vec(&v).unwrap()
}

/// `issues.closed` for issue `number` of `repo`, from GitHub's example.
pub fn issues_closed(repo: &str, installation: u64, number: u64, labels: &[String]) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&example(
        "issues/closed.from-C-Saunders-comment-when-done.payload.json",
    ))
    .unwrap();
    retarget(&mut v, repo, Some(installation));
    set_issue(&mut v, repo, number, false);
    let (title, body) = (
        v["issue"]["title"].as_str().unwrap_or("").to_owned(),
        v["issue"]["body"].as_str().unwrap_or("").to_owned(),
    );
    describe_issue(&mut v, repo, &title, &body, labels);
    v["issue"]["state"] = json!("closed");
    serde_json::to_vec(&v).unwrap()
}

/// `pull_request.closed` for pull request `number` of `repo`, merged (as `(merge commit, by)`)
/// or not, from GitHub's example.
pub fn pull_request_closed(
    repo: &str,
    installation: u64,
    number: u64,
    merged: Option<(&str, &str)>,
) -> Vec<u8> {
    let mut v: Value =
        serde_json::from_slice(&example("pull_request/closed.payload.json")).unwrap();
    retarget(&mut v, repo, Some(installation));
    v["number"] = json!(number);
    let p = &mut v["pull_request"];
    p["number"] = json!(number);
    p["merged"] = json!(merged.is_some());
    p["state"] = json!("closed");
    if let Some((sha, by)) = merged {
        p["merge_commit_sha"] = json!(sha);
        p["merged_by"] = vibeloop::forge::json::user_json(by);
    }
    serde_json::to_vec(&v).unwrap()
}

/// `issues.unlabeled`: `label` was taken off issue `number` of `repo`, from GitHub's example.
pub fn issues_unlabeled(repo: &str, installation: u64, number: u64, label: &str) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&example("issues/unlabeled.payload.json")).unwrap();
    retarget(&mut v, repo, Some(installation));
    set_issue(&mut v, repo, number, false);
    v["label"]["name"] = json!(label);
    serde_json::to_vec(&v).unwrap()
}

/// `push`: `user` pushed `after` (on top of `before`) to `branch`, from GitHub's example.
pub fn push(
    repo: &str,
    installation: u64,
    branch: &str,
    before: &str,
    after: &str,
    user: &str,
) -> Vec<u8> {
    let mut v: Value =
        serde_json::from_slice(&example("push/with-new-branch.payload.json")).unwrap();
    retarget(&mut v, repo, Some(installation));
    v["ref"] = json!(format!("refs/heads/{branch}"));
    v["before"] = json!(before);
    v["after"] = json!(after);
    v["created"] = json!(false);
    v["compare"] = json!(format!(
        "https://github.com/{repo}/compare/{}...{}",
        &before[..12.min(before.len())],
        &after[..12.min(after.len())]
    ));
    v["commits"] = json!([]);
    v["head_commit"] = json!(null);
    v["pusher"] = json!({ "name": user, "email": format!("{user}@example.com") });
    v["sender"] = crate::support::fake_github::user_json(user);
    serde_json::to_vec(&v).unwrap()
}

/// `pull_request_review_comment.created`: `user` commented `body` on `path`:`line` of pull
/// request `pr` (GitHub's documented shape; the collection has no example), in the thread of
/// `reply_to` when it answers one. The pull request comes from a review's example, retargeted.
#[allow(clippy::too_many_arguments)]
pub fn review_comment_created(
    repo: &str,
    installation: u64,
    pr: u64,
    head: (&str, &str),
    comment: (u64, Option<u64>),
    user: &str,
    place: (&str, u64),
    body: &str,
) -> Vec<u8> {
    let mut v: Value =
        serde_json::from_slice(&example("pull_request_review/submitted.payload.json")).unwrap();
    retarget(&mut v, repo, Some(installation));
    let (id, reply_to) = comment;
    let api = format!("https://api.github.com/repos/{repo}/pulls");
    let web = format!("https://github.com/{repo}/pull/{pr}");
    let c = json!({
        "url": format!("{api}/comments/{id}"),
        "pull_request_review_id": id, "id": id, "node_id": format!("PRRC_{id}"),
        "diff_hunk": "", "path": place.0, "position": 1, "original_position": 1,
        "commit_id": head.1, "original_commit_id": head.1, "in_reply_to_id": reply_to,
        "user": crate::support::fake_github::user_json(user), "body": body,
        "created_at": "2026-11-24T12:00:00Z", "updated_at": "2026-11-24T12:00:00Z",
        "html_url": format!("{web}#discussion_r{id}"), "pull_request_url": format!("{api}/{pr}"),
        "author_association": "MEMBER",
        "_links": {
            "self": { "href": format!("{api}/comments/{id}") },
            "html": { "href": format!("{web}#discussion_r{id}") },
            "pull_request": { "href": format!("{api}/{pr}") }
        },
        "start_line": null, "original_start_line": null, "start_side": null,
        "line": place.1, "original_line": place.1, "side": "RIGHT"
    });
    let p = &mut v["pull_request"];
    p["number"] = json!(pr);
    p["url"] = json!(format!("{api}/{pr}"));
    p["html_url"] = json!(web);
    p["head"]["ref"] = json!(head.0);
    p["head"]["sha"] = json!(head.1);
    let out = json!({
        "action": "created", "comment": c, "pull_request": v["pull_request"].clone(),
        "repository": v["repository"].clone(), "installation": v["installation"].clone(),
        "sender": crate::support::fake_github::user_json(user),
    });
    serde_json::to_vec(&out).unwrap()
}

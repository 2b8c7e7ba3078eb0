//! The JSON GitHub answers with, for the fake's objects (shapes from the OpenAPI subset).

use git2::{Oid, Repository};
use serde_json::{Value, json};

use super::now;
use crate::gitops::FileDiff;
use crate::{BOT_LOGIN, CheckRun, Comment, Pull, Repo, Review, ReviewComment};

const API: &str = "https://api.github.com";
const WEB: &str = "https://github.com";

/// A stable numeric id for a login.
pub fn user_id(login: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in login.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    10_000 + h % 90_000_000
}

/// GitHub's `simple-user` for `login` (`type: Bot` for `…[bot]` logins).
pub fn user_json(login: &str) -> Value {
    let id = user_id(login);
    let u = format!("{API}/users/{login}");
    json!({
        "login": login, "id": id, "node_id": format!("U_kgDO{id}"),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{id}?v=4"), "gravatar_id": "",
        "url": u, "html_url": format!("{WEB}/{login}"),
        "followers_url": format!("{u}/followers"), "following_url": format!("{u}/following{{/other_user}}"),
        "gists_url": format!("{u}/gists{{/gist_id}}"), "starred_url": format!("{u}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{u}/subscriptions"), "organizations_url": format!("{u}/orgs"),
        "repos_url": format!("{u}/repos"), "events_url": format!("{u}/events{{/privacy}}"),
        "received_events_url": format!("{u}/received_events"),
        "type": if login.ends_with("[bot]") { "Bot" } else { "User" }, "site_admin": false,
    })
}

/// `author_association` of `login` on `repo`: the owner, a collaborator (any role but `none`),
/// or no one.
pub fn association(r: &Repo, repo: &str, login: &str) -> &'static str {
    if repo.split('/').next() == Some(login) {
        "OWNER"
    } else if r.permissions.get(login).is_some_and(|p| p != "none") {
        "COLLABORATOR"
    } else {
        "NONE"
    }
}

pub fn comment_json(repo: &str, c: &Comment, association: &str) -> Value {
    json!({
        "id": c.id, "node_id": format!("IC_{}", c.id),
        "url": format!("{API}/repos/{repo}/issues/comments/{}", c.id),
        "html_url": format!("{WEB}/{repo}/issues/{}#issuecomment-{}", c.issue, c.id),
        "issue_url": format!("{API}/repos/{repo}/issues/{}", c.issue),
        "body": c.body, "user": user_json(&c.user),
        "created_at": now(), "updated_at": now(), "author_association": association,
    })
}

pub fn check_json(repo: &str, c: &CheckRun) -> Value {
    json!({
        "id": c.id, "name": c.name, "head_sha": c.head_sha, "external_id": c.external_id,
        "status": c.status, "conclusion": c.conclusion, "started_at": c.started_at, "completed_at": c.completed_at,
        "html_url": format!("{WEB}/{repo}/runs/{}", c.id),
        "details_url": format!("{WEB}/{repo}/runs/{}", c.id),
        "output": { "title": c.title, "summary": c.summary, "annotations_count": c.annotations.len() },
        "actions": c.actions,
        "app": app_json(c.app.as_deref()),
    })
}

/// The App that reported a check run: another App by slug, or the one the forge serves.
fn app_json(slug: Option<&str>) -> Value {
    let slug = slug.unwrap_or(crate::APP_SLUG);
    let id = user_id(slug);
    json!({ "id": id, "slug": slug, "node_id": format!("A_{id}"), "name": slug })
}

pub fn label_json(repo: &str, name: &str) -> Value {
    let id = user_id(name);
    json!({
        "id": id, "node_id": format!("LA_{id}"), "url": format!("{API}/repos/{repo}/labels/{name}"),
        "name": name, "description": null, "color": "ededed", "default": false,
    })
}

/// A pull request; `base_sha` is the base branch's head now.
pub fn pull_json(repo: &str, p: &Pull, base_sha: Option<&str>, labels: &[String]) -> Value {
    let owner = repo.split('/').next().unwrap_or("");
    let api = format!("{API}/repos/{repo}/pulls/{}", p.number);
    json!({
        "id": p.number + 500_000, "node_id": format!("PR_{}", p.number), "number": p.number,
        "url": api, "html_url": format!("{WEB}/{repo}/pull/{}", p.number),
        "diff_url": format!("{WEB}/{repo}/pull/{}.diff", p.number),
        "issue_url": format!("{API}/repos/{repo}/issues/{}", p.number),
        "state": p.state, "locked": false, "title": p.title, "body": p.body, "user": user_json(&p.user),
        "labels": labels.iter().map(|l| label_json(repo, l)).collect::<Vec<_>>(),
        "head": { "ref": p.head, "sha": p.head_sha, "label": format!("{owner}:{}", p.head), "user": user_json(owner) },
        "base": { "ref": p.base, "sha": base_sha, "label": format!("{owner}:{}", p.base), "user": user_json(owner) },
        "draft": p.draft, "merged": p.merged, "mergeable": null, "merged_at": p.merged.then(now),
        "closed_at": (p.state == "closed").then(now), "merge_commit_sha": p.merge_commit_sha,
        "merged_by": p.merged_by.as_deref().map(user_json),
        "created_at": now(), "updated_at": now(), "author_association": "NONE",
    })
}

pub fn review_json(repo: &str, rv: &Review, association: &str) -> Value {
    let html = format!("{WEB}/{repo}/pull/{}#pullrequestreview-{}", rv.pull, rv.id);
    let pr = format!("{API}/repos/{repo}/pulls/{}", rv.pull);
    let mut v = json!({
        "id": rv.id, "node_id": format!("PRR_{}", rv.id), "user": user_json(&rv.user), "body": rv.body,
        "state": rv.state, "html_url": html, "pull_request_url": pr, "commit_id": rv.commit_id,
        "_links": { "html": { "href": html }, "pull_request": { "href": pr } },
        "author_association": association,
    });
    if let Some(at) = &rv.submitted_at {
        v["submitted_at"] = json!(at);
    }
    v
}

pub fn review_comment_json(repo: &str, c: &ReviewComment, diff_hunk: &str) -> Value {
    let url = format!("{API}/repos/{repo}/pulls/comments/{}", c.id);
    let html = format!("{WEB}/{repo}/pull/{}#discussion_r{}", c.pull, c.id);
    let pr = format!("{API}/repos/{repo}/pulls/{}", c.pull);
    json!({
        "url": url, "id": c.id, "node_id": format!("PRRC_{}", c.id), "pull_request_review_id": c.review_id,
        "diff_hunk": diff_hunk, "path": c.path, "commit_id": c.commit_id, "original_commit_id": c.commit_id,
        "user": user_json(&c.user), "body": c.body, "created_at": now(), "updated_at": now(),
        "html_url": html, "pull_request_url": pr, "author_association": "NONE",
        "_links": { "self": { "href": url }, "html": { "href": html }, "pull_request": { "href": pr } },
        "start_line": c.start_line, "original_start_line": c.start_line,
        "start_side": c.start_line.map(|_| c.side.clone()),
        "line": c.line, "original_line": c.line, "side": c.side, "subject_type": "line",
        "in_reply_to_id": c.in_reply_to,
    })
}

/// GitHub's `git-user`: a commit's author or committer.
pub fn git_user_json(s: git2::Signature<'_>) -> Value {
    let when = chrono::DateTime::from_timestamp(s.when().seconds(), 0).unwrap_or_default();
    json!({
        "name": s.name().unwrap_or(""), "email": s.email().unwrap_or(""),
        "date": when.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    })
}

/// The parents of commit `c`, each with its API URL under `…/{kind}/` (`commits` or
/// `git/commits`) and its web URL.
pub fn parents_json(repo: &str, c: &git2::Commit<'_>, kind: &str) -> Vec<Value> {
    c.parent_ids()
        .map(|p| {
            json!({
                "sha": p.to_string(), "url": format!("{API}/repos/{repo}/{kind}/{p}"),
                "html_url": format!("{WEB}/{repo}/commit/{p}"),
            })
        })
        .collect()
}

/// GitHub's `commit` for `oid`, with `files` (against the first parent) when `with_files`.
pub fn commit_json(repo: &str, git: &Repository, oid: Oid, with_files: bool) -> Value {
    let Ok(c) = git.find_commit(oid) else {
        return Value::Null;
    };
    let sha = oid.to_string();
    let sig = git_user_json;
    let parents = parents_json(repo, &c, "commits");
    let mut v = json!({
        "url": format!("{API}/repos/{repo}/commits/{sha}"), "sha": sha, "node_id": format!("C_{sha}"),
        "html_url": format!("{WEB}/{repo}/commit/{sha}"),
        "comments_url": format!("{API}/repos/{repo}/commits/{sha}/comments"),
        "commit": {
            "url": format!("{API}/repos/{repo}/git/commits/{sha}"),
            "author": sig(c.author()), "committer": sig(c.committer()),
            "message": c.message().unwrap_or("").trim_end_matches('\n'),
            "tree": { "sha": c.tree_id().to_string(), "url": format!("{API}/repos/{repo}/git/trees/{}", c.tree_id()) },
            "comment_count": 0,
            "verification": super::gitdb::verification(git, oid),
        },
        "author": null, "committer": null, "parents": parents,
    });
    if with_files {
        let files = crate::gitops::diff_files(git, c.parent_id(0).ok(), oid);
        let (add, del) = files
            .iter()
            .fold((0, 0), |(a, d), f| (a + f.additions, d + f.deletions));
        v["stats"] = json!({ "total": add + del, "additions": add, "deletions": del });
        v["files"] = files
            .iter()
            .map(|f| diff_entry_json(repo, &sha, f))
            .collect();
    }
    v
}

/// GitHub's `diff-entry` of one file, at `head_sha`.
pub fn diff_entry_json(repo: &str, head_sha: &str, f: &FileDiff) -> Value {
    let mut v = json!({
        "sha": f.sha, "filename": f.filename, "status": f.status,
        "additions": f.additions, "deletions": f.deletions, "changes": f.additions + f.deletions,
        "blob_url": format!("{WEB}/{repo}/blob/{head_sha}/{}", f.filename),
        "raw_url": format!("{WEB}/{repo}/raw/{head_sha}/{}", f.filename),
        "contents_url": format!("{API}/repos/{repo}/contents/{}?ref={head_sha}", f.filename),
    });
    if let Some(p) = &f.patch {
        v["patch"] = json!(p);
    }
    if let Some(prev) = &f.previous_filename {
        v["previous_filename"] = json!(prev);
    }
    v
}

/// GitHub's `git-ref`: `full` is `refs/…`.
pub fn ref_json(repo: &str, full: &str, oid: Oid, kind: &str) -> Value {
    let plural = if kind == "commit" { "commits" } else { "tags" };
    json!({
        "ref": full, "node_id": format!("REF_{}", user_id(full)),
        "url": format!("{API}/repos/{repo}/git/{full}"),
        "object": { "type": kind, "sha": oid.to_string(), "url": format!("{API}/repos/{repo}/git/{plural}/{oid}") },
    })
}

/// The app's own user, as the author of API-made objects.
pub fn bot() -> Value {
    user_json(BOT_LOGIN)
}

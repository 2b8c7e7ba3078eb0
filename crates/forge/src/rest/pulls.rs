//! Pull requests: list, create, get, update, files, reviews and review comments.

use std::path::Path;

use axum::http::StatusCode;
use serde_json::Value;

use super::json::{association, diff_entry_json, pull_json, review_comment_json, review_json};
use super::{Answer, Cx, not_found, num, unprocessable, unprocessable_simple, validation_failed};
use crate::gitops::{self, FileDiff};
use crate::{BOT_LOGIN, Pull, Repo, Review, ReviewComment};

/// Open pull requests follow their head branch, as on GitHub.
pub fn refresh_heads(r: &mut Repo, bare: &Path) {
    for p in r.pulls.iter_mut().filter(|p| p.state == "open") {
        if let Some(sha) = gitops::branch_sha(bare, &p.head) {
            p.head_sha = sha;
        }
    }
}

fn pull_answer(cx: &mut Cx<'_>, p: &Pull, status: StatusCode) -> Answer {
    let base_sha = gitops::branch_sha(cx.bare, &p.base);
    let labels = cx.r().labels.get(&p.number).cloned().unwrap_or_default();
    (status, pull_json(cx.repo, p, base_sha.as_deref(), &labels))
}

/// The files of pull request `p` at commit `head` (default: its head): the diff from the merge
/// base with its base branch, as GitHub lists them.
fn files_at(cx: &Cx<'_>, p: &Pull, head: &str) -> Result<Vec<FileDiff>, Answer> {
    let git = cx.git()?;
    let base = gitops::resolve_commit(&git, &p.base).ok_or_else(not_found)?;
    let head = gitops::resolve_commit(&git, head).ok_or_else(not_found)?;
    Ok(gitops::compare(&git, base, head)
        .map(|c| c.files)
        .unwrap_or_default())
}

/// One line of a file's patch: `(old line, new line, text)`, and the index of its hunk header.
fn patch_lines(patch: &str) -> Vec<(Option<u32>, Option<u32>, usize, usize)> {
    let (mut old, mut new, mut hunk_at) = (0u32, 0u32, 0usize);
    let mut out = Vec::new();
    for (i, l) in patch.lines().enumerate() {
        if let Some(h) = l.strip_prefix("@@ -") {
            let nums: Vec<u32> = h
                .split([' ', ',', '+'])
                .map_while(|t| t.parse().ok())
                .collect();
            old = nums.first().copied().unwrap_or(1);
            new = h
                .split_once('+')
                .and_then(|(_, r)| r.split([',', ' ']).next()?.parse().ok())
                .unwrap_or(1);
            hunk_at = i;
            continue;
        }
        let (o, n) = match l.chars().next() {
            Some('+') => (None, Some(new)),
            Some('-') => (Some(old), None),
            Some(' ') => (Some(old), Some(new)),
            _ => continue,
        };
        old += u32::from(o.is_some());
        new += u32::from(n.is_some());
        out.push((o, n, hunk_at, i));
    }
    out
}

/// GitHub's `diff_hunk`: the hunk's header through the commented line.
fn diff_hunk(f: &FileDiff, line: Option<u64>, side: &str) -> String {
    let patch = f.patch.clone().unwrap_or_default();
    let Some(line) = line else {
        return patch;
    };
    let hit = patch_lines(&patch).into_iter().find(|(o, n, _, _)| {
        let no = if side == "LEFT" { o } else { n };
        no.map(u64::from) == Some(line)
    });
    match hit {
        Some((_, _, from, to)) => patch.lines().collect::<Vec<_>>()[from..=to].join("\n"),
        None => patch,
    }
}

/// A comment's place in the diff, or GitHub's reason it has none.
fn place<'f>(
    files: &'f [FileDiff],
    path: &str,
    line: Option<u64>,
    side: &str,
    start_line: Option<u64>,
) -> Result<&'f FileDiff, &'static str> {
    let f = files
        .iter()
        .find(|f| f.filename == path)
        .ok_or("Path could not be resolved")?;
    let lines = if side == "LEFT" {
        &f.left_lines
    } else {
        &f.right_lines
    };
    let shown = |n: u64| lines.iter().any(|l| u64::from(*l) == n);
    match line {
        Some(n) if shown(n) => {}
        _ => return Err("Line could not be resolved"),
    }
    if start_line.is_some_and(|s| !shown(s) || Some(s) > line) {
        return Err("Start line could not be resolved");
    }
    Ok(f)
}

pub fn route(cx: &mut Cx<'_>, rest: &[&str]) -> Option<Answer> {
    let repo = cx.repo.to_owned();
    let bare = cx.bare.to_owned();
    refresh_heads(cx.r(), &bare);
    Some(match (cx.method, rest) {
        ("GET", ["pulls"]) => {
            let q = cx.query();
            let state = q.get("state").cloned().unwrap_or_else(|| "open".into());
            let owner = cx.owner().to_owned();
            let list: Vec<Pull> = cx
                .r()
                .pulls
                .iter()
                .filter(|p| state == "all" || p.state == state)
                .filter(|p| {
                    q.get("head")
                        .is_none_or(|h| *h == format!("{owner}:{}", p.head))
                })
                .cloned()
                .collect();
            let v = list
                .iter()
                .map(|p| pull_answer(cx, p, StatusCode::OK).1)
                .collect();
            (StatusCode::OK, Value::Array(v))
        }
        ("POST", ["pulls"]) => {
            let (Some(title), Some(head), Some(base)) =
                (cx.field("title"), cx.field("head"), cx.field("base"))
            else {
                return Some(unprocessable("title, head and base are required"));
            };
            let owner = cx.owner().to_owned();
            let head = head
                .strip_prefix(&format!("{owner}:"))
                .map(str::to_owned)
                .unwrap_or(head);
            let Some(head_sha) = gitops::branch_sha(&bare, &head) else {
                return Some(unprocessable("Validation Failed: head does not exist"));
            };
            let Some(base_sha) = gitops::branch_sha(&bare, &base) else {
                return Some(unprocessable("Validation Failed: base does not exist"));
            };
            if cx
                .r()
                .pulls
                .iter()
                .any(|p| p.head == head && p.state == "open")
            {
                return Some(unprocessable(&format!(
                    "A pull request already exists for {owner}:{head}."
                )));
            }
            let git = tri!(cx.git());
            // Unrelated histories (no merge base) are let through: GitHub refuses them, but
            // existing tests seed head branches as root commits.
            let ahead = match (base_sha.parse(), head_sha.parse()) {
                (Ok(b), Ok(h)) => gitops::compare(&git, b, h).map(|c| c.ahead_by),
                _ => None,
            };
            if ahead == Some(0) {
                return Some(validation_failed(
                    "PullRequest",
                    "head",
                    "custom",
                    Some(&format!("No commits between {base} and {head}")),
                ));
            }
            let draft = cx.body.and_then(|b| b["draft"].as_bool()).unwrap_or(false);
            let body = cx.field("body").unwrap_or_default();
            let r = cx.r();
            let p = Pull {
                merged: false,
                merge_commit_sha: None,
                merged_by: None,
                number: r.next_number(),
                title,
                body,
                head,
                head_sha,
                base,
                state: "open".into(),
                draft,
                user: BOT_LOGIN.into(),
            };
            r.pulls.push(p.clone());
            pull_answer(cx, &p, StatusCode::CREATED)
        }
        ("PUT", ["pulls", n, "merge"]) => super::merge::merge(cx, tri!(num(n))),
        ("GET", ["pulls", n, "merge"]) => {
            let n = tri!(num(n));
            match cx.r().pulls.iter().find(|p| p.number == n) {
                Some(p) if p.merged => (StatusCode::NO_CONTENT, Value::Null),
                _ => not_found(),
            }
        }
        ("GET", ["pulls", n]) => {
            let p = tri!(find(cx, n));
            pull_answer(cx, &p, StatusCode::OK)
        }
        ("PATCH", ["pulls", n]) => {
            let p = tri!(find(cx, n));
            // `draft` is not a field of this operation: GitHub ignores it (ready-for-review and
            // convert-to-draft are GraphQL mutations only).
            let (title, text, state, base) = (
                cx.field("title"),
                cx.field("body"),
                cx.field("state"),
                cx.field("base"),
            );
            if let Some(b) = &base
                && gitops::branch_sha(&bare, b).is_none()
            {
                return Some(validation_failed("PullRequest", "base", "invalid", None));
            }
            if let Some(s) = &state
                && s != "open"
                && s != "closed"
            {
                return Some(validation_failed("PullRequest", "state", "invalid", None));
            }
            let owner = cx.owner().to_owned();
            let r = cx.r();
            if state.as_deref() == Some("open")
                && p.state == "closed"
                && r.pulls
                    .iter()
                    .any(|o| o.head == p.head && o.state == "open")
            {
                return Some(unprocessable(&format!(
                    "A pull request already exists for {owner}:{}.",
                    p.head
                )));
            }
            let Some(q) = r.pulls.iter_mut().find(|q| q.number == p.number) else {
                return Some(not_found());
            };
            q.title = title.unwrap_or(q.title.clone());
            q.body = text.unwrap_or(q.body.clone());
            q.state = state.unwrap_or(q.state.clone());
            q.base = base.unwrap_or(q.base.clone());
            let q = q.clone();
            pull_answer(cx, &q, StatusCode::OK)
        }
        ("GET", ["pulls", n, "files"]) => {
            let p = tri!(find(cx, n));
            let files = tri!(files_at(cx, &p, &p.head_sha));
            let list = files
                .iter()
                .map(|f| diff_entry_json(&repo, &p.head_sha, f))
                .collect();
            (StatusCode::OK, Value::Array(list))
        }
        ("GET", ["pulls", n, "reviews"]) => {
            let p = tri!(find(cx, n));
            let r = cx.r();
            let list = r
                .reviews
                .iter()
                .filter(|rv| rv.pull == p.number)
                .map(|rv| review_json(&repo, rv, association(r, &repo, &rv.user)))
                .collect();
            (StatusCode::OK, Value::Array(list))
        }
        ("POST", ["pulls", n, "reviews"]) => {
            let p = tri!(find(cx, n));
            create_review(cx, p)
        }
        ("POST", ["pulls", n, "comments"]) => {
            let p = tri!(find(cx, n));
            create_comment(cx, p)
        }
        ("POST", ["pulls", n, "comments", cid, "replies"]) => {
            let p = tri!(find(cx, n));
            let cid = tri!(num(cid));
            reply(cx, p, cid)
        }
        ("GET", ["pulls", n, "comments"]) => {
            let p = tri!(find(cx, n));
            let comments: Vec<ReviewComment> = cx
                .r()
                .review_comments
                .iter()
                .filter(|c| c.pull == p.number)
                .cloned()
                .collect();
            let list = comments
                .iter()
                .map(|c| {
                    // The hunk as GitHub shows it: from the diff of the commit commented on.
                    let hunk = files_at(cx, &p, &c.commit_id)
                        .ok()
                        .and_then(|files| {
                            place(&files, &c.path, c.line, &c.side, c.start_line)
                                .ok()
                                .map(|f| diff_hunk(f, c.line, &c.side))
                        })
                        .unwrap_or_default();
                    review_comment_json(&repo, c, &hunk)
                })
                .collect();
            (StatusCode::OK, Value::Array(list))
        }
        _ => return None,
    })
}

fn find(cx: &mut Cx<'_>, n: &str) -> Result<Pull, Answer> {
    let n = num(n)?;
    cx.r()
        .pulls
        .iter()
        .find(|p| p.number == n)
        .cloned()
        .ok_or_else(not_found)
}

/// `POST …/pulls/{n}/reviews`, by the app's bot.
fn create_review(cx: &mut Cx<'_>, p: Pull) -> Answer {
    let event = cx.field("event");
    let text = cx.field("body").unwrap_or_default();
    let commit = cx.field("commit_id").unwrap_or(p.head_sha.clone());
    let comments: Vec<Value> = cx
        .body
        .and_then(|b| b["comments"].as_array().cloned())
        .unwrap_or_default();
    let state = match event.as_deref() {
        None => "PENDING",
        Some("APPROVE") => "APPROVED",
        Some("REQUEST_CHANGES") => "CHANGES_REQUESTED",
        Some("COMMENT") => "COMMENTED",
        Some(_) => return validation_failed("PullRequestReview", "event", "invalid", None),
    };
    if p.user == BOT_LOGIN {
        match state {
            "APPROVED" => return unprocessable_simple(&["Can not approve your own pull request"]),
            "CHANGES_REQUESTED" => {
                return unprocessable_simple(&["Can not request changes on your own pull request"]);
            }
            _ => {}
        }
    }
    let needs_body = state == "CHANGES_REQUESTED" || (state == "COMMENTED" && comments.is_empty());
    if needs_body && text.is_empty() {
        return unprocessable_simple(&["Body is required"]);
    }
    if state == "PENDING"
        && cx
            .r()
            .reviews
            .iter()
            .any(|r| r.pull == p.number && r.user == BOT_LOGIN && r.state == "PENDING")
    {
        return unprocessable_simple(&["User can only have one pending review per pull request"]);
    }
    let files = match files_at(cx, &p, &commit) {
        Ok(f) => f,
        Err(_) => return unprocessable_simple(&["Commit could not be resolved"]),
    };
    let review_id = cx.id();
    let mut stored = Vec::new();
    for c in &comments {
        let s = |k: &str| c[k].as_str().map(str::to_owned);
        let side = s("side").unwrap_or_else(|| "RIGHT".into());
        let (path, line, start) = (
            s("path").unwrap_or_default(),
            c["line"].as_u64(),
            c["start_line"].as_u64(),
        );
        if c["position"].is_null()
            && let Err(why) = place(&files, &path, line, &side, start)
        {
            return unprocessable_simple(&[why]);
        }
        stored.push(ReviewComment {
            id: cx.id(),
            pull: p.number,
            review_id,
            user: BOT_LOGIN.into(),
            path,
            line,
            start_line: start,
            side,
            body: s("body").unwrap_or_default(),
            commit_id: commit.clone(),
            in_reply_to: None,
        });
    }
    let rv = Review {
        id: review_id,
        pull: p.number,
        user: BOT_LOGIN.into(),
        state: state.into(),
        body: text,
        commit_id: commit,
        submitted_at: (state != "PENDING").then(super::now),
    };
    let v = review_json(cx.repo, &rv, "NONE");
    let r = cx.r();
    r.reviews.push(rv);
    r.review_comments.extend(stored);
    (StatusCode::OK, v)
}

/// `POST …/pulls/{n}/comments`: one review comment (GitHub wraps it in a `COMMENTED` review).
fn create_comment(cx: &mut Cx<'_>, p: Pull) -> Answer {
    let (Some(text), Some(commit), Some(path)) =
        (cx.field("body"), cx.field("commit_id"), cx.field("path"))
    else {
        return validation_failed(
            "PullRequestReviewComment",
            "body, commit_id, path",
            "missing_field",
            None,
        );
    };
    let side = cx.field("side").unwrap_or_else(|| "RIGHT".into());
    let body = cx.body.cloned().unwrap_or(Value::Null);
    let (line, start) = (body["line"].as_u64(), body["start_line"].as_u64());
    let Ok(files) = files_at(cx, &p, &commit) else {
        return validation_failed("PullRequestReviewComment", "commit_id", "invalid", None);
    };
    let hunk = match place(&files, &path, line, &side, start) {
        Ok(f) => diff_hunk(f, line, &side),
        Err("Path could not be resolved") => {
            return validation_failed(
                "PullRequestReviewComment",
                "pull_request_review_thread.path",
                "custom",
                Some("pull_request_review_thread.path could not be resolved"),
            );
        }
        Err(_) => {
            return validation_failed(
                "PullRequestReviewComment",
                "pull_request_review_thread.line",
                "custom",
                Some("pull_request_review_thread.line must be part of the diff"),
            );
        }
    };
    let review_id = cx.id();
    let c = ReviewComment {
        id: cx.id(),
        pull: p.number,
        review_id,
        user: BOT_LOGIN.into(),
        path,
        line,
        start_line: start,
        side,
        body: text,
        commit_id: commit.clone(),
        in_reply_to: None,
    };
    let v = review_comment_json(cx.repo, &c, &hunk);
    store_alone(cx, c);
    (StatusCode::CREATED, v)
}

/// Stores a review comment made on its own (not in a submitted review), in the `COMMENTED`
/// review GitHub wraps such a comment in.
fn store_alone(cx: &mut Cx<'_>, c: ReviewComment) {
    let r = cx.r();
    r.reviews.push(Review {
        id: c.review_id,
        pull: c.pull,
        user: c.user.clone(),
        state: "COMMENTED".into(),
        body: String::new(),
        commit_id: c.commit_id.clone(),
        submitted_at: Some(super::now()),
    });
    r.review_comments.push(c);
}

/// `POST …/pulls/{n}/comments/{id}/replies`: an answer in the thread of a top-level review
/// comment, by the app's bot (GitHub wraps it in a `COMMENTED` review too).
fn reply(cx: &mut Cx<'_>, p: Pull, to: u64) -> Answer {
    let Some(text) = cx.field("body").filter(|b| !b.is_empty()) else {
        return validation_failed("PullRequestReviewComment", "body", "missing_field", None);
    };
    let Some(parent) = cx
        .r()
        .review_comments
        .iter()
        .find(|c| c.id == to && c.pull == p.number)
        .cloned()
    else {
        return (
            StatusCode::NOT_FOUND,
            serde_json::json!({ "message": "Not Found" }),
        );
    };
    let review_id = cx.id();
    let c = ReviewComment {
        id: cx.id(),
        pull: p.number,
        review_id,
        user: BOT_LOGIN.into(),
        body: text,
        in_reply_to: Some(parent.in_reply_to.unwrap_or(parent.id)),
        ..parent
    };
    let v = review_comment_json(cx.repo, &c, "");
    store_alone(cx, c);
    (StatusCode::CREATED, v)
}

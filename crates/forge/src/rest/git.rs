//! The git database on the real bare repository: refs, annotated tags, commits and comparisons.
//! No branch is protected here; the test suite's fake GitHub puts protection in front.

use axum::http::StatusCode;
use git2::Oid;
use serde_json::{Value, json};

use super::json::{commit_json, diff_entry_json, ref_json, user_id};
use super::{Answer, Cx, err, not_found, unprocessable, validation_failed};
use crate::gitops;
use crate::{BOT_LOGIN, Repo};

const API: &str = "https://api.github.com";

pub fn route(cx: &mut Cx<'_>, rest: &[&str]) -> Option<Answer> {
    Some(match (cx.method, rest) {
        ("GET", ["git", "ref", r @ ..]) if !r.is_empty() => {
            let git = tri!(cx.git());
            let full = format!("refs/{}", r.join("/"));
            match gitops::read_ref(&git, &full) {
                Some((oid, kind)) => (StatusCode::OK, ref_json(cx.repo, &full, oid, kind)),
                None => not_found(),
            }
        }
        ("POST", ["git", "refs"]) => create_ref(cx),
        ("PATCH", ["git", "refs", r @ ..]) if !r.is_empty() => {
            update_ref(cx, &format!("refs/{}", r.join("/")))
        }
        ("DELETE", ["git", "refs", r @ ..]) if !r.is_empty() => {
            delete_ref(cx, &format!("refs/{}", r.join("/")))
        }
        ("POST", ["git", "tags"]) => create_tag(cx),
        ("GET", ["branches", b @ .., "protection"]) if !b.is_empty() => {
            let branch = b.join("/");
            let git = tri!(cx.git());
            if gitops::read_ref(&git, &format!("refs/heads/{branch}")).is_none() {
                return Some(err(StatusCode::NOT_FOUND, "Branch not found"));
            }
            // The forge protects nothing (the test suite's fake GitHub adds protection).
            err(StatusCode::NOT_FOUND, "Branch not protected")
        }
        ("GET", ["commits", r @ ..]) if !r.is_empty() => {
            let reference = r.join("/");
            let git = tri!(cx.git());
            if git.is_empty().unwrap_or(true) {
                return Some(err(StatusCode::CONFLICT, "Git Repository is empty."));
            }
            match gitops::resolve_commit(&git, &reference) {
                Some(oid) => (StatusCode::OK, commit_json(cx.repo, &git, oid, true)),
                None => unprocessable(&format!("No commit found for SHA: {reference}")),
            }
        }
        ("GET", ["compare", r @ ..]) if !r.is_empty() => compare(cx, &r.join("/")),
        _ => return None,
    })
}

fn create_ref(cx: &mut Cx<'_>) -> Answer {
    let (Some(full), Some(sha)) = (cx.field("ref"), cx.field("sha")) else {
        return validation_failed("Reference", "ref, sha", "missing_field", None);
    };
    let git = match cx.git() {
        Ok(g) => g,
        Err(e) => return e,
    };
    if git.is_empty().unwrap_or(true) {
        return err(StatusCode::CONFLICT, "Git Repository is empty.");
    }
    if !full.starts_with("refs/") || full.matches('/').count() < 2 {
        return unprocessable(
            "Reference name must contain at least three slash-separated components.",
        );
    }
    if !git2::Reference::is_valid_name(&full) {
        return unprocessable(&format!("{full} is not a valid ref name."));
    }
    let Some(oid) = Oid::from_str(&sha)
        .ok()
        .filter(|o| gitops::object_kind(&git, *o).is_some())
    else {
        return unprocessable("Object does not exist");
    };
    if gitops::read_ref(&git, &full).is_some() {
        return unprocessable("Reference already exists");
    }
    if let Err(e) = gitops::set_ref(&git, &full, oid, "created by the REST API") {
        return unprocessable(&format!("Reference update failed: {e}"));
    }
    let kind = gitops::object_kind(&git, oid).unwrap_or("commit");
    (StatusCode::CREATED, ref_json(cx.repo, &full, oid, kind))
}

fn update_ref(cx: &mut Cx<'_>, full: &str) -> Answer {
    let Some(sha) = cx.field("sha") else {
        return validation_failed("Reference", "sha", "missing_field", None);
    };
    let force = cx.body.and_then(|b| b["force"].as_bool()).unwrap_or(false);
    let git = match cx.git() {
        Ok(g) => g,
        Err(e) => return e,
    };
    let Some((old, _)) = gitops::read_ref(&git, full) else {
        return unprocessable("Reference does not exist");
    };
    let Some(new) = Oid::from_str(&sha)
        .ok()
        .filter(|o| gitops::object_kind(&git, *o).is_some())
    else {
        return unprocessable("Object does not exist");
    };
    let peel = |o: Oid| {
        git.find_object(o, None)
            .and_then(|x| x.peel_to_commit())
            .map(|c| c.id())
            .unwrap_or(o)
    };
    let fast_forward = gitops::is_fast_forward(&git, peel(old), peel(new));
    if !fast_forward && !force {
        return unprocessable("Update is not a fast forward");
    }
    if let Err(e) = gitops::set_ref(&git, full, new, "updated by the REST API") {
        return unprocessable(&format!("Reference update failed: {e}"));
    }
    if let Some(branch) = full.strip_prefix("refs/heads/") {
        merged_by_push(cx.r(), &git, branch, peel(new));
    }
    let kind = gitops::object_kind(&git, new).unwrap_or("commit");
    (StatusCode::OK, ref_json(cx.repo, full, new, kind))
}

/// As GitHub does when a branch comes to contain an open pull request's head: the pull request
/// is merged and closed, and the issues its body closes (`Closes #n`) are closed.
pub fn merged_by_push(r: &mut Repo, git: &git2::Repository, branch: &str, tip: Oid) {
    let landed: Vec<u64> = r
        .pulls
        .iter()
        .filter(|p| p.state == "open" && p.base == branch)
        .filter(|p| {
            Oid::from_str(&p.head_sha).is_ok_and(|head| {
                head == tip || git.graph_descendant_of(tip, head).unwrap_or(false)
            })
        })
        .map(|p| p.number)
        .collect();
    for n in landed {
        close_as_merged(r, n, &tip.to_string(), None);
    }
}

/// Marks pull request `n` merged as `sha` (by `by`, when known) and closes the issues its body
/// closes (`Closes #n`, `Fixes #n`).
pub fn close_as_merged(r: &mut Repo, n: u64, sha: &str, by: Option<&str>) {
    let Some(p) = r.pulls.iter_mut().find(|p| p.number == n) else {
        return;
    };
    p.state = "closed".into();
    p.merged = true;
    p.merge_commit_sha = Some(sha.to_owned());
    p.merged_by = by.map(str::to_owned);
    let mut closes = Vec::new();
    for word in ["Closes #", "closes #", "Fixes #", "fixes #"] {
        for part in p.body.split(word).skip(1) {
            if let Ok(n) = part
                .chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse::<u64>()
            {
                closes.push(n);
            }
        }
    }
    for n in closes {
        if let Some(i) = r.issues.get_mut(&n) {
            i.closed = true;
        }
    }
}

fn delete_ref(cx: &mut Cx<'_>, full: &str) -> Answer {
    let git = match cx.git() {
        Ok(g) => g,
        Err(e) => return e,
    };
    if gitops::read_ref(&git, full).is_none() {
        return unprocessable("Reference does not exist");
    }
    if full.strip_prefix("refs/heads/") == Some(cx.r().default_branch.as_str()) {
        return unprocessable("Cannot delete the default branch");
    }
    match gitops::delete_ref(&git, full) {
        Ok(()) => (StatusCode::NO_CONTENT, Value::Null),
        Err(e) => unprocessable(&format!("Reference update failed: {e}")),
    }
}

fn create_tag(cx: &mut Cx<'_>) -> Answer {
    let (Some(tag), Some(message), Some(object), Some(kind)) = (
        cx.field("tag"),
        cx.field("message"),
        cx.field("object"),
        cx.field("type"),
    ) else {
        return validation_failed("Tag", "tag, message, object, type", "missing_field", None);
    };
    let git = match cx.git() {
        Ok(g) => g,
        Err(e) => return e,
    };
    let Some(oid) = Oid::from_str(&object).ok() else {
        return unprocessable("Object does not exist");
    };
    match gitops::object_kind(&git, oid) {
        None => return unprocessable("Object does not exist"),
        Some(k) if k != kind => return validation_failed("Tag", "type", "invalid", None),
        Some(_) => {}
    }
    let tagger = cx.body.map(|b| b["tagger"].clone()).unwrap_or(Value::Null);
    let name = tagger["name"].as_str().unwrap_or(BOT_LOGIN).to_owned();
    let email = tagger["email"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| {
            format!(
                "{}+{BOT_LOGIN}@users.noreply.github.com",
                user_id(BOT_LOGIN)
            )
        });
    let when = tagger["date"]
        .as_str()
        .and_then(|d| chrono::DateTime::parse_from_rfc3339(d).ok())
        .unwrap_or_else(|| chrono::Utc::now().fixed_offset());
    let time = git2::Time::new(when.timestamp(), when.offset().local_minus_utc() / 60);
    let sig = match git2::Signature::new(&name, &email, &time) {
        Ok(s) => s,
        Err(e) => return validation_failed("Tag", "tagger", "invalid", Some(&e.to_string())),
    };
    let sha = match gitops::create_tag_object(&git, &tag, oid, &message, &sig) {
        Ok(s) => s,
        Err(e) => return unprocessable(&e.to_string()),
    };
    let repo = cx.repo;
    let plural = format!("{kind}s");
    (
        StatusCode::CREATED,
        json!({
            "node_id": format!("TAG_{sha}"), "tag": tag, "sha": sha.to_string(),
            "url": format!("{API}/repos/{repo}/git/tags/{sha}"), "message": message,
            "tagger": { "name": name, "email": email, "date": when.to_utc().to_rfc3339_opts(chrono::SecondsFormat::Secs, true) },
            "object": { "type": kind, "sha": object, "url": format!("{API}/repos/{repo}/git/{plural}/{object}") },
            "verification": { "verified": false, "reason": "unsigned", "signature": null, "payload": null, "verified_at": null },
        }),
    )
}

fn compare(cx: &mut Cx<'_>, basehead: &str) -> Answer {
    let Some((base, head)) = basehead.split_once("...") else {
        return not_found();
    };
    let owner = format!("{}:", cx.owner());
    let strip = |s: &str| s.strip_prefix(owner.as_str()).unwrap_or(s).to_owned();
    let (base, head) = (strip(base), strip(head));
    let git = match cx.git() {
        Ok(g) => g,
        Err(e) => return e,
    };
    let (Some(b), Some(h)) = (
        gitops::resolve_commit(&git, &base),
        gitops::resolve_commit(&git, &head),
    ) else {
        return not_found();
    };
    let Some(c) = gitops::compare(&git, b, h) else {
        return not_found();
    };
    let repo = cx.repo;
    let web = format!("https://github.com/{repo}/compare/{basehead}");
    (
        StatusCode::OK,
        json!({
            "url": format!("{API}/repos/{repo}/compare/{basehead}"), "html_url": web,
            "permalink_url": format!("https://github.com/{repo}/compare/{b}...{h}"),
            "diff_url": format!("{web}.diff"), "patch_url": format!("{web}.patch"),
            "base_commit": commit_json(repo, &git, b, false),
            "merge_base_commit": commit_json(repo, &git, c.merge_base, false),
            "status": c.status(), "ahead_by": c.ahead_by, "behind_by": c.behind_by,
            "total_commits": c.commits.len(),
            "commits": c.commits.iter().map(|o| commit_json(repo, &git, *o, false)).collect::<Vec<_>>(),
            "files": c.files.iter().map(|f| diff_entry_json(repo, &h.to_string(), f)).collect::<Vec<_>>(),
        }),
    )
}

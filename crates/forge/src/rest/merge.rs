//! `PUT /repos/{o}/{r}/pulls/{n}/merge`: landing a pull request as GitHub does — the three
//! methods (a merge commit, a squash, a rebase), the `sha` guard and "not mergeable" on
//! conflicts. Branch protection and a repository's allowed methods are the test suite's fake
//! GitHub's, in front of this.

use axum::http::StatusCode;
use git2::Oid;
use serde_json::json;

use super::git::close_as_merged;
use super::{Answer, Cx, err, not_found, validation_failed};
use crate::BOT_LOGIN;
use crate::gitops::{self, LandMethod};

/// GitHub's answer when the merge cannot be done now.
fn not_allowed(message: &str) -> Answer {
    err(StatusCode::METHOD_NOT_ALLOWED, message)
}

pub fn merge(cx: &mut Cx<'_>, n: u64) -> Answer {
    let Some(p) = cx.r().pulls.iter().find(|p| p.number == n).cloned() else {
        return not_found();
    };
    let method = match cx.field("merge_method").as_deref() {
        None | Some("merge") => LandMethod::Merge,
        Some("squash") => LandMethod::Squash,
        Some("rebase") => LandMethod::Rebase,
        Some(_) => return validation_failed("PullRequest", "merge_method", "invalid", None),
    };
    if p.state != "open" {
        return not_allowed("Pull Request is not mergeable");
    }
    if cx.field("sha").is_some_and(|sha| sha != p.head_sha) {
        return err(
            StatusCode::CONFLICT,
            "Head branch was modified. Review and try the merge again.",
        );
    }
    let git = match cx.git() {
        Ok(g) => g,
        Err(e) => return e,
    };
    let (Some(base), Ok(head)) = (
        gitops::resolve_commit(&git, &p.base),
        Oid::from_str(&p.head_sha),
    ) else {
        return not_allowed("Pull Request is not mergeable");
    };
    let message = match method {
        LandMethod::Merge => format!(
            "Merge pull request #{n} from {}/{}\n\n{}",
            cx.owner(),
            p.head,
            p.title
        ),
        _ => format!("{} (#{n})", p.title),
    };
    let message = match (cx.field("commit_title"), cx.field("commit_message")) {
        (Some(t), Some(m)) => format!("{t}\n\n{m}"),
        (Some(t), None) => t,
        (None, Some(m)) => format!("{}\n\n{m}", message.lines().next().unwrap_or_default()),
        (None, None) => message,
    };
    let (Ok(by), Ok(committer)) = (
        git2::Signature::now(BOT_LOGIN, "bot@users.noreply.github.com"),
        git2::Signature::now("GitHub", "noreply@github.com"),
    ) else {
        return not_allowed("Pull Request is not mergeable");
    };
    let landed = match gitops::land(&git, base, head, method, &message, &by, &committer) {
        Ok(Some(tip)) => tip,
        Ok(None) | Err(_) => return not_allowed("Pull Request is not mergeable"),
    };
    if let Err(e) = gitops::set_ref(&git, &format!("refs/heads/{}", p.base), landed, "merged") {
        return err(
            StatusCode::CONFLICT,
            &format!("Reference update failed: {e}"),
        );
    }
    let sha = landed.to_string();
    close_as_merged(cx.r(), n, &sha, Some(BOT_LOGIN));
    (
        StatusCode::OK,
        json!({ "sha": sha, "merged": true, "message": "Pull Request successfully merged" }),
    )
}

//! `PUT /repos/{o}/{r}/pulls/{n}/merge`: landing a pull request as GitHub does — the three
//! methods (a merge commit, a squash, a rebase), the `sha` guard, the repository's allowed
//! methods, and the base branch's protection: required approving reviews, required checks on
//! the head and, when strict, a head that is up to date with the base.

use axum::http::StatusCode;
use git2::Oid;
use serde_json::json;

use super::git::{close_as_merged, missing_checks};
use super::{Answer, Cx, err, not_found, validation_failed};
use crate::forge::gitops::{self, LandMethod};
use crate::forge::{BOT_LOGIN, Pull, Repo};

/// GitHub's answer when the merge cannot be done now.
fn not_allowed(message: &str) -> Answer {
    err(StatusCode::METHOD_NOT_ALLOWED, message)
}

/// Roles whose reviews count toward required approvals.
fn can_write(r: &Repo, user: &str) -> bool {
    matches!(
        r.permissions.get(user).map(String::as_str),
        Some("admin" | "maintain" | "write")
    )
}

/// Approving reviews that count for pull request `p`: each reviewer's latest approving or
/// change-requesting review (comments do not change it), from someone with write access who
/// is not the pull request's author.
pub fn approvals(r: &Repo, p: &Pull) -> u32 {
    let mut latest: std::collections::BTreeMap<&str, &str> = Default::default();
    for rv in r.reviews.iter().filter(|rv| rv.pull == p.number) {
        if matches!(
            rv.state.as_str(),
            "APPROVED" | "CHANGES_REQUESTED" | "DISMISSED"
        ) {
            latest.insert(rv.user.as_str(), rv.state.as_str());
        }
    }
    latest
        .iter()
        .filter(|(user, state)| **state == "APPROVED" && **user != p.user && can_write(r, user))
        .count() as u32
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
    let word = match method {
        LandMethod::Merge => "merge",
        LandMethod::Squash => "squash",
        LandMethod::Rebase => "rebase",
    };
    if cx.r().forbidden_methods.contains(word) {
        let what = match method {
            LandMethod::Merge => "Merge commits are",
            LandMethod::Squash => "Squash merges are",
            LandMethod::Rebase => "Rebase merges are",
        };
        return not_allowed(&format!("{what} not allowed on this repository."));
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
    if let Some(rule) = cx.r().protections.get(&p.base).cloned() {
        let r = cx.r();
        let have = approvals(r, &p);
        if have < rule.required_approvals {
            let n = rule.required_approvals;
            let reviews = if n == 1 {
                "1 approving review is".to_owned()
            } else {
                format!("{n} approving reviews are")
            };
            return not_allowed(&format!(
                "At least {reviews} required by reviewers with write access."
            ));
        }
        let up_to_date = !rule.strict || gitops::is_fast_forward(&git, base, head);
        if let Some(why) = missing_checks(&rule, r, &p.head_sha, up_to_date) {
            return not_allowed(&why);
        }
        if rule.lock_branch {
            return not_allowed("Cannot change this locked branch");
        }
    }
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

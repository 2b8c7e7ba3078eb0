//! Branch protection, as GitHub enforces it, in front of the forge (which protects nothing): a
//! rule per branch ([`Protection`]) refusing ref updates and deletions through the REST API,
//! and a pull request's merge without its required approving reviews (each writer's latest,
//! not the author's), its required checks on the head or — when strict — a head up to date
//! with the base; merge methods a repository turns off; and `GET …/branches/{b}/protection`.
//! Git pushes to a protected branch are refused by the git server's hook (`git_http.rs`).
//! GitHub's words throughout.

use std::collections::BTreeMap;
use std::path::Path;

use axum::http::StatusCode;
use serde::Serialize;
use serde_json::{Value, json};
use vibeloop::forge::rest::{Answer, err, unprocessable};
use vibeloop::forge::{Pull, Repo, State, gitops};

const API: &str = "https://api.github.com";

/// A branch protection rule: the parts this fake enforces.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Protection {
    /// Check-run names or commit-status contexts that must have succeeded on the new head.
    pub required_checks: Vec<String>,
    /// Changes only through pull requests (`required_pull_request_reviews`).
    pub require_pull_request: bool,
    pub required_approvals: u32,
    /// Read-only branch: every update is refused.
    pub lock_branch: bool,
    pub allow_force_pushes: bool,
    pub allow_deletions: bool,
    /// "Require branches to be up to date before merging" (`required_status_checks.strict`).
    pub strict: bool,
}

impl Protection {
    /// Updates need these checks to have succeeded on the new head.
    pub fn checks(names: &[&str]) -> Self {
        Self {
            required_checks: names.iter().map(|s| (*s).to_owned()).collect(),
            ..Self::default()
        }
    }

    /// Refuses all updates.
    pub fn locked() -> Self {
        Self {
            lock_branch: true,
            ..Self::default()
        }
    }

    /// Changes only through pull requests with `approvals` approving reviews.
    pub fn pull_requests_only(approvals: u32) -> Self {
        Self {
            require_pull_request: true,
            required_approvals: approvals,
            ..Self::default()
        }
    }

    /// The rule most real `main` branches have: pull requests only, `approvals` approving
    /// reviews, the `checks` passing on the head, and (when `strict`) the head up to date.
    pub fn like_main(approvals: u32, checks: &[&str], strict: bool) -> Self {
        Self {
            strict,
            ..Self::pull_requests_only(approvals).with_checks(checks)
        }
    }

    fn with_checks(self, names: &[&str]) -> Self {
        Self {
            required_checks: names.iter().map(|s| (*s).to_owned()).collect(),
            ..self
        }
    }
}

/// Why `protection` refuses moving `branch` to `sha`, in GitHub's words; `None` allows it.
pub fn refusal(
    p: &Protection,
    r: &Repo,
    branch: &str,
    sha: &str,
    fast_forward: bool,
) -> Option<String> {
    if p.lock_branch {
        return Some("Cannot change this locked branch".into());
    }
    if !fast_forward && !p.allow_force_pushes {
        return Some("Cannot force-push to this protected branch".into());
    }
    if p.require_pull_request {
        return Some(format!(
            "Protected branch update failed for refs/heads/{branch}. Changes must be made through a pull request."
        ));
    }
    missing_checks(p, r, sha, true)
}

/// What the rule's required checks lack on `sha`, in GitHub's words; `None` when they all passed.
/// With `up_to_date` false (a strict rule and a head behind its base), every check counts as
/// expected, as GitHub shows them then.
pub fn missing_checks(p: &Protection, r: &Repo, sha: &str, up_to_date: bool) -> Option<String> {
    let state = |name: &str| -> &str {
        if !up_to_date {
            return "expected";
        }
        let run = r
            .check_runs
            .iter()
            .rev()
            .find(|c| c.name == name && c.head_sha == sha);
        let status = r
            .statuses
            .iter()
            .rev()
            .find(|s| s.context == name && s.sha == sha);
        match (run, status) {
            (Some(c), _) if c.status == "completed" => match c.conclusion.as_deref() {
                Some("success" | "neutral" | "skipped") => "passed",
                _ => "failing",
            },
            (_, Some(s)) if s.state == "success" => "passed",
            (_, Some(s)) if s.state != "pending" => "failing",
            _ => "expected",
        }
    };
    let missing: Vec<(&String, &str)> = p
        .required_checks
        .iter()
        .map(|c| (c, state(c)))
        .filter(|(_, s)| *s != "passed")
        .collect();
    match missing.as_slice() {
        [] => None,
        [(name, how)] if p.required_checks.len() == 1 => {
            Some(format!("Required status check \"{name}\" is {how}."))
        }
        _ => Some(format!(
            "{} of {} required status checks are expected.",
            missing.len(),
            p.required_checks.len()
        )),
    }
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
fn approvals(r: &Repo, p: &Pull) -> u32 {
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

/// GitHub's `branch-protection` for the rule.
pub(super) fn protection_json(repo: &str, branch: &str, p: &Protection) -> Value {
    let url = format!("{API}/repos/{repo}/branches/{branch}/protection");
    let mut v = json!({
        "url": url, "enabled": true, "name": branch, "protection_url": url,
        "enforce_admins": { "url": format!("{url}/enforce_admins"), "enabled": false },
        "required_linear_history": { "enabled": false },
        "allow_force_pushes": { "enabled": p.allow_force_pushes },
        "allow_deletions": { "enabled": p.allow_deletions },
        "block_creations": { "enabled": false },
        "required_conversation_resolution": { "enabled": false },
        "lock_branch": { "enabled": p.lock_branch },
        "allow_fork_syncing": { "enabled": false },
        "required_signatures": { "url": format!("{url}/required_signatures"), "enabled": false },
    });
    if !p.required_checks.is_empty() {
        v["required_status_checks"] = json!({
            "url": format!("{url}/required_status_checks"), "strict": p.strict,
            "contexts": p.required_checks,
            "checks": p.required_checks.iter().map(|c| json!({ "context": c, "app_id": null })).collect::<Vec<_>>(),
            "contexts_url": format!("{url}/required_status_checks/contexts"),
            "enforcement_level": "non_admins",
        });
    }
    if p.require_pull_request {
        v["required_pull_request_reviews"] = json!({
            "url": format!("{url}/required_pull_request_reviews"),
            "dismiss_stale_reviews": false, "require_code_owner_reviews": false,
            "required_approving_review_count": p.required_approvals,
        });
    }
    v
}

/// What the fake protects: `(repo, branch)` → rule, and merge methods turned off per repository.
#[derive(Debug, Default)]
pub struct Rules {
    pub branches: BTreeMap<(String, String), Protection>,
    pub forbidden_methods: BTreeMap<String, std::collections::BTreeSet<String>>,
    /// Rulesets, by repository (`rulesets.rs`).
    pub rulesets: Vec<(String, super::rulesets::Ruleset)>,
}

impl Rules {
    pub fn of(&self, repo: &str, branch: &str) -> Option<&Protection> {
        self.branches.get(&(repo.to_owned(), branch.to_owned()))
    }

    /// What GitHub enforces on `branch`: its classic rule with the pull request and status
    /// check rules of the rulesets over it joined in.
    pub fn enforced(&self, repo: &str, branch: &str) -> Option<Protection> {
        let mut p = self.of(repo, branch).cloned();
        for (_, set) in self
            .rulesets
            .iter()
            .filter(|(r, s)| r == repo && s.covers(branch))
        {
            for rule in &set.rules {
                let q = p.get_or_insert_with(|| Protection {
                    allow_force_pushes: true,
                    allow_deletions: true,
                    ..Protection::default()
                });
                match rule {
                    super::rulesets::Rule::PullRequest { approvals } => {
                        q.require_pull_request = true;
                        q.required_approvals = q.required_approvals.max(*approvals);
                    }
                    super::rulesets::Rule::StatusChecks { contexts, strict } => {
                        for c in contexts {
                            if !q.required_checks.contains(c) {
                                q.required_checks.push(c.clone());
                            }
                        }
                        q.strict |= strict;
                    }
                    super::rulesets::Rule::NonFastForward => q.allow_force_pushes = false,
                    _ => {}
                }
            }
        }
        p
    }

    /// The rules of `repo`'s branches.
    pub fn of_repo<'a>(&'a self, repo: &'a str) -> impl Iterator<Item = (&'a str, &'a Protection)> {
        self.branches
            .iter()
            .filter(move |((r, _), _)| r == repo)
            .map(|((_, b), p)| (b.as_str(), p))
    }
}

/// GitHub's refusal of a protected REST request, or `None` to let the forge answer.
pub(super) fn guard(
    rules: &Rules,
    st: &State,
    root: &Path,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Option<Answer> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let ["repos", owner, name, rest @ ..] = segs.as_slice() else {
        return None;
    };
    let repo = format!("{owner}/{name}");
    let r = st.repos.get(&repo)?;
    let bare = vibeloop::forge::repo_dir(root, &repo);
    match (method, rest) {
        ("GET", ["rules", "branches", b @ ..]) if !b.is_empty() => {
            let rules = super::rulesets::rules_json(&rules.rulesets, &repo, &b.join("/"));
            Some((StatusCode::OK, rules))
        }
        ("GET", ["branches", b @ .., "protection"]) if !b.is_empty() => {
            let branch = b.join("/");
            let rule = rules.of(&repo, &branch)?;
            gitops::branch_sha(&bare, &branch)?;
            Some((StatusCode::OK, protection_json(&repo, &branch, rule)))
        }
        ("PATCH", ["git", "refs", "heads", b @ ..]) if !b.is_empty() => {
            let branch = b.join("/");
            let rule = &rules.enforced(&repo, &branch)?;
            let git = gitops::open(&bare)?;
            let old = gitops::resolve_commit(&git, &branch)?;
            let new = body
                .and_then(|v| v["sha"].as_str())
                .and_then(|s| git2::Oid::from_str(s).ok())
                .and_then(|o| git.find_object(o, None).ok()?.peel_to_commit().ok())
                .map(|c| c.id())?;
            let fast_forward = gitops::is_fast_forward(&git, old, new);
            let force = body.and_then(|v| v["force"].as_bool()).unwrap_or(false);
            if !fast_forward && !force {
                return None; // the forge's own "not a fast forward"
            }
            let sets = &rules.rulesets;
            super::rulesets::ref_refusal(sets, &repo, &branch, &git, (old, new))
                .or_else(|| refusal(rule, r, &branch, &new.to_string(), fast_forward))
                .map(|why| unprocessable(&why))
        }
        ("DELETE", ["git", "refs", "heads", b @ ..]) if !b.is_empty() => {
            let rule = rules.enforced(&repo, &b.join("/"))?;
            (rule.lock_branch || !rule.allow_deletions)
                .then(|| unprocessable("Cannot delete this protected branch"))
        }
        ("PUT", ["pulls", n, "merge"]) => merge_refusal(rules, r, &repo, &bare, n, body),
        _ => None,
    }
}

/// Why GitHub would not merge pull request `n` now (protection, or a method turned off).
fn merge_refusal(
    rules: &Rules,
    r: &Repo,
    repo: &str,
    bare: &Path,
    n: &str,
    body: Option<&Value>,
) -> Option<Answer> {
    let not_allowed = |m: &str| err(StatusCode::METHOD_NOT_ALLOWED, m);
    let mut p = r.pulls.iter().find(|p| n.parse() == Ok(p.number))?.clone();
    // An open pull request's head follows its branch, as on GitHub.
    p.head_sha = gitops::branch_sha(bare, &p.head)?;
    let p = &p;
    if p.state != "open"
        || body
            .and_then(|b| b["sha"].as_str())
            .is_some_and(|s| s != p.head_sha)
    {
        return None; // the forge's own answers
    }
    let method = body
        .and_then(|b| b["merge_method"].as_str())
        .unwrap_or("merge");
    if rules
        .forbidden_methods
        .get(repo)
        .is_some_and(|m| m.contains(method))
    {
        let what = match method {
            "squash" => "Squash merges are",
            "rebase" => "Rebase merges are",
            _ => "Merge commits are",
        };
        return Some(not_allowed(&format!(
            "{what} not allowed on this repository."
        )));
    }
    let rule = &rules.enforced(repo, &p.base)?;
    if approvals(r, p) < rule.required_approvals {
        let n = rule.required_approvals;
        let reviews = if n == 1 {
            "1 approving review is".to_owned()
        } else {
            format!("{n} approving reviews are")
        };
        return Some(not_allowed(&format!(
            "At least {reviews} required by reviewers with write access."
        )));
    }
    let git = gitops::open(bare)?;
    let (base, head) = (
        gitops::resolve_commit(&git, &p.base)?,
        git2::Oid::from_str(&p.head_sha).ok()?,
    );
    let up_to_date = !rule.strict || gitops::is_fast_forward(&git, base, head);
    if let Some(why) = missing_checks(rule, r, &p.head_sha, up_to_date) {
        return Some(not_allowed(&why));
    }
    rule.lock_branch
        .then(|| not_allowed("Cannot change this locked branch"))
}

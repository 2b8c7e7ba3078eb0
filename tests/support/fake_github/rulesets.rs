//! Repository rulesets, as GitHub applies them to a branch: `GET …/rules/branches/{branch}`
//! lists the rules in force in GitHub's `repository-rule-detailed` form (an empty list where
//! none apply), and pushes of commits without a signature to a branch under
//! `required_signatures`, or whose message misses a `commit_message_pattern`, are refused with
//! GitHub's `GH013` words by the git server's hook (`git_http.rs`). A ref update through the
//! API is refused as GitHub does (422, "Repository rule violations found") where it would
//! bring unsigned commits under `required_signatures`, or move a branch only its merge queue
//! may move.

use serde_json::{Value, json};

use crate::support::git_http::RulesetPushes;

/// One ruleset of a repository, active, over the branches its patterns name.
#[derive(Debug, Clone)]
pub struct Ruleset {
    pub id: u64,
    pub name: String,
    /// `~ALL`, a branch name, or a shell pattern (`release/*`).
    pub branches: Vec<String>,
    pub rules: Vec<Rule>,
}

/// The rules this fake knows, with their parameters.
#[derive(Debug, Clone)]
pub enum Rule {
    PullRequest { approvals: u32 },
    StatusChecks { contexts: Vec<String>, strict: bool },
    Signatures,
    LinearHistory,
    MergeQueue,
    NonFastForward,
    MessagePattern { name: String, pattern: String },
}

impl Ruleset {
    /// Whether the ruleset applies to `branch`.
    pub fn covers(&self, branch: &str) -> bool {
        self.branches.iter().any(|p| match p.as_str() {
            "~ALL" => true,
            p => match p.strip_suffix('*') {
                Some(prefix) => branch.starts_with(prefix),
                None => p == branch,
            },
        })
    }

    /// Its branch patterns as the hook matches them (a shell `case` pattern each).
    pub fn hook_patterns(&self) -> Vec<String> {
        self.branches
            .iter()
            .map(|p| if p == "~ALL" { "*".into() } else { p.clone() })
            .collect()
    }
}

impl Rule {
    fn json(&self) -> Value {
        match self {
            Rule::PullRequest { approvals } => json!({
                "type": "pull_request",
                "parameters": {
                    "required_approving_review_count": approvals,
                    "dismiss_stale_reviews_on_push": false,
                    "require_code_owner_review": false,
                    "require_last_push_approval": false,
                    "required_review_thread_resolution": false,
                    "allowed_merge_methods": ["merge", "squash", "rebase"],
                },
            }),
            Rule::StatusChecks { contexts, strict } => json!({
                "type": "required_status_checks",
                "parameters": {
                    "strict_required_status_checks_policy": strict,
                    "required_status_checks":
                        contexts.iter().map(|c| json!({ "context": c })).collect::<Vec<_>>(),
                },
            }),
            Rule::Signatures => json!({ "type": "required_signatures" }),
            Rule::LinearHistory => json!({ "type": "required_linear_history" }),
            Rule::NonFastForward => json!({ "type": "non_fast_forward" }),
            Rule::MergeQueue => json!({
                "type": "merge_queue",
                "parameters": {
                    "check_response_timeout_minutes": 60,
                    "grouping_strategy": "ALLGREEN",
                    "max_entries_to_build": 5,
                    "max_entries_to_merge": 5,
                    "merge_method": "SQUASH",
                    "min_entries_to_merge": 1,
                    "min_entries_to_merge_wait_minutes": 5,
                },
            }),
            Rule::MessagePattern { name, pattern } => json!({
                "type": "commit_message_pattern",
                "parameters": { "name": name, "negate": false, "operator": "regex", "pattern": pattern },
            }),
        }
    }
}

/// `GET /repos/{repo}/rules/branches/{branch}`: every rule of the rulesets over `branch`.
pub(super) fn rules_json(sets: &[(String, Ruleset)], repo: &str, branch: &str) -> Value {
    let rules: Vec<Value> = sets
        .iter()
        .filter(|(r, set)| r == repo && set.covers(branch))
        .flat_map(|(_, set)| {
            set.rules.iter().map(|rule| {
                let mut v = rule.json();
                v["ruleset_source_type"] = json!("Repository");
                v["ruleset_source"] = json!(repo);
                v["ruleset_id"] = json!(set.id);
                v
            })
        })
        .collect();
    Value::Array(rules)
}

/// Why the rulesets over `branch` refuse moving it from `old` to `new` through the API, in
/// GitHub's words; `None` when they allow it.
pub(super) fn ref_refusal(
    sets: &[(String, Ruleset)],
    repo: &str,
    branch: &str,
    git: &git2::Repository,
    (old, new): (git2::Oid, git2::Oid),
) -> Option<String> {
    let rules: Vec<&Rule> = sets
        .iter()
        .filter(|(r, set)| r == repo && set.covers(branch))
        .flat_map(|(_, set)| set.rules.iter())
        .collect();
    let mut broken = vec![];
    if rules.iter().any(|r| matches!(r, Rule::MergeQueue)) {
        broken.push("Changes must be made through the merge queue");
    }
    if rules.iter().any(|r| matches!(r, Rule::Signatures)) {
        let mut walk = git.revwalk().ok()?;
        walk.push(new).ok()?;
        walk.hide(old).ok()?;
        let unsigned = walk
            .filter_map(Result::ok)
            .any(|oid| git.extract_signature(&oid, None).is_err());
        if unsigned {
            broken.push("Commits must have verified signatures.");
        }
    }
    if broken.is_empty() {
        return None;
    }
    Some(format!(
        "Repository rule violations found\n\n{}\n",
        broken.join("\n\n")
    ))
}

/// What the rulesets of `repo` ask of pushes, for the git server's hook.
pub(super) fn pushes(sets: &[(String, Ruleset)], repo: &str) -> RulesetPushes {
    let mut pushes = RulesetPushes::default();
    for (_, set) in sets.iter().filter(|(r, _)| r == repo) {
        for rule in &set.rules {
            match rule {
                Rule::Signatures => pushes.signed.extend(set.hook_patterns()),
                Rule::MessagePattern { name, pattern } => {
                    let said = if name.is_empty() {
                        format!("Commit message must match a given regex pattern: {pattern}")
                    } else {
                        name.clone()
                    };
                    for branches in set.hook_patterns() {
                        pushes
                            .messages
                            .push(format!("{branches}\t{said}\t{pattern}"));
                    }
                }
                _ => {}
            }
        }
    }
    pushes
}

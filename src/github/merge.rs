//! Landing a pull request through GitHub: `PUT …/pulls/{n}/merge` — the only door into a base
//! branch that requires pull requests — and what its refusals mean for a merge bot; a pull
//! request's merge state; and what the base branch's rules ask: its rulesets' rules in force
//! (`GET …/rules/branches/{b}`, readable by every App) and its classic protection, where the
//! App may read it.

use http::{Method, StatusCode};
use serde::Deserialize;
use serde_json::json;

use super::{GitHubError, Idempotent, RepoClient};
use crate::ids::CommitSha;

/// Why GitHub did not merge, as the bot acts on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeRefusal {
    /// 409: the pull request's head is no longer the commit asked to land.
    HeadMoved(String),
    /// 405 "Base branch was modified": the base moved while GitHub merged.
    BaseMoved(String),
    /// 405: not enough approving reviews.
    NeedsReview(String),
    /// 405: required checks missing, pending or failing (under a strict rule, also a head that
    /// is behind its base: GitHub then reports every required check as expected).
    NeedsChecks(String),
    /// 405 "not mergeable": the change conflicts with the base.
    Conflicts(String),
    /// Anything else GitHub refused (a method the repository turns off, a locked branch, no
    /// permission): a person decides.
    Refused { status: u16, message: String },
}

impl MergeRefusal {
    /// Reads GitHub's answer to a refused merge.
    pub fn classify(status: StatusCode, message: &str) -> Self {
        let m = message.to_owned();
        let lower = message.to_lowercase();
        match status.as_u16() {
            409 => MergeRefusal::HeadMoved(m),
            405 if lower.contains("base branch was modified") => MergeRefusal::BaseMoved(m),
            405 if lower.contains("approving review") || lower.contains("review is required") => {
                MergeRefusal::NeedsReview(m)
            }
            405 if lower.contains("status check") => MergeRefusal::NeedsChecks(m),
            405 if lower.contains("not mergeable") => MergeRefusal::Conflicts(m),
            status => MergeRefusal::Refused { status, message: m },
        }
    }

    /// GitHub's own words.
    pub fn message(&self) -> &str {
        match self {
            MergeRefusal::HeadMoved(m)
            | MergeRefusal::BaseMoved(m)
            | MergeRefusal::NeedsReview(m)
            | MergeRefusal::NeedsChecks(m)
            | MergeRefusal::Conflicts(m)
            | MergeRefusal::Refused { message: m, .. } => m,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Login {
    pub login: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Branch {
    #[serde(rename = "ref")]
    pub branch: String,
    #[serde(default)]
    pub sha: String,
}

/// A pull request's state, as much as landing needs.
#[derive(Debug, Clone, Deserialize)]
pub struct PullState {
    pub number: u64,
    /// `open` or `closed`.
    pub state: String,
    #[serde(default)]
    pub merged: bool,
    #[serde(default)]
    pub merge_commit_sha: Option<String>,
    #[serde(default)]
    pub merged_by: Option<Login>,
    pub head: Branch,
    pub base: Branch,
}

impl PullState {
    /// The commit its merge put on the base, once merged.
    pub fn landed(&self) -> Option<CommitSha> {
        self.merged
            .then(|| CommitSha::parse(self.merge_commit_sha.as_deref()?).ok())
            .flatten()
    }
}

/// What a base branch's rules ask, as far as landing cares: the union of its classic
/// protection and the rules of every ruleset over it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BranchRule {
    pub pull_requests_only: bool,
    pub required_approvals: u32,
    pub required_checks: Vec<String>,
    /// The head must be up to date with the base.
    pub strict: bool,
    /// Commits must carry verified signatures (`required_signatures`).
    pub signatures: bool,
    /// No merge commits (`required_linear_history`).
    pub linear_history: bool,
    /// Merges go through a merge queue (`merge_queue`).
    pub merge_queue: bool,
    /// Environments a deployment must have succeeded in first (`required_deployments`).
    pub deployments: Vec<String>,
    /// Commit messages must match these (`commit_message_pattern`: its name, or the pattern).
    pub message_patterns: Vec<String>,
    /// One of those patterns asks for a `Signed-off-by:` trailer.
    pub message_signoff: bool,
    /// The rulesets these rules come from ("`signed` (ruleset 7)").
    pub rulesets: Vec<String>,
}

impl BranchRule {
    /// The base asks every commit to be signed off: a `commit_message_pattern` names
    /// `Signed-off-by`, or a `DCO` check (the DCO App's) is required.
    pub fn asks_signoff(&self) -> bool {
        self.message_signoff
            || self
                .required_checks
                .iter()
                .any(|c| c.eq_ignore_ascii_case("dco"))
    }

    /// What the rule asks of a pull request, for people: "1 approving review from someone with
    /// write access, `ci/test` passing and the branch up to date"; `None` when it asks nothing.
    pub fn describe(&self) -> Option<String> {
        let mut parts = Vec::new();
        match self.required_approvals {
            0 => {}
            1 => parts.push("1 approving review from someone with write access".to_owned()),
            n => parts.push(format!(
                "{n} approving reviews from people with write access"
            )),
        }
        if !self.required_checks.is_empty() {
            let names: Vec<String> = self
                .required_checks
                .iter()
                .map(|c| format!("`{c}`"))
                .collect();
            parts.push(format!("{} passing", names.join(", ")));
        }
        if self.strict {
            parts.push("the branch up to date".into());
        }
        if self.signatures {
            parts.push("signed commits".into());
        }
        if self.linear_history {
            parts.push("a linear history".into());
        }
        for p in &self.message_patterns {
            parts.push(format!("commit messages matching {p}"));
        }
        if !self.deployments.is_empty() {
            let names: Vec<String> = self.deployments.iter().map(|e| format!("`{e}`")).collect();
            parts.push(format!("a successful deployment to {}", names.join(", ")));
        }
        if self.merge_queue {
            parts.push("landing through the merge queue".into());
        }
        let said = match parts.len() {
            0 => return None,
            1 => parts.pop().unwrap_or_default(),
            _ => {
                let last = parts.pop().unwrap_or_default();
                format!("{} and {last}", parts.join(", "))
            }
        };
        Some(match self.rulesets.as_slice() {
            [] => said,
            sets => format!("{said} (rulesets: {})", sets.join(", ")),
        })
    }

    /// With the rules of `GET …/rules/branches/{b}` (GitHub's `repository-rule-detailed`)
    /// added; entries it cannot read are passed over.
    pub fn with_rules(mut self, rules: &[serde_json::Value]) -> Self {
        for r in rules {
            if let Ok(rule) = serde_json::from_value::<RuleInForce>(r.clone()) {
                self.add(&rule);
            }
        }
        self
    }

    /// Adds the rules of a ruleset in force, as `GET …/rules/branches/{b}` lists them.
    fn add(&mut self, rule: &RuleInForce) {
        let p = &rule.parameters;
        match rule.kind.as_str() {
            "pull_request" => {
                self.pull_requests_only = true;
                let n = p["required_approving_review_count"].as_u64().unwrap_or(0);
                self.required_approvals = self.required_approvals.max(n as u32);
            }
            "required_status_checks" => {
                let checks = p["required_status_checks"].as_array();
                for c in checks.into_iter().flatten() {
                    let name = c["context"].as_str().unwrap_or_default().to_owned();
                    if !name.is_empty() && !self.required_checks.contains(&name) {
                        self.required_checks.push(name);
                    }
                }
                self.strict |= p["strict_required_status_checks_policy"]
                    .as_bool()
                    .unwrap_or(false);
            }
            "required_signatures" => self.signatures = true,
            "required_linear_history" => self.linear_history = true,
            "merge_queue" => self.merge_queue = true,
            "required_deployments" => {
                let names = p["required_deployment_environments"].as_array();
                for e in names.into_iter().flatten().filter_map(|e| e.as_str()) {
                    if !self.deployments.iter().any(|d| d == e) {
                        self.deployments.push(e.to_owned());
                    }
                }
            }
            "commit_message_pattern" => {
                let pattern = p["pattern"].as_str().unwrap_or_default();
                self.message_signoff |= !p["negate"].as_bool().unwrap_or(false)
                    && pattern.to_ascii_lowercase().contains("signed-off-by");
                let said = match (p["name"].as_str(), p["pattern"].as_str()) {
                    (Some(name), _) if !name.is_empty() => format!("\"{name}\""),
                    (_, Some(pattern)) => format!("`{pattern}`"),
                    _ => return,
                };
                if !self.message_patterns.contains(&said) {
                    self.message_patterns.push(said);
                }
            }
            _ => return,
        }
        let set = match (&rule.ruleset_source, rule.ruleset_id) {
            (Some(source), Some(id)) => format!("{id} of {source}"),
            (None, Some(id)) => id.to_string(),
            _ => return,
        };
        if !self.rulesets.contains(&set) {
            self.rulesets.push(set);
        }
    }
}

/// One rule of `GET …/rules/branches/{b}` (GitHub's `repository-rule-detailed`).
#[derive(Debug, Clone, Deserialize)]
struct RuleInForce {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    parameters: serde_json::Value,
    #[serde(default)]
    ruleset_source: Option<String>,
    #[serde(default)]
    ruleset_id: Option<u64>,
}

#[derive(Deserialize)]
struct MergeAnswer {
    #[serde(default)]
    sha: String,
    #[serde(default)]
    merged: bool,
    #[serde(default)]
    message: String,
}

impl RepoClient {
    pub async fn pull(&self, number: u64) -> Result<PullState, GitHubError> {
        let route = format!(
            "/repos/{}/{}/pulls/{number}",
            self.repo.owner(),
            self.repo.name()
        );
        self.send(Method::GET, &route, None, Idempotent::Yes).await
    }

    /// Merges pull request `number` by `method` (`rebase`, `squash`, `merge`) if its head is
    /// still `sha`: the commit the merge put on the base, or why GitHub refused. A merge that
    /// already happened (a resend after an answer that got lost) is found and returned.
    pub async fn merge_pull(
        &self,
        number: u64,
        method: &str,
        sha: &CommitSha,
        title: &str,
        message: &str,
    ) -> Result<Result<CommitSha, MergeRefusal>, GitHubError> {
        let route = format!(
            "/repos/{}/{}/pulls/{number}/merge",
            self.repo.owner(),
            self.repo.name()
        );
        let mut body = json!({ "merge_method": method, "sha": sha.as_str() });
        if method != "rebase" {
            body["commit_title"] = json!(title);
            body["commit_message"] = json!(message);
        }
        let refusal = match self
            .send::<MergeAnswer>(Method::PUT, &route, Some(&body), Idempotent::No)
            .await
        {
            Ok(a) if a.merged => {
                return CommitSha::parse(&a.sha)
                    .map(Ok)
                    .map_err(|e| GitHubError::Decode {
                        what: format!("PUT {route}"),
                        message: e.to_string(),
                    });
            }
            Ok(a) => MergeRefusal::Refused {
                status: 200,
                message: a.message,
            },
            Err(GitHubError::Api {
                status, message, ..
            }) if matches!(status.as_u16(), 403 | 405 | 409 | 422) => {
                MergeRefusal::classify(status, &message)
            }
            Err(e @ GitHubError::Ambiguous { .. }) => {
                // GitHub may have merged it: look before anyone tries again.
                return match self.pull(number).await?.landed() {
                    Some(landed) => Ok(Ok(landed)),
                    None => Err(e),
                };
            }
            Err(e) => return Err(e),
        };
        // "Not mergeable" is also what a merged pull request answers.
        match self.pull(number).await?.landed() {
            Some(landed) => Ok(Ok(landed)),
            None => Ok(Err(refusal)),
        }
    }

    /// What `branch`'s rules ask: its rulesets' rules in force and its classic protection
    /// where the App may read it; `None` when neither asks anything.
    pub async fn branch_rule(&self, branch: &str) -> Result<Option<BranchRule>, GitHubError> {
        let (classic, rules) = tokio::join!(self.protection(branch), self.rules_in_force(branch));
        let (classic, rules) = (classic?, rules?);
        if classic.is_none() && rules.is_empty() {
            return Ok(None);
        }
        let mut rule = classic.unwrap_or_default();
        for r in &rules {
            rule.add(r);
        }
        Ok(Some(rule))
    }

    /// The rules `branch`'s rulesets put in force (none where the server has no rulesets).
    async fn rules_in_force(&self, branch: &str) -> Result<Vec<RuleInForce>, GitHubError> {
        let encoded: String = url::form_urlencoded::byte_serialize(branch.as_bytes()).collect();
        let route = format!(
            "/repos/{}/{}/rules/branches/{encoded}",
            self.repo.owner(),
            self.repo.name()
        );
        match self.send(Method::GET, &route, None, Idempotent::Yes).await {
            Ok(rules) => Ok(rules),
            // An Enterprise Server without rulesets, or a repository the App cannot see.
            Err(GitHubError::Api { status, .. }) if matches!(status.as_u16(), 403 | 404) => {
                Ok(vec![])
            }
            Err(e) => Err(e),
        }
    }

    /// `branch`'s classic protection rule; `None` when it has none, or when the App may not
    /// read it (that needs the Administration permission, which most installations lack).
    async fn protection(&self, branch: &str) -> Result<Option<BranchRule>, GitHubError> {
        #[derive(Deserialize, Default)]
        #[serde(default)]
        struct Reviews {
            required_approving_review_count: u32,
        }
        #[derive(Deserialize)]
        struct Check {
            context: String,
        }
        #[derive(Deserialize, Default)]
        #[serde(default)]
        struct Checks {
            strict: bool,
            contexts: Vec<String>,
            checks: Vec<Check>,
        }
        #[derive(Deserialize)]
        struct Protection {
            #[serde(default)]
            required_pull_request_reviews: Option<Reviews>,
            #[serde(default)]
            required_status_checks: Option<Checks>,
        }
        let branch: String = url::form_urlencoded::byte_serialize(branch.as_bytes()).collect();
        let route = format!(
            "/repos/{}/{}/branches/{branch}/protection",
            self.repo.owner(),
            self.repo.name()
        );
        let p: Protection = match self.send(Method::GET, &route, None, Idempotent::Yes).await {
            Ok(p) => p,
            Err(GitHubError::Api { status, .. }) if matches!(status.as_u16(), 403 | 404) => {
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let checks = p.required_status_checks.unwrap_or_default();
        let mut names = checks.contexts;
        for c in checks.checks {
            if !names.contains(&c.context) {
                names.push(c.context);
            }
        }
        Ok(Some(BranchRule {
            pull_requests_only: p.required_pull_request_reviews.is_some(),
            required_approvals: p
                .required_pull_request_reviews
                .map(|r| r.required_approving_review_count)
                .unwrap_or(0),
            required_checks: names,
            strict: checks.strict,
            ..BranchRule::default()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_read_from_githubs_words() {
        let c = |s: u16, m: &str| MergeRefusal::classify(StatusCode::from_u16(s).unwrap(), m);
        assert!(matches!(
            c(
                409,
                "Head branch was modified. Review and try the merge again."
            ),
            MergeRefusal::HeadMoved(_)
        ));
        assert!(matches!(
            c(
                405,
                "Base branch was modified. Review and try the merge again."
            ),
            MergeRefusal::BaseMoved(_)
        ));
        assert!(matches!(
            c(
                405,
                "At least 1 approving review is required by reviewers with write access."
            ),
            MergeRefusal::NeedsReview(_)
        ));
        assert!(matches!(
            c(405, "Required status check \"ci\" is expected."),
            MergeRefusal::NeedsChecks(_)
        ));
        assert!(matches!(
            c(405, "6 of 6 required status checks are expected."),
            MergeRefusal::NeedsChecks(_)
        ));
        assert!(matches!(
            c(405, "Pull Request is not mergeable"),
            MergeRefusal::Conflicts(_)
        ));
        assert_eq!(
            c(405, "Merge commits are not allowed on this repository."),
            MergeRefusal::Refused {
                status: 405,
                message: "Merge commits are not allowed on this repository.".into()
            }
        );
    }

    #[test]
    fn rules_are_said_in_words() {
        assert_eq!(BranchRule::default().describe(), None);
        let mut r = BranchRule {
            pull_requests_only: true,
            required_approvals: 1,
            required_checks: vec!["hive/test".into()],
            strict: true,
            ..BranchRule::default()
        };
        assert_eq!(
            r.describe().unwrap(),
            "1 approving review from someone with write access, `hive/test` passing and the branch up to date"
        );
        // A ruleset's rules join the classic protection's (GitHub's `repository-rule-detailed`).
        let rules: Vec<RuleInForce> = serde_json::from_value(json!([
            {"type": "pull_request", "parameters": {"required_approving_review_count": 2},
             "ruleset_source_type": "Repository", "ruleset_source": "acme/widgets", "ruleset_id": 7},
            {"type": "required_status_checks", "parameters": {
                "strict_required_status_checks_policy": false,
                "required_status_checks": [{"context": "hive/test"}, {"context": "ci/build"}]},
             "ruleset_source_type": "Repository", "ruleset_source": "acme/widgets", "ruleset_id": 7},
            {"type": "required_signatures", "ruleset_source_type": "Organization",
             "ruleset_source": "acme", "ruleset_id": 9},
            {"type": "commit_message_pattern", "parameters": {"operator": "regex", "pattern": "Signed-off-by:"}},
            {"type": "required_deployments", "parameters": {"required_deployment_environments": ["staging"]}},
            {"type": "deletion", "ruleset_id": 9}
        ]))
        .unwrap();
        for rule in &rules {
            r.add(rule);
        }
        assert_eq!(
            r.describe().unwrap(),
            "2 approving reviews from people with write access, `hive/test`, `ci/build` passing, \
             the branch up to date, signed commits, commit messages matching `Signed-off-by:` \
             and a successful deployment to `staging` (rulesets: 7 of acme/widgets, 9 of acme)"
        );
        assert!(
            r.asks_signoff(),
            "a pattern naming Signed-off-by asks for sign-offs"
        );
    }

    #[test]
    fn sign_offs_are_asked_by_a_dco_check_or_a_pattern_that_names_them() {
        let rule = |v: serde_json::Value| {
            let mut r = BranchRule::default();
            r.add(&serde_json::from_value(v).unwrap());
            r
        };
        let pattern = |p: &str, negate: bool| {
            rule(json!({"type": "commit_message_pattern",
                "parameters": {"operator": "regex", "pattern": p, "negate": negate}}))
        };
        assert!(pattern("^.*\\nsigned-off-by: .+$", false).asks_signoff());
        assert!(!pattern("Signed-off-by", true).asks_signoff(), "negated");
        assert!(!pattern("^(feat|fix): ", false).asks_signoff());
        let dco = BranchRule {
            required_checks: vec!["ci/test".into(), "DCO".into()],
            ..BranchRule::default()
        };
        assert!(dco.asks_signoff());
        assert!(!BranchRule::default().asks_signoff());
    }
}

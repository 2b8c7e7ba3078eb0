//! Landing a pull request through GitHub: `PUT …/pulls/{n}/merge` — the only door into a base
//! branch that requires pull requests — and what its refusals mean for a merge bot; a pull
//! request's merge state; and the base branch's protection rule, where the App may read it.

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

/// A base branch's protection rule, as far as landing cares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BranchRule {
    pub pull_requests_only: bool,
    pub required_approvals: u32,
    pub required_checks: Vec<String>,
    /// The head must be up to date with the base.
    pub strict: bool,
}

impl BranchRule {
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
        match parts.len() {
            0 => None,
            1 => parts.pop(),
            _ => {
                let last = parts.pop().unwrap_or_default();
                Some(format!("{} and {last}", parts.join(", ")))
            }
        }
    }
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

    /// `branch`'s protection rule; `None` when it has none, or when the App may not read it
    /// (that needs the Administration permission, which most installations do not grant).
    pub async fn branch_rule(&self, branch: &str) -> Result<Option<BranchRule>, GitHubError> {
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
        let r = BranchRule {
            pull_requests_only: true,
            required_approvals: 1,
            required_checks: vec!["hive/test".into()],
            strict: true,
        };
        assert_eq!(
            r.describe().unwrap(),
            "1 approving review from someone with write access, `hive/test` passing and the branch up to date"
        );
    }
}

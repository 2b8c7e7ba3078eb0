//! Commits made through GitHub's git database (blobs, trees, commits) instead of pushed: GitHub
//! signs a commit an App makes this way as itself (no author or committer given), so it shows
//! as verified where rules require signed commits.

use base64::Engine as _;
use http::Method;
use serde::Deserialize;
use serde_json::json;

use super::{GitHubError, Idempotent, RepoClient};
use crate::ids::CommitSha;

/// One change to a tree: `path` set to the blob `sha` with `mode` (`100644`, `100755`,
/// `120000`; `160000`: a submodule at commit `sha`), or removed (`sha` is `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeChange {
    pub path: String,
    pub mode: &'static str,
    pub sha: Option<String>,
}

/// A commit GitHub made: its SHA, whether GitHub verified its signature, and the email GitHub
/// gave its author (the App's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MadeCommit {
    pub sha: CommitSha,
    pub verified: bool,
    pub author_email: String,
}

#[derive(Deserialize)]
struct Sha {
    sha: String,
}

impl RepoClient {
    fn git_route(&self, what: &str) -> String {
        format!(
            "/repos/{}/{}/git/{what}",
            self.repo.owner(),
            self.repo.name()
        )
    }

    /// Stores `bytes` as a blob; its SHA. The same bytes give the same SHA, so a retry is
    /// harmless.
    pub async fn create_blob(&self, bytes: &[u8]) -> Result<String, GitHubError> {
        let content = base64::engine::general_purpose::STANDARD.encode(bytes);
        let body = json!({ "content": content, "encoding": "base64" });
        let made: Sha = self
            .send(
                Method::POST,
                &self.git_route("blobs"),
                Some(&body),
                Idempotent::Yes,
            )
            .await?;
        Ok(made.sha)
    }

    /// The tree `base` (none: the empty tree) with `changes` made; its SHA.
    pub async fn create_tree(
        &self,
        base: Option<&str>,
        changes: &[TreeChange],
    ) -> Result<String, GitHubError> {
        let tree: Vec<serde_json::Value> = changes
            .iter()
            .map(|c| {
                let kind = if c.mode == "160000" { "commit" } else { "blob" };
                json!({ "path": c.path, "mode": c.mode, "type": kind, "sha": c.sha })
            })
            .collect();
        let mut body = json!({ "tree": tree });
        if let Some(base) = base {
            body["base_tree"] = base.into();
        }
        let made: Sha = self
            .send(
                Method::POST,
                &self.git_route("trees"),
                Some(&body),
                Idempotent::Yes,
            )
            .await?;
        Ok(made.sha)
    }

    /// A commit of `tree` on `parents` with `message`, made by the App itself (no author or
    /// committer: GitHub signs it). A retry may make a second, unreferenced commit object:
    /// nothing points at either until a ref is moved.
    pub async fn create_commit(
        &self,
        message: &str,
        tree: &str,
        parents: &[&CommitSha],
    ) -> Result<MadeCommit, GitHubError> {
        #[derive(Deserialize)]
        struct Verification {
            verified: bool,
        }
        #[derive(Deserialize)]
        struct Person {
            email: String,
        }
        #[derive(Deserialize)]
        struct Made {
            sha: String,
            verification: Option<Verification>,
            author: Person,
        }
        let parents: Vec<&str> = parents.iter().map(|p| p.as_str()).collect();
        let body = json!({ "message": message, "tree": tree, "parents": parents });
        let made: Made = self
            .send(
                Method::POST,
                &self.git_route("commits"),
                Some(&body),
                Idempotent::Yes,
            )
            .await?;
        let sha = CommitSha::parse(&made.sha).map_err(|e| GitHubError::Decode {
            what: "POST git/commits".into(),
            message: e.to_string(),
        })?;
        Ok(MadeCommit {
            sha,
            verified: made.verification.is_some_and(|v| v.verified),
            author_email: made.author.email,
        })
    }
}

//! Refs, labels and permissions: moving the base branch through the API (so branch protection
//! still applies), tags for snapshots, the `hive:needs-human` label, and the commenter's
//! permission for slash commands.

use http::{Method, StatusCode};
use serde::Deserialize;
use serde_json::json;

use super::{GitHubError, Idempotent, RepoClient};
use crate::ids::CommitSha;

#[derive(Debug, Deserialize)]
struct RefObject {
    object: Target,
}

#[derive(Debug, Deserialize)]
struct Target {
    sha: String,
}

impl RepoClient {
    fn refs_route(&self, rest: &str) -> String {
        format!(
            "/repos/{}/{}/git/{rest}",
            self.repo.owner(),
            self.repo.name()
        )
    }

    /// Where `reference` (`heads/main`, `tags/auto-v0.0.1`) points, or `None`.
    pub async fn get_ref(&self, reference: &str) -> Result<Option<String>, GitHubError> {
        match self
            .send::<RefObject>(
                Method::GET,
                &self.refs_route(&format!("ref/{reference}")),
                None,
                Idempotent::Yes,
            )
            .await
        {
            Ok(r) => Ok(Some(r.object.sha)),
            Err(GitHubError::Api { status, .. }) if status == StatusCode::NOT_FOUND => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Creates `reference` at `sha`; `Ok(false)` when it already exists (pointing anywhere).
    pub async fn create_ref(&self, reference: &str, sha: &CommitSha) -> Result<bool, GitHubError> {
        let body = json!({ "ref": format!("refs/{reference}"), "sha": sha.as_str() });
        match self
            .send::<serde_json::Value>(
                Method::POST,
                &self.refs_route("refs"),
                Some(&body),
                Idempotent::No,
            )
            .await
        {
            Ok(_) => Ok(true),
            Err(GitHubError::Api { status, .. }) if status == StatusCode::UNPROCESSABLE_ENTITY => {
                Ok(false)
            }
            Err(GitHubError::Ambiguous { .. }) => {
                Ok(self.get_ref(reference).await?.as_deref() == Some(sha.as_str()))
            }
            Err(e) => Err(e),
        }
    }

    /// Moves `reference` to `sha`. Without `force` GitHub refuses anything but a fast-forward;
    /// branch protection may refuse too: the error says why.
    pub async fn update_ref(
        &self,
        reference: &str,
        sha: &CommitSha,
        force: bool,
    ) -> Result<(), GitHubError> {
        let body = json!({ "sha": sha.as_str(), "force": force });
        let _: serde_json::Value = self
            .send(
                Method::PATCH,
                &self.refs_route(&format!("refs/{reference}")),
                Some(&body),
                Idempotent::Yes,
            )
            .await?;
        Ok(())
    }

    pub async fn add_labels(&self, issue: u64, labels: &[&str]) -> Result<(), GitHubError> {
        let route = format!(
            "/repos/{}/{}/issues/{issue}/labels",
            self.repo.owner(),
            self.repo.name()
        );
        let _: serde_json::Value = self
            .send(
                Method::POST,
                &route,
                Some(&json!({ "labels": labels })),
                Idempotent::Yes,
            )
            .await?;
        Ok(())
    }

    pub async fn remove_label(&self, issue: u64, label: &str) -> Result<(), GitHubError> {
        let label: String = url::form_urlencoded::byte_serialize(label.as_bytes()).collect();
        let route = format!(
            "/repos/{}/{}/issues/{issue}/labels/{label}",
            self.repo.owner(),
            self.repo.name()
        );
        match self
            .send::<serde_json::Value>(Method::DELETE, &route, None, Idempotent::Yes)
            .await
        {
            Ok(_) => Ok(()),
            Err(GitHubError::Api { status, .. }) if status == StatusCode::NOT_FOUND => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// `admin`, `maintain`, `write`, `triage`, `read` or `none`, as GitHub's
    /// collaborator-permission API says: its `role_name` where it is one of GitHub's roles (the
    /// older `permission` folds triage into read and maintain into write), else `permission`
    /// (a custom role's base).
    pub async fn permission(&self, user: &str) -> Result<String, GitHubError> {
        #[derive(Deserialize)]
        struct Perm {
            permission: String,
            #[serde(default)]
            role_name: Option<String>,
        }
        let user: String = url::form_urlencoded::byte_serialize(user.as_bytes()).collect();
        let route = format!(
            "/repos/{}/{}/collaborators/{user}/permission",
            self.repo.owner(),
            self.repo.name()
        );
        match self
            .send::<Perm>(Method::GET, &route, None, Idempotent::Yes)
            .await
        {
            Ok(p) => Ok(match p.role_name {
                Some(role)
                    if ["read", "triage", "write", "maintain", "admin"]
                        .contains(&role.to_ascii_lowercase().as_str()) =>
                {
                    role.to_ascii_lowercase()
                }
                _ => p.permission,
            }),
            Err(GitHubError::Api { status, .. }) if status == StatusCode::NOT_FOUND => {
                Ok("none".into())
            }
            Err(e) => Err(e),
        }
    }

    /// The repository's default branch.
    pub async fn default_branch(&self) -> Result<String, GitHubError> {
        #[derive(Deserialize)]
        struct Repo {
            default_branch: String,
        }
        let route = format!("/repos/{}/{}", self.repo.owner(), self.repo.name());
        Ok(self
            .send::<Repo>(Method::GET, &route, None, Idempotent::Yes)
            .await?
            .default_branch)
    }

    /// Reacts to a comment (idempotent on GitHub).
    pub async fn react_to_comment(&self, comment: u64, content: &str) -> Result<(), GitHubError> {
        self.react("issues", comment, content).await
    }

    /// Reacts to a comment on a line of a pull request's diff (a review thread's).
    pub async fn react_to_review_comment(
        &self,
        comment: u64,
        content: &str,
    ) -> Result<(), GitHubError> {
        self.react("pulls", comment, content).await
    }

    /// `POST /repos/{o}/{r}/{kind}/comments/{comment}/reactions` (`kind`: `issues` or `pulls`).
    async fn react(&self, kind: &str, comment: u64, content: &str) -> Result<(), GitHubError> {
        let route = format!(
            "/repos/{}/{}/{kind}/comments/{comment}/reactions",
            self.repo.owner(),
            self.repo.name()
        );
        let _: serde_json::Value = self
            .send(
                Method::POST,
                &route,
                Some(&json!({ "content": content })),
                Idempotent::Yes,
            )
            .await?;
        Ok(())
    }
}

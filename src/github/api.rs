//! The REST calls the hive makes, each with its idempotency rule: comments are found by a
//! hidden marker, pull requests by head branch, check runs by `external_id`.

use http::Method;
use serde::Deserialize;
use serde_json::json;

use super::{GitHubError, Idempotent, RepoClient, User};

/// An issue comment, as much of it as we read.
#[derive(Debug, Clone, Deserialize)]
pub struct Comment {
    pub id: u64,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub user: Option<User>,
}

/// An issue as the sweep compares it with its ticket.
#[derive(Debug, Clone, Deserialize)]
pub struct IssueState {
    /// `open` or `closed`.
    pub state: String,
    #[serde(default)]
    pub labels: Vec<Label>,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub body: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Label {
    pub name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PullRequest {
    pub number: u64,
    #[serde(default)]
    pub html_url: Option<String>,
    pub head: PullHead,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PullHead {
    #[serde(rename = "ref")]
    pub branch: String,
    pub sha: String,
}

impl RepoClient {
    fn path(&self, rest: &str) -> String {
        format!("/repos/{}/{}{rest}", self.repo.owner(), self.repo.name())
    }

    /// Reacts to an issue (GitHub answers 200 for a reaction that exists, so this is idempotent).
    pub async fn react_to_issue(&self, issue: u64, content: &str) -> Result<(), GitHubError> {
        let _: serde_json::Value = self
            .send(
                Method::POST,
                &self.path(&format!("/issues/{issue}/reactions")),
                Some(&json!({ "content": content })),
                Idempotent::Yes,
            )
            .await?;
        Ok(())
    }

    /// Every comment of an issue, oldest first.
    pub async fn issue_comments(&self, issue: u64) -> Result<Vec<Comment>, GitHubError> {
        let mut all = Vec::new();
        for page in 1..=50 {
            let batch: Vec<Comment> = self
                .send(
                    Method::GET,
                    &self.path(&format!(
                        "/issues/{issue}/comments?per_page=100&page={page}"
                    )),
                    None,
                    Idempotent::Yes,
                )
                .await?;
            let done = batch.len() < 100;
            all.extend(batch);
            if done {
                break;
            }
        }
        Ok(all)
    }

    /// The first comment on `issue` the App's bot user wrote with `marker` in its body: the
    /// same marker in anyone else's comment is theirs, never adopted.
    pub async fn find_comment(
        &self,
        issue: u64,
        marker: &str,
    ) -> Result<Option<Comment>, GitHubError> {
        Ok(self.issue_comments(issue).await?.into_iter().find(|c| {
            self.is_bot(c.user.as_ref()) && c.body.as_deref().is_some_and(|b| b.contains(marker))
        }))
    }

    pub async fn create_comment(&self, issue: u64, body: &str) -> Result<Comment, GitHubError> {
        self.send(
            Method::POST,
            &self.path(&format!("/issues/{issue}/comments")),
            Some(&json!({ "body": body })),
            Idempotent::No,
        )
        .await
    }

    pub async fn edit_comment(&self, comment_id: u64, body: &str) -> Result<(), GitHubError> {
        let _: serde_json::Value = self
            .send(
                Method::PATCH,
                &self.path(&format!("/issues/comments/{comment_id}")),
                Some(&json!({ "body": body })),
                Idempotent::Yes,
            )
            .await?;
        Ok(())
    }

    /// Creates the comment carrying `marker`, or edits it when it exists: one comment per marker,
    /// however often this runs. `known` is the id remembered from an earlier run, if any.
    pub async fn upsert_marked_comment(
        &self,
        issue: u64,
        marker: &str,
        known: Option<u64>,
        body: &str,
    ) -> Result<u64, GitHubError> {
        debug_assert!(body.contains(marker));
        if let Some(id) = known {
            match self.edit_comment(id, body).await {
                Ok(()) => return Ok(id),
                // Deleted by someone: fall through and post it again.
                Err(GitHubError::Api { status, .. }) if status == http::StatusCode::NOT_FOUND => {}
                Err(e) => return Err(e),
            }
        }
        for _ in 0..3 {
            if let Some(c) = self.find_comment(issue, marker).await? {
                self.edit_comment(c.id, body).await?;
                return Ok(c.id);
            }
            match self.create_comment(issue, body).await {
                Ok(c) => return Ok(c.id),
                // GitHub may or may not have posted it: look again before another try.
                Err(GitHubError::Ambiguous { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(GitHubError::Ambiguous {
            what: format!("the comment on #{issue}"),
            message: "three tries did not confirm it".into(),
        })
    }

    /// The issue whose body carries `marker` (open or closed), or a new one with `title`, `body`
    /// and `labels`: one issue per marker, however often this runs. Its number.
    pub async fn ensure_issue(
        &self,
        marker: &str,
        title: &str,
        body: &str,
        labels: &[&str],
    ) -> Result<u64, GitHubError> {
        debug_assert!(body.contains(marker));
        #[derive(Deserialize)]
        struct Listed {
            number: u64,
            #[serde(default)]
            body: Option<String>,
            #[serde(default)]
            user: Option<User>,
        }
        for _ in 0..3 {
            let all: Vec<Listed> = self
                .send(
                    Method::GET,
                    &self.path("/issues?state=all&per_page=100"),
                    None,
                    Idempotent::Yes,
                )
                .await?;
            // Only an issue the bot opened is the one it meant; anyone may copy a marker.
            if let Some(i) = all.iter().find(|i| {
                self.is_bot(i.user.as_ref())
                    && i.body.as_deref().is_some_and(|b| b.contains(marker))
            }) {
                return Ok(i.number);
            }
            let req = json!({ "title": title, "body": body, "labels": labels });
            match self
                .send::<Listed>(
                    Method::POST,
                    &self.path("/issues"),
                    Some(&req),
                    Idempotent::No,
                )
                .await
            {
                Ok(i) => return Ok(i.number),
                // GitHub may or may not have opened it: look again before another try.
                Err(GitHubError::Ambiguous { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(GitHubError::Ambiguous {
            what: format!("the issue {title:?}"),
            message: "three tries did not confirm it".into(),
        })
    }

    /// The text of file `path` at `reference` (a branch or a commit), through the contents API;
    /// `None` when there is no such file.
    pub async fn file(&self, path: &str, reference: &str) -> Result<Option<String>, GitHubError> {
        #[derive(Deserialize)]
        struct Contents {
            content: String,
        }
        let r: String = url::form_urlencoded::byte_serialize(reference.as_bytes()).collect();
        match self
            .send::<Contents>(
                Method::GET,
                &self.path(&format!("/contents/{path}?ref={r}")),
                None,
                Idempotent::Yes,
            )
            .await
        {
            Ok(c) => {
                use base64::Engine as _;
                let raw: String = c.content.split_whitespace().collect();
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(raw)
                    .map_err(|e| GitHubError::Decode {
                        what: format!("the contents of {path}"),
                        message: e.to_string(),
                    })?;
                Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
            }
            Err(GitHubError::Api { status, .. }) if status == http::StatusCode::NOT_FOUND => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// An issue's state, labels and text.
    pub async fn issue(&self, number: u64) -> Result<IssueState, GitHubError> {
        self.send(
            Method::GET,
            &self.path(&format!("/issues/{number}")),
            None,
            Idempotent::Yes,
        )
        .await
    }

    /// The open or closed pull request whose head is `branch` of this repository.
    pub async fn find_pull(&self, branch: &str) -> Result<Option<PullRequest>, GitHubError> {
        let pulls: Vec<PullRequest> = self
            .send(
                Method::GET,
                &self.path(&format!(
                    "/pulls?state=all&head={}:{branch}",
                    self.repo.owner()
                )),
                None,
                Idempotent::Yes,
            )
            .await?;
        Ok(pulls.into_iter().find(|p| p.head.branch == branch))
    }

    /// Opens a pull request from `head` into `base`, or returns the one already open for `head`.
    pub async fn open_pull(
        &self,
        title: &str,
        head: &str,
        base: &str,
        body: &str,
        draft: bool,
    ) -> Result<PullRequest, GitHubError> {
        for _ in 0..3 {
            if let Some(pr) = self.find_pull(head).await? {
                return Ok(pr);
            }
            let req =
                json!({ "title": title, "head": head, "base": base, "body": body, "draft": draft });
            match self
                .send(
                    Method::POST,
                    &self.path("/pulls"),
                    Some(&req),
                    Idempotent::No,
                )
                .await
            {
                Ok(pr) => return Ok(pr),
                Err(GitHubError::Ambiguous { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(GitHubError::Ambiguous {
            what: format!("the pull request from {head}"),
            message: "three tries did not confirm it".into(),
        })
    }
}

//! Pull-request work beyond opening one: updating its description, reviews with inline
//! comments (found again by a hidden marker before posting, so a resumed step posts once),
//! and marking a draft ready for review (GraphQL: REST cannot; see [`super::graphql`]).

use http::Method;
use serde::Deserialize;
use serde_json::json;

use super::{GitHubError, Idempotent, RepoClient, User};
use crate::ids::CommitSha;

/// A review as we read it back.
#[derive(Debug, Clone, Deserialize)]
pub struct PullReview {
    pub id: u64,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub user: Option<User>,
}

/// One inline comment of a review, on the new side of the diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewComment {
    pub path: String,
    pub line: u32,
    pub body: String,
}

/// A review comment as GitHub lists it (`GET …/pulls/{n}/comments`).
#[derive(Debug, Clone, Deserialize)]
pub struct PullComment {
    pub id: u64,
    #[serde(default)]
    pub pull_request_review_id: Option<u64>,
    pub path: String,
    #[serde(default)]
    pub line: Option<u32>,
    #[serde(default)]
    pub diff_hunk: String,
    #[serde(default)]
    pub body: String,
    #[serde(default)]
    pub commit_id: String,
    #[serde(default)]
    pub user: Option<User>,
}

impl RepoClient {
    /// Answers review comment `comment` in its thread with `body` carrying `marker`, unless an
    /// answer with the marker is there already (a resumed step answers once).
    pub async fn reply_to_review_comment(
        &self,
        number: u64,
        comment: u64,
        marker: &str,
        body: &str,
    ) -> Result<(), GitHubError> {
        let list = format!(
            "/repos/{}/{}/pulls/{number}/comments?per_page=100",
            self.repo.owner(),
            self.repo.name()
        );
        for _ in 0..3 {
            let all: Vec<PullComment> =
                self.send(Method::GET, &list, None, Idempotent::Yes).await?;
            if all
                .iter()
                .any(|c| self.is_bot(c.user.as_ref()) && c.body.contains(marker))
            {
                return Ok(());
            }
            let route = format!(
                "/repos/{}/{}/pulls/{number}/comments/{comment}/replies",
                self.repo.owner(),
                self.repo.name()
            );
            let req = json!({ "body": format!("{marker}\n{body}") });
            match self
                .send::<serde_json::Value>(Method::POST, &route, Some(&req), Idempotent::No)
                .await
            {
                Ok(_) => return Ok(()),
                Err(GitHubError::Ambiguous { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(GitHubError::Ambiguous {
            what: format!("the reply to review comment {comment}"),
            message: "three tries did not confirm it".into(),
        })
    }

    /// The review comments of pull request `number` that belong to review `review`.
    pub async fn review_comments(
        &self,
        number: u64,
        review: u64,
    ) -> Result<Vec<PullComment>, GitHubError> {
        let route = format!(
            "/repos/{}/{}/pulls/{number}/comments?per_page=100",
            self.repo.owner(),
            self.repo.name()
        );
        let all: Vec<PullComment> = self
            .send(Method::GET, &route, None, Idempotent::Yes)
            .await?;
        Ok(all
            .into_iter()
            .filter(|c| c.pull_request_review_id == Some(review))
            .collect())
    }

    pub async fn update_pull(
        &self,
        number: u64,
        title: &str,
        body: &str,
    ) -> Result<(), GitHubError> {
        let route = format!(
            "/repos/{}/{}/pulls/{number}",
            self.repo.owner(),
            self.repo.name()
        );
        let _: serde_json::Value = self
            .send(
                Method::PATCH,
                &route,
                Some(&json!({ "title": title, "body": body })),
                Idempotent::Yes,
            )
            .await?;
        Ok(())
    }

    pub async fn pull_reviews(&self, number: u64) -> Result<Vec<PullReview>, GitHubError> {
        let route = format!(
            "/repos/{}/{}/pulls/{number}/reviews?per_page=100",
            self.repo.owner(),
            self.repo.name()
        );
        self.send(Method::GET, &route, None, Idempotent::Yes).await
    }

    /// Posts a review (event COMMENT: an app cannot approve its own pull request) carrying
    /// `marker`, unless one with the marker exists.
    pub async fn post_review(
        &self,
        number: u64,
        commit: &CommitSha,
        marker: &str,
        body: &str,
        comments: &[ReviewComment],
    ) -> Result<u64, GitHubError> {
        for _ in 0..3 {
            if let Some(r) = self.pull_reviews(number).await?.into_iter().find(|r| {
                self.is_bot(r.user.as_ref())
                    && r.body.as_deref().is_some_and(|b| b.contains(marker))
            }) {
                return Ok(r.id);
            }
            let comments: Vec<_> = comments
                .iter()
                .map(|c| json!({ "path": c.path, "line": c.line, "side": "RIGHT", "body": c.body }))
                .collect();
            let req = json!({ "commit_id": commit.as_str(), "body": format!("{marker}\n{body}"), "event": "COMMENT", "comments": comments });
            let route = format!(
                "/repos/{}/{}/pulls/{number}/reviews",
                self.repo.owner(),
                self.repo.name()
            );
            match self
                .send::<PullReview>(Method::POST, &route, Some(&req), Idempotent::No)
                .await
            {
                Ok(r) => return Ok(r.id),
                Err(GitHubError::Ambiguous { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(GitHubError::Ambiguous {
            what: format!("the review of #{number}"),
            message: "three tries did not confirm it".into(),
        })
    }

    /// Marks a draft pull request ready for review (GitHub's GraphQL API; REST cannot).
    pub async fn mark_ready(&self, number: u64) -> Result<(), GitHubError> {
        #[derive(Deserialize)]
        struct Pull {
            node_id: String,
            #[serde(default)]
            draft: bool,
        }
        let route = format!(
            "/repos/{}/{}/pulls/{number}",
            self.repo.owner(),
            self.repo.name()
        );
        let pr: Pull = self
            .send(Method::GET, &route, None, Idempotent::Yes)
            .await?;
        if !pr.draft {
            return Ok(());
        }
        let token = self.token().await?;
        let mutation = "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { isDraft } } }";
        self.graphql
            .query(
                &token,
                "markPullRequestReadyForReview",
                mutation,
                json!({ "id": pr.node_id }),
            )
            .await?;
        Ok(())
    }
}

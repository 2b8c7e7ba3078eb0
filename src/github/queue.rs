//! A base branch's merge queue, through GitHub's GraphQL API (REST has no queue): adding a pull
//! request to it (`enqueuePullRequest`, guarded by the head GitHub must still have), taking it
//! out (`dequeuePullRequest`), and reading whether it is in. The merge group's head ref,
//! `refs/heads/gh-readonly-queue/<base>/pr-<n>-<sha>`, names the pull request it is for.

use http::Method;
use serde::Deserialize;
use serde_json::json;

use super::{GitHubError, Idempotent, RepoClient};
use crate::ids::CommitSha;

/// Whether a pull request is in its base's merge queue, and its head, as GraphQL reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueState {
    pub queued: bool,
    pub head: String,
}

/// The pull request a merge group is for: the `n` of its head ref's `…/pr-<n>-<sha>`.
pub fn group_pull(head_ref: &str) -> Option<u64> {
    let rest = head_ref
        .strip_prefix("refs/heads/")
        .unwrap_or(head_ref)
        .strip_prefix("gh-readonly-queue/")?;
    let (_, entry) = rest.rsplit_once('/')?;
    let (number, sha) = entry.strip_prefix("pr-")?.split_once('-')?;
    let hex = !sha.is_empty() && sha.bytes().all(|b| b.is_ascii_hexdigit());
    number.parse().ok().filter(|_| hex)
}

/// The `message` of each of GraphQL's `errors`, joined; the whole text when it holds none.
pub fn graphql_words(message: &str) -> String {
    let Ok(errors) = serde_json::from_str::<Vec<serde_json::Value>>(message) else {
        return message.to_owned();
    };
    let words: Vec<&str> = errors
        .iter()
        .filter_map(|e| e["message"].as_str())
        .collect();
    if words.is_empty() {
        message.to_owned()
    } else {
        words.join("; ")
    }
}

impl RepoClient {
    /// The pull request's GraphQL node id (its REST `node_id`).
    pub(super) async fn pull_node_id(&self, number: u64) -> Result<String, GitHubError> {
        #[derive(Deserialize)]
        struct Pull {
            node_id: String,
        }
        let route = format!(
            "/repos/{}/{}/pulls/{number}",
            self.repo.owner(),
            self.repo.name()
        );
        let pull: Pull = self
            .send(Method::GET, &route, None, Idempotent::Yes)
            .await?;
        Ok(pull.node_id)
    }

    /// Adds pull request `number` to its base's merge queue, if its head is still `head`.
    pub async fn enqueue_pull(&self, number: u64, head: &CommitSha) -> Result<(), GitHubError> {
        let id = self.pull_node_id(number).await?;
        let token = self.token().await?;
        let mutation = "mutation($id: ID!, $head: GitObjectID) { enqueuePullRequest(input: {pullRequestId: $id, expectedHeadOid: $head}) { mergeQueueEntry { id position } } }";
        let variables = json!({ "id": id, "head": head.as_str() });
        self.graphql
            .query(&token, "enqueuePullRequest", mutation, variables)
            .await?;
        Ok(())
    }

    /// Takes pull request `number` out of its base's merge queue.
    pub async fn dequeue_pull(&self, number: u64) -> Result<(), GitHubError> {
        let id = self.pull_node_id(number).await?;
        let token = self.token().await?;
        let mutation = "mutation($id: ID!) { dequeuePullRequest(input: {id: $id}) { mergeQueueEntry { id } } }";
        self.graphql
            .query(&token, "dequeuePullRequest", mutation, json!({ "id": id }))
            .await?;
        Ok(())
    }

    /// Whether pull request `number` is in its base's merge queue now, and its head.
    pub async fn queue_state(&self, number: u64) -> Result<QueueState, GitHubError> {
        let id = self.pull_node_id(number).await?;
        let token = self.token().await?;
        let query = "query($id: ID!) { node(id: $id) { ... on PullRequest { isInMergeQueue headRefOid } } }";
        let v = self
            .graphql
            .query(&token, "isInMergeQueue", query, json!({ "id": id }))
            .await?;
        let node = &v["data"]["node"];
        Ok(QueueState {
            queued: node["isInMergeQueue"].as_bool().unwrap_or(false),
            head: node["headRefOid"].as_str().unwrap_or_default().to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_groups_head_ref_names_its_pull_request() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let r = |s: &str| group_pull(s);
        assert_eq!(
            r(&format!("refs/heads/gh-readonly-queue/main/pr-77-{sha}")),
            Some(77)
        );
        // A base with slashes; the ref without its `refs/heads/`.
        assert_eq!(
            r(&format!("gh-readonly-queue/release/1.x/pr-5-{sha}")),
            Some(5)
        );
        for not in [
            format!("refs/heads/feat/pr-77-{sha}"),
            "refs/heads/gh-readonly-queue/main/pr-77-".into(),
            "refs/heads/gh-readonly-queue/main/pr-x-abc".into(),
            "refs/heads/gh-readonly-queue/main/77-abc".into(),
            "refs/heads/gh-readonly-queue/pr-77-abc".into(),
        ] {
            assert_eq!(r(&not), None, "{not}");
        }
    }

    #[test]
    fn graphqls_errors_are_said_in_their_own_words() {
        let e = r#"[{"type":"UNPROCESSABLE","message":"Pull request is not mergeable"},{"message":"and more"}]"#;
        assert_eq!(graphql_words(e), "Pull request is not mergeable; and more");
        assert_eq!(graphql_words("plain words"), "plain words");
    }
}

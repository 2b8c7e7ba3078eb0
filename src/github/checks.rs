//! Check runs: created once per `external_id` (found again before any create, so a retried step
//! never makes a second), moved queued → in_progress → completed, with annotations sent in
//! batches of at most 50 as GitHub requires.

use http::Method;
use serde::Deserialize;
use serde_json::json;

use super::{GitHubError, Idempotent, RepoClient};
use crate::annotation::{Annotation, batches};
use crate::ids::CommitSha;

#[derive(Debug, Clone, Deserialize)]
pub struct CheckRun {
    pub id: u64,
    pub name: String,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub external_id: Option<String>,
    #[serde(default)]
    pub html_url: Option<String>,
}

#[derive(Debug, Deserialize)]
struct CheckRunList {
    check_runs: Vec<CheckRun>,
}

/// The result of a finished check run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conclusion {
    Success,
    Failure,
    Neutral,
    Skipped,
    TimedOut,
    Cancelled,
    /// A person must act (the check run's summary says what) before it counts.
    ActionRequired,
}

impl Conclusion {
    pub fn as_str(self) -> &'static str {
        match self {
            Conclusion::Success => "success",
            Conclusion::Failure => "failure",
            Conclusion::Neutral => "neutral",
            Conclusion::Skipped => "skipped",
            Conclusion::TimedOut => "timed_out",
            Conclusion::Cancelled => "cancelled",
            Conclusion::ActionRequired => "action_required",
        }
    }
}

/// A button on a check run. GitHub caps the label and identifier at 20 characters and the
/// description at 40.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action {
    pub label: &'static str,
    pub description: &'static str,
    pub identifier: &'static str,
}

/// "Retry": the same as `/hive retry` (write permission).
pub const RETRY: Action = Action {
    label: "Retry",
    description: "Run the Builder again (/hive retry)",
    identifier: "retry",
};

/// "Approve": the same as `/hive approve` (write permission).
pub const APPROVE: Action = Action {
    label: "Approve",
    description: "Merge this change (/hive approve)",
    identifier: "approve",
};

/// Title and Markdown summary of a check run; GitHub caps each text at 65,535 characters.
#[derive(Debug, Clone)]
pub struct CheckOutput {
    pub title: String,
    pub summary: String,
}

const MAX_CHECK_TEXT: usize = 65_000;

/// `s` cut to at most `max` bytes on a character boundary, with a note when cut.
fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n…(cut)", &s[..end])
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn output_json(output: &CheckOutput, annotations: &[Annotation]) -> serde_json::Value {
    json!({
        "title": clip(&output.title, 1000),
        "summary": clip(&output.summary, MAX_CHECK_TEXT),
        "annotations": annotations,
    })
}

impl RepoClient {
    /// The check run named `external_id` on `sha`, if one exists.
    pub async fn find_check_run(
        &self,
        sha: &CommitSha,
        external_id: &str,
    ) -> Result<Option<CheckRun>, GitHubError> {
        let route = format!(
            "/repos/{}/{}/commits/{sha}/check-runs?filter=all&per_page=100",
            self.repo.owner(),
            self.repo.name()
        );
        let list: CheckRunList = self
            .send(Method::GET, &route, None, Idempotent::Yes)
            .await?;
        Ok(list
            .check_runs
            .into_iter()
            .find(|c| c.external_id.as_deref() == Some(external_id)))
    }

    /// Check run `name` on `sha` for `external_id`: the existing one, or a new one with
    /// `status` (`queued` or `in_progress`).
    pub async fn ensure_check_run(
        &self,
        name: &str,
        sha: &CommitSha,
        external_id: &str,
        status: &str,
    ) -> Result<CheckRun, GitHubError> {
        for _ in 0..3 {
            if let Some(run) = self.find_check_run(sha, external_id).await? {
                return Ok(run);
            }
            let mut body = json!({
                "name": name,
                "head_sha": sha.as_str(),
                "external_id": external_id,
                "status": status,
                "output": { "title": format!("{name}: {}", status.replace('_', " ")), "summary": "Waiting for its turn." },
            });
            if status == "in_progress" {
                body["started_at"] = now().into();
            }
            let route = format!(
                "/repos/{}/{}/check-runs",
                self.repo.owner(),
                self.repo.name()
            );
            match self
                .send(Method::POST, &route, Some(&body), Idempotent::No)
                .await
            {
                Ok(run) => return Ok(run),
                Err(GitHubError::Ambiguous { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(GitHubError::Ambiguous {
            what: format!("check run {name}"),
            message: "three tries did not confirm it".into(),
        })
    }

    /// Marks a check run in progress.
    pub async fn check_run_started(&self, id: u64, title: &str) -> Result<(), GitHubError> {
        let body = json!({
            "status": "in_progress",
            "started_at": now(),
            "output": { "title": clip(title, 1000), "summary": "Running." },
        });
        self.patch_check_run(id, &body).await
    }

    /// Completes a check run with its conclusion, summary and every annotation (in batches).
    pub async fn complete_check_run(
        &self,
        id: u64,
        conclusion: Conclusion,
        output: &CheckOutput,
        annotations: &[Annotation],
    ) -> Result<(), GitHubError> {
        let mut chunks: Vec<&[Annotation]> = batches(annotations).collect();
        let last = chunks.pop().unwrap_or(&[]);
        // GitHub appends each update's annotations to the run's list.
        for chunk in chunks {
            self.patch_check_run(id, &json!({ "output": output_json(output, chunk) }))
                .await?;
        }
        let body = json!({
            "status": "completed",
            "conclusion": conclusion.as_str(),
            "completed_at": now(),
            "output": output_json(output, last),
        });
        self.patch_check_run(id, &body).await
    }

    /// Offers buttons on check run `id` (GitHub's `actions`); a press arrives as
    /// `check_run.requested_action` with the button's identifier. An empty list removes them.
    pub async fn offer_actions(&self, id: u64, actions: &[Action]) -> Result<(), GitHubError> {
        let actions: Vec<_> = actions
            .iter()
            .map(|a| json!({ "label": a.label, "description": a.description, "identifier": a.identifier }))
            .collect();
        self.patch_check_run(id, &json!({ "actions": actions }))
            .await
    }

    async fn patch_check_run(&self, id: u64, body: &serde_json::Value) -> Result<(), GitHubError> {
        let route = format!(
            "/repos/{}/{}/check-runs/{id}",
            self.repo.owner(),
            self.repo.name()
        );
        let _: serde_json::Value = self
            .send(Method::PATCH, &route, Some(body), Idempotent::Yes)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buttons_fit_githubs_limits() {
        for a in [RETRY, APPROVE] {
            assert!(a.label.len() <= 20 && a.identifier.len() <= 20, "{a:?}");
            assert!(a.description.len() <= 40, "{a:?}");
        }
    }

    #[test]
    fn clip_keeps_char_boundaries() {
        assert_eq!(clip("abc", 5), "abc");
        let s = "é".repeat(10);
        let c = clip(&s, 5);
        assert!(c.starts_with("éé") && c.ends_with("(cut)"), "{c}");
    }
}

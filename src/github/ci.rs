//! The repository's own CI on a commit, as the landing hears it: every check run (with the App
//! that reported it) and commit status on the commit, a failing run's annotations, a GitHub
//! Actions job's log (its tail, downloaded from where GitHub redirects, without our token) and
//! a re-run of that job.

use std::time::Duration;

use http::Method;
use http_body_util::BodyExt as _;
use serde::Deserialize;

use super::{GitHubError, Idempotent, RepoClient, error_message};
use crate::ids::CommitSha;

/// The App slug GitHub Actions reports its jobs under; such a check run's id is its job's id.
pub const ACTIONS: &str = "github-actions";
/// How much of a job's log is read at most: a log longer than this is read to here and its
/// tail is what the last bytes read were.
const MAX_LOG_READ: usize = 64 << 20;

/// Where a check stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CiState {
    /// Queued, in progress, or waiting for something (a person's go-ahead, say).
    Pending,
    Passed,
    Failed,
}

/// One report on a commit: a check run of some App, or a commit status.
#[derive(Debug, Clone, PartialEq)]
pub struct CiReport {
    /// The check run's id; `None` for a commit status.
    pub id: Option<u64>,
    pub name: String,
    /// The reporting App's slug (`github-actions`…); `None` for a commit status.
    pub app: Option<String>,
    pub external_id: Option<String>,
    pub state: CiState,
    /// GitHub's word: a check run's conclusion or status, a commit status's state.
    pub conclusion: String,
    pub title: Option<String>,
    pub summary: Option<String>,
    /// Where a person sees it.
    pub url: Option<String>,
}

impl CiReport {
    /// A GitHub Actions job: its log can be read and the job re-run.
    pub fn is_actions_job(&self) -> bool {
        self.id.is_some() && self.app.as_deref() == Some(ACTIONS)
    }

    /// "`name` (GitHub Actions)", "`name` (commit status)".
    pub fn describe(&self) -> String {
        format!("`{}` ({})", self.name.replace('`', "'"), self.by())
    }

    /// "`name` (GitHub Actions, in progress)": with GitHub's word for where it stands.
    pub fn describe_as(&self, word: &str) -> String {
        let word = word.replace('_', " ");
        format!("`{}` ({}, {word})", self.name.replace('`', "'"), self.by())
    }

    fn by(&self) -> String {
        match (&self.id, self.app.as_deref()) {
            (None, _) => "commit status".to_owned(),
            (Some(_), Some(ACTIONS)) => "GitHub Actions".to_owned(),
            (Some(_), Some(app)) => format!("check run of {app}"),
            (Some(_), None) => "check run".to_owned(),
        }
    }
}

/// One annotation of a check run.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CiAnnotation {
    #[serde(default)]
    pub path: String,
    #[serde(default)]
    pub start_line: u64,
    #[serde(default)]
    pub annotation_level: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub message: String,
}

/// The end of a job's log.
#[derive(Debug, Clone, PartialEq)]
pub struct LogTail {
    /// The log's last bytes, as text.
    pub text: String,
    /// Bytes read in all.
    pub read: usize,
    /// The log went on past [`MAX_LOG_READ`].
    pub truncated: bool,
}

#[derive(Deserialize)]
struct RunJson {
    id: u64,
    name: String,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    conclusion: Option<String>,
    #[serde(default)]
    external_id: Option<String>,
    #[serde(default)]
    html_url: Option<String>,
    #[serde(default)]
    details_url: Option<String>,
    #[serde(default)]
    app: Option<AppJson>,
    #[serde(default)]
    output: Option<OutputJson>,
}

#[derive(Deserialize)]
struct AppJson {
    #[serde(default)]
    slug: Option<String>,
}

#[derive(Deserialize, Default)]
struct OutputJson {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    summary: Option<String>,
}

#[derive(Deserialize)]
struct RunsJson {
    check_runs: Vec<RunJson>,
}

#[derive(Deserialize)]
struct StatusJson {
    context: String,
    state: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    target_url: Option<String>,
}

#[derive(Deserialize)]
struct CombinedJson {
    #[serde(default)]
    statuses: Vec<StatusJson>,
}

/// A check run's state from its status and conclusion.
pub fn run_state(status: Option<&str>, conclusion: Option<&str>) -> CiState {
    match (status, conclusion) {
        (_, Some("success" | "neutral" | "skipped")) => CiState::Passed,
        // `action_required` waits for a person on GitHub; `stale` for GitHub itself.
        (_, Some("action_required" | "stale")) => CiState::Pending,
        (_, Some(_)) => CiState::Failed,
        _ => CiState::Pending,
    }
}

/// A commit status's state.
pub fn status_state(state: &str) -> CiState {
    match state {
        "success" => CiState::Passed,
        "failure" | "error" => CiState::Failed,
        _ => CiState::Pending,
    }
}

impl RepoClient {
    /// Every check run on `sha` (each re-run too, oldest first) and the latest commit status
    /// of each context.
    pub async fn ci_reports(&self, sha: &CommitSha) -> Result<Vec<CiReport>, GitHubError> {
        let (owner, name) = (self.repo.owner(), self.repo.name());
        let route =
            format!("/repos/{owner}/{name}/commits/{sha}/check-runs?filter=all&per_page=100");
        let runs: RunsJson = self
            .send(Method::GET, &route, None, Idempotent::Yes)
            .await?;
        let mut runs = runs.check_runs;
        runs.sort_by_key(|r| r.id);
        let mut out: Vec<CiReport> = runs
            .into_iter()
            .map(|r| {
                let output = r.output.unwrap_or_default();
                CiReport {
                    id: Some(r.id),
                    state: run_state(r.status.as_deref(), r.conclusion.as_deref()),
                    conclusion: r.conclusion.or(r.status).unwrap_or_default(),
                    name: r.name,
                    app: r.app.and_then(|a| a.slug),
                    external_id: r.external_id,
                    title: output.title,
                    summary: output.summary,
                    url: r.html_url.or(r.details_url),
                }
            })
            .collect();
        let route = format!("/repos/{owner}/{name}/commits/{sha}/status?per_page=100");
        let combined: CombinedJson = self
            .send(Method::GET, &route, None, Idempotent::Yes)
            .await?;
        out.extend(combined.statuses.into_iter().map(|s| CiReport {
            id: None,
            state: status_state(&s.state),
            name: s.context,
            app: None,
            external_id: None,
            conclusion: s.state,
            title: s.description,
            summary: None,
            url: s.target_url,
        }));
        Ok(out)
    }

    /// Up to 50 annotations of check run `id`.
    pub async fn check_annotations(&self, id: u64) -> Result<Vec<CiAnnotation>, GitHubError> {
        let route = format!(
            "/repos/{}/{}/check-runs/{id}/annotations?per_page=50",
            self.repo.owner(),
            self.repo.name()
        );
        self.send(Method::GET, &route, None, Idempotent::Yes).await
    }

    /// Asks GitHub Actions to run job `id` again on the same commit. `Ok(false)` when it will
    /// not (the App lacks the Actions write permission, the job is too old or still running).
    pub async fn rerun_job(&self, id: u64) -> Result<bool, GitHubError> {
        let route = format!(
            "/repos/{}/{}/actions/jobs/{id}/rerun",
            self.repo.owner(),
            self.repo.name()
        );
        let body = serde_json::json!({});
        match self
            .send::<serde_json::Value>(Method::POST, &route, Some(&body), Idempotent::No)
            .await
        {
            Ok(_) => Ok(true),
            Err(GitHubError::Api { status, .. })
                if matches!(status.as_u16(), 403 | 404 | 409 | 422) =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// The last `keep` bytes of GitHub Actions job `id`'s log; `None` when GitHub has none to
    /// give (expired, not permitted). GitHub answers with a redirect to a short-lived URL,
    /// which is fetched without any credential and never logged.
    pub async fn job_log_tail(&self, id: u64, keep: usize) -> Result<Option<LogTail>, GitHubError> {
        let route = format!(
            "/repos/{}/{}/actions/jobs/{id}/logs",
            self.repo.owner(),
            self.repo.name()
        );
        let what = format!("GET /repos/{}/actions/jobs/{id}/logs", self.repo);
        self.token().await?;
        let response =
            self.crab
                ._get(route.as_str())
                .await
                .map_err(|e| GitHubError::Transport {
                    what: what.clone(),
                    message: e.to_string(),
                })?;
        let (parts, body) = response.into_parts();
        let status = parts.status;
        if status.is_redirection() {
            let Some(location) = parts
                .headers
                .get(http::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| url::Url::parse(v).ok())
            else {
                return Err(GitHubError::Decode {
                    what,
                    message: "a redirect without a location".into(),
                });
            };
            return download_tail(location, keep)
                .await
                .map(Some)
                .map_err(|message| GitHubError::Transport { what, message });
        }
        let bytes = body
            .collect()
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        if status.is_success() {
            let read = bytes.len();
            return Ok(Some(LogTail {
                text: tail_text(&bytes, keep),
                read,
                truncated: false,
            }));
        }
        if matches!(status.as_u16(), 403 | 404 | 410) {
            return Ok(None);
        }
        Err(GitHubError::Api {
            status,
            what,
            message: error_message(status, &bytes),
        })
    }
}

/// Reads `url` to its end (or [`MAX_LOG_READ`]), keeping the last `keep` bytes. The error
/// never holds the URL: it carries a signature.
async fn download_tail(url: url::Url, keep: usize) -> Result<LogTail, String> {
    let http = reqwest::Client::builder()
        .user_agent(concat!("vibeloop/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(120))
        .build()
        .map_err(|e| e.without_url().to_string())?;
    let mut response = http
        .get(url)
        .send()
        .await
        .map_err(|e| e.without_url().to_string())?;
    if !response.status().is_success() {
        return Err(format!("the log's download answered {}", response.status()));
    }
    let mut window: Vec<u8> = Vec::new();
    let mut read = 0usize;
    let mut truncated = false;
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| e.without_url().to_string())?
    {
        read += chunk.len();
        window.extend_from_slice(&chunk);
        if window.len() > 2 * keep + 1 {
            // One byte more than kept: `tail_text` sees whether the tail starts a line.
            window.drain(..window.len() - keep - 1);
        }
        if read >= MAX_LOG_READ {
            truncated = true;
            break;
        }
    }
    Ok(LogTail {
        text: tail_text(&window, keep),
        read,
        truncated,
    })
}

/// The last `keep` bytes of `bytes` as text, starting at a line.
fn tail_text(bytes: &[u8], keep: usize) -> String {
    let start = bytes.len().saturating_sub(keep);
    let text = String::from_utf8_lossy(&bytes[start..]);
    let mid_line = start > 0 && bytes[start - 1] != b'\n';
    match (mid_line, text.find('\n')) {
        (true, Some(i)) => text[i + 1..].to_owned(),
        _ => text.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_runs_and_statuses_are_judged_as_branch_protection_does() {
        assert_eq!(
            run_state(Some("completed"), Some("success")),
            CiState::Passed
        );
        assert_eq!(
            run_state(Some("completed"), Some("skipped")),
            CiState::Passed
        );
        assert_eq!(
            run_state(Some("completed"), Some("failure")),
            CiState::Failed
        );
        assert_eq!(
            run_state(Some("completed"), Some("timed_out")),
            CiState::Failed
        );
        assert_eq!(
            run_state(Some("completed"), Some("cancelled")),
            CiState::Failed
        );
        assert_eq!(
            run_state(Some("completed"), Some("action_required")),
            CiState::Pending
        );
        assert_eq!(run_state(Some("in_progress"), None), CiState::Pending);
        assert_eq!(status_state("error"), CiState::Failed);
        assert_eq!(status_state("pending"), CiState::Pending);
        assert_eq!(status_state("success"), CiState::Passed);
    }

    #[test]
    fn a_tail_starts_at_a_line_and_keeps_the_end() {
        let log = b"one\ntwo\nthree\nfour\n";
        assert_eq!(tail_text(log, 100), "one\ntwo\nthree\nfour\n");
        assert_eq!(tail_text(log, 9), "four\n");
        assert_eq!(tail_text("é\nà\n".as_bytes(), 3), "à\n");
    }
}

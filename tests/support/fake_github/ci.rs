//! A CI beside the bot, as branch protection sees one: another App's check run completing on a
//! commit, or a commit status set on it — each stored and delivered as the webhook GitHub sends.
//! And GitHub Actions as the bot reads it: a job (a check run of the App `github-actions`, whose
//! id is the job's) with annotations and a log that `GET …/actions/jobs/{id}/logs` redirects to
//! (served at `/_fake/logs/{id}`, recording whether a credential came along), and
//! `POST …/actions/jobs/{id}/rerun`, which runs the job again as the test scripted it and
//! delivers its `check_run.completed`.

use std::collections::VecDeque;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Response, StatusCode};
use serde_json::{Value, json};
use vibeloop::forge::rest::{Answer, bearer, check_token, err};

use super::layer::Shared;
use super::{CheckRun, CommitStatus, FakeGitHub};
use crate::support::payloads::{self, Sent};

/// One run of a GitHub Actions job, as a test scripts it.
#[derive(Debug, Clone)]
pub struct JobRun {
    pub conclusion: String,
    pub summary: Option<String>,
    pub annotations: Vec<Value>,
    pub log: String,
}

impl JobRun {
    pub fn new(conclusion: &str, log: &str) -> Self {
        Self {
            conclusion: conclusion.into(),
            summary: None,
            annotations: vec![],
            log: log.into(),
        }
    }

    pub fn summary(mut self, summary: &str) -> Self {
        self.summary = Some(summary.into());
        self
    }

    /// An annotation on `path`'s `line`, as a linter reports one.
    pub fn annotate(mut self, path: &str, line: u64, message: &str) -> Self {
        self.annotations.push(json!({
            "path": path, "start_line": line, "end_line": line, "start_column": null,
            "end_column": null, "annotation_level": "failure", "title": null,
            "message": message, "raw_details": null,
            "blob_href": format!("https://github.com/acme/widgets/blob/HEAD/{path}"),
        }));
        self
    }
}

/// What the fake's GitHub Actions holds: each job's log, what the next re-runs of a job (by
/// repository and name) conclude, and each download of a log.
#[derive(Default)]
pub struct Actions {
    logs: std::collections::BTreeMap<u64, String>,
    reruns: std::collections::BTreeMap<(String, String), VecDeque<JobRun>>,
    /// `(job id, whether the request carried an Authorization header)`.
    pub downloads: Vec<(u64, bool)>,
    /// Job ids the bot asked to re-run.
    pub rerun_asked: Vec<u64>,
}

/// Stores a completed Actions job on `sha` and its log; its check run's id and its webhook.
fn store_job(s: &Shared, repo: &str, sha: &str, name: &str, run: &JobRun) -> (u64, Vec<u8>) {
    let stored = store_run(s, repo, sha, name, "github-actions", run);
    s.extras().actions.logs.insert(stored.0, run.log.clone());
    stored
}

/// Stores a completed check run of App `app` on `sha`; its id and its webhook.
fn store_run(
    s: &Shared,
    repo: &str,
    sha: &str,
    name: &str,
    app: &str,
    run: &JobRun,
) -> (u64, Vec<u8>) {
    let (id, installation) = {
        let mut st = s.state();
        let id = st.next_id();
        let r = st.repos.get_mut(repo).expect("repo added");
        r.check_runs.push(CheckRun {
            id,
            name: name.into(),
            head_sha: sha.into(),
            external_id: None,
            status: "completed".into(),
            conclusion: Some(run.conclusion.clone()),
            title: Some(format!("{name}: {}", run.conclusion)),
            summary: run.summary.clone(),
            started_at: None,
            completed_at: Some(chrono::Utc::now().to_rfc3339()),
            statuses: vec!["queued".into(), "completed".into()],
            annotations: run.annotations.clone(),
            actions: vec![],
            app: Some(app.into()),
        });
        (id, r.installation)
    };
    let branch = branches_at(s, repo, sha)
        .into_iter()
        .next()
        .unwrap_or_default();
    let body =
        payloads::check_run_completed(repo, installation, name, sha, &branch, &run.conclusion);
    (id, body)
}

/// Branches of `repo` whose head is `sha`.
fn branches_at(s: &Shared, repo: &str, sha: &str) -> Vec<String> {
    let path = vibeloop::forge::repo_dir(s.root(), repo);
    let git = super::gitops::open(&path).expect("bare repository");
    let Ok(refs) = git.references_glob("refs/heads/*") else {
        return Vec::new();
    };
    refs.filter_map(Result::ok)
        .filter(|r| r.peel_to_commit().is_ok_and(|c| c.id().to_string() == sha))
        .filter_map(|r| r.shorthand().map(str::to_owned))
        .collect()
}

/// `POST /repos/{o}/{r}/actions/jobs/{id}/rerun`: the job runs again on its commit, as the
/// test scripted (else with the same outcome), and its completion is delivered.
pub(super) fn rerun(s: &Shared, repo: &str, id: &str, headers: &HeaderMap) -> Answer {
    if let Err(e) = check_token(&s.state(), bearer(headers).as_deref(), repo) {
        return e;
    }
    let Ok(id) = id.parse::<u64>() else {
        return err(StatusCode::NOT_FOUND, "Not Found");
    };
    let job = s.state().repos[repo]
        .check_runs
        .iter()
        .find(|c| c.id == id && c.app.as_deref() == Some("github-actions"))
        .cloned();
    let Some(job) = job else {
        return err(StatusCode::NOT_FOUND, "Not Found");
    };
    let next = {
        let mut x = s.extras();
        x.actions.rerun_asked.push(id);
        let scripted = x
            .actions
            .reruns
            .get_mut(&(repo.to_owned(), job.name.clone()))
            .and_then(VecDeque::pop_front);
        scripted.unwrap_or_else(|| JobRun {
            conclusion: job.conclusion.clone().unwrap_or_default(),
            summary: job.summary.clone(),
            annotations: job.annotations.clone(),
            log: x.actions.logs.get(&id).cloned().unwrap_or_default(),
        })
    };
    let (_, body) = store_job(s, repo, &job.head_sha, &job.name, &next);
    let s = s.clone();
    tokio::spawn(async move {
        super::hooks::deliver(&s, "check_run", &body, None).await;
    });
    (StatusCode::CREATED, json!({}))
}

/// `GET /repos/{o}/{r}/actions/jobs/{id}/logs`: a redirect to the log, as GitHub answers.
pub(super) fn logs_redirect(
    s: &Shared,
    repo: &str,
    id: &str,
    headers: &HeaderMap,
) -> Response<Body> {
    if let Err(e) = check_token(&s.state(), bearer(headers).as_deref(), repo) {
        return super::layer::respond(e, None);
    }
    let known = id
        .parse::<u64>()
        .is_ok_and(|id| s.extras().actions.logs.contains_key(&id));
    if !known {
        return super::layer::respond(err(StatusCode::NOT_FOUND, "Not Found"), None);
    }
    let host = headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    Response::builder()
        .status(StatusCode::FOUND)
        .header(
            "location",
            format!("http://{host}/_fake/logs/{id}?sig=signed-for-a-minute"),
        )
        .body(Body::empty())
        .unwrap()
}

/// `GET /_fake/logs/{id}`: the log itself, as GitHub's storage serves it.
pub(super) fn log_download(
    s: &Shared,
    method: &Method,
    id: &str,
    headers: &HeaderMap,
) -> Response<Body> {
    let id = id.parse::<u64>().unwrap_or_default();
    let log = s.extras().actions.logs.get(&id).cloned();
    s.extras()
        .actions
        .downloads
        .push((id, headers.contains_key("authorization")));
    match (method, log) {
        (&Method::GET, Some(log)) => Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "text/plain")
            .body(Body::from(log))
            .unwrap(),
        _ => Response::builder()
            .status(StatusCode::NOT_FOUND)
            .body(Body::empty())
            .unwrap(),
    }
}

impl FakeGitHub {
    /// Branches of `repo` whose head is `sha`.
    fn branches_at(&self, repo: &str, sha: &str) -> Vec<String> {
        branches_at(&self.shared(), repo, sha)
    }

    /// Another App's check run `name` completes with `conclusion` on `sha`:
    /// `check_run.completed` delivered.
    pub async fn complete_check(
        &self,
        repo: &str,
        sha: &str,
        name: &str,
        conclusion: &str,
    ) -> Sent {
        let run = JobRun::new(conclusion, "");
        let (_, body) = store_run(&self.shared(), repo, sha, name, "external-ci", &run);
        self.send_webhook("check_run", &body).await
    }

    /// Another CI sets commit status `context` = `state` on `sha`: `status` delivered.
    pub async fn post_status(&self, repo: &str, sha: &str, context: &str, state: &str) -> Sent {
        let installation = {
            let mut st = self.state();
            let r = st.repos.get_mut(repo).expect("repo added");
            r.statuses.push(CommitStatus {
                sha: sha.into(),
                context: context.into(),
                state: state.into(),
                description: None,
                target_url: Some(format!("https://ci.example.com/{repo}/{sha}")),
            });
            r.installation
        };
        let branches = self.branches_at(repo, sha);
        let body = payloads::status(repo, installation, sha, context, state, &branches);
        self.send_webhook("status", &body).await
    }

    /// A GitHub Actions job `name` on `sha` completes as `run` says: `check_run.completed`
    /// delivered. Its re-runs conclude as [`FakeGitHub::script_reruns`] says, else the same.
    pub async fn actions_job(&self, repo: &str, sha: &str, name: &str, run: JobRun) -> Sent {
        let s = self.shared();
        let (_, body) = store_job(&s, repo, sha, name, &run);
        super::hooks::deliver(&s, "check_run", &body, None).await
    }

    /// Like [`FakeGitHub::actions_job`], without the webhook; the job's (check run's) id.
    pub fn store_actions_job(&self, repo: &str, sha: &str, name: &str, run: JobRun) -> u64 {
        store_job(&self.shared(), repo, sha, name, &run).0
    }

    /// What the next re-runs of Actions job `name` of `repo` conclude, in order.
    pub fn script_reruns(&self, repo: &str, name: &str, runs: Vec<JobRun>) {
        self.extras()
            .actions
            .reruns
            .insert((repo.to_owned(), name.to_owned()), runs.into());
    }

    /// Job ids the bot asked to re-run, and each log download with whether it carried a
    /// credential.
    pub fn actions_record(&self) -> (Vec<u64>, Vec<(u64, bool)>) {
        let x = self.extras();
        (x.actions.rerun_asked.clone(), x.actions.downloads.clone())
    }
}

//! Check runs and commit statuses.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::json::{bot, check_json};
use super::{Answer, Cx, not_found, num, unprocessable};
use crate::gitops;
use crate::{CheckRun, CommitStatus};

/// The annotations of a check-run `output`; GitHub refuses more than 50 in one request.
fn take_annotations(output: Option<&Value>) -> Result<Vec<Value>, Answer> {
    let list = output
        .and_then(|o| o.get("annotations"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if list.len() > 50 {
        return Err(unprocessable("Only 50 annotations are allowed per request"));
    }
    Ok(list)
}

fn actions(body: Option<&Value>) -> Option<Vec<Value>> {
    body.and_then(|b| b.get("actions"))
        .and_then(Value::as_array)
        .cloned()
}

pub fn route(cx: &mut Cx<'_>, rest: &[&str]) -> Option<Answer> {
    let repo = cx.repo.to_owned();
    let body = cx.body;
    Some(match (cx.method, rest) {
        ("POST", ["check-runs"]) => {
            let (Some(name), Some(sha)) = (cx.field("name"), cx.field("head_sha")) else {
                return Some(unprocessable("name and head_sha are required"));
            };
            if !gitops::has_commit(cx.bare, &sha) {
                return Some(unprocessable(&format!("No commit found for SHA: {sha}")));
            }
            let status = cx.field("status").unwrap_or_else(|| "queued".into());
            let output = body.and_then(|b| b.get("output"));
            let annotations = tri!(take_annotations(output));
            let text = |k: &str| output.and_then(|o| o[k].as_str()).map(str::to_owned);
            let c = CheckRun {
                id: cx.id(),
                name,
                head_sha: sha,
                external_id: cx.field("external_id"),
                conclusion: cx.field("conclusion"),
                started_at: cx.field("started_at"),
                completed_at: cx.field("completed_at"),
                title: text("title"),
                summary: text("summary"),
                statuses: vec![status.clone()],
                status,
                annotations,
                actions: actions(body).unwrap_or_default(),
                app: None,
            };
            if c.status == "completed" && c.conclusion.is_none() {
                return Some(unprocessable(
                    "conclusion is required when status is completed",
                ));
            }
            let v = check_json(&repo, &c);
            cx.r().check_runs.push(c);
            (StatusCode::CREATED, v)
        }
        ("PATCH", ["check-runs", cid]) => {
            let cid = tri!(num(cid));
            let (status, conclusion) = (cx.field("status"), cx.field("conclusion"));
            let completed_at = cx.field("completed_at");
            let Some(c) = cx.r().check_runs.iter_mut().find(|c| c.id == cid) else {
                return Some(not_found());
            };
            let annotations = tri!(take_annotations(body.and_then(|b| b.get("output"))));
            if status.as_deref() == Some("completed") && conclusion.is_none() {
                return Some(unprocessable(
                    "conclusion is required when status is completed",
                ));
            }
            c.annotations.extend(annotations);
            if let Some(v) = status {
                c.status = v;
            }
            if let Some(v) = conclusion {
                c.conclusion = Some(v);
                c.status = "completed".into();
            }
            if c.statuses.last() != Some(&c.status) {
                let s = c.status.clone();
                c.statuses.push(s);
            }
            if let Some(v) = completed_at {
                c.completed_at = Some(v);
            }
            if let Some(a) = actions(body) {
                c.actions = a;
            }
            if let Some(o) = body.and_then(|b| b.get("output")) {
                c.title = o["title"].as_str().map(str::to_owned).or(c.title.take());
                c.summary = o["summary"]
                    .as_str()
                    .map(str::to_owned)
                    .or(c.summary.take());
            }
            let c = c.clone();
            (StatusCode::OK, check_json(&repo, &c))
        }
        ("GET", ["commits", reference @ .., "check-runs"]) => {
            let reference = reference.join("/");
            let sha = gitops::resolve(cx.bare, &reference).unwrap_or(reference);
            // `filter=latest` (GitHub's default): the newest run of each name only.
            let all = cx.query().get("filter").map(String::as_str) == Some("all");
            let on_sha: Vec<&CheckRun> = cx
                .r()
                .check_runs
                .iter()
                .filter(|c| c.head_sha == sha)
                .collect();
            let runs: Vec<Value> = on_sha
                .iter()
                .enumerate()
                .filter(|(i, c)| all || !on_sha[i + 1..].iter().any(|later| later.name == c.name))
                .rev()
                .map(|(_, c)| check_json(&repo, c))
                .collect();
            (
                StatusCode::OK,
                json!({ "total_count": runs.len(), "check_runs": runs }),
            )
        }
        ("GET", ["commits", reference @ .., "status"]) => {
            let reference = reference.join("/");
            let sha = gitops::resolve(cx.bare, &reference).unwrap_or(reference);
            combined_status(&repo, &sha, &cx.r().statuses)
        }
        ("GET", ["check-runs", cid]) => {
            let cid = tri!(num(cid));
            match cx.r().check_runs.iter().find(|c| c.id == cid) {
                Some(c) => (StatusCode::OK, check_json(&repo, c)),
                None => return Some(not_found()),
            }
        }
        ("GET", ["check-runs", cid, "annotations"]) => {
            let cid = tri!(num(cid));
            match cx.r().check_runs.iter().find(|c| c.id == cid) {
                Some(c) => (StatusCode::OK, Value::Array(c.annotations.clone())),
                None => return Some(not_found()),
            }
        }
        ("POST", ["statuses", sha]) => {
            let sha = (*sha).to_owned();
            let Some(state) = cx.field("state") else {
                return Some(unprocessable("state is missing"));
            };
            if !gitops::has_commit(cx.bare, &sha) {
                return Some(unprocessable(&format!("No commit found for SHA: {sha}")));
            }
            let s = CommitStatus {
                sha,
                context: cx.field("context").unwrap_or_else(|| "default".into()),
                state,
                description: cx.field("description"),
                target_url: cx.field("target_url"),
            };
            let id = cx.id();
            let v = json!({
                "id": id, "node_id": format!("SC_{id}"), "state": s.state, "context": s.context,
                "description": s.description, "target_url": cx.field("target_url"),
                "url": format!("https://api.github.com/repos/{repo}/statuses/{}", s.sha),
                "created_at": super::now(), "updated_at": super::now(), "creator": bot(),
            });
            cx.r().statuses.push(s);
            (StatusCode::CREATED, v)
        }
        _ => return None,
    })
}

/// `GET …/commits/{ref}/status`: the latest status of each context on `sha`, and their
/// combination (failure over pending over success), as GitHub answers.
fn combined_status(repo: &str, sha: &str, statuses: &[CommitStatus]) -> Answer {
    let mut latest: Vec<&CommitStatus> = Vec::new();
    for s in statuses.iter().rev().filter(|s| s.sha == sha) {
        if !latest.iter().any(|l| l.context == s.context) {
            latest.push(s);
        }
    }
    let state = if latest
        .iter()
        .any(|s| s.state == "failure" || s.state == "error")
    {
        "failure"
    } else if latest.is_empty() || latest.iter().any(|s| s.state == "pending") {
        "pending"
    } else {
        "success"
    };
    let list: Vec<Value> = latest
        .iter()
        .enumerate()
        .map(|(i, s)| {
            json!({
                "id": i + 1, "node_id": format!("SC_{}", i + 1), "state": s.state, "context": s.context,
                "description": s.description, "target_url": s.target_url, "avatar_url": null,
                "url": format!("https://api.github.com/repos/{repo}/statuses/{sha}"),
                "created_at": super::now(), "updated_at": super::now(),
            })
        })
        .collect();
    (
        StatusCode::OK,
        json!({
            "state": state, "sha": sha, "total_count": list.len(), "statuses": list,
            "commit_url": format!("https://api.github.com/repos/{repo}/commits/{sha}"),
            "url": format!("https://api.github.com/repos/{repo}/commits/{sha}/status"),
            "repository": { "full_name": repo },
        }),
    )
}

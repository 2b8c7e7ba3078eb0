//! The dashboard's data: tickets, one ticket with its flow and timeline, and the hive's global
//! state (worktrees with their branch, role, status and container; the task queue; history) —
//! as JSON under `/api/`, and as the views [`super::pages`] renders. Also interventions for
//! scripts (`POST /api/tickets/{key}/interventions` with a bearer token); the live timeline is
//! [`super::live`].

use axum::Extension;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::Dashboard;
use super::sight::Sight;
use crate::commands::Person;
use crate::hive::intervene::{Request, request};
use crate::ids::TicketKey;
use crate::llm::budget::Spend;
use crate::sandbox::SandboxInfo;
use crate::store::tickets::Ticket;
use crate::store::views::{Event, QueuedJob};

/// A ticket as the dashboard lists it.
#[derive(Debug, Clone, Serialize)]
pub struct TicketRow {
    pub key: TicketKey,
    pub id: String,
    pub repo: String,
    pub issue: u64,
    pub title: String,
    pub state: String,
    pub detail: Option<String>,
    pub pr: Option<u64>,
    pub created_at: i64,
    pub updated_at: i64,
    pub spent: Spend,
}

/// One ticket, with its flow state and timeline.
#[derive(Debug, Clone, Serialize)]
pub struct TicketView {
    #[serde(flatten)]
    pub row: TicketRow,
    pub flow: Option<serde_json::Value>,
    pub events: Vec<Event>,
    /// People's interventions from the dashboard, oldest first: `pending` until a worker has
    /// carried one out.
    pub interventions: Vec<InterventionRow>,
    /// What each role spent.
    pub roles: std::collections::BTreeMap<String, Spend>,
}

/// One intervention as the ticket's page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct InterventionRow {
    pub source: String,
    pub author: String,
    pub command: String,
    /// `pending`, or what it did (`approve`, `refused: permission`, `failed`…).
    pub outcome: String,
    pub reply: Option<String>,
    pub at: i64,
}

/// A worktree of this process's data directory.
#[derive(Debug, Clone, Serialize)]
pub struct WorktreeRow {
    pub repo: String,
    /// `feat/T-3`, `test/T-3`, or a scratch branch (`vibeloop/critic-T-3`).
    pub branch: String,
    pub ticket: Option<String>,
    pub role: String,
    /// The ticket's state.
    pub status: Option<String>,
    pub container: Option<SandboxInfo>,
}

/// The hive at a glance (the seed's GlobalState).
#[derive(Debug, Clone, Serialize)]
pub struct GlobalState {
    pub worktrees: Vec<WorktreeRow>,
    pub task_queue: Vec<QueuedJob>,
    pub history: Vec<Event>,
    pub tickets: Vec<TicketRow>,
}

type ApiResult<T> = Result<Json<T>, (StatusCode, String)>;

pub(super) fn unavailable(e: impl std::fmt::Display) -> (StatusCode, String) {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        format!("the database did not answer: {e}\n"),
    )
}

async fn row(d: &Dashboard, t: Ticket) -> TicketRow {
    let mut spent = Spend::default();
    for s in d.store.budget(t.key).await.unwrap_or_default().values() {
        spent.add(s);
    }
    TicketRow {
        key: t.key,
        id: t.id.to_string(),
        repo: t.repo.to_string(),
        issue: t.issue_number,
        title: t.title,
        state: t.state.to_string(),
        detail: t.detail,
        pr: t.pr_number,
        created_at: t.created_at,
        updated_at: t.updated_at,
        spent,
    }
}

/// Every ticket the person may see, newest first.
pub async fn ticket_rows(
    d: &Dashboard,
    sight: &mut Sight<'_>,
) -> Result<Vec<TicketRow>, crate::store::StoreError> {
    let mut tickets = sight.filter(d.store.tickets().await?).await;
    tickets.sort_by_key(|t| std::cmp::Reverse(t.key));
    let mut rows = Vec::with_capacity(tickets.len());
    for t in tickets {
        rows.push(row(d, t).await);
    }
    Ok(rows)
}

/// One ticket with its flow and its last 500 events; `None` when there is no such ticket.
pub async fn ticket_view(
    d: &Dashboard,
    key: TicketKey,
) -> Result<Option<TicketView>, crate::store::StoreError> {
    let Some(t) = d.store.ticket(key).await? else {
        return Ok(None);
    };
    let flow = d.store.flow(key).await?;
    let mut events = d.store.events_after(key, 0, 100_000).await?;
    let cut = events.len().saturating_sub(500);
    events.drain(..cut);
    let interventions = d
        .store
        .commands_for(&t.repo, t.issue_number)
        .await?
        .into_iter()
        .filter(|c| c.ticket == Some(t.key) && c.source.starts_with("dashboard:"))
        .map(|c| InterventionRow {
            source: c.source,
            author: c.author,
            command: c.command,
            outcome: c.outcome,
            reply: c.reply,
            at: c.at,
        })
        .collect();
    let roles = d.store.budget(key).await?;
    Ok(Some(TicketView {
        row: row(d, t).await,
        flow,
        events,
        interventions,
        roles,
    }))
}

/// What a ticket address names.
#[derive(Debug)]
pub enum Found {
    One(TicketKey),
    /// The same id in several repositories.
    Many(Vec<Ticket>),
    /// An old numeric address: the ticket's repository and id, for a redirect.
    Moved(String, String),
    Nothing,
}

/// The ticket `id` (`T-1`, or an old numeric key) names, in `repo` when given, among those
/// the person may see.
pub async fn find(
    d: &Dashboard,
    sight: &mut Sight<'_>,
    repo: Option<&str>,
    id: &str,
) -> Result<Found, crate::store::StoreError> {
    if repo.is_none()
        && let Ok(key) = id.parse::<i64>()
    {
        return Ok(match sight.ticket(TicketKey(key)).await? {
            Some(t) => Found::Moved(t.repo.to_string(), t.id.to_string()),
            None => Found::Nothing,
        });
    }
    let Some(id) = crate::ticket::TicketId::parse(id) else {
        return Ok(Found::Nothing);
    };
    let named: Vec<Ticket> = d
        .store
        .tickets()
        .await?
        .into_iter()
        .filter(|t| t.id == id && repo.is_none_or(|r| t.repo.as_str() == r))
        .collect();
    let mut all = sight.filter(named).await;
    Ok(match all.len() {
        0 => Found::Nothing,
        1 => Found::One(all.remove(0).key),
        _ => Found::Many(all),
    })
}

/// The global state, of what the person may see: the operator everything; anyone else the
/// worktrees, jobs and events of the tickets they may see, and no other job.
pub async fn global_state(
    d: &Dashboard,
    sight: &mut Sight<'_>,
) -> Result<GlobalState, crate::store::StoreError> {
    let tickets = ticket_rows(d, sight).await?;
    let all = sight.sees_all();
    let seen = |repo: &str| all || tickets.iter().any(|t| t.repo == repo);
    let containers = match &d.sandbox {
        Some(s) => s.sandboxes().await.unwrap_or_default(),
        None => Vec::new(),
    };
    let mut worktrees = Vec::new();
    let root = d.data_dir.join("worktrees");
    for (repo, branch_dir) in list_worktrees(&root) {
        if !seen(&repo) {
            continue;
        }
        let ticket = branch_dir
            .rsplit('-')
            .next()
            .filter(|n| n.parse::<u32>().is_ok())
            .map(|n| format!("T-{n}"));
        let (branch, role) = describe_branch(&branch_dir);
        let status = ticket.as_ref().and_then(|id| {
            tickets
                .iter()
                .find(|t| t.repo == repo && &t.id == id)
                .map(|t| t.state.clone())
        });
        let container = containers
            .iter()
            .find(|c| {
                c.repo == repo && Some(&c.ticket) == ticket.as_ref() && role_matches(&c.role, &role)
            })
            .cloned();
        worktrees.push(WorktreeRow {
            repo,
            branch,
            ticket,
            role,
            status,
            container,
        });
    }
    let keys: std::collections::HashSet<TicketKey> = tickets.iter().map(|t| t.key).collect();
    let mut task_queue = d.store.queued_jobs(200).await?;
    task_queue.retain(|j| all || job_ticket(j).is_some_and(|k| keys.contains(&k)));
    let mut history = d.store.recent_events(100).await?;
    history.retain(|e| all || keys.contains(&e.ticket));
    Ok(GlobalState {
        worktrees,
        task_queue,
        history,
        tickets,
    })
}

/// The ticket a queued job works on, when it is a ticket's (its run, or its gates again).
fn job_ticket(j: &QueuedJob) -> Option<TicketKey> {
    use crate::store::jobs::JobKey;
    match JobKey::parse(&j.kind, &j.key)? {
        JobKey::Ticket(t) | JobKey::Gates { ticket: t, .. } => Some(t),
        _ => None,
    }
}

/// `(owner/name, directory name)` of every worktree under `<data>/worktrees/<owner>/<name>/`.
fn list_worktrees(root: &std::path::Path) -> Vec<(String, String)> {
    let dirs = |p: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(p)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let mut out = Vec::new();
    for owner in dirs(root) {
        for name in dirs(&root.join(&owner)) {
            for branch in dirs(&root.join(&owner).join(&name)) {
                out.push((format!("{owner}/{name}"), branch));
            }
        }
    }
    out
}

/// The branch a worktree directory holds (`feat-T-3` → `feat/T-3`) and the role working in it.
fn describe_branch(dir: &str) -> (String, String) {
    if let Some(rest) = dir.strip_prefix("feat-") {
        return (format!("feat/{rest}"), "builder".into());
    }
    if let Some(rest) = dir.strip_prefix("test-") {
        return (format!("test/{rest}"), "breaker".into());
    }
    let scratch = dir.strip_prefix("vibeloop-").unwrap_or(dir);
    let role = scratch.split("-T-").next().unwrap_or(scratch).to_owned();
    (format!("vibeloop/{scratch}"), role)
}

fn role_matches(container_role: &str, worktree_role: &str) -> bool {
    container_role == worktree_role || (worktree_role == "builder" && container_role == "regate")
}

/// `GET /api/state`.
pub async fn state(
    State(d): State<Dashboard>,
    Extension(who): Extension<Person>,
) -> ApiResult<GlobalState> {
    global_state(&d, &mut Sight::new(&d, &who))
        .await
        .map(Json)
        .map_err(unavailable)
}

/// `GET /api/tickets`.
pub async fn tickets(
    State(d): State<Dashboard>,
    Extension(who): Extension<Person>,
) -> ApiResult<Vec<TicketRow>> {
    ticket_rows(&d, &mut Sight::new(&d, &who))
        .await
        .map(Json)
        .map_err(unavailable)
}

/// `GET /api/tickets/{id}`: `T-1` when one repository has it (409 with the choices when
/// several do); an old numeric key redirects to the ticket's own address.
pub async fn ticket(
    State(d): State<Dashboard>,
    Extension(who): Extension<Person>,
    Path(id): Path<String>,
) -> Response {
    answer(&d, &mut Sight::new(&d, &who), None, &id).await
}

/// `GET /api/tickets/{owner}/{name}/{id}`.
pub async fn ticket_at(
    State(d): State<Dashboard>,
    Extension(who): Extension<Person>,
    Path((owner, name, id)): Path<(String, String, String)>,
) -> Response {
    let repo = format!("{owner}/{name}");
    answer(&d, &mut Sight::new(&d, &who), Some(&repo), &id).await
}

async fn answer(d: &Dashboard, sight: &mut Sight<'_>, repo: Option<&str>, id: &str) -> Response {
    let key = match find(d, sight, repo, id).await {
        Ok(Found::One(key)) => key,
        Ok(Found::Moved(repo, id)) => {
            return axum::response::Redirect::permanent(&format!("/api/tickets/{repo}/{id}"))
                .into_response();
        }
        Ok(Found::Many(all)) => {
            let names: Vec<String> = all
                .iter()
                .map(|t| format!("/api/tickets/{}/{}", t.repo, t.id))
                .collect();
            return (
                StatusCode::CONFLICT,
                format!(
                    "{id} is in several repositories; ask for one of: {}\n",
                    names.join(", ")
                ),
            )
                .into_response();
        }
        Ok(Found::Nothing) => {
            return (
                StatusCode::NOT_FOUND,
                format!("no ticket {id}: ids look like T-12\n"),
            )
                .into_response();
        }
        Err(e) => return unavailable(e).into_response(),
    };
    match ticket_view(d, key).await {
        Ok(Some(v)) => Json(v).into_response(),
        Ok(None) => (StatusCode::NOT_FOUND, format!("no ticket {id}\n")).into_response(),
        Err(e) => unavailable(e).into_response(),
    }
}

#[derive(Debug, Deserialize)]
pub struct Intervention {
    /// A `/hive` command line: `/hive retry`, `/hive feedback …`.
    pub command: String,
}

/// How the dashboard answers an intervention: queued for a worker (202), or not a command (400).
#[derive(Debug, Serialize)]
pub struct InterventionAnswer {
    pub queued: bool,
    /// Names the intervention among the ticket's (`dashboard:<nonce>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub text: String,
}

/// `POST /api/tickets/{key}/interventions` with `{"command": "/hive retry"}`: recorded and queued;
/// `GET /api/tickets/{key}` shows it under `interventions`, pending until a worker has carried it
/// out, then with its outcome and reply.
pub async fn intervene(
    State(d): State<Dashboard>,
    Extension(who): Extension<Person>,
    Path(key): Path<TicketKey>,
    Json(i): Json<Intervention>,
) -> Response {
    match apply(&d, key, &i.command, &who).await {
        Ok(a) => {
            let status = if a.queued {
                StatusCode::ACCEPTED
            } else {
                StatusCode::BAD_REQUEST
            };
            (status, Json(a)).into_response()
        }
        Err((status, text)) => (status, text).into_response(),
    }
}

/// Records and queues an intervention; the error is an HTTP status and a reason.
pub async fn apply(
    d: &Dashboard,
    key: TicketKey,
    command: &str,
    who: &Person,
) -> Result<InterventionAnswer, (StatusCode, String)> {
    let t = Sight::new(d, who)
        .ticket(key)
        .await
        .map_err(unavailable)?
        .ok_or((StatusCode::NOT_FOUND, format!("no ticket {key}\n")))?;
    let line = if command.trim_start().starts_with("/hive") {
        command.trim().to_owned()
    } else {
        format!("/hive {}", command.trim())
    };
    match request(&d.store, &t, &line, who)
        .await
        .map_err(unavailable)?
    {
        Request::Queued { source, command } => Ok(InterventionAnswer {
            queued: true,
            source: Some(source),
            text: format!(
                "Sent `{command}`: a worker carries it out, and its answer shows under Interventions."
            ),
        }),
        Request::NotACommand(text) => Ok(InterventionAnswer {
            queued: false,
            source: None,
            text,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worktree_directories_name_their_branch_and_role() {
        assert_eq!(
            describe_branch("feat-T-3"),
            ("feat/T-3".into(), "builder".into())
        );
        assert_eq!(
            describe_branch("test-T-3"),
            ("test/T-3".into(), "breaker".into())
        );
        assert_eq!(
            describe_branch("vibeloop-critic-T-3"),
            ("vibeloop/critic-T-3".into(), "critic".into())
        );
    }
}

//! The dashboard's HTML pages but a ticket's ([`super::ticket_page`]): the tickets with their
//! filters and the home page's pictures, the lookup of a ticket by the id people see
//! (`/tickets/T-1`, `/tickets/acme/widgets/T-1`; the old numeric addresses redirect), the
//! 404 page, the static files and the global state. Rendered on the server with every value
//! escaped (issue text and model output are hostile input), in [`super::html`]'s frame.

use axum::Extension;
use axum::Form;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::api::{self, Found, TicketRow};
pub use super::html::esc;
use super::html::{age, issue_link, layout, page, problem, ticket_url, unavailable};
use super::sight::Sight;
use super::{Dashboard, session_of};
use crate::commands::Person;
use crate::ids::TicketKey;

/// The list's filters: `?repo=owner/name&state=InProgress`.
#[derive(Debug, Default, Deserialize)]
pub struct Filters {
    #[serde(default)]
    repo: Option<String>,
    #[serde(default)]
    state: Option<String>,
}

/// `GET /`: the pictures, the filters and the tickets.
pub async fn tickets(
    State(d): State<Dashboard>,
    Extension(who): Extension<Person>,
    Query(f): Query<Filters>,
) -> Response {
    let rows = match api::ticket_rows(&d, &mut Sight::new(&d, &who)).await {
        Ok(r) => r,
        Err(e) => return unavailable(&e),
    };
    let repo = f.repo.filter(|r| !r.is_empty());
    let state = f.state.filter(|s| !s.is_empty());
    let mut body = String::from("<h1>Tickets</h1>");
    if rows.is_empty() {
        body.push_str("<p class=\"muted\">No tickets yet: label an issue <code>hive</code> in a repository the App is installed on.</p>");
        return page(StatusCode::OK, layout("Tickets", &body));
    }
    body.push_str(&super::home::pictures(&d, &rows).await);
    body.push_str(&filters(&rows, repo.as_deref(), state.as_deref()));
    let shown: Vec<&TicketRow> = rows
        .iter()
        .filter(|t| repo.as_deref().is_none_or(|r| t.repo == r))
        .filter(|t| state.as_deref().is_none_or(|s| t.state == s))
        .collect();
    if shown.is_empty() {
        body.push_str("<p class=\"muted\" id=\"none\">No ticket matches these filters. <a href=\"/\">Show all</a></p>");
        return page(StatusCode::OK, layout("Tickets", &body));
    }
    body.push_str("<table id=\"tickets\"><thead><tr><th>Ticket</th><th>Repository</th><th>Issue</th><th>State</th><th>Age</th><th>Spent</th></tr></thead><tbody>");
    for t in shown {
        body.push_str(&format!(
            "<tr data-key=\"{}\"><td><a href=\"{}\">{}</a></td><td>{}</td><td>{} {}</td><td><span class=\"badge st-{}\" title=\"{}\">{}</span></td><td>{}</td><td>{}</td></tr>",
            t.key,
            esc(&ticket_url(&t.repo, &t.id)),
            esc(&t.id),
            esc(&t.repo),
            issue_link(&d, t),
            esc(&t.title),
            esc(&t.state),
            esc(&t.state),
            esc(super::story::stage_name(&t.state)),
            age(t.created_at),
            esc(&t.spent.describe()),
        ));
    }
    body.push_str("</tbody></table>");
    page(StatusCode::OK, layout("Tickets", &body))
}

/// The filter form: the repositories and states that have tickets.
fn filters(rows: &[TicketRow], repo: Option<&str>, state: Option<&str>) -> String {
    let options = |all: Vec<&str>, chosen: Option<&str>| -> String {
        let mut all = all;
        all.sort_unstable();
        all.dedup();
        all.iter()
            .map(|v| {
                let sel = if Some(*v) == chosen { " selected" } else { "" };
                format!("<option value=\"{0}\"{sel}>{0}</option>", esc(v))
            })
            .collect()
    };
    format!(
        "<form class=\"filters\" method=\"get\" action=\"/\">\
         <label>Repository <select name=\"repo\" id=\"filter-repo\"><option value=\"\">all</option>{}</select></label>\
         <label>State <select name=\"state\" id=\"filter-state\"><option value=\"\">all</option>{}</select></label>\
         <button type=\"submit\">Filter</button></form>",
        options(rows.iter().map(|r| r.repo.as_str()).collect(), repo),
        options(rows.iter().map(|r| r.state.as_str()).collect(), state),
    )
}

/// `GET /tickets/{id}`: `T-1` (the one ticket of that id, or a choice when several
/// repositories have one), or an old numeric address (redirected).
pub async fn ticket(
    State(d): State<Dashboard>,
    Extension(who): Extension<Person>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    match api::find(&d, &mut Sight::new(&d, &who), None, &id).await {
        Ok(Found::Moved(repo, id)) => Redirect::permanent(&ticket_url(&repo, &id)).into_response(),
        Ok(Found::One(key)) => super::ticket_page::render(&d, key, &headers, None).await,
        Ok(Found::Many(rows)) => {
            let mut body = format!(
                "<h1>{} is in several repositories</h1><ul id=\"choices\">",
                esc(&id)
            );
            for r in rows {
                let (repo, id) = (r.repo.to_string(), r.id.to_string());
                body.push_str(&format!(
                    "<li><a href=\"{}\">{} {}</a> — {}</li>",
                    esc(&ticket_url(&repo, &id)),
                    esc(&repo),
                    esc(&id),
                    esc(&r.title)
                ));
            }
            body.push_str("</ul>");
            page(StatusCode::MULTIPLE_CHOICES, layout(&id, &body))
        }
        Ok(Found::Nothing) => no_ticket(&id),
        Err(e) => unavailable(&e),
    }
}

/// `GET /tickets/{owner}/{name}/{id}`: a ticket's own address.
pub async fn ticket_at(
    State(d): State<Dashboard>,
    Extension(who): Extension<Person>,
    Path((owner, name, id)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let repo = format!("{owner}/{name}");
    match api::find(&d, &mut Sight::new(&d, &who), Some(&repo), &id).await {
        Ok(Found::One(key)) => super::ticket_page::render(&d, key, &headers, None).await,
        Ok(_) => no_ticket(&format!("{repo} {id}")),
        Err(e) => unavailable(&e),
    }
}

fn no_ticket(what: &str) -> Response {
    problem(
        StatusCode::NOT_FOUND,
        "No such ticket",
        &format!(
            "There is no ticket {what} here. Ticket ids look like T-12; the list of tickets has every one."
        ),
    )
}

#[derive(Debug, Deserialize)]
pub struct InterventionForm {
    command: String,
    csrf: String,
}

/// `POST /tickets/{key}/intervene`: a form's command.
pub async fn intervene(
    State(d): State<Dashboard>,
    Extension(who): Extension<Person>,
    Path(key): Path<TicketKey>,
    headers: HeaderMap,
    Form(f): Form<InterventionForm>,
) -> Response {
    if !d.keys.csrf_ok(&session_of(&headers), &f.csrf) {
        return problem(
            StatusCode::FORBIDDEN,
            "Refused",
            "This form is stale or not from this dashboard; reload the page and try again.",
        );
    }
    let flash = match api::apply(&d, key, &f.command, &who).await {
        Ok(a) => (a.queued, a.text),
        Err((StatusCode::NOT_FOUND, _)) => return no_ticket(&key.to_string()),
        Err((_, text)) => (false, text.trim().to_owned()),
    };
    super::ticket_page::render(&d, key, &headers, Some(flash)).await
}

/// `GET /state`: worktrees, the task queue and history.
pub async fn state(State(d): State<Dashboard>, Extension(who): Extension<Person>) -> Response {
    let g = match api::global_state(&d, &mut Sight::new(&d, &who)).await {
        Ok(g) => g,
        Err(e) => return unavailable(&e),
    };
    let mut body = String::from("<h1>Hive state</h1><h2>Worktrees</h2>");
    if g.worktrees.is_empty() {
        body.push_str("<p class=\"muted\">No worktrees on this process.</p>");
    } else {
        body.push_str("<table id=\"worktrees\"><thead><tr><th>Repository</th><th>Branch</th><th>Role</th><th>Status</th><th>Container</th></tr></thead><tbody>");
        for w in &g.worktrees {
            let container = w
                .container
                .as_ref()
                .map(|c| format!("{} ({})", c.id, c.state))
                .unwrap_or_else(|| "—".into());
            body.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&w.repo),
                esc(&w.branch),
                esc(&w.role),
                esc(w.status.as_deref().unwrap_or("—")),
                esc(&container)
            ));
        }
        body.push_str("</tbody></table>");
    }
    body.push_str("<h2>Task queue</h2><table id=\"queue\"><thead><tr><th>Job</th><th>Kind</th><th>Subject</th><th>Status</th><th>Attempts</th><th>Last error</th></tr></thead><tbody>");
    for j in &g.task_queue {
        body.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            j.id,
            esc(&j.kind),
            esc(&j.key),
            esc(&j.status),
            j.attempts,
            esc(j.last_error.as_deref().unwrap_or(""))
        ));
    }
    body.push_str("</tbody></table><h2>History</h2><table id=\"history\"><tbody>");
    // What people read of the recent events: the timeline's sentences, noise left out.
    for e in &g.history {
        let Some(what) = super::story::tell(&e.kind, &e.data) else {
            continue;
        };
        let link = match g.tickets.iter().find(|t| t.key == e.ticket) {
            Some(t) => format!(
                "<a href=\"{}\">{} {}</a>",
                esc(&ticket_url(&t.repo, &t.id)),
                esc(&t.repo),
                esc(&t.id)
            ),
            None => String::from("a deleted ticket"),
        };
        body.push_str(&format!(
            "<tr><td>{} ago</td><td>{link}</td><td>{}</td></tr>",
            age(e.at),
            esc(&what.text)
        ));
    }
    body.push_str("</tbody></table>");
    page(StatusCode::OK, layout("Hive state", &body))
}

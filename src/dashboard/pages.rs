//! The dashboard's HTML: the tickets page, a ticket's page (state, plan, attempts, spend, the
//! live timeline, interventions) and the global-state page. Rendered on the server with every
//! value escaped (issue text is hostile input); the only script is [`SCRIPT`], served from this
//! site, which follows the timeline's server-sent events and writes with `textContent`.

use axum::Extension;
use axum::Form;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;

use super::api::{self, TicketRow, TicketView};
use super::{Dashboard, now, session_of};
use crate::hive::intervene::Person;
use crate::ids::TicketKey;

/// The timeline script: appends each new event of the ticket to the table, keeps the state
/// cell current.
pub const SCRIPT: &str = r#"(function () {
  const box = document.getElementById('timeline');
  if (!box || !window.EventSource) return;
  const key = box.dataset.key, after = box.dataset.after;
  const body = box.querySelector('tbody');
  const source = new EventSource('/tickets/' + key + '/events?after=' + after);
  source.addEventListener('timeline', function (msg) {
    const e = JSON.parse(msg.data);
    const tr = document.createElement('tr');
    tr.dataset.id = e.id;
    for (const text of [new Date(e.at).toISOString().slice(11, 19), e.kind, summary(e.data)]) {
      const td = document.createElement('td');
      td.textContent = text;
      tr.appendChild(td);
    }
    body.appendChild(tr);
    if (e.kind === 'state' && e.data && e.data.to) {
      document.getElementById('state').textContent = e.data.to;
    }
  });
  function summary(d) {
    const s = typeof d === 'string' ? d : JSON.stringify(d);
    return s.length > 300 ? s.slice(0, 300) + '…' : s;
  }
})();
"#;

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:72rem;padding:1rem}\
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}\
nav a{margin-right:1rem}.error{color:#b00}.ok{color:#060}code{background:#f4f4f4;padding:0 .2rem}\
form.inline{display:inline}.muted{color:#666}";

/// A whole page.
pub fn layout(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{} · Vibeloop</title>\
         <meta name=\"viewport\" content=\"width=device-width\"><style>{STYLE}</style></head><body>\
         <nav><a href=\"/\">Tickets</a><a href=\"/state\">Hive state</a>\
         <form class=\"inline\" method=\"post\" action=\"/logout\"><button>Sign out</button></form></nav>\
         {body}<script src=\"/static/dashboard.js\"></script></body></html>",
        esc(title)
    )
}

/// A page for people not signed in yet: no navigation, no script.
pub fn bare_layout(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{} · Vibeloop</title>\
         <meta name=\"viewport\" content=\"width=device-width\"><style>{STYLE}</style></head><body>{body}</body></html>",
        esc(title)
    )
}

/// Response headers every page carries: no script but our own, no framing.
pub fn page(status: StatusCode, html: String) -> Response {
    (
        status,
        [
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'",
            ),
            (header::X_FRAME_OPTIONS, "DENY"),
        ],
        Html(html),
    )
        .into_response()
}

/// `GET /static/dashboard.js`.
pub async fn script() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
}

fn age(since_ms: i64) -> String {
    let s = (now() - since_ms / 1000).max(0);
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        3600..86_400 => format!("{} h", s / 3600),
        _ => format!("{} d", s / 86_400),
    }
}

fn issue_link(d: &Dashboard, t: &TicketRow) -> String {
    let mut url = d.github_url.clone();
    url.set_path(&format!("{}/issues/{}", t.repo, t.issue));
    format!("<a href=\"{}\">#{}</a>", esc(url.as_str()), t.issue)
}

/// `GET /`.
pub async fn tickets(State(d): State<Dashboard>) -> Response {
    let rows = match api::ticket_rows(&d).await {
        Ok(r) => r,
        Err(e) => {
            return page(
                StatusCode::SERVICE_UNAVAILABLE,
                layout(
                    "Tickets",
                    &format!(
                        "<p class=\"error\">The database did not answer: {}</p>",
                        esc(&e.to_string())
                    ),
                ),
            );
        }
    };
    let mut body = String::from("<h1>Tickets</h1>");
    if rows.is_empty() {
        body.push_str("<p class=\"muted\">No tickets yet: label an issue <code>hive</code> in a repository the App is installed on.</p>");
    } else {
        body.push_str("<table id=\"tickets\"><thead><tr><th>Ticket</th><th>Repository</th><th>Issue</th><th>State</th><th>Age</th><th>Spent</th></tr></thead><tbody>");
        for t in &rows {
            body.push_str(&format!(
                "<tr data-key=\"{}\"><td><a href=\"/tickets/{}\">{}</a></td><td>{}</td><td>{} {}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                t.key,
                t.key,
                esc(&t.id),
                esc(&t.repo),
                issue_link(&d, t),
                esc(&t.title),
                esc(&t.state),
                age(t.created_at),
                esc(&t.spent.describe()),
            ));
        }
        body.push_str("</tbody></table>");
    }
    page(StatusCode::OK, layout("Tickets", &body))
}

/// `GET /tickets/{key}`.
pub async fn ticket(
    State(d): State<Dashboard>,
    Path(key): Path<TicketKey>,
    headers: HeaderMap,
) -> Response {
    render_ticket(&d, key, &headers, None).await
}

async fn render_ticket(
    d: &Dashboard,
    key: TicketKey,
    headers: &HeaderMap,
    flash: Option<(bool, String)>,
) -> Response {
    let v = match api::ticket_view(d, key).await {
        Ok(Some(v)) => v,
        Ok(None) => {
            return page(
                StatusCode::NOT_FOUND,
                layout(
                    "No such ticket",
                    "<p>There is no such ticket. <a href=\"/\">All tickets</a></p>",
                ),
            );
        }
        Err(e) => {
            return page(
                StatusCode::SERVICE_UNAVAILABLE,
                layout(
                    "Ticket",
                    &format!(
                        "<p class=\"error\">The database did not answer: {}</p>",
                        esc(&e.to_string())
                    ),
                ),
            );
        }
    };
    let csrf = d.keys.csrf(&session_of(headers));
    let mut body = format!(
        "<h1>{} · {}</h1><p>{} {} — state <strong id=\"state\">{}</strong>{}</p>",
        esc(&v.row.id),
        esc(&v.row.title),
        esc(&v.row.repo),
        issue_link(d, &v.row),
        esc(&v.row.state),
        v.row
            .detail
            .as_deref()
            .map(|x| format!("<br><span id=\"detail\">{}</span>", esc(x)))
            .unwrap_or_default()
    );
    if let Some((ok, text)) = flash {
        let class = if ok { "ok" } else { "error" };
        body.push_str(&format!(
            "<p class=\"{class}\" id=\"answer\">{}</p>",
            esc(&text)
        ));
    }
    body.push_str(&format!("<p>Spent: {}</p>", esc(&v.row.spent.describe())));
    body.push_str(&plan_and_attempts(&v));
    body.push_str(&interventions(key, &csrf));
    body.push_str(&sent(&v));
    body.push_str(&timeline(&v));
    page(StatusCode::OK, layout(&v.row.id, &body))
}

fn plan_and_attempts(v: &TicketView) -> String {
    let Some(flow) = v
        .flow
        .as_ref()
        .and_then(|f| serde_json::from_value::<crate::hive::flow::Flow>(f.clone()).ok())
    else {
        return String::new();
    };
    // The status comment's Markdown, shown as text: it says the same on GitHub.
    let section = crate::hive::status::status_section(&flow);
    if section.trim().is_empty() {
        return String::new();
    }
    format!(
        "<h2>Plan and attempts</h2><pre id=\"plan\">{}</pre>",
        esc(section.trim())
    )
}

fn interventions(key: TicketKey, csrf: &str) -> String {
    let button = |command: &str, label: &str| {
        format!(
            "<form class=\"inline\" method=\"post\" action=\"/tickets/{key}/intervene\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"command\" value=\"{}\">\
             <button type=\"submit\" id=\"do-{}\">{}</button></form> ",
            esc(csrf),
            esc(command),
            esc(label).to_lowercase(),
            esc(label)
        )
    };
    let mut s = String::from("<h2>Intervene</h2><p>");
    for (command, label) in [
        ("/hive retry", "Retry"),
        ("/hive approve", "Approve"),
        ("/hive abort", "Abort"),
    ] {
        s.push_str(&button(command, label));
    }
    s.push_str(&format!(
        "</p><form method=\"post\" action=\"/tickets/{key}/intervene\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
         <label>Command <input name=\"command\" id=\"command\" size=\"60\" placeholder=\"/hive feedback Keep the public API unchanged\"></label> \
         <button type=\"submit\" id=\"send\">Send</button></form>\
         <p class=\"muted\">Any <code>/hive</code> command: feedback, retry [role], approve, abort, rebase, plan, reset &lt;tag&gt;. \
         Recorded like a comment's and carried out by a worker, with your permission checked.</p>",
        esc(csrf)
    ));
    s
}

/// The interventions sent from this dashboard, with what each did once carried out.
fn sent(v: &TicketView) -> String {
    if v.interventions.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "<table id=\"interventions\"><thead><tr><th>Sent</th><th>By</th><th>Command</th><th>Outcome</th><th>Answer</th></tr></thead><tbody>",
    );
    for i in &v.interventions {
        let class = match i.outcome.as_str() {
            "pending" => "muted",
            o if o.starts_with("refused") || o == "failed" => "error",
            _ => "ok",
        };
        s.push_str(&format!(
            "<tr data-source=\"{}\"><td>{}</td><td>{}</td><td><code>{}</code></td><td class=\"{class}\">{}</td><td>{}</td></tr>",
            esc(&i.source),
            age(i.at),
            esc(&i.author),
            esc(&i.command),
            esc(&i.outcome),
            esc(i.reply.as_deref().unwrap_or("a worker carries it out…")),
        ));
    }
    s.push_str("</tbody></table>");
    s
}

fn timeline(v: &TicketView) -> String {
    let after = v.events.last().map_or(0, |e| e.id);
    let mut s = format!(
        "<h2>Timeline</h2><table id=\"timeline\" data-key=\"{}\" data-after=\"{after}\"><thead><tr><th>Time (UTC)</th><th>Event</th><th>Detail</th></tr></thead><tbody>",
        v.row.key
    );
    for e in &v.events {
        let data = e.data.to_string();
        let data: String = data.chars().take(300).collect();
        let at = chrono::DateTime::from_timestamp_millis(e.at)
            .map(|t| t.format("%H:%M:%S").to_string())
            .unwrap_or_default();
        s.push_str(&format!(
            "<tr data-id=\"{}\"><td>{at}</td><td>{}</td><td>{}</td></tr>",
            e.id,
            esc(&e.kind),
            esc(&data)
        ));
    }
    s.push_str("</tbody></table>");
    s
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
        return page(
            StatusCode::FORBIDDEN,
            layout(
                "Refused",
                "<p class=\"error\">This form is stale or not from this dashboard; reload the page and try again.</p>",
            ),
        );
    }
    let flash = match api::apply(&d, key, &f.command, &who).await {
        Ok(a) => (a.queued, a.text),
        Err((_, text)) => (false, text.trim().to_owned()),
    };
    render_ticket(&d, key, &headers, Some(flash)).await
}

/// `GET /state`: worktrees, the task queue and history.
pub async fn state(State(d): State<Dashboard>) -> Response {
    let g = match api::global_state(&d).await {
        Ok(g) => g,
        Err(e) => {
            return page(
                StatusCode::SERVICE_UNAVAILABLE,
                layout(
                    "Hive state",
                    &format!(
                        "<p class=\"error\">The database did not answer: {}</p>",
                        esc(&e.to_string())
                    ),
                ),
            );
        }
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
    for e in &g.history {
        body.push_str(&format!(
            "<tr><td>{}</td><td><a href=\"/tickets/{}\">ticket {}</a></td><td>{}</td></tr>",
            age(e.at),
            e.ticket,
            e.ticket,
            esc(&e.kind)
        ));
    }
    body.push_str("</tbody></table>");
    page(StatusCode::OK, layout("Hive state", &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_is_escaped() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
    }
}

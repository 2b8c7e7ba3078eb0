//! A ticket's page: its state, the plan and attempts (the status comment's Markdown rendered),
//! pictures of where its time and money went and how the gates fared per run, the
//! interventions, and the timeline told in sentences, grouped by stage, live over server-sent
//! events.

use std::collections::BTreeMap;

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::api::{self, TicketView};
use super::charts::{self, Cell, Lane, Span};
use super::html::{age, esc, issue_link, layout, page, problem};
use super::story::{self, Tone};
use super::{Dashboard, session_of};
use crate::ids::TicketKey;
use crate::llm::budget::Spend;
use crate::store::views::Event;

/// The page of ticket `key`, with a note on what a form just did.
pub async fn render(
    d: &Dashboard,
    key: TicketKey,
    headers: &HeaderMap,
    flash: Option<(bool, String)>,
) -> Response {
    let v = match api::ticket_view(d, key).await {
        Ok(Some(v)) => v,
        Ok(None) => {
            return problem(
                StatusCode::NOT_FOUND,
                "No such ticket",
                "There is no such ticket: it may belong to another Vibeloop instance's database.",
            );
        }
        Err(e) => {
            return problem(
                StatusCode::SERVICE_UNAVAILABLE,
                "The database did not answer",
                &e.to_string(),
            );
        }
    };
    let csrf = d.keys.csrf(&session_of(headers));
    let state = &v.row.state;
    let mut body = format!(
        "<p class=\"crumbs\"><a href=\"/\">Tickets</a> › {}</p>\
         <h1>{} · {}</h1><p>{} {} — <span id=\"state\" class=\"badge st-{}\">{}</span>{}</p>",
        esc(&v.row.repo),
        esc(&v.row.id),
        esc(&v.row.title),
        esc(&v.row.repo),
        issue_link(d, &v.row),
        esc(state),
        esc(story::stage_name(state)),
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
    body.push_str(&pictures(&v));
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
    // The status comment's Markdown: it says the same on GitHub.
    let section = crate::hive::status::status_section(&flow);
    if section.trim().is_empty() {
        return String::new();
    }
    format!(
        "<h2>Plan and attempts</h2><div id=\"plan\" class=\"markdown\">{}</div>",
        super::markdown::to_html(section.trim())
    )
}

fn terminal(state: &str) -> bool {
    matches!(state, "Completed" | "Failed")
}

/// The Gantt chart, the gates grid and the spend per role.
fn pictures(v: &TicketView) -> String {
    let mut s = String::new();
    let end = if terminal(&v.row.state) {
        v.events.last().map_or(0, |e| e.at)
    } else {
        super::now() * 1000
    };
    if let Some(first) = v.events.first() {
        let lanes = lanes(&v.events, end);
        if lanes.iter().any(|l| !l.spans.is_empty()) {
            s.push_str("<h2>Where the time went</h2>");
            s.push_str(&charts::gantt(
                "gantt",
                &lanes,
                first.at,
                end.max(first.at + 1),
            ));
        }
    }
    if let Some(grid) = gates_grid(&v.events) {
        s.push_str("<h2>Gates per run</h2>");
        s.push_str(&grid);
        s.push_str("<p class=\"legend\"><span class=\"key s-passed\"></span> passed <span class=\"key s-failed\"></span> failed <span class=\"key s-skipped\"></span> skipped</p>");
    }
    if !v.roles.is_empty() {
        s.push_str("<h2>Spend per role</h2>");
        s.push_str(&spend(&v.roles));
    }
    s
}

/// Where a role's lane goes: the ticket's roles in the order they work, then the others.
fn lane_order(role: &str) -> usize {
    crate::ticket::Role::TICKET
        .iter()
        .position(|r| r.as_str().eq_ignore_ascii_case(role))
        .unwrap_or(9)
}

/// Lanes of the ticket's states, each role's work and the gates, from its events.
pub fn lanes(events: &[Event], end: i64) -> Vec<Lane> {
    let mut states = Lane {
        name: "State".into(),
        spans: vec![],
    };
    let mut roles: BTreeMap<String, Vec<Span>> = BTreeMap::new();
    let mut open_role: BTreeMap<String, i64> = BTreeMap::new();
    let mut gates = Lane {
        name: "Gates".into(),
        spans: vec![],
    };
    let mut open_gate: Option<(i64, String)> = None;
    let mut state: Option<(i64, String)> = None;
    for e in events {
        let d = &e.data;
        if e.kind == "state" {
            if let Some((from, name)) = state.take() {
                states.spans.push(span(
                    from,
                    e.at,
                    &format!("st-{name}"),
                    story::stage_name(&name),
                ));
            }
            state = Some((e.at, d["to"].as_str().unwrap_or("").to_owned()));
            continue;
        }
        if let Some(role) = d["role"].as_str().filter(|_| agent_event(&e.kind)) {
            // A role's run: from its claim to its result (what follows is its clean-up).
            let starts = e.kind == "stage_enter" && d["stage"] == "claim";
            if starts || (!open_role.contains_key(role) && !roles.contains_key(role)) {
                open_role.entry(role.to_owned()).or_insert(e.at);
            }
            if e.kind == "result"
                && let Some(from) = open_role.remove(role)
            {
                let title = format!("{role}: {}", d["stop"].as_str().unwrap_or("done"));
                roles.entry(role.to_owned()).or_default().push(span(
                    from,
                    e.at,
                    &format!("r-{role}"),
                    &title,
                ));
            }
            continue;
        }
        match (e.kind.as_str(), d["stage"].as_str()) {
            ("stage_enter", Some(stage @ ("gates" | "red_proof"))) => {
                open_gate = Some((e.at, stage.to_owned()))
            }
            ("stage_exit", Some("gates" | "red_proof")) => {
                if let Some((from, stage)) = open_gate.take() {
                    let name = if stage == "gates" {
                        "quality gates"
                    } else {
                        "red proof"
                    };
                    gates
                        .spans
                        .push(span(from, e.at, &format!("g-{stage}"), name));
                }
            }
            _ => {}
        }
    }
    if let Some((from, name)) = state {
        states.spans.push(span(
            from,
            end,
            &format!("st-{name}"),
            story::stage_name(&name),
        ));
    }
    for (role, from) in open_role {
        roles.entry(role.clone()).or_default().push(span(
            from,
            end,
            &format!("r-{role} open"),
            &format!("{role}: at work"),
        ));
    }
    if let Some((from, stage)) = open_gate {
        gates
            .spans
            .push(span(from, end, &format!("g-{stage} open"), "running"));
    }
    let mut out = vec![states];
    let mut names: Vec<String> = roles.keys().cloned().collect();
    names.sort_by_key(|r| (lane_order(r), r.clone()));
    for r in names {
        let spans = roles.remove(&r).unwrap_or_default();
        out.push(Lane {
            name: story::cap(&r),
            spans,
        });
    }
    out.push(gates);
    out
}

fn agent_event(kind: &str) -> bool {
    matches!(
        kind,
        "stage_enter"
            | "stage_exit"
            | "iteration_start"
            | "tool_start"
            | "tool_complete"
            | "thinking"
            | "llm_usage"
            | "result"
    )
}

fn span(from: i64, to: i64, class: &str, what: &str) -> Span {
    Span {
        from,
        to,
        class: class.to_owned(),
        title: format!("{what}: {}", charts::duration(to - from)),
    }
}

/// The gates (rows) of each gate run (columns), coloured by outcome; `None` before any ran.
pub fn gates_grid(events: &[Event]) -> Option<String> {
    let mut runs: Vec<String> = Vec::new();
    let mut gates: Vec<String> = Vec::new();
    let mut cells = Vec::new();
    for e in events.iter().filter(|e| e.kind == "gate") {
        let d = &e.data;
        let run = d["run"].to_string();
        let gate = d["gate"].as_str().unwrap_or("?").to_owned();
        let col = runs.iter().position(|r| *r == run).unwrap_or_else(|| {
            runs.push(run.clone());
            runs.len() - 1
        });
        let row = gates.iter().position(|g| *g == gate).unwrap_or_else(|| {
            gates.push(gate.clone());
            gates.len() - 1
        });
        let status = d["status"].as_str().unwrap_or("").to_ascii_lowercase();
        let class = match status.as_str() {
            "passed" => "s-passed",
            "skipped" => "s-skipped",
            _ => "s-failed",
        };
        cells.push(Cell {
            row,
            col,
            class: class.into(),
            title: format!(
                "{gate}, run {}: {}",
                col + 1,
                d["result"].as_str().unwrap_or(&status)
            ),
        });
    }
    if cells.is_empty() {
        return None;
    }
    let cols: Vec<String> = (1..=runs.len()).map(|n| format!("#{n}")).collect();
    Some(charts::grid("gates-grid", &gates, &cols, &cells))
}

fn spend(roles: &BTreeMap<String, Spend>) -> String {
    let by_cost = roles.values().any(|s| s.cost_usd > 0.0);
    let mut items: Vec<(String, f64, String, String)> = roles
        .iter()
        .map(|(role, s)| {
            let value = if by_cost {
                s.cost_usd
            } else {
                s.tokens() as f64
            };
            let text = format!(
                "${:.2} · {} tokens · {} call(s)",
                s.cost_usd,
                s.tokens(),
                s.calls
            );
            (story::cap(role), value, text, format!("r-{role}"))
        })
        .collect();
    items.sort_by_key(|i| lane_order(&i.0));
    charts::bars("spend", 720.0, &items)
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
            "<tr data-source=\"{}\"><td>{} ago</td><td>{}</td><td><code>{}</code></td><td class=\"{class}\">{}</td><td>{}</td></tr>",
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

/// The timeline: sentences grouped by stage, the raw event under each; the newest group is
/// the current step while the ticket runs.
fn timeline(v: &TicketView) -> String {
    let after = v.events.last().map_or(0, |e| e.id);
    let running = !terminal(&v.row.state);
    let mut groups: Vec<(String, i64, Vec<String>)> = Vec::new();
    for e in &v.events {
        let Some(sentence) = story::tell(&e.kind, &e.data) else {
            continue;
        };
        if let Some(title) = &sentence.starts {
            groups.push((title.clone(), e.at, Vec::new()));
        } else if groups.is_empty() {
            groups.push(("Started".into(), e.at, Vec::new()));
        }
        let at = clock(e.at);
        let tone = tone_class(sentence.tone);
        let item = format!(
            "<li class=\"{tone}\" data-id=\"{}\" data-kind=\"{}\"><time>{at}</time> <details><summary>{}</summary><pre>{}</pre></details></li>",
            e.id,
            esc(&e.kind),
            esc(&sentence.text),
            esc(&serde_json::to_string_pretty(&e.data).unwrap_or_default())
        );
        if let Some(g) = groups.last_mut() {
            g.2.push(item);
        }
    }
    let mut s = format!(
        "<h2>Timeline</h2><div id=\"timeline\" data-key=\"{}\" data-after=\"{after}\">",
        v.row.key
    );
    let n = groups.len();
    for (i, (title, at, items)) in groups.into_iter().enumerate() {
        let current = if running && i + 1 == n {
            " current"
        } else {
            ""
        };
        s.push_str(&format!(
            "<section class=\"stage{current}\"><h3>{} <time class=\"muted\">{}</time></h3><ol>{}</ol></section>",
            esc(&title),
            clock(at),
            items.join("")
        ));
    }
    s.push_str("</div>");
    s
}

pub fn tone_class(t: Tone) -> &'static str {
    match t {
        Tone::Step => "t-step",
        Tone::Good => "t-good",
        Tone::Bad => "t-bad",
        Tone::Quiet => "t-quiet",
    }
}

fn clock(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%H:%M:%S").to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(id: i64, at: i64, kind: &str, data: serde_json::Value) -> Event {
        Event {
            id,
            ticket: TicketKey(1),
            at,
            kind: kind.into(),
            data,
        }
    }

    #[test]
    fn lanes_follow_states_roles_and_gates_and_the_grid_each_run() {
        let events = vec![
            ev(1, 0, "state", json!({"to": "Preparing"})),
            ev(
                2,
                100,
                "stage_enter",
                json!({"role": "architect", "stage": "claim"}),
            ),
            ev(
                3,
                900,
                "result",
                json!({"role": "architect", "stop": "done"}),
            ),
            ev(4, 1000, "state", json!({"to": "InProgress"})),
            ev(
                5,
                1100,
                "stage_enter",
                json!({"role": "builder", "stage": "claim"}),
            ),
            ev(
                6,
                1200,
                "stage_enter",
                json!({"role": "breaker", "stage": "claim"}),
            ),
            ev(
                7,
                1800,
                "result",
                json!({"role": "breaker", "stop": "done"}),
            ),
            ev(8, 2000, "stage_enter", json!({"stage": "gates", "run": 1})),
            ev(
                9,
                2100,
                "gate",
                json!({"gate": "test", "status": "failed", "run": 1, "result": "1 failed"}),
            ),
            ev(
                10,
                2200,
                "gate",
                json!({"gate": "lint", "status": "passed", "run": 1}),
            ),
            ev(11, 2300, "stage_exit", json!({"stage": "gates", "run": 1})),
            ev(
                12,
                2400,
                "gate",
                json!({"gate": "test", "status": "passed", "run": 2}),
            ),
        ];
        let lanes = lanes(&events, 3000);
        let names: Vec<&str> = lanes.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["State", "Architect", "Breaker", "Builder", "Gates"]);
        assert_eq!(lanes[0].spans.len(), 2);
        assert_eq!((lanes[1].spans[0].from, lanes[1].spans[0].to), (100, 900));
        // The Builder is still at work: its span runs to the end, marked open.
        assert_eq!(lanes[3].spans[0].to, 3000);
        assert!(lanes[3].spans[0].class.ends_with("open"));
        assert_eq!((lanes[4].spans[0].from, lanes[4].spans[0].to), (2000, 2300));
        let grid = gates_grid(&events).unwrap();
        assert_eq!(grid.matches("<rect class=\"cell s-failed\"").count(), 1);
        assert_eq!(grid.matches("<rect class=\"cell s-passed\"").count(), 2);
        assert!(grid.contains(">#2<"));
    }
}

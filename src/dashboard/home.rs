//! The home page's pictures: tickets by state over the last days, the time from label to pull
//! request and the cost per ticket, and the resolve rate of the newest `vibeloop eval` run kept
//! under the data directory (`<data dir>/eval/<run>/results.jsonl`).

use std::path::Path;

use super::Dashboard;
use super::api::TicketRow;
use super::charts;
use super::html::esc;
use crate::eval::{results, stats};
use crate::ticket::TaskState;

const DAYS: i64 = 14;
const DAY_MS: i64 = 86_400_000;

/// Every picture of the home page, for `rows` (all tickets, newest first).
pub async fn pictures(d: &Dashboard, rows: &[TicketRow]) -> String {
    let mut s = String::from("<div class=\"cards\">");
    s.push_str(&format!(
        "<section class=\"card\"><h2>Tickets by state, last {DAYS} days</h2>{}</section>",
        by_day(rows, super::now() * 1000)
    ));
    let to_pr = label_to_pr(d, rows).await;
    let costs: Vec<f64> = rows.iter().map(|r| r.spent.cost_usd).collect();
    s.push_str(&format!(
        "<section class=\"card\" id=\"figures\"><h2>Figures</h2><dl>\
         <dt>Median label → pull request</dt><dd id=\"median-to-pr\">{}</dd>\
         <dt>Median cost per ticket</dt><dd id=\"median-cost\">{}</dd></dl>{}</section>",
        stats::median(&to_pr).map_or("—".into(), |ms| charts::duration(ms as i64)),
        stats::median(&costs).map_or("—".into(), |c| format!("${c:.2}")),
        cost_bars(rows)
    ));
    s.push_str(&eval_card(&d.data_dir.join("eval")));
    s.push_str("</div>");
    s
}

/// Columns per day (tickets labelled that day), stacked by their state now.
pub fn by_day(rows: &[TicketRow], now_ms: i64) -> String {
    let today = now_ms.div_euclid(DAY_MS);
    let cols: Vec<(String, Vec<(String, u64)>)> = (0..DAYS)
        .rev()
        .map(|back| {
            let day = today - back;
            let label = chrono::DateTime::from_timestamp_millis(day * DAY_MS)
                .map(|t| t.format("%d").to_string())
                .unwrap_or_default();
            let parts = TaskState::ALL
                .iter()
                .map(|st| {
                    let n = rows
                        .iter()
                        .filter(|r| {
                            r.created_at.div_euclid(DAY_MS) == day && r.state == st.to_string()
                        })
                        .count() as u64;
                    (format!("st-{st}"), n)
                })
                .collect();
            (label, parts)
        })
        .collect();
    let legend: Vec<(String, String)> = TaskState::ALL
        .iter()
        .filter(|st| rows.iter().any(|r| r.state == st.to_string()))
        .map(|st| (format!("st-{st}"), st.to_string()))
        .collect();
    charts::columns("by-day", 400.0, &cols, &legend)
}

/// Milliseconds from the label to the pull request, for the newest 50 tickets that have one.
async fn label_to_pr(d: &Dashboard, rows: &[TicketRow]) -> Vec<f64> {
    let mut out = Vec::new();
    for r in rows.iter().filter(|r| r.pr.is_some()).take(50) {
        let Ok(events) = d.store.events(r.key).await else {
            continue;
        };
        let opened = events.iter().find(|(_, kind, data)| {
            kind == "checkpoint" && data["node"] == "open_pr" && data["next"] != "open_pr"
        });
        if let Some((at, _, _)) = opened {
            out.push((at - r.created_at).max(0) as f64);
        }
    }
    out
}

/// The newest 10 tickets' cost.
fn cost_bars(rows: &[TicketRow]) -> String {
    let items: Vec<(String, f64, String, String)> = rows
        .iter()
        .take(10)
        .map(|r| {
            (
                format!("{} {}", r.repo.rsplit('/').next().unwrap_or(""), r.id),
                r.spent.cost_usd,
                format!("${:.2}", r.spent.cost_usd),
                format!("st-{}", r.state),
            )
        })
        .collect();
    if items.is_empty() {
        return String::new();
    }
    charts::bars("cost-per-ticket", 400.0, &items)
}

/// The newest eval run under `dir`: its resolve rate with a 95 % interval.
fn eval_card(dir: &Path) -> String {
    let newest = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let file = e.path().join(results::FILE);
            let at = file.metadata().and_then(|m| m.modified()).ok()?;
            Some((at, e.path()))
        })
        .max_by_key(|(at, _)| *at);
    let Some((_, run)) = newest else {
        return "<section class=\"card\" id=\"eval\"><h2>Evaluation</h2><p class=\"muted\">No <code>vibeloop eval</code> run yet: run one with <code>--out &lt;data dir&gt;/eval/&lt;name&gt;</code> and its resolve rate shows here.</p></section>".into();
    };
    let all = results::read(&run).unwrap_or_default();
    let n = all.len() as u64;
    let resolved = all.iter().filter(|r| r.resolved()).count() as u64;
    let (lo, hi) = stats::wilson(resolved, n, 1.96);
    let rate = if n == 0 {
        0.0
    } else {
        resolved as f64 / n as f64
    };
    let name = run
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let bar = charts::bars(
        "eval-rate",
        400.0,
        &[
            (
                "resolved".into(),
                rate,
                format!("{:.0} %", rate * 100.0),
                "s-passed".into(),
            ),
            (
                "not resolved".into(),
                1.0 - rate,
                format!("{:.0} %", (1.0 - rate) * 100.0),
                "s-failed".into(),
            ),
        ],
    );
    format!(
        "<section class=\"card\" id=\"eval\"><h2>Evaluation: {}</h2><p><strong id=\"resolve-rate\">{resolved} of {n} resolved ({:.0} %)</strong>, 95 % interval {:.0}–{:.0} %</p>{bar}</section>",
        esc(&name),
        rate * 100.0,
        lo * 100.0,
        hi * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TicketKey;
    use crate::llm::budget::Spend;

    fn row(key: i64, state: &str, created_at: i64) -> TicketRow {
        TicketRow {
            key: TicketKey(key),
            id: format!("T-{key}"),
            repo: "acme/widgets".into(),
            issue: key as u64,
            title: "t".into(),
            state: state.into(),
            detail: None,
            pr: None,
            created_at,
            updated_at: created_at,
            spent: Spend::default(),
        }
    }

    #[test]
    fn days_stack_tickets_by_state() {
        let now = 100 * DAY_MS + 50_000;
        let rows = vec![
            row(1, "Completed", now - 10),
            row(2, "Completed", now - DAY_MS),
            row(3, "Failed", now - DAY_MS),
            row(4, "Completed", now - 30 * DAY_MS),
        ];
        let svg = by_day(&rows, now);
        assert_eq!(
            svg.matches("<rect class=\"col st-Completed\" x").count(),
            2 + 1,
            "{svg}"
        );
        assert_eq!(
            svg.matches("<rect class=\"col st-Failed\" x").count(),
            1 + 1,
            "{svg}"
        );
        assert_eq!(svg.matches("text-anchor=\"middle\"").count(), DAYS as usize);
    }

    #[test]
    fn the_newest_eval_run_gives_the_rate() {
        let dir = tempfile::tempdir().unwrap();
        assert!(eval_card(dir.path()).contains("No <code>vibeloop eval</code> run yet"));
        let run = dir.path().join("gpt-a");
        std::fs::create_dir_all(&run).unwrap();
        let mut r = results::TaskResult::error("a", "", 1.0);
        r.outcome = results::Outcome::Resolved;
        results::append(&run, &r).unwrap();
        results::append(&run, &results::TaskResult::error("b", "x", 1.0)).unwrap();
        let card = eval_card(dir.path());
        assert!(card.contains("1 of 2 resolved (50 %)"), "{card}");
    }
}

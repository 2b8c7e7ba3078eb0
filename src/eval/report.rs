//! What a run's results look like to people: [`summary`], the line the CLI prints after a run,
//! and [`html`], a self-contained page (`report.html`) — the resolve rate with its 95 % Wilson
//! interval, the outcomes and the cost per task as inline SVG bar charts, and a table of the
//! tasks linking to each one's diff and timeline. The page loads nothing and runs nothing (no
//! script; a Content-Security-Policy that allows only its inline style), every string from the
//! results is escaped, and a link is drawn only to a relative path inside the output directory.
//! The number formats (`$4.20`, `1.2 M`, `3.1 min`) are shared with `compare`.

use std::fmt::Write as _;

use super::results::{Outcome, TaskResult};
use super::stats::{Z95, median, wilson};

/// The CLI's line after a run: "12 tasks: 7 resolved (58 %, 95 % CI 32–81 %), 3 tests fail,
/// 1 HumanNeeded, 0 Blocked, 1 error · $4.20 · 1.2 M tokens · median 3.1 min per task".
pub fn summary(results: &[TaskResult]) -> String {
    let n = results.len();
    let mut out = format!("{n} task{}", if n == 1 { "" } else { "s" });
    if n == 0 {
        return out;
    }
    let _ = write!(
        out,
        ": {} resolved {}",
        count(results, Outcome::Resolved),
        rate_text(results)
    );
    for o in Outcome::ALL.into_iter().filter(|o| *o != Outcome::Resolved) {
        let _ = write!(out, ", {} {}", count(results, o), o.as_str());
    }
    let usd: f64 = results.iter().map(TaskResult::usd).sum();
    let tokens: u64 = results.iter().map(TaskResult::tokens).sum();
    let _ = write!(out, " · {} · {} tokens", usd_text(usd), tokens_text(tokens));
    if let Some(m) = median(&seconds(results)) {
        let _ = write!(out, " · median {} per task", duration_text(m));
    }
    out
}

/// The page for `results` under the heading `title`: one HTML document, nothing to fetch.
pub fn html(title: &str, results: &[TaskResult]) -> String {
    let mut tasks: Vec<&TaskResult> = results.iter().collect();
    tasks.sort_by(|a, b| a.instance_id.cmp(&b.instance_id));
    let title = escape(title);
    let mut body = format!("<h1>{title}</h1>\n");
    if results.is_empty() {
        body.push_str("<p id=\"rate\">No tasks have run yet.</p>\n");
    } else {
        let _ = writeln!(
            body,
            "<p id=\"rate\">{} of {} resolved {}</p>",
            count(results, Outcome::Resolved),
            results.len(),
            rate_text(results)
        );
    }
    let usd: f64 = results.iter().map(TaskResult::usd).sum();
    let tokens: u64 = results.iter().map(TaskResult::tokens).sum();
    let calls: u64 = results.iter().map(TaskResult::calls).sum();
    let mut totals = format!(
        "{} · {} tokens · {calls} model calls",
        usd_text(usd),
        tokens_text(tokens)
    );
    if let Some(m) = median(&seconds(results)) {
        let _ = write!(totals, " · median {} per task", duration_text(m));
    }
    let _ = writeln!(body, "<p id=\"totals\">{}</p>", escape(&totals));
    body.push_str("<h2>Outcomes</h2>\n");
    body.push_str(&outcome_chart(results));
    body.push_str("<h2>Cost per task</h2>\n");
    body.push_str(&cost_chart(&tasks));
    body.push_str("<h2>Tasks</h2>\n");
    body.push_str(&table(&tasks));
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <title>{title}</title>\n<style>{STYLE}</style></head>\n<body>\n{body}</body></html>\n"
    )
}

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:72rem;padding:1rem;color:#222}\
h1{font-size:1.4rem;overflow-wrap:anywhere}h2{font-size:1.1rem;margin-top:1.5rem}\
#rate{font-size:1.15rem;font-weight:600}.muted{color:#666}\
svg{display:block;width:100%;max-width:40rem;height:auto}svg text{font:12px system-ui,sans-serif;fill:#222}#cost text{font-size:18px}\
.scroll{overflow-x:auto}table{border-collapse:collapse;font-size:.9rem}\
td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}\
td.num,th.num{text-align:right;white-space:nowrap}td.id{overflow-wrap:anywhere;min-width:8rem}\
td.detail{min-width:12rem;max-width:28rem;overflow-wrap:anywhere}\
#cost .bar{fill:#4a6fa5}.outcome-resolved{fill:#2e8540;color:#2e8540}\
.outcome-tests_fail{fill:#c0392b;color:#c0392b}.outcome-human_needed{fill:#d68910;color:#b9770e}\
.outcome-blocked{fill:#7d3c98;color:#7d3c98}.outcome-error{fill:#555;color:#555}";

pub use crate::html::escape;

/// `path` as a link's target, percent-encoded, when it is a plain relative path (no scheme, not
/// absolute, no `..`, no backslash or control character); `None` otherwise.
fn href(path: &str) -> Option<String> {
    let refused = path.is_empty()
        || path.starts_with('/')
        || path.contains(':')
        || path.contains("..")
        || path.contains('\\')
        || path.chars().any(char::is_control);
    if refused {
        return None;
    }
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    Some(out)
}

/// An outcome's name in CSS classes: its `results.jsonl` spelling (`tests_fail`).
fn snake(o: Outcome) -> &'static str {
    match o {
        Outcome::Resolved => "resolved",
        Outcome::TestsFail => "tests_fail",
        Outcome::HumanNeeded => "human_needed",
        Outcome::Blocked => "blocked",
        Outcome::Error => "error",
    }
}

fn count(results: &[TaskResult], o: Outcome) -> usize {
    results.iter().filter(|r| r.outcome == o).count()
}

fn seconds(results: &[TaskResult]) -> Vec<f64> {
    results.iter().map(|r| r.seconds).collect()
}

/// The resolve rate and its 95 % Wilson interval: "(58 %, 95 % CI 32–81 %)".
fn rate_text(results: &[TaskResult]) -> String {
    let n = results.len();
    let k = count(results, Outcome::Resolved);
    let (lo, hi) = wilson(k as u64, n as u64, Z95);
    format!(
        "({} %, 95 % CI {}–{} %)",
        percent(k as f64 / n.max(1) as f64),
        percent(lo),
        percent(hi)
    )
}

/// A proportion as whole percent: `0.583` → `58`.
pub fn percent(x: f64) -> i64 {
    (x * 100.0).round() as i64
}

/// Dollars with cents: `$4.20`, `−$0.30` (a true minus sign).
pub fn usd_text(x: f64) -> String {
    let s = format!("${:.2}", x.abs());
    if x < 0.0 && s != "$0.00" {
        format!("−{s}")
    } else {
        s
    }
}

/// A token count people read at a glance: `840`, `12.3 k`, `240 k`, `1.2 M`, `350 M`.
pub fn tokens_text(n: u64) -> String {
    let x = n as f64;
    match n {
        0..1_000 => n.to_string(),
        1_000..100_000 => format!("{:.1} k", x / 1e3),
        100_000..999_500 => format!("{:.0} k", x / 1e3),
        999_500..99_950_000 => format!("{:.1} M", x / 1e6),
        _ => format!("{:.0} M", x / 1e6),
    }
}

/// A duration: `45 s`, `3.1 min`, `1.2 h`.
pub fn duration_text(seconds: f64) -> String {
    if seconds < 59.5 {
        format!("{:.0} s", seconds.max(0.0))
    } else if seconds < 3570.0 {
        format!("{:.1} min", seconds / 60.0)
    } else {
        format!("{:.1} h", seconds / 3600.0)
    }
}

/// One horizontal bar per outcome, in [`Outcome::ALL`] order, its count beside it.
fn outcome_chart(results: &[TaskResult]) -> String {
    const ROW: f64 = 28.0;
    const LEFT: f64 = 104.0;
    const WIDTH: f64 = 180.0;
    let counts: Vec<(Outcome, usize)> = Outcome::ALL
        .iter()
        .map(|o| (*o, count(results, *o)))
        .collect();
    let max = counts.iter().map(|(_, c)| *c).max().unwrap_or(0).max(1) as f64;
    let height = ROW * counts.len() as f64;
    let mut svg = format!(
        "<svg id=\"outcomes\" viewBox=\"0 0 320 {height}\" role=\"img\" aria-label=\"tasks by outcome\">\n"
    );
    for (i, (o, c)) in counts.iter().enumerate() {
        let y = ROW * i as f64;
        let w = WIDTH * *c as f64 / max;
        let name = o.as_str();
        let _ = writeln!(
            svg,
            "<text x=\"0\" y=\"{:.1}\">{name}</text>\
             <rect class=\"bar outcome-{}\" x=\"{LEFT}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"18\"><title>{name}: {c}</title></rect>\
             <text class=\"count\" x=\"{:.1}\" y=\"{:.1}\">{c}</text>",
            y + 14.0,
            snake(*o),
            y + 2.0,
            LEFT + w + 6.0,
            y + 14.0,
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// One vertical bar per task (sorted by instance id), its height the task's dollars.
fn cost_chart(tasks: &[&TaskResult]) -> String {
    const WIDTH: f64 = 600.0;
    const LEFT: f64 = 56.0;
    const TOP: f64 = 8.0;
    const PLOT: f64 = 140.0;
    let max = tasks.iter().map(|r| r.usd()).fold(0.0, f64::max);
    let mut svg = format!(
        "<svg id=\"cost\" viewBox=\"0 0 {WIDTH} {}\" role=\"img\" aria-label=\"dollars per task\">\n",
        TOP + PLOT + 4.0
    );
    if tasks.is_empty() {
        svg.push_str("<text x=\"0\" y=\"20\">no tasks</text>\n</svg>\n");
        return svg;
    }
    let _ = writeln!(
        svg,
        "<text x=\"0\" y=\"{:.1}\">{}</text><text x=\"0\" y=\"{:.1}\">$0</text>\
         <line x1=\"{LEFT}\" y1=\"{:.1}\" x2=\"{WIDTH}\" y2=\"{:.1}\" stroke=\"#999\"/>",
        TOP + 10.0,
        usd_text(max),
        TOP + PLOT,
        TOP + PLOT,
        TOP + PLOT,
    );
    let step = (WIDTH - LEFT) / tasks.len() as f64;
    for (i, r) in tasks.iter().enumerate() {
        let usd = r.usd();
        let h = if max > 0.0 { PLOT * usd / max } else { 0.0 };
        let _ = writeln!(
            svg,
            "<rect class=\"bar\" x=\"{:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{h:.2}\"><title>{}: {}</title></rect>",
            LEFT + step * i as f64 + step * 0.1,
            TOP + PLOT - h,
            step * 0.8,
            escape(&r.instance_id),
            usd_text(usd),
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// `detail` on one line, at most `max` characters (an ellipsis when cut).
fn shorten(detail: &str, max: usize) -> String {
    let line = detail.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let mut s: String = line.chars().take(max - 1).collect();
    s.push('…');
    s
}

/// The tasks' table: one row per task.
fn table(tasks: &[&TaskResult]) -> String {
    let mut t = String::from(
        "<div class=\"scroll\"><table id=\"tasks\">\n<thead><tr><th>Task</th><th>Outcome</th><th>Detail</th>\
         <th class=\"num\">Tokens</th><th class=\"num\">Cost</th><th class=\"num\">Calls</th>\
         <th class=\"num\">Time</th><th class=\"num\">Attempts</th><th class=\"num\">Diff</th><th>Files</th></tr></thead>\n<tbody>\n",
    );
    for r in tasks {
        let diff = match r.diff {
            Some(d) => format!(
                "{} file{}, +{} −{}",
                d.files,
                if d.files == 1 { "" } else { "s" },
                d.added,
                d.removed
            ),
            None => "—".to_owned(),
        };
        let links: Vec<String> = [("diff", &r.diff_path), ("timeline", &r.timeline_path)]
            .into_iter()
            .filter_map(|(name, p)| {
                let h = href(p.as_deref()?)?;
                Some(format!("<a href=\"{}\">{name}</a>", escape(&h)))
            })
            .collect();
        let _ = writeln!(
            t,
            "<tr><td class=\"id\">{}</td><td class=\"outcome-{}\">{}</td><td class=\"detail\" title=\"{}\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            escape(&r.instance_id),
            snake(r.outcome),
            r.outcome.as_str(),
            escape(&shorten(&r.detail, 1000)),
            escape(&shorten(&r.detail, 140)),
            tokens_text(r.tokens()),
            usd_text(r.usd()),
            r.calls(),
            duration_text(r.seconds),
            r.attempts,
            diff,
            links.join(" "),
        );
    }
    t.push_str("</tbody></table></div>\n");
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::results::{DiffSize, RoleSpend};

    fn task(id: &str, outcome: Outcome, usd: f64, tokens: u64, seconds: f64) -> TaskResult {
        let mut r = TaskResult::error(id, "", seconds);
        r.outcome = outcome;
        r.roles.insert(
            "builder".into(),
            RoleSpend {
                tokens,
                usd,
                calls: 3,
            },
        );
        r
    }

    /// Twelve tasks: 7 resolved, 3 tests fail, 1 HumanNeeded, 1 error.
    fn twelve() -> Vec<TaskResult> {
        let mut v = vec![];
        for i in 0..12 {
            let o = match i {
                0..7 => Outcome::Resolved,
                7..10 => Outcome::TestsFail,
                10 => Outcome::HumanNeeded,
                _ => Outcome::Error,
            };
            v.push(task(&format!("t-{i:02}"), o, 0.35, 100_000, 186.0));
        }
        v
    }

    #[test]
    fn the_summary_line_names_rate_interval_outcomes_cost_tokens_and_time() {
        assert_eq!(
            summary(&twelve()),
            "12 tasks: 7 resolved (58 %, 95 % CI 32–81 %), 3 tests fail, 1 HumanNeeded, \
             0 Blocked, 1 error · $4.20 · 1.2 M tokens · median 3.1 min per task"
        );
        assert_eq!(summary(&[]), "0 tasks");
        assert!(summary(&twelve()[..1]).starts_with("1 task: 1 resolved (100 %"));
    }

    #[test]
    fn number_formats() {
        assert_eq!(tokens_text(840), "840");
        assert_eq!(tokens_text(12_345), "12.3 k");
        assert_eq!(tokens_text(240_400), "240 k");
        assert_eq!(tokens_text(999_999), "1.0 M");
        assert_eq!(tokens_text(35_000_000), "35.0 M");
        assert_eq!(tokens_text(350_000_000), "350 M");
        assert_eq!(usd_text(4.2), "$4.20");
        assert_eq!(usd_text(-0.3), "−$0.30");
        assert_eq!(usd_text(-0.001), "$0.00");
        assert_eq!(duration_text(45.0), "45 s");
        assert_eq!(duration_text(186.0), "3.1 min");
        assert_eq!(duration_text(4320.0), "1.2 h");
    }

    #[test]
    fn outcome_classes_are_the_results_file_spelling() {
        for o in Outcome::ALL {
            assert_eq!(
                serde_json::to_string(&o).unwrap(),
                format!("\"{}\"", snake(o))
            );
        }
    }

    #[test]
    fn the_page_has_no_script_and_counts_its_bars() {
        let page = html("Eval: SWE-bench Lite", &twelve());
        assert!(!page.to_lowercase().contains("<script"));
        assert!(!page.contains("http://") && !page.contains("https://"));
        assert!(page.contains("<h1>Eval: SWE-bench Lite</h1>"));
        assert!(page.contains("<p id=\"rate\">7 of 12 resolved (58 %, 95 % CI 32–81 %)</p>"));
        assert_eq!(page.matches("class=\"bar outcome-").count(), 5);
        for o in Outcome::ALL {
            assert_eq!(
                page.matches(&format!("class=\"bar outcome-{}\"", snake(o)))
                    .count(),
                1
            );
        }
        assert_eq!(page.matches("<rect class=\"bar\"").count(), 12);
        assert_eq!(page.matches("<tr><td class=\"id\">").count(), 12);
        // The counts are written beside the bars.
        assert!(page.contains("<text class=\"count\" x=\"290.0\" y=\"14.0\">7</text>"));
        // Bars and rows go by instance id.
        let first = page.find("t-00").unwrap();
        assert!(page[first..].contains("t-11"));
    }

    #[test]
    fn text_from_the_results_is_escaped_in_the_page() {
        let hostile = "<img src=x onerror=alert(1)>";
        let mut r = task(hostile, Outcome::TestsFail, 0.1, 10, 5.0);
        r.detail = "\"'><script>alert(2)</script>".into();
        r.diff_path = Some("diffs/<b>.diff".into());
        let page = html("<i>title</i>", &[r]);
        assert!(!page.contains("<img"), "{page}");
        assert!(!page.contains("<script"));
        assert!(!page.contains("<i>") && !page.contains("<b>"));
        assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;"));
        assert!(page.contains("&lt;script&gt;alert(2)&lt;/script&gt;"));
        assert!(page.contains("<a href=\"diffs/%3Cb%3E.diff\">diff</a>"));
    }

    #[test]
    fn links_go_only_to_relative_paths() {
        let mut ok = task("ok", Outcome::Resolved, 0.1, 10, 5.0);
        ok.diff_path = Some("diffs/ok.diff".into());
        ok.timeline_path = Some("timelines/ok.jsonl".into());
        ok.diff = Some(DiffSize {
            files: 1,
            added: 4,
            removed: 2,
        });
        let mut bad = task("bad", Outcome::Error, 0.1, 10, 5.0);
        bad.diff_path = Some("javascript:alert(1)".into());
        bad.timeline_path = Some("../../etc/passwd".into());
        let page = html("t", &[ok, bad]);
        assert!(page.contains("<a href=\"diffs/ok.diff\">diff</a>"));
        assert!(page.contains("<a href=\"timelines/ok.jsonl\">timeline</a>"));
        assert!(page.contains("1 file, +4 −2"));
        assert!(!page.contains("javascript") && !page.contains(".."));
        assert_eq!(page.matches("<a href").count(), 2);
        for p in [
            "/etc/passwd",
            "//evil.example/x",
            "https://evil.example",
            " javascript:x",
            "a/../../b",
            "a\\b",
            "",
            "data:text/html,x",
        ] {
            assert_eq!(href(p), None, "{p}");
        }
        assert_eq!(href("diffs/a b.diff").as_deref(), Some("diffs/a%20b.diff"));
    }

    #[test]
    fn a_long_detail_is_shortened_to_one_line() {
        let mut r = task("x", Outcome::HumanNeeded, 0.0, 0, 1.0);
        r.detail = format!("first line\n{}", "y".repeat(500));
        let page = html("t", &[r]);
        let short = format!("first line {}…", "y".repeat(128));
        assert!(page.contains(&format!(">{short}</td>")), "{page}");
        // No money spent: the cost bars are flat, not NaN.
        assert!(!page.contains("NaN"));
        assert!(html("empty", &[]).contains("No tasks have run yet."));
    }
}

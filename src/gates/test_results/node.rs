//! JavaScript and TypeScript runners.
//!
//! Node's test runner: TAP (its reporter when the output is not a terminal: `ok 1 - adds`,
//! `not ok 2 - splits`, `# SKIP`/`# TODO`, suites as indented `# Subtest:` blocks, a failure's
//! `location: '/work/test/a.test.js:10:1'`, a file that could not load as a test named by its
//! path with the error printed as `# …` lines before it, the `# pass 3` counts) and the spec
//! reporter (`✔ adds (1ms)`, `✖ splits`, `﹣ later # SKIP`, `▶ suite`). Names are the suites'
//! and the test's titles joined by ` > `. Jest (`PASS`/`FAIL path` headers, `✓`/`✕`/`○` lines
//! under `--verbose`, `● Suite › case`, `● Test suite failed to run`, `Tests: 1 failed, 3
//! passed, 4 total`) and Vitest (`✓ path > suite > case`, `FAIL path > suite > case`, ` Tests
//! 1 failed | 3 passed (4)`).

use super::{Case, Outcome, TestCounts, TestRun, Unloaded, number};
use crate::sandbox::WORK_MOUNT;

/// A path as the runner printed it, relative to the worktree when it is inside it.
fn relative(path: &str) -> String {
    let path = path.strip_prefix("file://").unwrap_or(path);
    path.strip_prefix(WORK_MOUNT)
        .and_then(|p| p.strip_prefix('/'))
        .unwrap_or(path)
        .to_owned()
}

fn is_script(name: &str) -> bool {
    [".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx"]
        .iter()
        .any(|e| name.ends_with(e))
}

/// A line that says why a file could not load (`SyntaxError: …`, `Error: Cannot find module`).
fn telling(line: &str) -> bool {
    let first = line.split(':').next().unwrap_or_default();
    first.ends_with("Error") || first.contains("Error [") || line.contains("is not a function")
}

/// The lines the Node runners' readers read: TAP's and the spec reporter's results, suites,
/// counts and YAML fields, Jest's and Vitest's files, marks and counts, the errors that say why
/// a file could not load, and Jest's `describe` titles (short indented lines).
pub(super) fn keeps(line: &str) -> bool {
    let t = line.trim();
    let indent = line.len() - line.trim_start().len();
    const MARKS: &[char] = &[
        '✔', '✖', '﹣', '▶', 'ℹ', '✓', '√', '✕', '×', '○', '✎', '●', '↓',
    ];
    t == "TAP version 13"
        || t.starts_with(MARKS)
        || [
            "ok ",
            "not ok ",
            "# Subtest: ",
            "---",
            "...",
            "location: ",
            "error: ",
        ]
        .iter()
        .any(|p| t.starts_with(p))
        || ["PASS ", "FAIL ", "Tests:", "Tests "]
            .iter()
            .any(|p| t.starts_with(p))
        || t.strip_prefix("# ").is_some_and(|c| {
            telling(c)
                || c.split_whitespace()
                    .nth(1)
                    .is_some_and(|n| n.parse::<u64>().is_ok())
        })
        || telling(t)
        || (indent >= 2 && t.len() <= 200 && !t.starts_with("at "))
}

pub(super) fn node_test(lines: &[&str]) -> Option<TestRun> {
    let counts = node_counts(lines);
    let tap = lines.iter().any(|l| l.trim() == "TAP version 13");
    let run = if tap {
        tap_cases(lines)
    } else {
        spec_cases(lines)
    };
    run.found(counts)
}

/// `# tests 2` / `# pass 1` (TAP) or `ℹ pass 1` (spec).
fn node_counts(lines: &[&str]) -> Option<TestCounts> {
    let mut counts = TestCounts::default();
    let mut seen = false;
    for l in lines {
        let t = l.trim();
        let Some(rest) = t.strip_prefix("# ").or_else(|| t.strip_prefix("ℹ ")) else {
            continue;
        };
        let mut w = rest.split_whitespace();
        let (Some(what), Some(n), None) = (w.next(), number(w.next()), w.next()) else {
            continue;
        };
        seen |= what == "tests";
        counts.bump(what, n);
    }
    seen.then_some(counts)
}

/// One `# Subtest:` block still open.
struct Open {
    indent: usize,
    title: String,
    has_children: bool,
}

fn tap_cases(lines: &[&str]) -> TestRun {
    let mut run = TestRun::default();
    let mut stack: Vec<Open> = Vec::new();
    let mut comments: Vec<String> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let indent = l.len() - l.trim_start().len();
        let t = l.trim();
        if let Some(title) = t.strip_prefix("# Subtest: ") {
            if let Some(parent) = stack.last_mut() {
                parent.has_children = true;
            }
            stack.push(Open {
                indent,
                title: title.to_owned(),
                has_children: false,
            });
            continue;
        }
        if let Some(comment) = t.strip_prefix("# ") {
            comments.push(comment.to_owned());
            continue;
        }
        let (ok, rest) = match t.strip_prefix("not ok ") {
            Some(r) => (false, r),
            None => match t.strip_prefix("ok ") {
                Some(r) => (true, r),
                None => continue,
            },
        };
        let Some((_, title)) = rest.split_once(" - ") else {
            continue;
        };
        let (title, directive) = match title.split_once(" # ") {
            Some((t, d)) => (t, d.to_uppercase()),
            None => (title, String::new()),
        };
        let open = match stack.iter().rposition(|o| o.indent == indent) {
            Some(at) => stack.drain(at..).next(),
            None => None,
        };
        if open.as_ref().is_some_and(|o| o.has_children) {
            continue; // a suite: its tests were counted one by one
        }
        let location = yaml_field(&lines[i + 1..], "location");
        if !ok && stack.is_empty() && title.starts_with('/') && is_script(title) {
            // A whole file that failed before any of its tests ran.
            let why = comments.iter().filter(|c| telling(c)).cloned().collect();
            run.unloaded.push(Unloaded {
                unit: relative(title),
                why,
            });
            comments.clear();
            continue;
        }
        comments.clear();
        let mut name: Vec<&str> = stack.iter().map(|o| o.title.as_str()).collect();
        name.push(title);
        let outcome = if directive.starts_with("SKIP") || directive.starts_with("TODO") {
            Outcome::Skipped
        } else if ok {
            Outcome::Passed
        } else {
            Outcome::Failed
        };
        let unit = location.map(|l| relative(l.rsplitn(3, ':').last().unwrap_or(&l)));
        let why = match outcome {
            Outcome::Failed => yaml_field(&lines[i + 1..], "error").unwrap_or_default(),
            _ => directive.to_lowercase(),
        };
        run.cases
            .push(Case::new(&name.join(" > "), unit.as_deref(), outcome).because(&why));
    }
    run
}

/// A field of the YAML block (`  ---` … `  ...`) that follows a TAP test line.
fn yaml_field(after: &[&str], key: &str) -> Option<String> {
    let mut lines = after.iter().map(|l| l.trim());
    if lines.next() != Some("---") {
        return None;
    }
    let prefix = format!("{key}: ");
    lines
        .take_while(|l| *l != "...")
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.trim().trim_matches('\'').to_owned())
        .filter(|v| !v.is_empty() && v != "|-")
}

/// Node's spec reporter: `✔ adds (1ms)`, `✖ splits (2ms)`, `﹣ later (0.2ms) # SKIP`,
/// `▶ suite` over its indented tests; the `✖ failing tests:` recap at the end is not read.
fn spec_cases(lines: &[&str]) -> TestRun {
    let mut run = TestRun::default();
    let mut suites: Vec<(usize, String)> = Vec::new();
    for l in lines {
        let indent = l.len() - l.trim_start().len();
        let t = l.trim();
        if t.starts_with("✖ failing tests") {
            break;
        }
        if let Some(suite) = t.strip_prefix("▶ ") {
            suites.retain(|(at, _)| *at < indent);
            suites.push((indent, suite.trim().to_owned()));
            continue;
        }
        let (outcome, rest) = match t.chars().next() {
            Some('✔') => (Outcome::Passed, &t['✔'.len_utf8()..]),
            Some('✖') => (Outcome::Failed, &t['✖'.len_utf8()..]),
            Some('﹣') => (Outcome::Skipped, &t['﹣'.len_utf8()..]),
            _ => continue,
        };
        let rest = rest.trim();
        let directive = rest.rsplit_once(" # ").map(|(_, d)| d.to_uppercase());
        let title = rest
            .rsplit_once(" (")
            .map(|(t, _)| t)
            .unwrap_or(rest)
            .trim();
        let outcome = match directive.as_deref() {
            Some(d) if d.starts_with("SKIP") || d.starts_with("TODO") => Outcome::Skipped,
            _ => outcome,
        };
        // A suite's own line after its tests (`✖ math (1ms)`) repeats what they said.
        let closes = suites.iter().any(|(at, s)| *at == indent && s == title);
        suites.retain(|(at, _)| *at < indent);
        if closes {
            continue;
        }
        if outcome == Outcome::Failed
            && suites.is_empty()
            && title.starts_with('/')
            && is_script(title)
        {
            run.unloaded.push(Unloaded {
                unit: relative(title),
                why: lines
                    .iter()
                    .map(|l| l.trim())
                    .filter(|l| telling(l))
                    .map(str::to_owned)
                    .take(3)
                    .collect(),
            });
            continue;
        }
        let mut name: Vec<&str> = suites.iter().map(|(_, s)| s.as_str()).collect();
        name.push(title);
        run.cases.push(Case::new(&name.join(" > "), None, outcome));
    }
    run
}

/// Jest: `PASS`/`FAIL path` headers, `✓ name (2 ms)`/`✕ name`/`○ skipped name`/`✎ todo name`
/// under describe blocks (with `--verbose`), `● Suite › case` for each failure, and
/// `● Test suite failed to run` for a file that could not load.
pub(super) fn jest(lines: &[&str]) -> Option<TestRun> {
    let line = lines.iter().rev().find_map(|l| {
        let rest = l.trim().strip_prefix("Tests:")?;
        rest.contains(" total").then_some(rest)
    })?;
    let counts = TestCounts::from_parts(line.split(','));
    let mut run = TestRun::default();
    let mut named = std::collections::HashSet::new();
    let mut unit: Option<String> = None;
    let mut blocks: Vec<(usize, String)> = Vec::new();
    for l in lines {
        let indent = l.len() - l.trim_start().len();
        let t = l.trim();
        if let Some(path) = t.strip_prefix("PASS ").or_else(|| t.strip_prefix("FAIL ")) {
            unit = Some(relative(path.split_whitespace().next().unwrap_or(path)));
            blocks.clear();
            continue;
        }
        if t == "● Test suite failed to run"
            && let Some(u) = &unit
        {
            run.unloaded.push(Unloaded {
                unit: u.clone(),
                why: vec![],
            });
            continue;
        }
        let mark = t.chars().next();
        let outcome = match mark {
            Some('✓') | Some('√') => Outcome::Passed,
            Some('✕') | Some('×') => Outcome::Failed,
            Some('○') | Some('✎') => Outcome::Skipped,
            Some('●') => {
                let name = t['●'.len_utf8()..].trim().replace(" › ", " > ");
                if !named.contains(&name) && !name.starts_with("Test suite") {
                    named.insert(name.clone());
                    run.cases
                        .push(Case::new(&name, unit.as_deref(), Outcome::Failed));
                }
                continue;
            }
            _ => {
                if unit.is_some() && !t.is_empty() && indent >= 2 {
                    blocks.retain(|(at, _)| *at < indent);
                    blocks.push((indent, t.to_owned()));
                }
                continue;
            }
        };
        blocks.retain(|(at, _)| *at < indent);
        let mut rest = t[mark.map(char::len_utf8).unwrap_or(0)..].trim();
        for word in ["skipped ", "todo "] {
            rest = rest.strip_prefix(word).unwrap_or(rest);
        }
        let title = rest.rsplit_once(" (").map(|(t, _)| t).unwrap_or(rest);
        let mut name: Vec<&str> = blocks.iter().map(|(_, b)| b.as_str()).collect();
        name.push(title);
        let case = Case::new(&name.join(" > "), unit.as_deref(), outcome);
        named.insert(case.name.clone());
        run.cases.push(case);
    }
    run.count_cases();
    run.counts = counts;
    Some(run)
}

/// Vitest: `✓ path > suite > case 1ms`, `× …`, `↓ …` (skipped), `FAIL path > suite > case`,
/// and ` Tests  1 failed | 3 passed (4)`.
pub(super) fn vitest(lines: &[&str]) -> Option<TestRun> {
    let line = lines.iter().rev().find_map(|l| {
        let rest = l.trim().strip_prefix("Tests ")?;
        rest.trim_end().ends_with(')').then_some(rest)
    })?;
    let body = line.rsplit_once('(').map(|(b, _)| b).unwrap_or(line);
    let counts = TestCounts::from_parts(body.split('|'));
    if counts.total() == 0 {
        return None;
    }
    let mut run = TestRun::default();
    let mut at = std::collections::HashMap::new();
    for l in lines {
        let t = l.trim();
        let (outcome, rest) = if let Some(r) = t.strip_prefix("FAIL ") {
            (Outcome::Failed, r)
        } else {
            match t.chars().next() {
                Some('✓') => (Outcome::Passed, &t['✓'.len_utf8()..]),
                Some('×') => (Outcome::Failed, &t['×'.len_utf8()..]),
                Some('↓') => (Outcome::Skipped, &t['↓'.len_utf8()..]),
                _ => continue,
            }
        };
        let Some((file, name)) = rest.trim().split_once(" > ") else {
            continue;
        };
        // `✓ a.test.ts > math > adds 1ms`: the duration is not part of the name.
        let name = match name.rsplit_once(' ') {
            Some((n, ms)) if ms.ends_with("ms") && ms[..ms.len() - 2].parse::<f64>().is_ok() => n,
            _ => name,
        };
        let case = Case::new(name, Some(&relative(file.trim())), outcome);
        match at.get(&(case.name.clone(), case.unit.clone())) {
            Some(&i) if outcome == Outcome::Failed => run.cases[i] = case,
            Some(_) => {}
            None => {
                at.insert((case.name.clone(), case.unit.clone()), run.cases.len());
                run.cases.push(case);
            }
        }
    }
    run.count_cases();
    run.counts = counts;
    Some(run)
}

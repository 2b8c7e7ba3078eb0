//! pytest and unittest.
//!
//! pytest: the `-rA` short summary (`PASSED tests/t.py::test_a`, `FAILED … - reason`,
//! `ERROR …`, `XFAIL …`, `SKIPPED [2] tests/t.py:14: reason`), `-v` lines
//! (`tests/t.py::test_a PASSED [ 14%]`), the final counts (`2 failed, 3 passed in 0.1s`), and
//! a module that could not be collected (`ERROR tests/t.py` with the `E   ImportError: …` lines
//! of its `ERROR collecting` section). unittest: `-v` lines (`test_a (pkg.t.T.test_a) ... ok`,
//! a docstring's first line between), `FAIL:`/`ERROR:` blocks, `Ran 3 tests` and the verdict,
//! and a module that could not be imported (`unittest.loader._FailedTest`).

use std::collections::HashMap;

use super::{Case, Outcome, Skip, TestCounts, TestRun, Unloaded, number};

/// The words pytest prints for an outcome, and what they mean here.
fn pytest_outcome(word: &str) -> Option<Outcome> {
    Some(match word {
        "PASSED" | "XPASS" => Outcome::Passed,
        "FAILED" => Outcome::Failed,
        "ERROR" => Outcome::Error,
        "SKIPPED" | "XFAIL" => Outcome::Skipped,
        _ => return None,
    })
}

/// The lines pytest's and unittest's readers read: results, counts, the collection errors'
/// sections, unittest's names, verdicts and error blocks.
pub(super) fn keeps(line: &str) -> bool {
    let l = line.trim_end();
    let t = l.trim_start();
    let first = t.split(' ').next().unwrap_or_default();
    t.contains("::")
        || pytest_outcome(first).is_some()
        || is_counts(l)
        || t.starts_with("___")
        || t.starts_with("===")
        || t.starts_with("---")
        || l.starts_with("E ")
        || l.contains(" ... ")
        || unittest_outcome(t).is_some()
        || unittest_id(l).is_some()
        || ["FAIL: ", "ERROR: ", "Ran ", "OK", "FAILED"]
            .iter()
            .any(|p| t.starts_with(p))
        || telling_error(l)
}

pub(super) fn pytest(lines: &[&str]) -> Option<TestRun> {
    let counts = pytest_counts(lines);
    let mut run = TestRun::default();
    let mut at = HashMap::new();
    let sections = collection_errors(lines);
    for line in lines {
        let line = line.trim_end();
        if let Some(case) = verbose_line(line).or_else(|| summary_line(line)) {
            note(&mut run.cases, &mut at, case);
        } else if let Some(skip) = skipped_place(line) {
            run.skips.push(skip);
        } else if let Some(rest) = line.strip_prefix("ERROR ")
            && !rest.contains("::")
        {
            // A module that could not be collected: none of its tests ran.
            let (unit, said) = rest.split_once(" - ").unwrap_or((rest, ""));
            let unit = unit.trim();
            let mut why = sections
                .iter()
                .find(|(u, _)| u == unit)
                .map(|(_, w)| w.clone())
                .unwrap_or_default();
            if why.is_empty() && !said.is_empty() {
                why.push(said.trim().to_owned());
            }
            run.unloaded.push(Unloaded {
                unit: unit.to_owned(),
                why,
            });
        }
    }
    run.found(counts)
}

/// `== 2 passed, 1 failed in 0.1s ==` (or without the rules, under `-q`).
fn pytest_counts(lines: &[&str]) -> Option<TestCounts> {
    let line = lines.iter().rev().find(|l| is_counts(l))?;
    let body = line.trim().trim_matches('=').trim();
    let body = body.rsplit_once(" in ").map(|(b, _)| b).unwrap_or(body);
    let counts = TestCounts::from_parts(body.split(','));
    (counts.total() > 0).then_some(counts)
}

/// Whether `l` is pytest's closing counts line.
fn is_counts(l: &str) -> bool {
    let l = l.trim().trim_matches('=').trim();
    (l.contains(" passed")
        || l.contains(" failed")
        || l.contains(" error")
        || l.contains(" skipped")
        || l.contains(" deselected"))
        && l.contains(" in ")
        && l.starts_with(|c: char| c.is_ascii_digit())
}

/// A case seen twice (`-v` and `-rA` together) keeps its last word; `at` finds it by name.
fn note(cases: &mut Vec<Case>, at: &mut HashMap<String, usize>, case: Case) {
    match at.get(&case.name) {
        Some(&i) => cases[i] = case,
        None => {
            at.insert(case.name.clone(), cases.len());
            cases.push(case);
        }
    }
}

fn unit_of(id: &str) -> Option<&str> {
    id.split_once("::").map(|(file, _)| file)
}

/// `tests/t.py::test_a PASSED [ 14%]`, `… SKIPPED (later) [ 42%]`.
fn verbose_line(line: &str) -> Option<Case> {
    let (id, rest) = node_id(line, |after| {
        let word = after.trim_start().split(' ').next().unwrap_or_default();
        after.starts_with(' ') && pytest_outcome(word).is_some()
    })?;
    let rest = rest.trim_start();
    let (word, after) = rest.split_once(' ').unwrap_or((rest, ""));
    let outcome = pytest_outcome(word)?;
    let why = after
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.split_once(')'))
        .map(|(w, _)| w)
        .unwrap_or("");
    Some(Case::new(id, unit_of(id), outcome).because(why))
}

/// `PASSED tests/t.py::test_a`, `FAILED tests/t.py::test_b - assert 2 == 3`.
fn summary_line(line: &str) -> Option<Case> {
    let (word, rest) = line.split_once(' ')?;
    let outcome = pytest_outcome(word)?;
    let (id, after) = node_id(rest, |after| after.is_empty() || after.starts_with(" - "))?;
    let why = after.strip_prefix(" - ").unwrap_or("");
    Some(Case::new(id, unit_of(id), outcome).because(why))
}

/// The node id `line` starts with, and what follows it: `tests/t.py::test_a`, up to the first
/// space; a parametrized `tests/t.py::test_w[a b]`, whose id may hold spaces, ` - ` and `]`
/// (`test_w[x - y]`, `test_w[]]`), up to the first `]` that `ends` accepts what follows of.
fn node_id(line: &str, ends: impl Fn(&str) -> bool) -> Option<(&str, &str)> {
    let plain_end = line.find(' ').unwrap_or(line.len());
    let end = match line.find('[') {
        Some(open) if open < plain_end => {
            let closes = line.match_indices(']').map(|(i, _)| i + 1);
            closes.filter(|&i| i > open).find(|&i| ends(&line[i..]))?
        }
        _ => plain_end,
    };
    let (id, after) = line.split_at(end);
    (id.contains("::") && ends(after)).then_some((id, after))
}

/// `SKIPPED [2] tests/test_calc.py:14: later`.
fn skipped_place(line: &str) -> Option<Skip> {
    let rest = line.strip_prefix("SKIPPED [")?;
    let (_, rest) = rest.split_once("] ")?;
    let (place, why) = rest.split_once(": ").unwrap_or((rest, ""));
    Some(Skip {
        place: place.trim().to_owned(),
        why: why.trim().to_owned(),
    })
}

/// Each `ERROR collecting <unit>` section's `E   …` lines (or its last line).
fn collection_errors(lines: &[&str]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut current: Option<(String, Vec<String>, String)> = None;
    let header = |l: &str| l.starts_with("___") || l.starts_with("===");
    for line in lines {
        let t = line.trim();
        if header(t) {
            if let Some((unit, mut why, last)) = current.take() {
                if why.is_empty() && !last.is_empty() {
                    why.push(last);
                }
                out.push((unit, why));
            }
            if let Some(rest) = t.trim_matches('_').trim().strip_prefix("ERROR collecting ") {
                current = Some((rest.trim().to_owned(), Vec::new(), String::new()));
            }
            continue;
        }
        if let Some((_, why, last)) = current.as_mut() {
            if let Some(e) = line.strip_prefix("E ") {
                why.push(e.trim().to_owned());
            } else if !t.is_empty() {
                *last = t.to_owned();
            }
        }
    }
    out
}

/// How unittest's `-v` line ends: ` ... ok`, ` ... skipped 'why'`.
fn unittest_outcome(result: &str) -> Option<(Outcome, &str)> {
    let result = result.trim();
    Some(match result {
        "ok" => (Outcome::Passed, ""),
        "FAIL" => (Outcome::Failed, ""),
        "ERROR" => (Outcome::Error, ""),
        "expected failure" => (Outcome::Skipped, "expected failure"),
        // Since Python 3.11 an unexpected success fails the run.
        "unexpected success" => (Outcome::Failed, "unexpected success"),
        r if r.starts_with("skipped") => (
            Outcome::Skipped,
            r.trim_start_matches("skipped").trim().trim_matches('\''),
        ),
        _ => return None,
    })
}

/// `test_a (pkg.t.T.test_a)` (3.11+) or `test_a (pkg.t.T)`: the test's dotted id.
fn unittest_id(text: &str) -> Option<String> {
    let (name, rest) = text.trim().split_once(" (")?;
    let dotted = rest.strip_suffix(')')?;
    if name.contains(' ') || dotted.contains(' ') {
        return None;
    }
    Some(if dotted.ends_with(&format!(".{name}")) || dotted == name {
        dotted.to_owned()
    } else {
        format!("{dotted}.{name}")
    })
}

/// The file of a dotted test id: `tests.test_calc.CalcTest.test_add` → `tests/test_calc.py`.
fn unittest_unit(id: &str) -> Option<String> {
    let parts: Vec<&str> = id.split('.').collect();
    let module = match parts.len() {
        0 | 1 => return None,
        2 => &parts[..1],
        n => &parts[..n - 2],
    };
    Some(format!("{}.py", module.join("/")))
}

/// The loader's stand-in for a module it could not import.
const FAILED_IMPORT: &str = "unittest.loader._FailedTest.";

pub(super) fn unittest(lines: &[&str]) -> Option<TestRun> {
    let mut run = TestRun::default();
    // A name on a line of its own (a docstring follows), and a test whose result comes on a
    // later line (what it printed to stderr came between).
    let mut pending: Option<String> = None;
    let mut awaiting: Option<String> = None;
    for line in lines {
        let line = line.trim_end();
        let said = line
            .rsplit_once(" ... ")
            .map(|(left, result)| (Some(left), result))
            .unwrap_or((None, line));
        let outcome = unittest_outcome(said.1);
        let id = match (said.0, outcome) {
            (Some(left), Some(_)) => unittest_id(left).or_else(|| pending.take()),
            (None, Some(_)) if said.1 == line => awaiting.take(),
            (Some(left), None) => {
                awaiting = unittest_id(left).or_else(|| pending.take());
                continue;
            }
            _ => None,
        };
        let (Some(id), Some((outcome, why))) = (id, outcome) else {
            pending = unittest_id(line);
            continue;
        };
        pending = None;
        awaiting = None;
        if let Some(module) = id.strip_prefix(FAILED_IMPORT) {
            let unit = format!("{}.py", module.replace('.', "/"));
            let why = failure_block(lines, module);
            run.unloaded.push(Unloaded { unit, why });
            continue;
        }
        let unit = unittest_unit(&id);
        run.cases
            .push(Case::new(&id, unit.as_deref(), outcome).because(why));
    }
    // Without -v only failures are named, in their blocks.
    if run.cases.is_empty() {
        for line in lines {
            let named = line
                .strip_prefix("FAIL: ")
                .map(|r| (r, Outcome::Failed))
                .or_else(|| line.strip_prefix("ERROR: ").map(|r| (r, Outcome::Error)));
            if let Some((rest, outcome)) = named
                && let Some(id) = unittest_id(rest)
                && !id.starts_with(FAILED_IMPORT)
            {
                let unit = unittest_unit(&id);
                run.cases.push(Case::new(&id, unit.as_deref(), outcome));
            }
        }
    }
    let counts = unittest_counts(lines);
    run.found(counts)
}

/// The last `SomethingError: …` line of the `ERROR: <module> (…)` block.
fn failure_block(lines: &[&str], module: &str) -> Vec<String> {
    let start = format!("ERROR: {module} (");
    let Some(at) = lines.iter().position(|l| l.starts_with(&start)) else {
        return vec![];
    };
    let block = lines[at + 1..]
        .iter()
        .skip_while(|l| l.starts_with("---"))
        .take_while(|l| !l.starts_with("===") && !l.starts_with("---"));
    let telling = block.filter(|l| telling_error(l)).last();
    telling
        .map(|l| vec![l.trim().to_owned()])
        .unwrap_or_default()
}

/// `ValueError: …` at the start of a line: what a traceback ends with.
fn telling_error(l: &str) -> bool {
    let first = l.split(':').next().unwrap_or_default();
    !l.starts_with(' ') && (first.ends_with("Error") || first.ends_with("Exception"))
}

/// `Ran 3 tests` … `FAILED (failures=1, errors=1)` / `OK`.
fn unittest_counts(lines: &[&str]) -> Option<TestCounts> {
    let ran = lines.iter().rev().find_map(|l| {
        let rest = l.trim().strip_prefix("Ran ")?;
        number(rest.split_whitespace().next())
    })?;
    let verdict = lines
        .iter()
        .rev()
        .find(|l| l.starts_with("OK") || l.starts_with("FAILED"))?;
    let mut counts = TestCounts::default();
    let inside = verdict
        .split_once('(')
        .map(|(_, r)| r.trim_end_matches(')'))
        .unwrap_or("");
    for part in inside.split(',') {
        let Some((k, v)) = part.trim().split_once('=') else {
            continue;
        };
        let Some(v) = number(Some(v)) else { continue };
        match k {
            "failures" | "unexpected successes" => counts.failed += v,
            "expected failures" => counts.skipped += v,
            other => counts.bump(other, v),
        }
    }
    counts.passed = ran.saturating_sub(counts.failed + counts.errors + counts.skipped);
    Some(counts)
}

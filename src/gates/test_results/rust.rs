//! `cargo test`: libtest's lines (`test tests::adds ... ok`, `... FAILED`, `... ignored`) under
//! the header of the target they belong to (`Running tests/a.rs (…)`, `Running unittests
//! src/lib.rs (…)`, `Doc-tests calc`), every target's `test result:` counts summed, and a
//! target that did not compile (rustc's `error[E0425]: …` with its ` --> tests/new.rs:3:22`).

use super::{Case, Outcome, TestCounts, TestRun, Unloaded};

/// The lines libtest's and rustc's readers read: targets' headers, tests' lines and late
/// results, counts, and errors with the place they point at.
pub(super) fn keeps(line: &str) -> bool {
    let t = line.trim();
    ["Running ", "Doc-tests ", "test ", "error", "--> "]
        .iter()
        .any(|p| t.starts_with(p))
        || libtest_outcome(t).is_some()
}

pub(super) fn libtest(lines: &[&str]) -> Option<TestRun> {
    let mut run = TestRun::default();
    let mut counts = TestCounts::default();
    let mut seen = false;
    let mut unit: Option<String> = None;
    // A test whose result comes on a later line (what it printed came between).
    let mut awaiting: Option<String> = None;
    for l in lines {
        let l = l.trim();
        if let Some(name) = awaiting.as_deref()
            && let Some((outcome, why)) = libtest_outcome(l)
        {
            run.cases
                .push(Case::new(name, unit.as_deref(), outcome).because(why));
            awaiting = None;
            continue;
        }
        if let Some(rest) = l.strip_prefix("Running ") {
            // `Running unittests src/lib.rs (target/…)`, `Running tests/a.rs (target/…)`.
            let rest = rest.strip_prefix("unittests ").unwrap_or(rest);
            unit = rest.split(" (").next().map(|u| u.trim().to_owned());
        } else if let Some(krate) = l.strip_prefix("Doc-tests ") {
            unit = Some(format!("doc-tests {}", krate.trim()));
        } else if let Some(rest) = l.strip_prefix("test result: ") {
            seen = true;
            let body = rest.split_once(". ").map(|(_, b)| b).unwrap_or(rest);
            counts.add(&TestCounts::from_parts(body.split(';')));
        } else if let Some(rest) = l.strip_prefix("test ")
            && let Some((name, result)) = rest.split_once(" ... ")
        {
            match libtest_outcome(result.trim()) {
                Some((outcome, why)) => run
                    .cases
                    .push(Case::new(name, unit.as_deref(), outcome).because(why)),
                None => awaiting = Some(name.to_owned()),
            }
        }
    }
    if !seen && run.cases.is_empty() {
        return None;
    }
    run.count_cases();
    if seen {
        run.counts = counts;
    }
    Some(run)
}

/// How libtest ends a test's line: `ok`, `FAILED`, `ignored` (with its reason).
fn libtest_outcome(result: &str) -> Option<(Outcome, &str)> {
    Some(match result {
        "ok" => (Outcome::Passed, ""),
        "FAILED" => (Outcome::Failed, ""),
        r if r.starts_with("ignored") => {
            let why = r
                .trim_start_matches("ignored")
                .trim_start_matches(',')
                .trim();
            (
                Outcome::Skipped,
                if why.is_empty() { "ignored" } else { why },
            )
        }
        _ => return None,
    })
}

/// rustc's errors, by the file they point at: each such file's target did not compile, so
/// none of its tests ran. Only when cargo says something could not compile.
pub(super) fn compile_errors(lines: &[&str]) -> Option<TestRun> {
    if !lines
        .iter()
        .any(|l| l.starts_with("error: could not compile"))
    {
        return None;
    }
    let mut unloaded: Vec<Unloaded> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let is_error = line.starts_with("error[E")
            || (line.starts_with("error: ")
                && !line.starts_with("error: could not compile")
                && !line.starts_with("error: aborting"));
        if !is_error {
            continue;
        }
        let Some(place) = lines[i + 1..]
            .iter()
            .take(3)
            .find_map(|l| l.trim_start().strip_prefix("--> "))
        else {
            continue;
        };
        let file = place.split(':').next().unwrap_or(place).trim().to_owned();
        let said = format!("{} ({})", line.trim(), place.trim());
        match unloaded.iter_mut().find(|u| u.unit == file) {
            Some(u) => u.why.push(said),
            None => unloaded.push(Unloaded {
                unit: file,
                why: vec![said],
            }),
        }
    }
    if unloaded.is_empty() {
        return None;
    }
    let mut run = TestRun {
        unloaded,
        ..TestRun::default()
    };
    run.count_cases();
    Some(run)
}

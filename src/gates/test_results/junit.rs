//! JUnit XML reports (`gates.test_report`), which most runners can write: one `<testcase>`
//! per test with a `<failure>`, `<error>` or `<skipped>` child; its `file` attribute (or its
//! `classname`) is the unit.

use std::path::Path;

use super::{Case, Outcome, TestRun};

pub(super) fn read(xml: &str) -> Option<TestRun> {
    let doc = roxmltree::Document::parse(xml).ok()?;
    let root = doc.root_element();
    if !matches!(root.tag_name().name(), "testsuites" | "testsuite") {
        return None;
    }
    let mut cases = Vec::new();
    for case in root.descendants().filter(|n| n.has_tag_name("testcase")) {
        let child = |name: &str| case.children().find(|c| c.has_tag_name(name));
        let classname = case.attribute("classname").filter(|c| !c.is_empty());
        let title = case.attribute("name").unwrap_or_default();
        let name = match classname {
            Some(c) => format!("{c}.{title}"),
            None => title.to_owned(),
        };
        let unit = case.attribute("file").or(classname);
        let (outcome, detail) = if let Some(f) = child("failure") {
            (Outcome::Failed, f)
        } else if let Some(e) = child("error") {
            (Outcome::Error, e)
        } else if let Some(s) = child("skipped") {
            (Outcome::Skipped, s)
        } else {
            cases.push(Case::new(&name, unit, Outcome::Passed));
            continue;
        };
        let why = detail.attribute("message").unwrap_or_default();
        cases.push(Case::new(&name, unit, outcome).because(why));
    }
    Some(TestRun::of_cases(cases))
}

/// The JUnit XML report the test command wrote at `rel` in the worktree (never through a
/// link, at most 64 MiB).
pub(super) fn read_file(worktree: &Path, rel: &str) -> Result<TestRun, String> {
    use crate::untrusted::files as untrusted;
    let text = untrusted::read_text(worktree, rel, 64 << 20)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{rel} was not written by the test command"))?;
    read(&text).ok_or_else(|| format!("{rel} is not a JUnit XML report"))
}

//! Files that steer which tests run and how: a change to one of them can take the Breaker's
//! tests out of the run (skip, deselect, exit early) without touching a test file, so the test
//! lock reports every such change, the pull request and the Critic are told, and a test gate
//! that misses the Breaker's tests names them as the likely cause.
//!
//! What counts, per ecosystem: `conftest.py` at any level, `pytest.ini`, `tox.ini`,
//! `pyproject.toml`'s `[tool.pytest…]` and `setup.cfg`'s `[tool:pytest]` sections,
//! `sitecustomize.py`/`usercustomize.py` and `.pth` files (Python runs them at start-up);
//! `package.json`'s test scripts and runner keys, Jest, Vitest and Mocha configs;
//! `.cargo/config(.toml)`, `Cargo.toml`'s test targets, and added lines that gate code on
//! `cfg(test)` or ignore tests in Rust sources; Go build constraints added to `.go` files.
//! Pure git2 on two commits' blobs; no checkout.

use git2::{Delta, Oid, Repository, Tree};
use serde::{Deserialize, Serialize};

/// One changed file that steers the tests, and how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Steer {
    pub path: String,
    /// "added", "changed: [tool.pytest.ini_options]", "adds `#[cfg(not(test))]`"…
    pub how: String,
}

impl Steer {
    /// Whether this change can make a test report pass that should fail, so a passing run
    /// waits for a person: every steering file and section does; in sources, only what makes
    /// code differ under test (`cfg(not(test))`, `cfg_attr(test`, `cfg!(test)`). A plain
    /// `#[cfg(test)]` module, an `#[ignore]` or a Go build constraint can only take tests out
    /// of the run, and the test gate names those it misses.
    pub fn can_forge(&self) -> bool {
        match self.how.strip_prefix("adds ") {
            Some(marks) => FORGING_MARKS.iter().any(|m| marks.contains(m)),
            None => true,
        }
    }

    /// "`conftest.py` (added)".
    pub fn describe(&self) -> String {
        format!("`{}` ({})", self.path.replace('`', "'"), self.how)
    }
}

/// The files `base..head` changes that steer the tests, sorted by path.
pub fn changed(repo: &Repository, base: Oid, head: Oid) -> Result<Vec<Steer>, git2::Error> {
    let old = repo.find_commit(base)?.tree()?;
    let new = repo.find_commit(head)?.tree()?;
    let diff = repo.diff_tree_to_tree(Some(&old), Some(&new), None)?;
    let mut found = Vec::new();
    for d in diff.deltas() {
        let Some(path) = d
            .new_file()
            .path()
            .or_else(|| d.old_file().path())
            .and_then(|p| p.to_str())
        else {
            continue;
        };
        let status = match d.status() {
            Delta::Added => "added",
            Delta::Deleted => "deleted",
            _ => "changed",
        };
        let text = |tree: &Tree<'_>| blob_text(repo, tree, path);
        if let Some(how) = judge(path, status, &text(&old), &text(&new)) {
            found.push(Steer {
                path: path.to_owned(),
                how,
            });
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

/// Whether a passing test run waits for a person because the change edits `steering` files (a
/// root `conftest.py` can turn every failure into a pass): why, or `None` when it does not.
/// Nothing the run says can be trusted until someone reads them; once `approved_by` a person,
/// the run counts and its notes say who. The first note of a held run says what to do.
pub fn hold(
    steering: &[Steer],
    approved_by: Option<&str>,
    notes: &mut Vec<String>,
) -> Option<String> {
    let forging: Vec<&Steer> = steering.iter().filter(|s| s.can_forge()).collect();
    if forging.is_empty() {
        return None;
    }
    let files: Vec<String> = forging.iter().map(|s| s.describe()).collect();
    let files = files.join(", ");
    if let Some(who) = approved_by {
        notes.push(format!(
            "The change edits files that steer the tests ({files}); @{who} approved them, so this run counts."
        ));
        return None;
    }
    let why = format!("{}: {files}", super::HELD);
    notes.insert(
        0,
        format!(
            "Held for a person: {why}. Such a file can make any test report \"passed\", so this green does not count until someone with write permission reads them and approves (`/hive approve`, or this check run's Approve button)."
        ),
    );
    Some(why)
}

/// A file's text in `tree` (empty when absent, not UTF-8, or over 1 MiB: a steering file is
/// small, and a huge one is reported by its name alone).
fn blob_text(repo: &Repository, tree: &Tree<'_>, path: &str) -> String {
    let Ok(entry) = tree.get_path(std::path::Path::new(path)) else {
        return String::new();
    };
    match repo.find_blob(entry.id()) {
        Ok(b) if b.size() <= 1 << 20 => String::from_utf8_lossy(b.content()).into_owned(),
        _ => String::new(),
    }
}

/// How the change of `path` (from `old` to `new`, `status` added/deleted/changed) steers the
/// tests; `None` when it does not.
fn judge(path: &str, status: &str, old: &str, new: &str) -> Option<String> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let whole_file = matches!(
        name,
        "conftest.py" | "pytest.ini" | "tox.ini" | "sitecustomize.py" | "usercustomize.py"
    ) || name.ends_with(".pth")
        || is_runner_config(name)
        || path.ends_with(".cargo/config")
        || path.ends_with(".cargo/config.toml");
    if whole_file {
        return Some(status.to_owned());
    }
    let section = |what: &str| Some(format!("{status}: {what}"));
    match name {
        "pyproject.toml" => {
            let pick = |t: &str| toml_at(t, &["tool", "pytest"]);
            (pick(old) != pick(new)).then(|| section("[tool.pytest…]"))?
        }
        "setup.cfg" => (ini_section(old, "tool:pytest") != ini_section(new, "tool:pytest"))
            .then(|| section("[tool:pytest]"))?,
        "package.json" => {
            let keys = package_test_keys(old, new);
            (!keys.is_empty()).then(|| section(&keys.join(", ")))?
        }
        "Cargo.toml" => {
            let keys = cargo_test_keys(old, new);
            (!keys.is_empty()).then(|| section(&keys.join(", ")))?
        }
        _ if name.ends_with(".rs") => added_marks(old, new, RUST_MARKS),
        _ if name.ends_with(".go") => added_marks(old, new, GO_MARKS),
        _ => None,
    }
}

/// Jest, Vitest and Mocha config files (`jest.config.ts`, `vitest.workspace.js`, `.mocharc.yml`).
fn is_runner_config(name: &str) -> bool {
    [
        "jest.config.",
        "vitest.config.",
        "vitest.workspace.",
        ".mocharc",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// The value at `keys` of a TOML document, as text (`None` when absent or unreadable).
fn toml_at(text: &str, keys: &[&str]) -> Option<String> {
    let mut v: &toml::Value = &text.parse::<toml::Table>().ok()?.into();
    for k in keys {
        v = v.get(k)?;
    }
    Some(format!("{v:?}"))
}

/// The lines of an INI file's `[section]`, up to the next section.
fn ini_section(text: &str, section: &str) -> Vec<String> {
    let header = format!("[{section}]");
    text.lines()
        .map(str::trim)
        .skip_while(|l| *l != header)
        .skip(1)
        .take_while(|l| !l.starts_with('['))
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(';'))
        .map(str::to_owned)
        .collect()
}

/// The keys of `package.json` that decide how tests run and differ between the versions:
/// the test scripts and the runners' own config blocks.
fn package_test_keys(old: &str, new: &str) -> Vec<String> {
    let parse = |t: &str| serde_json::from_str::<serde_json::Value>(t).unwrap_or_default();
    let (old, new) = (parse(old), parse(new));
    let mut keys = Vec::new();
    for script in ["test", "pretest", "posttest"] {
        let at = |v: &serde_json::Value| v.get("scripts").and_then(|s| s.get(script)).cloned();
        if at(&old) != at(&new) {
            keys.push(format!("scripts.{script}"));
        }
    }
    for block in ["jest", "mocha", "vitest", "ava", "c8", "nyc"] {
        if old.get(block) != new.get(block) {
            keys.push(block.to_owned());
        }
    }
    keys
}

/// The parts of `Cargo.toml` that decide which tests exist and how they run.
fn cargo_test_keys(old: &str, new: &str) -> Vec<String> {
    let mut keys = Vec::new();
    for path in [
        &["test"][..],
        &["lib"],
        &["bin"],
        &["package", "autotests"],
        &["package", "autolib"],
        &["features"],
    ] {
        if toml_at(old, path) != toml_at(new, path) {
            keys.push(format!("[{}]", path.join(".")));
        }
    }
    keys
}

/// Rust lines that change what runs under test.
const RUST_MARKS: &[&str] = &[
    "cfg(test)",
    "cfg(not(test))",
    "cfg_attr(test",
    "cfg!(test)",
    "#[ignore",
];
/// The marks that make Rust code differ under test.
const FORGING_MARKS: &[&str] = &["cfg(not(test))", "cfg_attr(test", "cfg!(test)"];
/// Go build constraints.
const GO_MARKS: &[&str] = &["//go:build", "// +build"];

/// The marks of `marks` that lines `new` adds (lines absent from `old`) contain, as "adds …".
fn added_marks(old: &str, new: &str, marks: &[&str]) -> Option<String> {
    let before: std::collections::HashSet<&str> = old.lines().map(str::trim).collect();
    let mut seen: Vec<&str> = Vec::new();
    for line in new.lines().map(str::trim).filter(|l| !before.contains(l)) {
        for m in marks {
            if line.contains(m) && !seen.contains(m) {
                seen.push(m);
            }
        }
    }
    (!seen.is_empty()).then(|| {
        let shown: Vec<String> = seen.iter().map(|m| format!("`{m}`")).collect();
        format!("adds {}", shown.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gates::security::testing::{Change, TestRepo};

    #[test]
    fn files_that_steer_tests_are_found_and_others_are_not() {
        let repo = TestRepo::new();
        let w = |t: &'static str| Change::Write(t.as_bytes());
        let base = repo.commit(
            None,
            &[
                (
                    "pyproject.toml",
                    w("[project]\nname = \"p\"\n\n[tool.pytest.ini_options]\naddopts = \"-q\"\n"),
                ),
                (
                    "setup.cfg",
                    w("[metadata]\nname = p\n\n[tool:pytest]\naddopts = -q\n"),
                ),
                (
                    "package.json",
                    w(r#"{"scripts": {"test": "node --test", "build": "tsc"}}"#),
                ),
                (
                    "Cargo.toml",
                    w("[package]\nname = \"c\"\nversion = \"0.1.0\"\n"),
                ),
                ("src/lib.rs", w("pub fn add() {}\n")),
                ("calc.go", w("package calc\n")),
                ("pkg/calc.py", w("def add(a, b):\n    return a + b\n")),
            ],
        );
        let head = repo.commit(
            Some(base),
            &[
                ("tests/conftest.py", w("import pytest\n")),
                ("pyproject.toml", w("[project]\nname = \"p\"\nversion = \"2\"\n\n[tool.pytest.ini_options]\naddopts = \"-q -k 'not new'\"\n")),
                ("setup.cfg", w("[metadata]\nname = q\n\n[tool:pytest]\naddopts = -q\n")),
                ("package.json", w(r#"{"scripts": {"test": "exit 0", "build": "tsc --strict"}}"#)),
                ("Cargo.toml", w("[package]\nname = \"c\"\nversion = \"0.2.0\"\n\n[[test]]\nname = \"x\"\nharness = false\n")),
                ("src/lib.rs", w("#[cfg(not(test))]\npub fn add() {}\n")),
                ("calc.go", w("//go:build !testing\n\npackage calc\n")),
                ("pkg/calc.py", w("def add(a, b):\n    return b + a\n")),
                (".cargo/config.toml", w("[alias]\ntest = \"check\"\n")),
                ("vitest.config.ts", w("export default {}\n")),
            ],
        );
        let found = changed(&repo.repo, base, head).unwrap();
        let got: Vec<(&str, &str)> = found
            .iter()
            .map(|s| (s.path.as_str(), s.how.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (".cargo/config.toml", "added"),
                ("Cargo.toml", "changed: [test]"),
                ("calc.go", "adds `//go:build`"),
                ("package.json", "changed: scripts.test"),
                ("pyproject.toml", "changed: [tool.pytest…]"),
                ("src/lib.rs", "adds `cfg(not(test))`"),
                ("tests/conftest.py", "added"),
                ("vitest.config.ts", "added"),
            ]
        );
        // setup.cfg changed only outside [tool:pytest]; pkg/calc.py is code, not a steer.
        assert_eq!(found[0].describe(), "`.cargo/config.toml` (added)");
    }

    #[test]
    fn a_run_with_steering_files_is_held_until_a_person_approves() {
        let conftest = [Steer {
            path: "conftest.py".into(),
            how: "added".into(),
        }];
        let mut notes = vec!["12 passed".to_owned()];
        assert_eq!(hold(&[], None, &mut notes), None);
        let marks = |how: &str| Steer {
            path: "src/lib.rs".into(),
            how: how.into(),
        };
        let unit_tests = [marks("adds `cfg(test)`"), marks("adds `#[ignore`")];
        assert_eq!(hold(&unit_tests, None, &mut notes), None);
        assert_eq!(notes, ["12 passed"]);
        for forging in ["adds `cfg(test)`, `cfg(not(test))`", "adds `cfg!(test)`"] {
            let held = hold(&[marks(forging)], None, &mut vec![]);
            assert!(held.is_some_and(|w| w.contains("src/lib.rs")), "{forging}");
        }
        let why = hold(&conftest, None, &mut notes).unwrap();
        assert_eq!(
            why,
            "the change edits files that steer the tests: `conftest.py` (added)"
        );
        assert!(
            notes[0].starts_with("Held for a person: the change edits"),
            "{notes:?}"
        );
        assert!(notes[0].contains("`/hive approve`"), "{notes:?}");
        let mut notes = vec![];
        assert_eq!(hold(&conftest, Some("alice"), &mut notes), None);
        assert_eq!(
            notes,
            [
                "The change edits files that steer the tests (`conftest.py` (added)); @alice approved them, so this run counts."
            ]
        );
    }
}

//! Coverage as the ecosystems' tools report it, read into one shape — which lines of which
//! file the tests ran — and measured on a change: LCOV (coverage.py's `coverage lcov`,
//! cargo-llvm-cov, cargo-tarpaulin, c8/istanbul) and Go's cover profiles (`go test
//! -coverprofile`). Paths are made relative to the repository root; files outside it (a
//! dependency's) are dropped.

use std::collections::BTreeMap;

use crate::gates::changes::Changed;
use crate::pathset::PathSet;

/// Lines a coverage tool measured: repository path → line → how often the tests ran it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineHits(BTreeMap<String, BTreeMap<u32, u64>>);

impl LineHits {
    /// Adds an LCOV report (`SF:` a source file, `DA:line,hits` a line, `end_of_record`).
    /// `roots` are prefixes that absolute paths start with in the sandbox or on the host.
    pub fn read_lcov(&mut self, text: &str, roots: &[&str]) {
        let mut file: Option<String> = None;
        for line in text.lines() {
            let line = line.trim();
            if let Some(path) = line.strip_prefix("SF:") {
                file = relative(path, roots);
            } else if line == "end_of_record" {
                file = None;
            } else if let (Some(f), Some(da)) = (&file, line.strip_prefix("DA:")) {
                let mut parts = da.split(',');
                let n = parts.next().and_then(|n| n.trim().parse::<u32>().ok());
                let hits = parts.next().and_then(|h| h.trim().parse::<u64>().ok());
                if let (Some(n), Some(hits)) = (n, hits) {
                    self.add(f, n, hits);
                }
            }
        }
    }

    /// Adds a Go cover profile (`mode: set`, then `pkg/file.go:l.c,l.c statements count` per
    /// block). Files are named by import path: `module` (go.mod's) is taken off the front.
    pub fn read_go_profile(&mut self, text: &str, module: Option<&str>, roots: &[&str]) {
        for line in text.lines().filter(|l| !l.starts_with("mode:")) {
            let Some((file, rest)) = line.rsplit_once(".go:") else {
                continue;
            };
            let file = format!("{file}.go");
            let path = match module.and_then(|m| file.strip_prefix(&format!("{m}/"))) {
                Some(p) => Some(p.to_owned()),
                None => relative(&file, roots),
            };
            let mut fields = rest.split_whitespace();
            let (Some(span), _, Some(count)) = (fields.next(), fields.next(), fields.next()) else {
                continue;
            };
            let line_of = |pos: &str| pos.split('.').next().and_then(|l| l.parse::<u32>().ok());
            let (Some((from, to)), Ok(count)) = (span.split_once(','), count.parse::<u64>()) else {
                continue;
            };
            if let (Some(path), Some(from), Some(to)) = (path, line_of(from), line_of(to)) {
                for n in from..=to.min(from.saturating_add(10_000)) {
                    self.add(&path, n, count);
                }
            }
        }
    }

    /// A line is run when any record of it says so.
    fn add(&mut self, path: &str, line: u32, hits: u64) {
        let slot = self
            .0
            .entry(path.to_owned())
            .or_default()
            .entry(line)
            .or_insert(0);
        *slot = (*slot).max(hits);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Lines run and lines measured, over every file.
    pub fn totals(&self) -> (usize, usize) {
        let lines = self.0.values().flat_map(|f| f.values());
        let (run, all) = lines.fold((0, 0), |(r, a), &h| (r + usize::from(h > 0), a + 1));
        (run, all)
    }
}

/// `path` relative to the repository: absolute paths lose the root they start with, and are
/// dropped when they start with none (a dependency, the standard library).
fn relative(path: &str, roots: &[&str]) -> Option<String> {
    let path = path.trim();
    let rel = if path.starts_with('/') {
        roots.iter().find_map(|r| path.strip_prefix(r))?
    } else {
        path.strip_prefix("./").unwrap_or(path)
    };
    let rel = rel.trim_start_matches('/');
    (!rel.is_empty() && !rel.split('/').any(|c| c == "..")).then(|| rel.to_owned())
}

/// Coverage of the lines a change adds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OfChange {
    /// Added lines the tool measured, and how many of those the tests ran.
    pub measured: usize,
    pub run: usize,
    /// Per file, the added lines no test ran.
    pub missed: BTreeMap<String, Vec<u32>>,
    /// Changed files of a measured language that the report does not name (no test loaded
    /// them, or the tool's configuration leaves them out); their lines are not counted.
    pub unreported: Vec<String>,
}

/// Measures the added lines of `changed` (outside `tests`) against `hits`.
pub fn of_change(hits: &LineHits, changed: &[Changed], tests: &PathSet) -> OfChange {
    let extension = |p: &str| p.rsplit_once('.').map(|(_, e)| e.to_owned());
    let measured_kinds: Vec<String> = hits.0.keys().filter_map(|p| extension(p)).collect();
    let mut out = OfChange::default();
    for file in changed.iter().filter(|f| !tests.contains(&f.path)) {
        let Some(lines) = hits.0.get(&file.path) else {
            if extension(&file.path).is_some_and(|e| measured_kinds.contains(&e))
                && !file.added.is_empty()
            {
                out.unreported.push(file.path.clone());
            }
            continue;
        };
        for n in &file.added {
            if let Some(&h) = lines.get(n) {
                out.measured += 1;
                if h > 0 {
                    out.run += 1;
                } else {
                    out.missed.entry(file.path.clone()).or_default().push(*n);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lcov_paths_become_relative_and_dependencies_are_dropped() {
        let mut hits = LineHits::default();
        hits.read_lcov(
            "TN:\nSF:/workspace/src/lib.rs\nDA:1,3\nDA:2,0\nDA:3,1,abc\nend_of_record\n\
             SF:/cache/cargo/registry/src/dep/lib.rs\nDA:1,1\nend_of_record\n\
             SF:calc.py\nDA:1,1\nDA:2,0\nend_of_record\n",
            &["/workspace/"],
        );
        assert_eq!(hits.totals(), (3, 5));
        assert_eq!(hits.0.keys().collect::<Vec<_>>(), ["calc.py", "src/lib.rs"]);
    }

    #[test]
    fn a_go_profile_marks_every_line_of_a_block() {
        let mut hits = LineHits::default();
        hits.read_go_profile(
            "mode: set\nexample.com/calc/calc.go:3.24,5.2 1 1\nexample.com/calc/calc.go:7.30,9.2 1 0\n\
             example.com/calc/calc.go:8.1,8.9 1 1\n",
            Some("example.com/calc"),
            &[],
        );
        let f = &hits.0["calc.go"];
        assert_eq!(f.get(&3), Some(&1));
        assert_eq!(f.get(&7), Some(&0));
        // A line in two blocks is run when either ran.
        assert_eq!(f.get(&8), Some(&1));
        assert_eq!(hits.totals(), (4, 6));
    }

    #[test]
    fn changed_lines_are_measured_where_the_tool_measured_them() {
        let mut hits = LineHits::default();
        hits.read_lcov(
            "SF:calc.py\nDA:1,1\nDA:2,1\nDA:4,0\nDA:5,0\nend_of_record\nSF:tests/test_calc.py\nDA:1,1\nend_of_record\n",
            &[],
        );
        let file = |path: &str, added: &[u32]| Changed {
            path: path.into(),
            blob: git2::Oid::zero(),
            old: None,
            added: added.to_vec(),
        };
        let changed = [
            // Line 3 is blank (not measured), 4 and 5 never run.
            file("calc.py", &[2, 3, 4, 5]),
            file("tests/test_calc.py", &[1]),
            file("util.py", &[1, 2]),
            file("README.md", &[1]),
        ];
        let m = of_change(&hits, &changed, &PathSet::new(&["tests/".to_owned()]));
        assert_eq!((m.run, m.measured), (1, 3));
        assert_eq!(m.missed["calc.py"], [4, 5]);
        assert_eq!(m.unreported, ["util.py"]);
    }
}

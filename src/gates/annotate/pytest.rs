//! pytest. Each entry of the short test summary is one failure:
//!
//! ```text
//! FAILED tests/test_calc.py::test_add - assert -1 == 3
//! ERROR tests/test_broken.py
//! ```
//!
//! and the matching block of the FAILURES / ERRORS sections (`____ test_add ____`,
//! `____ ERROR collecting tests/test_broken.py ____`) says where: its location lines
//! (`tests/test_calc.py:7: AssertionError`, `pkg/calc.py:19: in <module>`) or the frames of
//! its `E` lines (`E     File "/work/tests/test_broken.py", line 1`), and what: the first
//! `E` line of the last group (`E       assert -1 == 3`). A failed test is put on the innermost
//! line of its own file, a collection error on the innermost line in the repository. Blocks
//! without a summary entry (`-rN`) are reported on their own. Level Failure, title the test id.

use super::paths::Roots;
use super::{Found, text, traceback};
use crate::annotation::{Annotation, Level};

/// One block of the FAILURES or ERRORS section.
#[derive(Debug, Default)]
struct Block<'a> {
    header: &'a str,
    at: usize,
    /// Locations in output order: `(path, line)`.
    frames: Vec<(&'a str, u32)>,
    /// The `E` lines, grouped by contiguity.
    errors: Vec<Vec<&'a str>>,
    last_error_at: Option<usize>,
    /// In a `--- Captured stdout ---` part: what the test printed, not pytest.
    captured: bool,
}

impl<'a> Block<'a> {
    fn read(&mut self, at: usize, line: &'a str) {
        let trimmed = line.trim();
        if trimmed.starts_with("---") && trimmed.contains("Captured") {
            self.captured = true;
        }
        if self.captured {
            return;
        }
        if let Some(e) = line
            .strip_prefix('E')
            .filter(|e| e.is_empty() || e.starts_with(' '))
        {
            if self.last_error_at.is_none_or(|last| last + 1 != at) {
                self.errors.push(Vec::new());
            }
            self.last_error_at = Some(at);
            if let Some(group) = self.errors.last_mut() {
                group.push(e);
            }
            if let Some(f) = traceback::frame(e) {
                self.frames.push((f.path, f.line));
            }
        } else if let Some(f) = traceback::frame(line) {
            self.frames.push((f.path, f.line));
        } else if let Some(loc) = text::location(line)
            && !loc.path.contains(char::is_whitespace)
        {
            self.frames.push((loc.path, loc.line));
        }
    }

    /// The first least-indented line of the last group of `E` lines.
    fn message(&self) -> Option<&'a str> {
        let group = self.errors.last()?;
        let indent = |l: &str| l.len() - l.trim_start().len();
        let lines = group.iter().filter(|l| !l.trim().is_empty());
        let least = lines.clone().map(|l| indent(l)).min()?;
        lines
            .into_iter()
            .find(|l| indent(l) == least)
            .map(|l| l.trim())
    }

    /// Where the failure is: the innermost frame in `file` when given, else the innermost
    /// frame in the repository.
    fn location(&self, file: Option<&str>, roots: &Roots) -> Option<(&'a str, u32)> {
        let mut in_repo = self.frames.iter().rev().filter(|(p, _)| roots.contains(p));
        let wanted = file.and_then(|f| roots.relative(f));
        if let Some(wanted) = wanted
            && let Some(hit) = in_repo
                .clone()
                .find(|(p, _)| roots.relative(p) == Some(wanted.clone()))
        {
            return Some(*hit);
        }
        in_repo.next().copied()
    }

    /// Whether this block is the one of summary entry `nodeid`.
    fn is_for(&self, nodeid: &str) -> bool {
        match nodeid.split_once("::") {
            Some((_, name)) => {
                let name = name.replace("::", ".");
                self.header == name
                    || self
                        .header
                        .strip_suffix(name.as_str())
                        .is_some_and(|h| h.ends_with(" of "))
            }
            None => self.header.strip_prefix("ERROR collecting ") == Some(nodeid),
        }
    }
}

/// One line of the short test summary.
struct Entry<'a> {
    nodeid: &'a str,
    message: Option<&'a str>,
    at: usize,
}

#[derive(PartialEq)]
enum Section {
    Other,
    Blocks,
    Summary,
}

pub fn parse(lines: &[&str], roots: &Roots) -> Vec<Found> {
    let (blocks, entries) = scan(lines);
    let mut used = vec![false; blocks.len()];
    let mut out = Vec::new();
    for e in &entries {
        let file = e.nodeid.split("::").next().unwrap_or(e.nodeid);
        let is_test = e.nodeid.contains("::");
        let index = (0..blocks.len()).find(|&k| !used[k] && blocks[k].is_for(e.nodeid));
        if let Some(k) = index {
            used[k] = true;
        }
        let block = index.and_then(|k| blocks.get(k));
        let (path, line) = block
            .and_then(|b| b.location(is_test.then_some(file), roots))
            .unwrap_or((file, 1));
        let message = block
            .and_then(Block::message)
            .or(e.message)
            .unwrap_or(if is_test {
                "test failed"
            } else {
                "error collecting tests"
            });
        let annotation = Annotation::new(path, line, Level::Failure, message).with_title(e.nodeid);
        out.push(Found::new(e.at, annotation));
    }
    for (b, _) in blocks.iter().zip(&used).filter(|(_, used)| !**used) {
        if let Some((path, line)) = b.location(None, roots) {
            let message = b.message().unwrap_or(b.header);
            let title = b
                .header
                .strip_prefix("ERROR collecting ")
                .unwrap_or(b.header);
            out.push(Found::new(
                b.at,
                Annotation::new(path, line, Level::Failure, message).with_title(title),
            ));
        }
    }
    out
}

/// The blocks of the FAILURES and ERRORS sections and the entries of the short summary.
fn scan<'a>(lines: &[&'a str]) -> (Vec<Block<'a>>, Vec<Entry<'a>>) {
    let mut blocks: Vec<Block<'a>> = Vec::new();
    let mut entries = Vec::new();
    let mut section = Section::Other;
    for (at, line) in lines.iter().enumerate() {
        if let Some(name) = banner(line, '=') {
            section = match name {
                "FAILURES" | "ERRORS" => Section::Blocks,
                "short test summary info" => Section::Summary,
                _ => Section::Other,
            };
            continue;
        }
        match section {
            Section::Blocks => {
                if let Some(header) = banner(line, '_') {
                    blocks.push(Block {
                        header,
                        at,
                        ..Block::default()
                    });
                } else if let Some(block) = blocks.last_mut() {
                    block.read(at, line);
                }
            }
            Section::Summary => {
                let rest = line
                    .strip_prefix("FAILED ")
                    .or_else(|| line.strip_prefix("ERROR "));
                if let Some(rest) = rest {
                    let (nodeid, message) = match rest.split_once(" - ") {
                        Some((id, m)) => (id.trim(), Some(m)),
                        None => (rest.trim(), None),
                    };
                    if !nodeid.is_empty() {
                        entries.push(Entry {
                            nodeid,
                            message,
                            at,
                        });
                    }
                }
            }
            Section::Other => {}
        }
    }
    (blocks, entries)
}

/// The name inside a pytest banner such as `==== FAILURES ====` or `____ test_add ____`
/// (not the `_ _ _ _` separator of chained frames).
fn banner(line: &str, fill: char) -> Option<&str> {
    let t = line.trim();
    let edge: String = std::iter::repeat_n(fill, 3).collect();
    if !(t.starts_with(&edge) && t.ends_with(&edge)) {
        return None;
    }
    let name = t.trim_matches(fill).trim();
    (!name.is_empty() && name.chars().any(|c| c != fill && c != ' ')).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::super::{parse, tests::show};

    #[test]
    fn failures_go_on_the_test_line_with_the_error_line() {
        let out = include_str!("../../../tests/fixtures/tool-output/pytest-failures.txt");
        let want = [
            "tests/test_calc.py:7 failure [tests/test_calc.py::test_add] assert -1 == 3",
            "tests/test_calc.py:16 failure [tests/test_calc.py::test_lookup] KeyError: 'missing'",
            "tests/test_calc.py:20 failure [tests/test_calc.py::test_parse_empty] ValueError: empty input",
            "tests/test_calc.py:25 failure [tests/test_calc.py::test_param[2-3]] assert 2 == 3",
            "tests/test_calc.py:30 failure [tests/test_calc.py::TestThing::test_method] assert [1, 2] == [1, 3]",
        ];
        assert_eq!(show(&parse("test", out, &["/tmp/work/"])), want);
    }

    #[test]
    fn collection_errors_go_on_the_broken_line() {
        let out = include_str!("../../../tests/fixtures/tool-output/pytest-collection-error.txt");
        let want = [
            "tests/test_broken.py:1 failure [tests/test_broken.py] SyntaxError: invalid syntax",
            "tests/test_imports.py:1 failure [tests/test_imports.py] ModuleNotFoundError: No module named 'not_a_module'",
        ];
        assert_eq!(show(&parse("test", out, &["/tmp/work/"])), want);
    }

    #[test]
    fn colours_do_not_matter() {
        let out = include_str!("../../../tests/fixtures/tool-output/pytest-color.txt");
        let want = [
            "tests/test_calc.py:7 failure [tests/test_calc.py::test_add] assert -1 == 3",
            "tests/test_calc.py:16 failure [tests/test_calc.py::test_lookup] KeyError: 'missing'",
        ];
        assert_eq!(show(&parse("test", out, &[])), want);
    }

    #[test]
    fn summary_only_blocks_only_and_setup_errors() {
        let summary =
            "=== short test summary info ===\nFAILED tests/t.py::test_a - boom\nERROR tests/u.py\n";
        let want = [
            "tests/t.py:1 failure [tests/t.py::test_a] boom",
            "tests/u.py:1 failure [tests/u.py] error collecting tests",
        ];
        assert_eq!(show(&parse("test", summary, &[])), want);
        let blocks = "=== ERRORS ===\n____ ERROR at setup of test_b ____\n\ntests/t.py:4: in fx\n    raise X\nE   X: no db\n\
                      ___ ERROR collecting tests/v.py ___\n/usr/lib/x.py:1: in f\nE   ImportError\n=== 2 errors in 0.1s ===\n";
        let want = ["tests/t.py:4 failure [ERROR at setup of test_b] X: no db"];
        assert_eq!(show(&parse("test", blocks, &[])), want);
        let both = format!(
            "{blocks}=== short test summary info ===\nERROR tests/t.py::test_b - X: no...\n"
        );
        let want = ["tests/t.py:4 failure [tests/t.py::test_b] X: no db"];
        assert_eq!(show(&parse("test", &both, &[])), want);
    }

    #[test]
    fn captured_output_is_not_a_location() {
        let out = "=== FAILURES ===\n____ test_a ____\ntests/t.py:3: AssertionError\n--- Captured stdout call ---\n\
                   src/x.py:9: printed\n=== short test summary info ===\nFAILED tests/t.py::test_a - AssertionError\n";
        let want = ["tests/t.py:3 failure [tests/t.py::test_a] AssertionError"];
        assert_eq!(show(&parse("test", out, &[])), want);
    }
}

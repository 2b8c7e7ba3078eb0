//! Findings a lint or typecheck gate already reports on the base: the repository's debt, not
//! the change's. The baseline records them by gate, file and message (lines move as code is
//! added); a gate whose every failing finding is one of them passes and says how many it set
//! aside, and one finding the base did not have fails it as before.

use serde::{Deserialize, Serialize};

use crate::annotation::{Annotation, Level};

/// A failing finding seen on the base.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Known {
    pub gate: String,
    pub path: String,
    pub message: String,
}

/// The failing findings of `gate` among `annotations`, as the baseline keeps them.
pub fn known(gate: &str, annotations: &[Annotation]) -> Vec<Known> {
    let mut out: Vec<Known> = annotations
        .iter()
        .filter(|a| a.level == Level::Failure)
        .map(|a| Known {
            gate: gate.to_owned(),
            path: a.path.clone(),
            message: a.message.clone(),
        })
        .collect();
    out.sort();
    out
}

/// A gate that fails on the base with nothing a parser names — it cannot run as called (a
/// configuration error, "Duplicate module named setup") — as the baseline keeps it: no path,
/// and its exit code with a digest of its output (the worktree's paths and every number left
/// out, so timings and counts do not tell two runs apart).
pub fn unparsed(gate: &str, exit: Option<i32>, output: &str, roots: &[&str]) -> Known {
    use sha2::Digest as _;
    let mut text = output.to_owned();
    for root in roots.iter().filter(|r| !r.is_empty()) {
        text = text.replace(root, "");
    }
    let mut hash = sha2::Sha256::new();
    let mut digits = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !digits {
                hash.update(b"#");
            }
            digits = true;
            continue;
        }
        digits = false;
        hash.update(c.encode_utf8(&mut [0; 4]).as_bytes());
    }
    let code = exit.map_or("none".to_owned(), |c| c.to_string());
    Known {
        gate: gate.to_owned(),
        path: String::new(),
        message: format!("exit {code}, output {}", hex::encode(&hash.finalize()[..8])),
    }
}

/// Whether `gate`, failing with no finding a parser names, fails as it did on the base (the
/// same exit code, the same output but for paths and numbers).
pub fn fails_as_on_base(
    gate: &str,
    exit: Option<i32>,
    output: &str,
    roots: &[&str],
    base: &[Known],
) -> bool {
    let now = unparsed(gate, exit, output, roots);
    base.contains(&now)
}

/// The failing findings of `gate` in `annotations` that the base did not have, counted: two
/// of the same on the base set aside two, not three.
pub fn new_findings<'a>(
    gate: &str,
    annotations: &'a [Annotation],
    base: &[Known],
) -> Vec<&'a Annotation> {
    let mut left: Vec<&Known> = base.iter().filter(|k| k.gate == gate).collect();
    annotations
        .iter()
        .filter(|a| a.level == Level::Failure)
        .filter(|a| {
            match left
                .iter()
                .position(|k| k.path == a.path && k.message == a.message)
            {
                Some(i) => {
                    left.swap_remove(i);
                    false
                }
                None => true,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mypy_stopped_by_a_duplicate_module_names_no_finding_a_parser_reads() {
        let out = include_str!("../../tests/fixtures/tool-output/mypy-duplicate-module.txt");
        let found = crate::gates::annotate::parse("typecheck", out, &["/work/"]);
        assert!(found.iter().all(|a| a.level != Level::Failure), "{found:?}");
    }

    #[test]
    fn a_gate_that_cannot_run_on_the_base_is_known_by_its_exit_and_output() {
        let base_out = "/work/docs/examples/setup.py: error: Duplicate module named \"setup\" (also at \"/work/setup.py\")\nFound 1 error in 1 file (checked 31 source files, 0.84 s)\n";
        let base = [unparsed("typecheck", Some(2), base_out, &["/work/"])];
        // The same failure in another worktree, with other counts and timings.
        let same = "/tmp/wt/docs/examples/setup.py: error: Duplicate module named \"setup\" (also at \"/tmp/wt/setup.py\")\nFound 1 error in 1 file (checked 32 source files, 1.02 s)\n";
        assert!(fails_as_on_base(
            "typecheck",
            Some(2),
            same,
            &["/tmp/wt/"],
            &base
        ));
        // Another exit code, another text, another gate: the change's.
        assert!(!fails_as_on_base(
            "typecheck",
            Some(1),
            same,
            &["/tmp/wt/"],
            &base
        ));
        let other = "/work/calc.py: error: invalid syntax\n";
        assert!(!fails_as_on_base(
            "typecheck",
            Some(2),
            other,
            &["/work/"],
            &base
        ));
        assert!(!fails_as_on_base(
            "lint",
            Some(2),
            base_out,
            &["/work/"],
            &base
        ));
    }

    fn a(path: &str, line: u32, message: &str) -> Annotation {
        Annotation::new(path, line, Level::Failure, message)
    }

    #[test]
    fn only_what_the_base_did_not_have_is_new_however_the_lines_moved() {
        let base = known(
            "lint",
            &[
                a("legacy.py", 1, "F401 'os' imported but unused"),
                a("legacy.py", 2, "F401 'os' imported but unused"),
                Annotation::new("legacy.py", 3, Level::Warning, "W291 trailing whitespace"),
            ],
        );
        assert_eq!(base.len(), 2);
        let now = [
            a("legacy.py", 11, "F401 'os' imported but unused"),
            a("legacy.py", 12, "F401 'os' imported but unused"),
        ];
        assert!(new_findings("lint", &now, &base).is_empty());
        // A third of the same, another file, another gate: new.
        let more = [
            a("legacy.py", 11, "F401 'os' imported but unused"),
            a("legacy.py", 12, "F401 'os' imported but unused"),
            a("legacy.py", 13, "F401 'os' imported but unused"),
            a("calc.py", 1, "F401 'os' imported but unused"),
        ];
        let fresh = new_findings("lint", &more, &base);
        assert_eq!(fresh.len(), 2, "{fresh:?}");
        assert!(new_findings("typecheck", &now, &base).len() == 2);
    }
}

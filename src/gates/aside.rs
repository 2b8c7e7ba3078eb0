//! What a failing gate holds against the change and what it sets aside: lint and typecheck
//! failures the base has too (its findings, or the same unparsed failure), and what the test
//! lock's put-backs mean for each gate.

use super::Status;
use super::expect::Expect;

/// A lint or typecheck gate that failed only on findings the base has too, or that fails
/// with nothing a parser names just as it did on the base, passes: the note that says so, or
/// `None` (another gate, a run that ended otherwise, one finding the base did not have, or a
/// failure of its own).
pub(super) fn set_aside(
    gate: &str,
    status: Status,
    (output, roots): (&crate::sandbox::CommandOutput, &[&str]),
    annotations: &[crate::annotation::Annotation],
    expect: &Expect,
) -> Option<String> {
    let ended_by_itself = !output.timed_out && !output.oom_killed && output.killed.is_none();
    if !matches!(gate, "lint" | "typecheck") || status != Status::Failed || !ended_by_itself {
        return None;
    }
    let failing = annotations
        .iter()
        .filter(|a| a.level == crate::annotation::Level::Failure)
        .count();
    let base = &expect.known_findings;
    if failing == 0 {
        let (exit, text) = (output.exit_code, output.output.as_str());
        return super::debt::fails_as_on_base(gate, exit, text, roots, base).then(|| {
            format!(
                "Failed as it does on the base before any change ({}, the same output), so it does not hold the change back: the command cannot run as called on this repository (`vibeloop gates --explain` says where it comes from; set `gates.{gate}` to fix it).",
                output.describe()
            )
        });
    }
    if !super::debt::new_findings(gate, annotations, base).is_empty() {
        return None;
    }
    Some(format!(
        "Passed on what the change adds: its {failing} finding(s) are all on the base too (the repository's, not the change's); fix them there to make this gate strict again."
    ))
}

/// What a gate's command did to the locked tests, put back after it: the test gate's run
/// cannot be trusted then (its tests were not the ones locked), another gate's tool only wrote
/// where it may not (a linter fixing in place). `None` when it left them alone.
pub(super) fn locked_changed(gate: &str, put_back: &[String]) -> Option<String> {
    if put_back.is_empty() {
        return None;
    }
    let files = put_back.join(", ");
    if gate == "test" && !steers_tests(put_back) {
        return Some(format!(
            "The test run left files among the locked tests; they were removed: {files}."
        ));
    }
    Some(if gate == "test" {
        format!(
            "{}, so its results are not the locked tests' and cannot be trusted: {files}. They were put back; neither the code nor the tests it runs may rewrite them.",
            super::LOCK_REFUSED
        )
    } else {
        format!(
            "The command changed the locked tests (a tool that writes in place); they were put back, so they stay as the Breaker wrote them: {files}."
        )
    })
}

/// Whether what was put back may have steered a test run: a locked file changed, or new code
/// or configuration among the tests. A data file a test left beside them did no harm (it was
/// removed).
pub(super) fn steers_tests(put_back: &[String]) -> bool {
    put_back
        .iter()
        .any(|line| match line.strip_suffix(" (new, removed)") {
            Some(path) => {
                let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
                const CODE: &[&str] = &[
                    "py", "pyi", "pth", "js", "mjs", "cjs", "ts", "mts", "cts", "jsx", "tsx", "rs",
                    "go", "toml", "ini", "cfg", "so",
                ];
                CODE.contains(&ext) || !path.contains('.')
            }
            None => true,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_changed_locked_file_or_new_code_among_the_tests_refuses_a_test_run() {
        assert_eq!(locked_changed("test", &[]), None);
        let data = locked_changed("test", &["tests/out.txt (new, removed)".into()]).unwrap();
        assert!(data.starts_with("The test run left files"), "{data}");
        for steering in [
            "tests/test_a.py",
            "tests/conftest.py (new, removed)",
            "tests/data.bin (not put back: passes through a symbolic link)",
        ] {
            let said = locked_changed("test", &[steering.into()]).unwrap();
            assert!(said.starts_with(super::super::LOCK_REFUSED), "{said}");
        }
        let lint = locked_changed("lint", &["tests/test_a.py".into()]).unwrap();
        assert!(
            lint.starts_with("The command changed the locked tests"),
            "{lint}"
        );
    }
}

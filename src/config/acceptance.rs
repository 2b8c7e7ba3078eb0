//! `acceptance:` in `.github/hive.yml`: the criteria a change must meet beyond passing gates,
//! checked after them as `hive/acceptance` (`crate::gates::acceptance`). All are off unless the
//! file turns them on: coverage of the changed lines and of the project (a share from 0 to 1;
//! the design's example is 0.8), no warnings in the build gate's output on the files the change
//! touches, and documentation on the public items it adds.

use serde::Deserialize;

/// Where a coverage command writes its reports, relative to the repository root: LCOV files
/// (`*.lcov`, `*.info`) and Go cover profiles (`*.out`). Removed before and after each run.
pub const COVERAGE_DIR: &str = ".vibeloop/coverage";

/// `acceptance:`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Acceptance {
    pub coverage: Coverage,
    /// The build gate reports no warning on a file the change touches.
    pub no_warnings: bool,
    /// Every public item the change adds is documented (Rust, Python, Go).
    pub docs: bool,
}

/// `acceptance.coverage:`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Coverage {
    /// The least share of the changed lines (outside the test paths) the tests run.
    pub changed_lines: Option<f64>,
    /// The least share of all the lines the coverage tool measures that the tests run.
    pub project: Option<f64>,
    /// Runs the tests under a coverage tool and writes its reports into [`COVERAGE_DIR`];
    /// detected per ecosystem when absent (coverage.py, cargo-llvm-cov or cargo-tarpaulin,
    /// `go test -coverprofile`, c8).
    pub command: Option<String>,
}

impl Coverage {
    /// Whether a threshold is set.
    pub fn is_on(&self) -> bool {
        self.changed_lines.is_some() || self.project.is_some()
    }
}

impl Acceptance {
    /// Whether any criterion is on: without one there is no `hive/acceptance` check.
    pub fn is_on(&self) -> bool {
        self.coverage.is_on() || self.no_warnings || self.docs
    }

    pub(super) fn check(&self) -> Result<(), String> {
        for (key, v) in [
            ("changed_lines", self.coverage.changed_lines),
            ("project", self.coverage.project),
        ] {
            if let Some(v) = v
                && !(0.0..=1.0).contains(&v)
            {
                return Err(format!(
                    "acceptance.coverage.{key}: {v} must be a share from 0 to 1 (0.8 is 80 %)"
                ));
            }
        }
        if self
            .coverage
            .command
            .as_deref()
            .is_some_and(|c| c.trim().is_empty())
        {
            return Err(
                "acceptance.coverage.command: empty command; remove the key for the detected one"
                    .into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::repo::HiveConfig;

    #[test]
    fn acceptance_is_off_by_default_and_parsed_strictly() {
        let d = HiveConfig::default();
        assert!(!d.acceptance.is_on());
        let c = HiveConfig::parse(
            "acceptance:\n  coverage:\n    changed_lines: 0.8\n  no_warnings: true\n  docs: true\n",
        )
        .unwrap();
        assert_eq!(c.acceptance.coverage.changed_lines, Some(0.8));
        assert!(c.acceptance.is_on() && c.acceptance.no_warnings && c.acceptance.docs);

        let e = HiveConfig::parse("acceptance:\n  coverage:\n    project: 80\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("acceptance.coverage.project: 80 must be a share from 0 to 1"),
            "{e}"
        );
        assert!(e.contains("(line 3)"), "{e}");
        let e = HiveConfig::parse("acceptance:\n  coverge: {}\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `coverge`"), "{e}");
    }
}

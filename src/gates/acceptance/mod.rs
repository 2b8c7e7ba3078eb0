//! The acceptance criteria (`acceptance:` in `.github/hive.yml`), checked after the gates as
//! one more result, `hive/acceptance`: coverage of the lines the change adds and of the project
//! ([`coverage`], measured by the ecosystem's tool in the sandbox, read here), no warning from
//! the build gate on a file the change touches, and documentation on the public items it adds
//! ([`docs`], read here on a parse tree). Each criterion says what was measured, the threshold
//! and the verdict; one unmet fails the check, and its findings go back to the Builder like a
//! failed gate's. A criterion that could not be measured says why and holds nothing back.

pub mod coverage;
pub mod docs;

use std::path::Path;
use std::time::{Duration, Instant};

use super::changes::{Changed, ranges};
use super::{GateError, GateResult, Inputs, Status};
use crate::annotation::{Annotation, Level};
use crate::config::repo::COVERAGE_DIR;
use coverage::LineHits;

/// The check's name after `hive/`.
pub const GATE: &str = "acceptance";

/// Title of the findings about lines no test runs.
const COVERAGE: &str = "coverage";

/// How a criterion went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Met,
    Unmet,
    /// The measure could not be taken (no tool, no build gate…); it holds nothing back.
    NotMeasured,
}

/// One criterion: what was measured against what.
#[derive(Debug, Clone, PartialEq)]
pub struct Criterion {
    pub name: &'static str,
    pub measured: String,
    pub threshold: String,
    pub verdict: Verdict,
}

impl Criterion {
    /// "Coverage of the changed lines: 62.5 % (5 of 8 lines); threshold 80 %: unmet."
    pub fn line(&self) -> String {
        let verdict = match self.verdict {
            Verdict::Met => "met",
            Verdict::Unmet => "unmet",
            Verdict::NotMeasured => "not measured",
        };
        format!(
            "{}: {}; threshold {}: {verdict}.",
            self.name, self.measured, self.threshold
        )
    }
}

/// "62.5 %".
fn percent(share: f64) -> String {
    let p = (share * 1000.0).round() / 10.0;
    format!("{p} %")
}

/// The criteria `inputs.config.acceptance` turns on, measured on the change, with the results
/// of the gates that ran before (the build gate's warnings).
pub async fn run(inputs: &Inputs<'_>, gates: &[GateResult]) -> Result<GateResult, GateError> {
    let started = Instant::now();
    let wanted = &inputs.config.acceptance;
    let (changed, items) = read_change(inputs, wanted.docs).await?;
    let mut criteria = Vec::new();
    let mut annotations = Vec::new();
    let mut command = None;
    if wanted.coverage.is_on() {
        command = wanted.coverage.command.clone();
        let hits = measure_coverage(inputs).await?;
        criteria.extend(coverage_criteria(inputs, &hits, &changed, &mut annotations));
    }
    if wanted.no_warnings {
        let pinned = inputs.config.gates.build.is_some();
        criteria.push(warnings(gates, &changed, pinned, &mut annotations));
    }
    if wanted.docs {
        criteria.push(documented(&items, &mut annotations));
    }
    let verdicts = |v: Verdict| criteria.iter().filter(|c| c.verdict == v).count();
    let status = if verdicts(Verdict::Unmet) > 0 {
        Status::Failed
    } else if verdicts(Verdict::Met) > 0 {
        Status::Passed
    } else {
        Status::Skipped
    };
    Ok(GateResult {
        gate: GATE,
        status,
        command,
        output: None,
        counts: None,
        failing: criteria
            .iter()
            .filter(|c| c.verdict == Verdict::Unmet)
            .map(Criterion::line)
            .collect(),
        annotations,
        notes: criteria.iter().map(Criterion::line).collect(),
        duration: started.elapsed(),
        check_run_url: None,
        verdicts: vec![],
        misses: vec![],
        held: None,
    })
}

/// The files the change touches and, when `docs`, the public items it adds with their file.
async fn read_change(
    inputs: &Inputs<'_>,
    docs: bool,
) -> Result<(Vec<Changed>, Vec<(String, docs::Item)>), GateError> {
    let git_dir = inputs.git_dir.to_owned();
    let tests = inputs.config.test_paths();
    let oid = |sha: &crate::ids::CommitSha| git2::Oid::from_str(sha.as_str());
    let (base, head) = (oid(inputs.base)?, oid(inputs.head)?);
    let read = tokio::task::spawn_blocking(move || {
        let repo = git2::Repository::open(&git_dir)?;
        let changed = super::changes::changed_files(&repo, base, head)?;
        let mut items = Vec::new();
        for f in changed.iter().filter(|f| docs && !tests.contains(&f.path)) {
            let new = repo.find_blob(f.blob)?;
            let old = f.old.map(|o| repo.find_blob(o)).transpose()?;
            let old = old.as_ref().map(|b| b.content());
            for item in docs::new_items(&f.path, old, new.content()) {
                items.push((f.path.clone(), item));
            }
        }
        Ok::<_, git2::Error>((changed, items))
    });
    Ok(read
        .await
        .map_err(|e| git2::Error::from_str(&format!("reading the change panicked: {e}")))??)
}

/// Runs the coverage command in the sandbox and reads what it wrote into [`COVERAGE_DIR`];
/// `Err` says why nothing could be measured.
async fn measure_coverage(inputs: &Inputs<'_>) -> Result<Result<LineHits, String>, GateError> {
    let Some(command) = &inputs.config.acceptance.coverage.command else {
        return Ok(Err(
            "no coverage command: none in .github/hive.yml and none detected for \
             this repository's ecosystems; set `acceptance.coverage.command`"
                .into(),
        ));
    };
    let timeout = Duration::from_secs(inputs.config.limits.timeout_seconds);
    let clear = format!("rm -rf {COVERAGE_DIR}");
    let run = format!("{clear} && mkdir -p {COVERAGE_DIR} && ({command})");
    let out = inputs.sandbox.exec(&run, timeout).await?;
    let read = if out.success() {
        read_reports(inputs.worktree, inputs.sandbox.root())
    } else {
        Err(format!(
            "the coverage command failed ({}); its last lines:\n{}",
            out.describe(),
            out.tail(6)
        ))
    };
    // What the tool wrote is no part of the change.
    let tidy = format!("{clear}; rmdir .vibeloop 2>/dev/null; true");
    inputs.sandbox.exec(&tidy, Duration::from_secs(60)).await?;
    Ok(read)
}

/// The LCOV files (`*.lcov`, `*.info`) and Go cover profiles (`*.out`) in the worktree's
/// [`COVERAGE_DIR`]; links are not followed.
fn read_reports(worktree: &Path, sandbox_root: String) -> Result<LineHits, String> {
    let dir = crate::sandbox::contained_path(worktree, COVERAGE_DIR)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("the coverage command removed {COVERAGE_DIR}"))?;
    let host_root = format!("{}/", worktree.display());
    let roots = [sandbox_root.as_str(), host_root.as_str()];
    let module = crate::untrusted::files::read_text(worktree, "go.mod", 1 << 20)
        .ok()
        .flatten()
        .and_then(|m| {
            m.lines().find_map(|l| {
                l.trim()
                    .strip_prefix("module ")
                    .map(|m| m.trim().to_owned())
            })
        });
    let mut hits = LineHits::default();
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{COVERAGE_DIR}: {e}"))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        if !meta.is_file() || meta.len() > 64 << 20 {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = format!("{COVERAGE_DIR}/{name}");
        let Ok(Some(text)) = crate::untrusted::files::read_text(worktree, &rel, 64 << 20) else {
            continue;
        };
        if name.ends_with(".lcov") || name.ends_with(".info") {
            hits.read_lcov(&text, &roots);
        } else if name.ends_with(".out") {
            hits.read_go_profile(&text, module.as_deref(), &roots);
        }
    }
    if hits.is_empty() {
        return Err(format!(
            "the coverage command wrote no report naming a file of this repository into \
             {COVERAGE_DIR} (LCOV as *.lcov or *.info, Go cover profiles as *.out)"
        ));
    }
    Ok(hits)
}

/// The coverage criteria that are on.
fn coverage_criteria(
    inputs: &Inputs<'_>,
    hits: &Result<LineHits, String>,
    changed: &[Changed],
    annotations: &mut Vec<Annotation>,
) -> Vec<Criterion> {
    let wanted = &inputs.config.acceptance.coverage;
    let mut out = Vec::new();
    let criterion = |name, measured: String, threshold: f64, verdict| Criterion {
        name,
        measured,
        threshold: percent(threshold),
        verdict,
    };
    let met = |share: f64, threshold: f64| {
        if share + 1e-9 >= threshold {
            Verdict::Met
        } else {
            Verdict::Unmet
        }
    };
    if let Some(threshold) = wanted.changed_lines {
        const NAME: &str = "Coverage of the changed lines";
        match hits {
            Err(why) => out.push(criterion(
                NAME,
                why.clone(),
                threshold,
                Verdict::NotMeasured,
            )),
            Ok(hits) => {
                let m = coverage::of_change(hits, changed, &inputs.config.test_paths());
                let unreported = if m.unreported.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; not in the coverage report, so not counted: {}",
                        m.unreported.join(", ")
                    )
                };
                if m.measured == 0 {
                    let measured = format!("no line the change adds is measured{unreported}");
                    out.push(criterion(NAME, measured, threshold, Verdict::Met));
                } else {
                    let share = m.run as f64 / m.measured as f64;
                    let measured = format!(
                        "{} ({} of {} lines){unreported}",
                        percent(share),
                        m.run,
                        m.measured
                    );
                    let verdict = met(share, threshold);
                    out.push(criterion(NAME, measured, threshold, verdict));
                    if verdict == Verdict::Unmet {
                        for (path, lines) in &m.missed {
                            let message = format!(
                                "Line(s) {} that the change adds are run by no test: add a test that runs them, or remove them if nothing needs them.",
                                ranges(lines)
                            );
                            let mut a = Annotation::new(path, lines[0], Level::Failure, message)
                                .with_title(COVERAGE);
                            a.end_line = *lines.last().unwrap_or(&lines[0]);
                            annotations.push(a);
                        }
                    }
                }
            }
        }
    }
    if let Some(threshold) = wanted.project {
        const NAME: &str = "Coverage of the project";
        out.push(match hits {
            Err(why) => criterion(NAME, why.clone(), threshold, Verdict::NotMeasured),
            Ok(hits) => {
                let (run, all) = hits.totals();
                let share = run as f64 / all.max(1) as f64;
                let measured = format!("{} ({run} of {all} lines)", percent(share));
                criterion(NAME, measured, threshold, met(share, threshold))
            }
        });
    }
    out
}

/// No warning from the build gate on a file the change touches.
fn warnings(
    gates: &[GateResult],
    changed: &[Changed],
    has_build: bool,
    annotations: &mut Vec<Annotation>,
) -> Criterion {
    const NAME: &str = "Build warnings on the files the change touches";
    let threshold = "none".to_owned();
    let build = gates
        .iter()
        .find(|g| g.gate == "build")
        .filter(|g| !g.is_skipped());
    let Some(build) = build else {
        return Criterion {
            name: NAME,
            measured: if has_build {
                "the build gate did not run with this check (re-run every gate)".into()
            } else {
                "no build gate ran (set `gates.build`)".into()
            },
            threshold,
            verdict: Verdict::NotMeasured,
        };
    };
    let all: Vec<&Annotation> = build
        .annotations
        .iter()
        .filter(|a| a.level == Level::Warning)
        .collect();
    let touched: Vec<&Annotation> = all
        .iter()
        .copied()
        .filter(|a| changed.iter().any(|c| c.path == a.path))
        .collect();
    annotations.extend(touched.iter().map(|a| (*a).clone()));
    Criterion {
        name: NAME,
        measured: format!("{} ({} in the whole build)", touched.len(), all.len()),
        threshold,
        verdict: if touched.is_empty() {
            Verdict::Met
        } else {
            Verdict::Unmet
        },
    }
}

/// Every public item the change adds is documented.
fn documented(items: &[(String, docs::Item)], annotations: &mut Vec<Annotation>) -> Criterion {
    let missing: Vec<&(String, docs::Item)> = items.iter().filter(|(_, i)| !i.documented).collect();
    for (path, item) in &missing {
        let how = match path.rsplit_once('.').map(|(_, e)| e) {
            Some("rs") => "a `///` comment above it",
            Some("py") => "a docstring as its first statement",
            _ => "a comment right above it that starts with its name",
        };
        let message = format!(
            "`{}` is new and public but undocumented: add {how} saying what it does.",
            item.name
        );
        annotations.push(
            Annotation::new(path, item.line, Level::Failure, message).with_title("documentation"),
        );
    }
    Criterion {
        name: "Documentation of new public items",
        measured: if items.is_empty() {
            "the change adds no public item (Rust, Python and Go are read)".into()
        } else {
            format!(
                "{} of {} documented",
                items.len() - missing.len(),
                items.len()
            )
        },
        threshold: "all".into(),
        verdict: if missing.is_empty() {
            Verdict::Met
        } else {
            Verdict::Unmet
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build_with(annotations: Vec<Annotation>) -> GateResult {
        let mut g = GateResult::skipped("build", "");
        g.status = Status::Passed;
        g.annotations = annotations;
        g
    }

    fn changed(path: &str) -> Changed {
        Changed {
            path: path.into(),
            blob: git2::Oid::zero(),
            old: None,
            added: vec![1],
        }
    }

    #[test]
    fn warnings_count_on_touched_files_only_and_need_a_build_gate() {
        let w = |p: &str| Annotation::new(p, 3, Level::Warning, "unused variable `x`");
        let gates = [build_with(vec![
            w("src/lib.rs"),
            w("src/old.rs"),
            Annotation::new("src/lib.rs", 4, Level::Notice, "help: prefix it"),
        ])];
        let mut found = vec![];
        let c = warnings(&gates, &[changed("src/lib.rs")], true, &mut found);
        assert_eq!(c.verdict, Verdict::Unmet);
        assert_eq!(
            c.line(),
            "Build warnings on the files the change touches: 1 (2 in the whole build); threshold none: unmet."
        );
        assert_eq!(found.len(), 1);
        let c = warnings(&gates, &[changed("README.md")], true, &mut vec![]);
        assert_eq!(c.verdict, Verdict::Met);
        let c = warnings(&[GateResult::skipped("build", "")], &[], false, &mut vec![]);
        assert_eq!(c.verdict, Verdict::NotMeasured);
        assert!(c.measured.contains("set `gates.build`"), "{}", c.measured);
    }

    #[test]
    fn undocumented_items_become_findings_with_the_language_s_way_to_document() {
        let item = |name: &str, documented| docs::Item {
            name: name.into(),
            line: 7,
            documented,
        };
        let items = [
            ("src/lib.rs".to_owned(), item("sub", false)),
            ("src/lib.rs".to_owned(), item("add", true)),
            ("calc.py".to_owned(), item("mul", false)),
        ];
        let mut found = vec![];
        let c = documented(&items, &mut found);
        assert_eq!(c.verdict, Verdict::Unmet);
        assert_eq!(c.measured, "1 of 3 documented");
        assert!(found[0].message.contains("`///`"), "{}", found[0].message);
        assert!(
            found[1].message.contains("docstring"),
            "{}",
            found[1].message
        );
        assert_eq!(documented(&[], &mut vec![]).verdict, Verdict::Met);
    }

    #[test]
    fn shares_read_as_percentages() {
        assert_eq!(percent(0.625), "62.5 %");
        assert_eq!(percent(0.8), "80 %");
        assert_eq!(percent(1.0 / 3.0), "33.3 %");
    }
}

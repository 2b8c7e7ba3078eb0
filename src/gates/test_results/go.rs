//! `go test -v`: `--- PASS: TestX (0.00s)`, `--- FAIL: …`, `--- SKIP: …` (subtests indented,
//! named `TestX/case`), each package's closing line (`ok  \tpkg\t0.1s`, `FAIL\tpkg\t0.1s`) that
//! names the package of the tests above it, and a package whose tests did not build (`# pkg
//! [pkg.test]`, its `./x_test.go:6:8: undefined: NewThing` lines, `FAIL\tpkg [build failed]`).
//! `go test` prints each package's output whole, so the lines above a closing line are its own.

use super::{Case, Outcome, TestRun, Unloaded};

/// The lines `go test`'s reader reads: verdicts, packages' closing lines and headers, build
/// errors, and the logs a skip's reason is in (`    x_test.go:5: why`).
pub(super) fn keeps(line: &str) -> bool {
    let t = line.trim_start();
    ["--- ", "ok ", "FAIL", "? ", "# "]
        .iter()
        .any(|p| t.starts_with(p))
        || (!line.starts_with(' ') && is_build_error(t))
        || (line.starts_with("    ") && t.split_once(".go:").is_some_and(|(f, _)| !f.contains(' ')))
}

pub(super) fn go_test(lines: &[&str]) -> Option<TestRun> {
    let mut run = TestRun::default();
    let mut seen = false;
    // Cases of the package being printed (named when its closing line comes), its last log
    // line (a skip's reason), and the build errors printed since the last `# pkg` header.
    let mut open = 0;
    let mut last_log = String::new();
    let mut errors: Vec<String> = Vec::new();
    for l in lines {
        let t = l.trim_start();
        let verdict = [
            ("--- PASS: ", Outcome::Passed),
            ("--- FAIL: ", Outcome::Failed),
            ("--- SKIP: ", Outcome::Skipped),
        ]
        .into_iter()
        .find_map(|(p, o)| Some((t.strip_prefix(p)?, o)));
        if let Some((rest, outcome)) = verdict {
            let name = rest.split_whitespace().next().unwrap_or_default();
            let why = if outcome == Outcome::Skipped {
                last_log.as_str()
            } else {
                ""
            };
            run.cases.push(Case::new(name, None, outcome).because(why));
            seen = true;
            continue;
        }
        if let Some(pkg) = closing(t) {
            seen = true;
            let pkg = pkg.to_owned();
            if t.ends_with("[build failed]") || t.ends_with("[setup failed]") {
                run.unloaded.push(Unloaded {
                    unit: pkg.clone(),
                    why: std::mem::take(&mut errors),
                });
            }
            for c in &mut run.cases[open..] {
                c.unit = Some(pkg.clone());
            }
            open = run.cases.len();
            continue;
        }
        if t.starts_with("? ") && t.ends_with("[no test files]") {
            seen = true;
        } else if t.starts_with("# ") {
            errors.clear();
        } else if !l.starts_with(' ') && is_build_error(t) {
            errors.push(t.to_owned());
        } else if l.starts_with("    ") && !t.starts_with("=== ") {
            last_log = t.to_owned();
        }
    }
    if !seen {
        return None;
    }
    run.count_cases();
    Some(run)
}

/// The package a closing line names: `ok  \tpkg\t0.1s`, `FAIL\tpkg\t0.1s`,
/// `FAIL\tpkg [build failed]`.
fn closing(t: &str) -> Option<&str> {
    let rest = t.strip_prefix("ok ").or_else(|| t.strip_prefix("FAIL\t"))?;
    let pkg = rest.split_whitespace().next()?;
    (!pkg.is_empty() && !pkg.starts_with('[')).then_some(pkg)
}

/// `./calc_test.go:6:8: undefined: NewThing`, `sub/x_test.go:3:2: …`.
fn is_build_error(t: &str) -> bool {
    let Some((file, rest)) = t.split_once(".go:") else {
        return false;
    };
    !file.contains(' ')
        && rest
            .split(':')
            .next()
            .is_some_and(|n| n.parse::<u32>().is_ok())
}

//! The red proof's verdicts on real runners' output, captured in our images.

use super::*;

fn out(code: i32, text: &str) -> CommandOutput {
    CommandOutput::exited(code, text)
}

/// A checkout with a Python package, a Rust crate, a Go package and a Node module.
fn checkout() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (file, text) in [
        ("pkg/calc.py", "def add(a, b):\n    return a + b\n"),
        ("Cargo.toml", "[package]\nname = \"calc\"\n"),
        ("go.mod", "module example.com/calc\n"),
        (
            "calc_test.go",
            "package calc\n\nfunc TestNewThing(t *testing.T) {}\n",
        ),
        ("calc.mjs", "export const add = (a, b) => a + b;\n"),
        (
            "test/new.test.mjs",
            "import { mul } from '../calc.mjs';\ntest('mul multiplies', () => {});\n",
        ),
    ] {
        std::fs::create_dir_all(dir.path().join(file).parent().unwrap()).unwrap();
        std::fs::write(dir.path().join(file), text).unwrap();
    }
    git2::Repository::init(dir.path()).unwrap();
    dir
}

const PLAN: &str =
    "Add new_function to pkg/calc.py; calc::new_function in Rust; NewThing in Go; mul in calc.mjs.";

fn proving<'a>(
    root: &'a Path,
    files: &'a [String],
    known: &'a [String],
    plan: &'a str,
) -> Proving<'a> {
    Proving {
        known,
        files,
        plan,
        root,
        report: None,
    }
}

fn classify(o: &CommandOutput, p: &Proving<'_>) -> Verdict {
    super::classify(o, TestRun::read(&o.output), p)
}

/// The wanted tests without how they went on the base.
fn bare(v: &Verdict) -> Vec<Wanted> {
    v.wanted()
        .iter()
        .map(|w| Wanted {
            base: None,
            ..w.clone()
        })
        .collect()
}

fn verdict(text: &str, code: i32, files: &[&str], plan: &str) -> Verdict {
    let dir = checkout();
    let files: Vec<String> = files.iter().map(|f| (*f).to_owned()).collect();
    classify(&out(code, text), &proving(dir.path(), &files, &[], plan))
}

#[test]
fn failures_only_where_the_base_already_failed_prove_nothing() {
    let dir = checkout();
    let o = out(
        1,
        "FAILED tests/test_a.py::test_old - x\n== 1 failed, 1 passed in 0.1s ==",
    );
    let files = ["tests/test_a.py".to_owned()];
    let known = ["tests/test_a.py::test_old".to_owned()];
    assert_eq!(
        classify(&o, &proving(dir.path(), &files, &known, "")),
        Verdict::Green
    );
    let v = classify(&o, &proving(dir.path(), &files, &[], ""));
    assert!(v.holds());
    assert_eq!(
        bare(&v),
        [
            Wanted::every_test_of("tests/test_a.py"),
            Wanted::test("tests/test_a.py::test_old", Some("tests/test_a.py")),
        ]
    );
    let bases: Vec<_> = v.wanted().iter().map(|w| w.base.as_deref()).collect();
    assert_eq!(bases, [Some("1 of 1 failed"), Some("failed: x")]);
}

#[test]
fn failures_as_tests_hold_and_are_wanted_by_name() {
    let v = verdict(
        runner_output!("pytest-attribute-new-name"),
        1,
        &["tests/test_new.py"],
        "",
    );
    let Verdict::Red { failed, total, .. } = &v else {
        panic!("{v:?}")
    };
    assert_eq!((*failed, *total), (1, 2));
    assert_eq!(
        v.describe(),
        "holds: 1 of 2 tests fail on the base, as they should"
    );
    let unittest = "test_add (tests.test_calc.CalcTest.test_add) ... ok\ntest_add_fails (tests.test_calc.CalcTest.test_add_fails) ... FAIL\n\nRan 2 tests in 0.001s\n\nFAILED (failures=1)\n";
    let v = verdict(unittest, 1, &["tests/test_calc.py"], "");
    assert_eq!(
        bare(&v),
        [
            Wanted::every_test_of("tests/test_calc.py"),
            Wanted::test(
                "tests.test_calc.CalcTest.test_add_fails",
                Some("tests/test_calc.py")
            ),
        ]
    );
    // Node names a passing test by its title alone: its file is never wanted whole.
    let node = verdict(
        runner_output!("node-mixed-tap"),
        1,
        &["test/calc.test.js"],
        "",
    );
    assert_eq!(
        bare(&node),
        [
            Wanted::test("math > nested > mul fails", Some("test/calc.test.js")),
            Wanted::test("splits", Some("test/calc.test.js")),
        ]
    );
    // A test that errors (not fails) proves nothing.
    let v = verdict(
        runner_output!("unittest-mixed-v"),
        1,
        &["tests/test_calc.py"],
        "",
    );
    assert!(matches!(v, Verdict::Broken { .. }), "{v:?}");
}

#[test]
fn a_test_of_a_name_the_plan_adds_is_red_in_every_language() {
    let py = verdict(
        runner_output!("pytest-import-new-name"),
        2,
        &["tests/test_new.py"],
        PLAN,
    );
    assert_eq!(
        py.describe(),
        "holds: tests/test_new.py cannot load yet: `new_function` is not in pkg.calc, as they should"
    );
    assert_eq!(bare(&py), [Wanted::every_test_of("tests/test_new.py")]);
    assert_eq!(
        py.wanted()[0].base.as_deref(),
        Some("could not load: `new_function` is not in pkg.calc")
    );
    let unittest = verdict(
        runner_output!("unittest-import-error-v"),
        1,
        &["tests/test_new.py"],
        PLAN,
    );
    assert_eq!(
        bare(&unittest),
        [Wanted::every_test_of("tests/test_new.py")]
    );
    let rust = verdict(
        runner_output!("cargo-compile-e0425"),
        101,
        &["tests/new.rs"],
        PLAN,
    );
    assert_eq!(bare(&rust), [Wanted::every_test_of("tests/new.rs")]);
    // Go and Node cannot say which file a passing test is in: the file's tests by name.
    let go = verdict(runner_output!("go-undefined"), 1, &["calc_test.go"], PLAN);
    assert_eq!(bare(&go), [Wanted::test("TestNewThing", None)], "{go:?}");
    let node = verdict(
        runner_output!("node-missing-export-esm"),
        1,
        &["test/new.test.mjs"],
        PLAN,
    );
    assert!(node.holds(), "{node:?}");
    assert!(
        bare(&node).contains(&Wanted::test("mul multiplies", None)),
        "{node:?}"
    );
    // The other package's and file's passing tests are not the Breaker's.
    assert!(
        !go.wanted()
            .iter()
            .any(|w| w.name.as_deref() == Some("TestMul"))
    );
}

#[test]
fn a_name_the_plan_never_mentions_or_a_broken_test_proves_nothing() {
    let v = verdict(
        runner_output!("pytest-import-new-name"),
        2,
        &["tests/test_new.py"],
        "Fix add.",
    );
    let Verdict::Broken { reason } = &v else {
        panic!("{v:?}")
    };
    assert!(
        reason.contains(
            "`new_function` is not in pkg.calc, and the plan does not say it will be added"
        ),
        "{reason}"
    );
    for (text, code, file) in [
        (
            runner_output!("pytest-syntax-error"),
            2,
            "tests/test_broken.py",
        ),
        (
            runner_output!("pytest-missing-third-party"),
            2,
            "tests/test_props.py",
        ),
        (
            runner_output!("pytest-fixture-error"),
            1,
            "tests/test_fix.py",
        ),
        (runner_output!("pytest-os-exit"), 0, "tests/test_new.py"),
        ("sh: 1: pytest: not found", 127, "tests/test_new.py"),
    ] {
        let v = verdict(text, code, &[file], PLAN);
        assert!(matches!(v, Verdict::Broken { .. }), "{file}: {v:?}");
    }
    let fixture = verdict(
        runner_output!("pytest-fixture-error"),
        1,
        &["tests/test_fix.py"],
        PLAN,
    );
    assert!(fixture.describe().contains("`tests/test_fix.py::test_uses_db` errored before its assertions (RuntimeError: database unavailable)"), "{}", fixture.describe());
}

#[test]
fn passing_or_killed_tests_do_not_hold() {
    assert_eq!(
        verdict("PASSED t.py::test_a\n1 passed in 0.1s", 0, &["t.py"], ""),
        Verdict::Green
    );
    let mut t = out(0, "");
    t.timed_out = true;
    let dir = checkout();
    assert!(matches!(
        classify(&t, &proving(dir.path(), &[], &[], "")),
        Verdict::Broken { .. }
    ));
}

/// The baseline's report, left in the worktree the proof runs in: it says the new test passed
/// on the base. A run that writes none must not be judged by it.
#[tokio::test]
async fn a_report_the_run_did_not_write_is_not_read() {
    let dir = checkout();
    let stale = r#"<testsuite name="s" tests="1"><testcase classname="test_new" name="test_new_function" file="pkg/test_new.py"/></testsuite>"#;
    std::fs::write(dir.path().join("report.xml"), stale).unwrap();
    let spec = crate::sandbox::SandboxSpec::probe("unused", dir.path(), "redproof-report", false);
    let sandbox = crate::sandbox::Backend::Local.start(&spec).await.unwrap();
    let files = vec!["pkg/test_new.py".to_owned()];
    let mut p = proving(dir.path(), &files, &[], PLAN);
    p.report = Some("report.xml");
    let (verdict, _) = run(&sandbox, "exit 1", Duration::from_secs(30), &p)
        .await
        .unwrap();
    assert!(!dir.path().join("report.xml").exists());
    // Judged as a run that wrote no report is.
    let clean = checkout();
    let spec = crate::sandbox::SandboxSpec::probe("unused", clean.path(), "redproof-clean", false);
    let sandbox = crate::sandbox::Backend::Local.start(&spec).await.unwrap();
    let mut p = proving(clean.path(), &files, &[], PLAN);
    p.report = Some("report.xml");
    let (without, _) = run(&sandbox, "exit 1", Duration::from_secs(30), &p)
        .await
        .unwrap();
    assert_eq!(verdict, without);
}

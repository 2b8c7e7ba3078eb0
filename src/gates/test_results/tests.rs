//! The readers on real output, captured from the runners in our images
//! (`tests/fixtures/tool-output/runners/`, see its README), and on short made-up lines.

use super::*;

fn counts(passed: u64, failed: u64, errors: u64, skipped: u64) -> TestCounts {
    TestCounts {
        passed,
        failed,
        errors,
        skipped,
    }
}

/// `(name, unit, outcome)` of every case.
fn cases(run: &TestRun) -> Vec<(&str, Option<&str>, Outcome)> {
    run.cases
        .iter()
        .map(|c| (c.name.as_str(), c.unit.as_deref(), c.outcome))
        .collect()
}

use Outcome::{Error, Failed, Passed, Skipped};

#[test]
fn pytest_names_every_test_with_ra_and_with_v() {
    let want = [
        ("tests/test_calc.py::test_add", Passed),
        ("tests/test_calc.py::test_add_param[1-2-3]", Passed),
        ("tests/test_calc.py::TestX::test_y", Passed),
        ("tests/test_calc.py::test_xfail", Skipped),
        ("tests/test_calc.py::test_sub_fails", Failed),
        ("tests/test_calc.py::test_add_param[2-2-5]", Failed),
    ];
    let ra = TestRun::read(runner_output!("pytest-mixed-rA")).unwrap();
    assert_eq!(ra.counts, counts(3, 2, 0, 2));
    for (name, outcome) in want {
        let c = ra.named(name).next().unwrap_or_else(|| panic!("{name}"));
        assert_eq!(
            (c.unit.as_deref(), c.outcome),
            (Some("tests/test_calc.py"), outcome)
        );
    }
    assert_eq!(ra.cases.len(), 6);
    assert_eq!(ra.skips[0].place, "tests/test_calc.py:14");
    assert_eq!(ra.skips[0].why, "later");
    assert_eq!(
        ra.failing,
        [
            "tests/test_calc.py::test_sub_fails",
            "tests/test_calc.py::test_add_param[2-2-5]"
        ]
    );
    let v = TestRun::read(runner_output!("pytest-mixed-v")).unwrap();
    assert_eq!(v.cases.len(), 7, "{:?}", cases(&v));
    let skipped = v.named("tests/test_calc.py::test_skipped").next().unwrap();
    assert_eq!(
        (skipped.outcome, skipped.why.as_deref()),
        (Skipped, Some("later"))
    );
    assert_eq!(v.counts, counts(3, 2, 0, 2));
}

#[test]
fn pytest_modules_that_cannot_be_collected_are_unloaded_with_their_reason() {
    let run = TestRun::read(runner_output!("pytest-import-new-name")).unwrap();
    assert!(run.cases.is_empty());
    assert_eq!(run.unloaded.len(), 1);
    assert_eq!(run.unloaded[0].unit, "tests/test_new.py");
    assert_eq!(
        run.unloaded[0].why,
        ["ImportError: cannot import name 'new_function' from 'pkg.calc' (/work/pkg/calc.py)"]
    );
    assert_eq!(run.counts.errors, 1);
    let syntax = TestRun::read(runner_output!("pytest-syntax-error")).unwrap();
    assert_eq!(syntax.unloaded[0].unit, "tests/test_broken.py");
    assert!(
        syntax.unloaded[0]
            .why
            .iter()
            .any(|l| l == "SyntaxError: invalid syntax")
    );
    let fixture = TestRun::read(runner_output!("pytest-fixture-error")).unwrap();
    let c = fixture
        .named("tests/test_fix.py::test_uses_db")
        .next()
        .unwrap();
    assert_eq!(c.outcome, Error);
    assert_eq!(c.why.as_deref(), Some("RuntimeError: database unavailable"));
}

#[test]
fn pytest_runs_that_skip_deselect_or_exit_early_name_nothing_they_hid() {
    let skipped = TestRun::read(runner_output!("pytest-conftest-skip-all")).unwrap();
    assert!(skipped.cases.is_empty());
    assert_eq!(skipped.counts, counts(0, 0, 0, 2));
    assert_eq!(skipped.skips[0].place, "tests/test_calc.py");
    assert_eq!(skipped.skips[0].why, "skipped by conftest");
    let deselected = TestRun::read(runner_output!("pytest-deselect")).unwrap();
    assert_eq!(
        cases(&deselected).iter().map(|c| c.0).collect::<Vec<_>>(),
        [
            "tests/test_calc.py::test_add",
            "tests/test_new.py::test_other"
        ]
    );
    assert_eq!(TestRun::read(runner_output!("pytest-os-exit")), None);
}

#[test]
fn unittest_verbose_names_each_test_and_modules_it_could_not_import() {
    let run = TestRun::read(runner_output!("unittest-mixed-v")).unwrap();
    let unit = Some("tests/test_calc.py");
    assert_eq!(
        cases(&run),
        [
            ("tests.test_calc.CalcTest.test_add", unit, Passed),
            ("tests.test_calc.CalcTest.test_add_fails", unit, Failed),
            ("tests.test_calc.CalcTest.test_documented", unit, Passed),
            ("tests.test_calc.CalcTest.test_error", unit, Error),
            (
                "tests.test_calc.CalcTest.test_expected_failure",
                unit,
                Skipped
            ),
            ("tests.test_calc.CalcTest.test_skipped", unit, Skipped),
            (
                "tests.test_calc.CalcTest.test_unexpected_success",
                unit,
                Failed
            ),
        ]
    );
    assert_eq!(run.counts, counts(2, 2, 1, 2));
    let import = TestRun::read(runner_output!("unittest-import-error-v")).unwrap();
    assert_eq!(import.unloaded[0].unit, "tests/test_new.py");
    assert_eq!(
        import.unloaded[0].why,
        ["ImportError: cannot import name 'new_function' from 'pkg.calc' (/work/pkg/calc.py)"]
    );
    // What a test printed to stderr comes between its name and its result.
    let warned = "test_b (t.T.test_b) ... /work/t.py:7: ResourceWarning: unclosed file\n  text = open('r').read()\nResourceWarning: Enable tracemalloc\nok\n\n----\nRan 1 test in 0.001s\n\nOK";
    let r = TestRun::read(warned).unwrap();
    assert_eq!(cases(&r), [("t.T.test_b", Some("t.py"), Passed)]);
    // Without -v, the failures alone are named; older Pythons name the class only.
    let out =
        "FAIL: test_add (test_calc.CalcTest)\n----\nRan 3 tests in 0.001s\n\nFAILED (failures=1)";
    let r = TestRun::read(out).unwrap();
    assert_eq!(r.counts, counts(2, 1, 0, 0));
    assert_eq!(r.failing, ["test_calc.CalcTest.test_add"]);
}

#[test]
fn libtest_names_tests_by_target_and_rustc_errors_unload_theirs() {
    let run = TestRun::read(runner_output!("cargo-no-fail-fast")).unwrap();
    assert_eq!(
        cases(&run),
        [
            ("tests::unit_add", Some("src/lib.rs"), Passed),
            ("a_ignored", Some("tests/a.rs"), Skipped),
            ("a_fails", Some("tests/a.rs"), Failed),
            ("a_passes", Some("tests/a.rs"), Passed),
            ("b_passes", Some("tests/b.rs"), Passed),
            ("src/lib.rs - add (line 3)", Some("doc-tests calc"), Passed),
        ]
    );
    assert_eq!(run.counts, counts(4, 1, 0, 1));
    assert_eq!(run.failing, ["a_fails"]);
    // What a test printed (under --nocapture) comes between its name and its result.
    let printed = "running 1 test\ntest talks ... hello from the test\nok\n\ntest result: ok. 1 passed; 0 failed;";
    let r = TestRun::read(printed).unwrap();
    assert_eq!(cases(&r), [("talks", None, Passed)]);
    for (name, error) in [
        (
            runner_output!("cargo-compile-e0425"),
            "error[E0425]: cannot find function `new_function` in crate `calc` (tests/new.rs:3:22)",
        ),
        (
            runner_output!("cargo-compile-e0599"),
            "error[E0599]: no method named `missing` found for struct `Thing` in the current scope (tests/new.rs:3:35)",
        ),
        (
            runner_output!("cargo-compile-e0432"),
            "error[E0432]: unresolved import `calc::missing_item` (tests/new.rs:1:5)",
        ),
        (
            runner_output!("cargo-compile-e0433"),
            "error[E0433]: failed to resolve: could not find `missing_mod` in `calc` (tests/new.rs:3:22)",
        ),
        (
            runner_output!("cargo-compile-e0412"),
            "error[E0412]: cannot find type `MissingType` in crate `calc` (tests/new.rs:3:18)",
        ),
    ] {
        let run = TestRun::read(name).unwrap();
        assert!(run.cases.is_empty());
        assert_eq!(run.unloaded.len(), 1);
        assert_eq!(run.unloaded[0].unit, "tests/new.rs");
        assert_eq!(run.unloaded[0].why, [error]);
    }
}

#[test]
fn go_names_tests_by_package_and_unloads_packages_that_do_not_build() {
    let run = TestRun::read(runner_output!("go-mixed-v")).unwrap();
    let (root, sub) = (Some("example.com/calc"), Some("example.com/calc/sub"));
    assert_eq!(
        cases(&run),
        [
            ("TestAdd", root, Passed),
            ("TestAddFails", root, Failed),
            ("TestSkipped", root, Skipped),
            ("TestTable", root, Failed),
            ("TestTable/small", root, Passed),
            ("TestTable/big", root, Failed),
            ("TestMul", sub, Passed),
            ("TestMulFails", sub, Failed),
        ]
    );
    assert_eq!(
        run.named("TestSkipped").next().unwrap().why.as_deref(),
        Some("calc_test.go:18: later")
    );
    let undefined = TestRun::read(runner_output!("go-undefined")).unwrap();
    assert_eq!(cases(&undefined), [("TestMul", sub, Passed)]);
    assert_eq!(undefined.unloaded.len(), 1);
    assert_eq!(undefined.unloaded[0].unit, "example.com/calc");
    assert_eq!(
        undefined.unloaded[0].why,
        ["./calc_test.go:6:8: undefined: NewThing"]
    );
    let method = TestRun::read(runner_output!("go-undefined-method")).unwrap();
    assert_eq!(
        method.unloaded[0].why,
        ["./calc_test.go:7:8: th.Triple undefined (type Thing has no field or method Triple)"]
    );
}

#[test]
fn node_tap_and_spec_name_tests_under_their_suites() {
    let want = [
        ("adds", Passed),
        ("splits", Failed),
        ("later", Skipped),
        ("someday", Skipped),
        ("math > mul", Passed),
        ("math > nested > mul fails", Failed),
        ("adds zero", Passed),
    ];
    for text in [
        runner_output!("node-mixed-default"),
        runner_output!("node-mixed-tap"),
        runner_output!("node-mixed-spec"),
    ] {
        let run = TestRun::read(text).unwrap();
        let got: Vec<(&str, Outcome)> = run
            .cases
            .iter()
            .map(|c| (c.name.as_str(), c.outcome))
            .collect();
        assert_eq!(got, want, "{text}");
        assert_eq!(run.counts, counts(3, 2, 0, 2));
    }
    let tap = TestRun::read(runner_output!("node-mixed-tap")).unwrap();
    let splits = tap.named("splits").next().unwrap();
    assert_eq!(splits.unit.as_deref(), Some("test/calc.test.js"));
}

#[test]
fn node_files_that_cannot_load_are_unloaded_with_their_reason() {
    let esm = TestRun::read(runner_output!("node-missing-export-esm")).unwrap();
    assert_eq!(cases(&esm), [("adds", None, Passed)]);
    assert_eq!(esm.unloaded[0].unit, "test/new.test.mjs");
    assert_eq!(
        esm.unloaded[0].why,
        ["SyntaxError: The requested module '../calc.mjs' does not provide an export named 'mul'"]
    );
    let spec = TestRun::read(runner_output!("node-missing-export-esm-spec")).unwrap();
    assert_eq!(spec.unloaded[0].unit, "test/new.test.mjs");
    let cjs = TestRun::read(runner_output!("node-not-a-function-cjs")).unwrap();
    let mul = cjs.named("mul").next().unwrap();
    assert_eq!(mul.outcome, Failed);
    assert_eq!(
        mul.why.as_deref(),
        Some("require(...).mul is not a function")
    );
    let missing = TestRun::read(runner_output!("node-cannot-find-module")).unwrap();
    assert_eq!(missing.unloaded[0].unit, "test/dep.test.js");
    assert_eq!(missing.unloaded[0].why, ["Error: Cannot find module 'zod'"]);
}

#[test]
fn jest_and_vitest() {
    let jest = "PASS test/a.test.js\n  math\n    ✓ adds (2 ms)\n    ✕ subs (1 ms)\n    ○ skipped later\nFAIL test/b.test.js\n  ● Test suite failed to run\n\n    Cannot find module '../b'\n\n  ● math › subs\n\nTests:       1 failed, 1 skipped, 1 passed, 3 total\nSnapshots:   0 total";
    let r = TestRun::read(jest).unwrap();
    let unit = Some("test/a.test.js");
    assert_eq!(
        cases(&r),
        [
            ("math > adds", unit, Passed),
            ("math > subs", unit, Failed),
            ("math > later", unit, Skipped)
        ]
    );
    assert_eq!(r.unloaded[0].unit, "test/b.test.js");
    assert_eq!(r.counts, counts(1, 1, 0, 1));
    let vitest = " ✓ src/a.test.ts > math > adds 1ms\n × src/a.test.ts > math > subs 2ms\n FAIL  src/a.test.ts > math > subs\n\n Test Files  1 failed (1)\n      Tests  1 failed | 1 passed (2)";
    let r = TestRun::read(vitest).unwrap();
    let unit = Some("src/a.test.ts");
    assert_eq!(
        cases(&r),
        [("math > adds", unit, Passed), ("math > subs", unit, Failed)]
    );
    assert_eq!(r.counts, counts(1, 1, 0, 0));
}

#[test]
fn several_runners_are_summed() {
    let out = "== 2 passed in 0.1s ==\n--- PASS: TestA (0.00s)\nok  \tx\t0.1s";
    assert_eq!(TestRun::read(out).unwrap().counts, counts(3, 0, 0, 0));
    assert_eq!(TestRun::read("no tests here"), None);
}

#[test]
fn a_run_that_fails_only_where_the_base_did_shows_nothing_new() {
    let known = vec!["tests::old".to_owned()];
    let run = |failing: &[&str], errors| TestRun {
        counts: counts(1, failing.len() as u64, errors, 0),
        failing: failing.iter().map(|f| (*f).to_owned()).collect(),
        ..TestRun::default()
    };
    assert!(run(&["tests::old"], 0).only_known(&known));
    assert!(!run(&["tests::old", "tests::new"], 0).only_known(&known));
    // A test that could not run, or a failure without names, is never excused.
    assert!(!run(&["tests::old"], 1).only_known(&known));
    assert!(!run(&[], 0).only_known(&known));
}

#[test]
fn junit_reports() {
    let xml = r#"<?xml version="1.0"?>
<testsuites><testsuite name="s" tests="4">
  <testcase classname="calc" name="adds" file="tests/test_calc.py"/>
  <testcase classname="calc" name="subs"><failure message="no">x</failure></testcase>
  <testcase name="boom"><error/></testcase>
  <testcase name="later"><skipped message="not yet"/></testcase>
</testsuite></testsuites>"#;
    let r = TestRun::read_junit(xml).unwrap();
    assert_eq!(r.counts, counts(1, 1, 1, 1));
    assert_eq!(r.failing, ["calc.subs", "boom"]);
    assert_eq!(
        cases(&r),
        [
            ("calc.adds", Some("tests/test_calc.py"), Passed),
            ("calc.subs", Some("calc"), Failed),
            ("boom", None, Error),
            ("later", None, Skipped),
        ]
    );
    assert_eq!(r.cases[3].why.as_deref(), Some("not yet"));
    assert_eq!(TestRun::read_junit("<html/>"), None);
    assert_eq!(TestRun::read_junit("not xml"), None);
}

#[test]
fn a_test_report_is_read_from_the_worktree_and_only_from_there() {
    let wt = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(wt.path().join("build")).unwrap();
    std::fs::write(
        wt.path().join("build/junit.xml"),
        r#"<testsuite><testcase name="a"/><testcase name="b"><failure/></testcase></testsuite>"#,
    )
    .unwrap();
    let seen = TestRun::observe("1 passed in 0.1s", wt.path(), Some("build/junit.xml"));
    let run = seen.run.unwrap();
    assert_eq!((run.counts.passed, run.counts.failed), (1, 1));
    assert_eq!(run.failing, ["b"]);
    assert!(seen.notes.is_empty());

    let note = |rel: &str| TestRun::observe("", wt.path(), Some(rel)).notes.join(" ");
    assert!(note("build/none.xml").contains("was not written by the test command"));
    std::fs::write(wt.path().join("out.txt"), "3 passed").unwrap();
    assert!(note("out.txt").contains("is not a JUnit XML report"));
    // A link out of the worktree is not followed.
    std::os::unix::fs::symlink("/etc/passwd", wt.path().join("link.xml")).unwrap();
    assert!(note("link.xml").contains("symbolic link"));
    // Without a report, the output.
    let plain = TestRun::observe("PASSED t.py::test_a\n1 passed in 0.1s", wt.path(), None);
    assert_eq!(plain.run.unwrap().cases.len(), 1);
}

/// What a run says test by test: counts, each case's name, unit and outcome, each unloaded
/// unit, each skipped place.
type Verdicts = (
    TestCounts,
    Vec<(String, Option<String>, Outcome)>,
    Vec<String>,
    Vec<String>,
);

fn verdicts(text: &str) -> Option<Verdicts> {
    let run = TestRun::read(text)?;
    Some((
        run.counts,
        run.cases
            .iter()
            .map(|c| (c.name.clone(), c.unit.clone(), c.outcome))
            .collect(),
        run.unloaded.iter().map(|u| u.unit.clone()).collect(),
        run.skips.iter().map(|s| s.place.clone()).collect(),
    ))
}

/// Only the lines [`keeps`] keeps, as `Sandbox::exec_keeping` keeps them of a long run.
fn kept(text: &str) -> String {
    text.lines()
        .filter(|l| keeps(l))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn the_kept_lines_read_as_the_whole_output_for_every_captured_runner() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tool-output");
    let mut read = 0;
    for dir in [dir.join("runners"), dir] {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "txt") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let whole = verdicts(&text);
            assert_eq!(verdicts(&kept(&text)), whole, "{}", path.display());
            read += usize::from(whole.is_some());
        }
    }
    assert!(read >= 40, "only {read} captured runs name tests");
}

#[test]
fn noise_between_results_is_dropped_and_changes_no_verdict() {
    let mut text = String::new();
    for i in 0..200 {
        text.push_str(&format!("tests/test_a.py::test_{i} PASSED\n"));
        for j in 0..20 {
            text.push_str(&format!(
                "captured output {i}.{j}: some words a test printed\n"
            ));
        }
    }
    text.push_str("FAILED tests/test_a.py::test_7 - assert 1 == 2\n");
    text.push_str("==== 1 failed, 199 passed in 2.00s ====\n");
    let small = kept(&text);
    assert!(
        small.len() * 10 < text.len(),
        "{} of {}",
        small.len(),
        text.len()
    );
    assert_eq!(verdicts(&small), verdicts(&text));
    let run = TestRun::read(&small).unwrap();
    assert_eq!(run.failing, ["tests/test_a.py::test_7"]);
}

/// Parametrized ids hold spaces, quotes, ` - ` and `]` (cleo 2.1.0's `test_create[  foo  bar
/// -tokens2]`): every test is named whole, in both of pytest's forms.
#[test]
fn parametrized_ids_with_spaces_and_brackets_are_named_whole() {
    let want = [
        ("tests/test_ids.py::test_words[a b]", Outcome::Passed),
        (
            "tests/test_ids.py::test_words[  two  spaces  ]",
            Outcome::Passed,
        ),
        (
            "tests/test_ids.py::test_words[quoted 'twice']",
            Outcome::Passed,
        ),
        ("tests/test_ids.py::test_words[x - y]", Outcome::Failed),
        ("tests/test_ids.py::test_words[]]", Outcome::Passed),
        ("tests/test_ids.py::test_words[tab\\there]", Outcome::Passed),
        ("tests/test_ids.py::test_plain[1]", Outcome::Passed),
        ("tests/test_ids.py::test_plain[2]", Outcome::Passed),
        ("tests/test_ids.py::test_xfail[x fail]", Outcome::Skipped),
    ];
    for fixture in [
        runner_output!("pytest-param-ids-rA"),
        runner_output!("pytest-param-ids-v"),
    ] {
        let run = TestRun::read(fixture).unwrap();
        for (name, outcome) in want {
            let case = run.cases.iter().find(|c| c.name == name);
            assert_eq!(
                case.map(|c| c.outcome),
                Some(outcome),
                "{name}: {:?}",
                run.cases
            );
        }
        assert_eq!(run.failing, ["tests/test_ids.py::test_words[x - y]"]);
    }
    let summary = TestRun::read(runner_output!("pytest-param-ids-rA")).unwrap();
    assert_eq!(summary.cases.len(), 9, "{:?}", summary.cases);
    let failed = summary
        .cases
        .iter()
        .find(|c| c.outcome == Outcome::Failed)
        .unwrap();
    assert_eq!(
        failed.why.as_deref(),
        Some("AssertionError: assert 'x - y' ...")
    );
}

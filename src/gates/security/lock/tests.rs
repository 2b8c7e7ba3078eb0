//! Tests of the test lock on real repositories built with git2.

use super::*;
use crate::gates::security::testing::{Change, TestRepo};

const TEST_PY: &[u8] = b"def test_add():\n    assert add(1, 2) == 3\n";

struct Fixture {
    t: TestRepo,
    base: Oid,
    breaker: Oid,
}

fn sets() -> (PathSet, PathSet) {
    let ro = PathSet::new(&[".github/".into(), "docs/spec/".into()]);
    let tests = PathSet::new(&["tests/".into(), "**/test_*.py".into()]);
    (ro, tests)
}

fn fixture() -> Fixture {
    let t = TestRepo::new();
    let base = t.commit(
        None,
        &[
            ("calc.py", Change::Write(b"def add(a, b):\n    pass\n")),
            (".github/hive.yml", Change::Write(b"label: hive\n")),
            ("tests/__init__.py", Change::Write(b"")),
        ],
    );
    let breaker = t.commit(
        Some(base),
        &[
            ("tests/test_calc.py", Change::Write(TEST_PY)),
            ("tests/data.txt", Change::Link("../calc.py")),
        ],
    );
    Fixture { t, base, breaker }
}

fn lock(f: &Fixture, head: Oid) -> LockReport {
    let (ro, tests) = sets();
    test_lock(&f.t.repo, f.base, head, Some(f.breaker), &ro, &tests).unwrap()
}

/// (path, title) of every finding, and the messages joined.
fn found(r: &LockReport) -> (Vec<(String, String)>, String) {
    let pairs = r
        .findings
        .iter()
        .map(|a| (a.path.clone(), a.title.clone().unwrap_or_default()))
        .collect();
    let text = r.findings.iter().map(|a| a.message.as_str()).collect();
    (pairs, text)
}

fn one(path: &str, title: &str) -> Vec<(String, String)> {
    vec![(path.to_owned(), title.to_owned())]
}

#[test]
fn builder_leaving_tests_alone_passes() {
    let f = fixture();
    let head = f.t.commit(
        Some(f.breaker),
        &[(
            "calc.py",
            Change::Write(b"def add(a, b):\n    return a + b\n"),
        )],
    );
    let r = lock(&f, head);
    assert!(r.passed(), "{:?}", r.findings);
    assert_eq!(r.tests.files, 3);
    assert_eq!(r.read_only.files, 1);
    // Only the test files count towards the hash: the Breaker's commit hashes the same.
    assert_eq!(r.tests, lock(&f, f.breaker).tests);
    assert!(
        r.summary().starts_with("test lock: 3 files, hash "),
        "{}",
        r.summary()
    );
    assert!(
        r.summary().contains("; read-only: 1 file, hash "),
        "{}",
        r.summary()
    );
}

#[test]
fn editing_a_test_is_a_finding() {
    let f = fixture();
    let head = f.t.commit(
        Some(f.breaker),
        &[(
            "tests/test_calc.py",
            Change::Write(b"def test_add():\n    pass\n"),
        )],
    );
    let r = lock(&f, head);
    let (pairs, text) = found(&r);
    assert_eq!(pairs, one("tests/test_calc.py", TITLE_TESTS));
    assert!(text.contains("differs from the Breaker's commit"), "{text}");
    assert!(
        text.contains("content changed") && text.contains("restore"),
        "{text}"
    );
    assert_eq!(r.findings[0].start_line, 1);
    assert_eq!(r.findings[0].level, Level::Failure);
    assert_ne!(r.tests, lock(&f, f.breaker).tests);
}

#[test]
fn deleting_a_test_is_a_finding() {
    let f = fixture();
    let head =
        f.t.commit(Some(f.breaker), &[("tests/test_calc.py", Change::Delete)]);
    let (pairs, text) = found(&lock(&f, head));
    assert_eq!(pairs, one("tests/test_calc.py", TITLE_TESTS));
    assert!(text.contains("was deleted"), "{text}");
}

#[test]
fn adding_a_file_under_test_paths_is_a_finding() {
    let f = fixture();
    let head = f.t.commit(
        Some(f.breaker),
        &[
            ("tests/test_more.py", Change::Write(b"def test_x(): pass\n")),
            ("pkg/deep/test_other.py", Change::Write(b"")),
            ("pkg/helper.py", Change::Write(b"")),
        ],
    );
    let (pairs, text) = found(&lock(&f, head));
    let paths: Vec<_> = pairs.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["pkg/deep/test_other.py", "tests/test_more.py"]);
    assert!(
        text.contains("is new, not in the Breaker's commit"),
        "{text}"
    );
}

#[test]
fn chmod_of_a_test_is_a_finding() {
    let f = fixture();
    let head = f.t.commit(
        Some(f.breaker),
        &[("tests/test_calc.py", Change::Exec(TEST_PY))],
    );
    let (pairs, text) = found(&lock(&f, head));
    assert_eq!(pairs, one("tests/test_calc.py", TITLE_TESTS));
    assert!(text.contains("mode 100644 → 100755"), "{text}");
    assert!(!text.contains("content changed"), "{text}");
}

#[test]
fn symlinks_and_submodules_are_entries_too() {
    let f = fixture();
    let head = f.t.commit(
        Some(f.breaker),
        &[
            ("tests/data.txt", Change::Link("/etc/passwd")),
            ("tests/vendor", Change::Submodule(f.base)),
        ],
    );
    let (pairs, _) = found(&lock(&f, head));
    let paths: Vec<_> = pairs.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["tests/data.txt", "tests/vendor"]);
}

#[test]
fn changing_or_adding_read_only_files_is_a_finding() {
    let f = fixture();
    let head = f.t.commit(
        Some(f.breaker),
        &[(".github/hive.yml", Change::Write(b"label: other\n"))],
    );
    let (pairs, text) = found(&lock(&f, head));
    assert_eq!(pairs, one(".github/hive.yml", TITLE_READ_ONLY));
    assert!(
        text.contains("only people may change policy.read_only_paths"),
        "{text}"
    );

    let head = f.t.commit(
        Some(f.breaker),
        &[(".github/workflows/ci.yml", Change::Write(b"on: push\n"))],
    );
    let (pairs, text) = found(&lock(&f, head));
    assert_eq!(pairs, one(".github/workflows/ci.yml", TITLE_READ_ONLY));
    assert!(text.contains("remove it"), "{text}");

    let head =
        f.t.commit(Some(f.breaker), &[(".github/hive.yml", Change::Delete)]);
    let (_, text) = found(&lock(&f, head));
    assert!(text.contains("was deleted"), "{text}");
}

#[test]
fn read_only_files_are_checked_against_base_even_when_the_breaker_changed_them() {
    let f = fixture();
    let breaker = f.t.commit(
        Some(f.base),
        &[
            ("tests/test_calc.py", Change::Write(TEST_PY)),
            (".github/hive.yml", Change::Write(b"label: sneaky\n")),
        ],
    );
    let (ro, tests) = sets();
    let r = test_lock(&f.t.repo, f.base, breaker, Some(breaker), &ro, &tests).unwrap();
    assert_eq!(found(&r).0, one(".github/hive.yml", TITLE_READ_ONLY));
}

#[test]
fn ordinary_changes_pass_and_base_is_the_reference_without_a_breaker() {
    let f = fixture();
    let (ro, tests) = sets();
    let head = f.t.commit(
        Some(f.base),
        &[
            (
                "calc.py",
                Change::Write(b"def add(a, b):\n    return a + b\n"),
            ),
            ("docs/guide.md", Change::Write(b"# Guide\n")),
        ],
    );
    let r = test_lock(&f.t.repo, f.base, head, None, &ro, &tests).unwrap();
    assert!(r.passed(), "{:?}", r.findings);
    // Without a Breaker commit, the Breaker's files are additions relative to base.
    let r = test_lock(&f.t.repo, f.base, f.breaker, None, &ro, &tests).unwrap();
    let (pairs, text) = found(&r);
    assert_eq!(pairs.len(), 2, "{pairs:?}");
    assert!(text.contains("not in the base commit"), "{text}");
}

#[test]
fn non_utf8_directory_names_are_walked() {
    let f = fixture();
    let path = b"tests/\xff/test_x.py".as_slice();
    let head =
        f.t.commit_raw(Some(f.breaker), &[(path, &Change::Write(b"x"))]);
    let name = String::from_utf8_lossy(path).into_owned();
    assert_eq!(found(&lock(&f, head)).0, one(&name, TITLE_TESTS));
}

#[test]
fn tests_the_base_gained_after_the_breaker_started_are_expected() {
    let f = fixture();
    // Main moves on with another ticket's test; the change is rebased onto it.
    let other = b"def test_mul():\n    assert mul(3, 4) == 12\n";
    let new_base =
        f.t.commit(Some(f.base), &[("tests/test_mul.py", Change::Write(other))]);
    let rebased = f.t.commit(
        Some(new_base),
        &[
            ("tests/test_calc.py", Change::Write(TEST_PY)),
            ("tests/data.txt", Change::Link("../calc.py")),
            (
                "calc.py",
                Change::Write(b"def add(a, b):\n    return a + b\n"),
            ),
        ],
    );
    let (ro, tests) = sets();
    let r = test_lock(&f.t.repo, new_base, rebased, Some(f.breaker), &ro, &tests).unwrap();
    assert!(r.passed(), "{:?}", r.findings);
    assert_eq!(r.tests.files, 4);
    // Dropping the base's new test is still a finding, as is touching the Breaker's.
    let dropped =
        f.t.commit(Some(rebased), &[("tests/test_mul.py", Change::Delete)]);
    let r = test_lock(&f.t.repo, new_base, dropped, Some(f.breaker), &ro, &tests).unwrap();
    assert_eq!(found(&r).0, one("tests/test_mul.py", TITLE_TESTS));
    let edited = f.t.commit(
        Some(rebased),
        &[(
            "tests/test_calc.py",
            Change::Write(b"def test_add():\n    pass\n"),
        )],
    );
    let r = test_lock(&f.t.repo, new_base, edited, Some(f.breaker), &ro, &tests).unwrap();
    assert_eq!(found(&r).0, one("tests/test_calc.py", TITLE_TESTS));
}

//! Tests of the whole pipeline: roots, filtering, dedupe, the cap and its order, the fallback,
//! and that no input makes it panic. Each parser's own fixtures are tested in its file.

use super::parse;
use crate::annotation::{Annotation, Level};
use Level::{Failure, Warning};

/// Annotations as the tests compare them: `path:line[:column] level [title] message`.
pub(super) fn show(all: &[Annotation]) -> Vec<String> {
    all.iter()
        .map(|a| {
            let column = a.start_column.map(|c| format!(":{c}")).unwrap_or_default();
            let level = format!("{:?}", a.level).to_lowercase();
            let title = a.title.as_deref().unwrap_or("");
            format!(
                "{}:{}{column} {level} [{title}] {}",
                a.path, a.start_line, a.message
            )
        })
        .collect()
}

#[test]
fn container_paths_are_made_relative() {
    let out = include_str!("../../../tests/fixtures/tool-output/container-abs-paths.txt");
    let want = [
        "pkg/calc.py:1:1 failure [F401] 'os' imported but unused",
        "pkg/calc.py:2:1 failure [F401] 'sys' imported but unused",
        "pkg/calc.py:10:5 failure [F841] local variable 'unused' is assigned to but never used",
        "pkg/typed.py:13:1 failure [F821] undefined name 'reveal_type'",
        "pkg/typed.py:14:5 failure [F821] undefined name 'undefined_name'",
        "pkg/typed.py:5:16 failure [arg-type] Argument 1 to \"add\" has incompatible type \"list[int]\"; expected \"int\"",
        "pkg/typed.py:9:12 failure [return-value] Incompatible return value type (got \"int\", expected \"str\")",
        "pkg/typed.py:12:10 failure [assignment] Incompatible types in assignment (expression has type \"str\", variable has type \"int\")",
        "pkg/typed.py:14:5 failure [name-defined] Name \"undefined_name\" is not defined",
        "test_unit.py:11 failure [test_unit.AddTest.test_error] ValueError: bad value",
        "test_unit.py:8 failure [test_unit.AddTest.test_adds] AssertionError: -1 != 3",
        "pkg/typed.py:13:13 notice [] Revealed type is \"int\"",
    ];
    assert_eq!(show(&parse("lint", out, &["/work/"])), want);
    // Without the root every one of those paths is absolute, so none is kept.
    assert_eq!(parse("lint", out, &[]), vec![]);
    // With a deeper root, only what is under it.
    assert_eq!(parse("lint", out, &["/work/pkg/"]).len(), 10);
}

#[test]
fn pytest_short_and_native_tracebacks_and_setup_errors() {
    let short = include_str!("../../../tests/fixtures/tool-output/pytest-short-setup-error.txt");
    let want = [
        "tests/test_more.py:19 failure [tests/test_more.py::test_warns] ValueError: empty input",
        "tests/test_more.py:10 failure [tests/test_more.py::test_uses_db] RuntimeError: no database",
    ];
    assert_eq!(show(&parse("test", short, &[])), want);
    // `--tb=native` prints absolute paths: with the root they are found, without it the test
    // file's first line is all there is.
    let native = include_str!("../../../tests/fixtures/tool-output/pytest-native.txt");
    assert_eq!(show(&parse("test", native, &["/tmp/work/"])), want);
    let got = parse("test", native, &[]);
    let lines: Vec<_> = got
        .iter()
        .map(|a| (a.path.as_str(), a.start_line))
        .collect();
    assert_eq!(
        lines,
        [("tests/test_more.py", 1), ("tests/test_more.py", 1)]
    );
}

#[test]
fn paths_outside_the_repository_are_dropped() {
    let out = "../x/y.py:1:1: F401 a\n/usr/lib/z.py:2:1: F401 b\npkg/../../w.py:3:1: F401 c\n\
               /work/../etc/v.py:4:1: F401 d\n./ok.py:5:1: F401 e\n/work/in.py:6:1: F401 f\n";
    let want = ["ok.py:5:1 failure [F401] e", "in.py:6:1 failure [F401] f"];
    assert_eq!(show(&parse("lint", out, &["/work/"])), want);
}

#[test]
fn duplicates_go_and_the_stronger_level_stays() {
    let out = "a.py:1:1: W291 trailing whitespace\na.py:1:1: W291 trailing whitespace\n\
               a.py:1: error: trailing whitespace\n/work/a.py:1:3: W291 trailing whitespace\n\
               a.py:2:1: W291 trailing whitespace\n";
    let want = [
        "a.py:1 failure [] trailing whitespace",
        "a.py:2:1 warning [W291] trailing whitespace",
    ];
    assert_eq!(show(&parse("lint", out, &["/work"])), want);
}

#[test]
fn on_a_duplicate_the_gates_own_parser_wins() {
    let out = "src/a.rs:3:1: warning: unused x\nwarning: unused x\n --> src/a.rs:3:1\n  = note: `#[warn(unused_x)]` on\n";
    assert_eq!(
        show(&parse("build", out, &[])),
        ["src/a.rs:3:1 warning [unused_x] unused x"]
    );
    assert_eq!(
        show(&parse("lint", out, &[])),
        ["src/a.rs:3:1 warning [] unused x"]
    );
}

#[test]
fn the_cap_keeps_failures_then_warnings_then_notices_in_output_order() {
    let mut out = String::new();
    for i in 1..=300 {
        out.push_str(&format!("n.py:{i}: note: n{i}\nw.py:{i}:1: W1 w{i}\n"));
    }
    for i in 1..=200 {
        out.push_str(&format!("f.py:{i}: error: f{i}\n"));
    }
    let got = parse("lint", &out, &[]);
    assert_eq!(got.len(), 500);
    let failures = got[..200]
        .iter()
        .filter(|a| a.level == Failure && a.path == "f.py");
    assert_eq!(failures.count(), 200);
    assert!(got[200..].iter().all(|a| a.level == Warning));
    assert_eq!((got[0].start_line, got[199].start_line), (1, 200));
    assert_eq!(
        (got[200].message.as_str(), got[499].message.as_str()),
        ("w1", "w300")
    );
    let notes = parse(
        "lint",
        "n.py:2: note: b\nn.py:1: note: a\nw.py:3: warning: c\n",
        &[],
    );
    assert_eq!(
        show(&notes),
        [
            "w.py:3 warning [] c",
            "n.py:2 notice [] b",
            "n.py:1 notice [] a"
        ]
    );
}

#[test]
fn messages_are_one_line_of_at_most_500_characters() {
    let long = "é".repeat(2000);
    let got = parse("lint", &format!("a.py:1:1: E1 {long}\n"), &[]);
    assert_eq!(got[0].message.chars().count(), 500);
    assert!(got[0].message.ends_with('…'));
    let got = parse("lint", "a.py:1:1: E1 \t tab\u{7}bell  \n", &[]);
    assert_eq!(got[0].message, "tab bell");
}

#[test]
fn the_fallback_runs_only_when_nothing_else_matched() {
    let out = include_str!("../../../tests/fixtures/tool-output/python-traceback.txt");
    let want = [
        "build.py:7 failure [json.decoder.JSONDecodeError] json.decoder.JSONDecodeError: Expecting property name \
         enclosed in double quotes: line 1 column 2 (char 1)",
    ];
    assert_eq!(show(&parse("build", out, &["/tmp/work"])), want);
    // A specific parser's finding keeps the fallback away from `src/x.c:3:`.
    let mixed = "a.py:1:1: F401 x\nsrc/x.c:3: something\n";
    assert_eq!(
        show(&parse("lint", mixed, &[])),
        ["a.py:1:1 failure [F401] x"]
    );
    let alone = parse("lint", "src/x.c:3: something\n", &[]);
    assert_eq!(show(&alone), ["src/x.c:3 failure [] something"]);
}

#[test]
fn nothing_found_in_plain_output() {
    assert_eq!(parse("test", "", &[]), vec![]);
    assert_eq!(
        parse("test", "all good\n== 3 passed in 0.01s ==\n", &["/work/"]),
        vec![]
    );
}

/// A small deterministic generator (xorshift), so the test needs no extra crate.
fn noise(seed: u64, len: usize, alphabet: &[u8]) -> String {
    let mut x = seed | 1;
    let mut bytes = Vec::with_capacity(len);
    for _ in 0..len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let pick = alphabet.get((x % alphabet.len().max(1) as u64) as usize);
        bytes.push(pick.copied().unwrap_or(b' '));
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn never_panics_on_hostile_output() {
    let all_bytes: Vec<u8> = (0..=255).collect();
    let tricky =
        b":0123456789 \n\r\t\x1b[]_=E-/.\"'{}\\FAILED ERROR File line, -->panicked at thread";
    let fixtures = [
        include_str!("../../../tests/fixtures/tool-output/pytest-failures.txt"),
        include_str!("../../../tests/fixtures/tool-output/cargo-json.txt"),
        include_str!("../../../tests/fixtures/tool-output/ruff-full.txt"),
        include_str!("../../../tests/fixtures/tool-output/unittest-failure.txt"),
    ];
    for seed in 1..200u64 {
        for gate in ["test", "lint", "build"] {
            let _ = parse(gate, &noise(seed, 3000, &all_bytes), &["/work/"]);
            let _ = parse(gate, &noise(seed, 3000, tricky), &["/work/", "/"]);
        }
        // Fixtures cut at arbitrary places and spliced with noise.
        for f in fixtures {
            let cut = f
                .char_indices()
                .map(|(i, _)| i)
                .nth(seed as usize * 7 % f.len());
            let (a, b) = f.split_at(cut.unwrap_or(0));
            let _ = parse(
                "test",
                &format!("{b}{}{a}", noise(seed, 50, tricky)),
                &["/tmp/work/"],
            );
        }
    }
    let long_line = format!(
        "{}a.py:1:1: E1 x{}\n",
        "x".repeat(1_000_000),
        ":1".repeat(200_000)
    );
    assert_eq!(parse("lint", &long_line, &[]).len(), 0);
    let colons = ":".repeat(500_000) + &"9".repeat(500_000);
    let _ = parse("build", &colons, &[]);
    let deep_json = format!(
        "{{\"reason\":\"compiler-message\",\"message\":{}}}",
        "[".repeat(100_000)
    );
    assert_eq!(parse("build", &deep_json, &[]), vec![]);
    let many: String = (0..5000)
        .map(|i| format!("E{i}.py:{i}:1: E1 m\n"))
        .collect();
    assert_eq!(parse("lint", &many, &[]).len(), 500);
}

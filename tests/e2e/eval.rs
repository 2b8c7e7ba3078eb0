//! `vibeloop eval` end to end: a Python repository with a history of fix commits (each with its
//! tests) is mined into a task set, each candidate verified in the sandbox; the set runs through
//! the hive with a scripted model that resolves one task, passes its own tests but not the
//! hidden ones on another, and exhausts the budget on the third; a second run (from the
//! same set written as SWE-bench writes it, lists as JSON strings) resolves one more, and
//! `compare` names that task with McNemar's p-value.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::ecosystems::{CA_BUNDLE, MODEL, git};
use crate::support;

use support::fake_llm::{FakeLlm, Script, Step};
use support::hive::{approve_json, plan_json, writes};

const CALC: &str = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n\n\ndef neg(a):\n    return a\n";

fn commit(repo: &Path, files: &[(&str, &str)], message: &str) {
    for (path, text) in files {
        let p = repo.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-qm", message]);
}

/// A repository with three fixes, each with its test, and a commit that changes no test.
fn history(repo: &Path) {
    std::fs::create_dir_all(repo).unwrap();
    git(repo, &["init", "-q", "-b", "main"]);
    commit(
        repo,
        &[
            ("requirements.txt", ""),
            ("calc.py", CALC),
            (
                "tests/test_basic.py",
                "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
            ),
        ],
        "calc",
    );
    let fixed = |add: &str, mul: &str, neg: &str| {
        format!(
            "def add(a, b):\n    return {add}\n\n\ndef mul(a, b):\n    return {mul}\n\n\ndef neg(a):\n    return {neg}\n"
        )
    };
    commit(
        repo,
        &[
            ("calc.py", &fixed("a + b", "a + b", "a")),
            (
                "tests/test_add.py",
                "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
            ),
        ],
        "Fix add()\n\nadd(2, 3) returned -1: it subtracted.",
    );
    commit(
        repo,
        &[
            ("calc.py", &fixed("a + b", "a * b", "a")),
            // From here on the hive may spend 3,000 tokens a ticket: the neg() task, whose base
            // this is, runs out of budget.
            (".github/hive.yml", "budget: { max_tokens: 3000 }\n"),
            (
                "tests/test_mul.py",
                "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
            ),
        ],
        "Fix mul()\n\nmul(2, 3) returned 5: it added.",
    );
    commit(
        repo,
        &[
            ("calc.py", &fixed("a + b", "a * b", "-a")),
            (
                "tests/test_neg.py",
                "from calc import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n",
            ),
        ],
        "Fix neg()\n\nneg(2) returned 2.",
    );
    commit(repo, &[("README.md", "calc\n")], "Say what calc is");
}

fn vibeloop(args: &[&str], llm: Option<&FakeLlm>) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vibeloop"));
    cmd.args(args)
        .env("VIBELOOP_SANDBOX_CA_BUNDLE", CA_BUNDLE)
        .env("VIBELOOP_LLM_MODEL", MODEL);
    if let Some(llm) = llm {
        cmd.env("VIBELOOP_LLM_BASE_URL", &llm.url);
    }
    let out = cmd.output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

/// `vibeloop eval mine` on `repo` (with `extra` arguments) into `tasks`, in Docker with
/// environments in `envs`; checks the count line `verified` and returns the tasks.
pub(crate) fn mine(
    repo: &Path,
    tasks: &Path,
    envs: &str,
    extra: &[&str],
    verified: &str,
) -> Vec<Value> {
    let mut args = vec![
        "eval",
        "mine",
        "--repo",
        repo.to_str().unwrap(),
        "--out",
        tasks.to_str().unwrap(),
        "--sandbox",
        "docker",
        "--env-dir",
        envs,
    ];
    args.extend_from_slice(extra);
    let (code, _, err) = vibeloop(&args, None);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(verified), "{err}");
    std::fs::read_to_string(tasks)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The task of `set` whose problem statement holds `word`.
fn task<'a>(set: &'a [Value], word: &str) -> &'a Value {
    set.iter()
        .find(|t| t["problem_statement"].as_str().unwrap().contains(word))
        .unwrap()
}

/// `vibeloop eval run` of `tasks` into `out` against `llm`, in Docker, clones from `repos`
/// (with `extra` arguments): exit code, stdout, stderr.
fn run_set(
    tasks: &Path,
    out: &Path,
    repos: &Path,
    envs: &str,
    extra: &[&str],
    llm: &FakeLlm,
) -> (i32, String, String) {
    let mut args = vec![
        "eval",
        "run",
        tasks.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--repos-dir",
        repos.to_str().unwrap(),
        "--sandbox",
        "docker",
        "--env-dir",
        envs,
        "--timeout-minutes",
        "10",
    ];
    args.extend_from_slice(extra);
    tokio::task::block_in_place(|| vibeloop(&args, Some(llm)))
}

/// The Breaker writes a failing test of each function; the Builder fixes add() right, mul()
/// so that only the Breaker's test passes (`a * a`, or `a * b` when `mul_right`), and neg()
/// never.
fn script(mul_right: bool) -> Script {
    let test = |name: &str, body: &str| {
        writes(
            &format!("tests/test_{name}_hive.py"),
            &format!("from calc import {name}\n\n\ndef test_{name}_hive():\n    {body}\n"),
            "A failing test.",
        )
    };
    let calc = |mul: &str| {
        format!(
            "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return {mul}\n\n\ndef neg(a):\n    return a\n"
        )
    };
    let mul = if mul_right { "a * b" } else { "a * a" };
    Script::from([
        ("architect".to_owned(), vec![Step::say(&plan_json())]),
        (
            "breaker|Fix add()".to_owned(),
            test("add", "assert add(4, 4) == 8"),
        ),
        (
            "breaker|Fix mul()".to_owned(),
            test("mul", "assert mul(3, 3) == 9"),
        ),
        (
            "breaker|Fix neg()".to_owned(),
            test("neg", "assert neg(3) == -3"),
        ),
        (
            "builder|Fix add()".to_owned(),
            writes("calc.py", &calc("a + b"), "add() adds."),
        ),
        (
            "builder|Fix mul()".to_owned(),
            writes("calc.py", &calc(mul), "mul() multiplies."),
        ),
        (
            "builder|Fix neg()".to_owned(),
            vec![Step::say("Nothing to change.")],
        ),
        ("critic".to_owned(), vec![Step::say(&approve_json())]),
    ])
}

/// `(detail, outcome)` of every task in `out`, sorted.
fn outcomes(out: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    let mut got: Vec<(String, String)> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| {
            let detail = v["detail"].as_str().unwrap_or_default().to_owned();
            (detail, v["outcome"].as_str().unwrap().to_owned())
        })
        .collect();
    got.sort();
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_is_mined_run_twice_and_compared() {
    let tmp = tempfile::tempdir().unwrap();
    let repos = tmp.path().join("repos");
    let repo = repos.join("local__calc");
    history(&repo);
    let envs = tmp.path().join("envs");
    let envs = envs.to_str().unwrap();
    let tasks = tmp.path().join("tasks.jsonl");

    // Mining: three fixes verified, the README commit skipped.
    let set = mine(
        &repo,
        &tasks,
        envs,
        &["--name", "local/calc"],
        "3 task(s) verified of 3 candidate(s)",
    );
    let of = |word: &str| task(&set, word);
    assert_eq!(
        of("add()")["FAIL_TO_PASS"],
        json!(["tests/test_add.py::test_add"])
    );
    assert_eq!(
        of("neg()")["PASS_TO_PASS"],
        json!([
            "tests/test_add.py::test_add",
            "tests/test_basic.py::test_zero",
            "tests/test_mul.py::test_mul"
        ])
    );
    assert!(
        of("mul()")["test_patch"]
            .as_str()
            .unwrap()
            .contains("+++ b/tests/test_mul.py")
    );
    assert!(
        !of("mul()")["problem_statement"]
            .as_str()
            .unwrap()
            .contains("diff")
    );

    // Run A.
    let llm = FakeLlm::start(script(false)).await;
    llm.set_models(&[MODEL]);
    let out_a = tmp.path().join("a");
    let run = |out: &Path, tasks: &Path, llm: &FakeLlm| {
        run_set(tasks, out, &repos, envs, &["--jobs", "2"], llm)
    };
    let (code, stdout, err) = run(&out_a, &tasks, &llm);
    assert_eq!(code, 0, "{stdout}\n{err}");
    let got = outcomes(&out_a);
    let count = |o: &str| got.iter().filter(|(_, g)| g == o).count();
    assert_eq!(
        (
            count("resolved"),
            count("tests_fail"),
            count("human_needed")
        ),
        (1, 1, 1),
        "{got:?}\n{stdout}"
    );
    assert!(stdout.contains("3 tasks: 1 resolved"), "{stdout}");
    assert!(
        got.iter().any(|(detail, o)| o == "human_needed"
            && detail.starts_with("the budget is spent: max_tokens 3,000")),
        "{got:?}"
    );
    let html = std::fs::read_to_string(out_a.join("report.html")).unwrap();
    assert!(!html.contains("<script"), "the report is self-contained");

    // Run B from the set as SWE-bench writes it: the lists as JSON strings.
    let swe: String = set
        .iter()
        .map(|t| {
            let mut t = t.clone();
            for k in ["FAIL_TO_PASS", "PASS_TO_PASS"] {
                t[k] = Value::String(t[k].to_string());
            }
            format!("{t}\n")
        })
        .collect();
    let tasks_b = tmp.path().join("swe.jsonl");
    std::fs::write(&tasks_b, swe).unwrap();
    let llm_b = FakeLlm::start(script(true)).await;
    llm_b.set_models(&[MODEL]);
    let out_b = tmp.path().join("b");
    let (code, stdout, err) = run(&out_b, &tasks_b, &llm_b);
    assert_eq!(code, 0, "{stdout}\n{err}");
    let got = outcomes(&out_b);
    assert_eq!(
        got.iter().filter(|(_, g)| g == "resolved").count(),
        2,
        "{got:?}"
    );

    // --resume skips what is done; without it an existing --out is refused.
    let (code, _, err) = run(&out_b, &tasks_b, &llm_b);
    assert_ne!(code, 0);
    assert!(err.contains("--resume"), "{err}");

    let (code, stdout, err) = vibeloop(
        &[
            "eval",
            "compare",
            out_a.to_str().unwrap(),
            out_b.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("p = 1.000"), "{stdout}");
    assert!(stdout.contains("tests fail → resolved"), "{stdout}");
}

/// `show` and `twice`: each bug fixed by a commit of its own that adds an integration test.
fn rust_lib(show: &str, twice: &str) -> String {
    format!(
        "/// `n` in decimal.\npub fn show(n: u64) -> String {{\n    itoa::Buffer::new().format({show}).to_owned()\n}}\n\n\
         /// Two times `n`.\npub fn twice(n: u64) -> u64 {{\n    {twice}\n}}\n\n\
         #[cfg(test)]\nmod tests {{\n    #[test]\n    fn shows_digits() {{\n        assert!(super::show(7).chars().all(|c| c.is_ascii_digit()));\n    }}\n}}\n"
    )
}

/// A crate with a crates.io dependency (itoa, fetched at test time) and two fixes, each with
/// its integration test: mined in the Rust image, FAIL_TO_PASS and PASS_TO_PASS read from
/// libtest's output, then run through the hive: one task resolved, one whose Builder passes
/// the Breaker's test but not the hidden one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rust_crates_history_is_mined_and_run() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("mine/local__fmtnum");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    commit(
        &repo,
        &[
            ("Cargo.toml", crate::ecosystems::CRATE_TOML),
            (".gitignore", "/target\n"),
            ("src/lib.rs", &rust_lib("n + 1", "n + 2")),
        ],
        "fmtnum",
    );
    let test = |name: &str, body: &str| format!("#[test]\nfn {name}() {{\n    {body}\n}}\n");
    commit(
        &repo,
        &[
            ("src/lib.rs", &rust_lib("n", "n + 2")),
            (
                "tests/show.rs",
                &test("shows_decimal", "assert_eq!(fmtnum::show(42), \"42\");"),
            ),
        ],
        "Fix show()\n\nshow(42) said 43.",
    );
    commit(
        &repo,
        &[
            ("src/lib.rs", &rust_lib("n", "n * 2")),
            (
                "tests/twice.rs",
                &test("doubles", "assert_eq!(fmtnum::twice(3), 6);"),
            ),
        ],
        "Fix twice()\n\ntwice(3) said 5.",
    );
    let envs = tmp.path().join("envs");
    let envs = envs.to_str().unwrap();
    let tasks = tmp.path().join("tasks.jsonl");
    let set = mine(
        &repo,
        &tasks,
        envs,
        &[],
        "2 task(s) verified of 2 candidate(s)",
    );
    let of = |word: &str| task(&set, word);
    assert_eq!(of("show()")["repo"], json!("local/fmtnum"));
    assert_eq!(of("show()")["FAIL_TO_PASS"], json!(["shows_decimal"]));
    assert_eq!(of("show()")["PASS_TO_PASS"], json!(["tests::shows_digits"]));
    assert_eq!(of("twice()")["FAIL_TO_PASS"], json!(["doubles"]));
    assert_eq!(
        of("twice()")["PASS_TO_PASS"],
        json!(["shows_decimal", "tests::shows_digits"])
    );

    let hive_test = |name: &str, body: &str| {
        writes(
            &format!("tests/{name}_hive.rs"),
            &test(&format!("{name}_hive"), body),
            "A failing test.",
        )
    };
    let script = Script::from([
        (
            "architect".to_owned(),
            vec![Step::say(&plan_json().replace("calc.py", "src/lib.rs"))],
        ),
        (
            "breaker|Fix show()".to_owned(),
            hive_test("show", "assert_eq!(fmtnum::show(7), \"7\");"),
        ),
        (
            "breaker|Fix twice()".to_owned(),
            hive_test("twice", "assert_eq!(fmtnum::twice(4), 8);"),
        ),
        (
            "builder|Fix show()".to_owned(),
            writes("src/lib.rs", &rust_lib("n", "n + 2"), "show() fixed."),
        ),
        (
            "builder|Fix twice()".to_owned(),
            writes(
                "src/lib.rs",
                &rust_lib("n", "if n == 4 { 8 } else { n + 2 }"),
                "twice(4) is 8 now.",
            ),
        ),
        ("critic".to_owned(), vec![Step::say(&approve_json())]),
    ]);
    let llm = FakeLlm::start(script).await;
    llm.set_models(&[MODEL]);
    // The run clones the repository from a URL into an empty --repos-dir.
    let origin = tmp.path().join("origin/local");
    std::fs::create_dir_all(&origin).unwrap();
    std::os::unix::fs::symlink(&repo, origin.join("fmtnum")).unwrap();
    let clone_url = format!("file://{}/origin/{{repo}}", tmp.path().display());
    let repos = tmp.path().join("repos");
    let out = tmp.path().join("run");
    let (code, stdout, err) = run_set(
        &tasks,
        &out,
        &repos,
        envs,
        &["--clone-url", &clone_url],
        &llm,
    );
    assert_eq!(code, 0, "{stdout}\n{err}");
    assert!(stdout.contains("cloning local/fmtnum"), "{stdout}");
    assert!(
        repos.join("local__fmtnum/HEAD").exists(),
        "a bare clone is kept"
    );
    let got = outcomes(&out);
    assert_eq!(
        got,
        vec![
            (
                "1 hidden test(s) fail: doubles".to_owned(),
                "tests_fail".to_owned()
            ),
            ("2 hidden test(s) pass".to_owned(), "resolved".to_owned()),
        ],
        "{stdout}"
    );
}

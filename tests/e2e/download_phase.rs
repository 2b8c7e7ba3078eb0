//! The download phase of a change to the dependency files (issue 42, part 1), through `vibeloop
//! run` with a scripted model: a requirement string with a line break pip splits at would have
//! been an option line (`--no-binary`, overriding `--only-binary :all:`, so pip builds an sdist
//! with the network open); it is refused by name, the download does not run, and the change
//! goes back with the reason.

use crate::ecosystems::project;
use crate::ecosystems_run::{change_script, run};

const PYPROJECT: &str = "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[project.optional-dependencies]\ntests = [\"pytest\"]\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requirement_that_would_be_a_pip_option_is_refused_with_the_reason() {
    let (_d, repo) = project(&[
        ("pyproject.toml", PYPROJECT),
        ("calc/__init__.py", ""),
        ("calc/ops.py", "def add(a, b):\n    return a - b\n"),
        (".github/hive.yml", "retry: { max_retries: 0 }\n"),
    ]);
    let goal = "add() adds";
    let test = "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";
    // `\r` inside a TOML string: one requirement to TOML, two lines to pip.
    let hostile = PYPROJECT.replace(
        "tests = [\"pytest\"]",
        "tests = [\"pytest\\r--no-binary evilpkg\", \"evilpkg\"]",
    );
    let mut script = change_script(
        goal,
        "calc/ops.py",
        ("tests/test_add.py", test),
        ("pyproject.toml", &hostile),
    );
    script.insert(
        "builder".to_owned(),
        vec![
            support_step("pyproject.toml", &hostile),
            support_step("calc/ops.py", "def add(a, b):\n    return a + b\n"),
            crate::support::fake_llm::Step::say("Done."),
        ],
    );
    let (code, stdout, stderr, _) = run(script, &repo, goal).await;
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    let words = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    for said in [
        "gate test: failed",
        "The download phase did not run",
        "in pyproject.toml: it holds a control character or line break (U+000D)",
    ] {
        assert!(words.contains(said), "no {said:?} in:\n{stdout}\n{stderr}");
    }
    assert!(!words.contains("T-1 completed"), "{stdout}");
}

fn support_step(path: &str, content: &str) -> crate::support::fake_llm::Step {
    crate::support::fake_llm::Step::tool(
        "write_file",
        serde_json::json!({ "path": path, "content": content }),
    )
}

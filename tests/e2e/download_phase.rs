//! The download phase of a change to the dependency files (issue 42, part 1), through `vibeloop
//! run` with a scripted model: a requirement string with a line break pip splits at would have
//! been an option line (`--no-binary`, overriding `--only-binary :all:`, so pip builds an sdist
//! with the network open); it is refused by name, the download does not run, and the change
//! goes back with the reason. And through `vibeloop gates`: requirements files that include
//! others (`-r ../docs/requirements.txt`) set up on the base and in a change.

use crate::ecosystems::{WIDTHY, WIDTHY_TESTS, change, gate, gates_json, project};
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

/// more-itertools' shape: `requirements/development.txt` pulls in, with `-r`, a file outside
/// `requirements/` that names what the tests import. On the base, setup runs with network (the
/// files are the base's); a change to the included file is set up in two phases, and the
/// download follows the include as pip does.
#[test]
fn what_a_requirements_file_includes_is_set_up_on_the_base_and_in_a_change() {
    let (_d, repo) = project(&[
        (
            "pyproject.toml",
            "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"widthy\"\nversion = \"0.1.0\"\n",
        ),
        (
            "requirements/development.txt",
            "--requirement testing.txt\n-r ../docs/requirements.txt\n",
        ),
        ("requirements/testing.txt", "pytest\n"),
        ("docs/requirements.txt", "wcwidth>=0.2\n"),
        ("src/widthy/__init__.py", WIDTHY),
        ("tests/test_width.py", WIDTHY_TESTS),
    ]);
    let envs = tempfile::tempdir().unwrap();
    let (code, all, err) = gates_json(&repo, envs.path());
    assert_eq!(code, 0, "{all}\n{err}");
    assert_eq!(gate(&all, "test")["counts"]["passed"], 2, "{all}");
    assert!(!err.contains("two phases"), "the base's own files: {err}");

    change(
        &repo,
        "change",
        &[("docs/requirements.txt", "wcwidth>=0.2.5\n")],
    );
    let (code, all, err) = gates_json(&repo, envs.path());
    assert_eq!(code, 0, "{all}\n{err}");
    assert_eq!(gate(&all, "test")["counts"]["passed"], 2, "{all}");
    let words = err.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("the change edits `docs/requirements.txt`: set up in two phases"),
        "{err}"
    );
}

/// A change that edits only a file the base's `requirements.txt` includes (`-r
/// docs/requirements.txt`) changes the dependency files. Before, it was taken for the base's:
/// `vibeloop gates` set it up with network over the checkout, and pip followed the include to
/// the change's URL (the bot kept the base's environment, without what the change asks for).
/// Now the download phase refuses the URL by name and runs nothing.
#[test]
fn a_url_in_a_file_a_requirements_file_includes_never_reaches_pip_with_network() {
    let (_d, repo) = project(&[
        ("requirements.txt", "pytest\n-r docs/requirements.txt\n"),
        ("docs/requirements.txt", "wcwidth>=0.2\n"),
        ("widthy.py", WIDTHY),
        ("tests/test_width.py", WIDTHY_TESTS),
    ]);
    change(
        &repo,
        "change",
        &[(
            "docs/requirements.txt",
            "wcwidth>=0.2\nevil @ https://x.example/evil.tar.gz\n",
        )],
    );
    let envs = tempfile::tempdir().unwrap();
    let (code, out) = crate::ecosystems::gates(&repo, envs.path(), &[]);
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(code, 1, "{out}");
    for said in [
        "The download phase did not run",
        "`\"evil @ https://x.example/evil.tar.gz\"` in docs/requirements.txt: it names a URL",
    ] {
        assert!(words.contains(said), "no {said:?} in:\n{out}");
    }
}

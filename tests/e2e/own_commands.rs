//! Lint and typecheck as the project runs them, and a gate that cannot run on the base: a
//! project whose `mypy .` fails before any change ("Duplicate module named setup": an example
//! project in `docs/` beside its own `setup.py`) is checked the way its pre-commit hook checks
//! it, and where nothing says how, the base's own failure holds no change back.

use crate::ecosystems::{gate, gates, gates_json, project};
use crate::ecosystems_run::{change_script, run};

const PYPROJECT: &str = "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[project.optional-dependencies]\ntest = [\"pytest\", \"mypy==1.10.0\"]\n\n[tool.setuptools]\npy-modules = [\"calc\"]\n\n[tool.mypy]\nignore_missing_imports = true\n";

/// A project with an example project of its own under `docs/`: two modules named `setup`.
fn with_examples(
    extra: &[(&'static str, &'static str)],
) -> (tempfile::TempDir, std::path::PathBuf) {
    let mut files = vec![
        ("pyproject.toml", PYPROJECT),
        ("setup.py", "from setuptools import setup\n\nsetup()\n"),
        (
            "docs/examples/setup.py",
            "from setuptools import setup\n\nsetup(name=\"example\")\n",
        ),
        (
            "calc.py",
            "def add(a: int, b: int) -> int:\n    return a - b\n",
        ),
        (
            "tests/test_sub.py",
            "from calc import add\n\n\ndef test_add_zero() -> None:\n    assert add(1, 0) == 1\n",
        ),
    ];
    files.extend_from_slice(extra);
    project(&files)
}

const MYPY_HOOK: &str = "repos:\n  - repo: https://github.com/pre-commit/mirrors-mypy\n    rev: v1.10.0\n    hooks:\n      - id: mypy\n        args: [--ignore-missing-imports]\n        exclude: ^docs/\n";

#[test]
fn typecheck_runs_as_the_projects_pre_commit_hook_does() {
    let (_d, repo) = with_examples(&[(".pre-commit-config.yaml", MYPY_HOOK)]);
    let envs = tempfile::tempdir().unwrap();
    let (code, all, err) = gates_json(&repo, envs.path());
    let typecheck = gate(&all, "typecheck");
    assert_eq!(typecheck["status"], "passed", "{typecheck}\n{err}");
    assert_eq!(code, 0, "{all}\n{err}");
    let (_, explained) = gates(&repo, envs.path(), &["--explain"]);
    assert!(
        explained.contains(
            "the command from .pre-commit-config.yaml's mypy hook (its files and exclude patterns)"
        ),
        "{explained}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typecheck_that_fails_on_the_base_the_same_way_holds_no_change_back() {
    let (_d, repo) = with_examples(&[]);
    let goal = "add() adds";
    let script = change_script(
        goal,
        "calc.py",
        (
            "tests/test_add.py",
            "from calc import add\n\n\ndef test_adds() -> None:\n    assert add(2, 3) == 5\n",
        ),
        (
            "calc.py",
            "def add(a: int, b: int) -> int:\n    return a + b\n",
        ),
    );
    let (code, stdout, stderr, _) = run(script, &repo, goal).await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    for line in [
        "gate typecheck: passed",
        "gate test: passed",
        "T-1 completed",
    ] {
        assert!(stdout.contains(line), "no {line:?} in:\n{stdout}\n{stderr}");
    }
}

/// `go vet` flags the test code's unkeyed `net.TCPAddr{…}`: that is the lint gate's to say.
/// Setup only makes the environment, so the tests still run (setup used to vet too, and failed).
#[test]
fn a_go_modules_vet_finding_is_lints_not_setups() {
    let (_d, repo) = project(&[
        ("go.mod", "module example.com/geo\n\ngo 1.21\n"),
        (
            "geo.go",
            "package geo\n\nimport \"image\"\n\n// Shift moves p by d.\nfunc Shift(p, d image.Point) image.Point { return p.Add(d) }\n",
        ),
        (
            "geo_test.go",
            "package geo\n\nimport (\n\t\"image\"\n\t\"net\"\n\t\"testing\"\n)\n\nfunc TestShift(t *testing.T) {\n\taddr := net.TCPAddr{nil, 8080, \"\"}\n\tif got := Shift(image.Pt(1, 2), image.Pt(3, addr.Port)); got != image.Pt(4, 8082) {\n\t\tt.Fatalf(\"got %v\", got)\n\t}\n}\n",
        ),
    ]);
    let envs = tempfile::tempdir().unwrap();
    let (_, all, err) = gates_json(&repo, envs.path());
    let test = gate(&all, "test");
    assert_eq!(test["status"], "passed", "{test}\n{err}");
    let lint = gate(&all, "lint");
    assert_eq!(lint["status"], "failed", "{lint}");
    assert!(lint.to_string().contains("unkeyed fields"), "{lint}");
}

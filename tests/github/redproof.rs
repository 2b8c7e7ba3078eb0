//! Red proof in a real container: new tests run against the base must fail as tests, or
//! fail to load for a name the plan adds. Passing tests, or tests that cannot even be
//! collected for another reason, prove nothing. Reported as `hive/red-proof`.

use crate::support;

use std::time::Duration;

use support::bot::{app_key_path, app_public_key};
use support::fake_github::{self, FakeGitHub};
use vibeloop::gates::redproof::{self, Verdict};
use vibeloop::sandbox::{Backend, Kind, SandboxSpec};

const CALC: &str = "def add(a, b):\n    return a - b\n";

async fn verdict_for(tests: &str) -> (Verdict, vibeloop::sandbox::CommandOutput) {
    verdict_planned(tests, "Make add() add.").await
}

/// The verdict on `tests` (as `tests/test_calc.py`) with a plan that says `plan`.
async fn verdict_planned(tests: &str, plan: &str) -> (Verdict, vibeloop::sandbox::CommandOutput) {
    let dir = tempfile::tempdir().unwrap();
    let wt = dir.path().join("wt");
    std::fs::create_dir_all(wt.join("tests")).unwrap();
    std::fs::write(wt.join("calc.py"), CALC).unwrap();
    std::fs::write(wt.join("tests/__init__.py"), "").unwrap();
    std::fs::write(wt.join("tests/test_calc.py"), tests).unwrap();
    let (backend, _) = Backend::detect(dir.path(), Some(Kind::Docker))
        .await
        .unwrap();
    let spec = SandboxSpec {
        repo: "acme/calc".into(),
        ticket: "T-1".into(),
        role: format!("redproof-{:x}", rand::random::<u32>()),
        worktree: wt.clone(),
        read_only: vec!["tests".into()],
        locked: vec![],
        image: "vibeloop-runner:python".into(),
        network: false,
        cpus: 1.0,
        memory_mb: 512,
        pids: 256,
        disk_mb: 1024,
        cache: None,
        cache_writable: false,
        ca_bundle: None,
        env: vec![],
        prepare: None,
    };
    let sandbox = backend.start(&spec).await.unwrap();
    let files = ["tests/test_calc.py".to_owned()];
    let proving = redproof::Proving {
        known: &[],
        files: &files,
        plan,
        root: &wt,
        report: None,
    };
    let r = redproof::run(
        &sandbox,
        "python3 -m pytest -q -rA -p no:cacheprovider tests",
        Duration::from_secs(60),
        &proving,
    )
    .await
    .unwrap();
    sandbox.stop().await;
    r
}

#[tokio::test]
async fn tests_failing_on_the_base_hold() {
    let tests = "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n\ndef test_zero():\n    assert add(0, 0) == 0\n";
    let (v, out) = verdict_for(tests).await;
    let Verdict::Red { failed, total, .. } = &v else {
        panic!("{v:?}\n{}", out.output)
    };
    assert_eq!((*failed, *total), (1, 2), "{}", out.output);
    let names: Vec<String> = v.wanted().iter().map(|w| w.label()).collect();
    assert_eq!(
        names,
        [
            "the tests of tests/test_calc.py",
            "tests/test_calc.py::test_add"
        ]
    );
}

#[tokio::test]
async fn a_test_of_a_function_the_plan_adds_holds() {
    let tests = "from calc import multiply\n\ndef test_m():\n    assert multiply(2, 3) == 6\n";
    let (v, out) = verdict_planned(tests, "Add multiply(a, b) to calc.py.").await;
    assert!(v.holds(), "{v:?}\n{}", out.output);
    assert_eq!(
        v.describe(),
        "holds: tests/test_calc.py cannot load yet: `multiply` is not in calc, as they should"
    );
}

#[tokio::test]
async fn tests_passing_on_the_base_do_not() {
    let (v, out) =
        verdict_for("from calc import add\n\ndef test_zero():\n    assert add(0, 0) == 0\n").await;
    assert_eq!(v, Verdict::Green, "{}", out.output);
}

#[tokio::test]
async fn tests_that_cannot_run_do_not() {
    for broken in [
        "from calc import multiply\n\ndef test_m():\n    assert multiply(2, 3) == 6\n",
        "def test_x(:\n    pass\n",
    ] {
        let (v, out) = verdict_for(broken).await;
        assert!(matches!(v, Verdict::Broken { .. }), "{v:?}\n{}", out.output);
        assert!(!v.holds());
    }
}

#[tokio::test]
async fn the_verdict_is_a_check_run() {
    let dir = tempfile::tempdir().unwrap();
    let gh = FakeGitHub::start(fake_github::Options {
        app_id: 5,
        public_key_pem: app_public_key(),
        git_root: dir.path().join("gh"),
        token_ttl: Duration::from_secs(3600),
    })
    .await;
    gh.add_installation(9, "acme");
    gh.add_repo(9, "acme/calc", &[("calc.py", CALC)]);
    let creds = vibeloop::config::AppCredentials {
        app_id: 5,
        private_key_pem: std::fs::read_to_string(app_key_path()).unwrap().into(),
    };
    let app = vibeloop::github::GitHubApp::new(
        &creds,
        &url::Url::parse(&gh.url).unwrap(),
        &url::Url::parse(&format!("{}/graphql", gh.url)).unwrap(),
    )
    .unwrap();
    let client = app
        .repo(
            vibeloop::ids::InstallationId(9),
            &vibeloop::ids::RepoName::parse("acme/calc").unwrap(),
        )
        .await
        .unwrap();
    let sha =
        vibeloop::ids::CommitSha::parse(&gh.branch_sha("acme/calc", "main").unwrap()).unwrap();
    let tests = "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n";
    let (v, out) = verdict_for(tests).await;
    vibeloop::hive::checks::red_proof(&client, &sha, "vibeloop:T-1:red-proof", &v, &out)
        .await
        .unwrap();
    let runs = gh.check_runs("acme/calc");
    assert_eq!((runs.len(), runs[0].name.as_str()), (1, "hive/red-proof"));
    assert_eq!(runs[0].conclusion.as_deref(), Some("success"));
    assert!(
        runs[0]
            .summary
            .as_deref()
            .unwrap()
            .contains("1 of 1 tests fail on the base"),
        "{:?}",
        runs[0].summary
    );
}

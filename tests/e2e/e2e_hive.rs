//! The whole hive end to end: the real bot binary, the fake GitHub (REST and git), the fake
//! model server, real containers. Each test is one story a maintainer would tell.

use crate::support;

use support::fake_llm::Step;
use support::hive::*;
use vibeloop::ticket::TaskState;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_labelled_issue_is_planned_tested_built_reviewed_merged_and_tagged() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.label().await;
    let t = w.wait_state(TaskState::AwaitingVerification).await;
    let pr = w
        .bot
        .wait_until("the pull request", WAIT, || async {
            w.gh.pulls(REPO).into_iter().next()
        })
        .await;
    assert_eq!(t.pr_number, Some(pr.number));
    w.bot
        .wait_until("the approval prompt", WAIT, || async {
            w.ticket()
                .await
                .filter(|t| t.detail.as_deref().unwrap_or("").contains("/hive approve"))
        })
        .await;
    let id = w.say("/hive approve").await;
    assert!(w.reply_to(id).await.contains("approved"));
    let done = w.wait_state(TaskState::Completed).await;
    println!("{:?}", w.checkpoints().await);
    let main = w.gh.branch_sha(REPO, "main").unwrap();
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "test_add_more.py")
            .as_deref(),
        Some(NEW_TESTS)
    );
    let tags = w.gh.tags(REPO);
    assert!(
        tags.contains(&("auto-v0.0.1".to_owned(), main.clone())),
        "{tags:?}"
    );
    assert!(
        tags.contains(&("LATEST_STABLE".to_owned(), main.clone())),
        "{tags:?}"
    );
    assert!(done.detail.unwrap().contains("auto-v0.0.1"));
    let pr = w.gh.pull(REPO, pr.number).unwrap();
    assert!(pr.merged && !pr.draft, "{pr:?}");
    // Each role ran through its phases, in order, on the ticket's timeline.
    let store = w.bot.store().await;
    let events = store.events(done.key).await.unwrap();
    store.close().await;
    let phases: Vec<String> = events
        .iter()
        .filter(|(_, kind, data)| kind == "stage_enter" && data["role"] == "builder")
        .map(|(_, _, data)| data["stage"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        phases,
        [
            "claim",
            "load_context",
            "assemble_prompt",
            "agent_loop",
            "final_response",
            "write_result",
            "cleanup"
        ]
    );
    let result = events
        .iter()
        .find(|(_, kind, data)| kind == "result" && data["role"] == "builder")
        .expect("a result event");
    assert_eq!(result.2["files"], serde_json::json!(["calc.py"]));
    // What the agents spent is shown on the issue and in the gates' summaries.
    assert!(
        w.status_comment().contains("| Budget spent | $"),
        "{}",
        w.status_comment()
    );
    let test_run =
        w.gh.check_runs(REPO)
            .into_iter()
            .find(|c| c.name == "hive/test")
            .unwrap();
    assert!(
        test_run
            .summary
            .unwrap_or_default()
            .contains("Budget spent so far")
    );
    support::openapi::assert_requests_valid(&w.gh.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_cap_stops_the_ticket_with_a_clear_report() {
    // The Architect's one call already spends more tokens than the cap allows.
    let yml = "gates: { test: \"python3 -m unittest -v\" }\nbudget: { max_tokens: 100 }\n";
    let w = World::start(happy_script(), &calc(yml)).await;
    w.label().await;
    let t = w.wait_state(TaskState::HumanNeeded).await;
    let why = t.detail.unwrap_or_default();
    assert!(why.contains("budget") && why.contains("100"), "{why}");
    assert!(
        w.llm.requests("builder").is_empty() && w.llm.requests("breaker").is_empty(),
        "an agent ran over budget"
    );
    assert!(
        w.gh.labels(REPO, w.issue)
            .contains(&"hive:needs-human".to_owned())
    );
    // The status comment is rewritten after the state moves: wait for the report in it.
    let comment = w
        .bot
        .wait_until("the report in the status comment", WAIT, || async {
            Some(w.status_comment()).filter(|c| c.contains("A person decides"))
        })
        .await;
    assert!(comment.contains("Budget spent"), "{comment}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_a_builders_command_rewrites_never_reaches_its_branch() {
    // The local sandbox cannot mount the tests read-only, so a repository script the Builder
    // runs can rewrite one. The commit takes only what the Builder may change: the rewrite is
    // left behind, and the change goes through with the tests as they were.
    const BUILD: &str = "open('test_calc.py', 'w').write('def test_nothing():\\n    pass\\n')\n";
    let hive_yml = "gates: { test: \"python3 -m unittest -v\", build: \"python3 build.py\" }\n";
    let mut files = calc(hive_yml);
    files.push(("build.py", BUILD.into()));
    let mut script = happy_script();
    script.insert(
        "builder".into(),
        vec![
            Step::tool("run_command", serde_json::json!({ "name": "build" })),
            Step::tool(
                "write_file",
                serde_json::json!({ "path": "calc.py", "content": CALC_FIXED }),
            ),
            Step::say("Fixed."),
        ],
    );
    let w = World::start_with(
        script,
        &files,
        vec![("VIBELOOP_SANDBOX".into(), "local".into())],
    )
    .await;
    w.label().await;
    let t = w.waiting_for_approval().await;
    assert_eq!(t.state, TaskState::AwaitingVerification);
    assert_eq!(
        w.gh.file_on_branch(REPO, "feat/T-1", "test_calc.py")
            .as_deref(),
        Some(TESTS)
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "feat/T-1", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
    assert_eq!(w.conclusions("hive/security"), ["success"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_failure_goes_back_to_the_builder_and_is_fixed() {
    let script = script_with(vec![
        ("builder", writes("calc.py", CALC_WRONG, "add() fixed.")),
        (
            "builder|attempt 2 of",
            writes("calc.py", CALC_FIXED, "add() adds now."),
        ),
    ]);
    let w = World::start(script, &calc(AUTO_YML)).await;
    w.label().await;
    w.wait_state(TaskState::Completed).await;
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );

    // Attempt 1 failed hive/test, attempt 2 passed it, and the rebased commit passed again.
    assert_eq!(
        w.conclusions("hive/test"),
        ["failure", "success", "success"]
    );
    // The second attempt was told what failed, as structured findings.
    let tasks = tasks_of(&w.llm, "builder");
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    assert!(
        tasks[1].contains("attempt 2 of 4")
            && tasks[1].contains("gate_test")
            && tasks[1].contains("AssertionError"),
        "{}",
        tasks[1]
    );
    let status = w.status_comment();
    assert!(
        status.contains("| 1 |") && status.contains("| 2 |"),
        "{status}"
    );
    let pr = w.gh.pulls(REPO).remove(0);
    assert!(
        pr.body.contains("Attempts of the Builder: 2"),
        "{}",
        pr.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exhausted_attempts_ask_a_person() {
    let script = script_with(vec![
        ("builder", writes("calc.py", CALC_WRONG, "add() fixed.")),
        (
            "builder|attempt 2 of",
            writes(
                "calc.py",
                "def add(a, b):\n    return 0\n",
                "add() fixed again.",
            ),
        ),
    ]);
    let w = World::start(
        script,
        &calc("gates: { test: \"python3 -m unittest -v\" }\nlimits: { max_retries: 1 }\n"),
    )
    .await;
    w.label().await;
    w.wait_state(TaskState::HumanNeeded).await;
    let status = w.status_comment();
    assert!(
        status.contains("2 attempt(s): no attempts left"),
        "{status}"
    );
    assert!(
        status.contains("`hive/test`") && status.contains("/hive retry"),
        "{status}"
    );
    assert!(
        w.gh.labels(REPO, w.issue)
            .contains(&"hive:needs-human".to_owned())
    );
    assert!(w.gh.pulls(REPO).is_empty());
    assert_eq!(tasks_of(&w.llm, "builder").len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_critic_veto_goes_back_to_the_builder() {
    const DEBUG: &str = "def add(a, b):\n    print(\"debug\")\n    return a + b\n";
    let veto = serde_json::json!({
        "verdict": "veto",
        "summary": "Correct, but it prints on every call.",
        "comments": [{ "path": "calc.py", "line": 2, "body": "Remove the debug print." }],
    });
    let script = script_with(vec![
        ("builder", writes("calc.py", DEBUG, "add() adds.")),
        (
            "builder|attempt 2 of",
            writes("calc.py", CALC_FIXED, "Print removed."),
        ),
        (
            "critic|print(\"debug\")",
            vec![Step::say(&veto.to_string())],
        ),
    ]);
    let w = World::start(script, &calc(AUTO_YML)).await;
    w.label().await;
    w.wait_state(TaskState::Completed).await;
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );

    let critic: Vec<_> =
        w.gh.check_runs(REPO)
            .into_iter()
            .filter(|c| c.name == "hive/critic")
            .collect();
    let verdicts = w.conclusions("hive/critic");
    assert_eq!(verdicts, ["failure", "success"]);
    assert_eq!(critic[0].annotations[0]["path"], "calc.py");
    let pr = w.gh.pulls(REPO).remove(0).number;
    assert_eq!(w.gh.reviews(REPO, pr).len(), 2, "one review per round");
    let inline = w.gh.review_comments(REPO, pr);
    assert_eq!(inline.len(), 1, "{inline:?}");
    assert_eq!(
        (inline[0].path.as_str(), inline[0].line),
        ("calc.py", Some(2))
    );
    let tasks = tasks_of(&w.llm, "builder");
    assert!(tasks[1].contains("Remove the debug print."), "{}", tasks[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reflector_sends_a_plan_back_for_a_correction() {
    let mut better: serde_json::Value = serde_json::from_str(&plan_json()).unwrap();
    better["plan"]["title"] = "Make add() add for all integers".into();
    let finding = serde_json::json!([{ "code": "missing_case", "message": "Say what happens with negative numbers." }]);
    let script = script_with(vec![
        (
            "architect",
            vec![Step::say(&plan_json()), Step::say(&better.to_string())],
        ),
        (
            "reflector|\"Make add() add\"",
            vec![Step::say(&finding.to_string())],
        ),
        ("reflector", vec![Step::say("[]")]),
    ]);
    let yml = "gates: { test: \"python3 -m unittest -v\" }\nreview: { reflector: true, require_human_approval: false }\n";
    let w = World::start(script, &calc(yml)).await;
    w.label().await;
    w.wait_state(TaskState::Completed).await;
    // The plan went back once with the Reflector's finding; the corrected plan and then the
    // Breaker's tests passed it.
    let architect = w.llm.requests("architect");
    assert_eq!(architect.len(), 2);
    let correction = architect[1]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        correction.contains("reflector_missing_case") && correction.contains("negative numbers"),
        "{correction}"
    );
    let tasks = tasks_of(&w.llm, "reflector");
    assert_eq!(tasks.len(), 3, "plan, corrected plan, tests: {tasks:?}");
    assert!(
        tasks[2].contains("Check this tests") && tasks[2].contains("test_add_more.py"),
        "{}",
        tasks[2]
    );
    assert!(
        w.status_comment()
            .contains("Make add() add for all integers")
    );
}

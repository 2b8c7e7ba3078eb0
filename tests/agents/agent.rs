//! The agent loop against the fake model server over real HTTP, with real files: a tool
//! session, recovery from malformed arguments, 429 with Retry-After, stops on oscillation and
//! on budget, confinement, each role's write scope, and Anthropic's API.

use crate::support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::fake_llm::{FakeLlm, Script, Step};
use vibeloop::agent::events::{AgentEvent, EventSink};
use vibeloop::agent::tools::WriteScope;
use vibeloop::agent::{Limits, Session, StopReason, Toolbox};
use vibeloop::llm::budget::{Caps, Ledger, Prices};
use vibeloop::llm::{LlmClient, Message, Provider, Route};
use vibeloop::pathset::PathSet;

fn route(url: &str, provider: Provider) -> Route {
    Route {
        provider,
        base_url: url::Url::parse(url).unwrap(),
        api_key: Some("sk-test".to_owned().into()),
        model: "fake".into(),
        temperature: 0.2,
    }
}

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::create_dir_all(dir.path().join("tests")).unwrap();
    std::fs::write(
        dir.path().join("src/calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("tests/test_calc.py"),
        "from src.calc import add\n",
    )
    .unwrap();
    dir
}

fn builder_scope() -> WriteScope {
    WriteScope::Except(vec![
        PathSet::new(&["tests/".into()]),
        PathSet::new(&[".github/".into()]),
    ])
}

struct Run {
    outcome: vibeloop::agent::Outcome,
    events: Vec<AgentEvent>,
    ledger: Ledger,
}

async fn run(
    llm: &FakeLlm,
    provider: Provider,
    root: &std::path::Path,
    scope: WriteScope,
    caps: Caps,
    role: &str,
) -> Run {
    let base = match provider {
        Provider::Openai => llm.url.clone(),
        Provider::Anthropic => llm.url.trim_end_matches("/v1").to_owned(),
    };
    let client = LlmClient::new(route(&base, provider)).unwrap();
    let ledger = Ledger::new(caps, BTreeMap::new());
    let (sink, mut rx) = EventSink::new();
    let prices = Prices::new(BTreeMap::from([(
        "fake".into(),
        vibeloop::llm::budget::Price {
            prompt: 1.0,
            completion: 2.0,
        },
    )]));
    let session = Session {
        role,
        llm: &client,
        prices: &prices,
        ledger: &ledger,
        limits: Limits::default(),
        events: sink,
        step_retry: 0,
        act_first: false,
        interrupt: None,
    };
    let mut toolbox = Toolbox::new(root.to_owned(), scope);
    let system = format!(
        "# Role: {}\nWork carefully.",
        role[..1].to_uppercase() + &role[1..]
    );
    let outcome = session
        .run(
            vec![Message::system(system), Message::user("Fix add().")],
            &mut toolbox,
        )
        .await
        .unwrap();
    drop(session);
    let mut events = Vec::new();
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    Run {
        outcome,
        events,
        ledger,
    }
}

fn script(role: &str, steps: Vec<Step>) -> Script {
    Script::from([(role.to_owned(), steps)])
}

/// The tool results the model received, in order.
fn tool_results(llm: &FakeLlm, role: &str) -> Vec<Value> {
    let last = llm.requests(role).pop().unwrap();
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].clone())
        .collect()
}

#[tokio::test]
async fn a_multi_step_tool_session_changes_the_code() {
    let dir = repo();
    let llm = FakeLlm::start(script(
        "builder",
        vec![
            Step::tool("list_files", json!({})),
            Step::tool("read_file", json!({ "path": "src/calc.py" })),
            Step::tool(
                "edit_file",
                json!({ "path": "src/calc.py", "search": "a - b", "replace": "a + b" }),
            ),
            Step::say("add() adds now."),
        ],
    ))
    .await;
    let r = run(
        &llm,
        Provider::Openai,
        dir.path(),
        builder_scope(),
        Caps::none(),
        "builder",
    )
    .await;
    assert_eq!(r.outcome.stop, StopReason::Finished);
    assert_eq!(
        (r.outcome.iterations, r.outcome.summary.as_str()),
        (4, "add() adds now.")
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );
    let kinds: Vec<&str> = r.events.iter().map(AgentEvent::kind).collect();
    assert_eq!(
        &kinds[..5],
        [
            "iteration_start",
            "llm_usage",
            "tool_start",
            "tool_complete",
            "iteration_start"
        ]
    );
    assert_eq!(kinds.iter().filter(|k| **k == "tool_complete").count(), 3);
    let spent = r.ledger.total();
    assert_eq!(spent.calls, 4);
    assert!(spent.tokens() > 0 && spent.cost_usd > 0.0, "{spent:?}");
    // Every request offered the tools.
    assert!(
        llm.requests("builder")
            .iter()
            .all(|q| q["tools"].as_array().is_some_and(|t| !t.is_empty()))
    );
}

#[tokio::test]
async fn malformed_arguments_come_back_as_an_error_the_model_can_fix() {
    let dir = repo();
    let llm = FakeLlm::start(script(
        "builder",
        vec![
            Step::tool(
                "read_file",
                Value::String("{\"path\": \"src/calc.py\"".into()),
            ),
            Step::tool("read_file", json!({ "path": "src/calc.py" })),
            Step::say("Read it."),
        ],
    ))
    .await;
    let r = run(
        &llm,
        Provider::Openai,
        dir.path(),
        builder_scope(),
        Caps::none(),
        "builder",
    )
    .await;
    assert_eq!(r.outcome.stop, StopReason::Finished);
    let results = tool_results(&llm, "builder");
    let first: Value = serde_json::from_str(results[0].as_str().unwrap()).unwrap();
    assert_eq!(first["error"], "bad_arguments");
    assert!(results[1].as_str().unwrap().contains("return a - b"));
}

#[tokio::test]
async fn a_429_waits_for_retry_after() {
    let dir = repo();
    let llm = FakeLlm::start(script(
        "builder",
        vec![
            Step::Fail {
                status: 429,
                retry_after: Some(1),
            },
            Step::say("Nothing to do."),
        ],
    ))
    .await;
    let started = Instant::now();
    let r = run(
        &llm,
        Provider::Openai,
        dir.path(),
        builder_scope(),
        Caps::none(),
        "builder",
    )
    .await;
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After was not honoured"
    );
    assert_eq!(r.outcome.stop, StopReason::Finished);
    assert_eq!(llm.requests("builder").len(), 2);
}

#[tokio::test]
async fn the_same_call_three_times_stops_the_run() {
    let dir = repo();
    let same = || Step::tool("read_file", json!({ "path": "src/calc.py" }));
    let llm = FakeLlm::start(script(
        "builder",
        vec![
            same(),
            Step::tool("list_files", json!({})),
            same(),
            same(),
            Step::say("never"),
        ],
    ))
    .await;
    let r = run(
        &llm,
        Provider::Openai,
        dir.path(),
        builder_scope(),
        Caps::none(),
        "builder",
    )
    .await;
    assert_eq!(
        r.outcome.stop,
        StopReason::Oscillation {
            tool: "read_file".into()
        }
    );
    assert_eq!(
        llm.requests("builder").len(),
        4,
        "the run went on after oscillating"
    );
}

#[tokio::test]
async fn a_spent_budget_stops_before_the_next_call() {
    let dir = repo();
    let steps = (0..10)
        .map(|i| {
            Step::tool(
                "read_file",
                json!({ "path": "src/calc.py", "start_line": i % 2 + 1 }),
            )
        })
        .collect();
    let llm = FakeLlm::start(script("builder", steps)).await;
    let caps = Caps {
        max_tokens: Some(1),
        ..Caps::none()
    };
    let r = run(
        &llm,
        Provider::Openai,
        dir.path(),
        builder_scope(),
        caps,
        "builder",
    )
    .await;
    let StopReason::Budget { message } = &r.outcome.stop else {
        panic!("{:?}", r.outcome.stop)
    };
    assert!(message.contains("budget.max_tokens"), "{message}");
    assert_eq!(
        llm.requests("builder").len(),
        1,
        "a call was made over budget"
    );
}

#[tokio::test]
async fn paths_outside_the_worktree_are_refused() {
    let dir = repo();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "s3cret").unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("src/link")).unwrap();
    let attempts = [
        Step::tool("read_file", json!({ "path": "../secret.txt" })),
        Step::tool(
            "read_file",
            json!({ "path": outside.path().join("secret.txt") }),
        ),
        Step::tool("list_files", json!({})),
        Step::tool("read_file", json!({ "path": "src/link/secret.txt" })),
        Step::tool("list_files", json!({})),
        Step::tool(
            "write_file",
            json!({ "path": "src/link/planted.txt", "content": "x" }),
        ),
        Step::say("done"),
    ];
    let llm = FakeLlm::start(script("builder", attempts.to_vec())).await;
    run(
        &llm,
        Provider::Openai,
        dir.path(),
        builder_scope(),
        Caps::none(),
        "builder",
    )
    .await;
    let results = tool_results(&llm, "builder");
    for i in [0, 1, 3, 5] {
        let r: Value = serde_json::from_str(results[i].as_str().unwrap())
            .unwrap_or_else(|_| panic!("call {i} succeeded: {}", results[i]));
        assert_eq!(r["error"], "bad_path", "call {i}: {r}");
    }
    assert!(
        !results
            .iter()
            .any(|r| r.as_str().unwrap_or("").contains("s3cret"))
    );
    assert!(!outside.path().join("planted.txt").exists());
}

#[tokio::test]
async fn each_role_writes_only_where_it_may() {
    // (role, scope, path, allowed)
    let cases = [
        ("critic", WriteScope::None, "src/calc.py", false),
        (
            "breaker",
            WriteScope::Only(PathSet::new(&["tests/".into()])),
            "tests/test_new.py",
            true,
        ),
        (
            "breaker",
            WriteScope::Only(PathSet::new(&["tests/".into()])),
            "src/calc.py",
            false,
        ),
        ("builder", builder_scope(), "src/calc.py", true),
        ("builder", builder_scope(), "tests/test_calc.py", false),
        ("builder", builder_scope(), ".github/hive.yml", false),
    ];
    for (role, scope, path, allowed) in cases {
        let dir = repo();
        let steps = vec![
            Step::tool("write_file", json!({ "path": path, "content": "x = 1\n" })),
            Step::say("done"),
        ];
        let llm = FakeLlm::start(script(role, steps)).await;
        let no_write_tools = matches!(scope, WriteScope::None);
        run(
            &llm,
            Provider::Openai,
            dir.path(),
            scope,
            Caps::none(),
            role,
        )
        .await;
        let written =
            std::fs::read_to_string(dir.path().join(path)).unwrap_or_default() == "x = 1\n";
        assert_eq!(written, allowed, "{role} writing {path}");
        if no_write_tools {
            let offered: Vec<String> = llm.requests(role)[0]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect();
            assert!(
                !offered.iter().any(|t| t.contains("write")
                    || t.contains("edit")
                    || t.contains("patch")
                    || t.contains("delete")
                    || t.contains("move")),
                "{offered:?}"
            );
        }
    }
}

#[tokio::test]
async fn anthropics_api_works_the_same_loop() {
    let dir = repo();
    let llm = FakeLlm::start(script(
        "critic",
        vec![
            Step::tool("read_file", json!({ "path": "src/calc.py" })),
            Step::say("It subtracts."),
        ],
    ))
    .await;
    let r = run(
        &llm,
        Provider::Anthropic,
        dir.path(),
        WriteScope::None,
        Caps::none(),
        "critic",
    )
    .await;
    assert_eq!(
        (r.outcome.stop.clone(), r.outcome.summary.as_str()),
        (StopReason::Finished, "It subtracts.")
    );
    assert_eq!(llm.apis(), ["anthropic", "anthropic"]);
    let second = &llm.requests("critic")[1];
    assert!(
        second["system"]
            .as_str()
            .unwrap()
            .starts_with("# Role: Critic")
    );
    assert!(second["tools"][0]["input_schema"].is_object());
    let last_turn = second["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last_turn["role"], "user");
    assert_eq!(last_turn["content"][0]["type"], "tool_result");
    assert!(
        last_turn["content"][0]["content"]
            .as_str()
            .unwrap()
            .contains("a - b")
    );
    assert!(r.ledger.total().tokens() > 0);
}

#[tokio::test]
async fn a_provider_refusing_required_tool_choice_gets_auto() {
    let llm = FakeLlm::start(script(
        "builder",
        vec![Step::say("ok"), Step::say("ok again")],
    ))
    .await;
    llm.reject_required();
    let client = LlmClient::new(route(&llm.url, Provider::Openai)).unwrap();
    let tools = Toolbox::new(std::env::temp_dir(), WriteScope::None).specs();
    let msgs = [Message::system("# Role: Builder"), Message::user("hi")];
    let req = vibeloop::llm::Request {
        require_tool: true,
        ..vibeloop::llm::Request::new(&msgs, &tools)
    };
    client.complete(req).await.unwrap();
    client.complete(req).await.unwrap();
    // One refusal, then auto for this and every later request.
    assert_eq!(llm.apis(), ["rejected", "openai", "openai"]);
    let reqs = llm.requests("builder");
    assert!(reqs.iter().all(|r| r["tool_choice"] == "auto"), "{reqs:?}");
}

#[tokio::test]
async fn retried_steps_run_warmer() {
    let llm = FakeLlm::start(script("builder", vec![Step::say("a"), Step::say("b")])).await;
    let client = LlmClient::new(route(&llm.url, Provider::Openai)).unwrap();
    let msgs = [Message::system("# Role: Builder"), Message::user("hi")];
    client
        .complete(vibeloop::llm::Request::new(&msgs, &[]))
        .await
        .unwrap();
    client
        .complete(vibeloop::llm::Request {
            step_retry: 2,
            ..vibeloop::llm::Request::new(&msgs, &[])
        })
        .await
        .unwrap();
    let temps: Vec<f64> = llm
        .requests("builder")
        .iter()
        .map(|r| r["temperature"].as_f64().unwrap())
        .collect();
    assert!(
        (temps[0] - 0.2).abs() < 1e-6 && (temps[1] - 0.5).abs() < 1e-6,
        "{temps:?}"
    );
}

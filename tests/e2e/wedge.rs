//! Nothing in a worktree wedges the bot (issue 42, part 5): the Builder's shell replaces
//! `.gitignore` with a FIFO, which the bot's own git would open and block on for good, its job's
//! heartbeat keeping the lease alive. The bot refuses the worktree instead: the ticket stops
//! with the reason, its containers go, and the worker is free for the next job.

use crate::support;

use serde_json::json;
use support::fake_llm::Step;
use support::hive::*;
use vibeloop::ticket::TaskState;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_the_builder_makes_stops_the_ticket_with_the_reason_and_wedges_nothing() {
    let mut builder = vec![Step::tool(
        "shell",
        json!({ "command": "rm -f .gitignore; mkfifo .gitignore" }),
    )];
    builder.extend(writes("calc.py", CALC_FIXED, "add() adds now."));
    let mut files = calc(AUTO_YML);
    files.push((".gitignore", "__pycache__/\n".into()));
    let w = World::start(script_with(vec![("builder", builder)]), &files).await;
    w.label().await;
    let t = w
        .bot
        .wait_until("the ticket to stop with the reason", WAIT, || async {
            w.ticket().await.filter(|t| {
                matches!(t.state, TaskState::HumanNeeded | TaskState::Failed)
                    && t.detail
                        .as_deref()
                        .unwrap_or("")
                        .contains(".gitignore (a FIFO)")
            })
        })
        .await;
    let detail = t.detail.unwrap_or_default();
    assert!(
        detail.contains("The worktree of feat/T-1 holds special files")
            && detail.contains("remove them"),
        "{detail}"
    );
    // Its containers go, as after any ticket that stops.
    let docker = w.docker().await;
    w.bot
        .wait_until("the ticket's containers to go", WAIT, || async {
            docker.containers().await.unwrap().is_empty().then_some(())
        })
        .await;
    w.assert_on_main(&[("calc.py", CALC_BUGGY)]);
}

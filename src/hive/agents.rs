//! The roles of the hive and how one of them runs: its model (routed per role), its prompt
//! (ours, the repository's instructions for coding agents where they apply, and its
//! `.github/hive/<role>.md`), its context, its tools and what it may write, its share of the
//! ticket's budget, and its progress events on the timeline.

use std::time::Instant;

use super::job::JobError;
use super::ticket_run::TicketRun;
use crate::agent::context;
use crate::agent::events::{AgentEvent, EventSink};
use crate::agent::prompts::repo_path;
use std::sync::Arc;

use crate::agent::tools::{CommandRunner, Guide, WriteScope};
use crate::agent::{Limits, Outcome, Session, Toolbox};
use crate::config::repo::HiveConfig;
use crate::llm::Message;
use crate::llm::budget::Ledger;
use crate::pathset::PathSet;
use crate::sandbox::Deferred;
use crate::store::memory::Focus;
pub(super) use crate::ticket::Role;
use crate::workspace::Worktree;

/// What `role` may write: the Architect, the Critic, the Reflector and the chat nothing, the
/// Breaker only the tests, the Builder anything but the tests and the read-only paths (and
/// `.github/`).
pub(super) fn scope(role: Role, config: &HiveConfig) -> WriteScope {
    match role {
        Role::Architect | Role::Critic | Role::Reflector | Role::Chat => WriteScope::None,
        Role::Breaker => WriteScope::Only(config.test_paths()),
        Role::Builder => WriteScope::Except(vec![
            config.test_paths(),
            config.read_only(),
            PathSet::new(&[".github/".into()]),
        ]),
    }
}

/// The tools of `role` on `worktree`; with a sandbox, `run_command` runs the repository's gate
/// commands in it and `shell` (for the roles that write) the role's own command lines.
fn toolbox(
    role: Role,
    config: &HiveConfig,
    worktree: &Worktree,
    sandbox: Option<Arc<Deferred>>,
) -> Toolbox {
    let tools = Toolbox::new(worktree.path.clone(), scope(role, config));
    match sandbox {
        Some(sandbox) => tools.with_commands(CommandRunner {
            sandbox,
            commands: config
                .gates
                .commands()
                .map(|(g, c)| (g.to_owned(), c.to_owned()))
                .collect(),
            timeout: std::time::Duration::from_secs(config.limits.timeout_seconds),
            shell: role.writes(),
            worktree: Some(worktree.clone()),
        }),
        None => tools,
    }
}

/// One assignment of a role.
pub(super) struct Assignment<'a> {
    pub role: Role,
    /// The task, as the user turn of the conversation.
    pub task: String,
    /// Files whose contents the role is shown up front.
    pub context_refs: &'a [String],
    /// The files the role works on, for the repository's instructions (`AGENTS.md` on the way
    /// to them…); none: the repository as a whole.
    pub focus: &'a [String],
    /// How many times this step was tried before.
    pub step_retry: u32,
    /// An earlier conversation to continue (`task` is then the next user turn).
    pub history: Vec<Message>,
    /// Where `run_command` runs, when the role may run the gate commands: started by its
    /// first command.
    pub sandbox: Option<Arc<Deferred>>,
    /// Asked before every model call: `Some(why)` stops the role there.
    pub interrupt: Option<&'a crate::agent::Interrupt>,
    /// The repository's instructions for coding agents, as the base has them.
    pub instructions: Arc<crate::env::instructions::Instructions>,
}

/// What a role did.
pub(super) struct RoleRun {
    pub outcome: Outcome,
    /// Files written, relative to the worktree.
    pub written: Vec<String>,
    /// The repository's instruction files the role was given.
    pub instructions: Vec<String>,
}

/// Runs `a.role` on `worktree`, through the phases claim → load_context → assemble_prompt →
/// agent_loop → final_response → write_result (a `result` event on the timeline and the spend
/// saved) → cleanup (its sandbox stopped), with every event on the ticket's timeline. The
/// caller commits what the role wrote.
pub(super) async fn run_role(
    run: &TicketRun<'_>,
    config: &HiveConfig,
    worktree: &Worktree,
    ledger: &Ledger,
    a: Assignment<'_>,
) -> Result<RoleRun, JobError> {
    let role = a.role.as_str();
    let llm = run
        .hive
        .models
        .client(role)
        .map_err(|e| JobError::permanent(format!("model of the {role}: {e}")))?;
    let key = run.ticket.key;
    let (events, recorder) = record_events(run);
    let session = Session {
        role,
        llm: &llm,
        prices: run.hive.models.prices(),
        ledger,
        limits: Limits::default(),
        events,
        step_retry: a.step_retry,
        act_first: matches!(a.role, Role::Breaker | Role::Builder) && a.history.is_empty(),
        interrupt: a.interrupt,
    };
    let started = Instant::now();
    // Claim: the role may start only while the budget lasts.
    if let Err(e) = session.phase("claim", async { ledger.check() }).await {
        drop(session);
        let _ = recorder.await;
        stop_sandbox(a.sandbox).await;
        return Ok(out_of_budget(e.to_string()));
    }
    let cx = session
        .phase(
            "load_context",
            project_context(run, worktree, a.context_refs),
        )
        .await;
    let (guide, instructions) = Guide::start(a.instructions.clone(), a.focus);
    let messages = session
        .phase("assemble_prompt", async {
            if !a.history.is_empty() {
                let mut m = a.history.clone();
                m.push(Message::user(a.task.clone()));
                return m;
            }
            first_messages(run, config, role, &instructions, &a.task, &cx).await
        })
        .await;
    let mut toolbox = toolbox(a.role, config, worktree, a.sandbox.clone()).with_guide(guide);
    let outcome = session
        .phase("agent_loop", session.run(messages, &mut toolbox))
        .await;
    let outcome = session.phase("final_response", async { outcome }).await;
    let written: Vec<String> = toolbox.written().iter().cloned().collect();
    let given: Vec<String> = toolbox.instructions_shown().iter().cloned().collect();
    if !given.is_empty() {
        let data = serde_json::json!({ "role": role, "files": given });
        run.event("instructions", data).await;
    }
    session
        .phase("write_result", async {
            if let Ok(o) = &outcome {
                session.events.emit(AgentEvent::Result {
                    role: role.to_owned(),
                    stop: o.stop.describe(),
                    iterations: o.iterations,
                    files: written.clone(),
                    summary: crate::agent::events::summarize(&o.summary, 400),
                });
            }
            run.hive.store.save_budget(key, &ledger.by_role()).await
        })
        .await?;
    session
        .phase("cleanup", async {
            // The toolbox holds the sandbox too; once it is gone, the role's sandbox stops.
            drop(toolbox);
            stop_sandbox(a.sandbox).await;
        })
        .await;
    drop(session);
    let _ = recorder.await;
    tracing::info!(
        role,
        millis = started.elapsed().as_millis() as u64,
        "role finished"
    );
    Ok(RoleRun {
        outcome: outcome?,
        written,
        instructions: given,
    })
}

/// The role's events, recorded on the ticket's timeline as they come; the recorder ends once
/// the sink is dropped.
fn record_events(run: &TicketRun<'_>) -> (EventSink, tokio::task::JoinHandle<()>) {
    let (events, mut rx) = EventSink::new();
    let store = run.hive.store.clone();
    let key = run.ticket.key;
    let recorder = tokio::spawn(async move {
        while let Some(e) = rx.recv().await {
            let data = serde_json::to_value(&e).unwrap_or_default();
            if let Err(err) = store.add_event(key, e.kind(), &data).await {
                tracing::warn!(error = %err, "cannot record an agent event");
            }
        }
    });
    (events, recorder)
}

/// A role that may not start: the budget is spent (`message`).
fn out_of_budget(message: String) -> RoleRun {
    let outcome = Outcome {
        stop: crate::agent::StopReason::Budget { message },
        summary: String::new(),
        iterations: 0,
        usage: Default::default(),
        messages: vec![],
    };
    RoleRun {
        outcome,
        written: vec![],
        instructions: vec![],
    }
}

/// The project's context for a role: its files around `context_refs`, and what earlier
/// tickets made Canonical, the most relevant to this ticket's files (the plan's, and those its
/// issue names) first, within the memory's share of the prompt.
async fn project_context(
    run: &TicketRun<'_>,
    worktree: &Worktree,
    context_refs: &[String],
) -> context::ProjectContext {
    let t = &run.ticket;
    let focus = Focus::new(context_refs, &format!("{}\n{}", t.title, t.body));
    let chosen = run
        .hive
        .store
        .relevant_memory(&t.repo, &focus, context::MEMORY_BYTES)
        .await;
    let memory = match chosen {
        Ok(m) => m.into_iter().map(|e| e.text).collect(),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the repository's memory");
            vec![]
        }
    };
    context::build(&worktree.path, context_refs, &memory)
}

/// A role's first messages: the system prompt (the role's, the instructions, the repository's
/// addition) and the task with the project's context.
async fn first_messages(
    run: &TicketRun<'_>,
    config: &HiveConfig,
    role: &str,
    instructions: &str,
    task: &str,
    cx: &context::ProjectContext,
) -> Vec<Message> {
    let addition = repo_prompt(run, config, role).await;
    let system = run
        .hive
        .prompts
        .system(role, instructions, addition.as_deref());
    vec![
        Message::system(system),
        Message::user(format!("{task}\n\n{}", cx.render())),
    ]
}

/// Stops a role's sandbox unless someone else still holds it.
async fn stop_sandbox(sandbox: Option<Arc<Deferred>>) {
    if let Some(s) = sandbox.and_then(|s| Arc::try_unwrap(s).ok()) {
        s.stop().await;
    }
}

/// The repository's addition to `role`'s prompt (`.github/hive/<role>.md`), read from the tip
/// of the base branch in the bot's mirror: never from a branch under change, whose author
/// would then write the rules it is judged by (the Critic's, say).
pub(super) async fn repo_prompt(
    run: &TicketRun<'_>,
    config: &HiveConfig,
    role: &str,
) -> Option<String> {
    let ws = run.hive.workspace.clone();
    let repo = run.ticket.repo.clone();
    let base = super::repo_config::landing_base(&run.ticket, config);
    let path = repo_path(role);
    let read = super::job::blocking(move || {
        let git = git2::Repository::open_bare(ws.mirror_path(&repo))?;
        ws.read_remote_file(&git, &base, &path)
    })
    .await;
    match read {
        Ok(text) => text,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the repository's prompt addition");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each role's scope, as the hive builds it from a repository's config.
    #[test]
    fn each_role_may_write_only_where_its_scope_says() {
        let config =
            HiveConfig::parse("policy: { read_only_paths: [docs/spec/], test_paths: [tests/] }\n")
                .unwrap();
        let may = |role: Role, path: &str| scope(role, &config).check(path).is_ok();
        for role in [Role::Architect, Role::Critic, Role::Reflector] {
            for path in ["src/a.py", "tests/test_a.py", "README.md"] {
                assert!(!may(role, path), "{role:?} may write {path}");
            }
        }
        assert!(may(Role::Breaker, "tests/test_a.py"));
        assert!(!may(Role::Breaker, "src/a.py"));
        assert!(may(Role::Builder, "src/a.py"));
        for path in [
            "tests/test_a.py",
            "docs/spec/api.md",
            ".github/hive.yml",
            ".github/workflows/ci.yml",
        ] {
            assert!(!may(Role::Builder, path), "the Builder may write {path}");
        }
    }
}

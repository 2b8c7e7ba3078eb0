//! The roles of the hive and how one of them runs: its model (routed per role), its prompt
//! (ours plus the repository's `.github/hive/<role>.md`), its context, its tools and what it
//! may write, its share of the ticket's budget, and its progress events on the timeline.

use std::time::Instant;

use super::JobError;
use super::run::TicketRun;
use crate::agent::context;
use crate::agent::events::EventSink;
use crate::agent::prompts::repo_path;
use std::sync::Arc;

use crate::agent::tools::{CommandRunner, WriteScope};
use crate::agent::{Limits, Outcome, Session, Toolbox};
use crate::config::repo::HiveConfig;
use crate::config::repo::PathSet;
use crate::llm::Message;
use crate::llm::budget::Ledger;
use crate::sandbox::Sandbox;
use crate::workspace::Worktree;

/// A role of the hive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    Architect,
    Breaker,
    Builder,
    Critic,
}

impl Role {
    pub(super) fn name(self) -> &'static str {
        match self {
            Role::Architect => "architect",
            Role::Breaker => "breaker",
            Role::Builder => "builder",
            Role::Critic => "critic",
        }
    }

    /// What this role may write: the Architect and the Critic nothing, the Breaker only the
    /// tests, the Builder anything but the tests and the read-only paths (and `.github/`).
    fn scope(self, config: &HiveConfig) -> WriteScope {
        match self {
            Role::Architect | Role::Critic => WriteScope::None,
            Role::Breaker => WriteScope::Only(config.test_paths()),
            Role::Builder => WriteScope::Except(vec![
                config.test_paths(),
                config.read_only(),
                PathSet::new(&[".github/".into()]),
            ]),
        }
    }

    /// The tools of this role on `worktree`; with a sandbox, `run_command` runs the
    /// repository's gate commands in it.
    fn toolbox(
        self,
        config: &HiveConfig,
        worktree: &Worktree,
        sandbox: Option<Arc<Sandbox>>,
    ) -> Toolbox {
        let tools = Toolbox::new(worktree.path.clone(), self.scope(config));
        match sandbox {
            Some(sandbox) => tools.with_commands(CommandRunner {
                sandbox,
                commands: config
                    .gates
                    .commands()
                    .map(|(g, c)| (g.to_owned(), c.to_owned()))
                    .collect(),
                timeout: std::time::Duration::from_secs(config.limits.timeout_seconds),
            }),
            None => tools,
        }
    }
}

/// One assignment of a role.
pub(super) struct Assignment<'a> {
    pub role: Role,
    /// The task, as the user turn of the conversation.
    pub task: String,
    /// Files whose contents the role is shown up front.
    pub context_refs: &'a [String],
    /// How many times this step was tried before.
    pub step_retry: u32,
    /// An earlier conversation to continue (`task` is then the next user turn).
    pub history: Vec<Message>,
    /// Where `run_command` runs, when the role may run the gate commands.
    pub sandbox: Option<Arc<Sandbox>>,
}

/// What a role did.
pub(super) struct RoleRun {
    pub outcome: Outcome,
    /// Files written, relative to the worktree.
    pub written: Vec<String>,
}

/// Runs `a.role` on `worktree`, through the phases claim → load_context → assemble_prompt →
/// agent_loop → final_response (writing the result and cleaning up are the caller's), with
/// every event on the ticket's timeline and the spend in `ledger` (saved when it ends).
pub(super) async fn run_role(
    run: &TicketRun<'_>,
    config: &HiveConfig,
    worktree: &Worktree,
    ledger: &Ledger,
    a: Assignment<'_>,
) -> Result<RoleRun, JobError> {
    let role = a.role.name();
    let llm = run
        .hive
        .models
        .client(role)
        .map_err(|e| JobError::Permanent(format!("model of the {role}: {e}")))?;
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
    let session = Session {
        role,
        llm: &llm,
        prices: run.hive.models.prices(),
        ledger,
        limits: Limits::default(),
        events,
        step_retry: a.step_retry,
    };
    let started = Instant::now();
    // Claim: the role may start only while the budget lasts.
    if let Err(e) = session.phase("claim", async { ledger.check() }).await {
        drop(session);
        let _ = recorder.await;
        let outcome = Outcome {
            stop: crate::agent::StopReason::Budget {
                message: e.to_string(),
            },
            summary: String::new(),
            iterations: 0,
            usage: Default::default(),
            messages: vec![],
        };
        return Ok(RoleRun {
            outcome,
            written: vec![],
        });
    }
    let cx = session
        .phase("load_context", async {
            let memory = match run.hive.store.canonical_memory(&run.ticket.repo, 20).await {
                Ok(m) => m.into_iter().map(|e| e.text).collect(),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the repository's memory");
                    vec![]
                }
            };
            context::build(&worktree.path, a.context_refs, &memory)
        })
        .await;
    let messages = session
        .phase("assemble_prompt", async {
            if !a.history.is_empty() {
                let mut m = a.history.clone();
                m.push(Message::user(a.task.clone()));
                return m;
            }
            let addition = std::fs::read_to_string(worktree.path.join(repo_path(role))).ok();
            let system = run.hive.prompts.system(role, addition.as_deref());
            vec![
                Message::system(system),
                Message::user(format!("{}\n\n{}", a.task, cx.render())),
            ]
        })
        .await;
    let mut toolbox = a.role.toolbox(config, worktree, a.sandbox.clone());
    let outcome = session
        .phase("agent_loop", session.run(messages, &mut toolbox))
        .await;
    let outcome = session.phase("final_response", async { outcome }).await;
    drop(session);
    let _ = recorder.await;
    run.hive.store.save_budget(key, &ledger.by_role()).await?;
    tracing::info!(
        role,
        millis = started.elapsed().as_millis() as u64,
        "role finished"
    );
    let outcome = outcome?;
    Ok(RoleRun {
        outcome,
        written: toolbox.written().iter().cloned().collect(),
    })
}

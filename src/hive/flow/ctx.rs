//! What every node of one run shares ([`Ctx`]: the ticket's run, its flow state, its config and
//! its budget ledger) and what every node does with it: checkpoints, notes, the status comment,
//! moving the ticket's state (legally, and after the status comment says so), and the git steps
//! of [`super::git`] on the ticket's repository.

use super::git;
use super::state::{Flow, Node, state_of};
use crate::env::Resolved;
use crate::hive::job::JobError;
use crate::hive::status::Extras;
use crate::hive::ticket_run::TicketRun;
use crate::ids::CommitSha;
use crate::llm::budget::Ledger;
use crate::store::memory::Memo;
use crate::ticket::MemoryStability;
use crate::ticket::TaskState;
use crate::workspace::{Author, Workspace, Worktree};

/// What a node tells the driver.
pub(super) enum Step {
    /// Go on to the flow's next node.
    Next,
    /// Stop here: the ticket waits for people, gave its worker to others (its job runs again
    /// after theirs), or reached a final state.
    Stop,
}

/// What every node of one run shares.
pub(super) struct Ctx<'r, 'a> {
    pub run: &'r mut TicketRun<'a>,
    pub flow: Flow,
    /// The repository's environment as resolved on the base; `env.config` is the effective
    /// config: `.github/hive.yml` with what the base's files show filled in.
    pub env: Resolved,
    pub ledger: Ledger,
    /// Whether the bot's commits are signed off, once a commit asked ([`Ctx::author`]).
    pub signoff: tokio::sync::OnceCell<bool>,
    /// The baseline's worktree and sandbox, kept for this run's red proof ([`KeptBase`]).
    pub kept_base: Option<KeptBase>,
}

/// The baseline's worktree (`vibeloop/baseline-T-n`, at `base`) and its sandbox, still
/// running, kept from the baseline to the red proof of the same run: the Breaker's tests
/// are proved red there, on the same base, after the base's own tests ran, and the ticket
/// starts one container and makes one worktree fewer. Never past the run: [`release_kept`]
/// at its end, or when anything but the red proof would use the worktree.
pub(super) struct KeptBase {
    pub base: CommitSha,
    pub worktree: Worktree,
    pub spec: crate::sandbox::SandboxSpec,
    pub sandbox: crate::sandbox::Sandbox,
}

/// The scratch worktree the kept baseline lives in (`vibeloop/baseline-T-n`).
pub(super) const BASELINE: &str = "baseline";

/// Stops the kept baseline's sandbox and removes its worktree, if one is kept.
pub(super) async fn release_kept(cx: &mut Ctx<'_, '_>) {
    if let Some(kept) = cx.kept_base.take() {
        kept.sandbox.stop().await;
        drop_scratch(cx, BASELINE).await;
    }
}

impl Ctx<'_, '_> {
    /// The branch changes land on: the one the issue chose (`base:`, `/hive base`), else
    /// `base` in `.github/hive.yml`, else the repository's default.
    pub(super) fn base_branch(&self) -> String {
        crate::hive::repo_config::landing_base(&self.run.ticket, &self.env.config)
    }

    /// Who the bot's commits are by: the bot, signing each one off where `commits.signoff`
    /// or the base's rules ask (read once per run, at its first commit).
    pub(super) async fn author(&self) -> Result<Author, JobError> {
        let signoff = self
            .signoff
            .get_or_try_init(|| async {
                if self.env.config.commits.signoff {
                    return Ok::<_, JobError>(true);
                }
                let rule = self.run.client.branch_rule(&self.base_branch()).await?;
                Ok(rule.is_some_and(|r| r.asks_signoff()))
            })
            .await?;
        Ok(Author {
            signoff: *signoff,
            ..self.run.hive.author.clone()
        })
    }

    /// Writes the checkpoint of `node` and the flow state after it.
    pub(super) async fn checkpoint(
        &self,
        node: Node,
        inputs: serde_json::Value,
        outputs: serde_json::Value,
    ) -> Result<(), JobError> {
        self.checkpoint_as(node, inputs, outputs, None).await
    }

    /// [`Ctx::checkpoint`] of a node that completed with a failed verdict (a red proof that
    /// does not hold, gates that fail, a veto): the timeline says it failed, and `why`.
    pub(super) async fn checkpoint_failed(
        &self,
        node: Node,
        inputs: serde_json::Value,
        outputs: serde_json::Value,
        why: &str,
    ) -> Result<(), JobError> {
        self.checkpoint_as(node, inputs, outputs, Some(why)).await
    }

    async fn checkpoint_as(
        &self,
        node: Node,
        inputs: serde_json::Value,
        outputs: serde_json::Value,
        failed: Option<&str>,
    ) -> Result<(), JobError> {
        let flow = serde_json::to_value(&self.flow).unwrap_or_default();
        self.run
            .hive
            .store
            .checkpoint(
                self.run.ticket.run_of(),
                node.as_str(),
                self.flow.code.attempt,
                &inputs,
                &outputs,
                &flow,
            )
            .await?;
        let mut data = serde_json::json!({ "node": node.as_str(), "attempt": self.flow.code.attempt, "next": self.flow.next.as_str() });
        if let Some(why) = failed {
            data["failed"] = why.into();
        }
        self.run.event("checkpoint", data).await;
        Ok(())
    }

    /// Keeps a memory entry of this ticket at `stability` (it rises with the ticket, up to its
    /// kind's ceiling; Canonical ones feed later tickets of the repository).
    pub(super) async fn remember(
        &self,
        memo: &Memo<'_>,
        stability: MemoryStability,
    ) -> Result<(), JobError> {
        let t = &self.run.ticket;
        self.run
            .hive
            .store
            .add_memory(&t.repo, t.key, memo, stability)
            .await?;
        Ok(())
    }

    /// Raises this ticket's memory to `to`: the plan validated (Derived), its step's gates
    /// passed (Verified), merged (Canonical).
    pub(super) async fn promote_memory(&self, to: MemoryStability) -> Result<(), JobError> {
        let store = &self.run.hive.store;
        store.promote_memory(self.run.ticket.key, to).await?;
        Ok(())
    }

    /// Demotes what `step` of this ticket produced to Ephemeral for good: the step failed, or
    /// was replaced.
    pub(super) async fn demote_memory(&self, step: &str) -> Result<(), JobError> {
        let store = &self.run.hive.store;
        store.demote_memory(self.run.ticket.key, Some(step)).await?;
        Ok(())
    }

    /// The memory step of the Builder's attempt in progress: what its Encounter produced.
    pub(super) fn attempt_step(&self) -> String {
        format!("attempt-{}", self.flow.code.attempt)
    }

    /// Says, on the ticket, where it stands (kept, and shown in the status comment).
    pub(super) async fn note(&mut self, detail: impl Into<String>) -> Result<(), JobError> {
        let detail = detail.into();
        self.run
            .hive
            .store
            .set_ticket_detail(self.run.ticket.key, &detail)
            .await?;
        self.run.ticket.detail = Some(detail);
        Ok(())
    }

    /// Saves the ledger and shows the spend from now on.
    pub(super) async fn book(&mut self) -> Result<(), JobError> {
        self.run
            .hive
            .store
            .save_budget(self.run.ticket.key, &self.ledger.by_role())
            .await?;
        self.run.spent = Some(self.ledger.total());
        Ok(())
    }

    /// Posts the status comment with the flow's plan and attempts.
    pub(super) async fn publish(&mut self) -> Result<(), JobError> {
        let extras = Extras {
            flow: Some(&self.flow),
            ..Extras::default()
        };
        self.run.publish(&extras).await
    }

    /// Moves the ticket to `to`, a state where it waits for people or ends, with `detail`: the
    /// spend is saved and the status comment (with the flow's plan and attempts) says so first.
    pub(super) async fn settle(
        &mut self,
        to: TaskState,
        detail: impl Into<String>,
    ) -> Result<(), JobError> {
        self.book().await?;
        let extras = Extras {
            flow: Some(&self.flow),
            ..Extras::default()
        };
        self.run.settle(to, &detail.into(), &extras).await
    }

    /// Stops for a person: HumanNeeded with a report, and the `hive:needs-human` label.
    pub(super) async fn needs_human(&mut self, report: &str) -> Result<Step, JobError> {
        self.book().await?;
        // Labelled, then reported, then the state moves: whoever sees HumanNeeded also sees
        // the label and the report.
        if let Err(e) = self
            .run
            .client
            .add_labels(self.run.ticket.issue_number, &["hive:needs-human"])
            .await
        {
            tracing::warn!(error = %e, "cannot label the issue");
        }
        let extras = Extras {
            flow: Some(&self.flow),
            ..Extras::default()
        };
        self.run.needs_human(report, &extras).await?;
        Ok(Step::Stop)
    }
}

/// Fetches the mirror and, the first time, fixes the base commit the work starts from.
pub(super) async fn sync(cx: &mut Ctx<'_, '_>) -> Result<CommitSha, JobError> {
    let token = cx.run.client.token().await?;
    let base = cx.base_branch();
    let tip = git::fetch(&cx.run.hive.workspace, &cx.run.ticket.repo, token, &base).await?;
    Ok(cx.flow.plan.base_sha.get_or_insert(tip).clone())
}

/// The base commit the work starts from: the one the flow fixed, fetching the mirror only
/// when none is fixed yet or the mirror lacks it. A fetch would return the same commit once it
/// is fixed ([`sync`]); callers that read what else the remote holds now call [`sync`].
pub(super) async fn base(cx: &mut Ctx<'_, '_>) -> Result<CommitSha, JobError> {
    if let Some(fixed) = cx.flow.plan.base_sha.clone() {
        let oid = fixed.oid();
        if git(cx, move |_, g| Ok(g.find_commit(oid).is_ok())).await? {
            return Ok(fixed);
        }
    }
    sync(cx).await
}

/// Resolves the effective config on the base commit: `.github/hive.yml` (as read) with the keys
/// it leaves unset filled from the base's files (ecosystems, a devcontainer). The mirror is
/// fetched only when the flow has no base commit yet or the mirror lacks it.
pub(super) async fn resolve_env(cx: &mut Ctx<'_, '_>) -> Result<(), JobError> {
    let tree_at = |base: CommitSha| {
        let oid = base.oid();
        move |_: &Workspace, repo: &git2::Repository| {
            Ok(crate::env::tree::Tree::of_commit(repo, oid)?)
        }
    };
    let known = match cx.flow.plan.base_sha.clone() {
        Some(base) => git(cx, tree_at(base.clone())).await.ok().map(|t| (t, base)),
        None => None,
    };
    let (tree, base) = match known {
        Some(known) => known,
        None => {
            let base = sync(cx).await?;
            (git(cx, tree_at(base.clone())).await?, base)
        }
    };
    let yaml = cx.env.config.clone();
    cx.env = crate::env::resolve(yaml, &tree);
    cx.env.base_commit = Some(base);
    let hive = cx.run.hive;
    let image = cx.env.config.image.clone();
    if matches!(hive.sandbox, crate::sandbox::Backend::Docker(_))
        && hive.sandbox.image_id(&image).await.is_none()
    {
        // Pulling or building takes minutes: the timeline says so when it starts.
        let said = format!("{image} is not on this Docker host: getting it (a pull or a build)");
        cx.run
            .event("image", serde_json::json!({ "said": said, "image": image }))
            .await;
    }
    let had = crate::env::image::ensure(
        &hive.sandbox,
        &mut cx.env,
        hive.environments.registry.as_ref(),
        &mut |line| tracing::debug!(%line, "pulling the sandbox image"),
    )
    .await;
    if let Some(said) = had.describe() {
        cx.run
            .event(
                "image",
                serde_json::json!({ "said": said, "image": cx.env.config.image }),
            )
            .await;
    }
    for said in
        crate::env::toolchain::check(&hive.sandbox, &cx.env.config.image, &cx.env.toolchains).await
    {
        cx.run
            .event("toolchain", serde_json::json!({ "said": said }))
            .await;
    }
    narrow_by_ticket(cx);
    Ok(())
}

/// Once there is a plan, its ticket's constraints narrow the config for the rest of the run
/// (read-only paths added, a lower timeout, the linter it names, a complexity limit; see
/// [`crate::config::repo::HiveConfig::with_ticket`]). What changed, in words.
pub(super) fn narrow_by_ticket(cx: &mut Ctx<'_, '_>) -> Vec<String> {
    let Some(bp) = &cx.flow.plan.blueprint else {
        return Vec::new();
    };
    let (config, notes) = cx.env.config.with_ticket(&bp.ticket);
    cx.env.config = config;
    notes
}

/// The sandbox of `role` for a worktree, with the repository's environment (see
/// [`crate::hive::verify::sandbox_spec`]).
pub(super) async fn sandbox_spec(
    cx: &Ctx<'_, '_>,
    wt: &Worktree,
    role: &str,
    lock_tests: bool,
) -> Result<crate::sandbox::SandboxSpec, JobError> {
    Ok(crate::hive::verify::sandbox_spec(cx.run, &cx.env, wt, role, lock_tests).await?)
}

/// Runs `f` on the workspace and the ticket's mirror, off the async threads.
pub(super) async fn git<T: Send + 'static>(
    cx: &Ctx<'_, '_>,
    f: impl FnOnce(&Workspace, &git2::Repository) -> Result<T, crate::workspace::WorkspaceError>
    + Send
    + 'static,
) -> Result<T, JobError> {
    git::on_mirror(&cx.run.hive.workspace, &cx.run.ticket.repo, f).await
}

/// A scratch worktree `vibeloop/<name>-T-n` at `at` (or the base commit). The mirror is
/// fetched only when it lacks `at` (or the base commit is not fixed yet).
pub(super) async fn scratch(
    cx: &mut Ctx<'_, '_>,
    name: &str,
    at: Option<&CommitSha>,
) -> Result<Worktree, JobError> {
    let room = cx.env.config.limits.disk_mb;
    scratch_with(cx, name, at, room).await
}

/// A scratch worktree no command runs in (the Architect's, the Critic's, the reflection's: a
/// model only reads it), so it needs no disk of its own.
pub(super) async fn reading_scratch(
    cx: &mut Ctx<'_, '_>,
    name: &str,
    at: Option<&CommitSha>,
) -> Result<Worktree, JobError> {
    scratch_with(cx, name, at, 0).await
}

/// A reading scratch of the base, made by the future returned, which holds no borrow of `cx`:
/// so it runs beside another step (the Architect's worktree while the baseline runs).
pub(super) async fn reading_scratch_of_base(
    cx: &mut Ctx<'_, '_>,
    name: &str,
) -> Result<impl Future<Output = Result<Worktree, JobError>> + Send + 'static, JobError> {
    let at = base(cx).await?;
    let branch = format!("vibeloop/{name}-{}", cx.run.ticket.id);
    let (ws, repo) = (cx.run.hive.workspace.clone(), cx.run.ticket.repo.clone());
    Ok(async move { git::worktree(&ws, &repo, &branch, (&at, 0)).await })
}

async fn scratch_with(
    cx: &mut Ctx<'_, '_>,
    name: &str,
    at: Option<&CommitSha>,
    room: u64,
) -> Result<Worktree, JobError> {
    let at = match at {
        Some(at) => {
            let oid = at.oid();
            let have = git(cx, move |_, g| Ok(g.find_commit(oid).is_ok())).await;
            if !have.unwrap_or(false) {
                sync(cx).await?;
            }
            at.clone()
        }
        None => base(cx).await?,
    };
    let branch = format!("vibeloop/{name}-{}", cx.run.ticket.id);
    git::worktree(
        &cx.run.hive.workspace,
        &cx.run.ticket.repo,
        &branch,
        (&at, room),
    )
    .await
}

pub(super) async fn drop_scratch(cx: &Ctx<'_, '_>, name: &str) {
    let branch = format!("vibeloop/{name}-{}", cx.run.ticket.id);
    git::drop_scratch(&cx.run.hive.workspace, &cx.run.ticket.repo, &branch).await
}

/// Commits an agent's work in the worktree (if it changed: tracked files, and the new files
/// in `written`), without pushing; the branch's head.
pub(super) async fn commit(
    cx: &Ctx<'_, '_>,
    wt: &Worktree,
    message: String,
    work: git::Work,
) -> Result<CommitSha, JobError> {
    let author = cx.author().await?;
    let (ws, repo) = (&cx.run.hive.workspace, &cx.run.ticket.repo);
    git::commit(ws, repo, wt, message, work, &author).await
}

/// The ticket's issue framed as data (`crate::fence`), with a line break after.
pub(super) fn issue_fenced(cx: &Ctx<'_, '_>) -> String {
    let t = &cx.run.ticket;
    let text = format!("Title: {}\n\n{}", t.title, t.body);
    format!("{}\n", crate::untrusted::fence::frame("ISSUE", "", &text))
}

/// Moves the ticket to `target` along legal transitions (the shortest path in the table).
pub(super) async fn enter(cx: &mut Ctx<'_, '_>, target: TaskState) -> Result<(), JobError> {
    let from = cx.run.ticket.state;
    let path = from.path_to(target).ok_or_else(|| {
        JobError::permanent(format!("a ticket cannot go from {from} to {target}"))
    })?;
    for step in path {
        let current = cx.run.ticket.state;
        cx.run
            .hive
            .store
            .move_ticket(cx.run.ticket.key, current, step, None)
            .await?;
        cx.run.ticket.state = step;
        cx.run.ticket.detail = None;
    }
    Ok(())
}

/// Moves the ticket to the state of the node about to run.
pub(super) async fn enter_node(cx: &mut Ctx<'_, '_>) -> Result<(), JobError> {
    enter(cx, state_of(cx.flow.next)).await
}

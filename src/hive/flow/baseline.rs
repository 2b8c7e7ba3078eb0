//! The baseline, the first step of a ticket: setup and the test command on the unchanged base,
//! before any model is asked. A base whose tests cannot run (setup fails, a command is missing,
//! a module cannot be imported, the project does not compile) stops the ticket at once, as
//! HumanNeeded with the line that shows why and what to change, having spent no tokens. Tests
//! that already fail on the base are recorded in the flow, so the red proof and the gates judge
//! only what the ticket changes.

use std::time::Duration;

use super::ctx::{Ctx, drop_scratch, scratch};
use super::state::Baseline;
use crate::config::repo::PATH as CONFIG_PATH;
use crate::env::SetupError;
use crate::gates::baseline::{Judgement, diagnose, judge};
use crate::gates::report::code_block;
use crate::hive::job::JobError;

/// Runs the baseline; `None` when the ticket was handed to a person (the base is broken).
pub(super) async fn baseline(cx: &mut Ctx<'_, '_>) -> Result<Option<Baseline>, JobError> {
    let Some(test) = cx.config.gates.test.clone() else {
        return Ok(None);
    };
    let base = super::ctx::sync(cx).await?;
    let branch = cx
        .config
        .base
        .clone()
        .unwrap_or_else(|| cx.run.ticket.base_branch.clone());
    let wt = scratch(cx, "baseline", None).await?;
    let result = run(cx, &wt, &test).await;
    drop_scratch(cx, "baseline").await;
    let (env, output) = match result {
        Ok(r) => r,
        Err(Failure::Setup { command, output }) => {
            let why = format!(
                "Setup fails on `{branch}` before any change, so no model was asked: `{}` (`{command}`, {}).\n\n\
                 Fix the setup (`setup:` in `{CONFIG_PATH}`; `vibeloop gates --explain` shows where the one in use comes from) \
                 or the dependency manifests, then `/hive retry`.\n\n{}",
                diagnose(&output.output),
                output.describe(),
                code_block(&output.tail(15))
            );
            cx.needs_human(&why).await?;
            return Ok(None);
        }
        Err(Failure::Job(e)) => return Err(e),
    };
    let reused = env.as_ref().is_some_and(|(_, reused)| *reused);
    match judge(&output) {
        Judgement::Ran(run) => {
            let b = Baseline {
                sha: base,
                env: env.map(|(k, _)| k),
                env_reused: reused,
                counts: Some(run.counts),
                failing: run.failing,
            };
            let data = serde_json::json!({ "env": b.env, "env_reused": reused, "counts": b.counts, "failing": b.failing.len() });
            cx.run.event("baseline", data).await;
            Ok(Some(b))
        }
        Judgement::Broken(line)
            if output.timed_out || output.oom_killed || output.killed.is_some() =>
        {
            let why = format!(
                "The test command hit a sandbox limit on `{branch}` before any change, so no model was asked: {line} (`{test}`).\n\n\
                 Fix the tests, or raise the limit in `{CONFIG_PATH}` (`limits.timeout_seconds`, `limits.disk_mb`, `limits.memory_mb`, `limits.pids`) if they need more, then `/hive retry`.\n\n{}",
                code_block(&output.tail(15))
            );
            cx.needs_human(&why).await?;
            Ok(None)
        }
        Judgement::Broken(line) => {
            let why = format!(
                "The test command fails on `{branch}` before any change, so no model was asked: `{line}` (`{test}`, {}).\n\n\
                 Add a `setup:` to `{CONFIG_PATH}` that installs what the tests need, or fix `gates.test` \
                 (`vibeloop gates --explain` shows what runs now), then `/hive retry`.\n\n{}",
                output.describe(),
                code_block(&output.tail(15))
            );
            cx.needs_human(&why).await?;
            Ok(None)
        }
    }
}

enum Failure {
    Setup {
        command: String,
        output: crate::sandbox::CommandOutput,
    },
    Job(JobError),
}

impl From<JobError> for Failure {
    fn from(e: JobError) -> Self {
        Failure::Job(e)
    }
}

/// Sets up the environment for the base's worktree and runs the test command there.
async fn run(
    cx: &Ctx<'_, '_>,
    wt: &crate::workspace::Worktree,
    test: &str,
) -> Result<(Option<(String, bool)>, crate::sandbox::CommandOutput), Failure> {
    let run = &*cx.run;
    let mut spec = crate::hive::verify::bare_spec(run, &cx.config, wt, "baseline", false);
    let maker = run.hive.environments.maker(&run.hive.sandbox);
    let env = match maker.prepare(&cx.env, &spec).await {
        Ok(Some(ready)) => {
            let data = serde_json::json!({ "key": ready.key.as_str(), "reused": ready.reused, "seconds": ready.setup_seconds });
            run.event("env_setup", data).await;
            ready.apply(&mut spec);
            Some((ready.key.to_string(), ready.reused))
        }
        Ok(None) => None,
        Err(SetupError::Failed { command, output }) => {
            return Err(Failure::Setup { command, output });
        }
        Err(e) => return Err(JobError::from(e).into()),
    };
    let sandbox = run
        .hive
        .sandbox
        .start(&spec)
        .await
        .map_err(JobError::from)?;
    let timeout = Duration::from_secs(cx.config.limits.timeout_seconds);
    let output = sandbox.exec(test, timeout).await;
    sandbox.stop().await;
    Ok((env, output.map_err(JobError::from)?))
}

//! Moving a ticket to another base branch (`/hive base <branch>`) while it is still planning:
//! the branch is stored as the ticket's chosen base, its config is read from there, and the
//! base commit, baseline and plan are dropped so the Architect starts again on that branch.

use super::ctx::{Ctx, resolve_env};
use super::state::Node;
use crate::config::repo::PATH as CONFIG_PATH;
use crate::hive::job::JobError;
use crate::hive::repo_config;

/// Whether the ticket's code is still unwritten: the flow is at its plan.
pub(super) fn before_code(cx: &Ctx<'_, '_>) -> bool {
    matches!(
        cx.flow.next,
        Node::Plan | Node::PlanCheck | Node::AwaitPlanApproval
    ) && cx.flow.tests.breaker.is_none()
        && cx.flow.code.builder.is_none()
}

/// Makes `branch` the ticket's base for good: `Ok(Err(why))` when its `.github/hive.yml`
/// cannot be read (the ticket then stops, saying so).
pub(super) async fn move_to(
    cx: &mut Ctx<'_, '_>,
    branch: &str,
) -> Result<Result<(), String>, JobError> {
    let config = match repo_config::load(&cx.run.client, branch).await? {
        Ok(config) => config,
        Err(e) => {
            return Ok(Err(format!(
                "{e}\n\nFix `{CONFIG_PATH}` on `{branch}`, then `/hive retry`."
            )));
        }
    };
    let store = &cx.run.hive.store;
    store
        .set_chosen_base(cx.run.ticket.run_of(), branch)
        .await?;
    cx.run.ticket.chosen_base = Some(branch.to_owned());
    cx.env = crate::env::Resolved::plain(config);
    cx.flow.plan.base_sha = None;
    cx.flow.plan.baseline = None;
    resolve_env(cx).await?;
    Ok(Ok(()))
}

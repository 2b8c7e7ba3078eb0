//! The gate pipeline: test, lint and typecheck side by side, then build, on one commit in one
//! sandbox, with the security checks beside them; then the acceptance criteria when the
//! repository sets any. Results come in the order test → lint → typecheck → build → security.
//! Every gate runs even when an earlier one failed, so the Builder gets all findings at once.
//! It returns results and tells a [`Reporter`] how the gates go (the hive posts them as check
//! runs); it knows nothing of GitHub.

mod command;
mod security;

use std::future::Future;

pub use super::Inputs;
use super::expect::Expect;
use super::steering::Steer;
use super::{GateError, GateResult, ORDER, Status, acceptance};
use command::{BESIDE, command_gate, gates_beside};
use security::security_gate;

/// Who hears how the gates go while they run. The hive posts each gate as a check run
/// `hive/<gate>` (queued, in progress, completed); `vibeloop gates` hears nothing ([`Silent`]).
/// The pipeline itself only runs commands and returns results.
pub trait Reporter {
    type Error;
    /// `gates` are about to run, in this order.
    fn queued(&mut self, gates: &[&'static str]) -> impl Future<Output = Result<(), Self::Error>>;
    /// `gate`'s turn has come.
    fn started(&mut self, gate: &'static str) -> impl Future<Output = Result<(), Self::Error>>;
    /// `result` is in; the reporter may note where it shows it (`check_run_url`).
    fn finished(
        &mut self,
        result: &mut GateResult,
    ) -> impl Future<Output = Result<(), Self::Error>>;
    /// The sandbox failed under the gates (`why`): nothing queued or running will finish.
    fn abandoned(&mut self, why: &str) -> impl Future<Output = ()>;
}

/// The reporter that hears nothing.
pub struct Silent;

impl Reporter for Silent {
    type Error = std::convert::Infallible;
    async fn queued(&mut self, _: &[&'static str]) -> Result<(), Self::Error> {
        Ok(())
    }
    async fn started(&mut self, _: &'static str) -> Result<(), Self::Error> {
        Ok(())
    }
    async fn finished(&mut self, _: &mut GateResult) -> Result<(), Self::Error> {
        Ok(())
    }
    async fn abandoned(&mut self, _: &str) {}
}

/// Why a pipeline run stopped before every gate had a result.
#[derive(Debug, thiserror::Error)]
pub enum RunError<E> {
    /// The gates could not run (the sandbox, git).
    #[error(transparent)]
    Gate(#[from] GateError),
    /// The reporter failed (GitHub, for the hive's check runs).
    #[error("reporting the gates failed: {0}")]
    Report(E),
}

/// Runs the `gates` (all of [`ORDER`] when `None`) and returns their results in order, telling
/// `reporter` as they go.
///
/// The security checks read the change from git (the commit's own blobs, in this process), so
/// nothing a gate command does in the worktree hides a finding: they run beside the command
/// gates and are reported last, in their place.
pub async fn run<R: Reporter>(
    inputs: &Inputs<'_>,
    gates: Option<&[&str]>,
    reporter: &mut R,
) -> Result<Vec<GateResult>, RunError<R::Error>> {
    let mut selected: Vec<&'static str> = ORDER
        .iter()
        .copied()
        .filter(|g| gates.is_none_or(|s| s.contains(g)))
        .collect();
    if inputs.config.acceptance.is_on() && gates.is_none_or(|s| s.contains(&acceptance::GATE)) {
        selected.push(acceptance::GATE);
    }
    reporter.queued(&selected).await.map_err(RunError::Report)?;
    let steering = match steering_of(inputs).await {
        Ok(s) => s,
        Err(e) => return Err(abandon(reporter, e).await),
    };
    let expect = Expect {
        steering: steering.clone(),
        ..inputs.expect.clone()
    };
    let beside: Vec<&'static str> = selected
        .iter()
        .copied()
        .filter(|g| BESIDE.contains(g))
        .collect();
    for gate in &beside {
        reporter.started(gate).await.map_err(RunError::Report)?;
    }
    // Boxed: on the task's stack, two gate futures side by side overflow a debug build's.
    let security = Box::pin(async {
        match selected.contains(&"security") {
            true => security_gate(inputs, &steering).await.map(Some),
            false => Ok(None),
        }
    });
    let beside_run = Box::pin(gates_beside(inputs, &beside, &expect));
    let (security, ran) = tokio::join!(security, beside_run);
    let (mut security, ran) = match (security, ran) {
        (Ok(s), Ok(r)) => (s, r),
        (Err(e), _) | (_, Err(e)) => return Err(abandon(reporter, e).await),
    };
    let mut results = Vec::new();
    for result in ran {
        finish(inputs, reporter, result, &mut results).await?;
    }
    for gate in selected.into_iter().filter(|g| !BESIDE.contains(g)) {
        reporter.started(gate).await.map_err(RunError::Report)?;
        let ran = match gate {
            "security" => Ok(security.take().expect("computed above")),
            acceptance::GATE => acceptance::run(inputs, &results).await,
            _ => command_gate(inputs, gate, &expect).await,
        };
        match ran {
            Ok(result) => finish(inputs, reporter, result, &mut results).await?,
            Err(e) => return Err(abandon(reporter, e).await),
        }
    }
    Ok(results)
}

/// `result` with the inputs' notes, told to `reporter` and added to `results`.
async fn finish<R: Reporter>(
    inputs: &Inputs<'_>,
    reporter: &mut R,
    mut result: GateResult,
    results: &mut Vec<GateResult>,
) -> Result<(), RunError<R::Error>> {
    result.notes.extend(inputs.notes.iter().cloned());
    reporter
        .finished(&mut result)
        .await
        .map_err(RunError::Report)?;
    results.push(result);
    Ok(())
}

/// The environment's setup failed for this commit's dependency files, so no gate could run: the
/// test gate fails with setup's output (the tests cannot run; whoever changed the manifests
/// reads why) and the others are skipped, each reported as [`run`] would.
pub async fn setup_failed<R: Reporter>(
    command: &str,
    mut output: crate::sandbox::CommandOutput,
    gates: Option<&[&str]>,
    reporter: &mut R,
) -> Result<Vec<GateResult>, R::Error> {
    let selected: Vec<&'static str> = ORDER
        .iter()
        .copied()
        .filter(|g| gates.is_none_or(|s| s.contains(g)))
        .collect();
    reporter.queued(&selected).await?;
    let why = format!(
        "Setup (`{command}`) failed for this commit's dependency files ({}), so no gate could run. \
         It worked for the base: look at what the change did to the manifests or lockfiles.",
        output.describe()
    );
    // Last, so that whoever reads the output's tail reads this too.
    output.output.push_str(&format!("\n[vibeloop] {why}\n"));
    let mut results = Vec::new();
    for gate in selected {
        reporter.started(gate).await?;
        let mut result = if gate == "test" {
            GateResult {
                gate,
                status: Status::Failed,
                command: Some(command.to_owned()),
                counts: None,
                failing: vec![],
                annotations: vec![],
                notes: vec![why.clone()],
                duration: output.duration,
                output: Some(output.clone()),
                check_run_url: None,
                verdicts: vec![],
                misses: vec![],
                held: None,
            }
        } else {
            GateResult::skipped(gate, "Not run: setup failed (see hive/test).")
        };
        reporter.finished(&mut result).await?;
        results.push(result);
    }
    Ok(results)
}

/// The sandbox failed under a gate (its engine went away, say): the reporter hears it, so that
/// nothing it shows stays "in progress". Returns `e`.
async fn abandon<R: Reporter>(reporter: &mut R, e: GateError) -> RunError<R::Error> {
    reporter.abandoned(&e.to_string()).await;
    RunError::Gate(e)
}

/// `check` over the repository and the change's `base` and `head`, on a blocking thread (git2
/// blocks); `what` names it should it panic.
pub(super) async fn on_git<T: Send + 'static>(
    inputs: &Inputs<'_>,
    what: &'static str,
    check: impl FnOnce(&git2::Repository, git2::Oid, git2::Oid) -> Result<T, git2::Error>
    + Send
    + 'static,
) -> Result<T, GateError> {
    let git_dir = inputs.git_dir.to_owned();
    let (base, head) = (
        git2::Oid::from_str(inputs.base.as_str())?,
        git2::Oid::from_str(inputs.head.as_str())?,
    );
    let found = tokio::task::spawn_blocking(move || {
        let repo = git2::Repository::open(&git_dir)?;
        check(&repo, base, head)
    })
    .await
    .map_err(|e| git2::Error::from_str(&format!("{what} panicked: {e}")))??;
    Ok(found)
}

/// The files `base..head` changes that steer which tests run.
async fn steering_of(inputs: &Inputs<'_>) -> Result<Vec<Steer>, GateError> {
    on_git(inputs, "the steering check", super::steering::changed).await
}

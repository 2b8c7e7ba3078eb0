//! Command lines of the tools beside `serve`: `vibeloop setup` (register the GitHub App
//! through GitHub's manifest flow), `vibeloop doctor` (check an installation; it takes `serve`'s
//! flags) and `vibeloop run` (the whole hive on a local repository, without GitHub). Each
//! setting flag has an environment variable, like `serve`'s.

use std::path::PathBuf;

use clap::Args;

/// `vibeloop setup`: create the GitHub App from `app-manifest/manifest.json` and write its
/// credentials to an env file.
#[derive(Debug, Clone, Args)]
pub struct SetupArgs {
    /// Address of the local page that walks through GitHub's manifest flow.
    #[arg(long, env = "VIBELOOP_SETUP_LISTEN", default_value = "127.0.0.1:3001")]
    pub listen: String,
    /// The bot's public base URL: GitHub sends webhooks to `<url>/webhook`.
    #[arg(long, env = "VIBELOOP_PUBLIC_URL")]
    pub public_url: String,
    /// Create the App under this organisation instead of your user account.
    #[arg(long, env = "VIBELOOP_SETUP_ORG")]
    pub org: Option<String>,
    /// Name of the App on GitHub (must be unique there).
    #[arg(long, env = "VIBELOOP_APP_NAME", default_value = "vibeloop")]
    pub name: String,
    /// GitHub's web address (GitHub Enterprise: `https://host`).
    #[arg(long, env = "GITHUB_URL", default_value = "https://github.com")]
    pub github_url: String,
    /// Base URL of GitHub's REST API.
    #[arg(long, env = "GITHUB_API_URL", default_value = "https://api.github.com")]
    pub github_api_url: String,
    /// Where the credentials are written (mode 0600; an existing file is not overwritten).
    #[arg(long, env = "VIBELOOP_ENV_FILE", default_value = ".env")]
    pub env_file: PathBuf,
    /// A manifest to register instead of the built-in `app-manifest/manifest.json` (the
    /// command fills in its name, `url`, `hook_attributes.url`, `redirect_url` and `callback_urls`).
    #[arg(long, env = "VIBELOOP_SETUP_MANIFEST")]
    pub manifest: Option<PathBuf>,
}

/// `vibeloop run`: the whole hive on a local repository — plan, tests first, code, gates,
/// review — against a scratch copy of it; nothing is pushed anywhere.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The repository to work on; the run starts from its committed state.
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// What to change, written as you would write the issue (its first line is the title).
    #[arg(
        long,
        required_unless_present_any = ["goal_file", "ask"],
        conflicts_with = "goal_file"
    )]
    pub goal: Option<String>,
    /// The goal, read from this file (a long issue text, say).
    #[arg(long)]
    pub goal_file: Option<PathBuf>,
    /// Ask the read-only agent a question about the repository instead, as `/hive ask` does:
    /// the answer, its checked citations and its spend are printed; nothing is built.
    #[arg(long, conflicts_with_all = ["goal", "goal_file", "plan_only", "approve", "json_report"])]
    pub ask: Option<String>,
    /// Only plan, as the `hive:plan` label does: the Architect's checked plan is printed and
    /// nothing is built.
    #[arg(long, conflicts_with = "approve")]
    pub plan_only: bool,
    /// Also write what the run observed as JSON to this file (state, spend per role,
    /// attempts, the change's commits and size): what `vibeloop eval` reads.
    #[arg(long)]
    pub json_report: Option<PathBuf>,
    /// The branch to start from [default: the branch checked out in --repo]
    #[arg(long)]
    pub base: Option<String>,
    /// Approve for the person running: a plan that waits for approval goes ahead, and an
    /// approved change is rebased, checked again, merged into the scratch copy's base branch
    /// and tagged. Without it the run stops where the hive waits for a person.
    #[arg(long)]
    pub approve: bool,
    /// Where the run keeps its scratch copy, worktrees and database; must be empty or new
    /// [default: a new directory under the system's temporary directory]
    #[arg(long, env = "VIBELOOP_RUN_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Where gate commands run: `auto` (Docker when an engine answers, else local), `docker` or
    /// `local`.
    #[arg(long, env = "VIBELOOP_SANDBOX", default_value = "auto")]
    pub sandbox: String,
    /// Give up after this many minutes.
    #[arg(long, default_value_t = 60)]
    pub timeout_minutes: u64,
    /// Show the bot's log on standard error (otherwise only warnings and errors).
    #[arg(long)]
    pub verbose: bool,
    #[command(flatten)]
    pub llm: super::llm::LlmArgs,
}

/// `vibeloop eval`: measure how well the hive resolves tasks.
#[derive(Debug, Clone, Args)]
pub struct EvalArgs {
    #[command(subcommand)]
    pub command: EvalCommand,
}

/// What `vibeloop eval` does.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum EvalCommand {
    /// Find tasks in a repository's history: commits that change tests and code together,
    /// each verified in the sandbox (its tests fail before it and pass after).
    Mine(MineArgs),
    /// Run the hive on every task of a task set (SWE-bench's JSONL format) and judge each
    /// with its hidden tests.
    Run(EvalRunArgs),
    /// Compare two runs' results on the same tasks.
    Compare(CompareArgs),
}

/// Where task tests run: the sandbox and the environments' directory.
#[derive(Debug, Clone, Args)]
pub struct TestbedArgs {
    /// `auto` (Docker when an engine answers, else local processes), `docker` or `local`.
    #[arg(long, env = "VIBELOOP_SANDBOX", default_value = "auto")]
    pub sandbox: String,
    /// Where set-up environments are kept between runs [default: ~/.cache/vibeloop/envs]
    #[arg(long)]
    pub env_dir: Option<PathBuf>,
}

/// `vibeloop eval mine`.
#[derive(Debug, Clone, Args)]
pub struct MineArgs {
    /// The repository (a local clone).
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// Stop at this commit or branch (not included) [default: the whole first-parent history]
    #[arg(long)]
    pub since: Option<String>,
    /// At most this many candidates are verified.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// The repository's `owner/name` in the tasks [default: `owner/name` from a directory named
    /// `owner__name`, else local/<directory name>]
    #[arg(long)]
    pub name: Option<String>,
    /// Write the tasks here (JSONL) [default: standard output]
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Give up on one test run after this many minutes.
    #[arg(long, default_value_t = 10)]
    pub timeout_minutes: u64,
    #[command(flatten)]
    pub testbed: TestbedArgs,
}

/// `vibeloop eval run`.
#[derive(Debug, Clone, Args)]
pub struct EvalRunArgs {
    /// The task set: JSONL, one SWE-bench instance per line.
    pub tasks: PathBuf,
    /// Where results, diffs, timelines and the report go.
    #[arg(long)]
    pub out: PathBuf,
    /// Tasks run at once.
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// Clones of the tasks' repositories, named `owner__name` as SWE-bench names them.
    #[arg(long, default_value = ".")]
    pub repos_dir: PathBuf,
    /// Where a repository with no clone in --repos-dir is cloned from: a URL with `{repo}` for
    /// its owner/name, e.g. `https://example.com/{repo}.git`; the clone is kept in --repos-dir.
    #[arg(long, value_name = "URL")]
    pub clone_url: Option<String>,
    /// Skip the tasks whose results are already in --out.
    #[arg(long)]
    pub resume: bool,
    /// Give up on one task after this many minutes (its result is an error).
    #[arg(long, default_value_t = 60)]
    pub timeout_minutes: u64,
    /// Route roles to models (see docs/configuration.md); passed to every task's run.
    #[arg(long)]
    pub models_file: Option<PathBuf>,
    /// Role prompts replacing the compiled-in ones; passed to every task's run.
    #[arg(long)]
    pub prompts_dir: Option<PathBuf>,
    #[command(flatten)]
    pub testbed: TestbedArgs,
}

/// `vibeloop eval compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The first run's --out directory.
    pub a: PathBuf,
    /// The second run's --out directory, on the same tasks.
    pub b: PathBuf,
}

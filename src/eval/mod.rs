//! `vibeloop eval`: how well the hive resolves real tasks. [`task`] reads task sets in
//! SWE-bench's format; [`mine`] finds tasks in a repository's history; [`testbed`] runs a
//! commit's tests (with a patch) in the sandbox and [`outcomes`] reads each test's outcome;
//! [`results`] is what each task's run came to (`results.jsonl`); [`stats`], [`compare`] and
//! [`report`] turn results into a resolve rate with its interval, two runs side by side, and
//! the CLI's summary and the HTML page.
//! The command's wiring (running tasks, the progress bar) is `crate::app::eval`.

pub mod compare;
pub mod mine;
pub mod outcomes;
pub mod report;
pub mod results;
pub mod stats;
pub mod task;
pub mod testbed;

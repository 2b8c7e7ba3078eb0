//! The hive: workers that take jobs from the store and run them — a webhook delivery
//! ([`deliveries`]), a ticket's workflow ([`run`] → [`flow`]), a gates re-run ([`rerun`]) or the
//! sweep ([`sweep`]). Each job holds a lease, renewed while it works; a job that fails
//! transiently is retried with backoff, and a ticket whose job fails for good is marked Failed
//! with the reason on its status comment.
//!
//! Data flows one way through the files (`scripts/check-layers` checks it): the workers
//! ([`worker`]) call the jobs; the jobs call people's steering ([`steer`] → [`reset`],
//! [`signal`]), reconciliation ([`reconcile`]) and the workflow ([`flow`]: dispatcher → nodes →
//! `flow/ctx.rs` → [`ticket_run`] → [`status`]); the agents ([`agents`]) and the gates
//! ([`verify`], [`checks`]) serve the nodes; [`job`] and [`repo_config`] serve everyone.

mod agents;
mod ask;
mod base;
pub mod checks;
pub mod deliveries;
pub mod flow;
pub mod intervene;
mod job;
mod reconcile;
pub mod repo_config;
pub mod rerun;
mod reset;
pub mod run;
mod signal;
pub mod status;
mod steer;
pub mod sweep;
mod ticket_run;
pub(crate) mod verify;
mod worker;

pub use job::{Done, Hive, JobError};
pub use steer::PERMISSION_TTL;
pub use worker::run_workers;

//! Faults: what the bot does when its database, its Docker engine or its disk fails, and the loss test under SIGKILL.
//!
//! One test binary for these modules (each was a binary of its own): the crate is linked once.

#[path = "../support/mod.rs"]
mod support;

mod db_fault;
mod disk_full;
mod docker_fault;
mod faults;
mod loss;

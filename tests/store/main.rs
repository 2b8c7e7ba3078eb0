//! The store on both databases, and the webhook receiver that writes to it.
//!
//! One test binary for these modules (each was a binary of its own): the crate is linked once.

#[path = "../support/mod.rs"]
mod support;
#[macro_use]
#[path = "../harness/store_db.rs"]
mod store_db;

mod store;
mod store_flow;
mod store_jobs;
mod store_questions;
mod store_repositories;
mod webhook_ingress;

//! The command line and its packaging: `vibeloop` verbs (gates, doctor, setup, …), the Docker and Kubernetes files, and the test suite's own set-up script.
//!
//! One test binary for these modules (each was a binary of its own): the crate is linked once.

#[path = "../packaging/parse.rs"]
mod parse;
#[path = "../support/mod.rs"]
mod support;

mod cli;
mod doctor;
mod gates_cli;
mod packaging;
mod setup;
mod test_deps;
mod test_runner;

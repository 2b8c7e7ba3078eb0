//! The agents' machinery: the tool loop and its tools, the model clients, and the sandboxes they run commands in.
//!
//! One test binary for these modules (each was a binary of its own): the crate is linked once.

#[path = "../support/mod.rs"]
mod support;

mod agent;
mod llm;
mod sandbox;
mod sandbox_disk;

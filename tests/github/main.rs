//! GitHub's side: the fake GitHub itself (REST, git database, merges, protection), the App client against it, git through the workspace, and check runs; and the fuzz targets' bodies on their seeds.
//!
//! One test binary for these modules (each was a binary of its own): the crate is linked once.

#[path = "../harness/fake_github_world.rs"]
mod harness;
#[path = "../support/mod.rs"]
mod support;

mod fake_github;
mod fake_github_git;
mod fake_github_merge;
mod fuzz_replay;
mod git_redirects;
mod github_client;
mod markers;
mod redproof;
mod repo_ci;
mod workspace;

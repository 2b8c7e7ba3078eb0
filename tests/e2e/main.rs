//! End to end: the real bot binary against the fake GitHub (REST, git, webhooks) and the fake model, real containers and databases: each module one part of the user's journey.
//!
//! One test binary for these modules (each was a binary of its own): the crate is linked once.

#[path = "../support/mod.rs"]
mod support;

mod acceptance;
mod ask_plan;
mod bases;
mod coding_agents;
mod conflicts;
mod constraints;
mod dashboard;
mod dashboard_pages;
mod devcontainer_image;
mod download_phase;
mod e2e_crash;
mod e2e_hive;
mod e2e_land;
mod e2e_merge;
mod e2e_skeleton;
mod e2e_steer;
mod ecosystems;
mod ecosystems_run;
mod egress;
mod env_ownership;
mod eval;
mod eval_report;
mod hostile;
mod hostile_repo;
mod kept_facts;
mod knowledge;
mod lint_debt;
mod memory;
mod own_commands;
mod people;
mod push_guard;
mod pushes;
mod queues;
mod quick_start;
mod real_crates;
mod real_projects;
mod real_scale;
mod recreated_repo;
mod repo_ci;
mod reviews;
mod rulesets;
mod run_local;
mod scale_out;
mod sessions;
mod steering_files;
mod sweep;
mod trust_boundary;
mod turns;
mod verdicts;
mod wedge;
mod who_sees;
mod who_steers;

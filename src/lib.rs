//! Vibeloop: a self-hosted GitHub App that turns a labelled issue into a tested pull request.
//!
//! The crate is organised in rooms (see `DESIGN.md` §4); arrows point down this list:
//! [`webhook`] takes deliveries in, [`store`] keeps them, [`hive`] runs the workflow and uses
//! [`github`], [`workspace`], [`sandbox`], [`gates`], [`agent`] and [`llm`]. [`ticket`] holds the
//! domain types of a ticket; [`ids`] the small newtypes every room shares. [`forge`] is a
//! GitHub-compatible stand-in over local repositories, for `vibeloop run` (and the tests).

pub mod agent;
pub mod annotation;
pub mod app;
pub mod commands;
pub mod config;
pub mod dashboard;
pub mod env;
pub mod eval;
pub mod gates;
pub mod github;
pub mod hive;
pub mod html;
pub mod ids;
pub mod llm;
pub mod metrics;
pub mod pathset;
pub mod sandbox;
pub mod store;
pub mod ticket;
pub mod untrusted;
pub mod webhook;
pub mod workspace;

/// The in-process GitHub stand-in `vibeloop run` works against (the `forge` feature).
#[cfg(feature = "forge")]
pub use vibeloop_forge as forge;

/// Milliseconds since the Unix epoch: the one clock format the store uses.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

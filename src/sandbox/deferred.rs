//! A sandbox started at its first command: a role that never runs one (it only reads and
//! writes files) costs no container.

use super::{Backend, Sandbox, SandboxError, SandboxSpec};

/// The sandbox of `spec`, started by the first [`Deferred::get`] and kept for the next.
pub struct Deferred {
    backend: Backend,
    spec: SandboxSpec,
    started: tokio::sync::OnceCell<Sandbox>,
}

impl Deferred {
    pub fn new(backend: Backend, spec: SandboxSpec) -> Self {
        Self {
            backend,
            spec,
            started: tokio::sync::OnceCell::new(),
        }
    }

    /// The sandbox, started now if it was not yet. A start that fails is tried again by the
    /// next call.
    pub async fn get(&self) -> Result<&Sandbox, SandboxError> {
        self.started
            .get_or_try_init(|| self.backend.start(&self.spec))
            .await
    }

    /// Stops and removes the sandbox, if it was started.
    pub async fn stop(self) {
        if let Some(sandbox) = self.started.into_inner() {
            sandbox.stop().await;
        }
    }
}

//! Networked sandboxes on the egress network: an internal Docker network (no route, no DNS)
//! whose one way out is the allow-listing proxy ([`crate::sandbox::egress`]) on the host side
//! of its bridge, and the proxy variables that point package managers at it.

use std::collections::HashMap;

use bollard::Docker;

use super::{DockerBackend, LABEL_MANAGED, docker_err};

/// The egress network's name, shared by the bot's processes on a Docker host.
const NETWORK: &str = "vibeloop-egress";
use crate::sandbox::{SandboxError, SandboxSpec};

/// The internal network networked sandboxes join and the proxy that is its one way out.
pub struct Egress {
    pub network: String,
    pub proxy: std::net::SocketAddr,
    pub allow: crate::sandbox::egress::AllowList,
    _served: tokio::task::JoinHandle<()>,
}

impl DockerBackend {
    /// The network a sandbox of `spec` joins: none, the egress network, or the default bridge.
    pub(super) fn network_of(&self, spec: &SandboxSpec) -> String {
        match (spec.network, &self.egress) {
            (false, _) => "none".into(),
            (true, Some(e)) => e.network.clone(),
            (true, None) => "bridge".into(),
        }
    }

    /// `spec`'s environment; on the egress network, its proxy variables are the proxy's.
    pub(super) fn env_of(&self, spec: &SandboxSpec) -> Vec<(String, String)> {
        let Some(e) = self.egress.as_ref().filter(|_| spec.network) else {
            return spec.env.clone();
        };
        let proxy_var = |k: &str| k.to_ascii_lowercase().ends_with("_proxy");
        let mut env: Vec<(String, String)> = spec
            .env
            .iter()
            .filter(|(k, _)| !proxy_var(k))
            .cloned()
            .collect();
        env.extend(crate::sandbox::egress::proxy_env(&e.proxy));
        env
    }
}

/// The internal network `vibeloop-egress` (made if missing, one per Docker host, its containers
/// unable to reach each other) and this process's proxy on the host side of its bridge,
/// letting through only `allow`.
pub(super) async fn start_egress(
    docker: &Docker,
    allow: crate::sandbox::egress::AllowList,
) -> Result<Egress, SandboxError> {
    let network = NETWORK.to_owned();
    let inspect = |docker: &Docker, name: &str| {
        let (docker, name) = (docker.clone(), name.to_owned());
        async move { docker.inspect_network(&name, None).await }
    };
    let found = match inspect(docker, &network).await {
        Ok(n) => n,
        Err(_) => {
            let create = bollard::models::NetworkCreateRequest {
                name: network.clone(),
                driver: Some("bridge".into()),
                internal: Some(true),
                labels: Some(HashMap::from([(
                    LABEL_MANAGED.to_owned(),
                    "true".to_owned(),
                )])),
                // One sandbox never reaches another on it, only the proxy.
                options: Some(HashMap::from([(
                    "com.docker.network.bridge.enable_icc".to_owned(),
                    "false".to_owned(),
                )])),
                ..Default::default()
            };
            // Another process of this instance may have made it meanwhile: look again.
            if let Err(e) = docker.create_network(create).await {
                tracing::debug!(error = %e, "egress network not created");
            }
            inspect(docker, &network).await.map_err(docker_err)?
        }
    };
    if found.internal != Some(true) {
        return Err(SandboxError::Docker(format!(
            "the network {network} exists but is not internal: remove it (docker network rm {network})"
        )));
    }
    let gateway = found
        .ipam
        .and_then(|i| i.config)
        .and_then(|c| c.into_iter().find_map(|c| c.gateway))
        .and_then(|g| g.parse::<std::net::IpAddr>().ok())
        .ok_or_else(|| SandboxError::Docker(format!("the network {network} has no gateway")))?;
    let listener = tokio::net::TcpListener::bind((gateway, 0)).await?;
    let proxy = listener.local_addr()?;
    tracing::info!(%network, %proxy, hosts = ?allow.hosts(), "egress: networked sandboxes reach only the allowed hosts");
    let served = crate::sandbox::egress::serve(listener, allow.clone());
    Ok(Egress {
        network,
        proxy,
        allow,
        _served: served,
    })
}

//! The engine's images: an image's id, a pull from its registry and a build from a context,
//! each with its progress told line by line.

use std::collections::HashMap;

use futures_util::StreamExt as _;

use super::DockerBackend;
use crate::sandbox::SandboxError;

impl DockerBackend {
    /// The engine's id of `image`, when it has the image.
    pub async fn image_id(&self, image: &str) -> Option<String> {
        self.docker.inspect_image(image).await.ok()?.id
    }

    /// Pulls `image` (`:latest` when it names no tag or digest) with `credentials` for its
    /// registry, telling `progress` each layer's status as the engine reports it.
    pub async fn pull(
        &self,
        image: &str,
        credentials: Option<bollard::auth::DockerCredentials>,
        progress: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(), SandboxError> {
        let name = image.rsplit('/').next().unwrap_or(image);
        let image = if name.contains(':') || name.contains('@') {
            image.to_owned()
        } else {
            format!("{image}:latest")
        };
        let options = bollard::query_parameters::CreateImageOptionsBuilder::default()
            .from_image(&image)
            .build();
        let mut stream = self.docker.create_image(Some(options), None, credentials);
        // Each layer's status once per change ("Downloading" comes with every chunk).
        let mut last: HashMap<String, String> = HashMap::new();
        while let Some(item) = stream.next().await {
            let info = item.map_err(|e| SandboxError::Docker(e.to_string()))?;
            if let Some(e) = info.error_detail.and_then(|d| d.message) {
                return Err(SandboxError::Docker(e));
            }
            let Some(status) = info.status else { continue };
            let id = info.id.unwrap_or_default();
            if last.get(&id) == Some(&status) {
                continue;
            }
            progress(&if id.is_empty() {
                status.clone()
            } else {
                format!("{id}: {status}")
            });
            last.insert(id, status);
        }
        Ok(())
    }

    /// Builds `tag` from the tar archive `context`; the build's error, with its last lines of
    /// output, when it fails.
    pub async fn build(
        &self,
        tag: &str,
        context: Vec<u8>,
        dockerfile: &str,
        args: &[(String, String)],
        progress: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(), SandboxError> {
        let args: HashMap<String, String> = args.iter().cloned().collect();
        let options = bollard::query_parameters::BuildImageOptionsBuilder::default()
            .dockerfile(dockerfile)
            .t(tag)
            .rm(true)
            .forcerm(true)
            .buildargs(&args)
            .build();
        let mut stream =
            self.docker
                .build_image(options, None, Some(bollard::body_full(context.into())));
        let mut tail: std::collections::VecDeque<String> = Default::default();
        while let Some(item) = stream.next().await {
            let info = item.map_err(|e| SandboxError::Docker(e.to_string()))?;
            if let Some(e) = info.error_detail.and_then(|d| d.message) {
                let said: Vec<String> = tail.into_iter().collect();
                return Err(SandboxError::Docker(format!(
                    "{e} (after: {})",
                    said.join(" | ")
                )));
            }
            for line in info.stream.iter().flat_map(|s| s.lines()) {
                let line = line.trim();
                if line.is_empty() {
                    continue;
                }
                progress(line);
                if tail.len() == 3 {
                    tail.pop_front();
                }
                tail.push_back(line.chars().take(200).collect());
            }
        }
        Ok(())
    }
}

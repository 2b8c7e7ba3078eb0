//! What a repository declares it depends on, read from the manifests and lockfiles at its root
//! (the files [`super::tree::Tree`] reads): Python (`requirements*.txt`, `pyproject.toml` —
//! PEP 621 and Poetry —, `Pipfile`, `poetry.lock`), Rust (`Cargo.toml`, its workspace's
//! dependencies, `Cargo.lock`), Node (`package.json`, `package-lock.json`, `yarn.lock`), Go
//! (`go.mod`, `go.sum`); and the services its `docker-compose` files and devcontainer run. The
//! knowledge check of Preparing asks [`Declared::has_library`] and [`Declared::has_service`]
//! for what a plan needs.

use std::collections::BTreeSet;

use super::detect::Files;

/// The libraries and services a repository declares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declared {
    /// Normalised names ([`normalize`]); Go modules by their full path.
    libraries: BTreeSet<String>,
    /// Lower-case names of services and of the images they run.
    services: BTreeSet<String>,
    /// The files read, for people ("checked requirements.txt, Cargo.lock").
    pub sources: Vec<String>,
}

/// A library name as the ecosystems compare them: lower case, runs of `-`, `_` and `.` as one
/// `-` (PEP 503; Cargo treats `-` and `_` alike; npm names are lower case already).
pub fn normalize(name: &str) -> String {
    let mut out = String::new();
    let mut sep = false;
    for c in name.trim().chars() {
        if matches!(c, '-' | '_' | '.') {
            sep = true;
            continue;
        }
        if sep && !out.is_empty() {
            out.push('-');
        }
        sep = false;
        out.extend(c.to_lowercase());
    }
    out
}

impl Declared {
    /// Reads the root manifests and lockfiles of `files`.
    pub fn of(files: &impl Files) -> Self {
        let mut d = Declared::default();
        for path in files.paths().iter().filter(|p| !p.contains('/')) {
            let Some(text) = files.read(path) else {
                continue;
            };
            match path.as_str() {
                p if super::includes::is_requirements_file(p) => d.requirements(&text),
                "pyproject.toml" => d.pyproject(&text),
                "Pipfile" | "Cargo.toml" => d.toml_tables(&text),
                "poetry.lock" | "Cargo.lock" => d.lock_names(&text),
                "package.json" | "package-lock.json" => d.npm(&text),
                "yarn.lock" => d.yarn(&text),
                "go.mod" | "go.sum" => d.go(&text),
                p if p.starts_with("docker-compose") || p.starts_with("compose.") => {
                    d.compose(&text)
                }
                _ => continue,
            }
            d.sources.push(path.clone());
        }
        for path in super::devcontainer::PATHS {
            if let Some(text) = files.read(path) {
                d.compose(&text);
            }
        }
        d
    }

    /// Whether `name` is a declared library (in any ecosystem). A Go module also matches by
    /// its last path segments (`gorilla/mux` for `github.com/gorilla/mux`).
    pub fn has_library(&self, name: &str) -> bool {
        // A Go module path keeps its dots (`golang.org/x/text`); other names are normalised.
        let n = if name.contains('/') && !name.starts_with('@') {
            name.trim().to_lowercase()
        } else {
            normalize(name)
        };
        if n.is_empty() {
            return true;
        }
        self.libraries.contains(&n)
            || self
                .libraries
                .iter()
                .any(|l| l.contains('/') && l.ends_with(&format!("/{n}")))
    }

    /// Whether a service called `name` (`postgres`, `redis`) is run by the repository's compose
    /// files or devcontainer, by its service name or its image's.
    pub fn has_service(&self, name: &str) -> bool {
        let n = name.trim().to_lowercase();
        n.is_empty()
            || self
                .services
                .iter()
                .any(|s| s == &n || s.starts_with(&format!("{n}-")))
    }

    fn add(&mut self, name: &str) {
        let n = normalize(name);
        if !n.is_empty() {
            self.libraries.insert(n);
        }
    }

    /// `name[extras] >= 1.0 ; marker`, `-r other.txt` and comments skipped.
    fn requirements(&mut self, text: &str) {
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or_default().trim();
            if line.is_empty() || line.starts_with('-') {
                continue;
            }
            self.add(&pep508_name(line));
        }
    }

    fn pyproject(&mut self, text: &str) {
        let Ok(v) = text.parse::<toml::Table>() else {
            return;
        };
        let project = v.get("project");
        let lists = [
            project.and_then(|p| p.get("dependencies")),
            project
                .and_then(|p| p.get("optional-dependencies"))
                .map(|o| o as &toml::Value),
        ];
        for list in lists.into_iter().flatten() {
            self.pep508_values(list);
        }
        if let Some(groups) = v.get("dependency-groups") {
            self.pep508_values(groups);
        }
        if let Some(poetry) = v.get("tool").and_then(|t| t.get("poetry")) {
            self.toml_tables_of(poetry);
        }
    }

    /// Every string under `v` (a list, or tables of lists) read as a PEP 508 requirement.
    fn pep508_values(&mut self, v: &toml::Value) {
        match v {
            toml::Value::String(s) => self.add(&pep508_name(s)),
            toml::Value::Array(a) => a.iter().for_each(|x| self.pep508_values(x)),
            toml::Value::Table(t) => t.values().for_each(|x| self.pep508_values(x)),
            _ => {}
        }
    }

    /// Cargo.toml and Pipfile: the keys of every `*dependencies`/`packages` table, at any depth
    /// (`[target.'cfg(unix)'.dependencies]`, `[workspace.dependencies]`).
    fn toml_tables(&mut self, text: &str) {
        if let Ok(v) = text.parse::<toml::Table>() {
            self.toml_tables_of(&toml::Value::Table(v));
        }
    }

    fn toml_tables_of(&mut self, v: &toml::Value) {
        let toml::Value::Table(t) = v else {
            return;
        };
        for (key, value) in t {
            let deps = key.ends_with("dependencies") || key.ends_with("packages");
            match value {
                toml::Value::Table(inner) if deps => {
                    for (name, spec) in inner {
                        // `foo = { package = "real-name" }` renames a crate.
                        let real = spec.get("package").and_then(|p| p.as_str());
                        self.add(real.unwrap_or(name));
                    }
                }
                toml::Value::Table(_) => self.toml_tables_of(value),
                _ => {}
            }
        }
    }

    /// `name = "…"` lines of a TOML lockfile's `[[package]]` entries.
    fn lock_names(&mut self, text: &str) {
        for line in text.lines() {
            if let Some(rest) = line.trim().strip_prefix("name = \"") {
                self.add(rest.trim_end_matches('"'));
            }
        }
    }

    fn npm(&mut self, text: &str) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
            return;
        };
        for key in [
            "dependencies",
            "devDependencies",
            "peerDependencies",
            "optionalDependencies",
        ] {
            if let Some(o) = v.get(key).and_then(|d| d.as_object()) {
                o.keys().for_each(|k| self.add(k));
            }
        }
        // package-lock.json v2/v3: "node_modules/<name>" keys.
        if let Some(o) = v.get("packages").and_then(|d| d.as_object()) {
            for k in o.keys() {
                if let Some(name) = k.rsplit("node_modules/").next().filter(|n| !n.is_empty()) {
                    self.add(name);
                }
            }
        }
    }

    /// `"name@^1.0.0", name@…:` entry lines.
    fn yarn(&mut self, text: &str) {
        for line in text
            .lines()
            .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
        {
            for entry in line.trim_end_matches(':').split(',') {
                let e = entry.trim().trim_matches('"');
                let at = if let Some(rest) = e.strip_prefix('@') {
                    rest.find('@').map(|i| i + 1)
                } else {
                    e.find('@')
                };
                if let Some(i) = at {
                    self.add(&e[..i]);
                }
            }
        }
    }

    /// Module paths of `require` lines (block or single) and of `go.sum`.
    fn go(&mut self, text: &str) {
        for line in text.lines() {
            let line = line.trim();
            let line = line.strip_prefix("require ").unwrap_or(line);
            let Some(module) = line.split_whitespace().next() else {
                continue;
            };
            if module.contains('.') && module.contains('/') && !module.starts_with("//") {
                self.libraries.insert(module.to_lowercase());
            }
        }
    }

    /// Service names (`services:` keys) and image names of a compose file or a devcontainer:
    /// read as text, every `image: name:tag` and every key under `services:`.
    fn compose(&mut self, text: &str) {
        let mut in_services = false;
        for line in text.lines() {
            let trimmed = line.trim();
            let json_image = trimmed.find("\"image\":").map(|i| {
                let rest = trimmed[i + 8..].trim_start().trim_start_matches('"');
                rest.split('"').next().unwrap_or_default()
            });
            if let Some(image) = trimmed.strip_prefix("image:").or(json_image) {
                let image = image.trim().trim_matches(['"', ',', '\'']);
                let name = image.rsplit('/').next().unwrap_or(image);
                let name = name.split([':', '@']).next().unwrap_or(name);
                self.services.insert(name.to_lowercase());
            }
            if !line.starts_with(' ') && !line.starts_with('\t') {
                in_services = trimmed == "services:";
                continue;
            }
            let indent = line.len() - line.trim_start().len();
            if in_services
                && indent == 2
                && let Some(key) = trimmed.strip_suffix(':')
            {
                self.services
                    .insert(key.trim_matches(['"', '\'']).to_lowercase());
            }
        }
    }
}

/// The distribution name at the start of a PEP 508 requirement.
fn pep508_name(req: &str) -> String {
    req.trim()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::tree::Tree;

    #[test]
    fn python_manifests_and_locks() {
        let t = Tree::of(&[
            (
                "requirements.txt",
                "# web\nFlask[async]>=2.0 ; python_version > '3.8'\n-r dev.txt\nrequests==2.*\n",
            ),
            (
                "pyproject.toml",
                "[project]\ndependencies = [\"Pydantic>=2\"]\n[project.optional-dependencies]\ntest = [\"pytest\"]\n[tool.poetry.dependencies]\npython = \"^3.11\"\nbcrypt = \"^4\"\n",
            ),
        ]);
        let d = Declared::of(&t);
        for name in [
            "flask", "Requests", "pydantic", "pytest", "bcrypt", "BCrypt",
        ] {
            assert!(d.has_library(name), "{name}");
        }
        assert!(!d.has_library("passlib"));
        assert_eq!(d.sources, ["requirements.txt", "pyproject.toml"]);
    }

    #[test]
    fn rust_node_and_go_manifests() {
        let t = Tree::of(&[
            (
                "Cargo.toml",
                "[package]\nname = \"x\"\n[dependencies]\nserde_json = \"1\"\nrng = { package = \"rand\", version = \"0.9\" }\n[target.'cfg(unix)'.dev-dependencies]\nlibc = \"0.2\"\n[workspace.dependencies]\ntokio = \"1\"\n",
            ),
            (
                "Cargo.lock",
                "[[package]]\nname = \"itoa\"\nversion = \"1.0.0\"\n",
            ),
            (
                "package.json",
                "{\"dependencies\": {\"lodash\": \"^4\"}, \"devDependencies\": {\"@types/node\": \"20\"}}",
            ),
            (
                "yarn.lock",
                "\"left-pad@^1.0.0\", left-pad@~1.1:\n  version \"1.3.0\"\n\"@babel/core@^7\":\n  version \"7.0.0\"\n",
            ),
            (
                "go.mod",
                "module example.com/m\n\ngo 1.22\n\nrequire (\n\tgithub.com/gorilla/mux v1.8.1\n)\nrequire golang.org/x/text v0.14.0\n",
            ),
        ]);
        let d = Declared::of(&t);
        for name in [
            "serde-json",
            "serde_json",
            "rand",
            "libc",
            "tokio",
            "itoa",
            "lodash",
            "@types/node",
            "left-pad",
            "@babel/core",
            "github.com/gorilla/mux",
            "gorilla/mux",
            "golang.org/x/text",
        ] {
            assert!(d.has_library(name), "{name}");
        }
        // A renamed crate's key, the package itself, and what nothing names are not declared.
        for name in ["rng", "x", "mux-extra", "express"] {
            assert!(!d.has_library(name), "{name}");
        }
    }

    #[test]
    fn services_come_from_compose_files_and_the_devcontainer() {
        let t = Tree::of(&[
            (
                "docker-compose.yml",
                "services:\n  db:\n    image: postgres:16\n  cache:\n    image: docker.io/library/redis:7\nvolumes:\n  data:\n",
            ),
            (
                ".devcontainer/devcontainer.json",
                "{ \"image\": \"mcr.microsoft.com/devcontainers/python:3.12\" }",
            ),
        ]);
        let d = Declared::of(&t);
        for s in ["postgres", "redis", "db", "cache", "python"] {
            assert!(d.has_service(s), "{s}");
        }
        assert!(!d.has_service("data"), "a volume is no service");
        assert!(!d.has_service("rabbitmq"));
    }
}

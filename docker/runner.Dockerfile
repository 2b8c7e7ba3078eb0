# Sandbox images Vibeloop runs a repository's commands in, for machines that can pull from a
# container registry. One image per ecosystem; PACKAGES as in build-runner-image.sh:
#
#   docker build -t vibeloop-runner:python -f docker/runner.Dockerfile \
#       --build-arg PACKAGES="python3 python3-pip python3-venv python3-pytest flake8 mypy" docker
#   docker build -t vibeloop-runner:rust -f docker/runner.Dockerfile \
#       --build-arg PACKAGES="rustc cargo rust-clippy rustfmt gcc libc6-dev pkg-config lld llvm" docker
#   docker build -t vibeloop-runner:go   -f docker/runner.Dockerfile --build-arg PACKAGES="golang-go" docker
#   docker build -t vibeloop-runner:node -f docker/runner.Dockerfile --build-arg PACKAGES="nodejs npm" docker
#
# Without registry access use docker/build-runner-image.sh --ecosystem NAME, which builds the
# same images from Debian packages (debootstrap + docker import). Keep the two in sync.
FROM debian:trixie-slim
LABEL vibeloop.runner.rev=2
ARG PACKAGES="python3 python3-pip python3-venv python3-pytest flake8 mypy"

# No Recommends, no apt lists left behind (the gates run without network).
RUN set -eux; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        $PACKAGES git ca-certificates make gcc libc6-dev pkg-config less; \
    apt-get clean; \
    rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt/* /var/log/dpkg.log

# Rust links with lld where the image has it (as build-runner-image.sh explains): a
# repository's own .cargo/config.toml still wins over /.cargo/config.toml.
RUN set -eux; \
    if [ -x /usr/bin/ld.lld ] && [ -x /usr/bin/rustc ]; then \
        printf '#!/bin/sh\nexec cc -fuse-ld=lld "$@"\n' >/usr/local/bin/cc-lld; \
        chmod 0755 /usr/local/bin/cc-lld; \
        mkdir -p /.cargo; \
        printf '[target.%s]\nlinker = "/usr/local/bin/cc-lld"\n' "$(rustc -vV | sed -n 's/^host: //p')" \
            >/.cargo/config.toml; \
    fi

# Unprivileged user the sandboxed commands run as, the workspace it owns, and /cache where a
# repository's set-up environment is mounted.
RUN set -eux; \
    useradd --uid 1000 --user-group --create-home --home-dir /home/runner --shell /bin/bash runner; \
    mkdir -p /work /cache; \
    chown runner:runner /work /cache; \
    chmod 0755 /work /cache

ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ENV LANG=C.UTF-8
USER runner
WORKDIR /work
CMD ["sleep", "infinity"]

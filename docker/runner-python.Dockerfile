# Sandbox image Vibeloop runs Python test suites in, for machines that can pull from a
# container registry:
#
#   docker build -t vibeloop-runner:python -f docker/runner-python.Dockerfile docker
#
# Without registry access use docker/build-runner-image.sh, which builds the same image
# from Debian packages (debootstrap + docker import). Keep the two in sync.
FROM debian:bookworm-slim

# Same package set as build-runner-image.sh; no Recommends, no apt lists left behind
# (the sandbox runs without network, so apt is of no use inside it).
RUN set -eux; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3 python3-pytest flake8 mypy git ca-certificates; \
    apt-get clean; \
    rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt/* /var/log/dpkg.log

# Unprivileged user the sandboxed commands run as, and the workspace it owns.
RUN set -eux; \
    useradd --uid 1000 --user-group --create-home --home-dir /home/runner --shell /bin/bash runner; \
    mkdir -p /work; \
    chown runner:runner /work; \
    chmod 0755 /work

ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ENV LANG=C.UTF-8
USER runner
WORKDIR /work
CMD ["sleep", "infinity"]

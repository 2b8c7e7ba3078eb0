#!/usr/bin/env bash
# Build a sandbox image Vibeloop runs a repository's commands in (vibeloop-runner:<ecosystem>)
# without pulling anything from a container registry: debootstrap a Debian trixie rootfs
# from the Debian mirror this machine's apt already uses, then `docker import` it.
#
# Usage: docker/build-runner-image.sh [--if-missing] [--ecosystem NAME] [--tag NAME:TAG]
#   --ecosystem NAME  python (default), rust, go, node, or all (every toolchain in one image)
#   --if-missing      exit 0 at once when the image already exists (used by scripts/test)
#   --tag NAME        image tag to build (default vibeloop-runner:<ecosystem>)
# Environment:
#   VIBELOOP_DEBIAN_MIRROR  Debian mirror URL to use instead of the one found in apt sources
#   VIBELOOP_RUNNER_BASE    a directory builds running together share: the first one makes the
#                           common root there, the others copy it (scripts/test-deps; the
#                           caller removes it)
#
# For machines that can pull from a registry, docker/runner.Dockerfile builds the
# equivalent images (--build-arg PACKAGES=...).
set -euo pipefail

TAG=""
ECOSYSTEM="python"
IF_MISSING=0
# Debian 13: rustc 1.85, Go 1.24, Node 20, Python 3.13 with pip 25 (bookworm's rustc and Go
# are too old for today's crates and modules).
SUITE="trixie"
# Every image: git for the agents, certificates for setup's downloads, and the programs real
# projects' tests and builds call (make, a C compiler and pkg-config for extensions, less).
COMMON="git,ca-certificates,make,gcc,libc6-dev,pkg-config,less"
# Keep in sync with the README's "Ecosystems" section and docker/runner.Dockerfile.
PKG_PYTHON="python3,python3-pip,python3-venv,python3-dev,python3-pytest,flake8,mypy"
# llvm: llvm-profdata and llvm-cov read rustc's coverage instrumentation (acceptance.coverage).
PKG_RUST="rustc,cargo,rust-clippy,rustfmt,gcc,libc6-dev,pkg-config,lld,llvm"
PKG_GO="golang-go"
PKG_NODE="nodejs,npm"
KEYRING="/usr/share/keyrings/debian-archive-keyring.gpg"
# Raised whenever the packages above change: an image of an older revision is built again.
RUNNER_REV=3
RUNNER_UID=1000

die() { echo "build-runner-image: error: $*" >&2; exit 1; }
log() { echo "build-runner-image: $*" >&2; }

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case "$1" in
        --if-missing) IF_MISSING=1 ;;
        --tag) [ $# -ge 2 ] || die "--tag needs a value, e.g. --tag vibeloop-runner:python"
               TAG="$2"; shift ;;
        --tag=*) TAG="${1#--tag=}" ;;
        --ecosystem) [ $# -ge 2 ] || die "--ecosystem needs a value: python, rust, go, node or all"
               ECOSYSTEM="$2"; shift ;;
        --ecosystem=*) ECOSYSTEM="${1#--ecosystem=}" ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument '$1'" ;;
    esac
    shift
done
case "$ECOSYSTEM" in
    python) PACKAGES="$PKG_PYTHON"
            VERIFY="python3 -c 'import pytest, flake8, mypy' && python3 -m venv /tmp/v && /tmp/v/bin/pip --version" ;;
    rust)   PACKAGES="$PKG_RUST"; VERIFY="cargo --version && cargo clippy --version && cc --version && cc-lld --version >/dev/null && llvm-profdata --version >/dev/null" ;;
    go)     PACKAGES="$PKG_GO"; VERIFY="go version" ;;
    node)   PACKAGES="$PKG_NODE"; VERIFY="node --version && npm --version" ;;
    all)    PACKAGES="$PKG_PYTHON,$PKG_RUST,$PKG_GO,$PKG_NODE"
            VERIFY="python3 -m venv /tmp/v && cargo --version && go version && node --version" ;;
    *) die "--ecosystem $ECOSYSTEM: must be python, rust, go, node or all" ;;
esac
PACKAGES="$PACKAGES,$COMMON"
[ -n "$TAG" ] || TAG="vibeloop-runner:$ECOSYSTEM"

command -v docker >/dev/null 2>&1 || die "docker is not installed; install Docker Engine first"
docker info >/dev/null 2>&1 || die "cannot talk to the Docker daemon; start it (systemctl start docker) or add your user to the 'docker' group"

# The image is there, of this script's revision.
image_exists() {
    [ "$(docker image inspect -f '{{index .Config.Labels "vibeloop.runner.rev"}}' "$TAG" 2>/dev/null)" = "$RUNNER_REV" ]
}

if [ "$IF_MISSING" = 1 ] && image_exists; then
    exit 0
fi

# debootstrap, chroot and chown need real root.
[ "$(id -u)" = 0 ] || die "must run as root (debootstrap needs it): sudo $0 $*"

# Serialise concurrent builds (e.g. two scripts/test runs at once) so they do not race on
# the same tag; the second one then finds the image and, with --if-missing, stops.
exec 9>"/var/tmp/vibeloop-runner-image-$ECOSYSTEM.lock"
flock 9
if [ "$IF_MISSING" = 1 ] && image_exists; then
    exit 0
fi

START=$SECONDS

# --- debootstrap itself -----------------------------------------------------------------
if ! command -v debootstrap >/dev/null 2>&1; then
    log "installing debootstrap with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    # Try without refreshing the package lists first; refresh only if that fails.
    if ! apt-get install -y -q --no-install-recommends debootstrap </dev/null >&2; then
        apt-get update -q </dev/null >&2 || die "apt-get update failed; check /etc/apt/sources.list*"
        apt-get install -y -q --no-install-recommends debootstrap </dev/null >&2 \
            || die "could not install debootstrap; run: apt-get install debootstrap"
    fi
fi
[ -r "$KEYRING" ] || die "$KEYRING is missing; run: apt-get install debian-archive-keyring"

# --- which Debian mirror ------------------------------------------------------------------
# The mirror host is never written down in this repository: it is read from the apt
# sources of the machine (one-line *.list and deb822 *.sources formats). We take the first
# 'deb' entry for suite $SUITE, or the machine's own release ($HOST_SUITE: the same mirror
# serves every release), with component 'main' (this skips vendor repositories such as
# Docker's, which use component 'stable').
HOST_SUITE="$( . /etc/os-release 2>/dev/null; echo "${VERSION_CODENAME:-}")"
mirrors_from_list_files() {
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -r "$f" ] || continue
        # Drop comments and "[option=...]" blocks, then: deb URI SUITE COMPONENT...
        sed -e 's/#.*//' -e 's/\[[^]]*\]//g' "$f" | awk -v want="$SUITE" -v host="$HOST_SUITE" '
            $1 == "deb" && ($3 == want || $3 == host) {
                for (i = 4; i <= NF; i++) if ($i == "main") { print $2; break }
            }'
    done
}
mirrors_from_sources_files() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -r "$f" ] || continue
        awk -v want="$SUITE" -v host="$HOST_SUITE" '
            function has(list, word,   n, a, i) {
                n = split(list, a, " ")
                for (i = 1; i <= n; i++) if (a[i] == word) return 1
                return 0
            }
            function flush(   n, u, i) {
                if (uris != "" && has(types, "deb") && (has(suites, want) || (host != "" && has(suites, host))) && has(comps, "main") \
                    && enabled !~ /^(no|false|0)$/) {
                    n = split(uris, u, " ")
                    for (i = 1; i <= n; i++) print u[i]
                }
                uris = types = suites = comps = enabled = last = ""
            }
            /^[ \t]*#/ { next }
            /^[ \t]*$/ { flush(); next }
            /^[ \t]/ {   # continuation line of a multi-line field
                if (last == "uris") uris = uris " " $0
                else if (last == "suites") suites = suites " " $0
                else if (last == "types") types = types " " $0
                else if (last == "components") comps = comps " " $0
                next
            }
            {
                c = index($0, ":"); if (c == 0) next
                key = tolower(substr($0, 1, c - 1)); val = substr($0, c + 1)
                last = key
                if (key == "uris") uris = val
                else if (key == "suites") suites = val
                else if (key == "types") types = val
                else if (key == "components") comps = val
                else if (key == "enabled") { enabled = tolower(val); gsub(/[ \t]/, "", enabled) }
            }
            END { flush() }' "$f"
    done
}
find_mirror() {
    local uri
    { mirrors_from_list_files; mirrors_from_sources_files; } | while read -r uri; do
        case "$uri" in
            http://*|https://*|file:/*) echo "${uri%/}"; break ;;
        esac
    done
}

MIRROR="${VIBELOOP_DEBIAN_MIRROR:-}"
if [ -z "$MIRROR" ]; then
    MIRROR="$(find_mirror || true)"
fi
[ -n "$MIRROR" ] || die "found no Debian '$SUITE' mirror with component 'main' in /etc/apt/sources.list or /etc/apt/sources.list.d/*.{list,sources}; add one there or set VIBELOOP_DEBIAN_MIRROR=<mirror URL>"
log "building $TAG from Debian $SUITE at $MIRROR"

# --- rootfs in a scratch directory --------------------------------------------------------
WORKDIR="$(mktemp -d /var/tmp/vibeloop-runner-image.XXXXXX)"
ROOTFS="$WORKDIR/rootfs"
DEBOOTSTRAP_PID=""
MAKING_BASE=""   # the shared common root this build was making, unfinished
cleanup() {
    local rc=$?
    # Interrupted while debootstrap runs: stop it and let it undo its own mounts.
    if [ -n "$DEBOOTSTRAP_PID" ] && kill -0 "$DEBOOTSTRAP_PID" 2>/dev/null; then
        kill -TERM "$DEBOOTSTRAP_PID" 2>/dev/null || true
        wait "$DEBOOTSTRAP_PID" 2>/dev/null || true
    fi
    # A common root left half made: the next build waiting for it makes it again.
    if [ -n "$MAKING_BASE" ] && [ -d "$MAKING_BASE" ]; then
        awk -v p="$MAKING_BASE/" 'index($2, p) == 1 { print $2 }' /proc/mounts | sort -r \
            | while read -r m; do umount -l "$m" 2>/dev/null || true; done
        rm -rf --one-file-system "$MAKING_BASE"
    fi
    # debootstrap unmounts proc/sys/dev itself, but if it was killed half-way they may
    # still be mounted: unmount anything below the scratch dir (deepest first) before
    # deleting, and never let rm cross into another file system.
    if [ -d "$WORKDIR" ]; then
        awk -v p="$WORKDIR/" 'index($2, p) == 1 { print $2 }' /proc/mounts | sort -r \
            | while read -r m; do umount -l "$m" 2>/dev/null || true; done
        rm -rf --one-file-system "$WORKDIR"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# minbase = only Essential + apt, checked against the Debian archive keyring; then apt-get in
# the new root installs the toolchain (debootstrap's own --include resolver misses some
# dependencies, e.g. npm's). It runs in the background so that INT/TERM reach our trap at
# once instead of after debootstrap has finished.
debootstrap_into() {
    local into="$1" log="$2"
    debootstrap --variant=minbase --components=main --keyring="$KEYRING" \
        --include="$COMMON" "$SUITE" "$into" "$MIRROR" </dev/null >"$log" 2>&1 &
    DEBOOTSTRAP_PID=$!
    if ! wait "$DEBOOTSTRAP_PID"; then
        DEBOOTSTRAP_PID=""
        tail -n 30 "$log" >&2
        [ -f "$into/debootstrap/debootstrap.log" ] && tail -n 30 "$into/debootstrap/debootstrap.log" >&2
        die "debootstrap failed (see above); check that $MIRROR serves Debian $SUITE and that this machine can reach it"
    fi
    DEBOOTSTRAP_PID=""
}
if [ -n "${VIBELOOP_RUNNER_BASE:-}" ]; then
    # The common root (minbase and $COMMON: nine tenths of a build's work) made once for the
    # builds running together, under a lock, and copied by each (seconds, where debootstrap
    # takes most of a minute of a core).
    BASE_ROOT="$VIBELOOP_RUNNER_BASE/$SUITE-rev$RUNNER_REV"
    mkdir -p "$VIBELOOP_RUNNER_BASE"
    exec 8>"$VIBELOOP_RUNNER_BASE/lock"
    flock 8
    if [ ! -f "$BASE_ROOT.done" ]; then
        rm -rf --one-file-system "$BASE_ROOT"
        MAKING_BASE="$BASE_ROOT"
        debootstrap_into "$BASE_ROOT" "$VIBELOOP_RUNNER_BASE/debootstrap.log"
        rm -f "$BASE_ROOT"/var/cache/apt/archives/*.deb
        touch "$BASE_ROOT.done"
        MAKING_BASE=""
        log "made the common root in $BASE_ROOT after $((SECONDS - START))s"
    fi
    flock -u 8
    cp -a "$BASE_ROOT" "$ROOTFS"
else
    debootstrap_into "$ROOTFS" "$WORKDIR/debootstrap.log"
fi
mount -t proc proc "$ROOTFS/proc"
if ! chroot "$ROOTFS" sh -c "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(echo "$PACKAGES" | tr , ' ')" \
        </dev/null >"$WORKDIR/apt.log" 2>&1; then
    umount "$ROOTFS/proc" || true
    tail -n 30 "$WORKDIR/apt.log" >&2
    die "installing $PACKAGES in the new root failed (see above)"
fi
umount "$ROOTFS/proc"
log "debootstrap done after $((SECONDS - START))s"

# Rust links with lld: Debian's rustc 1.85 links with GNU ld, which made a test build of a
# crate with a few dozen dependencies 2-3x slower than on a host with a newer Rust (lld by
# default since 1.90); with lld it is the host's time (bench/README.md, env). The setting sits
# in /.cargo/config.toml, the last directory cargo searches from /work: a repository's own
# .cargo/config.toml (a linker of its own) still wins.
if [ -x "$ROOTFS/usr/bin/ld.lld" ] && [ -x "$ROOTFS/usr/bin/rustc" ]; then
    TRIPLE="$(chroot "$ROOTFS" rustc -vV | sed -n 's/^host: //p')"
    printf '#!/bin/sh\n# cc, linking with lld (see /.cargo/config.toml)\nexec cc -fuse-ld=lld "$@"\n' \
        >"$ROOTFS/usr/local/bin/cc-lld"
    chmod 0755 "$ROOTFS/usr/local/bin/cc-lld"
    mkdir -p "$ROOTFS/.cargo"
    printf '[target.%s]\nlinker = "/usr/local/bin/cc-lld"\n' "$TRIPLE" >"$ROOTFS/.cargo/config.toml"
fi

# Unprivileged user the sandboxed commands run as, and the workspace it owns.
chroot "$ROOTFS" useradd --uid "$RUNNER_UID" --user-group --create-home \
    --home-dir /home/runner --shell /bin/bash runner
# /cache is where a repository's set-up environment is mounted (a virtual environment,
# cargo's registry and target directory, Go's caches, node_modules).
mkdir -p "$ROOTFS/work" "$ROOTFS/cache"
chown "$RUNNER_UID:$RUNNER_UID" "$ROOTFS/work" "$ROOTFS/cache"
chmod 0755 "$ROOTFS/work" "$ROOTFS/cache"

# Keep the image small: no package caches or lists (containers run without network
# anyway), no man pages, info or translations; keep only the copyright files of the docs.
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/cache/apt/*.bin \
       "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/debconf/*-old "$ROOTFS"/var/log/apt "$ROOTFS"/var/lib/dpkg/*-old \
       "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/* "$ROOTFS"/usr/share/locale/*
mkdir -p "$ROOTFS/var/lib/apt/lists/partial"
find "$ROOTFS/usr/share/doc" -type f ! -name copyright -delete
find "$ROOTFS/usr/share/doc" -mindepth 1 -type d -empty -delete
find "$ROOTFS/var/log" -type f -delete
# debootstrap copies the build host's resolv.conf and hostname; Docker provides its own.
: >"$ROOTFS/etc/resolv.conf"
echo runner >"$ROOTFS/etc/hostname"
: >"$ROOTFS/etc/machine-id"

# --- import ---------------------------------------------------------------------------------
log "importing into Docker as $TAG"
tar --numeric-owner -C "$ROOTFS" -c . | docker import \
    --change 'USER runner' \
    --change "LABEL vibeloop.runner.rev=$RUNNER_REV" \
    --change 'WORKDIR /work' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["sleep","infinity"]' \
    --message "vibeloop runner image, debootstrap $SUITE minbase + $PACKAGES" \
    - "$TAG" >/dev/null

# --- verify ---------------------------------------------------------------------------------
# A broken image must not stay under the tag, or --if-missing would keep it forever.
verify_failed() {
    docker image rm "$TAG" >/dev/null 2>&1 || true
    die "$1; the image was removed, fix the problem and run $0 again"
}
out="$(docker run --rm --network none --tmpfs /tmp:exec -e HOME=/tmp "$TAG" sh -c "$VERIFY" 2>&1)" \
    || verify_failed "the $ECOSYSTEM toolchain does not run in the new image ($VERIFY): $out"
uid="$(docker run --rm --network none "$TAG" id -u 2>&1)" || verify_failed "'id -u' failed in the new image: $uid"
[ "$uid" != 0 ] || verify_failed "the new image runs as root; it must run as the 'runner' user"

size="$(docker image inspect -f '{{.Size}}' "$TAG")"
log "built $TAG ($((size / 1000000)) MB, runs as uid $uid) in $((SECONDS - START))s"

#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages), builds, and then runs the daemon or the tests.
#
#   ./build.sh run [jitsymd args...]   build, then run jitsymd in the foreground (watches /tmp)
#   ./build.sh test [ctest args...]    build, then run every test (unit + integration)
#   ./build.sh build                   install what is missing and build only
#   ./build.sh deps                    install what is missing only
#
# Environment: BUILD_DIR (default build), BUILD_TYPE (default RelWithDebInfo),
#              JOBS (default: number of cores), CTEST_JOBS (default 2).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

# Every Debian package the project needs, in one place. Later formats and tools add theirs here.
PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libboost-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libdw-dev libelf-dev libsystemd-dev zlib1g-dev liblzma-dev
  libdebuginfod-dev llvm llvm-14-dev binutils xz-utils
  python3 mono-runtime mono-mcs libmono-profiler mono-utils
  default-jdk-headless
  linux-perf google-perftools libgoogle-perftools-dev
)
# node runs the live integration tests. Any node already on PATH will do (Debian's 18 is fine).
if ! command -v node >/dev/null 2>&1; then
  PACKAGES+=(nodejs)
fi

BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
JOBS=${JOBS:-$(nproc)}
CTEST_JOBS=${CTEST_JOBS:-2}

log() { printf 'build.sh: %s\n' "$*" >&2; }

missing_packages() {
  local pkg status
  for pkg in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
    [[ $status == ii* ]] || printf '%s\n' "$pkg"
  done
}

install_deps() {
  if ! command -v dpkg-query >/dev/null 2>&1; then
    log "dpkg-query not found: not a Debian system; install the equivalents of: ${PACKAGES[*]}"
    return 0
  fi
  local missing
  mapfile -t missing < <(missing_packages)
  if ((${#missing[@]} == 0)); then
    return 0
  fi
  log "installing missing packages: ${missing[*]}"
  local sudo=()
  if ((EUID != 0)); then
    if ! command -v sudo >/dev/null 2>&1; then
      log "need root (or sudo) to install: ${missing[*]}"
      exit 1
    fi
    sudo=(sudo)
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
}

# build [TARGET...]: configures if needed and builds the targets given, or everything.
build() {
  local targets=()
  if (($# > 0)); then targets=(--target "$@"); fi
  if [[ ! -f $BUILD_DIR/CMakeCache.txt ]]; then
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE"
  else
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" >/dev/null  # reuse its generator
  fi
  cmake --build "$BUILD_DIR" -j"$JOBS" "${targets[@]}"
}

usage() {
  sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

cmd=${1:-}
[[ -n $cmd ]] || usage
shift

case $cmd in
  deps)
    install_deps
    ;;
  build)
    install_deps
    build
    ;;
  run)
    install_deps
    build jitsymd jitsym  # the daemon needs nothing else; don't wait for tests and benchmarks
    # The default socket for root lives in /run/jitsymd; make sure its directory exists.
    if ((EUID == 0)); then mkdir -p /run/jitsymd; fi
    exec "$BUILD_DIR/jitsymd" "$@"
    ;;
  test)
    install_deps
    build
    exec ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$CTEST_JOBS" "$@"
    ;;
  -h|--help|help)
    usage
    ;;
  *)
    log "unknown command: $cmd"
    usage
    ;;
esac

#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages), builds, and then runs the daemon or the tests.
#
#   ./build.sh run [jitsymd args...]   build, then run jitsymd in the foreground (watches /tmp)
#   ./build.sh test [ctest args...]    build, then run every test (unit + integration); without
#                                      ctest args, then the asan and fuzz stages too
#   ./build.sh asan [ctest args...]    the whole suite built with ASan+UBSan (build-asan)
#   ./build.sh fuzz [SECONDS]          every libFuzzer target for SECONDS (default 20) each,
#                                      built with clang under ASan+UBSan (build-fuzz)
#   ./build.sh build                   install what is missing and build only
#   ./build.sh deps                    install what is missing only
#
# Environment: BUILD_DIR (default build), BUILD_TYPE (default RelWithDebInfo),
#              JOBS (default: number of cores), CTEST_JOBS (default 2),
#              FUZZ_SECONDS (default 20), SANITIZER_STAGES=0 skips asan and fuzz in `test`.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

# Every Debian package the project needs, in one place. Later formats and tools add theirs here.
PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libboost-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libdw-dev libelf-dev libsystemd-dev zlib1g-dev liblzma-dev
  libdebuginfod-dev llvm llvm-14-dev libiberty-dev binutils xz-utils
  dwz  # debug files shrunk as distributions ship them (integration_native_dwz)
  libc6-dbg  # libc's debug file: native names compared with llvm-symbolizer's
  python3 mono-runtime mono-mcs libmono-profiler mono-utils
  default-jdk-headless
  systemd dpkg-dev man-db  # service tests: systemd-analyze, systemd-socket-activate; cpack -G DEB
  debootstrap systemd-container  # the .deb installed in a Debian 12 booted by systemd-nspawn
  linux-perf google-perftools libgoogle-perftools-dev  # annotate, perfmap, pprof tests
  clang libclang-rt-14-dev  # the fuzz targets (libFuzzer) and their sanitizers
  chromium fonts-dejavu-core  # flame graphs rendered in a real browser (headless)
  golang-go  # go tool pprof reads the profile.proto profiles
  fuse3 libfuse3-dev  # a user's FUSE server that never answers root (integration_attacks_fuse)
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

# Sanitized builds: -O1 with line tables only compiles much faster than RelWithDebInfo and still
# gives sanitizer reports with file:line stacks (asserts stay on: Debug).
SANITIZER_FLAGS=(-DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DCMAKE_C_FLAGS_DEBUG="-O1 -g1")

# The whole test suite again, every binary built with ASan+UBSan: memory errors and undefined
# behaviour anywhere a test reaches fail the run.
asan_stage() {
  local dir=${ASAN_BUILD_DIR:-build-asan}
  log "asan: building $dir"
  BUILD_DIR=$dir BUILD_TYPE=Debug configure_and_build -DJITSYM_SANITIZE=ON \
    -DJITSYM_BUILD_BENCH=OFF "${SANITIZER_FLAGS[@]}"
  log "asan: running the test suite"
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
    ctest --test-dir "$dir" --output-on-failure -j"$CTEST_JOBS" "$@"
}

# Every fuzz target for a bounded time from its seed corpus (clang, libFuzzer, ASan+UBSan).
fuzz_stage() {
  local dir=${FUZZ_BUILD_DIR:-build-fuzz} seconds=${1:-${FUZZ_SECONDS:-20}}
  log "fuzz: building $dir"
  CC=clang CXX=clang++ BUILD_DIR=$dir BUILD_TYPE=Debug FUZZ_ONLY=1 configure_and_build \
    -DJITSYM_FUZZ=ON -DJITSYM_BUILD_TESTS=OFF -DJITSYM_BUILD_BENCH=OFF \
    -DJITSYM_FUZZ_SECONDS="$seconds" "${SANITIZER_FLAGS[@]}"
  log "fuzz: running each target for $seconds s"
  ctest --test-dir "$dir" --output-on-failure -j"$CTEST_JOBS" -L fuzz
  # Executions per target, from libFuzzer's final stats in ctest's log.
  awk '/^[0-9]+\/[0-9]+ Test: /{name=$3} /stat::number_of_executed_units/{print "build.sh: fuzz: " name ": " $2 " executions"}' \
    "$dir/Testing/Temporary/LastTest.log" >&2
}

# configure_and_build [CMAKE ARGS...]: a build directory of its own, configured with the args.
configure_and_build() {
  if [[ ! -f $BUILD_DIR/CMakeCache.txt ]]; then
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" "$@"
  else
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" "$@" >/dev/null
  fi
  if [[ ${FUZZ_ONLY:-0} == 1 ]]; then  # not the daemon and client: only what the fuzz tests run
    cmake --build "$BUILD_DIR" -j"$JOBS" --target fuzz_targets
  else
    cmake --build "$BUILD_DIR" -j"$JOBS"
  fi
}

usage() {
  sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
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
    if (($# > 0)) || [[ ${SANITIZER_STAGES:-1} == 0 ]]; then
      exec ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$CTEST_JOBS" "$@"
    fi
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$CTEST_JOBS"
    asan_stage
    fuzz_stage
    ;;
  asan)
    install_deps
    asan_stage "$@"
    ;;
  fuzz)
    install_deps
    fuzz_stage "$@"
    ;;
  -h|--help|help)
    usage
    ;;
  *)
    log "unknown command: $cmd"
    usage
    ;;
esac

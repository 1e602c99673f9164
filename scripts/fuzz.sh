#!/usr/bin/env bash
# The fuzz targets of the hand-written parsers (fuzz/, docs/security.md#fuzzing), with cargo-fuzz (libFuzzer) on the
# stable toolchain: RUSTC_BOOTSTRAP=1 lets stable rustc take the -Z flags cargo-fuzz passes. Sanitizer none: the parsers
# are safe Rust (unsafe_code is forbidden), so what a run looks for is a panic, an overflow (debug assertions are on) or
# a broken invariant the target asserts; without ASan a run is two to three times faster.
#
#   scripts/fuzz.sh [--runs N] [TARGET...]   run each target (default: all) for N executions (default 10,000,000),
#                                            on the corpus in fuzz/corpus/TARGET (read with the hand-written
#                                            inputs of fuzz/seeds/TARGET), then minimise that corpus
#   scripts/fuzz.sh --planted                flip a check in redirect matching (in a scratch worktree) and show the
#                                            redirect target finds it within five minutes
#   scripts/fuzz.sh --check                  type-check the targets (what scripts/test.sh does, so they cannot rot)
#
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`; installed here when missing). Figures: docs/security.md.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export RUSTC_BOOTSTRAP=1
flags=(--sanitizer none --release --debug-assertions)
libfuzzer=(-print_final_stats=1 -max_len=8192 -timeout=10 -rss_limit_mb=2048)

if [[ "${1:-}" == "--check" ]]; then
  exec env CARGO_TARGET_DIR="$root/target/fuzz-check" cargo check --manifest-path fuzz/Cargo.toml --locked --bins --no-default-features
fi
command -v cargo-fuzz > /dev/null || cargo install cargo-fuzz --locked

if [[ "${1:-}" == "--planted" ]]; then
  scratch=$(mktemp -d)
  trap 'git worktree remove --force "$scratch" > /dev/null 2>&1 || true; rm -rf "$scratch"' EXIT
  git worktree add --detach "$scratch" HEAD > /dev/null
  file="$scratch/crates/latchkey-core/src/redirect.rs"
  # The bug: a registered localhost URI matches any URI that extends its path (a classic of redirect checks).
  sed -i 's/self.host == other.host \&\& self.rest == other.rest/self.host == other.host \&\& other.rest.starts_with(self.rest)/' "$file"
  grep -q 'other.rest.starts_with(self.rest)' "$file" || { echo "the check to flip was not found in $file" >&2; exit 2; }
  mkdir -p "$scratch/fuzz/corpus-planted"
  cp fuzz/seeds/redirect/* "$scratch/fuzz/corpus-planted/"
  started=$(date +%s)
  set +e
  (cd "$scratch" && CARGO_TARGET_DIR="$root/target/fuzz-planted" cargo fuzz run redirect "${flags[@]}" \
    fuzz/corpus-planted -- "${libfuzzer[@]}" -max_total_time=300) > "$root/target/fuzz-planted.log" 2>&1
  status=$?
  set -e
  if [[ $status -ne 0 ]] && grep -q 'accepted' "$root/target/fuzz-planted.log"; then
    echo "planted bug found in $(($(date +%s) - started)) s (build included):"
    grep -m1 'accepted' "$root/target/fuzz-planted.log"
    grep -m1 -o 'stat::number_of_executed_units: [0-9]*' "$root/target/fuzz-planted.log" || true
    exit 0
  fi
  echo "the planted bug was NOT found (exit $status); see target/fuzz-planted.log" >&2
  exit 1
fi

runs=10000000
if [[ "${1:-}" == "--runs" ]]; then runs=$2; shift 2; fi
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then mapfile -t targets < <(cargo fuzz list); fi
cargo fuzz build "${flags[@]}"
mkdir -p target/fuzz-logs
printf 'target\texecutions\tseconds\tcorpus\n'
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t"
  log="target/fuzz-logs/$t.log"
  started=$(date +%s)
  seeds=(); [[ -d "fuzz/seeds/$t" ]] && seeds=("fuzz/seeds/$t")
  cargo fuzz run "$t" "${flags[@]}" "fuzz/corpus/$t" "${seeds[@]}" -- "${libfuzzer[@]}" -runs="$runs" > "$log" 2>&1 \
    || { echo "$t: FAILED, see $log and fuzz/artifacts/$t" >&2; exit 1; }
  executed=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
  cargo fuzz cmin "$t" "${flags[@]}" > "target/fuzz-logs/$t.cmin.log" 2>&1
  printf '%s\t%s\t%s\t%s\n' "$t" "$executed" "$(($(date +%s) - started))" "$(find "fuzz/corpus/$t" -type f | wc -l)"
done

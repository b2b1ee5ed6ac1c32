#!/usr/bin/env bash
# Run the data-apis array-api-tests suite against spartan and NumPy with the same
# settings and print the passed / failed / skipped counts side by side.
#
# usage: bench/array_api.sh [PATH_TO_ARRAY_API_TESTS_CHECKOUT] [-- EXTRA PYTEST ARGS]
#
#   With no path, https://github.com/data-apis/array-api-tests is cloned (with its
#   `array-api` spec submodule) into bench/out/array-api-tests (ignored by git).
#
# Environment (defaults in brackets):
#   MODULES            modules to test, in order                  ["numpy spartan"]
#   MAX_EXAMPLES       hypothesis examples per test               [5]
#   SEED               hypothesis seed (same for every module)    [0]
#   API_VERSION        ARRAY_API_TESTS_VERSION                    [2024.12]
#   OUT                where reports and logs go                  [bench/out/array_api]
#   TESTS              test paths inside the checkout             [array_api_tests: all]
#   SPARTAN_BACKEND    spartan's backend                          [local: in-process workers]
#   SPARTAN_LOCAL_BELOW_BYTES  arrays below this run eagerly with NumPy on the driver;
#                      0 distributes every array, so the suite tests spartan's own
#                      tiled code rather than NumPy's                              [0]
#
# Outputs: $OUT/<module>.json (pytest-json-report), $OUT/<module>.log (pytest -rfE
# output: one line per failure), $OUT/summary.md (the counts table).
# Needs pytest, hypothesis, ndindex and pytest-json-report (the `test` extra).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AAT="${1:-}"
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
EXTRA=("$@")

MODULES="${MODULES:-numpy spartan}"
MAX_EXAMPLES="${MAX_EXAMPLES:-5}"
SEED="${SEED:-0}"
API_VERSION="${API_VERSION:-2024.12}"
OUT="${OUT:-$REPO/bench/out/array_api}"
read -r -a TESTS <<<"${TESTS:-array_api_tests}"
PYTHON="${PYTHON:-python}"

if [ -z "$AAT" ]; then
    AAT="$REPO/bench/out/array-api-tests"
    if [ ! -d "$AAT/array_api_tests" ]; then
        mkdir -p "$(dirname "$AAT")"
        git clone --recurse-submodules https://github.com/data-apis/array-api-tests "$AAT"
    fi
fi
AAT="$(cd "$AAT" && pwd)"
if [ ! -d "$AAT/array-api/spec" ]; then
    echo "array_api.sh: $AAT/array-api (the spec submodule) is missing;" \
        "run 'git submodule update --init' there" >&2
    exit 2
fi
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"  # (the runs below happen inside the checkout)

for module in $MODULES; do
    echo "== array-api-tests: $module (max-examples=$MAX_EXAMPLES, seed=$SEED," \
        "version=$API_VERSION) =="
    # hypothesis replays the failing examples it saved from earlier runs: start clean so
    # that one module's run does not replay another's failures
    rm -rf "$AAT/.hypothesis"
    (
        cd "$AAT"
        ARRAY_API_TESTS_MODULE="$module" \
        ARRAY_API_TESTS_VERSION="$API_VERSION" \
        SPARTAN_BACKEND="${SPARTAN_BACKEND:-local}" \
        SPARTAN_LOCAL_BELOW_BYTES="${SPARTAN_LOCAL_BELOW_BYTES:-0}" \
        "$PYTHON" -m pytest "${TESTS[@]}" \
            --max-examples="$MAX_EXAMPLES" \
            --hypothesis-seed="$SEED" \
            --disable-deadline \
            -p no:cacheprovider \
            -q -rfE --tb=line \
            --json-report --json-report-file="$OUT/$module.json" \
            "${EXTRA[@]}" >"$OUT/$module.log" 2>&1
    ) || true    # pytest exits 1 when any test fails; the counts say how many
    # pytest's summary line (Ray workers' log lines may come after it)
    grep -E '(passed|failed|skipped|error).* in [0-9.]+s' "$OUT/$module.log" | tail -n 1 || true
done

"$PYTHON" - "$OUT" $MODULES <<'EOF'
import datetime
import json
import platform
import sys

out, modules = sys.argv[1], sys.argv[2:]
rows = {}
for m in modules:
    with open(f"{out}/{m}.json") as f:
        s = json.load(f)["summary"]
    rows[m] = {k: s.get(k, 0) for k in ("passed", "failed", "skipped", "xfailed", "error")}
    rows[m]["total"] = s.get("total", 0)
keys = ["passed", "failed", "skipped", "xfailed", "error", "total"]
lines = [
    f"array-api-tests on {platform.node()}, {datetime.date.today()}",
    "",
    "| module | " + " | ".join(keys) + " |",
    "|---" * (len(keys) + 1) + "|",
]
lines += [f"| {m} | " + " | ".join(str(rows[m][k]) for k in keys) + " |" for m in modules]
text = "\n".join(lines)
print(text)
with open(f"{out}/summary.md", "w") as f:
    f.write(text + "\n")
EOF

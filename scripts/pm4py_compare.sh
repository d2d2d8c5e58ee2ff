#!/usr/bin/env bash
# Explores the same nets with Caméléon's verifier and with pm4py, side by side: the
# parallel-split family (n branches of 3 transforms between a fork and a join, 4^n + 4 states),
# exported to PNML by `cameleon export --pnml` and read by pm4py, whose reachability graph should
# have the same number of states. Not run in CI.
#
#   scripts/pm4py_compare.sh --install    create target/pm4py-venv and install pm4py into it (once)
#   scripts/pm4py_compare.sh [N...]       compare for these n (default: 5 6 7)
#
# Prints, per n: the states of the full exploration (`--reduce none`) and its time, the states and
# time of the reduced one (the default), and pm4py's states and time (the reachability graph only).
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/pm4py-venv
if [[ "${1:-}" == "--install" ]]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
    "$venv/bin/pip" install --quiet pm4py
    "$venv/bin/python" -c 'import pm4py; print("pm4py", pm4py.__version__, "installed in '"$venv"'")'
    exit 0
fi
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import pm4py' 2>/dev/null; then
    echo "pm4py is not installed: run scripts/pm4py_compare.sh --install first" >&2
    exit 2
fi
sizes=("$@")
[[ ${#sizes[@]} -eq 0 ]] && sizes=(5 6 7)

cargo build --quiet --release -p cameleon-cli
cameleon=target/release/cameleon
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The .cm file of n parallel branches.
split_cm() {
    local n=$1 letters=abcdefghijklmnopqrstuvwxyz
    printf 'cameleon: 1\nname: parallel-split-%s\noperators:\n' "$n"
    printf '  - id: src\n    type: source\n    params:\n      value: x\n'
    printf '  - id: split\n    type: fork\n    params:\n      arity: %s\n' "$n"
    printf '  - id: sync\n    type: join\n    params:\n      arity: %s\n' "$n"
    printf '  - id: out\n    type: sink\n'
    for ((i = 0; i < n; i++)); do
        for s in 0 1 2; do printf '  - id: t%s_%s\n    type: transform\n' "$i" "$s"; done
    done
    printf 'connections:\n  - from: src.out_data\n    to: split.in_data\n'
    printf '  - from: sync.out_data\n    to: out.in_data\n'
    for ((i = 0; i < n; i++)); do
        local l=${letters:i:1}
        printf '  - from: split.out_%s\n    to: t%s_0.in_data\n' "$l" "$i"
        printf '  - from: t%s_0.out_data\n    to: t%s_1.in_data\n' "$i" "$i"
        printf '  - from: t%s_1.out_data\n    to: t%s_2.in_data\n' "$i" "$i"
        printf '  - from: t%s_2.out_data\n    to: sync.in_%s\n' "$i" "$l"
    done
}

# Seconds taken by a command (its output discarded).
seconds() {
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}

printf '%3s %12s %10s %10s %10s %12s %10s\n' n "full states" "full s" "reduced" "reduced s" "pm4py states" "pm4py s"
for n in "${sizes[@]}"; do
    cm="$work/split-$n.cm"
    split_cm "$n" >"$cm"
    "$cameleon" export "$cm" --pnml >"$work/split-$n.pnml"
    full=$("$cameleon" check "$cm" --verify --reduce none --max-states 4000000000 --json)
    reduced=$("$cameleon" check "$cm" --verify --json)
    full_s=$(seconds "$cameleon" check "$cm" --verify --reduce none --max-states 4000000000 --json)
    reduced_s=$(seconds "$cameleon" check "$cm" --verify --json)
    pm=$("$venv/bin/python" -W ignore - "$work/split-$n.pnml" <<'PY'
import sys, time
import pm4py
from pm4py.objects.petri_net.utils import reachability_graph
net, im, _ = pm4py.read_pnml(sys.argv[1])
t0 = time.perf_counter()
ts = reachability_graph.construct_reachability_graph(net, im)
print(len(ts.states), f"{time.perf_counter() - t0:.3f}")
PY
)
    states() { sed -E 's/.*"states":([0-9]+).*/\1/' <<<"$1"; }
    printf '%3s %12s %10.3f %10s %10.3f %12s %10s\n' "$n" "$(states "$full")" "$full_s" \
        "$(states "$reduced")" "$reduced_s" ${pm}
done

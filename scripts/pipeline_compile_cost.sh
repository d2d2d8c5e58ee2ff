#!/usr/bin/env bash
# Measures what `pipeline!` adds to `cargo build` time: generates a throwaway crate whose
# `main` builds a 200-operator net with `pipeline!`, and the same crate building the same net
# with `NetBuilder` (no compile-time checks), then times a clean build of each crate's own code
# (dependencies are built first and not counted).
#
#   scripts/pipeline_compile_cost.sh [N_OPERATORS] [RUNS]
#
# Nothing it generates is kept in the repository (it works in a temporary folder).
set -euo pipefail

N=${1:-200}
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pipeline-cost.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# The chain: a source, N-2 processors cycling through four operator types (Chunker: DataString
# -> DataChunk, Transform: any -> DataString, JsonParse: DataString -> DataJSON, Transform), a
# sink; every connection type-checks.
gen_ops() {
    local i
    for ((i = 1; i <= N - 2; i++)); do
        case $((i % 4)) in
            0) echo "op$i Transform::new() String" ;;
            1) echo "op$i Chunker::default() Chunk" ;;
            2) echo "op$i Transform::new() String" ;;
            3) echo "op$i JsonParse::new() Json" ;;
        esac
    done
}

write_crate() { # $1 = dir, $2 = macro|builder
    mkdir -p "$1/src"
    cp "$ROOT/rust-toolchain.toml" "$1/"
    cat > "$1/Cargo.toml" <<TOML
[package]
name = "pipeline-cost-$2"
version = "0.0.0"
edition = "2024"
publish = false
[dependencies]
cameleon = { path = "$ROOT/cameleon" }
[workspace]
TOML
    {
        echo "use cameleon::ops::*;"
        echo "use cameleon::prelude::*;"
        echo "fn build() -> Net {"
        if [ "$2" = macro ]; then
            echo "    pipeline! {"
            echo "        name = \"cost\";"
            echo "        let op0 = Source::new(\"{\\\"a\\\": 1}\");"
            gen_ops | while read -r name expr _; do echo "        let $name = $expr;"; done
            echo "        let sink = Sink::new();"
            prev=op0
            gen_ops | while read -r name _ kind; do
                echo "        $prev.out_data -> $name.in_data;"
                echo "$name" > "$1/.prev"
                prev=$name
            done
            echo "        $(cat "$1/.prev").out_data -> sink.in_data;"
            echo "    }"
        else
            echo "    let mut b = Net::builder(\"cost\");"
            echo "    b.add(\"op0\", Source::new(\"{\\\"a\\\": 1}\"));"
            gen_ops | while read -r name expr _; do echo "    b.add(\"$name\", $expr);"; done
            echo "    b.add(\"sink\", Sink::new());"
            prev=op0
            gen_ops | while read -r name _ _; do
                echo "    b.connect(\"$prev.out_data\", \"$name.in_data\");"
                echo "$name" > "$1/.prev"
                prev=$name
            done
            echo "    b.connect(\"$(cat "$1/.prev").out_data\", \"sink.in_data\");"
            echo "    b.build().unwrap()"
        fi
        echo "}"
        echo "fn main() { println!(\"{}\", build().operators().len()); }"
    } > "$1/src/main.rs"
}

for kind in macro builder; do
    write_crate "$WORK/$kind" "$kind"
    (cd "$WORK/$kind" && CARGO_TARGET_DIR="$WORK/target" cargo build -q 2>/dev/null || true)
done

measure() { # $1 = kind -> prints seconds of the best of RUNS clean builds of the crate itself
    local best=""
    for ((r = 0; r < RUNS; r++)); do
        touch "$WORK/$1/src/main.rs"
        local t0 t1
        t0=$(date +%s.%N)
        (cd "$WORK/$1" && CARGO_INCREMENTAL=0 CARGO_TARGET_DIR="$WORK/target" cargo build -q)
        t1=$(date +%s.%N)
        local d
        d=$(echo "$t1 - $t0" | bc)
        if [ -z "$best" ] || (($(echo "$d < $best" | bc))); then best=$d; fi
    done
    echo "$best"
}

M=$(measure macro)
B=$(measure builder)
echo "operators: $N, best of $RUNS builds (dependencies prebuilt, incremental off for the crate):"
echo "  pipeline!   ${M}s"
echo "  NetBuilder  ${B}s"
echo "  added by pipeline!: $(echo "$M - $B" | bc)s"
"$WORK/target/debug/pipeline-cost-macro" >/dev/null

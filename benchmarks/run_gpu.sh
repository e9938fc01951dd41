#!/usr/bin/env bash
# The accelerator rows of the README in one go, on one GPU (JAX with CUDA, PyTorch with CUDA):
#
#   bash benchmarks/run_gpu.sh OUT_DIR [TEXTS_JSONL] [STYLE_TEXTS]
#
# BUNDLE=DIR: a folder made by `python benchmarks/gpu_bundle.py make DIR` (MiniLM's weights, the
# texts, the training pairs, real embeddings) for a machine without the data or the weights package;
# it is unpacked first and supplies TEXTS_JSONL, REAL_NPY and bench_train's --pairs.
# PARTS (default: all, in the order below) picks and orders the parts, e.g.
# PARTS="encoder_float32_default train topk_real" for the rows a short lease still lacks; REAL_NPY
# names real embeddings already made (an .npy of [M, 384] rows, e.g. made on a CPU and carried) to
# tile for topk_real instead of embedding STYLE_TEXTS on the card; TRAIN_DROPOUT is bench_train's
# --attention-dropout list (default "0.1": one value, both sides; "0.1,0" doubles the set-up),
# TRAIN_PRECISION its --matmul-precision (default highest: true float32 on both sides; default:
# TF32 on both), TRAIN_LIMIT_S the part's limit (default 300).
#
# - bench_encoder (ours vs PyTorch on the card): bfloat16, float32 with each library's fast default
#   (TF32), float32 with true float32 products; TEXTS_JSONL: the texts to embed (default: 2,000 sampled
#   from $STYLEBENCH_DATA, like the CPU rows);
# - bench_topk (ours vs a PyTorch matmul + topk on the card), N = 10^6, Q = 1,000: Gaussian, clustered,
#   and real MiniLM embeddings tiled to 10^6: REAL_NPY, else those of STYLE_TEXTS (one text per line,
#   embedded here by `stylebench embed`, whose wall time is logged);
# - bench_train (our step vs sentence-transformers MNRL / CachedMNRL on the card), 64 pairs x 128 tokens,
#   TRAIN_PRECISION's products on both sides; its pairs come from the BUNDLE, else runs/pairs/novels
#   or $STYLEBENCH_DATA's Reuters C50 (bench_train.text_pairs), which must then be on that machine.
# Each part has its own time limit and log; a part that fails does not stop the others. A part cut by
# its limit gets SIGABRT, and Python's faulthandler (PYTHONFAULTHANDLER) writes every thread's stack to
# its log first, so the log says where the time went; the train part also logs each XLA compilation and
# its seconds (JAX_LOG_COMPILES). JSON and logs land in OUT_DIR (and, with PACK=FILE.tar.gz, are
# packed there after every part). JAX takes at most 45% of the card's memory so PyTorch has room in
# the same process. DEADLINE_S bounds the whole run.
set -u
out=${1:?usage: run_gpu.sh OUT_DIR [TEXTS_JSONL] [STYLE_TEXTS]}
texts=${2:-}
style=${3:-}
deadline=${DEADLINE_S:-1800}  # parts that would start with less than 30 s left are skipped
n_texts=${N_TEXTS:-2000} topk_n=${TOPK_N:-1000000} train_steps=${TRAIN_STEPS:-10}
train_batch=${TRAIN_BATCH:-64}  # smaller values of these four: a dry run
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1 XLA_CLIENT_MEM_FRACTION=0.45
ulimit -c 0  # the SIGABRT of a cut part dumps stacks, not a core file
py=${PYTHON:-python3}
pairs_args=()
if [ -n "${BUNDLE:-}" ]; then  # a folder of `gpu_bundle.py make`: weights, texts, pairs, real rows
    $py benchmarks/gpu_bundle.py unpack "$BUNDLE" /tmp/sb_bundle || exit 2
    export PYTHONPATH=/tmp/sb_bundle:$PWD${PYTHONPATH:+:$PYTHONPATH}
    [ -z "$texts" ] && texts=$BUNDLE/texts.jsonl
    [ -z "${REAL_NPY:-}" ] && [ -f /tmp/sb_bundle/real.npy ] && REAL_NPY=/tmp/sb_bundle/real.npy
    pairs_args=(--pairs "$BUNDLE/pairs.jsonl")
fi

part() {  # part NAME LIMIT_S COMMAND...: run, log to OUT_DIR/NAME.log, report status and seconds
    local name=$1 limit=$2 start=$SECONDS left=$((deadline - SECONDS))
    shift 2
    if [ "$left" -lt 30 ]; then echo "== $name: skipped ($left s left)" | tee -a "$out/summary.txt"; return; fi
    [ "$limit" -gt "$left" ] && limit=$left
    timeout -s ABRT -k 20 "$limit" "$@" > "$out/$name.log" 2>&1
    local rc=$?
    echo "== $name: exit $rc, $((SECONDS - start)) s (limit $limit s)" | tee -a "$out/summary.txt"
    grep -v -i -e warning "$out/$name.log" | tail -n "${TAIL_LINES:-12}"
    if [ -n "${PACK:-}" ]; then tar czf "$PACK.tmp" -C "$out" . && mv "$PACK.tmp" "$PACK"; fi
}

{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; } | tee "$out/summary.txt"
$py -c "import jax, flax, optax, torch, transformers, sentence_transformers as st; print('jax', jax.__version__, \
jax.devices(), 'flax', flax.__version__, 'optax', optax.__version__, 'torch', torch.__version__, 'transformers', \
transformers.__version__, 'sentence-transformers', st.__version__)" | tee -a "$out/summary.txt"

text_args=()
[ -n "$texts" ] && text_args=(--texts "$texts")
encoder() {  # encoder DTYPE MATMUL_PRECISION [LIMIT_S]
    part "encoder_$1_$2" "${3:-120}" $py benchmarks/bench_encoder.py "${text_args[@]}" --n-texts "$n_texts" \
        --dtype "$1" --matmul-precision "$2" --repeats 5 --json "$out/encoder_$1_$2.json"
}
topk() {  # topk NAME [bench_topk args]
    local name=$1
    shift
    part "topk_$name" 120 $py benchmarks/bench_topk.py --n "$topk_n" --q 1000 --repeats 3 "$@" \
        --json "$out/topk_$name.json"
}

train() {
    JAX_LOG_COMPILES=1 part train "${TRAIN_LIMIT_S:-300}" $py benchmarks/bench_train.py \
        --batch "$train_batch" --length 128 --devices 1 --skip-memory \
        --steps "$train_steps" --warmup 3 --attention-dropout "${TRAIN_DROPOUT:-0.1}" \
        --matmul-precision "${TRAIN_PRECISION:-highest}" "${pairs_args[@]}" --json "$out/train.json"
}
topk_real() {
    local real=${REAL_NPY:-}
    if [ -z "$real" ] && [ -n "$style" ]; then
        real=/tmp/style_minilm.npy
        rm -f "$real"  # never a stale file from an earlier run
        part embed_style 90 $py -m stylebench_jax.cli embed --model minilm --input "$style" \
            --output "$real" --long-text truncate --cache-dir /tmp/sb_cache --quiet
    fi
    if [ -n "$real" ] && [ -f "$real" ]; then topk real --real "$real"
    else echo "== topk_real: skipped (no REAL_NPY or STYLE_TEXTS)" | tee -a "$out/summary.txt"; fi
}

# most wanted first: a part cut by the deadline loses the least. Still wanted after the H100 leases
# of 2026-11-26/27: the train step like for like (its 2026-11-27 try, TF32 and two dropout values,
# had not finished in 280 s), and the resident pool's upload (topk_gaussian) since shard_pool fills
# the card without a host copy; then the rows measured already, true float32 last (~30 s compiles).
for name in ${PARTS:-train topk_gaussian encoder_bfloat16_highest encoder_float32_default topk_real \
        topk_clustered encoder_float32_highest}; do
    case $name in
        encoder_bfloat16_highest) encoder bfloat16 highest ;;
        encoder_float32_default) encoder float32 default 150 ;;
        encoder_float32_highest) encoder float32 highest 300 ;;
        topk_gaussian) topk gaussian ;;
        topk_clustered) topk clustered --clusters 200 ;;
        topk_real) topk_real ;;
        train) train ;;
        *) echo "unknown part $name" >&2; exit 2 ;;
    esac
done

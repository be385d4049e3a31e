#!/usr/bin/env bash
# The fast fabric mode against the exact reference (issue 17 items 1-3) on the contention scenarios of
# scenarios/physics/: each runs with run.fabric_mode fast and exact, and TTFT, TPOT (means) and the bytes
# each link class carried must agree within 3%. Then the effects, each against the hand estimate beside it.
set -u
exe=$1 dir=$2
source "$(dirname "$0")/effect_checks.sh"
# figures NAME SCENARIO ARGS...: prints "TTFT TPOT NVLINK_BYTES NIC_BYTES" (means in ms; bytes) of the run.
figures() { run "$@" && get "$1" latency_ms.ttft.mean latency_ms.tpot.mean links.nvlink.bytes links.nic.bytes; }

# agree SCENARIO: fast and exact within 3%; leaves the fast run's figures in fast_* for the effect checks.
agree() {
  local s=$1
  read -r fast_ttft fast_tpot fast_nvl fast_nic < <(figures "$s-fast" "$s") || { fail=1; return; }
  read -r ex_ttft ex_tpot ex_nvl ex_nic < <(figures "$s-exact" "$s" --set run.fabric_mode=exact) || { fail=1; return; }
  check "$s: TTFT fast / exact" "$(ratio "$fast_ttft" "$ex_ttft")" 0.97 1.03
  check "$s: TPOT fast / exact" "$(ratio "$fast_tpot" "$ex_tpot")" 0.97 1.03
  check "$s: NVLink bytes fast / exact" "$(ratio "$fast_nvl" "$ex_nvl")" 0.97 1.03
  check "$s: NIC bytes fast / exact" "$(ratio "$fast_nic" "$ex_nic")" 0.97 1.03
}


# P/D KV during EP64 decode (DeepSeek-V3, 16K-token prompts from one TP8 prefill instance, 64 in flight).
agree kv-nvlink-ep64-decode
nvl_ttft=$fast_ttft nvl_tpot=$fast_tpot nvl_nvl=$fast_nvl
agree kv-rdma-ep64-decode
# NVLink: ~32 GB of KV in ~10 s is ~3 GB/s against 64 x 900 GB/s of NVLink, spread over the decode GPUs'
# downlinks, where every all-to-all's 63 flows keep 63/64 of a channel a KV flow shares: the decode
# all-to-alls (latency-bound, ~57 KB per rank per call) lose well under 0.1% of TPOT.
check "kv over nvlink vs rdma: TPOT ratio" "$(ratio "$nvl_tpot" "$fast_tpot")" 0.999 1.001
# RDMA: a request's ~670 MB leave through the prefill GPUs' CX8 NICs (~90 GB/s each at 0.9025 efficiency)
# rather than NVLink (~810 GB/s): 0.8 ms to 7 ms more per request on a ~3.5 s TTFT: +0.02% to +0.2%.
check "kv over rdma vs nvlink: TTFT ratio" "$(ratio "$fast_ttft" "$nvl_ttft")" 1.0001 1.003
# Link bytes: over RDMA every KV byte crosses a NIC twice (the sender's tx, the receiver's rx) as wire
# bytes at the RDMA efficiency; over NVLink the same bytes cross an uplink and a downlink instead.
kv_bytes=$(get kv-rdma-ep64-decode-fast kv.transfer_bytes)
wire=$(python3 -c "print(2 * $kv_bytes / 0.9025)")
check "kv over rdma: NIC bytes / (2 x KV / 0.9025)" "$(ratio "$fast_nic" "$wire")" 0.99 1.01
check "kv over nvlink: NVLink bytes beyond rdma's / (2 x KV / 0.9025)" \
  "$(python3 -c "print(($nvl_nvl - $fast_nvl) / $wire)")" 0.95 1.05

# P/D KV out of a DEP8 prefill instance (32K-token prompts) whose EP8 all-to-alls use the same uplinks.
agree kv-nvlink-dep8-prefill
agree kv-rdma-dep8-prefill

# Prefix fetches over NVLink beside the EP64 all-to-all: round robin sends every rank a request of the
# 64K-token shared prefix, which it fetches from a rank that holds it instead of recomputing it.
agree prefix-fetch-nvlink-ep64

# Heavy contention: one GPU holds a 256K-token prefix (its warm-up prefill) and 63 ranks fetch it from
# that GPU at once, so its NVLink egress runs at 100% with 63 flows. Max-min shares it evenly: every
# fetch finishes when all 63 are done. Each carries 262,144 tokens x 61 layers x 576 B of FP8 MLA KV
# = 9.21 GB, at 900 GB/s x 0.9025 = 812 GB/s out of the holder: the 62 fetches beside each one add
# 62 x 9.21 / 812 = 0.703 s to its TTFT against a fetch made alone (the same request, concurrency 1).
agree prefix-fetch-256k-one-holder
fetched_together=$(get prefix-fetch-256k-one-holder-fast latency_ms.ttft.p50)
run fetch-alone prefix-fetch-256k-one-holder --set workload.requests=2 --set workload.concurrency=1 || fail=1
fetched_alone=$(get fetch-alone latency_ms.ttft.p50)
check "63 fetches from one holder: TTFT added by the 62 others / 0.703 s" \
  "$(python3 -c "print(($fetched_together - $fetched_alone) / 1e3 / (62 * 262144 * 61 * 576 / (900e9 * 0.9025)))")" 0.97 1.03

exit $fail

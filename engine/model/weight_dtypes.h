#pragma once
// The dtype of each part of a model's weights, chosen by the name a deployment gives it, the HBM
// bytes weights of a dtype take, and whether a GPU can run them.
#include <cstdint>
#include <string_view>

#include "engine/hal/device_info.h"
#include "engine/hal/types.h"

namespace nvl::engine {

struct WeightDtypes {
  hal::DType attention = hal::DType::fp8;  // projections and DSA indexer
  hal::DType routed_experts = hal::DType::fp8;
  hal::DType shared_experts = hal::DType::fp8;
  hal::DType dense = hal::DType::fp8;       // dense FFN and the MTP modules' eh_proj
  hal::DType embedding = hal::DType::bf16;  // embedding table and LM head
};

// "bf16": every matrix in BF16. "fp8": FP8 with block scales as DeepGEMM runs it, the embedding table
// and LM head in BF16 (the default). "nvfp4": as NVIDIA's NVFP4 checkpoints of DeepSeek-V3/R1 hold them
// (ModelOpt; nvidia/DeepSeek-V3-0324-NVFP4's hf_quant_config.json excludes every layer's self_attn*,
// mlp.gate, norms, embed_tokens and lm_head, and nvidia/DeepSeek-R1-0528-FP4 stores the attention
// projections in BF16 and the MLPs as U8 values with F8_E4M3 scales): routed experts, shared experts and
// dense FFN in NVFP4, attention and embedding in BF16. Anything else throws std::invalid_argument naming
// the allowed values.
WeightDtypes weight_dtypes_from_name(std::string_view name);

// HBM bytes of `params` weights in `d`. FP4 weights are NVFP4: 4 bits each plus one FP8 (E4M3)
// scale per block of 16 values, 4.5 bits a value (NVIDIA's NVFP4 format, "Introducing NVFP4 for
// efficient and accurate low-precision inference"; group_size 16 in nvidia/GLM-5-NVFP4's
// hf_quant_config.json; the one FP32 scale per tensor is left out). FP8's FP32 scale per 128x128
// block (DeepGEMM) adds 0.02% and is left out too.
std::uint64_t weight_bytes(std::int64_t params, hal::DType d);

// Throws std::invalid_argument when `device` has no tensor-core peak for a dtype of `weights` (FP4
// on Hopper): a deployment the GPU cannot run is refused up front, not failed step by step.
void check_weight_dtypes(const WeightDtypes& weights, const hal::DeviceInfo& device);

}  // namespace nvl::engine
